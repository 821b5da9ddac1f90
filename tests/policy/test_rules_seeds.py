"""The four seed advisories (``guardrails/containers.py``, ``fargate/``, ``deployment.py``)
judged in process (``pack_harness``).

The seed corpus (``corpus_seeds.py``) is judged both as a preview records it and literally: the
seed rules' findings must be exactly the listed (policy, resource) pairs, nothing mandatory
appears, and every expected "cannot verify" note is there. The baselines of the other rule
tests then get one change each and must produce exactly the listed findings (all levels).
"""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from tests.policy.corpus import build
from tests.policy.corpus_seeds import COMPAT, HUB, PULL, QUEUE, SEED_POLICIES, seed_cases
from tests.policy.policy_stacks import (
    RERANKER,
    SVC,
    UNKNOWN,
    Stack,
    aws_baseline,
    container_json,
    found,
    native_baseline,
)

CASES = {c.title: c for c in seed_cases()}
NOTES = "guardrail-notes"


@pytest.mark.parametrize("literal", [False, True], ids=["preview", "literal"])
@pytest.mark.parametrize("title", sorted(CASES))
def test_seed_corpus_case(local_pack, title, literal):
    seed = CASES[title]
    violations = local_pack.analyze(build(seed.case, literal=literal))
    messages = [v.message for v in violations]
    assert not [m for m in messages if "Traceback" in m], messages
    assert found(violations, level="mandatory") == set(), messages
    ours = {pair for pair in found(violations, level="advisory") if pair[0] in SEED_POLICIES}
    assert ours == seed.advisory, messages
    notes = " ".join(v.message for v in violations if v.policy_name == NOTES)
    for text in seed.notes:
        assert text in notes, notes


#: The corpus cases docs/operational-rules.md cites, judged again by name (both ways each).
EXAMPLES = (
    "seed-aws-hub-vllm-serve-positional",
    "seed-native-hub-image-names-org-and-tag",
    "seed-aws-fargate-spot-task-without-compatibilities",
    "seed-aws-pull-no-egress",
    "seed-native-pull-endpoints-without-s3",
    "seed-aws-pull-main-route-table",
    "seed-aws-pull-external-subnets-3-endpoints",
    "seed-aws-pull-external-subnets-2-endpoints",
    "seed-aws-queue-worker-cpu-only",
    "seed-native-queue-worker-cpu-only-standalone-policy",
)


def test_outside_subnets_are_verified_by_the_endpoints_in_the_groups_vpc(local_pack):
    """Subnets of an existing VPC: with ecr.api, ecr.dkr and s3 declared in the VPC of the
    service's security group the pull path is verified (no note); with one missing, noted."""
    for title, noted in (
        ("seed-aws-pull-external-subnets-3-endpoints", False),
        ("seed-aws-pull-external-subnets-2-endpoints", True),
    ):
        violations = local_pack.analyze(build(CASES[title].case))
        notes = [v.message for v in violations if v.policy_name == NOTES]
        assert any("can pull its image" in n for n in notes) == noted, (title, notes)


@pytest.mark.parametrize("title", EXAMPLES)
def test_seed_example(local_pack, title):
    for literal in (False, True):
        test_seed_corpus_case(local_pack, title, literal)


def test_seed_corpus_covers_every_rule_both_verdicts_and_providers():
    cases = list(CASES.values())
    for policy in SEED_POLICIES:
        bad = [c for c in cases if any(p == policy for p, _ in c.advisory)]
        assert {c.case.provider for c in bad} == {"aws", "native"}, policy
    good = [c for c in cases if not c.advisory]
    assert {c.case.provider for c in good} == {"aws", "native"} and len(good) >= 20


# --- one change to the compliant baselines -----------------------------------------------------


def _rerank(**changes) -> Callable[[Stack], None]:
    def change(s: Stack) -> None:
        s.set("rerank-td", containerDefinitions=container_json({**RERANKER, **changes}))

    return change


