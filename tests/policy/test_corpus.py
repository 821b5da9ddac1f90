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


def _judged(pack, title: str, literal: bool, scope: str):
    """The violations of case ``title``, its mandatory ones exactly those of ``scope``."""
    case: Case = CASES[title]
    violations = pack.analyze(build(case, literal=literal))
    crashes = [v for v in violations if "error" in v.message.lower() and "Traceback" in v.message]
    assert not crashes, crashes
    mandatory = found(violations, level="mandatory")
    assert mandatory == expected(case, scope), [v.message for v in violations]
    return violations


@pytest.mark.parametrize("literal", [False, True], ids=["preview", "literal"])
@pytest.mark.parametrize("title", sorted(CASES))
def test_corpus_case(pack, title, literal):
    violations = _judged(pack, title, literal, "model-serving")
    notes = " ".join(v.message for v in violations if v.policy_name == NOTES)
    for text in CASES[title].notes:
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
    _judged(pack_scope_all, title, literal, "all")


def test_public_apps_are_bad_cases_of_the_corpus():
    assert set(CASES) >= PUBLIC_APPS
    for title in PUBLIC_APPS:  # each draws an exposure finding that the scope decides
        assert {p for p, _ in CASES[title].expect} & SCOPED, title
