"""The paging alarms (pure): each service's and pool's PutMetricAlarm requests (the gateway's and
the workers' in `alarms_gateway` and `alarms_worker`; which subject gets which in `table`).
Thresholds come from config (`AlarmSettings`) or from the subject's own decisions.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ecs_inference import engines
from ecs_inference.contracts import metrics as m
from ecs_inference.contracts.aws_limits import ALARM_EVALUATION_MAX_SECONDS, ALARM_NAME_MAX
from ecs_inference.specs.operations.errors import ObservabilityError


@dataclass(frozen=True)
class AlarmSettings:
    """Thresholds of the paging alarms."""

    target_5xx_percent: float = 5.0
    """Target 5xx share of requests, in percent, for 3 of 5 minutes."""
    ttft_p99_seconds: float = 10.0
    """Time to first token p99, in seconds, for 3 of 5 minutes."""
    pending_minutes: int = 15
    """Minutes a task may stay pending (or a Fargate service short of its desired count)."""
    gpu_memory_percent: float = 95.0
    """GPU memory used, in percent, for 5 minutes."""
    gateway_memory_percent: float = 90.0
    """The gateway's memory used, in percent, for 5 minutes."""


@dataclass(frozen=True)
class AlarmSpec:
    """One alarm: `request` is PutMetricAlarm without the actions (`with_actions` adds them);
    `meaning` and `action` are what the README's operating section prints."""

    key: str
    request: dict[str, Any]
    meaning: str
    action: str

    @property
    def name(self) -> str:
        return self.request["AlarmName"]

    def with_actions(self, topic_arn: str) -> dict[str, Any]:
        return {**self.request, "AlarmActions": [topic_arn], "OKActions": [topic_arn]}


def alarm_name(stack: str, subject: str, key: str) -> str:
    """`<stack>-<subject>-<key>`, checked against CloudWatch's 255-character limit."""
    name = f"{stack}-{subject}-{key}"
    if len(name) > ALARM_NAME_MAX:
        raise ObservabilityError(f"alarm name {name[:40]}... exceeds {ALARM_NAME_MAX} characters")
    return name


def _dims(**values: str) -> list[dict[str, str]]:
    return [{"Name": k, "Value": v} for k, v in values.items()]


