"""Mandatory verdicts are the same in every engine view, as ``tools.views`` builds them from the
providers' schemas: the whole corpus, the four reference stacks and the insecure example in
``new`` (a first preview: computed attributes unknown), ``update`` and ``state`` (what the
provider stores after ``up``). A verdict that differs between views is a defect."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.policy.corpus import build, cases, expected
from tests.policy.policy_stacks import found
from tests.policy.test_insecure_example import EXPECTED_MANDATORY
from tests.stacks import REFERENCE_STACKS
from tools.preview import run_preview
from tools.views import VIEWS, run_pack

ROOT = Path(__file__).resolve().parents[2]
CASES = {c.title: c for c in cases()}


@pytest.mark.parametrize("title", sorted(CASES))
def test_corpus_verdicts_agree_in_every_view(pack, title):
    case = CASES[title]
    records = list(build(case))
    verdicts = {
        view: found(run_pack(records, view, pack=pack), level="mandatory") for view in VIEWS
    }
    assert all(v == expected(case, "model-serving") for v in verdicts.values()), verdicts


def _by_view(violations) -> dict[str, set[tuple[str, str]]]:
    verdicts: dict[str, set[tuple[str, str]]] = {view: set() for view in VIEWS}
    for v in violations:
        if v.enforcement_level == "mandatory":
            verdicts[v.view].add((v.policy_name, (v.urn or "").rsplit("::", 1)[-1]))
    return verdicts


@pytest.mark.parametrize("stack", REFERENCE_STACKS)
def test_reference_stacks_are_clean_in_every_view(stack):
    result = run_preview(stack, views=VIEWS)
    assert set(result.views) == set(VIEWS), result.error
    assert _by_view(result.violations) == {view: set() for view in VIEWS}


def test_the_insecure_example_keeps_every_mandatory_finding_in_every_view():
    result = run_preview("dev", program_dir=ROOT / "tests" / "examples" / "insecure", views=VIEWS)
    assert _by_view(result.violations) == {view: EXPECTED_MANDATORY for view in VIEWS}
