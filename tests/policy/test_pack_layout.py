"""The pack stays readable: no module over 900 lines, no function over 120 lines."""

from __future__ import annotations

import ast

from tests.policy.conftest import POLICY_DIR

MAX_FILE_LINES = 900
MAX_FUNCTION_LINES = 120


def _modules():
    return sorted(
        p for p in POLICY_DIR.rglob("*.py") if "venv" not in p.relative_to(POLICY_DIR).parts
    )


def test_no_module_over_the_limit():
    long = {
        str(p.relative_to(POLICY_DIR)): n
        for p in _modules()
        if (n := p.read_text(encoding="utf-8").count("\n")) > MAX_FILE_LINES
    }
    assert not long, long


def test_no_function_over_the_limit():
    long = {}
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    long[f"{path.relative_to(POLICY_DIR)}::{node.name}"] = length
    assert not long, long