def _alarm(
    name: str,
    description: str,
    *,
    evaluation_periods: int,
    datapoints: int,
    threshold: float,
    comparison: str,
    missing: str,
    period: int = 60,
    metric: dict[str, Any] | None = None,
    metrics: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    if evaluation_periods * period > ALARM_EVALUATION_MAX_SECONDS:
        raise ObservabilityError(
            f"{name}: {evaluation_periods} periods of {period} s exceed one day, the most "
            "CloudWatch evaluates"
        )
    request: dict[str, Any] = {
        "AlarmName": name,
        "AlarmDescription": description[:1024],
        "ActionsEnabled": True,
        "EvaluationPeriods": evaluation_periods,
        "DatapointsToAlarm": datapoints,
        "Threshold": float(threshold),
        "ComparisonOperator": comparison,
        "TreatMissingData": missing,
    }
    if metric is not None:
        request.update(metric)
        request["Period"] = period
    if metrics is not None:
        request["Metrics"] = metrics
    return request


def _publishes_llm_latency(kind: str) -> bool:
    """Whether a service of `kind` (an engine name, or `reranker`) publishes time to first token
    through the metrics sidecar (its engine's scrape family has it)."""
    if kind not in engines.names():
        return False
    family = engines.get(kind).metrics_kind
    return family is not None and m.TTFT_P99 in m.published_names(family)


def service_alarms(
    *,
    stack: str,
    service: str,
    kind: str,
    load_balancer: str,
    target_group: str,
    cluster_name: str,
    ecs_service_name: str,
    min_count: int,
    settings: AlarmSettings = AlarmSettings(),
    engine_metrics: bool = True,
) -> list[AlarmSpec]:
    """The paging alarms of one load-balanced service.

    `load_balancer` / `target_group` are the ARN suffixes (`app/...`, `targetgroup/...`) the
    AWS/ApplicationELB dimensions take. No-healthy-targets is left out for a service whose
    `min_count` is 0 (no targets is then a legitimate state). Pending tasks read Container
    Insights' PendingTaskCount (needs `cluster.containerInsights` on). The engine alarms (TTFT,
    engine down) read the metrics sidecar's series: left out when `engine_metrics` is False.
    """
    out = _target_group_alarms(
        stack=stack,
        service=service,
        load_balancer=load_balancer,
        target_group=target_group,
        min_count=min_count,
        settings=settings,
    )
    if engine_metrics and _publishes_llm_latency(kind):
        bound_ms = settings.ttft_p99_seconds * 1000
        out.append(
            AlarmSpec(
                "ttft-p99",
                _alarm(
                    alarm_name(stack, service, "ttft-p99"),
                    f"{service}: the slowest task's p99 time to first token above "
                    f"{settings.ttft_p99_seconds:g} s in 3 of 5 minutes.",
                    evaluation_periods=5,
                    datapoints=3,
                    threshold=bound_ms,
                    comparison="GreaterThanThreshold",
                    missing="notBreaching",
                    metric={
                        "Namespace": m.NAMESPACE,
                        "MetricName": m.TTFT_P99,
                        "Dimensions": _dims(**{m.DIM_STACK: stack, m.DIM_SERVICE: service}),
                        # Each task publishes its own p99; the worst one pages.
                        "Statistic": "Maximum",
                        "Unit": "Milliseconds",
                    },
                ),
                f"users wait more than {settings.ttft_p99_seconds:g} s for the first token",
                "look at requests waiting and KV-cache usage on the dashboard: queueing means "
                "too few tasks (is scaling at maxCount, or tasks pending?); a full KV cache "
                "with few requests means long prompts (raise maxModelLen capacity or use "
                "kvCache scaling)",
            )
        )
        out.append(
            AlarmSpec(
                "engine-down",
                _alarm(
                    alarm_name(stack, service, "engine-down"),
                    f"{service}: a task's engine stopped answering its /metrics (the metrics "
                    "sidecar publishes EngineUp = 0) for 3 minutes.",
                    evaluation_periods=3,
                    datapoints=3,
                    threshold=1,
                    comparison="LessThanThreshold",
                    missing="notBreaching",
                    metric={
                        "Namespace": m.NAMESPACE,
                        "MetricName": m.ENGINE_UP,
                        "Dimensions": _dims(**{m.DIM_STACK: stack, m.DIM_SERVICE: service}),
                        "Statistic": "Minimum",
                    },
                ),
                "an engine process inside a running task stopped answering",
                "the task's engine log stream says why; ECS replaces the task once the target "
                "group marks it unhealthy",
            )
        )
    minutes = settings.pending_minutes
    out.append(
        AlarmSpec(
            "tasks-pending",
            _alarm(
                alarm_name(stack, service, "tasks-pending"),
                f"{service}: tasks pending for {minutes} minutes: no capacity to place them.",
                evaluation_periods=minutes,
                datapoints=minutes,
                threshold=0,
                comparison="GreaterThanThreshold",
                missing="notBreaching",
                metric={
                    "Namespace": "ECS/ContainerInsights",
                    "MetricName": "PendingTaskCount",
                    "Dimensions": _dims(ClusterName=cluster_name, ServiceName=ecs_service_name),
                    "Statistic": "Maximum",
                },
            ),
            f"a task has waited {minutes} minutes for capacity",
            "the pool cannot grow: at maxSize (raise it), or EC2 has no capacity for the "
            "instance type in these AZs (check the ASG's activity), or an instance cannot "
            "join the cluster",
        )
    )
    return out


def _target_group_alarms(
    *,
    stack: str,
    service: str,
    load_balancer: str,
    target_group: str,
    min_count: int,
    settings: AlarmSettings,
) -> list[AlarmSpec]:
    """No healthy target (left out when `min_count` is 0) and target 5xx share: every
    load-balanced service's (models, re-rankers, the gateway)."""
    alb = _dims(LoadBalancer=load_balancer, TargetGroup=target_group)
    out: list[AlarmSpec] = []
    if min_count >= 1:
        out.append(
            AlarmSpec(
                "no-healthy-targets",
                _alarm(
                    alarm_name(stack, service, "no-healthy-targets"),
                    f"{service}: no healthy target behind the load balancer for 3 minutes; "
                    "every request gets a 503.",
                    evaluation_periods=3,
                    datapoints=3,
                    threshold=1,
                    comparison="LessThanThreshold",
                    # No datapoint at all means no target registered either.
                    missing="breaching",
                    metric={
                        "Namespace": "AWS/ApplicationELB",
                        "MetricName": "HealthyHostCount",
                        "Dimensions": alb,
                        "Statistic": "Minimum",
                    },
                ),
                "no task of the service passes the target group's health check: clients get 503",
                "check the service's events and stopped tasks (`aws ecs describe-services`); "
                "tasks pending means no capacity (see tasks-pending), tasks stopping means the "
                "engine fails to start (read the engine's log stream)",
            )
        )
    pct = settings.target_5xx_percent
    out.append(
        AlarmSpec(
            "target-5xx",
            _alarm(
                alarm_name(stack, service, "target-5xx"),
                f"{service}: more than {pct:g} % of requests answered 5xx by the targets in 3 "
                "of 5 minutes.",
                evaluation_periods=5,
                datapoints=3,
                threshold=pct,
                comparison="GreaterThanThreshold",
                missing="notBreaching",
                metrics=[
                    {
                        "Id": "errors",
                        "MetricStat": {
                            "Metric": {
                                "Namespace": "AWS/ApplicationELB",
                                "MetricName": "HTTPCode_Target_5XX_Count",
                                "Dimensions": alb,
                            },
                            "Period": 60,
                            "Stat": "Sum",
                        },
                        "ReturnData": False,
                    },
                    {
                        "Id": "requests",
                        "MetricStat": {
                            "Metric": {
                                "Namespace": "AWS/ApplicationELB",
                                "MetricName": "RequestCount",
                                "Dimensions": alb,
                            },
                            "Period": 60,
                            "Stat": "Sum",
                        },
                        "ReturnData": False,
                    },
                    {
                        "Id": "rate",
                        "Expression": "100 * FILL(errors, 0) / requests",
                        "Label": "target 5xx (% of requests)",
                        "ReturnData": True,
                    },
                ],
            ),
            f"more than {pct:g} % of the requests the engine answered were 5xx",
            "read the engine's log stream for the errors; a rollout in progress may be the "
            "cause (the circuit breaker rolls a failing one back)",
        )
    )
    return out


def pool_alarms(
    *, stack: str, pool: str, kind: Literal["gpu", "neuron"], settings: AlarmSettings
) -> list[AlarmSpec]:
    """GPU memory above `gpu_memory_percent` on any GPU of the pool for 5 minutes (GPU pools;
    from the CloudWatch agent's nvidia_smi metrics, rolled up per Stack/Pool)."""
    if kind != "gpu":
        return []
    pct = settings.gpu_memory_percent
    dims = _dims(**{m.DIM_STACK: stack, m.DIM_POOL: pool})
    stat = {"Period": 60, "Stat": "Maximum"}
    return [
        AlarmSpec(
            "gpu-memory",
            _alarm(
                alarm_name(stack, pool, "gpu-memory"),
                f"pool {pool}: a GPU's memory above {pct:g} % for 5 minutes.",
                evaluation_periods=5,
                datapoints=5,
                threshold=pct,
                comparison="GreaterThanThreshold",
                missing="notBreaching",
                metrics=[
                    {
                        "Id": "used",
                        "MetricStat": {
                            "Metric": {
                                "Namespace": m.HOST_NAMESPACE,
                                "MetricName": m.NVIDIA_MEMORY_USED,
                                "Dimensions": dims,
                            },
                            **stat,
                        },
                        "ReturnData": False,
                    },
                    {
                        "Id": "total",
                        "MetricStat": {
                            "Metric": {
                                "Namespace": m.HOST_NAMESPACE,
                                "MetricName": m.NVIDIA_MEMORY_TOTAL,
                                "Dimensions": dims,
                            },
                            **stat,
                        },
                        "ReturnData": False,
                    },
                    {
                        "Id": "pct",
                        "Expression": "100 * used / total",
                        "Label": "GPU memory used (%)",
                        "ReturnData": True,
                    },
                ],
            ),
            f"a GPU is more than {pct:g} % full (vLLM reserves gpuMemoryUtilization of it up "
            "front, so this means something beyond the engine's own reservation)",
            "look for a second process on the GPU (nvidia-smi via ECS Exec) or lower "
            "gpuMemoryUtilization; an out-of-memory engine restarts its task",
        )
    ]


def _ci_metric(name: str, cluster_name: str, ecs_service_name: str) -> dict[str, Any]:
    return {
        "Namespace": "ECS/ContainerInsights",
        "MetricName": name,
        "Dimensions": _dims(ClusterName=cluster_name, ServiceName=ecs_service_name),
    }


def _ecs_metric(name: str, cluster_name: str, ecs_service_name: str) -> dict[str, Any]:
    return {
        "Namespace": "AWS/ECS",
        "MetricName": name,
        "Dimensions": _dims(ClusterName=cluster_name, ServiceName=ecs_service_name),
    }


def _stat(query_id: str, metric: dict[str, Any], stat: str) -> dict[str, Any]:
    return {
        "Id": query_id,
        "MetricStat": {"Metric": metric, "Period": 60, "Stat": stat},
        "ReturnData": False,
    }


def _expression(expression: str, label: str) -> dict[str, Any]:
    return {"Id": "signal", "Expression": expression, "Label": label, "ReturnData": True}


def _tasks_below_desired(
    stack: str, subject: str, cluster_name: str, ecs_service_name: str, minutes: int
) -> AlarmSpec:
    """Running tasks below the desired count for `minutes` (Container Insights)."""
    return AlarmSpec(
        "tasks-below-desired",
        _alarm(
            alarm_name(stack, subject, "tasks-below-desired"),
            f"{subject}: fewer tasks running than desired for {minutes} minutes.",
            evaluation_periods=minutes,
            datapoints=minutes,
            threshold=0,
            comparison="GreaterThanThreshold",
            missing="notBreaching",
            metrics=[
                _stat(
                    "desired",
                    _ci_metric("DesiredTaskCount", cluster_name, ecs_service_name),
                    "Minimum",
                ),
                _stat(
                    "running",
                    _ci_metric("RunningTaskCount", cluster_name, ecs_service_name),
                    "Maximum",
                ),
                _expression("desired - FILL(running, 0)", "tasks short of the desired count"),
            ],
        ),
        f"a Fargate service has run fewer tasks than desired for {minutes} minutes: its tasks "
        "fail to start or stop soon after",
        "read the service's events and its stopped tasks' reason (`aws ecs describe-tasks`): "
        "image pull (tag, ECR endpoint), a secret the execution role cannot read, Fargate "
        "capacity or ENI limits in the subnets, or the container exiting",
    )


def isfinite_number(value: object) -> bool:
    """True for a real, finite int/float (bool excluded): what every threshold must be."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def alarm_table(alarms: Sequence[AlarmSpec]) -> list[tuple[str, str, str]]:
    """(key, meaning, action) per distinct alarm kind, for docs and the preview."""
    seen: dict[str, tuple[str, str, str]] = {}
    for a in alarms:
        seen.setdefault(a.key, (a.key, a.meaning, a.action))
    return list(seen.values())


def alarm_metric_count(alarms: Sequence[AlarmSpec]) -> int:
    """Metrics the alarms evaluate, as CloudWatch bills them (a metric-math alarm pays for each
    metric it reads, not for the expression)."""
    total = 0
    for alarm in alarms:
        queries = alarm.request.get("Metrics")
        total += sum(1 for q in queries if "MetricStat" in q) if queries else 1
    return total
