"""Container definition pieces every service's task shares (pure: plain dicts, no Pulumi).

The keys come in the order the task definition's JSON keeps, so a diff of two revisions shows
only what changed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ecs_inference.contracts.aws_limits import FARGATE_NOFILE_DEFAULT
from ecs_inference.contracts.engine import ENV_REGION_VARIABLES
from ecs_inference.specs.service_connect import APP_PROTOCOL

# Fargate's default, stated in every serving container so a host (EC2) or platform change
# cannot lower it below what a server holding many upstream connections needs.
NOFILE_LIMIT = FARGATE_NOFILE_DEFAULT
"""Open files per container: one per client stream and upstream connection, plus the engine's
own (tokenizer, shards, NCCL sockets). Docker's default 1024 runs out under load."""


def log_configuration(log_group_name: str, region: str, stream_prefix: str) -> dict[str, Any]:
    """awslogs driver settings. Non-blocking mode: a CloudWatch hiccup must not stall stdout
    writes of the serving process (and with it token streams); the buffer absorbs bursts."""
    return {
        "logDriver": "awslogs",
        "options": {
            "awslogs-group": log_group_name,
            "awslogs-region": region,
            "awslogs-stream-prefix": stream_prefix,
            "mode": "non-blocking",
            "max-buffer-size": "25m",
        },
    }


def environment_list(
    managed: Sequence[Mapping[str, str]], extra: Mapping[str, str]
) -> list[dict[str, str]]:
    """`managed` name/value entries plus `extra`, sorted by name (stable task definition diffs)."""
    merged = {e["name"]: e["value"] for e in managed}
    merged.update(extra)
    return [{"name": k, "value": merged[k]} for k in sorted(merged)]


def secrets_list(secrets: Mapping[str, str]) -> list[dict[str, str]]:
    """ECS `secrets` entries: the agent resolves each `valueFrom` with the execution role."""
    return [{"name": k, "valueFrom": secrets[k]} for k in sorted(secrets)]


def serving_container(
    *,
    name: str,
    image: str,
    environment: list[dict[str, str]],
    port_mappings: list[dict[str, Any]],
    log_group_name: str,
    region: str,
    stream_prefix: str,
    stop_timeout_seconds: int,
) -> dict[str, Any]:
    """The keys every serving container starts with, in this order (the JSON of the task
    definition keeps it): essential, awslogs in non-blocking mode, the stop timeout and the
    nofile limit. Callers add command, secrets, devices and `linuxParameters`. The stack's
    `region` is also set as AWS_REGION and AWS_DEFAULT_REGION (`contracts.engine`)."""
    return {
        "name": name,
        "image": image,
        "essential": True,
        "environment": environment_list(
            environment, {variable: region for variable in ENV_REGION_VARIABLES}
        ),
        "portMappings": port_mappings,
        "logConfiguration": log_configuration(log_group_name, region, stream_prefix),
        "stopTimeout": stop_timeout_seconds,
        "ulimits": [{"name": "nofile", "softLimit": NOFILE_LIMIT, "hardLimit": NOFILE_LIMIT}],
    }


def with_app_protocol(containers: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Container definitions whose named port mappings declare `appProtocol: http`: Service
    Connect proxies such a port as HTTP (per-request timeouts, HTTP metrics); without it the port
    is TCP and ECS refuses a per-request timeout."""
    return [
        {
            **c,
            "portMappings": [
                {**m, "appProtocol": APP_PROTOCOL} if "name" in m else m
                for m in c.get("portMappings", [])
            ],
        }
        if c.get("portMappings")
        else c
        for c in containers
    ]
