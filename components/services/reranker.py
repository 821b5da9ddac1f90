"""FargateReranker: a CPU cross-encoder re-ranker on Fargate behind the authenticated Endpoint.

Re-ranking with a MiniLM-class cross-encoder is CPU work that fits Fargate (no instance to keep
warm, ARM64 cheaper), so unlike the model services it needs no capacity pool. Creates:
- a log group with retention, an execution role (image pull, this log group, exactly the
  container's secrets) and a task role that can only read the model prefix in S3;
- a FARGATE task definition (awsvpc, ARM64 by default, cpu/memory on the Fargate grid) whose
  container follows the image's contract (`images/reranker/contract.py`: port, health path,
  environment names, stop timeout within Fargate's 120 s cap), with the nofile ulimit raised
  and nothing Fargate rejects (no GPU, devices, privileged mode or placement constraints);
- a task security group (ALB only in, HTTPS only out: ECR, S3 and logs through the VPC
  endpoints or NAT), an ip target group on `/health`, the endpoint's listener rules;
- the service on the FARGATE capacity provider in private subnets without a public IP, with a
  rolling-back circuit breaker, created after the rules attach its target group to the ALB;
- target tracking on ALB requests per target or on average CPU.

Sizes and counts are plan-derived; this module re-checks them (grid, contract minimums) before
creating anything.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import pulumi
import pulumi_aws as aws
from pulumi import Input

from components import iam, sizing
from components.services.base import (
    TARGET_TRACKING_METRIC,
    LoadBalancedService,
    PlacementSpec,
    Router,
    TaskSpec,
    log_group_name,
)
from components.services.model import (
    ServiceArgsError,
    environment_list,
    secrets_list,
    serving_container,
    validate_common,
    validate_scaling,
)
from images.reranker import contract

TOKEN = "ecs-inference:serving:FargateReranker"
CONTAINER_NAME = "reranker"
CPU_METRIC = "ECSServiceAverageCPUUtilization"
FARGATE_STOP_TIMEOUT_MAX = 120
"""Fargate's cap on a container's stopTimeout (SIGTERM to SIGKILL)."""
CPU_ARCHITECTURES = ("ARM64", "X86_64")
KEEPALIVE_MARGIN_SECONDS = 5
"""The service keeps idle connections this much longer than the ALB does (else 502s)."""

# Variables the component sets from its own arguments; `environment` may not override them.
_MANAGED_ENV = (contract.ENV_PORT, contract.ENV_MODEL_S3_URI, contract.ENV_KEEP_ALIVE_SECONDS)


@dataclass(frozen=True)
class FargateRerankerArgs:
    """Inputs of `FargateReranker`; sizes and counts are plan-derived.

    Required: `cluster_arn`, `vpc_id`, `subnet_ids` (private), `alb_security_group_id`,
    `load_balancer_arn_suffix`, `router` (has `.route(...)`), `service`, `priority` (listener
    rule priority 1-50000), `image`, `model_bucket`, `model_prefix` (the exported ONNX model and
    tokenizer), `cpu` (CPU units) and `memory_mib`, a pair on the Fargate grid.

    Optional (defaults):
    - `cpu_architecture` "ARM64" ("X86_64" needs an amd64 image); `platform_version` "LATEST";
    - `desired_count` 2, `min_count` 1, `max_count` 4;
    - `scaling_metric` "requestCount" (ALBRequestCountPerTarget, `scaling_target` requests per
      task per minute) or "cpu" (ECSServiceAverageCPUUtilization, `scaling_target` percent);
      `scaling_target` 100.0; `scale_out_cooldown` 60, `scale_in_cooldown` 300 seconds;
    - `health_check_grace_period_seconds` 120 (≥ the image's startup minimum of 60 s: S3 staging
      and ONNX session creation; 120 leaves room for the image pull on fresh Fargate capacity);
    - `deregistration_delay_seconds` 30 — ≥ the longest re-rank request;
    - `deployment_minimum_healthy_percent` 100, `deployment_maximum_percent` 200 (Fargate has
      no scarce capacity, so a full surge is cheap);
    - `stop_timeout_seconds` the contract's 30 (2-120, above the service's drain timeout);
    - `alb_idle_timeout_seconds` 60 — the endpoint's idle timeout; the service's keep-alive is
      set above it;
    - `environment` {} — overrides of the contract's variables (unknown names are rejected);
    - `secrets` {} — env name -> Secrets Manager ARN; `log_retention_days` 30;
    - `service_depends_on` () — resources the ECS service must wait for: the cluster's capacity
      provider association, which must list FARGATE.
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
    model_bucket: str
    model_prefix: str
    cpu: int
    memory_mib: int
    cpu_architecture: str = contract.CPU_ARCHITECTURE
    platform_version: str = "LATEST"
    desired_count: int = 2
    min_count: int = 1
    max_count: int = 4
    scaling_metric: Literal["requestCount", "cpu"] = "requestCount"
    scaling_target: float = 100.0
    scale_out_cooldown: int = 60
    scale_in_cooldown: int = 300
    health_check_grace_period_seconds: int = 120
    deregistration_delay_seconds: int = 30
    deployment_minimum_healthy_percent: int = 100
    deployment_maximum_percent: int = 200
    stop_timeout_seconds: int = contract.STOP_TIMEOUT_SECONDS
    alb_idle_timeout_seconds: int = 60
    environment: Mapping[str, str] = field(default_factory=dict)
    secrets: Mapping[str, str] = field(default_factory=dict)
    log_retention_days: int = 30
    service_depends_on: Sequence[pulumi.Resource] = ()


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


