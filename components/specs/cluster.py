"""The ECS cluster as plain values: what `components.cluster.Cluster` builds."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

ContainerInsights = Literal["enhanced", "enabled", "disabled"]


@dataclass(frozen=True, kw_only=True)
class ClusterSpec:
    """The cluster's monitoring and ECS Exec audit log."""

    container_insights: ContainerInsights = "enhanced"
    """Container Insights level; `enhanced` adds per-task and per-container metrics."""
    execute_command_logging: bool = True
    """Log ECS Exec sessions to CloudWatch (only where ECS Exec is on)."""
    exec_log_retention_days: int = 365
    """Retention of the ECS Exec log group, in days."""
