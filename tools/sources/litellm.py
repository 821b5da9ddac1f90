"""LiteLLM, the gateway: the environment names its pinned release reads, from the PyPI wheel.

Besides every name the `litellm` package reads (`common.package_reads`), the table records
`database_url_requires`: the variables `litellm.proxy.utils.construct_database_url_from_env_vars`
needs all of before it builds DATABASE_URL (a missing one leaves the proxy without its database
while it runs).
"""

from __future__ import annotations

import ast
from pathlib import Path

from ecs_inference.contracts import litellm as litellm_contract
from tools.engine_flags import EngineRelease, source_root
from tools.sources.common import Table, env_table, literal, package_reads

LITELLM = EngineRelease("litellm", litellm_contract.VERSION)
"""The gateway's release (`contracts/litellm.py` VERSION), installed from PyPI."""


def database_url_requires(root: Path) -> list[str]:
    """The variables `construct_database_url_from_env_vars` needs all of: the `os.getenv` names
    of the locals its guarding `if a and b and c:` tests."""
    tree = ast.parse((root / "litellm" / "proxy" / "utils.py").read_text(encoding="utf-8"))
    func = next(
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.FunctionDef) and n.name == "construct_database_url_from_env_vars"
    )
    env_of: dict[str, str] = {}
    for node in ast.walk(func):
        target = node.target if isinstance(node, ast.AnnAssign) else None
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
        value = getattr(node, "value", None)
        call = value if isinstance(value, ast.Call) and value.args else None
        name = literal(call.args[0]) if call is not None else None
        if isinstance(target, ast.Name) and name is not None:
            env_of[target.id] = name
    for node in ast.walk(func):
        test = node.test if isinstance(node, ast.If) else None
        if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
            names = [v.id for v in test.values if isinstance(v, ast.Name)]
            if names and all(n in env_of for n in names):
                return [env_of[n] for n in names]
    raise LookupError("construct_database_url_from_env_vars: no guarding condition found")


def _env(cache_dir: Path) -> dict[str, object]:
    root = source_root(LITELLM, cache_dir)
    return env_table(
        LITELLM,
        f"PyPI litellm=={LITELLM.version} wheel: every read in the litellm package; "
        "database_url_requires from litellm/proxy/utils.py construct_database_url_from_env_vars",
        package_reads(root, "litellm"),
        database_url_requires=database_url_requires(root),
    )


TABLES = (Table("env", litellm_contract.ENVIRONMENT_TABLE, _env, (LITELLM,)),)
