"""The circuit-breaker rollback rule (pure): ECS "deployment failed" events to the alarm topic."""

from __future__ import annotations

import json
import re
from typing import Any

from ecs_inference.names import derived_name
from ecs_inference.operations.errors import ObservabilityError

# EventBridge rule names: 1-64 of [.-_A-Za-z0-9].
RULE_NAME = re.compile(r"^[.\-_A-Za-z0-9]{1,64}$")


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
