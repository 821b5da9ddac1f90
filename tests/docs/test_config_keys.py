"""Every config key the docs name is a key the schema has.

A key named in prose is copied by users into their stack files; one the schema does not have is
refused as unknown (or, worse, read as a near miss). The keys come from the generated reference
(`tools.config_reference.render`, itself checked against the schema); a backticked name in
README.md or docs/ is a key when it starts with `platform.` or with a section name of the
reference, and must then match a key (or a section) segment by segment, `<...>` matching any
entry name and anything under a map being free."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tools import config_reference

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_ROW = re.compile(r"^\| `platform\.([^`]+)` \| ((?:[^|\\]|\\\|)+) \|", re.M)
_FILE = re.compile(r"\.(py|md|ya?ml|json|toml|txt|sh|onnx)$")
_TOKEN = re.compile(r"`([a-z][\w<>*\[\]-]*(?:\.[\w<>*\[\]-]+)+)`")


def _reference() -> tuple[list[tuple[list[str], bool]], set[str]]:
    """(key segments, is a map) of every key, and the names of the sections."""
    keys = [
        (k.split("."), t.strip().startswith(("map", "list")))
        for k, t in _ROW.findall(config_reference.render())
    ]
    sections = {s for k, _ in keys for s in k[:-1] if not s.startswith("<")}
    sections |= {k[-1] for k, _ in keys if len(k) == 1}
    return keys, sections


KEYS, SECTIONS = _reference()


def _matches(key: list[str], is_map: bool, token: list[str]) -> bool:
    for i, part in enumerate(token):
        if i >= len(key):
            return is_map and i == len(key)  # one name under a map or list entry (a variable)
        if not (key[i].startswith("<") or part.startswith("<") or part == "*" or key[i] == part):
            return False
    return True


def known(token: str) -> bool:
    """Whether `token` (`platform.` anchored, or relative to any section) names a key."""
    anchored = token.startswith("platform.")
    parts = re.sub(r"\[\w+\]", "", token.removeprefix("platform.")).split(".")
    for key, is_map in KEYS:
        starts = [0] if anchored else [i for i, part in enumerate(key) if part == parts[0]]
        if any(_matches(key[s:], is_map, parts) for s in starts):
            return True
    return False


def _named_keys(path: Path) -> list[tuple[int, str]]:
    found = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        for token in _TOKEN.findall(line):
            if _FILE.search(token):
                continue
            if token.startswith("platform.") or token.split(".")[0] in SECTIONS:
                found.append((number, token))
    return found


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.name)
def test_every_config_key_the_docs_name_exists(path: Path) -> None:
    unknown = [f"{path.name}:{n}: {t}" for n, t in _named_keys(path) if not known(t)]
    assert unknown == []


@pytest.mark.parametrize(
    ("token", "expected"),
    [
        ("operations.alarms.target5XxPercent", True),
        ("alarms.target5xxPercent", False),
        ("platform.models.<name>.maxModelLen", True),
        ("models.llama.autoscaling.metric", True),
        ("platform.workers.<name>.secrets.GATEWAY_API_KEY", True),
        ("platform.endpoint.idleTimeout", False),
        ("endpoint.auth", True),
    ],
)
def test_a_key_is_known_by_its_segments(token: str, expected: bool) -> None:
    assert known(token) is expected
