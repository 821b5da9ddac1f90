"""`platform.operations`: day 2 (metrics sidecar, host telemetry, dashboard, alarms and who
they page). `OperationsConfig` is both the stack file's section and the `Operations`
component's input: a model built by hand is checked by the same validators."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, model_validator

from ecs_inference.config.base import Section, raise_problems
from ecs_inference.contracts.aws_limits import ALARM_EVALUATION_MAX_SECONDS


class AlarmsConfig(Section):
    """Thresholds of the paging alarms. The gateway's and the workers' other thresholds derive
    from their own settings (longest route, CPU target, acceptable latency, backlog target)."""

    target_5xx_percent: float = Field(default=5.0, gt=0, le=100)
    """Share of requests the engines answer 5xx (3 of 5 minutes) that pages."""
    ttft_p99_seconds: float = Field(default=10.0, gt=0, le=3600)
    """Time to first token p99 of the slowest task (3 of 5 minutes) that pages."""
    pending_minutes: int = Field(default=15, ge=1, le=ALARM_EVALUATION_MAX_SECONDS // 60)
    """Minutes a task may wait for capacity before it pages (one alarm evaluates at most a
    day)."""
    gpu_memory_percent: float = Field(default=95.0, gt=0, le=100)
    """GPU memory use (5 minutes) that pages."""
    gateway_memory_percent: float = Field(default=90.0, gt=0, le=100)
    """The gateway's memory use, in % of its task size (5 minutes), that pages."""


_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
_E164 = re.compile(r"^\+[1-9]\d{6,14}$")
# What SNS would refuse, or never deliver to, by protocol: the endpoint's test and its form.
_ENDPOINTS = {
    "email": (_EMAIL.match, "an e-mail address"),
    "email-json": (_EMAIL.match, "an e-mail address"),
    "https": (
        lambda e: e.startswith("https://") and len(e) > len("https://"),
        "an https:// URL (plain http would send alarms unencrypted)",
    ),
    "sms": (_E164.match, "a phone number in E.164 form, e.g. +14155550100"),
}


class SubscriptionConfig(Section):
    """One alarm recipient. The protocols are those that need no resource the stack does not
    create (an SQS queue policy, a Lambda permission)."""

    protocol: Literal["email", "email-json", "https", "sms"]
    """SNS protocol (e-mail subscriptions must be confirmed by the recipient)."""
    endpoint: str
    """E-mail address, https:// URL or E.164 phone number."""

    @model_validator(mode="after")
    def _deliverable(self) -> SubscriptionConfig:
        test, form = _ENDPOINTS[self.protocol]
        if not test(self.endpoint):
            raise_problems(
                "SubscriptionConfig", [(("endpoint",), f"{self.endpoint!r} must be {form}")]
            )
        return self


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

    @model_validator(mode="after")
    def _once_each(self) -> OperationsConfig:
        seen = [(s.protocol, s.endpoint) for s in self.alarm_subscriptions]
        raise_problems(
            "OperationsConfig",
            [
                (("alarmSubscriptions", i), "repeats an earlier subscription")
                for i, sub in enumerate(seen)
                if sub in seen[:i]
            ],
        )
        return self
