"""The operations' plan: alarm thresholds and recipients, and what the alarms and the dashboard
watch (`OperationsSpec`, whose alarms `ops_specs.operations_alarms` lists with deploy-time
dimensions left as placeholders, so their names, count and shapes are known at preview), and the
operations' decision lines."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ecs_inference.config.issues import Issues
from ecs_inference.config.stack import StackConfig
from ecs_inference.models.decisions import ModelDecisions
from ecs_inference.specs import operations as ops_specs
from ecs_inference.specs.gateway import LiteLLMGatewaySpec
from ecs_inference.specs.pool import PoolSpec
from ecs_inference.specs.service import RerankerSpec
from ecs_inference.workers.decisions import WorkerDecisions


def alarm_settings(cfg: StackConfig) -> ops_specs.AlarmSettings:
    a = cfg.operations.alarms
    return ops_specs.AlarmSettings(
        target_5xx_percent=a.target_5xx_percent,
        ttft_p99_seconds=a.ttft_p99_seconds,
        pending_minutes=a.pending_minutes,
        gpu_memory_percent=a.gpu_memory_percent,
        gateway_memory_percent=a.gateway_memory_percent,
    )


def subscriptions(cfg: StackConfig, issues: Issues) -> list[ops_specs.Subscription]:
    """Who the alarm topic notifies; one that SNS would refuse or never deliver to is an issue."""
    found = [
        ops_specs.Subscription(sub.protocol, sub.endpoint)
        for sub in cfg.operations.alarm_subscriptions
    ]
    for path, message in ops_specs.check_subscriptions(found):
        issues.add(path, message)
    return found


def operations_spec(
    cfg: StackConfig,
    models: Mapping[str, ModelDecisions],
    rerankers: Mapping[str, RerankerSpec],
    pools: Mapping[str, PoolSpec],
    gateway: LiteLLMGatewaySpec | None,
    workers: Mapping[str, WorkerDecisions],
    subscriptions: Sequence[ops_specs.Subscription],
) -> ops_specs.OperationsSpec:
    """What the operations watch: every planned service, the pools whose hosts run the
    CloudWatch agent (`pools`: the GPU and Neuron pools), the gateway and the workers, with the
    alarm settings and subscriptions."""
    services = [
        ops_specs.WatchedService(
            n, cfg.models[n].engine, m.min_count, cfg.models[n].pool, m.metrics_sidecar
        )
        for n, m in models.items()
    ]
    services += [
        ops_specs.WatchedService(n, "reranker", r.min_count, engine_metrics=r.metrics_sidecar)
        for n, r in rerankers.items()
    ]
    telemetry = {n: p for n, p in pools.items() if p.host_telemetry_pool}
    return ops_specs.OperationsSpec(
        services=tuple(services),
        gpu_pools=tuple(n for n in telemetry if n in cfg.gpu_pools),
        neuron_pools=tuple(n for n in telemetry if n in cfg.neuron_pools),
        gateway=gateway,
        workers=tuple(workers.values()),
        alarm_settings=alarm_settings(cfg),
        subscriptions=tuple(subscriptions),
        dashboard=cfg.operations.dashboard,
    )


def check(spec: ops_specs.OperationsSpec, stack: str, issues: Issues) -> None:
    """What CloudWatch would refuse of the alarms and the dashboard of the whole stack (a
    dashboard has at most 500 widgets), as issues at the operations key that decides it."""
    for path, message in ops_specs.operations_problems(spec, stack).items():
        issues.add(path, message)


def decisions(cfg: StackConfig, spec: ops_specs.OperationsSpec) -> list[str]:
    """The operations' decision lines: the alarms and where they go, the dashboard."""
    keys = list(dict.fromkeys(a.key for _, a in ops_specs.operations_alarms(spec, "stack")))
    gateway, workers = spec.gateway is not None, bool(spec.workers)
    ops = cfg.operations
    lines = [
        f"alarms ({len(keys)}) to an encrypted SNS topic with {len(ops.alarm_subscriptions)} "
        f"subscription(s): {', '.join(keys)}; circuit-breaker rollbacks by an EventBridge "
        "rule on ECS deployment state changes",
    ]
    if ops.dashboard:
        lines.append(
            "dashboard: one per stack (models, re-rankers, "
            + ("gateway, " if gateway else "")
            + ("workers, " if workers else "")
            + "pools, endpoint)"
        )
    return lines
