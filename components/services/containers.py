"""The one container-definition builder every service and sidecar uses (pure: plain dicts, no
Pulumi).

The keys come in the order the task definition's JSON keeps, so a diff of two revisions shows
only what changed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ecs_inference.contracts.aws_limits import FARGATE_NOFILE_DEFAULT
from ecs_inference.contracts.engine import ENV_REGION_VARIABLES
from ecs_inference.services.service_connect import APP_PROTOCOL

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


def container_definition(
    *,
    name: str,
    image: str,
    log_group_name: str,
    region: str,
    stream_prefix: str,
    stop_timeout_seconds: int,
    environment: Sequence[Mapping[str, str]] = (),
    extra_environment: Mapping[str, str] | None = None,
    region_variables: bool = True,
    essential: bool = True,
    entry_point: Sequence[str] | None = None,
    command: Sequence[str] | None = None,
    port_mappings: Sequence[Mapping[str, Any]] | None = None,
    secrets: Mapping[str, str] | None = None,
    nofile_limit: bool = True,
    gpu_count: int = 0,
    mount_points: Sequence[Mapping[str, Any]] | None = None,
    linux_parameters: Mapping[str, Any] | None = None,
    sidecar_of: str | None = None,
    memory_reservation_mib: int | None = None,
    user: str | None = None,
) -> dict[str, Any]:
    """One ECS container definition, for every service's container and sidecar of the stack.

    Always: essential (default True), `environment` name/value entries plus `extra_environment`
    sorted by name, with the stack's `region` as AWS_REGION and AWS_DEFAULT_REGION
    (`contracts.engine`; default on: a task cannot ask instance metadata), awslogs in non-blocking
    mode, the stop timeout. Given only when asked (defaults off/None): entry point, command, port
    mappings, secrets by reference (`valueFrom`, resolved by the execution role), the nofile limit
    (default on), GPUs (`resourceRequirements`, with an unlimited memlock: NCCL and CUDA IPC pin
    host memory), mount points, `linuxParameters`, and for a sidecar (`sidecar_of`, the container
    it starts after) a soft memory reservation, a read-only root file system and a user.

    The keys come in one fixed order, so a task definition's JSON diff shows only what changed.
    """
    env = dict(extra_environment or {})
    if region_variables:
        env.update({variable: region for variable in ENV_REGION_VARIABLES})
    ulimits: list[dict[str, Any]] = []
    if nofile_limit:
        ulimits.append({"name": "nofile", "softLimit": NOFILE_LIMIT, "hardLimit": NOFILE_LIMIT})
    if gpu_count:
        ulimits.append({"name": "memlock", "softLimit": -1, "hardLimit": -1})
    keys: dict[str, Any] = {
        "name": name,
        "image": image,
        "essential": essential,
        "entryPoint": list(entry_point) if entry_point else None,
        "environment": environment_list(environment, env),
        "memoryReservation": memory_reservation_mib,
        "readonlyRootFilesystem": True if sidecar_of is not None else None,
        "user": user,
        "dependsOn": [{"containerName": sidecar_of, "condition": "START"}] if sidecar_of else None,
        "portMappings": [dict(m) for m in port_mappings] if port_mappings is not None else None,
        "logConfiguration": log_configuration(log_group_name, region, stream_prefix),
        "stopTimeout": stop_timeout_seconds,
        "ulimits": ulimits or None,
        "command": list(command) if command else None,
        "mountPoints": [dict(m) for m in mount_points] if mount_points else None,
        "secrets": secrets_list(secrets) if secrets else None,
        "resourceRequirements": [{"type": "GPU", "value": str(gpu_count)}] if gpu_count else None,
        "linuxParameters": dict(linux_parameters) if linux_parameters is not None else None,
    }
    return {key: value for key, value in keys.items() if value is not None}


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
