"""`platform.cluster`: the ECS cluster's settings (Container Insights, ECS Exec)."""

from __future__ import annotations

from ecs_inference.config.base import Section
from ecs_inference.specs.cluster import ClusterSpec, ContainerInsights


class ClusterConfig(Section):
    """The ECS cluster."""

    container_insights: ContainerInsights = ClusterSpec.container_insights
    """Container Insights level; `enhanced` adds per-task and per-container metrics."""
    execute_command: bool = False
    """ECS Exec (`aws ecs execute-command`) into every service's tasks: the services enable it,
    the task roles get the ssmmessages channels and may write the session log. Off: no shell
    into a serving container at all."""
    execute_command_logging: bool = ClusterSpec.execute_command_logging
    """With `executeCommand`: log every session (who ran what in a task) to CloudWatch."""
