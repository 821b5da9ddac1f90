"""The operations' plan: alarm thresholds and recipients, the alarms every planned service gets
(with deploy-time dimensions left as placeholders, so their names, count and shapes are known at
preview), and the operations' decision lines."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ecs_inference.config.issues import Issues
from ecs_inference.config.stack import StackConfig
from ecs_inference.specs import operations as ops_specs
from ecs_inference.specs.gateway import LiteLLMGatewaySpec
from ecs_inference.specs.service import ModelServiceSpec, RerankerSpec
from ecs_inference.specs.worker import QueueWorkerSpec

_LOAD_BALANCER = "app/alb/0"
_TARGET_GROUP = "targetgroup/tg/0"
_CLUSTER = "cluster"


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


def alarm_specs(
    cfg: StackConfig,
    models: Mapping[str, ModelServiceSpec],
    rerankers: Mapping[str, RerankerSpec],
    telemetry_pools: Sequence[str],
    gateway: LiteLLMGatewaySpec | None,
    workers: Mapping[str, QueueWorkerSpec],
    stack: str,
) -> list[ops_specs.AlarmSpec]:
    """The alarms the stack creates; `telemetry_pools`: the GPU pools whose hosts run the
    CloudWatch agent (the GPU memory alarm reads its metrics)."""
    return [
        spec
        for _, spec in ops_specs.stack_alarms(
            stack=stack,
            settings=alarm_settings(cfg),
            load_balancer=_LOAD_BALANCER,
            cluster_name=_CLUSTER,
            services=[
                ops_specs.ServiceSubject(
                    n,
                    cfg.models[n].engine,
                    m.min_count,
                    _TARGET_GROUP,
                    n,
                    engine_metrics=m.metrics_sidecar,
                )
                for n, m in models.items()
            ]
            + [
                ops_specs.ServiceSubject(
                    n, "reranker", r.min_count, _TARGET_GROUP, n, engine_metrics=r.metrics_sidecar
                )
                for n, r in rerankers.items()
            ],
            gpu_pools=telemetry_pools,
            gateway=None
            if gateway is None
            else ops_specs.GatewaySubject(gateway.path, gateway, _TARGET_GROUP, gateway.path),
            workers=[
                ops_specs.WorkerSubject(
                    name,
                    w,
                    cfg.workers[name].acceptable_latency_seconds,
                    cfg.workers[name].max_job_seconds,
                    name,
                    f"{name}-dlq",
                    name,
                )
                for name, w in workers.items()
            ],
        )
    ]


def decisions(
    cfg: StackConfig, alarms: Sequence[ops_specs.AlarmSpec], gateway: bool, workers: bool
) -> list[str]:
    """The operations' decision lines: the alarms and where they go, the dashboard."""
    keys = list(dict.fromkeys(a.key for a in alarms))
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