def validate_reranker(where: str, args: FargateRerankerArgs) -> sizing.FargateSize:
    """All plain-value checks of `FargateRerankerArgs`; returns the validated Fargate size."""
    validate_common(where, args, _MANAGED_ENV)
    validate_scaling(where, args.scaling_target, args.scale_out_cooldown, args.scale_in_cooldown)
    if args.scaling_metric not in ("requestCount", "cpu"):
        raise ServiceArgsError(
            f"{where}: scaling_metric {args.scaling_metric!r} must be 'requestCount' or 'cpu'"
        )
    if args.scaling_metric == "cpu" and not 1 <= args.scaling_target <= 100:
        raise ServiceArgsError(
            f"{where}: scaling_target {args.scaling_target} for the cpu metric is a percentage "
            "(1-100)"
        )
    try:
        size = sizing.fargate_size(args.cpu, args.memory_mib)
    except sizing.SizingError as exc:
        raise ServiceArgsError(f"{where}: {exc}") from None
    if args.memory_mib < contract.MIN_MEMORY_MIB:
        raise ServiceArgsError(
            f"{where}: memory_mib {args.memory_mib} is below the re-ranker's floor of "
            f"{contract.MIN_MEMORY_MIB} MiB (resident model, ONNX Runtime arenas, web stack)"
        )
    if args.cpu_architecture not in CPU_ARCHITECTURES:
        raise ServiceArgsError(
            f"{where}: cpu_architecture {args.cpu_architecture!r} not one of {CPU_ARCHITECTURES}"
        )
    if size.needs_platform_1_4 and not _platform_at_least_1_4(args.platform_version):
        raise ServiceArgsError(
            f"{where}: cpu {args.cpu} needs Fargate platform 1.4.0 or later, got "
            f"{args.platform_version!r}"
        )
    if args.health_check_grace_period_seconds < contract.STARTUP_GRACE_SECONDS:
        raise ServiceArgsError(
            f"{where}: health_check_grace_period_seconds {args.health_check_grace_period_seconds}"
            f" is below the re-ranker's startup time of {contract.STARTUP_GRACE_SECONDS} s "
            "(S3 staging + model load); ECS would stop tasks that are still loading"
        )
    if not 1 <= args.alb_idle_timeout_seconds <= 4000:
        raise ServiceArgsError(
            f"{where}: alb_idle_timeout_seconds {args.alb_idle_timeout_seconds} outside 1-4000"
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
    if not (
        isinstance(args.stop_timeout_seconds, int)
        and 2 <= args.stop_timeout_seconds <= FARGATE_STOP_TIMEOUT_MAX
    ):
        raise ServiceArgsError(
            f"{where}: stop_timeout_seconds {args.stop_timeout_seconds!r} outside Fargate's "
            f"2-{FARGATE_STOP_TIMEOUT_MAX}"
        )
    if not drain.isdigit() or int(drain) >= args.stop_timeout_seconds:
        raise ServiceArgsError(
            f"{where}: {contract.ENV_DRAIN_TIMEOUT_SECONDS} {drain!r} must be a whole number of "
            f"seconds below stop_timeout_seconds {args.stop_timeout_seconds} (ECS kills the "
            "container when the stop timeout ends, cutting requests still draining)"
        )
    return size


def reranker_container_definitions(
    *,
    image: str,
    environment: Sequence[Mapping[str, str]],
    log_group_name: str,
    region: str,
    stream_prefix: str,
    stop_timeout_seconds: int = contract.STOP_TIMEOUT_SECONDS,
    secrets: Mapping[str, str] | None = None,
) -> list[dict[str, Any]]:
    """The Fargate task's container definitions (one container), per the image contract.

    Defaults: the contract's stop timeout, no secrets. Only parameters Fargate accepts: no
    GPU, devices, privileged mode, shared memory size or host volumes; no container health
    check (the target group's `/health` check decides).
    """
    # The nofile limit is Fargate's default already; stated so a platform change cannot lower
    # it under a service that holds one descriptor per client connection.
    container = serving_container(
        name=CONTAINER_NAME,
        image=image,
        environment=environment_list(environment, {}),
        port_mappings=[{"containerPort": contract.PORT, "protocol": "tcp", "name": "http"}],
        log_group_name=log_group_name,
        region=region,
        stream_prefix=stream_prefix,
        stop_timeout_seconds=stop_timeout_seconds,
    )
    # tini as PID 1 forwards SIGTERM to uvicorn so it drains instead of being killed.
    container["linuxParameters"] = {"initProcessEnabled": True}
    if secrets:
        container["secrets"] = secrets_list(secrets)
    return [container]


class FargateReranker(LoadBalancedService):
    """One re-ranker service on Fargate. Attributes: `size` (the validated `FargateSize`),
    `log_group`, `execution_role`, `task_role`, `task_definition`, `security_group`,
    `target_group`, `listener_rules`, `service`, `scaling_target`, `scaling_policy`,
    `container_definitions` (Output of the JSON string)."""

    def __init__(
        self, name: str, args: FargateRerankerArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        where = f"FargateReranker {args.service!r}"
        self.size = validate_reranker(where, args)
        super().__init__(TOKEN, name, None, opts)
        group_name = log_group_name(args.service)
        environment = reranker_environment(
            service=args.service,
            bucket=args.model_bucket,
            prefix=args.model_prefix,
            alb_idle_timeout_seconds=args.alb_idle_timeout_seconds,
            overrides=args.environment,
        )
        self._create_service(
            name,
            args,
            bucket=args.model_bucket,
            prefix=args.model_prefix,
            task=TaskSpec(
                container_definitions=lambda region, image: reranker_container_definitions(
                    image=image,
                    environment=environment,
                    log_group_name=group_name,
                    region=region,
                    stream_prefix=args.service,
                    stop_timeout_seconds=args.stop_timeout_seconds,
                    secrets=args.secrets,
                ),
                compatibility="FARGATE",
                cpu=self.size.cpu,
                memory_mib=self.size.memory_mib,
                runtime_platform=aws.ecs.TaskDefinitionRuntimePlatformArgs(
                    cpu_architecture=args.cpu_architecture, operating_system_family="LINUX"
                ),
                container_name=CONTAINER_NAME,
                port=contract.PORT,
                health_path=contract.HEALTH_PATH,
                # Re-rank requests take milliseconds: detect a dead task faster than a model
                # server.
                health_check_interval_seconds=10,
            ),
            # The FARGATE capacity provider (not launch_type) so FARGATE_SPOT can be mixed in
            # later without replacing the service; the cluster must have it associated.
            placement=PlacementSpec(
                capacity_provider="FARGATE", platform_version=args.platform_version
            ),
            scaling_metric=CPU_METRIC if args.scaling_metric == "cpu" else TARGET_TRACKING_METRIC,
            scaling_target=args.scaling_target,
        )
