"""The pack gives the same mandatory verdicts in every engine view (``engine_variants``): the
whole corpus with the Optional+Computed attributes its programs leave unset unknown (a first
preview) and as the provider stores them (after ``up``), Analyze getting the inputs and
AnalyzeStack the outputs, as the engine sends them."""

from __future__ import annotations

from typing import Any

import pytest

from tests.policy.corpus import Case, build, cases, expected
from tests.policy.engine_variants import in_view
from tests.policy.policy_stacks import SVC, UNKNOWN, aws_baseline, found, native_baseline
from tools.analyzer_client import analyze_requests, analyze_stack_request

CASES = {c.title: c for c in cases()}
GPU_RULE = "no-gpu-task-on-fargate-service"


def analyze_view(pack: Any, records: list[Any], view: str):
    """Analyze on the records' inputs, AnalyzeStack on their outputs in ``view``."""
    violations = []
    for record, request in zip(records, analyze_requests(records), strict=True):
        reply = pack._call("Analyze", request)  # pyright: ignore[reportPrivateUsage]
        violations += pack._convert(reply, "resource", record.urn)  # pyright: ignore[reportPrivateUsage]
    reply = pack._call("AnalyzeStack", analyze_stack_request(in_view(records, view)))  # pyright: ignore[reportPrivateUsage]
    return violations + pack._convert(reply, "stack", None)  # pyright: ignore[reportPrivateUsage]


@pytest.mark.parametrize("view", ["new", "state"])
@pytest.mark.parametrize("title", sorted(CASES))
def test_corpus_verdict_is_the_same_in_every_view(pack, title, view):
    case: Case = CASES[title]
    violations = analyze_view(pack, list(build(case)), view)
    verdict = expected(case, "model-serving")
    assert found(violations, level="mandatory") == verdict, [v.message for v in violations]


@pytest.mark.parametrize("view", ["update", "new", "state"])
@pytest.mark.parametrize("baseline", [aws_baseline, native_baseline])
def test_baselines_stay_clean_in_every_view(pack, baseline, view):
    assert found(analyze_view(pack, list(baseline()), view), level="mandatory") == set()


def _gpu_on_fargate_strategy(launch_type: Any):
    """A GPU service on a FARGATE capacity provider strategy, ``launchType`` as the engine
    shows it (... : unset)."""
    stack = aws_baseline().copy()
    stack.set("llm", capacityProviderStrategies=[{"capacityProvider": "FARGATE", "weight": 1.0}])
    stack.set("llm", launchType=launch_type)
    stack.replace("llm", property_dependencies={"taskDefinition": (stack["llm-td"].urn,)})
    return stack


def _launch_type_from_an_output(stack) -> None:
    """``llm``'s launchType set from another resource's output (a recorded dependency)."""
    deps = {"taskDefinition": (stack["llm-td"].urn,), "launchType": (stack["gpu-cp"].urn,)}
    stack.replace("llm", property_dependencies=deps)


@pytest.mark.parametrize("view", ["update", "new", "state"])
@pytest.mark.parametrize("launch_type", [..., UNKNOWN, ""], ids=["unset", "unknown", "empty"])
def test_gpu_service_on_a_fargate_strategy_is_rejected_in_every_view(pack, launch_type, view):
    stack = _gpu_on_fargate_strategy(launch_type)
    violations = analyze_view(pack, list(stack), view)
    assert (GPU_RULE, "llm") in found(violations, level="mandatory")


def test_a_launch_type_set_from_an_output_is_not_taken_for_unset(pack):
    """Unknown with a recorded dependency: the program set it; the pack says it cannot see
    it rather than decide from the strategy."""
    stack = _gpu_on_fargate_strategy(UNKNOWN)
    _launch_type_from_an_output(stack)
    violations = pack.analyze(stack)
    assert (GPU_RULE, "llm") not in found(violations, level="mandatory")
    assert any(v.policy_name == GPU_RULE and ".launchType" in v.message for v in violations)


def test_cluster_default_decides_when_both_are_unknown(pack):
    stack = aws_baseline().copy()
    stack.add(
        "aws:ecs/cluster:Cluster",
        "jobs",
        {"name": "jobs"},
    )
    stack.add(
        "aws:ecs/clusterCapacityProviders:ClusterCapacityProviders",
        "jobs-providers",
        {
            "clusterName": UNKNOWN,
            "capacityProviders": ["FARGATE"],
            "defaultCapacityProviderStrategies": [{"capacityProvider": "FARGATE", "weight": 1.0}],
        },
        refs={"clusterName": "jobs"},
    )
    stack.add(
        SVC,
        "batch",
        {
            "taskDefinition": UNKNOWN,
            "cluster": UNKNOWN,
            "launchType": UNKNOWN,
            "capacityProviderStrategies": UNKNOWN,
        },
        refs={"taskDefinition": "llm-td", "cluster": "jobs"},
    )
    assert (GPU_RULE, "batch") in found(pack.analyze(stack), level="mandatory")


@pytest.mark.parametrize("unknowns", ["advisory", "fail-closed"])
def test_unknowns_fail_closed_makes_cannot_verify_mandatory(unknowns):
    from tests.policy.conftest import POLICY_DIR
    from tools.analyzer_client import PolicyPackProcess

    stack = _gpu_on_fargate_strategy(UNKNOWN)
    _launch_type_from_an_output(stack)
    config = {GPU_RULE: {"unknowns": unknowns}}
    with PolicyPackProcess(POLICY_DIR, config=config) as process:
        mandatory = found(process.analyze(stack), level="mandatory")
    assert ((GPU_RULE, "llm") in mandatory) is (unknowns == "fail-closed")


def test_state_view_of_a_capacity_provider_service_keeps_its_verdict(pack):
    """After ``up`` a capacity-provider service stores ``launchType: ""``: a GPU task on an EC2
    provider stays accepted, on FARGATE_SPOT rejected."""
    for provider, expect in (("gpu-cp", False), ("FARGATE_SPOT", True)):
        stack = aws_baseline().copy()
        stack.set("llm", launchType="")
        if provider != "gpu-cp":
            stack.set("llm", capacityProviderStrategies=[{"capacityProvider": provider}])
        mandatory = found(pack.analyze(stack), level="mandatory")
        assert ((GPU_RULE, "llm") in mandatory) is expect
