"""docs/architecture.md's hop table names real places: each `path.py::name` reference resolves
to a definition (a class, function, method or field) in that module."""

from __future__ import annotations

from pathlib import Path

from tests.docs.test_operational_rules import CODE, PY_REF, resolve

ROOT = Path(__file__).resolve().parents[2]
KEYS = 6


def hop_rows() -> list[str]:
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text.split("## Hop paths", 1)[1].split("\n## ", 1)[0]
    return [line for line in section.splitlines() if line.startswith("| `")]


def test_the_table_follows_the_six_keys_through_three_rooms() -> None:
    rows = hop_rows()
    assert len(rows) == KEYS
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split(" | ")]
        assert len(cells) == 4, row
        config, plan, component = cells[1:]
        # A feature folder holds its own input and decisions (components/models/).
        assert "components/config/" in config or "/input.py::" in config, row
        assert "components/plan/" in plan or "/decisions.py::" in plan, row
        assert "components/plan/" not in component and "components/config/" not in component, row


def test_every_reference_resolves() -> None:
    problems = []
    for row in hop_rows():
        for ref in CODE.findall(row):
            match = PY_REF.match(ref)
            if match is None or not match.group("name"):
                continue
            path, name = match.group("path", "name")
            if not (ROOT / path).is_file():
                problems.append(f"{path} does not exist")
            elif why := resolve(path, name):
                problems.append(why)
    assert not problems, problems
