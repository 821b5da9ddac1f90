"""Where alarms go (pure): the circuit-breaker rollback rule and the alarm topic's subscriptions."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ecs_inference.specs.names import derived_name
from ecs_inference.specs.operations.errors import ObservabilityError

# EventBridge rule names: 1-64 of [.-_A-Za-z0-9].
RULE_NAME = re.compile(r"^[.\-_A-Za-z0-9]{1,64}$")
# SNS subscription protocols this stack accepts from config (the rest need resources it does
# not create, e.g. an SQS queue policy or a Lambda permission).
SNS_PROTOCOLS = ("email", "email-json", "https", "sms")


def deployment_rollback_rule(stack: str, cluster_arn: str) -> dict[str, Any]:
    """PutRule for ECS "deployment failed" events of this stack's cluster: the circuit breaker
    rolled a deployment back (`SERVICE_DEPLOYMENT_FAILED`), routed to the alarm topic."""
    suffix = "-ecs-deployment-rollback"
    # EventBridge rule names are at most 64 characters: a long stack name is cut (and hashed).
    name = derived_name(stack, invalid="[^A-Za-z0-9._-]", max_length=64 - len(suffix)) + suffix
    pattern = {
        "source": ["aws.ecs"],
        "detail-type": ["ECS Deployment State Change"],
        "resources": [{"prefix": _service_arn_prefix(cluster_arn)}],
        "detail": {"eventName": ["SERVICE_DEPLOYMENT_FAILED"]},
    }
    return {
        "Name": name,
        "Description": f"{stack}: an ECS deployment failed and the circuit breaker rolled it back",
        "EventPattern": json.dumps(pattern, separators=(",", ":")),
        "State": "ENABLED",
    }


def _service_arn_prefix(cluster_arn: str) -> str:
    """`arn:...:service/<cluster>/` from the cluster ARN: deployment events name the service."""
    head, _, cluster = cluster_arn.partition(":cluster/")
    if not cluster:
        raise ObservabilityError(f"{cluster_arn!r} is not an ECS cluster ARN")
    return f"{head}:service/{cluster}/"


@dataclass(frozen=True)
class Subscription:
    protocol: str
    endpoint: str


_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
_E164 = re.compile(r"^\+[1-9]\d{6,14}$")


def check_subscriptions(
    subscriptions: Sequence[Subscription], where: str = "platform.operations.alarmSubscriptions"
) -> list[tuple[str, str]]:
    """(config path, message) for each subscription SNS would refuse or never deliver to."""
    problems: list[tuple[str, str]] = []
    seen: set[tuple[str, str]] = set()
    for i, sub in enumerate(subscriptions):
        path = f"{where}[{i}]"
        if sub.protocol not in SNS_PROTOCOLS:
            problems.append(
                (f"{path}.protocol", f"{sub.protocol!r} is not one of {', '.join(SNS_PROTOCOLS)}")
            )
            continue
        ok = {
            "email": _EMAIL.match(sub.endpoint),
            "email-json": _EMAIL.match(sub.endpoint),
            "https": sub.endpoint.startswith("https://") and len(sub.endpoint) > len("https://"),
            "sms": _E164.match(sub.endpoint),
        }[sub.protocol]
        if not ok:
            hint = {
                "email": "an e-mail address",
                "email-json": "an e-mail address",
                "https": "an https:// URL (plain http would send alarms unencrypted)",
                "sms": "a phone number in E.164 form, e.g. +14155550100",
            }[sub.protocol]
            problems.append((f"{path}.endpoint", f"{sub.endpoint!r} must be {hint}"))
        if (sub.protocol, sub.endpoint) in seen:
            problems.append((path, "repeats an earlier subscription"))
        seen.add((sub.protocol, sub.endpoint))
    return problems
