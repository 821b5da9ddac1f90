"""The AI gateway's paging alarms (pure): every threshold from its config and routes."""

from __future__ import annotations

from dataclasses import dataclass

from ecs_inference.contracts import litellm
from ecs_inference.specs.operations.alarms import (
    AlarmSettings,
    AlarmSpec,
    _alarm,
    _ci_metric,
    _dims,
    _ecs_metric,
    _expression,
    _stat,
    _target_group_alarms,
    _tasks_below_desired,
    alarm_name,
)


@dataclass(frozen=True)
class _GatewayAlarmInputs:
    """What each of the gateway's own alarms is built from (`alb`: its ALB dimensions)."""

    stack: str
    service: str
    alb: list[dict[str, str]]
    cluster_name: str
    ecs_service_name: str
    max_count: int
    target_cpu_percent: float
    longest_request_seconds: int
    memory: float


def gateway_alarms(
    *,
    stack: str,
    service: str,
    load_balancer: str,
    target_group: str,
    cluster_name: str,
    ecs_service_name: str,
    min_count: int,
    max_count: int,
    target_cpu_percent: float,
    longest_request_seconds: int,
    settings: AlarmSettings = AlarmSettings(),
) -> list[AlarmSpec]:
    """The AI gateway's paging alarms (`service` is its path).

    As every load-balanced service: no healthy target (when `min_count` >= 1) and target 5xx
    share. Its own: a task failing LiteLLM's liveness route (`UnHealthyHostCount` >= 1 for 5
    minutes); p99 `TargetResponseTime` at the longest route's timeout (`longest_request_seconds`,
    what LiteLLM waits for a model before it gives up: requests are being cut); CPU above the
    scaling target (`target_cpu_percent`) for 10 minutes while at `max_count` tasks (scaling
    has nothing left to add); memory above `settings.gateway_memory_percent` for 5 minutes (a
    Fargate task that runs out is killed with every stream on it); tasks below the desired count
    for `settings.pending_minutes`.
    """
    memory = settings.gateway_memory_percent
    c = _GatewayAlarmInputs(
        stack=stack,
        service=service,
        alb=_dims(LoadBalancer=load_balancer, TargetGroup=target_group),
        cluster_name=cluster_name,
        ecs_service_name=ecs_service_name,
        max_count=max_count,
        target_cpu_percent=target_cpu_percent,
        longest_request_seconds=longest_request_seconds,
        memory=memory,
    )
    out = _target_group_alarms(
        stack=stack,
        service=service,
        load_balancer=load_balancer,
        target_group=target_group,
        min_count=min_count,
        settings=settings,
    )
    return [
        *out,
        _gateway_unhealthy_targets(c),
        _gateway_response_time_p99(c),
        _gateway_cpu_at_max(c),
        _gateway_memory_high(c),
        _tasks_below_desired(
            stack, service, cluster_name, ecs_service_name, settings.pending_minutes
        ),
    ]


def _gateway_unhealthy_targets(c: _GatewayAlarmInputs) -> AlarmSpec:
    return AlarmSpec(
        "unhealthy-targets",
        _alarm(
            alarm_name(c.stack, c.service, "unhealthy-targets"),
            f"{c.service}: a task has failed LiteLLM's liveness route "
            f"({litellm.HEALTH_PATH}) for 5 minutes.",
            evaluation_periods=5,
            datapoints=5,
            threshold=1,
            comparison="GreaterThanOrEqualToThreshold",
            missing="notBreaching",
            metric={
                "Namespace": "AWS/ApplicationELB",
                "MetricName": "UnHealthyHostCount",
                "Dimensions": c.alb,
                "Statistic": "Maximum",
            },
        ),
        "a gateway task has failed LiteLLM's liveness route for 5 minutes (the others carry "
        "its share)",
        "read the task's log stream (config load errors, the database unreachable, out of "
        "memory); ECS replaces a task the target group marks unhealthy, so a repeating "
        "alarm means every new task fails the same way",
    )


def _gateway_response_time_p99(c: _GatewayAlarmInputs) -> AlarmSpec:
    return AlarmSpec(
        "response-time-p99",
        _alarm(
            alarm_name(c.stack, c.service, "response-time-p99"),
            f"{c.service}: p99 time to response at {c.longest_request_seconds} s (the longest "
            "route's timeout) in 3 of 5 minutes.",
            evaluation_periods=5,
            datapoints=3,
            threshold=c.longest_request_seconds,
            comparison="GreaterThanOrEqualToThreshold",
            missing="notBreaching",
            metric={
                "Namespace": "AWS/ApplicationELB",
                "MetricName": "TargetResponseTime",
                "Dimensions": c.alb,
                "ExtendedStatistic": "p99",
                "Unit": "Seconds",
            },
        ),
        "the slowest 1 % of gateway requests reach the longest route's timeout before "
        "LiteLLM answers (the first token of a stream, the whole answer otherwise): "
        "requests are being cut",
        "look at the model rows: requests waiting (too few tasks, or at maxCount) or a "
        "model that stopped answering; Bedrock throttling shows in the gateway's log stream",
    )


def _gateway_cpu_at_max(c: _GatewayAlarmInputs) -> AlarmSpec:
    return AlarmSpec(
        "cpu-at-max",
        _alarm(
            alarm_name(c.stack, c.service, "cpu-at-max"),
            f"{c.service}: average CPU above the {c.target_cpu_percent:g} % scaling target for 10 "
            f"minutes with all {c.max_count} tasks running.",
            evaluation_periods=10,
            datapoints=10,
            threshold=c.target_cpu_percent,
            comparison="GreaterThanThreshold",
            missing="notBreaching",
            metrics=[
                _stat(
                    "cpu",
                    _ecs_metric("CPUUtilization", c.cluster_name, c.ecs_service_name),
                    "Average",
                ),
                _stat(
                    "running",
                    _ci_metric("RunningTaskCount", c.cluster_name, c.ecs_service_name),
                    "Average",
                ),
                _expression(
                    f"IF(FILL(running, 0) >= {c.max_count}, cpu, 0)",
                    "CPU (%) while at the maximum task count",
                ),
            ],
        ),
        "the gateway is above its CPU scaling target at maxCount: scaling has nothing left "
        "to add and latency grows",
        "raise `gateway.maxCount` (or its cpu); a sudden rise with flat traffic points at "
        "retries (a failing model) in the log stream",
    )


def _gateway_memory_high(c: _GatewayAlarmInputs) -> AlarmSpec:
    return AlarmSpec(
        "memory-high",
        _alarm(
            alarm_name(c.stack, c.service, "memory-high"),
            f"{c.service}: memory above {c.memory:g} % of the task size for 5 minutes.",
            evaluation_periods=5,
            datapoints=5,
            threshold=c.memory,
            comparison="GreaterThanThreshold",
            missing="notBreaching",
            metric={
                **_ecs_metric("MemoryUtilization", c.cluster_name, c.ecs_service_name),
                "Statistic": "Maximum",
            },
        ),
        f"the gateway's tasks use more than {c.memory:g} % of their memory: a task that runs "
        "out is killed with every stream on it",
        "raise `gateway.memoryMib` (on the Fargate grid); steady growth with flat traffic "
        "is a leak: a deploy restarts the tasks",
    )