VARIANTS: dict[str, tuple[Callable[[Stack], object], set]] = {
    "hub-model-id-flag": (
        _rerank(command=["--model-id", "BAAI/bge-reranker-v2-m3"]),
        {(HUB, "rerank-td")},
    ),
    "hub-token-secret-online": (
        _rerank(secrets=[{"name": "HF_TOKEN", "valueFrom": "arn:aws:secretsmanager:::secret:hf"}]),
        {(HUB, "rerank-td")},
    ),
    "hub-model-from-efs-path": (
        _rerank(command=["--model-id", "/mnt/weights/bge-reranker-v2-m3"]),
        set(),
    ),
    "hub-id-offline": (
        _rerank(
            command=["--model-id", "BAAI/bge-reranker-v2-m3"],
            environment=[{"name": "HF_HUB_OFFLINE", "value": "1"}],
        ),
        set(),
    ),
    "fargate-task-without-compatibilities": (
        lambda s: s.set("rerank-td", requiresCompatibilities=...),
        {(COMPAT, "rerank")},
    ),
    "ec2-task-without-compatibilities": (
        lambda s: s.set("llm-td", requiresCompatibilities=...),
        set(),
    ),
    # The re-ranker's subnets are literal ids of another stack: not judged, not even noted.
    "fargate-public-ip-external-subnets": (
        lambda s: s.set("rerank", networkConfiguration={"subnets": ["subnet-a"]}),
        set(),
    ),
}


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_aws_baseline_one_change(local_pack, variant):
    change, expected = VARIANTS[variant]
    stack = aws_baseline().copy()
    change(stack)
    violations = local_pack.analyze(stack)
    assert found(violations) == expected, [v.message for v in violations]
    for v in violations:
        assert v.enforcement_level == "advisory"


def _native_rerank(**changes) -> Callable[[Stack], None]:
    def change(s: Stack) -> None:
        s.set("n-rerank-td", containerDefinitions=[{**RERANKER, **changes}])

    return change


NATIVE_VARIANTS: dict[str, tuple[Callable[[Stack], object], set]] = {
    "hub-model-env": (
        _native_rerank(environment=[{"name": "MODEL_ID", "value": "BAAI/bge-reranker-base"}]),
        {(HUB, "n-rerank-td")},
    ),
    "fargate-task-without-compatibilities": (
        lambda s: s.set("n-rerank-td", requiresCompatibilities=...),
        {(COMPAT, "n-rerank")},
    ),
}


@pytest.mark.parametrize("variant", sorted(NATIVE_VARIANTS))
def test_native_baseline_one_change(local_pack, variant):
    change, expected = NATIVE_VARIANTS[variant]
    stack = native_baseline().copy()
    change(stack)
    violations = local_pack.analyze(stack)
    assert found(violations) == expected, [v.message for v in violations]


def test_unknown_subnets_without_dependency_are_noted_not_judged(local_pack):
    stack = aws_baseline().copy()
    stack.set("rerank", networkConfiguration={"subnets": UNKNOWN, "assignPublicIp": False})
    violations = local_pack.analyze(stack)
    assert found(violations) == {(NOTES, "rerank")}
    assert any("networkConfiguration" in v.message for v in violations)


def test_queue_worker_with_unknown_role_policy_is_noted(local_pack):
    seed = CASES["seed-aws-queue-worker-cpu-only"]
    stack = build(seed.case)
    role = next(r for r in stack if r.name == "task-role")
    stack.set("task-role", inlinePolicies=[{"name": "work", "policy": UNKNOWN}])
    assert role.type == "aws:iam/role:Role"
    violations = local_pack.analyze(stack)
    assert QUEUE not in {v.policy_name for v in violations}
    notes = " ".join(v.message for v in violations if v.policy_name == NOTES)
    assert "cannot verify whether service 'worker'" in notes


def test_messages_name_the_cause_and_the_fix(local_pack):
    violations = local_pack.analyze(build(CASES["seed-aws-pull-no-egress"].case))
    pull = next(v for v in violations if v.policy_name == PULL)
    assert "private-a" in pull.message and "ecr.api" in pull.message
    assert "Fix:" in pull.description
    stack = aws_baseline().copy()
    _rerank(command=["--model-id", "BAAI/bge-reranker-v2-m3"])(stack)
    hub = next(v for v in local_pack.analyze(stack) if v.policy_name == HUB)
    assert "BAAI/bge-reranker-v2-m3" in hub.message and "Fix:" in hub.description
    assert json.loads(stack["rerank-td"].inputs["containerDefinitions"])[0]["name"] == "reranker"
    assert SVC  # the baseline's service type is the one the rules judge
