"""The ECS cluster: Container Insights, and ECS Exec's session log only when Exec is on."""

from __future__ import annotations

import pytest

from ecs_inference.pools.cluster import Cluster
from ecs_inference.pools.input import ClusterConfig
from tools.recording import run_function


@pytest.mark.parametrize("insights", ["enhanced", "disabled"])
def test_cluster_container_insights_and_exec_logging(insights: str) -> None:
    rec = run_function(
        lambda: Cluster("ecs", ClusterConfig(container_insights=insights, execute_command=True))
    )
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


@pytest.mark.parametrize(
    "config",
    [ClusterConfig(execute_command=True, execute_command_logging=False), ClusterConfig()],
)
def test_cluster_without_exec_logging(config: ClusterConfig) -> None:
    """No session log without ECS Exec, or with its logging off."""
    rec = run_function(lambda: Cluster("ecs", config))
    assert rec.by_type("aws:cloudwatch/logGroup:LogGroup") == []
    assert "configuration" not in rec.one("aws:ecs/cluster:Cluster").inputs
