"""The operations' decisions (pure): what they watch across the stack (`watch_of`), every alarm
of the stack (`stack_alarms` over the watch, with placeholders for the deploy-time dimensions,
so their names, count and shapes are known at preview), what CloudWatch would refuse of the
alarms and the dashboard, and the operations' decision lines. The plan and the Operations
component both call them."""

from __future__ import annotations

from collections.abc import Mapping

from ecs_inference.config.issues import ConfigError, ConfigIssue
from ecs_inference.config.stack import StackConfig
from ecs_inference.operations.alarms import AlarmSpec, stack_alarms
from ecs_inference.operations.dashboard import dashboard_body
from ecs_inference.operations.errors import ObservabilityError
from ecs_inference.operations.input import OperationsConfig
from ecs_inference.operations.watch import Watch, WatchedService
from ecs_inference.specs.gateway import LiteLLMGatewaySpec
from ecs_inference.specs.pool import PoolSpec
from ecs_inference.specs.service import ModelServiceSpec, RerankerSpec
from ecs_inference.workers.decisions import WorkerDecisions


def watch_of(
    cfg: StackConfig,
    models: Mapping[str, ModelServiceSpec],
    rerankers: Mapping[str, RerankerSpec],
    pools: Mapping[str, PoolSpec],
    gateway: LiteLLMGatewaySpec | None,
    workers: Mapping[str, WorkerDecisions],
) -> Watch:
    """What the operations watch: every planned service, the pools whose hosts run the
    CloudWatch agent (`pools`: the GPU and Neuron pools), the gateway and the workers."""
    services = [
        WatchedService(n, cfg.models[n].engine, m.min_count, cfg.models[n].pool, m.metrics_sidecar)
        for n, m in models.items()
    ]
    services += [
        WatchedService(n, "reranker", r.min_count, engine_metrics=r.metrics_sidecar)
        for n, r in rerankers.items()
    ]
    telemetry = [n for n, p in pools.items() if p.host_telemetry_pool]
    return Watch(
        services=tuple(services),
        pools={
            **{n: "gpu" for n in telemetry if n in cfg.gpu_pools},
            **{n: "neuron" for n in telemetry if n in cfg.neuron_pools},
        },
        gateway=gateway,
        workers=tuple(workers.values()),
    )


def operations_alarms(
    input: OperationsConfig, watched: Watch, stack: str
) -> list[tuple[str, AlarmSpec]]:
    """Every alarm of the stack with the label of its subject; raises `ConfigError` at the
    operations key that decides what CloudWatch would refuse of the alarms (names, evaluation
    windows) or of the dashboard (widget count, body size)."""
    try:
        alarms = stack_alarms(stack, watched, input.alarms)
    except ObservabilityError as exc:
        raise ConfigError(ConfigIssue("platform.operations.alarms", str(exc)), stack) from None
    if input.dashboard:
        names = [a.name for _, a in alarms]
        try:
            dashboard_body(watched, stack=stack, region="us-east-1", alarm_arns=names)
        except ObservabilityError as exc:
            issue = ConfigIssue("platform.operations.dashboard", str(exc))
            raise ConfigError(issue, stack) from None
    return alarms


def decision_lines(
    input: OperationsConfig, alarms: list[tuple[str, AlarmSpec]], watched: Watch
) -> list[str]:
    """The operations' decision lines: the alarms and where they go, the dashboard."""
    keys = list(dict.fromkeys(a.key for _, a in alarms))
    lines = [
        f"alarms ({len(keys)}) to an encrypted SNS topic with {len(input.alarm_subscriptions)} "
        f"subscription(s): {', '.join(keys)}; circuit-breaker rollbacks by an EventBridge "
        "rule on ECS deployment state changes",
    ]
    if input.dashboard:
        lines.append(
            "dashboard: one per stack (models, re-rankers, "
            + ("gateway, " if watched.gateway is not None else "")
            + ("workers, " if watched.workers else "")
            + "pools, endpoint)"
        )
    return lines
