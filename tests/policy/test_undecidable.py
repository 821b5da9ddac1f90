"""Undecidable is never clean: a rule that cannot read what its verdict needs says so.

``pulumi policy analyze`` on stored state, and a state exported without ``--show-secrets``,
show every secret as the string ``[secret]``, whatever its type. Each rule gets a resource it
judges whose every property is ``[secret]`` and must answer with a violation (judged on what
is still known) or a note naming the property ("can't run policy ..." or a ``guardrail-notes``
"cannot verify"), never silence. The same for container definitions that are not JSON.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.policy.corpus import Case, build, cases, expected
from tests.policy.corpus_seeds import QUEUE, seed_cases
from tests.policy.pack_harness import InProcessPack
from tests.policy.policy_stacks import Stack, aws_baseline, native_baseline

SECRET = "[secret]"
NOTES = "guardrail-notes"

GRID = "fargate-task-size-on-grid"
HOST = "no-accelerators-or-host-features-on-fargate"
TASK_READERS = {HOST, GRID, "no-plaintext-secrets-in-environment", "no-hub-weights-at-task-start"}
SERVICE_READERS = {
    "health-check-grace-period",
    "deployment-circuit-breaker-rollback",
    "target-type-ip-for-awsvpc",
    "no-gpu-task-on-fargate-service",
    "fargate-task-definition-requires-fargate",
    "no-reachable-public-ip",
}
FARGATE_SERVICE = {"fargate-image-pull-path", "fargate-platform-version-for-large-tasks"}
TARGET_GROUP = {"deregistration-delay-covers-streams", "target-type-ip-for-awsvpc"}
HEADROOM = "gpu-deploy-headroom"
#: Read a service's deploymentConfiguration.strategy (aws-native's baseline sets the block; the
#: pulumi-aws rollout stack's parts are in test_rollouts.py).
ROLLOUT = {"gpu-rollout-capacity", "rollout-test-rule-authenticates"}

#: The rules whose verdict on each baseline resource reads that resource's own properties
#: (the exposure rules on front doors are judged on the corpus below: the baselines' load
#: balancer is internal, so nothing there is a front door).
SUBJECTS: dict[tuple[str, str], set[str]] = {
    ("aws", "alb"): {"alb-idle-timeout-for-streaming"},
    ("aws", "llm-tg"): TARGET_GROUP,
    ("aws", "rerank-tg"): TARGET_GROUP,
    ("aws", "gpu-asg"): {HEADROOM},
    ("aws", "llm-td"): TASK_READERS | {HEADROOM},
    ("aws", "llm"): SERVICE_READERS | {HEADROOM},
    ("aws", "llm-scaling"): {"scale-out-faster-than-scale-in"},
    ("aws", "rerank-td"): TASK_READERS | {"no-gpu-task-on-fargate-service"},
    ("aws", "rerank"): SERVICE_READERS | FARGATE_SERVICE,
    ("native", "n-alb"): {"alb-idle-timeout-for-streaming"},
    ("native", "n-llm-tg"): TARGET_GROUP,
    ("native", "n-gpu-asg"): {HEADROOM},
    ("native", "n-llm-td"): TASK_READERS | {HEADROOM},
    ("native", "n-llm"): SERVICE_READERS | {HEADROOM} | ROLLOUT,
    ("native", "n-llm-scaling"): {"scale-out-faster-than-scale-in"},
    ("native", "n-rerank-td"): TASK_READERS | {"no-gpu-task-on-fargate-service"},
    # No loadBalancers (grace period, target type) nor platformVersion (LATEST).
    ("native", "n-rerank"): (
        SERVICE_READERS - {"health-check-grace-period", "target-type-ip-for-awsvpc"}
    )
    | {"fargate-image-pull-path"},
}
BASELINES = {"aws": aws_baseline, "native": native_baseline}


def _secret_everywhere(stack: Stack, name: str) -> Stack:
    changed = stack.copy()
    changed.replace(name, inputs={key: SECRET for key in stack[name].inputs})
    return changed


def _speaks(violations: list[Any], policy: str) -> bool:
    """A violation or a note of ``policy`` (its own advisory, or one it left for
    ``guardrail-notes``)."""
    return any(
        v.policy_name == policy or (v.policy_name == NOTES and f"\n{policy}: " in v.message)
        for v in violations
    )


def test_every_rule_has_an_all_secret_subject(local_pack):
    policies = {p["name"] for p in local_pack.info()["policies"]} - {NOTES}
    judged = set().union(*SUBJECTS.values()) | {p for _, _, p in _corpus_subjects()}
    assert judged | ({QUEUE} if _queue_subjects() else set()) == policies


@pytest.mark.parametrize("provider,name", sorted(SUBJECTS))
def test_an_all_secret_resource_is_never_passed_in_silence(local_pack, provider, name):
    violations = local_pack.analyze(_secret_everywhere(BASELINES[provider](), name))
    for policy in sorted(SUBJECTS[provider, name]):
        assert _speaks(violations, policy), (policy, [v.message for v in violations])


def _corpus_subjects() -> list[tuple[str, str, str]]:
    """One bad corpus case per (policy, type of the resource it reports on)."""
    seen: dict[tuple[str, str], tuple[str, str, str]] = {}
    for case in cases():
        kinds = {name: type_ for type_, name, _ in case.resources}
        for policy, name in sorted(expected(case, "model-serving")):
            seen.setdefault((policy, kinds[name]), (case.title, name, policy))
    return sorted(seen.values())


CORPUS = {c.title: c for c in cases()}
SEEDS = {s.title: s for s in seed_cases()}


def _queue_subjects() -> list[tuple[str, str]]:
    """Each resource of a queue worker scaled on CPU only (inline and standalone role
    policies, both providers): the service, its task definition, role, role policies,
    scalable target and scaling policy all decide the rule's verdict."""
    return [
        (title, name)
        for title, seed in sorted(SEEDS.items())
        if any(policy == QUEUE for policy, _ in seed.advisory)
        for _, name, _ in seed.case.resources
    ]


