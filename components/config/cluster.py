"""`platform.cluster`: the ECS cluster's settings (Container Insights, ECS Exec)."""

from __future__ import annotations

from typing import Literal

from ecs_inference.config.base import Section


class ClusterConfig(Section):
    """The ECS cluster."""

    container_insights: Literal["enhanced", "enabled", "disabled"] = "enhanced"
    """Container Insights level; `enhanced` adds per-task and per-container metrics."""
    execute_command: bool = False
    """ECS Exec (`aws ecs execute-command`) into every service's tasks: the services enable it,
    the task roles get the ssmmessages channels and may write the session log. Off: no shell
    into a serving container at all."""
    execute_command_logging: bool = True
    """With `executeCommand`: log every session (who ran what in a task) to CloudWatch."""
