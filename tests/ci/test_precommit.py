"""The pre-commit hooks run the same pinned tools as `make lint`, and each of them exists."""

from __future__ import annotations

import importlib.util
import shlex
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def hooks() -> list[dict]:
    config = yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text())
    return [hook for repo in config["repos"] for hook in repo["hooks"]]


def test_every_hook_runs_a_tool_of_the_venv() -> None:
    ids = set()
    for hook in hooks():
        ids.add(hook["id"])
        argv = shlex.split(hook["entry"])
        assert hook["language"] == "system", hook["id"]
        assert argv[0].startswith(".venv/bin/"), f"{hook['id']} does not use the pinned tool"
        assert (ROOT / argv[0]).exists(), f"{hook['id']}: {argv[0]} missing (make venv)"
        if argv[1:3] and argv[1] == "-m":
            assert importlib.util.find_spec(argv[2]), f"{hook['id']}: no module {argv[2]}"
    assert {"ruff", "ruff-format", "config-reference", "pyright"} <= ids


def test_make_lint_runs_the_hooks_type_checker_and_linters() -> None:
    lint = (ROOT / "Makefile").read_text().split("\nlint:", 1)[1].split("\n\n", 1)[0]
    for tool in ("ruff check", "ruff format --check", "basedpyright"):
        assert tool in lint, f"make lint does not run {tool}"
