"""Service specs: one model or re-ranker service as plain values, and their checks.

`ModelServiceSpec` and `RerankerSpec` are built by the plan; `validate_model_service` and
`validate_reranker` raise `ServiceArgsError` naming the argument and values for anything ECS, ELB
or the image contract would reject. The components (`components.services`) add only the wiring
(cluster, VPC, subnets, load balancer, router, the built image's digest reference).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ecs_inference import iam, sizing
from ecs_inference.contracts import reranker as contract
from ecs_inference.contracts.aws_limits import (
    CLOUDWATCH_LOG_RETENTION_DAYS,
    ECS_GRACE_PERIOD_MAX,
    LISTENER_RULE_PRIORITY_MAX,
    SCALING_COOLDOWN_MAX_SECONDS,
    TARGET_GROUP_DEREGISTRATION_DELAY_MAX,
)
from ecs_inference.engines import Launch
from ecs_inference.engines.base import TaskArgsError
from ecs_inference.specs import secrets as stack_secrets
from ecs_inference.specs.names import NAME_PATTERN
from ecs_inference.specs.rollout import ROLLING, RolloutSpec


class ServiceArgsError(ValueError):
    """Plain service arguments are inconsistent; the message names the argument and values."""


CpuArchitecture = Literal["ARM64", "X86_64"]
CPU_ARCHITECTURES: tuple[CpuArchitecture, ...] = ("ARM64", "X86_64")
KEEPALIVE_MARGIN_SECONDS = 5
"""The service keeps idle connections this much longer than the ALB does (else 502s)."""

# Variables the component sets from its own arguments; `environment` may not override them.
RERANKER_MANAGED_ENV = (
    contract.ENV_PORT,
    contract.ENV_MODEL_S3_URI,
    contract.ENV_KEEP_ALIVE_SECONDS,
)


@dataclass(frozen=True, kw_only=True)
class ServiceSpec:
    """What every load-balanced service (model or re-ranker) is made of; the subclasses add their
    own fields and defaults."""

    service: str
    """Short name: the URL path `/<service>/`, log group and task family."""
    priority: int
    """First of the service's two listener rule priorities (1-50000, unique on the listener)."""
    image: str | None
    """Image reference; None: the stack's own build of the service's image (images.build)."""
    desired_count: int = 1
    """Tasks at deploy time."""
    min_count: int = 1
    """Autoscaling minimum."""
    max_count: int = 2
    """Autoscaling maximum."""
    scale_out_cooldown: int = 60
    """Seconds between scale-outs (at most scale_in_cooldown: scale out fast, in slow)."""
    scale_in_cooldown: int = 300
    """Seconds between scale-ins."""
    health_check_grace_period_seconds: int = 600
    """Time ECS ignores failing health checks after a task starts (image pull + load)."""
    deregistration_delay_seconds: int = 300
    """At least the longest request (0-3600)."""
    max_request_seconds: int | None = None
    """The longest request (a whole stream) the deregistration delay was derived from, tagged on
    the target group for the policy pack; None: not stated (untagged)."""
    deployment_minimum_healthy_percent: int = 100
    """ECS rolling deploy lower bound."""
    deployment_maximum_percent: int = 200
    """ECS rolling deploy upper bound."""
    stop_timeout_seconds: int = 120
    """SIGTERM-to-SIGKILL for in-flight requests."""
    environment: Mapping[str, str] = field(default_factory=dict)
    """Extra plain variables (may not override the ones the service sets itself)."""
    secrets: Mapping[str, str] = field(default_factory=dict)
    """Env name -> Secrets Manager ARN (optionally `:json-key::`), injected via valueFrom."""
    log_retention_days: int = 30
    """CloudWatch Logs retention (one of the values CloudWatch accepts)."""
    metrics_sidecar: bool = False
    """Run the metrics sidecar (image `metrics_image`) next to the serving container."""
    metrics_image: str | None = None
    """Sidecar image; None with `metrics_sidecar`: the stack's own build."""
    weights_kms_key_arn: str | None = None
    """KMS key of the weights' SSE-KMS objects: the task role may decrypt with it (via S3)."""
    secrets_kms_key_arns: tuple[str, ...] = ()
    """Customer-managed KMS keys of `secrets`: the execution role may decrypt with them."""
    execute_command: bool = False
    """ECS Exec into the tasks (the cluster's `executeCommand`)."""
    execute_command_logging: bool = True
    """With execute_command: the task role may write the cluster's session log."""
    rollout: RolloutSpec = ROLLING
    """How a new revision replaces the old one (`components.rollouts`); default rolling."""


