"""The docs stay true: the configuration reference (docs/configuration.md) matches the schema,
every policy the pack serves is listed with its default level (docs/policy.md), every runtime
check and documented constraint of the rehearsal is in docs/fidelity.md with its source, and
every command and path the docs show exists."""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import pkgutil
import re
from pathlib import Path

from tools import config_reference, rehearsal
from tools.rehearsal import reference
from tools.rehearsal.constraints import CONSTRAINTS
from tools.rehearsal.contracts import CONTRACTS
from tools.rehearsal.tasks import TaskStart

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()


def test_configuration_reference_is_generated_from_the_schema() -> None:
    assert config_reference.main(["--check"]) == 0, (
        "docs/configuration.md is stale: run python -m tools.config_reference --write"
    )
    # and the generator really covers nested sections
    text = config_reference.render()
    for key in (
        "platform.models.<name>.maxModelLen",
        "platform.gpuPools.<name>.warmPool.minSize",
        "platform.rerankers.<name>.needMemoryMib",
        "platform.endpoint.auth.apiScopes",
    ):
        assert f"`{key}`" in text


def test_the_policy_doc_lists_every_policy_with_its_default_level(pack_info) -> None:
    """docs/policy.md's "### Mandatory" and "### Advisory" tables, one row per rule."""
    text = (ROOT / "docs" / "policy.md").read_text()
    rows: dict[str, str] = {}
    for level in ("mandatory", "advisory"):
        start = text.index(f"### {level.capitalize()}")
        table = text[start : text.index("\n#", start + 1)]
        for name in re.findall(r"^\| `([a-z0-9-]+)` \| (?:resource|stack) \|", table, re.M):
            assert name not in rows, f"{name} listed twice"
            rows[name] = level
    served = {p["name"]: p["enforcementLevel"] for p in pack_info["policies"]}
    assert rows == served


def test_every_command_the_docs_show_exists() -> None:
    """Each `make <target>` and `python -m <module>` in the README and docs/ runs something."""
    docs = README + "".join(p.read_text() for p in sorted((ROOT / "docs").glob("*.md")))
    targets = set(re.findall(r"^([a-z][a-z0-9_-]*):", (ROOT / "Makefile").read_text(), re.M))
    shown = set(re.findall(r"`make ([a-z][a-z0-9_-]*)", docs))
    shown |= set(re.findall(r"^\s*(?:\$ )?make ([a-z][a-z0-9_-]*)", docs, re.M))
    assert shown, "the docs show no make command"
    assert shown <= targets, f"make targets the docs show but the Makefile lacks: {shown - targets}"
    for module in set(re.findall(r"python -m ([a-z_][A-Za-z0-9_.]*)", docs)):
        assert importlib.util.find_spec(module) is not None, f"python -m {module}: no such module"


def test_every_repository_path_the_architecture_docs_name_exists() -> None:
    """The layout described in docs/architecture.md and the README's component table is real."""
    text = (ROOT / "docs" / "architecture.md").read_text() + README
    code = r"(?:components|contracts|images|tools|tests|policy/guardrails)"
    paths = set(re.findall(rf"`({code}/[\w./-]+)`", text))
    assert paths, "no repository path found"
    missing = sorted(p for p in paths if not (ROOT / p.rstrip("/")).exists())
    assert not missing, f"docs name paths that do not exist: {missing}"


def test_the_fidelity_doc_lists_every_documented_constraint() -> None:
    """docs/fidelity.md's constraints table is generated from the rehearsal's CONSTRAINTS."""
    assert reference.main(["--check"]) == 0, (
        "docs/fidelity.md is stale: run python -m tools.rehearsal.reference --write"
    )
    assert reference.render().count("\n| ") == len(CONSTRAINTS) + 1


def _rehearsal_checks() -> set[str]:
    """The names of every check the rehearsal runs: each module's public `*_checks` functions,
    each step `TaskStart.checks` runs, and each image contract that declares its calls."""
    names: set[str] = set()
    for info in pkgutil.iter_modules(rehearsal.__path__):
        module = importlib.import_module(f"tools.rehearsal.{info.name}")
        names |= {
            name
            for name, fn in vars(module).items()
            if inspect.isfunction(fn)
            and fn.__module__ == module.__name__
            and name.endswith("_checks")
            and not name.startswith("_")
        }
    steps = re.findall(r"self\.(\w+)\(", inspect.getsource(TaskStart.checks))
    names |= {f"TaskStart.{s}" for s in steps if inspect.isgeneratorfunction(getattr(TaskStart, s))}
    return names | set(CONTRACTS)


def test_the_fidelity_doc_lists_every_runtime_check_with_its_source() -> None:
    """Each check of the runtime rehearsal is named in its section of docs/fidelity.md, and each
    row of its tables with a source column gives one."""
    text = (ROOT / "docs" / "fidelity.md").read_text()
    start = text.index("## The runtime rehearsal")
    end = text.find("\n## ", start + 1)
    section = text[start : end if end >= 0 else len(text)]
    cited = set(re.findall(r"`([\w./]+)`", section))
    checks = _rehearsal_checks()
    assert {"TaskStart.pull", "publish_checks", "contracts/litellm.py"} <= checks
    assert not checks - cited, f"runtime checks docs/fidelity.md does not name: {checks - cited}"
    for table in re.findall(
        r"^\|[^\n]*\bsource\b[^\n]*\|\n\|[-|]+\|\n((?:\|[^\n]*\|\n)+)", section, re.M
    ):
        for row in table.splitlines():
            assert row.rstrip("|").rsplit("|", 1)[-1].strip(), f"a row without its source: {row}"
