"""The corpus (``corpus.py``) against the real pack: every bad stack rejected with exactly the
expected (policy, resource) pairs, every good stack accepted, both as a preview records it
(unknown ARNs, property dependencies) and literally (bare ARNs, ids and names, no
dependencies), and no stack crashing a rule."""

from __future__ import annotations

import pytest

from tests.policy.corpus import Case, build, cases
from tests.policy.policy_stacks import found

CASES = {c.title: c for c in cases()}
NOTES = "guardrail-notes"


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
    assert mandatory == case.expect, [v.message for v in violations]
    notes = " ".join(v.message for v in violations if v.policy_name == NOTES)
    for text in case.notes:
        assert text in notes, notes


def test_corpus_covers_both_verdicts_and_providers():
    all_cases = list(CASES.values())
    bad = [c for c in all_cases if c.expect]
    good = [c for c in all_cases if not c.expect]
    assert len(bad) >= 40 and len(good) >= 40
    assert {c.provider for c in bad} == {"aws", "native"} == {c.provider for c in good}
