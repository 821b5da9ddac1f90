"""docs/operational-rules.md stays true: every reference resolves, every rule enforced and tested.

The page maps each operational rule of the two source documents to where the project enforces it
and the test that proves it. References are checked by parsing source (AST), never by importing
it, so the check is cheap and cannot start a Pulumi program or the policy pack:

- `path.py` must exist; `path.py::name.attr` must be a top-level function, class or assignment
  of that module, then a method, nested class or class-level assignment for each further part;
- `policy:<rule-name>` must be the `name=` of a rule the pack declares in `policy/guardrails/`;
- `tests/...py::test_name` (optionally `::Class::test_name` and a `[param-id]` whose id must
  appear in the test file) must be a test function;
- a row needs at least one place and one test unless its status is `n/a: <reason>`; a row
  `routed: <area>: <what>` is a known gap in another engineer's area, reported as an expected
  failure (strict: it fails once the row gains a place and a test but keeps its status).
"""

from __future__ import annotations

import ast
import functools
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "operational-rules.md"
SEEDS = ("000_371d302ea2a77197.txt", "003_71fd4e32fc143db8.txt")
COLUMNS = ("id", "rule (source)", "where", "test", "status")
STATUS = re.compile(r"^(enforced|n/a: (?P<na>.+)|routed: (?P<area>[^:]+): (?P<what>.+))$")
MIN_REASON_WORDS = 8
CODE = re.compile(r"`([^`]+)`")
POLICY_REF = re.compile(r"^policy:([a-z0-9-]+)$")
# `path.py`, `path.py::a.b`, `tests/x.py::test[id]`, `tests/x.py::Class::test`
PY_REF = re.compile(r"^(?P<path>[\w./-]+\.py)(?:::(?P<name>[\w.:]+)(?:\[(?P<param>[^\]]+)\])?)?$")
# Non-Python files a row may name as its place (Dockerfiles, workflows).
FILE_REF = re.compile(r"^(?:images|\.github)/[\w./-]+$")


@dataclass(frozen=True)
class Row:
    seed: str
    id: str
    rule: str
    where: str
    test: str
    status: str


def _cells(line: str) -> list[str]:
    # Split on pipes outside backticks (a quoted rule may contain none, but code could).
    cells, buf, in_code = [], [], False
    for ch in line.strip().strip("|"):
        if ch == "`":
            in_code = not in_code
        if ch == "|" and not in_code:
            cells.append("".join(buf).strip())
            buf = []
        else:
            buf.append(ch)
    cells.append("".join(buf).strip())
    return cells


def parse_rows(text: str) -> list[Row]:
    rows: list[Row] = []
    seed = ""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("## "):
            seed = next((s for s in SEEDS if s in line), "")
        if not line.startswith("|") or i + 1 >= len(lines):
            continue
        if tuple(c.lower() for c in _cells(line)) == COLUMNS:
            assert seed, f"table at line {i + 1} sits under no seed heading naming its file"
            for body in lines[i + 2 :]:
                if not body.startswith("|"):
                    break
                cells = _cells(body)
                assert len(cells) == len(COLUMNS), f"row {cells[0]!r}: {len(cells)} cells"
                rows.append(Row(seed, *cells))
    return rows


ROWS = parse_rows(DOC.read_text(encoding="utf-8"))


@functools.cache
def _tree(path: str) -> ast.Module:
    return ast.parse((ROOT / path).read_text(encoding="utf-8"))


def _members(body: list[ast.stmt]) -> dict[str, ast.stmt]:
    found: dict[str, ast.stmt] = {}
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found[node.name] = node
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    found[target.id] = node
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            found[node.target.id] = node
    return found


def resolve(path: str, dotted: str) -> str | None:
    """None when `dotted` names something in module `path`, else why not."""
    body: list[ast.stmt] = _tree(path).body
    for part in re.split(r"::|\.", dotted):
        node = _members(body).get(part)
        if node is None:
            return f"{path} has no {part!r} (looking up {dotted!r})"
        body = node.body if isinstance(node, ast.ClassDef) else []
    return None