@pytest.mark.parametrize("title,name", _queue_subjects())
def test_a_secret_part_of_a_queue_worker_is_never_passed_in_silence(local_pack, title, name):
    stack = build(SEEDS[title].case)
    violations = local_pack.analyze(_secret_everywhere(stack, name))
    assert _speaks(violations, QUEUE), [v.message for v in violations]


@pytest.mark.parametrize("title,name,policy", _corpus_subjects())
def test_a_secret_front_or_launcher_is_never_passed_in_silence(local_pack, title, name, policy):
    case: Case = CORPUS[title]
    stack = build(case)
    violations = local_pack.analyze(_secret_everywhere(stack, name))
    assert _speaks(violations, policy), [v.message for v in violations]


@pytest.mark.parametrize("text", ["[secret]", "not json", '{"name": "a"}'])
def test_container_definitions_that_cannot_be_read_are_noted(local_pack, text):
    stack = aws_baseline().copy().set("rerank-td", containerDefinitions=text)
    violations = local_pack.analyze(stack)
    for policy in ("no-accelerators-or-host-features-on-fargate", "no-gpu-task-on-fargate-service"):
        assert any(
            v.policy_name == policy and "containerDefinitions" in v.message for v in violations
        ), [v.message for v in violations]


@pytest.fixture(scope="module")
def closed_pack() -> Iterator[InProcessPack]:
    config = {
        name: {"unknowns": "fail-closed"} for name in (HOST, "no-gpu-task-on-fargate-service")
    }
    with InProcessPack(config=config) as process:
        yield process


def test_a_secret_container_definition_fails_closed(closed_pack):
    stack = aws_baseline().copy().set("rerank-td", containerDefinitions=SECRET)
    mandatory = [v for v in closed_pack.analyze(stack) if v.enforcement_level == "mandatory"]
    assert {v.policy_name for v in mandatory} == {HOST, "no-gpu-task-on-fargate-service"}
    assert all("containerDefinitions" in v.message and "[secret]" in v.message for v in mandatory)


def test_a_state_machine_definition_that_does_not_parse_is_noted(local_pack):
    title = next(
        t for t in CORPUS if t.startswith("sfn-aws-") and t.endswith("-fargate-shared-memory")
    )
    stack = build(CORPUS[title]).set("sfn", definition="{ not json: [")
    violations = local_pack.analyze(stack)
    assert _speaks(violations, "no-gpu-task-on-fargate-service"), [v.message for v in violations]
    assert any("neither a JSON nor a YAML object" in v.message for v in violations)
