"""docs/architecture.md's key traces name real places and match the code: each `path.py::name`
reference resolves, each hop's functions make the object named and read what the hop before made,
each key takes the hops its heading and the summary state (`HOPS`), and each goal is issue #32's
for its kind (copied ≤ 2 hops after parsing, derived ≤ 3)."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

from tests.docs.test_operational_rules import CODE, PY_REF, resolve

ROOT = Path(__file__).resolve().parents[2]

HOPS = {
    "endpoint idle timeout": 2,
    "a model's GPU count to `resourceRequirements`": 3,
    "a pool's warm pool size": 1,
    "`rerankers.*.cpu`": 2,
    "`gateway.masterKey`": 2,
    "an alarm e-mail": 1,
}
"""Hops each key takes today: a path shortened in the code fails until this and the page follow."""

GOAL = {"copied": 2, "derived": 3}
"""Issue #32's most hops after parsing, for a key copied to an AWS argument and a derived one."""


def _architecture() -> str:
    return (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")


def _section() -> str:
    return _architecture().split("\n## Key traces", 1)[1].split("\n## ", 1)[0]


def summary_rows() -> dict[str, tuple[str, int, int]]:
    """The summary table: key -> (kind, hops now, goal)."""
    rows = {}
    for line in _section().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        if len(cells) == 5 and cells[1] in GOAL:
            rows[cells[0]] = (cells[1], int(cells[2]), int(cells[3]))
    return rows


def test_the_summary_states_each_keys_hops_and_goal() -> None:
    rows = summary_rows()
    assert len(rows) == len(HOPS)
    traces = {title: hops for title, _, hops in trace_tables()}
    for (key, (kind, now, goal)), title in zip(rows.items(), HOPS, strict=True):
        assert goal == GOAL[kind], key
        assert now == HOPS[title] == len(traces[title]), (key, title)


def test_every_reference_resolves() -> None:
    problems = []
    for ref in CODE.findall(_section()):
        match = PY_REF.match(ref)
        if match is None or not match.group("name"):
            continue
        path, name = match.group("path", "name")
        if not (ROOT / path).is_file():
            problems.append(f"{path} does not exist")
        elif (why := resolve(path, name)) and not _runtime_field(path, name):
            problems.append(why)
    assert not problems, problems


def _runtime_field(path: str, dotted: str) -> bool:
    """`Class.field` of a components module, declared on the class or a base (an Args class
    inherits its spec's fields)."""
    if not path.startswith("components/") or dotted.count(".") != 1:
        return False
    module = "ecs_inference." + path.removeprefix("components/").removesuffix(".py").replace(
        "/", "."
    )
    cls = getattr(importlib.import_module(module), dotted.split(".")[0], None)
    field = dotted.split(".")[1]
    return cls is not None and (
        field in getattr(cls, "__dataclass_fields__", {})
        or field in getattr(cls, "model_fields", {})
    )


# --------------------------------------------------------------------------------------------
# key traces: each hop is a function that makes a new object holding the value
# --------------------------------------------------------------------------------------------

TRACE_ROW = re.compile(r"^\| (\d+) \| (.+?) \| (.+?) \|$")
TITLE = re.compile(r"^### Trace: (.+?) \((\d+) hops?\)$", re.M)
AWS_ARGUMENT = re.compile(r"^`aws\.[\w.]+?\.(\w+)\((\w+)\)`$")
"""A hop's last object: the AWS resource or argument class and the argument it sets."""


def trace_tables() -> list[tuple[str, str, list[tuple[list[str], str]]]]:
    """(title, the parsed input field, [(hop functions: the hop, its helpers and the plan field
    it reads, what it makes)]) per "### Trace:" subsection; the title's count must match."""
    traces = []
    for part in _section().split("\n### Trace: ")[1:]:
        title = TITLE.match("### Trace: " + part.splitlines()[0])
        assert title is not None, part.splitlines()[0]
        start = re.search(r"from the parsed `([^`]+)`", part)
        assert start is not None, "a trace names the parsed input field it starts from"
        hops = []
        for line in part.splitlines():
            if match := TRACE_ROW.match(line):
                functions = CODE.findall(match.group(2))
                hops.append((functions, match.group(3).strip()))
        assert len(hops) == int(title.group(2)), title.group(0)
        traces.append((title.group(1), start.group(1), hops))
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


def _is_function(ref: str) -> bool:
    path, name = _split(ref)
    try:
        return isinstance(_node(path, name), ast.FunctionDef)
    except AssertionError:
        return False


def _last(ref: str) -> str:
    return _split(ref)[1].rsplit(".", 1)[-1]


def _makes(made_type: str, code: str) -> bool:
    """The code calls `made_type(`."""
    return f"{made_type}(" in code


def trace_problems(start: str, hops: list[tuple[list[str], str]]) -> list[str]:
    """Why the trace does not match the code: a missing function or field, a hop that does not
    create its object, or a hop that does not read what the one before it made (or the plan
    field that carries it)."""
    problems = []
    # What a hop may read of the one before: the field, the object or the functions making it.
    previous = {start.rsplit(".", 1)[-1]}
    for i, (functions, made) in enumerate(hops, 1):
        refs = [ref.strip("`") for ref in functions]
        missing = [r for r in refs if resolve(*_split(r)) and not _runtime_field(*_split(r))]
        problems += [f"hop {i}: {r} does not exist" for r in missing]
        functional = [r for r in refs if r not in missing and _is_function(r)]
        code = "\n".join(code_of(r) for r in functional)
        # A field named in the hop (the plan's, which carries the spec) may be what it reads.
        carriers = {_last(r) for r in refs if r not in missing and r not in functional}
        if aws := AWS_ARGUMENT.match(made):
            made_type, field = aws.groups()
            if f"{made_type}(" not in code or not re.search(rf"\b{field}=", code):
                problems.append(f"hop {i}: {functions[0]} makes no {made_type}({field}=...)")
        elif made.startswith('`"'):
            made_type, field = "", made.strip('`"')
            if f'"{field}"' not in code:
                problems.append(f"hop {i}: {functions[0]} sets no {field!r}")
        else:
            path, dotted = _split(made.strip("`"))
            if (why := resolve(path, dotted)) and not _runtime_field(path, dotted):
                problems.append(f"hop {i}: {why}")
            made_type, field = dotted.rsplit(".", 1)
            if not _makes(made_type, code):
                problems.append(f"hop {i}: {functions[0]} makes no {made_type}")
        if not any(_word(name, code) for name in previous | carriers):
            problems.append(f"hop {i}: {functions[0]} reads none of {sorted(previous)}")
        previous = ({field, made_type} | {_last(r) for r in functional}) - {""}
    return problems


def test_the_key_traces_match_the_code() -> None:
    traces = trace_tables()
    assert len(traces) == len(HOPS) and all(hops for _, _, hops in traces)
    problems = [
        f"{title}: {p}" for title, start, hops in traces for p in trace_problems(start, hops)
    ]
    assert not problems, problems


def _trace(title: str) -> tuple[str, list[tuple[list[str], str]]]:
    [(start, hops)] = [(s, h) for t, s, h in trace_tables() if t == title]
    return start, hops


def test_a_trace_that_no_longer_matches_fails() -> None:
    """The check itself: a hop moved to a function that does not make the object, a renamed
    field, a chain whose next hop reads something else, a wiring class the decision does not
    build, and an AWS argument the component does not set."""
    start, hops = _trace("a model's GPU count to `resourceRequirements`")
    assert not trace_problems(start, hops)
    moved = [(["`components/models/service.py::model_container_definitions`"], hops[0][1])]
    assert any("makes no GpuDemand" in p for p in trace_problems(start, moved + hops[1:]))
    renamed = [(hops[0][0], hops[0][1].replace("tensor_parallel_size", "tp")), *hops[1:]]
    assert any("no 'tp'" in p for p in trace_problems(start, renamed))
    unread = (hops[2][0][:1], hops[2][1])
    assert any("reads none of" in p for p in trace_problems(start, [hops[0], unread]))
    start, hops = _trace("endpoint idle timeout")
    assert not trace_problems(start, hops)
    wiring = "`components/endpoint/service.py::EndpointWiring.routes`"
    wrong = [(hops[0][0], wiring), hops[1]]
    assert any("makes no EndpointWiring" in p for p in trace_problems(start, wrong))
    unset = [hops[0], (hops[1][0], "`aws.lb.LoadBalancer(preserve_host_header)`")]
    assert any("makes no LoadBalancer(preserve_host" in p for p in trace_problems(start, unset))
    gone = [hops[0], (["`components/endpoint/service.py::Endpoint._gone`"], hops[1][1])]
    assert any("_gone does not exist" in p for p in trace_problems(start, gone))
