"""A service that sets neither a launch type nor a strategy stores, after `up`, what
DescribeServices returns: its cluster's default strategy, or EC2 (tools/views/service_launch)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.policy.policy_stacks import Res, urn_of
from tools.views.engine import from_records

CLUSTER = "aws:ecs/cluster:Cluster"
ASSOC = "aws:ecs/clusterCapacityProviders:ClusterCapacityProviders"
SERVICE = "aws:ecs/service:Service"
FARGATE = [{"capacityProvider": "FARGATE", "weight": 1.0}]


def _stack(default: list[Any] | None, cluster_ref: bool = True) -> list[Res]:
    records = [Res(CLUSTER, "c", urn_of(CLUSTER, "c"), True, {"name": "c"})]
    if default is not None:
        records.append(
            Res(
                ASSOC,
                "cp",
                urn_of(ASSOC, "cp"),
                True,
                {"clusterName": "c", "defaultCapacityProviderStrategies": default},
                property_dependencies={"clusterName": (urn_of(CLUSTER, "c"),)},
            )
        )
    deps = {"cluster": (urn_of(CLUSTER, "c"),)} if cluster_ref else {}
    cluster = "c" if cluster_ref else "arn:aws:ecs:us-east-1:123456789012:cluster/shared"
    service = {"cluster": cluster, "taskDefinition": "gpu:1", "desiredCount": 1.0}
    records.append(
        Res(SERVICE, "svc", urn_of(SERVICE, "svc"), True, service, property_dependencies=deps)
    )
    return records


def _outputs(records: list[Res], view: str) -> dict[str, Any]:
    stack = from_records(records, view, project="ecs-inference", stack="dev")
    return next(r for r in stack.resources if r.name == "svc").outputs


@pytest.mark.parametrize("view", ["update", "state"])
def test_the_cluster_default_strategy_is_stored(view):
    outputs = _outputs(_stack(FARGATE), view)
    assert outputs["launchType"] == ""
    assert outputs["capacityProviderStrategies"] == [
        {"base": 0.0, "weight": 1.0, "capacityProvider": "FARGATE"}
    ]


@pytest.mark.parametrize("view", ["update", "state"])
def test_a_cluster_without_default_stores_ec2(view):
    assert _outputs(_stack(None), view)["launchType"] == "EC2"


def test_a_cluster_outside_the_stack_stores_nothing_known():
    outputs = _outputs(_stack(FARGATE, cluster_ref=False), "state")
    assert outputs.get("launchType") in (None, "")
    assert not outputs.get("capacityProviderStrategies")
