"""`platform.operations`: day 2 (metrics sidecar, host telemetry, dashboard, alarms and who
they page)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ecs_inference.config.base import Section
from ecs_inference.contracts.aws_limits import ALARM_EVALUATION_MAX_SECONDS
from ecs_inference.specs.operations import AlarmSettings


class AlarmsConfig(Section):
    """Thresholds of the paging alarms. The gateway's and the workers' other thresholds derive
    from their own settings (longest route, CPU target, acceptable latency, backlog target)."""

    target_5xx_percent: float = Field(AlarmSettings.target_5xx_percent, gt=0, le=100)
    """Share of requests the engines answer 5xx (3 of 5 minutes) that pages."""
    ttft_p99_seconds: float = Field(AlarmSettings.ttft_p99_seconds, gt=0, le=3600)
    """Time to first token p99 of the slowest task (3 of 5 minutes) that pages."""
    pending_minutes: int = Field(
        AlarmSettings.pending_minutes, ge=1, le=ALARM_EVALUATION_MAX_SECONDS // 60
    )
    """Minutes a task may wait for capacity before it pages (one alarm evaluates at most a
    day)."""
    gpu_memory_percent: float = Field(AlarmSettings.gpu_memory_percent, gt=0, le=100)
    """GPU memory use (5 minutes) that pages."""
    gateway_memory_percent: float = Field(AlarmSettings.gateway_memory_percent, gt=0, le=100)
    """The gateway's memory use, in % of its task size (5 minutes), that pages."""


class SubscriptionConfig(Section):
    """One alarm recipient."""

    protocol: Literal["email", "email-json", "https", "sms"]
    """SNS protocol (e-mail subscriptions must be confirmed by the recipient)."""
    endpoint: str
    """E-mail address, https:// URL or E.164 phone number."""


class OperationsConfig(Section):
    """Day-2 operations: the engines' and hosts' metrics, one dashboard, and alarms to an SNS
    topic (subscribe here or later)."""

    metrics_sidecar: bool = True
    """Run the metrics sidecar (images/metrics) next to every engine; engine-load scaling and
    the engine alarms need it."""
    host_telemetry: bool = True
    """CloudWatch agent on the pool instances: nvidia-smi metrics on GPU hosts, neuron-monitor
    on Inferentia/Trainium hosts."""
    dashboard: bool = True
    """One CloudWatch dashboard for the stack."""
    alarms: AlarmsConfig = Field(default_factory=lambda: AlarmsConfig.model_validate({}))
    """Alarm thresholds."""
    alarm_subscriptions: list[SubscriptionConfig] = Field(default_factory=list, max_length=50)
    """Who the alarm topic notifies."""
