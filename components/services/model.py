"""ModelService: one LLM served by vLLM (GPU pool) or optimum-neuron (Inferentia pool) on ECS.

Creates, for one service behind the authenticated Endpoint:
- a log group with retention;
- an execution role (pull the image from its ECR repository, write this log group, read exactly
  the container's Secrets Manager secrets) and a task role that can only read the weights
  prefix in S3 (documents in `components.iam`);
- an EC2 task definition in awsvpc mode whose single container is launched as
  `services.engines` describes (environment, command, port), with GPU `resourceRequirements`
  equal to the tensor parallel size (vLLM) or the Neuron devices mapped through
  `linuxParameters.devices` (Neuron devices are not an ECS resource type), shared memory for
  NCCL, no container health check (the ALB's health check decides);
- a task security group admitting only the ALB on the container port, egress HTTPS only;
- an ip target group health-checking the engine's `/health`, with a deregistration delay that
  lets the longest stream finish, and the endpoint's listener rules for it (`router.route`);
- the ECS service on the pool's capacity provider, created after the rules attach the target
  group to the ALB (ECS rejects a target group that belongs to no load balancer), with a
  circuit breaker that rolls back, a grace period covering image pull + weight load + warm-up;
- target-tracking autoscaling on ALBRequestCountPerTarget (scale out fast, scale in slow).

All numbers arrive already decided by the plan (`components.plan`); this module validates
their consistency before creating anything. Pure parts (validation, the container definition)
are plain functions tested without mocks. The resource sequence around the task, shared with
`FargateReranker`, is `components._ecs_service.LoadBalancedService`; the argument checks and
container pieces both services share (`validate_common`, `log_configuration`, ...) live here.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_aws as aws
from pulumi import Input

from components import iam
from components.config.schema import NAME_PATTERN
from components.services import engines
from components.services.base import (
    TARGET_TRACKING_METRIC,
    LoadBalancedService,
    PlacementSpec,
    Router,
    ServiceArgs,
    TaskSpec,
    log_group_name,
)
from components.services.engines import NeuronLaunch, VllmLaunch
from components.sizing import catalog

TOKEN = "ecs-inference:serving:ModelService"
CONTAINER_NAME = "engine"
"""Name of the serving container (the target group registers this container's port)."""

NOFILE_LIMIT = 65535
"""Open files per container: one per client stream and upstream connection, plus the engine's
own (tokenizer, shards, NCCL sockets). Docker's default 1024 runs out under load."""

NEURON_DEVICE = re.compile(r"^/dev/neuron(\d+)$")
# The config's service-name rule: the name becomes the URL path, log group and family.
SERVICE_NAME = NAME_PATTERN
LISTENER_PRIORITY_MAX = 50_000
TARGET_GROUP_DEREGISTRATION_MAX = 3600
ECS_GRACE_PERIOD_MAX = 2_147_483_647


class ServiceArgsError(ValueError):
    """Plain service arguments are inconsistent; the message names the argument and values."""


@dataclass(frozen=True)
class ModelServiceArgs:
    """Inputs of `ModelService`; all numbers are plan-derived.

    Required: `cluster_arn`, `vpc_id`, `subnet_ids` (private), `alb_security_group_id`,
    `load_balancer_arn_suffix` (for the scaling metric), `router` (has `.route(...)`),
    `service` (short name, the URL path `/<service>/`), `priority` (listener rule priority,
    1-50000, unique on the listener), `image`, `launch` (`VllmLaunch` or `NeuronLaunch`),
    `capacity_provider_name` (the pool's), `weights_bucket`, `weights_prefix`, `task_cpu`
    (CPU units), `task_memory_mib` (task memory on the instance).

    Optional (defaults):
    - `gpu_count` 0 — vLLM: GPUs to reserve, must equal `launch.tensor_parallel_size`;
    - `neuron_devices` () — Neuron: device paths to map; default `/dev/neuron0..N-1` for the
      launch's `num_devices`; if given, exactly `num_devices` distinct `/dev/neuronN` paths;
    - `shm_size_mib` 0 — `/dev/shm` size (NCCL between tensor parallel GPUs); 0 keeps Docker's;
    - `desired_count` 1, `min_count` 1, `max_count` 2 — tasks, and the autoscaling range;
    - `target_requests_per_target` 30.0 — requests per task per minute the policy tracks;
    - `scale_out_cooldown` 60, `scale_in_cooldown` 300 seconds (scale-out ≤ scale-in);
    - `health_check_grace_period_seconds` 600 — image pull + weight load + warm-up;
    - `deregistration_delay_seconds` 300 — ≥ the longest generation (0-3600);
    - `deployment_minimum_healthy_percent` 100, `deployment_maximum_percent` 200;
    - `one_task_per_instance` False — distinctInstance placement; required for Neuron (the
      mapped device paths are fixed, so two tasks on one instance would share devices);
    - `stop_timeout_seconds` 120 — SIGTERM-to-SIGKILL grace for in-flight streams (2-3600;
      without it the agent's ECS_CONTAINER_STOP_TIMEOUT, 30 s by default, would apply);
    - `environment` {} — extra plain variables (may not override engine-managed ones);
    - `secrets` {} — env name -> Secrets Manager ARN (optionally `:json-key::`), via `valueFrom`;
    - `log_retention_days` 30;
    - `service_depends_on` () — resources the ECS service must wait for, e.g. the cluster's
      capacity provider association (ECS rejects a strategy naming an unassociated provider).
    """

    cluster_arn: Input[str]
    vpc_id: Input[str]
    subnet_ids: Input[Sequence[str]]
    alb_security_group_id: Input[str]
    load_balancer_arn_suffix: Input[str]
    router: Router
    service: str
    priority: int
    image: Input[str]
    launch: VllmLaunch | NeuronLaunch
    capacity_provider_name: Input[str]
    weights_bucket: str
    weights_prefix: str
    task_cpu: int
    task_memory_mib: int
    gpu_count: int = 0
    neuron_devices: tuple[str, ...] = ()
    shm_size_mib: int = 0
    desired_count: int = 1
    min_count: int = 1
    max_count: int = 2
    target_requests_per_target: float = 30.0
    scale_out_cooldown: int = 60
    scale_in_cooldown: int = 300
    health_check_grace_period_seconds: int = 600
    deregistration_delay_seconds: int = 300
    deployment_minimum_healthy_percent: int = 100
    deployment_maximum_percent: int = 200
    one_task_per_instance: bool = False
    stop_timeout_seconds: int = 120
    environment: Mapping[str, str] = field(default_factory=dict)
    secrets: Mapping[str, str] = field(default_factory=dict)
    log_retention_days: int = 30
    service_depends_on: Sequence[pulumi.Resource] = ()


# --------------------------------------------------------------------------------------------
# validation (pure)
# --------------------------------------------------------------------------------------------

# CloudWatch Logs accepts only these retention values.
LOG_RETENTION_DAYS = frozenset(
    {1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557,
     2922, 3288, 3653}
)  # fmt: skip


def _int(where: str, name: str, value: object, lo: int, hi: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ServiceArgsError(f"{where}: {name} must be an integer, got {value!r}")
    if value < lo or (hi is not None and value > hi):
        bound = f"{lo}-{hi}" if hi is not None else f">= {lo}"
        raise ServiceArgsError(f"{where}: {name} {value} outside {bound}")
    return value


def validate_common(where: str, args: ServiceArgs, managed_env: Sequence[str]) -> None:
    """Checks every load-balanced service shares (ModelService and FargateReranker), on the
    arguments they share; `managed_env` names the variables the service sets itself."""
    service, image, secrets = args.service, args.image, args.secrets
    min_count, max_count, desired_count = args.min_count, args.max_count, args.desired_count
    if not isinstance(service, str) or not SERVICE_NAME.match(service):
        raise ServiceArgsError(
            f"{where}: service {service!r} must be 2-21 lowercase letters, digits and '-'"
        )
    _int(where, "priority", args.priority, 1, LISTENER_PRIORITY_MAX)
    # An Output is the stack's own build (images.build): a digest reference in the stack's ECR
    # repository, checked when the execution role's pull statement is derived from it.
    if not isinstance(image, pulumi.Output):
        if not isinstance(image, str) or not image.strip() or any(c.isspace() for c in image):
            raise ServiceArgsError(f"{where}: image {image!r} must be a non-empty image reference")
        try:
            iam.ecr_repository_arn(image)
        except iam.PolicyArgumentError as exc:
            raise ServiceArgsError(f"{where}: {exc}") from None
    _int(where, "min_count", min_count, 0)
    _int(where, "max_count", max_count, 1)
    _int(where, "desired_count", desired_count, 0)
    if not min_count <= desired_count <= max_count:
        raise ServiceArgsError(
            f"{where}: need min_count <= desired_count <= max_count, got {min_count} <= "
            f"{desired_count} <= {max_count}"
        )
    delay = args.deregistration_delay_seconds
    _int(where, "deregistration_delay_seconds", delay, 0, TARGET_GROUP_DEREGISTRATION_MAX)
    grace = args.health_check_grace_period_seconds
    _int(where, "health_check_grace_period_seconds", grace, 0, ECS_GRACE_PERIOD_MAX)
    low = args.deployment_minimum_healthy_percent
    _int(where, "deployment_minimum_healthy_percent", low, 0, 100)
    high = _int(where, "deployment_maximum_percent", args.deployment_maximum_percent, 100, 200)
    check_deploy_progress(where, low, high, min_count, max_count, desired_count)
    if args.log_retention_days not in LOG_RETENTION_DAYS:
        raise ServiceArgsError(
            f"{where}: log_retention_days {args.log_retention_days} is not a CloudWatch retention "
            f"value ({', '.join(map(str, sorted(LOG_RETENTION_DAYS)))})"
        )
    names = set()
    for kind, mapping in (("environment", args.environment), ("secrets", secrets)):
        for name in mapping:
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
                raise ServiceArgsError(f"{where}: {kind} name {name!r} is not a variable name")
            if name in managed_env:
                raise ServiceArgsError(
                    f"{where}: {kind} sets {name}, which the service already controls"
                )
            if name in names:
                raise ServiceArgsError(f"{where}: {name} is set in both environment and secrets")
            names.add(name)
    for name, arn in secrets.items():
        try:
            iam.secret_policy_arn(arn)
        except iam.PolicyArgumentError as exc:
            raise ServiceArgsError(f"{where}: secrets.{name}: {exc}") from None


def check_deploy_progress(
    where: str, minimum_healthy: int, maximum: int, min_count: int, max_count: int, desired: int
) -> None:
    """A rolling deploy must be able to start a new task or stop an old one at every task count
    autoscaling may reach: ECS keeps ceil(n × min%) running and runs at most floor(n × max%)."""
    for n in sorted({desired, *range(max(min_count, 1), max_count + 1)} - {0}):
        keep = math.ceil(n * minimum_healthy / 100)
        peak = math.floor(n * maximum / 100)
        if peak <= keep:
            raise ServiceArgsError(
                f"{where}: with {n} task(s), deployment_minimum_healthy_percent "
                f"{minimum_healthy} keeps {keep} running and deployment_maximum_percent "
                f"{maximum} allows {peak}: a deploy could never replace a task (lower the "
                "minimum or raise the maximum)"
            )


def validate_scaling(where: str, target: float, scale_out: int, scale_in: int) -> None:
    """Target-tracking settings: positive target, cooldowns 0-86400 s, scale-out ≤ scale-in."""
    if isinstance(target, bool) or not isinstance(target, (int, float)) or not target > 0:
        raise ServiceArgsError(f"{where}: scaling target {target!r} must be a positive number")
    _int(where, "scale_out_cooldown", scale_out, 0, 86_400)
    _int(where, "scale_in_cooldown", scale_in, 0, 86_400)
    if scale_out > scale_in:
        raise ServiceArgsError(
            f"{where}: scale_out_cooldown {scale_out} s exceeds scale_in_cooldown {scale_in} s; "
            "scale out fast (a late task costs latency), scale in slow (a warm model is "
            "expensive to reload)"
        )


def resolve_neuron_devices(where: str, launch: NeuronLaunch, given: Sequence[str]) -> list[str]:
    """The device paths a Neuron task maps: `given`, checked, or `/dev/neuron0..N-1`."""
    wanted = launch.num_devices or 0
    if not given:
        return [f"/dev/neuron{i}" for i in range(wanted)]
    paths = list(given)
    for path in paths:
        if not NEURON_DEVICE.match(path):
            raise ServiceArgsError(f"{where}: neuron device {path!r} is not /dev/neuronN")
    if len(set(paths)) != len(paths):
        raise ServiceArgsError(f"{where}: neuron_devices {paths} repeats a device")
    if len(paths) != wanted:
        raise ServiceArgsError(
            f"{where}: tp degree {launch.tp_degree} needs {wanted} Neuron device(s) "
            f"({catalog.NEURON_CORES_PER_DEVICE} NeuronCores each), neuron_devices gives "
            f"{len(paths)}"
        )
    return paths


def validate_model_service(where: str, args: ModelServiceArgs) -> None:
    """All plain-value checks of `ModelServiceArgs`; raises `ServiceArgsError`."""
    launch = args.launch
    if not isinstance(launch, (VllmLaunch, NeuronLaunch)):
        raise ServiceArgsError(f"{where}: launch must be a VllmLaunch or NeuronLaunch")
    managed = [e["name"] for e in engines.container_environment(launch)]
    validate_common(where, args, managed)
    validate_scaling(
        where, args.target_requests_per_target, args.scale_out_cooldown, args.scale_in_cooldown
    )
    # EC2 task-level limits: 128 CPU units - 192 vCPU; memory at least 6 MiB per container.
    _int(where, "task_cpu", args.task_cpu, 128, 196_608)
    _int(where, "task_memory_mib", args.task_memory_mib, 128)
    _int(where, "shm_size_mib", args.shm_size_mib, 0)
    if args.shm_size_mib >= args.task_memory_mib:
        raise ServiceArgsError(
            f"{where}: shm_size_mib {args.shm_size_mib} must be below task_memory_mib "
            f"{args.task_memory_mib} (/dev/shm is counted against the task's memory)"
        )
    # The 120 s cap is Fargate's; on EC2 the agent waits as long as asked. Streams mostly drain
    # before SIGTERM anyway (ECS waits out the target group's deregistration delay first).
    _int(where, "stop_timeout_seconds", args.stop_timeout_seconds, 2, 3600)
    _int(where, "gpu_count", args.gpu_count, 0)
    if isinstance(launch, VllmLaunch):
        if args.gpu_count != launch.tensor_parallel_size:
            raise ServiceArgsError(
                f"{where}: gpu_count {args.gpu_count} must equal the tensor parallel size "
                f"{launch.tensor_parallel_size} (vLLM shards the model over exactly that many "
                "GPUs, and ECS must reserve them)"
            )
        if args.neuron_devices:
            raise ServiceArgsError(f"{where}: neuron_devices only apply to a NeuronLaunch")
    else:
        if args.gpu_count:
            raise ServiceArgsError(
                f"{where}: gpu_count {args.gpu_count} given for a Neuron model; Neuron "
                "devices are mapped through neuron_devices"
            )
        resolve_neuron_devices(where, launch, args.neuron_devices)
        if not args.one_task_per_instance:
            raise ServiceArgsError(
                f"{where}: a Neuron service needs one_task_per_instance=True: devices are not "
                "an ECS resource, so ECS would place a second task on the same devices"
            )
    if not args.weights_bucket:
        raise ServiceArgsError(f"{where}: weights_bucket is required")
    try:
        iam.s3_read_policy(args.weights_bucket, args.weights_prefix)
    except iam.PolicyArgumentError as exc:
        raise ServiceArgsError(f"{where}: {exc}") from None
    source = launch.weights_uri if isinstance(launch, VllmLaunch) else launch.artifact_uri
    bucket, prefix = iam.split_s3_uri(source)
    wanted = args.weights_prefix.strip("/")
    if bucket != args.weights_bucket or not (
        wanted == "" or prefix == wanted or prefix.startswith(wanted + "/")
    ):
        raise ServiceArgsError(
            f"{where}: the engine reads {source} but the task role may only read "
            f"s3://{args.weights_bucket}/{wanted}"
        )


# --------------------------------------------------------------------------------------------
# container definition (pure)
# --------------------------------------------------------------------------------------------


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
    nofile limit. Callers add command, secrets, devices and `linuxParameters`."""
    return {
        "name": name,
        "image": image,
        "essential": True,
        "environment": environment,
        "portMappings": port_mappings,
        "logConfiguration": log_configuration(log_group_name, region, stream_prefix),
        "stopTimeout": stop_timeout_seconds,
        "ulimits": [{"name": "nofile", "softLimit": NOFILE_LIMIT, "hardLimit": NOFILE_LIMIT}],
    }


def model_container_definitions(
    *,
    image: str,
    launch: VllmLaunch | NeuronLaunch,
    log_group_name: str,
    region: str,
    stream_prefix: str,
    gpu_count: int = 0,
    neuron_devices: Sequence[str] = (),
    shm_size_mib: int = 0,
    stop_timeout_seconds: int = 120,
    environment: Mapping[str, str] | None = None,
    secrets: Mapping[str, str] | None = None,
) -> list[dict[str, Any]]:
    """The task's container definitions (a one-item list) for an EC2 model server.

    Defaults: no GPU, no Neuron devices, Docker's /dev/shm, 120 s stop timeout, no extra
    environment or secrets. There is deliberately no container `healthCheck`: the target
    group's `/health` check decides, and a second check would restart a task the ALB still
    drains.
    """
    container = serving_container(
        name=CONTAINER_NAME,
        image=image,
        environment=environment_list(
            engines.container_environment(launch), dict(environment or {})
        ),
        port_mappings=engines.port_mappings(launch),
        log_group_name=log_group_name,
        region=region,
        stream_prefix=stream_prefix,
        stop_timeout_seconds=stop_timeout_seconds,
    )
    command = engines.container_command(launch)
    if command:
        container["command"] = command
    if secrets:
        container["secrets"] = secrets_list(secrets)
    # An init process reaps the engine's worker processes (vLLM spawns one per GPU, the Neuron
    # entrypoint runs engine + proxy) and forwards SIGTERM so draining starts on stop.
    linux: dict[str, Any] = {"initProcessEnabled": True}
    if gpu_count:
        container["resourceRequirements"] = [{"type": "GPU", "value": str(gpu_count)}]
        # NCCL and CUDA IPC pin host memory; a capped memlock makes NCCL fail or fall back.
        container["ulimits"].append({"name": "memlock", "softLimit": -1, "hardLimit": -1})
    if shm_size_mib:
        linux["sharedMemorySize"] = shm_size_mib
    if neuron_devices:
        linux["devices"] = [
            {"hostPath": path, "containerPath": path, "permissions": ["read", "write"]}
            for path in neuron_devices
        ]
    container["linuxParameters"] = linux
    return [container]


# --------------------------------------------------------------------------------------------
# the component
# --------------------------------------------------------------------------------------------


class ModelService(LoadBalancedService):
    """One model behind the endpoint. Attributes: `log_group`, `execution_role`, `task_role`,
    `task_definition`, `security_group`, `target_group`, `listener_rules`, `service`,
    `scaling_target`, `scaling_policy`, `container_definitions` (Output of the JSON string)."""

    def __init__(
        self, name: str, args: ModelServiceArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        where = f"ModelService {args.service!r}"
        validate_model_service(where, args)
        super().__init__(TOKEN, name, None, opts)
        launch = args.launch
        devices = (
            resolve_neuron_devices(where, launch, args.neuron_devices)
            if isinstance(launch, NeuronLaunch)
            else []
        )
        group_name = log_group_name(args.service)
        self._create_service(
            name,
            args,
            bucket=args.weights_bucket,
            prefix=args.weights_prefix,
            task=TaskSpec(
                container_definitions=lambda region, image: model_container_definitions(
                    image=image,
                    launch=launch,
                    log_group_name=group_name,
                    region=region,
                    stream_prefix=args.service,
                    gpu_count=args.gpu_count,
                    neuron_devices=devices,
                    shm_size_mib=args.shm_size_mib,
                    stop_timeout_seconds=args.stop_timeout_seconds,
                    environment=args.environment,
                    secrets=args.secrets,
                ),
                compatibility="EC2",
                cpu=args.task_cpu,
                memory_mib=args.task_memory_mib,
                container_name=CONTAINER_NAME,
                port=launch.port,
                health_path=engines.HEALTH_PATH,
            ),
            placement=PlacementSpec(
                capacity_provider=args.capacity_provider_name,
                placement_constraints=(
                    [aws.ecs.ServicePlacementConstraintArgs(type="distinctInstance")]
                    if args.one_task_per_instance
                    else None
                ),
                # Spread over AZs first (an AZ outage keeps capacity), then pack each instance's
                # memory so scarce accelerator instances are filled before new ones start.
                ordered_placement_strategies=[
                    aws.ecs.ServiceOrderedPlacementStrategyArgs(
                        type="spread", field="attribute:ecs.availability-zone"
                    ),
                    aws.ecs.ServiceOrderedPlacementStrategyArgs(type="binpack", field="memory"),
                ],
            ),
            scaling_metric=TARGET_TRACKING_METRIC,
            scaling_target=args.target_requests_per_target,
        )
