"""Environment variables the pinned third-party releases really read, from their sources.

The containers hand LiteLLM, vLLM and SGLang settings through environment variables; a name
the release does not read is silently ignored (the proxy runs without a database, the engine
with its default), so the names are read from each release's own code, the way
`tools/engine_flags.py` reads flags: the pinned wheels are fetched once into `.cache/engines/`
(`engine_flags.source_root`) and read with `ast`, nothing imported. The result is committed as
JSON under `contracts/env/` (`contracts/env_table.py` reads it with the standard library), so
the preview checks names without the sources; a test re-extracts each table from the wheel and
compares, so a version bump cannot leave a stale one.

What counts as a read: `os.getenv("X")`, `os.environ.get("X")`, `os.environ["X"]`, `"X" in
os.environ`, LiteLLM's `get_secret*("X")` helpers, pydantic `Field(validation_alias="X")` and
`AliasChoices("X", ...)`, click `envvar="X"`; for vLLM the keys of `vllm/envs.py`
`environment_variables`; for SGLang the `SGLANG_*`/`SGL_*` attributes of
`sglang/srt/environ.py` `Envs`. LiteLLM's database URL assembly is recorded too: the variables
`construct_database_url_from_env_vars` needs all of before it builds a URL.

`python -m tools.env_tables` rewrites every table.
"""

from __future__ import annotations

import ast
import json
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

from ecs_inference.contracts import sglang as sglang_contract
from tools.engine_flags import (
    CACHE_DIR,
    VLLM_GPU,
    VLLM_NEURON,
    EngineRelease,
    contract_release,
    source_root,
    vllm_env_vars,
)

REPO_ROOT = Path(__file__).resolve().parent.parent
SGLANG = contract_release(sglang_contract)
"""The SGLang release the tables are read from (`contracts/sglang.py` names it)."""
TABLE_DIR = REPO_ROOT / "contracts" / "env"
LITELLM = EngineRelease("litellm", "1.108.7")
"""The gateway's LiteLLM release (contracts/litellm.py VERSION)."""
_MARKERS = ("environ", "getenv", "get_secret", "validation_alias", "AliasChoices", "envvar")
"""Text a module must contain to read the environment in one of the ways below."""
_GETTERS = {"getenv", "get_secret", "get_secret_str", "get_secret_bool", "get_secret_float"}


def _literal(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


_string = _literal


def _is_environ(node: ast.AST) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == "environ") or (
        isinstance(node, ast.Name) and node.id == "environ"
    )


def _constants(tree: ast.Module) -> dict[str, str]:
    """Module-level `NAME = "text"` (or `NAME: Final = "text"`) constants."""
    out: dict[str, str] = {}
    for node in tree.body:
        target = node.target if isinstance(node, ast.AnnAssign) else None
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
        value = _string(getattr(node, "value", None))
        if isinstance(target, ast.Name) and value is not None:
            out[target.id] = value
    return out


def _reads(tree: ast.Module) -> Iterator[str]:
    constants = _constants(tree)

    def _string(node: ast.AST | None) -> str | None:
        if isinstance(node, ast.Name):
            return constants.get(node.id)
        return _literal(node)

    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            first = _string(node.args[0]) if node.args else None
            if (
                name in _GETTERS
                or (name == "get" and isinstance(func, ast.Attribute) and _is_environ(func.value))
            ) and first:
                yield first
            if name == "AliasChoices":
                yield from (s for a in node.args if (s := _string(a)))
            for keyword in node.keywords:
                if keyword.arg in ("validation_alias", "envvar") and (s := _string(keyword.value)):
                    yield s
        elif isinstance(node, ast.Subscript) and _is_environ(node.value):
            yield from [s] if (s := _string(node.slice)) else []
        elif isinstance(node, ast.Compare) and any(_is_environ(c) for c in node.comparators):
            yield from [s] if (s := _string(node.left)) else []


def package_reads(root: Path, package: str) -> frozenset[str]:
    """Every environment variable name `package` (under `root`) reads, as listed above."""
    names: set[str] = set()
    for path in sorted((root / package).rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if not any(marker in text for marker in _MARKERS):
            continue
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        names.update(n for n in _reads(tree) if n and n.replace("_", "").isalnum())
    return frozenset(names)


def database_url_requires(root: Path) -> list[str]:
    """The variables LiteLLM's `construct_database_url_from_env_vars` needs all of: the
    `os.getenv` names of the locals its guarding `if a and b and c:` tests."""
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
        name = _string(call.args[0]) if call is not None else None
        if isinstance(target, ast.Name) and name is not None:
            env_of[target.id] = name
    for node in ast.walk(func):
        test = node.test if isinstance(node, ast.If) else None
        if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
            names = [v.id for v in test.values if isinstance(v, ast.Name)]
            if names and all(n in env_of for n in names):
                return [env_of[n] for n in names]
    raise LookupError("construct_database_url_from_env_vars: no guarding condition found")


def sglang_env_reads(root: Path) -> frozenset[str]:
    """`sglang/srt/environ.py` `class Envs` attributes (each an environment variable) and the
    package's direct reads."""
    tree = ast.parse((root / "sglang" / "srt" / "environ.py").read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == "Envs":
            for item in node.body:
                target = item.target if isinstance(item, ast.AnnAssign) else None
                if isinstance(item, ast.Assign):
                    target = item.targets[0]
                if isinstance(target, ast.Name) and target.id.isupper():
                    names.add(target.id)
    if not names:
        raise LookupError("sglang/srt/environ.py: class Envs has no variables")
    return frozenset(names | package_reads(root, "sglang"))


def tables(cache_dir: Path = CACHE_DIR) -> dict[str, dict[str, object]]:
    """Every table, by file stem (`litellm-1.108.7`)."""
    litellm_root = source_root(LITELLM, cache_dir)
    sglang_root = source_root(SGLANG, cache_dir)

    def table(release: EngineRelease, reads: frozenset[str], **extra: object) -> dict[str, object]:
        head = {"project": release.project, "version": release.version}
        return {**head, "reads": sorted(reads), **extra}

    def vllm(release: EngineRelease) -> dict[str, object]:
        root = source_root(release, cache_dir)
        return table(release, vllm_env_vars(root) | package_reads(root, "vllm"))

    return {
        f"litellm-{LITELLM.version}": table(
            LITELLM,
            package_reads(litellm_root, "litellm"),
            database_url_requires=database_url_requires(litellm_root),
        ),
        f"vllm-{VLLM_GPU.version}": vllm(VLLM_GPU),
        f"vllm-{VLLM_NEURON.version}": vllm(VLLM_NEURON),
        f"sglang-{SGLANG.version}": table(SGLANG, sglang_env_reads(sglang_root)),
    }


def main(argv: Sequence[str] | None = None) -> int:
    del argv
    TABLE_DIR.mkdir(parents=True, exist_ok=True)
    for stem, table in tables().items():
        path = TABLE_DIR / f"{stem}.json"
        path.write_text(json.dumps(table, indent=1) + "\n")
        print(path.relative_to(REPO_ROOT))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
