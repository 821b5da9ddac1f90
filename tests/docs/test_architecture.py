"""docs/architecture.md's hop table names real places: each `path.py::name` reference resolves
to a definition (a class, function, method or field) in that module."""

from __future__ import annotations

import ast
import re
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


# --------------------------------------------------------------------------------------------
# key traces: each hop is a function that makes a new object holding the value
# --------------------------------------------------------------------------------------------

TRACE_ROW = re.compile(r"^\| (\d+) \| (.+?) \| (.+?) \|$")


def trace_tables() -> list[tuple[str, list[tuple[list[str], str]]]]:
    """(the parsed input field, [(hop functions: the hop and its helpers, what it makes)]) per
    trace in the "Key traces" sections."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    traces = []
    for section in text.split("\n## Key traces")[1:]:
        section = section.split("\n## ", 1)[0]
        start = re.search(r"from the parsed `([^`]+)`", section)
        assert start is not None, "a trace names the parsed input field it starts from"
        hops = []
        for line in section.splitlines():
            if match := TRACE_ROW.match(line):
                functions = CODE.findall(match.group(2))
                hops.append((functions, match.group(3).strip()))
        traces.append((start.group(1), hops))
    return traces


def _split(ref: str) -> tuple[str, str]:
    path, _, name = ref.partition("::")
    return path, name


def _node(path: str, dotted: str) -> ast.AST:
    body: list[ast.stmt] = ast.parse((ROOT / path).read_text(encoding="utf-8")).body
    node: ast.AST | None = None
    for part in dotted.split("."):
        node = next(
            (
                n
                for n in body
                if isinstance(n, ast.FunctionDef | ast.ClassDef | ast.AsyncFunctionDef)
                and n.name == part
            ),
            None,
        )
        assert node is not None, f"{path} has no {dotted}"
        body = node.body if isinstance(node, ast.ClassDef) else []
    assert node is not None
    return node


def code_of(ref: str) -> str:
    """The source of function `path::name`, without its docstring."""
    path, name = _split(ref)
    node = _node(path, name)
    assert isinstance(node, ast.FunctionDef), f"{ref} is not a function"
    body = node.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    source = (ROOT / path).read_text(encoding="utf-8")
    args = ast.get_source_segment(source, node.args) or ""
    return args + "\n" + "\n".join(ast.get_source_segment(source, s) or "" for s in body)


def _word(name: str, code: str) -> bool:
    return re.search(rf"\b{re.escape(name)}\b", code) is not None


def trace_problems(start: str, hops: list[tuple[list[str], str]]) -> list[str]:
    """Why the trace does not match the code: a missing function or field, a hop that does not
    create its object, or a hop that does not read what the one before it made."""
    problems = []
    # What a hop may read of the one before: the field, the object or the function making it.
    previous = {start.rsplit(".", 1)[-1]}
    for i, (functions, made) in enumerate(hops, 1):
        code = "\n".join(code_of(ref.strip("`")) for ref in functions)
        if made.startswith('`"'):
            made_type, field = "", made.strip('`"')
            if f'"{field}"' not in code:
                problems.append(f"hop {i}: {functions[0]} sets no {field!r}")
        else:
            path, dotted = _split(made.strip("`"))
            if why := resolve(path, dotted):
                problems.append(f"hop {i}: {why}")
            made_type, field = dotted.rsplit(".", 1)
            if f"{made_type}(" not in code:
                problems.append(f"hop {i}: {functions[0]} makes no {made_type}")
        if not any(_word(name, code) for name in previous):
            problems.append(f"hop {i}: {functions[0]} reads none of {sorted(previous)}")
        previous = {field, made_type, _split(functions[0])[1].rsplit(".", 1)[-1]} - {""}
    return problems


def test_the_key_traces_match_the_code() -> None:
    traces = trace_tables()
    assert traces and all(hops for _, hops in traces)
    problems = [p for start, hops in traces for p in trace_problems(start, hops)]
    assert not problems, problems


def test_a_trace_that_no_longer_matches_fails() -> None:
    """The check itself: a hop moved to a function that does not make the object, a renamed
    field, and a chain whose next hop reads something else."""
    start, hops = trace_tables()[0]
    assert not trace_problems(start, hops)
    moved = [(["`components/models/service.py::model_container_definitions`"], hops[0][1])]
    assert any("makes no GpuDemand" in p for p in trace_problems(start, moved + hops[1:]))
    renamed = [(hops[0][0], hops[0][1].replace("tensor_parallel_size", "tp")), *hops[1:]]
    assert any("no 'tp'" in p for p in trace_problems(start, renamed))
    assert any("reads none of" in p for p in trace_problems(start, [hops[0], hops[6]]))
