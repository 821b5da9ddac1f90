"""The corpus (``corpus.py``) against the real pack: every bad stack rejected with exactly the
expected (policy, resource) pairs, every good stack accepted, both as a preview records it
(unknown ARNs, property dependencies) and literally (bare ARNs, ids and names, no
dependencies), and no stack crashing a rule."""

from __future__ import annotations

import pytest

from tests.policy.corpus import PUBLIC_APPS, SCOPED, Case, build, cases, expected
from tests.policy.pack_harness import InProcessPack
from tests.policy.policy_stacks import found

CASES = {c.title: c for c in cases()}
NOTES = "guardrail-notes"
SCOPE_ALL = {policy: {"scope": "all"} for policy in sorted(SCOPED)}


def _judge(pack, case: Case, literal: bool):
    violations = pack.analyze(build(case, literal=literal))
    crashes = [v for v in violations if "error" in v.message.lower() and "Traceback" in v.message]
    assert not crashes, crashes
    return violations


@pytest.mark.parametrize("literal", [False, True], ids=["preview", "literal"])
@pytest.mark.parametrize("title", sorted(CASES))
def test_corpus_case(pack, title, literal):
    case = CASES[title]
    violations = _judge(pack, case, literal)
    mandatory = found(violations, level="mandatory")
    assert mandatory == expected(case, "model-serving"), [v.message for v in violations]
    notes = " ".join(v.message for v in violations if v.policy_name == NOTES)
    for text in case.notes:
        assert text in notes, notes
    if title in PUBLIC_APPS:  # what `scope: all` would reject is still shown
        assert "outside scope model-serving" in notes, notes


@pytest.fixture(scope="module")
def pack_scope_all():
    with InProcessPack(config=SCOPE_ALL) as harness:
        yield harness


@pytest.mark.parametrize("literal", [False, True], ids=["preview", "literal"])
@pytest.mark.parametrize("title", sorted(CASES))
def test_corpus_case_scope_all(pack_scope_all, title, literal):
    case = CASES[title]
    violations = _judge(pack_scope_all, case, literal)
    assert found(violations, level="mandatory") == expected(case, "all"), [
        v.message for v in violations
    ]


def test_public_apps_are_bad_cases_of_the_corpus():
    assert set(CASES) >= PUBLIC_APPS
    for title in PUBLIC_APPS:  # each draws an exposure finding that the scope decides
        assert {p for p, _ in CASES[title].expect} & SCOPED, title
