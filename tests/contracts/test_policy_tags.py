"""The policy pack's copy of the tag keys agrees with `contracts/tags.py`, and the pack reads
its keys from that copy."""

from __future__ import annotations

import sys

from ecs_inference.contracts import tags
from tests.contracts.test_policy_limits import ROOT, load, public_values


def test_policy_tag_copy_agrees_with_the_contracts() -> None:
    copy = public_values(load(ROOT / "policy/guardrails/tags.py"))
    program = public_values(tags)
    assert copy, "the policy pack's tag copy defines nothing"
    assert copy == program


def test_the_pack_reads_its_tags_from_its_copy() -> None:
    if str(ROOT / "policy") not in sys.path:
        sys.path.insert(0, str(ROOT / "policy"))
    from guardrails import reachability, streaming

    assert reachability.SERVING_TAG == tags.SERVING
    assert streaming.MAX_REQUEST_TAG == tags.MAX_REQUEST_SECONDS