@dataclass(frozen=True, kw_only=True)
class ModelServiceSpec(ServiceSpec):
    """One LLM service on a GPU or Inferentia pool, run by a registered engine."""

    launch: Launch
    """How the engine starts (environment, command, port); `components.engines`."""
    weights_bucket: str | None
    """S3 bucket of the weights or compiled artifact; None when the weights are on EFS or the
    service declares none."""
    weights_prefix: str | None
    """Key prefix the task role may read."""
    adapter_prefixes: tuple[str, ...] = ()
    """Further key prefixes of `weights_bucket` the task role may read: the LoRA adapters the
    engine stages (default none)."""
    task_cpu: int
    """Task CPU units."""
    task_memory_mib: int
    """Task memory on the instance."""
    gpu_count: int = 0
    """GPUs to reserve; must equal the launch's."""
    neuron_devices: tuple[str, ...] = ()
    """Exactly the launch's Neuron devices, distinct /dev/neuronN paths; () maps 0..N-1."""
    shm_size_mib: int = 0
    """`/dev/shm` size (NCCL between tensor-parallel GPUs); 0 keeps Docker's."""
    target_requests_per_target: float = 30.0
    """Requests per task per minute the scaling policy tracks."""
    one_task_per_instance: bool = False
    """distinctInstance placement; required for Neuron (mapped device paths are fixed)."""
    efs_file_system: str | None = None
    """Weights on EFS: a `weightStores` name or an existing file system id."""
    efs_path: str | None = None
    """Weights on EFS: the model's directory (its access point's root)."""
    compatibility: Literal["EC2", "MANAGED_INSTANCES"] = "EC2"
    """What the task definition declares: EC2 on an Auto Scaling group pool, MANAGED_INSTANCES
    on a Managed Instances pool (ECS then refuses sharedMemorySize, ipcMode and the other
    parameters of `contracts.aws_limits.MANAGED_INSTANCES_INVALID_TASK_PARAMETERS`)."""
    scaling_configuration: Mapping[str, Any] | None = None
    """Target tracking on the engine's load (API-shaped TargetTrackingScalingPolicyConfiguration
    from `components.operations.scaling`); None: ALBRequestCountPerTarget at
    `target_requests_per_target`."""


@dataclass(frozen=True, kw_only=True)
class RerankerSpec(ServiceSpec):
    """One CPU cross-encoder re-ranker on Fargate (no scarce capacity: bigger defaults)."""

    model_bucket: str
    """S3 bucket of the exported ONNX model and tokenizer."""
    model_prefix: str
    """Key prefix the task role may read."""
    model: contract.EncoderModel = contract.REFERENCE_MODEL
    """The served model (family and config.json facts): its memory floor bounds memory_mib."""
    cpu: int
    """Task CPU units (a pair on the Fargate grid with memory_mib)."""
    memory_mib: int
    """Task memory."""
    cpu_architecture: CpuArchitecture = contract.CPU_ARCHITECTURE
    """ARM64 or X86_64 (X86_64 needs an amd64 image)."""
    platform_version: str = "LATEST"
    """Fargate platform version."""
    scaling_metric: Literal["requestCount", "cpu"] = "requestCount"
    """ALBRequestCountPerTarget or ECSServiceAverageCPUUtilization."""
    scaling_target: float = 100.0
    """Requests per task per minute, or CPU percent."""
    alb_idle_timeout_seconds: int = 60
    """The endpoint's idle timeout; the service's keep-alive is set above it."""
    # Fargate capacity is not scarce and the image starts in about a minute (S3 staging, ONNX
    # session), so a re-ranker runs more copies with shorter timeouts than a model.
    desired_count: int = 2
    max_count: int = 4
    health_check_grace_period_seconds: int = 120
    deregistration_delay_seconds: int = 30
    stop_timeout_seconds: int = contract.STOP_TIMEOUT_SECONDS


def _deferred(value: object) -> bool:
    """An Output (the stack's own build, known at deploy time), recognised without Pulumi."""
    return callable(getattr(value, "apply", None))


# --------------------------------------------------------------------------------------------
# validation (pure)
# --------------------------------------------------------------------------------------------

LOG_RETENTION_DAYS = CLOUDWATCH_LOG_RETENTION_DAYS


def log_retention_problem(days: int) -> str | None:
    """Why `days` is not a retention CloudWatch Logs accepts, or None (the config schema raises
    the same message at `logRetentionDays`)."""
    if days in LOG_RETENTION_DAYS:
        return None
    return (
        f"{days} is not a CloudWatch retention value "
        f"({', '.join(map(str, sorted(LOG_RETENTION_DAYS)))})"
    )


