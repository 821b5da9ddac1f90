"""FargateReranker: a CPU cross-encoder re-ranker on Fargate behind the authenticated Endpoint.

Re-ranking with a MiniLM-class cross-encoder is CPU work that fits Fargate (no instance to keep
warm, ARM64 cheaper), so unlike the model services it needs no capacity pool. On top of
`FargateService` it adds its container, per the image's contract (`contracts/reranker.py`:
port, health path, environment names, stop timeout within Fargate's 120 s cap), with nothing
Fargate rejects (no GPU, devices, privileged mode or placement constraints); a task role that
can only read the model prefix in S3; the metrics sidecar when asked; and target tracking on
ALB requests per target or on average CPU.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
from pulumi import Input

from ecs_inference import ledger
from ecs_inference.contracts import reranker as contract
from ecs_inference.services.base import (
    ALB_REQUESTS_METRIC,
    CPU_METRIC,
    Balancing,
    ServiceWiring,
    metrics_sidecar,
    weights_task_role,
)
from ecs_inference.services.containers import container_definition
from ecs_inference.services.fargate import FargateService, fargate_placement
from ecs_inference.specs.service import RerankerSpec, reranker_environment

TOKEN = "ecs-inference:serving:FargateReranker"
CONTAINER_NAME = "reranker"


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
    return [
        container_definition(
            name=CONTAINER_NAME,
            image=image,
            environment=environment,
            port_mappings=[{"containerPort": contract.PORT, "protocol": "tcp", "name": "http"}],
            log_group_name=log_group_name,
            region=region,
            stream_prefix=stream_prefix,
            stop_timeout_seconds=stop_timeout_seconds,
            secrets=secrets,
            # tini as PID 1 forwards SIGTERM to uvicorn so it drains instead of being killed.
            linux_parameters={"initProcessEnabled": True},
        )
    ]


class FargateReranker(FargateService):
    """One re-ranker service on Fargate; outputs as `EcsService`."""

    def __init__(
        self, name: str, args: FargateRerankerArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(TOKEN, name, opts)
        ledger.record_fargate(args.service, args, "reranker" if args.metrics_sidecar else None)
        group = self._logs(args.service, args.log_retention_days)
        environment = reranker_environment(
            service=args.service,
            bucket=args.model_bucket,
            prefix=args.model_prefix,
            alb_idle_timeout_seconds=args.alb_idle_timeout_seconds,
            overrides=args.environment,
        )
        sidecar = metrics_sidecar(
            args,
            kind="reranker",
            port=contract.PORT,
            engine_container=CONTAINER_NAME,
            log_group=group,
        )
        self._containers(
            lambda a: [
                *reranker_container_definitions(
                    image=a[1],
                    environment=environment,
                    log_group_name=group,
                    region=a[0],
                    stream_prefix=args.service,
                    stop_timeout_seconds=args.stop_timeout_seconds,
                    secrets=args.secrets,
                ),
                *sidecar(a[0], a[2]),
            ],
            args.image,
            args.metrics_image or "",
            service_connect=args.service_connect_namespace is not None,
            secret_arns=args.stack_secret_arns,
        )
        self._fargate_task(
            service=args.service,
            cpu=args.cpu,
            memory_mib=args.memory_mib,
            cpu_architecture=args.cpu_architecture,
            task_role=weights_task_role(
                self._ctx,
                bucket=args.model_bucket,
                prefix=args.model_prefix,
                kms_key_arn=args.weights_kms_key_arn,
            ),
            secrets_kms_key_arns=args.secrets_kms_key_arns,
            exec_logging=args.execute_command_logging if args.execute_command else None,
        )
        self._serve(
            args,
            args,
            # Re-rank requests take milliseconds: detect a dead task faster than a model server.
            balancing=Balancing(CONTAINER_NAME, contract.PORT, contract.HEALTH_PATH, 10),
            placement=fargate_placement(args.platform_version),
            scaling_metric=CPU_METRIC if args.scaling_metric == "cpu" else ALB_REQUESTS_METRIC,
            scaling_target=args.scaling_target,
        )
