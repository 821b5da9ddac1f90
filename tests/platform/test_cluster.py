"""Cluster under the mock runtime: assert on the inputs the engine would receive."""

from __future__ import annotations

import pytest

from ecs_inference.cluster import Cluster, ClusterArgs
from tools.recording import run_function


@pytest.mark.parametrize("insights", ["enhanced", "disabled"])
def test_cluster_container_insights_and_exec_logging(insights: str) -> None:
    rec = run_function(lambda: Cluster("ecs", ClusterArgs(container_insights=insights)))
    cluster = rec.one("aws:ecs/cluster:Cluster")
    assert cluster.inputs["settings"] == [{"name": "containerInsights", "value": insights}]
    exec_cfg = cluster.inputs["configuration"]["executeCommandConfiguration"]
    assert exec_cfg["logging"] == "OVERRIDE"
    log_group = rec.one("aws:cloudwatch/logGroup:LogGroup", "exec")
    assert exec_cfg["logConfiguration"]["cloudWatchLogGroupName"].startswith("ecs-exec")
    assert log_group.inputs["retentionInDays"] == 365.0
    # children hang under the component, as the tree and policy correlation expect
    component = rec.one("ecs-inference:compute:Cluster")
    assert cluster.parent == component.urn and log_group.parent == component.urn


def test_cluster_without_exec_logging() -> None:
    rec = run_function(lambda: Cluster("ecs", ClusterArgs(execute_command_logging=False)))
    assert rec.by_type("aws:cloudwatch/logGroup:LogGroup") == []
    assert "configuration" not in rec.one("aws:ecs/cluster:Cluster").inputs
