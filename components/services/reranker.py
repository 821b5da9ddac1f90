"""FargateReranker: a CPU cross-encoder re-ranker on Fargate behind the authenticated Endpoint.

Re-ranking with a MiniLM-class cross-encoder is CPU work that fits Fargate (no instance to keep
warm, ARM64 cheaper), so unlike the model services it needs no capacity pool. Creates:
- a log group with retention, an execution role (image pull, this log group, exactly the
  container's secrets) and a task role that can only read the model prefix in S3;
- a FARGATE task definition (awsvpc, ARM64 by default, cpu/memory on the Fargate grid) whose
  container follows the image's contract (`contracts/reranker.py`: port, health path,
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
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_aws as aws
from pulumi import Input

from ecs_inference.contracts import reranker as contract
from ecs_inference.services.base import (
    TARGET_TRACKING_METRIC,
    LoadBalancedService,
    PlacementSpec,
    ServiceWiring,
    TaskSpec,
    environment_list,
    log_group_name,
    metrics_sidecar_fields,
    secrets_list,
    serving_container,
)
from ecs_inference.specs.service import RerankerSpec, reranker_environment, validate_reranker

TOKEN = "ecs-inference:serving:FargateReranker"
CONTAINER_NAME = "reranker"
CPU_METRIC = "ECSServiceAverageCPUUtilization"


@dataclass(frozen=True, kw_only=True)
class FargateRerankerArgs(RerankerSpec, ServiceWiring):
    """Inputs of `FargateReranker`: its spec (`components.specs.service.RerankerSpec`, built by
    the plan) plus the wiring (`ServiceWiring`, the image)."""

    image: Input[str]
    """Image reference, or the digest reference of the stack's own build."""
    metrics_image: Input[str] | None = None
    """Metrics sidecar image (reference or the stack's build); needed with `metrics_sidecar`."""


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
                **metrics_sidecar_fields(
                    args,
                    enabled=args.metrics_sidecar,
                    image=args.metrics_image,
                    kind="reranker",
                    port=contract.PORT,
                    engine_container=CONTAINER_NAME,
                    log_group=group_name,
                ),
            ),
            # The FARGATE capacity provider (not launch_type) so FARGATE_SPOT can be mixed in
            # later without replacing the service; the cluster must have it associated.
            placement=PlacementSpec(
                capacity_provider="FARGATE", platform_version=args.platform_version
            ),
            scaling_metric=CPU_METRIC if args.scaling_metric == "cpu" else TARGET_TRACKING_METRIC,
            scaling_target=args.scaling_target,
        )
