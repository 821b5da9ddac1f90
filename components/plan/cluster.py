"""The cluster's plan: the ECS cluster's spec from `platform.cluster`."""

from __future__ import annotations

from ecs_inference.config.stack import StackConfig
from ecs_inference.specs.cluster import ClusterSpec


def cluster_spec(cfg: StackConfig) -> ClusterSpec:
    """The cluster: sessions are logged only where ECS Exec is on."""
    c = cfg.cluster
    return ClusterSpec(
        container_insights=c.container_insights,
        execute_command_logging=c.execute_command and c.execute_command_logging,
    )
