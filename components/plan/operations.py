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
    settings = alarm_settings(cfg)
    services = [
        (n, cfg.models[n].engine, m.min_count, m.metrics_sidecar) for n, m in models.items()
    ]
    services += [(n, "reranker", r.min_count, r.metrics_sidecar) for n, r in rerankers.items()]
    alarms: list[ops_specs.AlarmSpec] = []
    for name, kind, min_count, engine_metrics in services:
        alarms += ops_specs.service_alarms(
            stack=stack,
            service=name,
            kind=kind,
            load_balancer=_LOAD_BALANCER,
            target_group=_TARGET_GROUP,
            cluster_name=_CLUSTER,
            ecs_service_name=name,
            min_count=min_count,
            settings=settings,
            engine_metrics=engine_metrics,
        )
    for pool in telemetry_pools:
        alarms += ops_specs.pool_alarms(stack=stack, pool=pool, kind="gpu", settings=settings)
    if gateway is not None:
        alarms += ops_specs.gateway_alarms(
            stack=stack,
            service=gateway.path,
            load_balancer=_LOAD_BALANCER,
            target_group=_TARGET_GROUP,
            cluster_name=_CLUSTER,
            ecs_service_name=gateway.path,
            min_count=gateway.min_count,
            max_count=gateway.max_count,
            target_cpu_percent=gateway.target_cpu_percent,
            longest_request_seconds=gateway.litellm.longest_request_seconds,
            settings=settings,
        )
    for name, w in workers.items():
        alarms += ops_specs.worker_alarms(
            stack=stack,
            worker=name,
            queue_name=name,
            dead_letter_queue_name=f"{name}-dlq",
            cluster_name=_CLUSTER,
            ecs_service_name=name,
            acceptable_latency_seconds=cfg.workers[name].acceptable_latency_seconds,
            max_job_seconds=cfg.workers[name].max_job_seconds,
            backlog_target=w.backlog_target,
            max_count=w.max_count,
            max_receive_count=w.max_receive_count,
            settings=settings,
        )
    return alarms


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
