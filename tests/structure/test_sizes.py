"""Units small enough to hold in one's head: no function over 120 lines and no file over 900
lines in the shipped code (components/, tools/, policy/, contracts/). Generated or data tables
are the exception, each listed below with the reason."""

from __future__ import annotations

import ast
import fnmatch
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TREES = ("components", "tools", "policy", "contracts")
MAX_FILE_LINES = 900
MAX_FUNCTION_LINES = 120
SKIPPED_DIRS = {"__pycache__", "node_modules", "venv", ".venv"}

EXEMPT = {
    "contracts/flags/*.json": "engine flag tables generated from the pinned releases' own "
    "argument definitions (python -m tools.sources)",
    "contracts/env/*.json": "environment-variable tables generated from the pinned releases' "
    "sources (python -m tools.sources)",
    "contracts/agent/*.json": "the CloudWatch agent's schema excerpt read from its source at the "
    "pinned tag (tools/agent_table.py)",
    "tools/views/provider_outputs.json": "the provider outputs table generated from the pinned "
    "SDKs (python -m tools.views.provider_schema --write)",
    "tools/rehearsal/iam/package-lock.json": "npm's lock file of the IAM evaluator",
}


def shipped_files() -> list[Path]:
    return sorted(
        path
        for tree in TREES
        for path in (ROOT / tree).rglob("*")
        if path.is_file()
        and not SKIPPED_DIRS & set(path.relative_to(ROOT).parts)
        and path.suffix not in (".pyc", ".so")
    )


def exempt(path: Path) -> bool:
    return any(fnmatch.fnmatch(path.relative_to(ROOT).as_posix(), p) for p in EXEMPT)


def test_no_file_over_the_limit() -> None:
    long = [
        f"{path.relative_to(ROOT)}: {lines} lines"
        for path in shipped_files()
        if not exempt(path)
        and (lines := path.read_text(errors="ignore").count("\n")) > MAX_FILE_LINES
    ]
    assert not long, f"over {MAX_FILE_LINES} lines (split by subject):\n" + "\n".join(long)


def test_no_function_over_the_limit() -> None:
    long = []
    for path in shipped_files():
        if path.suffix != ".py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}: {lines}")
    assert not long, f"over {MAX_FUNCTION_LINES} lines:\n" + "\n".join(long)


@pytest.mark.parametrize("pattern", sorted(EXEMPT))
def test_every_exemption_names_existing_files(pattern: str) -> None:
    """An exemption outlives nothing: each pattern matches a file that is over the limit or is
    a data table by kind (JSON)."""
    matched = [
        p for p in shipped_files() if fnmatch.fnmatch(p.relative_to(ROOT).as_posix(), pattern)
    ]
    assert matched, f"{pattern} matches no file: remove the exemption"
    assert all(p.suffix == ".json" for p in matched), pattern