@functools.cache
def policy_rule_names() -> frozenset[str]:
    names: set[str] = set()
    for module in sorted((ROOT / "policy" / "guardrails").rglob("*.py")):
        for node in ast.walk(ast.parse(module.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            called = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
            if not called.endswith(("_rule", "ValidationPolicy")):
                continue
            for kw in node.keywords:
                if kw.arg == "name" and isinstance(kw.value, ast.Constant):
                    names.add(str(kw.value.value))
    return frozenset(names)


def reference_problems(cell: str, *, tests: bool) -> tuple[int, list[str]]:
    """(references found, problems) for one cell; `tests` demands test functions."""
    count, problems = 0, []
    for ref in CODE.findall(cell):
        policy = POLICY_REF.match(ref)
        py = PY_REF.match(ref)
        if policy and not tests:
            count += 1
            if policy.group(1) not in policy_rule_names():
                problems.append(f"the policy pack declares no rule {policy.group(1)!r}")
            continue
        if FILE_REF.match(ref) and not tests:
            count += 1
            if not (ROOT / ref).exists():
                problems.append(f"{ref} does not exist")
            continue
        if py is None:
            continue  # config keys, values, quotes: prose, not references
        path, name, param = py.group("path", "name", "param")
        if not (ROOT / path).is_file():
            problems.append(f"{path} does not exist")
            continue
        if tests:
            if not path.startswith("tests/") or not name:
                problems.append(f"{ref} is not a test reference (tests/...py::test_name)")
                continue
            if not name.rsplit("::", 1)[-1].startswith("test_"):
                problems.append(f"{ref} does not name a test function")
                continue
            if param and param not in (ROOT / path).read_text(encoding="utf-8"):
                problems.append(f"{ref}: parameter id {param!r} does not occur in {path}")
        elif path.startswith("tests/"):
            problems.append(f"{ref} is a test, not a place the rule is enforced")
            continue
        count += 1
        if name:
            why = resolve(path, name)
            if why:
                problems.append(why)
    return count, problems


def test_the_page_has_a_table_per_seed_and_unique_ids() -> None:
    assert {r.seed for r in ROWS} == set(SEEDS), "each seed needs its own table"
    ids = [r.id for r in ROWS]
    assert len(ids) == len(set(ids)), (
        f"duplicate row ids: {sorted(i for i in ids if ids.count(i) > 1)}"
    )
    for seed in SEEDS:
        assert sum(r.seed == seed for r in ROWS) >= 10, f"{seed}: too few rules for the seed"


def test_every_status_is_known_and_every_reason_says_why() -> None:
    for row in ROWS:
        match = STATUS.match(row.status)
        assert match, (
            f"{row.id}: status {row.status!r} is not enforced / n/a: why / routed: area: what"
        )
        reason = match.group("na") or match.group("what")
        if reason is not None:
            assert len(reason.split()) >= MIN_REASON_WORDS, (
                f"{row.id}: reason too short: {reason!r}"
            )


def test_the_checker_rejects_what_does_not_exist() -> None:
    """The reference checks themselves can fail (a broken checker would pass every row)."""
    cases = {
        "`components/no_such_module.py::x`": "does not exist",
        "`components/sizing/gpu.py::no_such_function`": "has no 'no_such_function'",
        "`components/sizing/timeouts.py::GracePeriod.no_such_method`": "no_such_method",
        "`policy:no-such-rule`": "declares no rule",
        "`images/no-such/Dockerfile`": "does not exist",
    }
    for cell, expected in cases.items():
        _, problems = reference_problems(cell, tests=False)
        assert problems and expected in problems[0], (cell, problems)
    test_cases = {
        "`tests/sizing/test_sizing.py::test_no_such_test`": "has no 'test_no_such_test'",
        "`tests/sizing/test_sizing.py::helper`": "does not name a test function",
        "`components/sizing/gpu.py::cheapest_fitting`": "not a test reference",
        "`tests/policy/test_rules_aws.py::test_one_change_one_violation[no-such-id]`": "no-such-id",
    }
    for cell, expected in test_cases.items():
        _, problems = reference_problems(cell, tests=True)
        assert problems and expected in problems[0], (cell, problems)
    assert reference_problems(
        "`components/sizing/timeouts.py::GracePeriod.summary`", tests=False
    ) == (1, [])
    sample = f"## Rules ({SEEDS[0]})\n\n| id | rule (source) | where | test | status |\n"
    sample += "|---|---|---|---|---|\n"
    sample += "| Z1 | a `x|y` rule | `a.py` | `tests/t.py::test_a` | enforced |\n\nprose\n"
    assert parse_rows(sample) == [
        Row(SEEDS[0], "Z1", "a `x|y` rule", "`a.py`", "`tests/t.py::test_a`", "enforced")
    ]


@pytest.mark.parametrize(
    "row",
    [
        pytest.param(
            row,
            id=row.id,
            marks=pytest.mark.xfail(
                reason=f"routed gap: {row.status.removeprefix('routed: ')}", strict=True
            )
            if row.status.startswith("routed:")
            else (),
        )
        for row in ROWS
    ],
)
def test_each_rule_is_enforced_and_tested(row: Row) -> None:
    places, where_problems = reference_problems(row.where, tests=False)
    tests, test_problems = reference_problems(row.test, tests=True)
    assert not where_problems and not test_problems, where_problems + test_problems
    if row.status.startswith("n/a:"):
        return
    assert places, f"{row.id}: no place enforces {row.rule!r}"
    assert tests, f"{row.id}: no test proves {row.rule!r}"