def _int(where: str, name: str, value: object, lo: int, hi: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ServiceArgsError(f"{where}: {name} must be an integer, got {value!r}")
    if value < lo or (hi is not None and value > hi):
        bound = f"{lo}-{hi}" if hi is not None else f">= {lo}"
        raise ServiceArgsError(f"{where}: {name} {value} outside {bound}")
    return value


def common_key_checks(where: str, args: ServiceSpec) -> None:
    """The rules the config schema applies to each service key (`config/services.py`): a spec
    the plan builds has passed them; a spec built by hand is checked here."""
    service, min_count, max_count = args.service, args.min_count, args.max_count
    if not isinstance(service, str) or not NAME_PATTERN.match(service):
        raise ServiceArgsError(
            f"{where}: service {service!r} must be 2-21 lowercase letters, digits and '-'"
        )
    _int(where, "min_count", min_count, 0)
    _int(where, "max_count", max_count, 1)
    _int(where, "desired_count", args.desired_count, 0)
    if not min_count <= args.desired_count <= max_count:
        raise ServiceArgsError(
            f"{where}: need min_count <= desired_count <= max_count, got {min_count} <= "
            f"{args.desired_count} <= {max_count}"
        )
    if (problem := log_retention_problem(args.log_retention_days)) is not None:
        raise ServiceArgsError(f"{where}: log_retention_days {problem}")
    for kind, mapping in (("environment", args.environment), ("secrets", args.secrets)):
        for name in mapping:
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
                raise ServiceArgsError(f"{where}: {kind} name {name!r} is not a variable name")
    for name, arn in args.secrets.items():
        if stack_secrets.is_reference(arn):
            continue  # the stack's own secret: its ARN is the one the stack creates
        try:
            iam.secret_policy_arn(arn)
        except iam.PolicyArgumentError as exc:
            raise ServiceArgsError(f"{where}: secrets.{name}: {exc}") from None


def common_decision_checks(where: str, args: ServiceSpec, managed_env: Sequence[str]) -> None:
    """What the plan decides for every service and checks here: the image it chose, the rule
    priority, the deregistration delay against the longest request, the grace period, a deploy
    that can make progress, and user variables against those the service sets itself."""
    image = args.image
    _int(where, "priority", args.priority, 1, LISTENER_RULE_PRIORITY_MAX)
    # None (a spec) or an Output (its component) is the stack's own build (images.build): a
    # digest reference in the stack's ECR repository, checked when the execution role's pull
    # statement is derived from it.
    if image is not None and not _deferred(image):
        if not isinstance(image, str) or not image.strip() or any(c.isspace() for c in image):
            raise ServiceArgsError(f"{where}: image {image!r} must be a non-empty image reference")
        try:
            iam.ecr_repository_arn(image)
        except iam.PolicyArgumentError as exc:
            raise ServiceArgsError(f"{where}: {exc}") from None
    delay = args.deregistration_delay_seconds
    _int(where, "deregistration_delay_seconds", delay, 0, TARGET_GROUP_DEREGISTRATION_DELAY_MAX)
    longest = args.max_request_seconds
    if longest is not None:
        _int(where, "max_request_seconds", longest, 1, TARGET_GROUP_DEREGISTRATION_DELAY_MAX)
        if delay < longest:
            # ECS waits out the delay before SIGTERM: a shorter one cuts the longest streams on
            # every deploy and scale-in.
            raise ServiceArgsError(
                f"{where}: deregistration_delay_seconds {delay} is shorter than "
                f"max_request_seconds {longest}; raise the delay to at least the longest request"
            )
    grace = args.health_check_grace_period_seconds
    _int(where, "health_check_grace_period_seconds", grace, 0, ECS_GRACE_PERIOD_MAX)
    low = args.deployment_minimum_healthy_percent
    _int(where, "deployment_minimum_healthy_percent", low, 0, 100)
    high = _int(where, "deployment_maximum_percent", args.deployment_maximum_percent, 100, 200)
    check_deploy_progress(where, low, high, args.min_count, args.max_count, args.desired_count)
    for kind, mapping in (("environment", args.environment), ("secrets", args.secrets)):
        for name in mapping:
            if name in managed_env:
                raise ServiceArgsError(
                    f"{where}: {kind} sets {name}, which the service already controls"
                )
    if both := sorted(set(args.environment) & set(args.secrets)):
        raise ServiceArgsError(f"{where}: {both[0]} is set in both environment and secrets")


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
    """Target-tracking settings: positive target, cooldowns within a day, scale-out ≤ scale-in."""
    if isinstance(target, bool) or not isinstance(target, (int, float)) or not target > 0:
        raise ServiceArgsError(f"{where}: scaling target {target!r} must be a positive number")
    _int(where, "scale_out_cooldown", scale_out, 0, SCALING_COOLDOWN_MAX_SECONDS)
    _int(where, "scale_in_cooldown", scale_in, 0, SCALING_COOLDOWN_MAX_SECONDS)
    if scale_out > scale_in:
        raise ServiceArgsError(
            f"{where}: scale_out_cooldown {scale_out} s exceeds scale_in_cooldown {scale_in} s; "
            "scale out fast (a late task costs latency), scale in slow (a warm model is "
            "expensive to reload)"
        )


def validate_model_service(where: str, args: ModelServiceSpec) -> None:
    """All plain-value checks of a `ModelServiceSpec` built by hand; raises `ServiceArgsError`
    (or the launch's `EngineLaunchError` / `PresetError` for its own settings)."""
    common_key_checks(where, args)
    args.launch.check_settings()
    model_service_decision_checks(where, args)


def model_service_decision_checks(where: str, args: ModelServiceSpec) -> None:
    """What the plan decides for a model service, checked: its task against its launch,
    scaling, and what every service decides (`common_decision_checks`)."""
    launch = args.launch
    common_decision_checks(where, args, launch.managed_environment())
    validate_scaling(
        where, args.target_requests_per_target, args.scale_out_cooldown, args.scale_in_cooldown
    )
    # EC2 task-level limits: 128 CPU units - 192 vCPU; memory at least 6 MiB per container.
    _int(where, "task_cpu", args.task_cpu, 128, 196_608)
    _int(where, "task_memory_mib", args.task_memory_mib, 128)
    _int(where, "shm_size_mib", args.shm_size_mib, 0)
    if args.compatibility == "MANAGED_INSTANCES" and (args.shm_size_mib or args.neuron_devices):
        raise ServiceArgsError(
            f"{where}: a MANAGED_INSTANCES task cannot set linuxParameters.sharedMemorySize or "
            "map Neuron devices (Managed Instances refuses host-level parameters); use an Auto "
            "Scaling group pool"
        )
    if args.shm_size_mib >= args.task_memory_mib:
        raise ServiceArgsError(
            f"{where}: shm_size_mib {args.shm_size_mib} must be below task_memory_mib "
            f"{args.task_memory_mib} (/dev/shm is counted against the task's memory)"
        )
    # The 120 s cap is Fargate's; on EC2 the agent waits as long as asked. Streams mostly drain
    # before SIGTERM anyway (ECS waits out the target group's deregistration delay first).
    _int(where, "stop_timeout_seconds", args.stop_timeout_seconds, 2, 3600)
    _int(where, "gpu_count", args.gpu_count, 0)
    try:
        launch.check_task(where, args)
    except TaskArgsError as exc:
        raise ServiceArgsError(str(exc)) from None


def model_uri(bucket: str, prefix: str) -> str:
    """`s3://bucket/prefix/` (trailing slash: the service stages every object under it)."""
    prefix = prefix.strip("/")
    return f"s3://{bucket}/{prefix}/" if prefix else f"s3://{bucket}/"


def reranker_environment(
    *,
    service: str,
    bucket: str,
    prefix: str,
    alb_idle_timeout_seconds: int,
    overrides: Mapping[str, str],
) -> list[dict[str, str]]:
    """The container `environment`: contract defaults, the model URI, keep-alive above the ALB
    idle timeout, the service name as model name, then `overrides` (names checked by the
    contract; the URI and keep-alive are rejected earlier as managed)."""
    managed = {
        contract.ENV_MODEL_NAME: service,
        contract.ENV_MODEL_S3_URI: model_uri(bucket, prefix),
        contract.ENV_KEEP_ALIVE_SECONDS: str(alb_idle_timeout_seconds + KEEPALIVE_MARGIN_SECONDS),
    }
    return contract.container_environment({**managed, **dict(overrides)})


def _platform_at_least_1_4(version: str) -> bool:
    if version == "LATEST":
        return True
    try:
        parts = tuple(int(p) for p in version.split("."))
    except ValueError:
        return False
    return parts >= (1, 4, 0)


def validate_reranker(where: str, args: RerankerSpec) -> sizing.FargateSize:
    """All plain-value checks of a `RerankerSpec` built by hand; returns the Fargate size."""
    common_key_checks(where, args)
    if args.scaling_metric not in ("requestCount", "cpu"):
        raise ServiceArgsError(
            f"{where}: scaling_metric {args.scaling_metric!r} must be 'requestCount' or 'cpu'"
        )
    if args.scaling_metric == "cpu" and not 1 <= args.scaling_target <= 100:
        raise ServiceArgsError(
            f"{where}: scaling_target {args.scaling_target} for the cpu metric is a percentage "
            "(1-100)"
        )
    if args.cpu_architecture not in CPU_ARCHITECTURES:
        raise ServiceArgsError(
            f"{where}: cpu_architecture {args.cpu_architecture!r} not one of {CPU_ARCHITECTURES}"
        )
    try:
        size = sizing.fargate_size(args.cpu, args.memory_mib)
    except sizing.SizingError as exc:
        raise ServiceArgsError(f"{where}: {exc}") from None
    if (problem := reranker_size_problem(size, args.platform_version, args.model)) is not None:
        raise ServiceArgsError(f"{where}: {problem}")
    if (problem := contract.family_problem(args.model.model_type)) is not None:
        raise ServiceArgsError(f"{where}: model: {problem}")
    reranker_decision_checks(where, args)
    return size


def reranker_size_problem(
    size: sizing.FargateSize,
    platform_version: str,
    model: contract.EncoderModel = contract.REFERENCE_MODEL,
) -> str | None:
    """Why a Fargate task of `size` cannot run the re-ranker serving `model` (default
    all-MiniLM-L6-v2) on `platform_version`, or None."""
    if size.memory_mib < model.memory_floor_mib:
        return (
            f"memory_mib {size.memory_mib} is below the re-ranker's floor of "
            f"{model.memory_floor_mib} MiB for {model.name or model.model_type} "
            f"({model.parameters / 1e6:.0f}M parameters: resident weights, ONNX Runtime arenas, "
            "web stack)"
        )
    if size.needs_platform_1_4 and not _platform_at_least_1_4(platform_version):
        return f"cpu {size.cpu} needs Fargate platform 1.4.0 or later, got {platform_version!r}"
    return None


def reranker_decision_checks(where: str, args: RerankerSpec) -> None:
    """What the plan decides for a re-ranker, checked: its grace period against its start, its
    environment against the image contract, the drain inside the stop timeout, and what every
    service decides (`common_decision_checks`). Its size is the plan's own choice, checked with
    `reranker_size_problem` where it is made."""
    common_decision_checks(where, args, RERANKER_MANAGED_ENV)
    validate_scaling(where, args.scaling_target, args.scale_out_cooldown, args.scale_in_cooldown)
    if args.health_check_grace_period_seconds < contract.STARTUP_GRACE_SECONDS:
        raise ServiceArgsError(
            f"{where}: health_check_grace_period_seconds {args.health_check_grace_period_seconds}"
            f" is below the re-ranker's startup time of {contract.STARTUP_GRACE_SECONDS} s "
            "(S3 staging + model load); ECS would stop tasks that are still loading"
        )
    try:
        iam.s3_read_policy(args.model_bucket, args.model_prefix)
        env = {
            e["name"]: e["value"]
            for e in reranker_environment(
                service=args.service,
                bucket=args.model_bucket,
                prefix=args.model_prefix,
                alb_idle_timeout_seconds=args.alb_idle_timeout_seconds,
                overrides=args.environment,
            )
        }
    except (iam.PolicyArgumentError, KeyError, ValueError) as exc:
        message = exc.args[0] if isinstance(exc, KeyError) else str(exc)
        raise ServiceArgsError(f"{where}: {message}") from None
    clash = sorted(set(args.secrets) & set(contract.ENV_DEFAULTS))
    if clash:
        raise ServiceArgsError(
            f"{where}: secrets {clash} are plain settings of the re-ranker (set them under "
            "environment); a name in both lists is ambiguous"
        )
    drain = env.get(contract.ENV_DRAIN_TIMEOUT_SECONDS, str(contract.DRAIN_TIMEOUT_SECONDS))
    # What Fargate accepts as a stop timeout is the plan's check of the table
    # (`ecs_inference.plan.fargate`); the drain must fit inside whatever it is.
    _int(where, "stop_timeout_seconds", args.stop_timeout_seconds, 0)
    if not drain.isdigit() or int(drain) >= args.stop_timeout_seconds:
        raise ServiceArgsError(
            f"{where}: {contract.ENV_DRAIN_TIMEOUT_SECONDS} {drain!r} must be a whole number of "
            f"seconds below stop_timeout_seconds {args.stop_timeout_seconds} (ECS kills the "
            "container when the stop timeout ends, cutting requests still draining)"
        )
