"""FargateReranker: a CPU cross-encoder re-ranker on Fargate behind the authenticated Endpoint.

Re-ranking with a MiniLM-class cross-encoder is CPU work that fits Fargate (no instance to keep
warm, ARM64 cheaper), so unlike the model services it needs no capacity pool. On top of
`FargateService` it adds its container, per the image's contract (`contracts/reranker.py`:
port, health path, environment names, stop timeout within Fargate's 120 s cap), with nothing
Fargate rejects (no GPU, devices, privileged mode or placement constraints); a task role that
can only read the model prefix in S3; the metrics sidecar when asked; and target tracking on
ALB requests per target or on average CPU.

`FargateReranker(name, input, wiring)`: `input` is the re-ranker's `RerankerConfig` (its
stack-file section), `wiring` what it takes from around it (`PlacedWiring`). It decides its
Fargate size, timeouts and environment itself (`components.rerankers.decisions`), with the
errors a stack file gets, before it creates anything.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import pulumi

from ecs_inference import ledger
from ecs_inference.config.issues import Issues
from ecs_inference.contracts import reranker as contract
from ecs_inference.models.decisions import (  # a program's wiring names its placement
    Placement as Placement,
)
from ecs_inference.rerankers.decisions import (
    STOP_TIMEOUT_SECONDS,
    RerankerDecisions,
    decide_reranker,
    reranker_path,
)
from ecs_inference.rerankers.input import RerankerConfig
from ecs_inference.services.base import (
    ALB_REQUESTS_METRIC,
    CPU_METRIC,
    Balancing,
    PlacedWiring,
    metrics_sidecar,
    weights_task_role,
)
from ecs_inference.services.containers import container_definition
from ecs_inference.services.fargate import FargateService, fargate_placement

TOKEN = "ecs-inference:serving:FargateReranker"
CONTAINER_NAME = "reranker"


def decide(name: str, input: RerankerConfig, wiring: PlacedWiring) -> RerankerDecisions:
    """The re-ranker's decisions, as a stack's plan makes them (the placement's idle timeout
    defaults to the endpoint's); raises `ConfigError` with every problem, each at the config
    path a stack file would name (`platform.rerankers.<name>`)."""
    placement = wiring.placement
    if placement.idle_timeout_seconds is None:
        placement = replace(placement, idle_timeout_seconds=wiring.router.idle_timeout_seconds)
    # An Output is the stack's own build: its digest reference is known at deploy time.
    image = wiring.image if isinstance(wiring.image, str) else None
    decided, found = decide_reranker(name, input, placement, image)
    issues = Issues(found)
    if decided is not None and decided.metrics_sidecar and wiring.metrics_image is None:
        issues.add(
            reranker_path(name),
            "the metrics sidecar needs an image: give `PlacedWiring.metrics_image`, or turn it "
            "off (`Placement(..., facts=StackFacts(metrics_sidecar=False))`)",
        )
    issues.raise_if_any()
    assert decided is not None
    return decided


def reranker_container_definitions(
    *,
    image: str,
    environment: Sequence[Mapping[str, str]],
    log_group_name: str,
    region: str,
    stream_prefix: str,
    secrets: Mapping[str, str] | None = None,
) -> list[dict[str, Any]]:
    """The Fargate task's container definitions (one container), per the image contract.

    Defaults: no secrets. Only parameters Fargate accepts: no GPU, devices, privileged mode,
    shared memory size or host volumes; the contract's stop timeout; no container health check
    (the target group's `/health` check decides).
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
            stop_timeout_seconds=STOP_TIMEOUT_SECONDS,
            secrets=secrets,
            # tini as PID 1 forwards SIGTERM to uvicorn so it drains instead of being killed.
            linux_parameters={"initProcessEnabled": True},
        )
    ]


class FargateReranker(FargateService):
    """One re-ranker service on Fargate; outputs as `EcsService`.

    `FargateReranker(name, input, wiring, opts=None)`: `input` is the re-ranker's
    `RerankerConfig`, `wiring` a `PlacedWiring`."""

    decided: RerankerDecisions
    """What it decided: its Fargate size, deregistration delay, rollout and environment, with
    the decision lines behind them."""

    def __init__(
        self,
        name: str,
        input: RerankerConfig,
        wiring: PlacedWiring,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        service = wiring.service or name
        self.decided = decided = decide(service, input, wiring)
        super().__init__(TOKEN, name, opts)
        ledger.record_decisions(f"reranker {service}", decided.lines)
        ledger.record_fargate(service, decided, "reranker" if decided.metrics_sidecar else None)
        group = self._logs(service, input.log_retention_days)
        sidecar = metrics_sidecar(
            decided,
            kind="reranker",
            port=contract.PORT,
            engine_container=CONTAINER_NAME,
            log_group=group,
        )
        self._containers(
            lambda a: [
                *reranker_container_definitions(
                    image=a[1],
                    environment=decided.container_environment,
                    log_group_name=group,
                    region=a[0],
                    stream_prefix=service,
                    secrets=decided.secret_refs,
                ),
                *sidecar(a[0], a[2]),
            ],
            wiring.image,
            wiring.metrics_image or "",
            service_connect=wiring.service_connect_namespace is not None,
            secret_arns=wiring.stack_secret_arns,
        )
        facts = decided.placement.facts
        self._fargate_task(
            service=service,
            input=input,
            size=decided.size,
            task_role=weights_task_role(
                self._ctx,
                bucket=decided.model_bucket,
                prefix=decided.model_prefix,
                kms_key_arn=input.kms_key_arns.weights,
            ),
            exec_logging=facts.execute_command_logging if facts.execute_command else None,
        )
        self._serve(
            decided,
            wiring,
            # Re-rank requests take milliseconds: detect a dead task faster than a model server.
            balancing=Balancing(CONTAINER_NAME, contract.PORT, contract.HEALTH_PATH, 10),
            placement=fargate_placement(input.platform_version),
            scaling_metric=CPU_METRIC if input.scaling_metric == "cpu" else ALB_REQUESTS_METRIC,
            scaling_target=input.scaling_target,
        )
