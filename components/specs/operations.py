"""Day-2 operations as pure specs: engine-load autoscaling, alarms, the deployment-rollback rule,
the dashboard, SNS subscriptions and the accelerator hosts' telemetry.

No Pulumi import. Every builder returns plain data in the shape of the AWS API request it
becomes (PascalCase members, as botocore's models spell them), so the tests validate them
against botocore and the components only map them onto resources. Names and values the engine
side publishes come from `contracts.metrics`.

Scaling (why not ALBRequestCountPerTarget by default): one LLM request may be 20 tokens or
20,000; a request count says little about load. The engine knows: requests running (in the
batch) and waiting (queued). Their sum per task against the batch size the engine was launched
with (`maxConcurrentSequences`, or the Neuron batch size) is the load signal; KV-cache usage is
the alternative for long-context traffic, where memory fills before the batch does.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ecs_inference import engines
from ecs_inference.contracts import litellm
from ecs_inference.contracts import metrics as m
from ecs_inference.contracts.aws_limits import DASHBOARD_MAX_WIDGETS
from ecs_inference.contracts.engine import ENV_REGION_VARIABLES
from ecs_inference.specs.names import derived_name

ScalingMetric = Literal["engineLoad", "kvCache", "albRequests"]
SCALING_METRICS: tuple[str, ...] = ("engineLoad", "kvCache", "albRequests")

# --- AWS limits of the resources built here -----------------------------------------------------
# Application Auto Scaling: cooldowns are seconds; a target-tracking policy name is 1-256 chars.
COOLDOWN_MAX_SECONDS = 86_400
# CloudWatch: alarm names 1-255 characters; the alarm Period for standard metrics is a multiple
# of 60 s; EvaluationPeriods x Period may not exceed one day.
ALARM_NAME_MAX = 255
ALARM_EVALUATION_MAX_SECONDS = 86_400
# PutDashboard: name of letters, digits, '-' and '_' up to 255; body at most 1 MB (UTF-8); the
# widget limit is contracts.aws_limits'.
DASHBOARD_NAME = re.compile(r"^[A-Za-z0-9_-]{1,255}$")
DASHBOARD_BODY_MAX_BYTES = 1_000_000
DASHBOARD_WIDGETS_MAX = DASHBOARD_MAX_WIDGETS
# EventBridge rule names: 1-64 of [.-_A-Za-z0-9].
RULE_NAME = re.compile(r"^[.\-_A-Za-z0-9]{1,64}$")
# SNS subscription protocols this stack accepts from config (the rest need resources it does
# not create, e.g. an SQS queue policy or a Lambda permission).
SNS_PROTOCOLS = ("email", "email-json", "https", "sms")

# Target tracking's own alarms (AWS-managed): scale out after 3 one-minute periods above the
# target, scale in after 15 below it. Stated in the decision text; not configurable.
TT_SCALE_OUT_MINUTES, TT_SCALE_IN_MINUTES = 3, 15


class ObservabilityError(ValueError):
    """A setting the builders cannot turn into a valid request; names the setting."""


# ------------------------------------------------------------------------------------------------
# scaling
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ScalingPolicySpec:
    """A target-tracking policy: `configuration` is the API's
    TargetTrackingScalingPolicyConfiguration; `note` explains the target and cooldowns."""

    metric: ScalingMetric
    target_value: float
    scale_out_cooldown: int
    scale_in_cooldown: int
    configuration: dict[str, Any]
    note: str

    def request(self, policy_name: str, resource_id: str) -> dict[str, Any]:
        """The PutScalingPolicy request for an ECS service (`service/<cluster>/<service>`)."""
        return {
            "PolicyName": policy_name,
            "ServiceNamespace": "ecs",
            "ResourceId": resource_id,
            "ScalableDimension": "ecs:service:DesiredCount",
            "PolicyType": "TargetTrackingScaling",
            "TargetTrackingScalingPolicyConfiguration": self.configuration,
        }


def service_metric(name: str, stack: str, service: str, stat: str = "Average") -> dict[str, Any]:
    """A TargetTrackingMetricStat / MetricStat of a sidecar metric, per service."""
    return {
        "Metric": {
            "Namespace": m.NAMESPACE,
            "MetricName": name,
            "Dimensions": [
                {"Name": m.DIM_STACK, "Value": stack},
                {"Name": m.DIM_SERVICE, "Value": service},
            ],
        },
        "Stat": stat,
    }


def scaling_cooldowns(grace_seconds: int, scale_in_floor: int) -> tuple[int, int]:
    """(scale-out, scale-in) cooldowns from the health-check grace period.

    Scale-out: the grace period (a new task serves only after image pull, weight load and
    warm-up; until then the load it will take still shows on the others, and counting it twice
    would over-scale; target tracking still scales out further within the cooldown when the
    load asks for more than what is already starting). Scale-in: at least twice that (a removed
    warm task costs a full reload if the load returns), and never below `scale_in_floor`.
    """
    out = min(max(grace_seconds, 0), COOLDOWN_MAX_SECONDS)
    return out, min(max(2 * out, scale_in_floor, out), COOLDOWN_MAX_SECONDS)


def engine_scaling_policy(
    *,
    stack: str,
    service: str,
    engine: str,
    max_concurrency: int,
    grace_seconds: int,
    metric: ScalingMetric = "engineLoad",
    target_utilization: float = 0.8,
    scale_in_floor: int = 300,
    scale_out_cooldown: int | None = None,
    alb_resource_label: str | None = None,
    requests_per_target: float = 30.0,
    where: str = "autoscaling",
) -> ScalingPolicySpec:
    """The target-tracking policy of one LLM service.

    `engineLoad` (default): customized metric with metric math, (requests waiting + running)
    per task = the Average over the service's tasks of each task's samples, so a task still
    loading (publishing nothing) neither dilutes nor inflates it; target =
    `target_utilization` (default 0.8) x `max_concurrency` (the batch the engine runs at once):
    at the target the batch still has room, above `max_concurrency` requests queue and time to
    first token grows. `kvCache`: Average KV-cache usage in percent, target
    `target_utilization` x 100. `albRequests`: ALBRequestCountPerTarget at
    `requests_per_target` (needs `alb_resource_label`). Cooldowns: `scaling_cooldowns` of the
    grace period, or of `scale_out_cooldown` when given. `engine` is the config's engine name;
    an engine without a scrape family (`Engine.metrics_kind`) publishes nothing the sidecar
    reads: only `albRequests`.
    """
    serving = engines.get(engine)
    if metric != "albRequests" and serving.metrics_kind is None:
        raise ObservabilityError(
            f"{where}.metric {metric} reads vLLM metrics, which engine {engine} does not "
            "publish; use albRequests"
        )
    if not 0 < target_utilization <= 1:
        raise ObservabilityError(
            f"{where}.targetUtilization {target_utilization} must be in (0, 1]: the share of "
            "the engine's capacity at which to add a task"
        )
    if max_concurrency < 1:
        raise ObservabilityError(f"{where}: max concurrency {max_concurrency} must be >= 1")
    out, scale_in = scaling_cooldowns(
        grace_seconds if scale_out_cooldown is None else scale_out_cooldown, scale_in_floor
    )
    why = (
        f"= the {grace_seconds} s a new task needs to serve"
        if scale_out_cooldown is None
        else "configured"
    )
    timing = (
        f"scale out after {TT_SCALE_OUT_MINUTES} min above the target, cooldown {out} s "
        f"({why}); scale in after {TT_SCALE_IN_MINUTES} min below it, cooldown {scale_in} s"
    )
    base: dict[str, Any] = {
        "ScaleOutCooldown": out,
        "ScaleInCooldown": scale_in,
        "DisableScaleIn": False,
    }
    if metric == "albRequests":
        if not alb_resource_label:
            raise ObservabilityError(f"{where}: albRequests needs the ALB resource label")
        if not requests_per_target > 0:
            raise ObservabilityError(
                f"{where}.targetRequestsPerTarget {requests_per_target} must be positive"
            )
        config = {
            **base,
            "TargetValue": float(requests_per_target),
            "PredefinedMetricSpecification": {
                "PredefinedMetricType": "ALBRequestCountPerTarget",
                "ResourceLabel": alb_resource_label,
            },
        }
        note = (
            f"scaling: ALBRequestCountPerTarget {requests_per_target:g} requests per task per "
            f"minute (request count, blind to tokens per request); {timing}"
        )
        return ScalingPolicySpec(metric, float(requests_per_target), out, scale_in, config, note)
    if metric == "kvCache":
        target = round(100.0 * target_utilization, 2)
        queries = [
            {
                "Id": "kv",
                "MetricStat": service_metric(m.KV_CACHE_USAGE, stack, service),
                "Label": "KV-cache usage per task (%)",
                "ReturnData": True,
            }
        ]
        granularity = (
            f"; on Neuron the KV cache is allocated per whole sequence, so this moves in steps "
            f"of {100 / max_concurrency:.0f} % (1 of {max_concurrency})"
            if serving.kv_cache_per_sequence
            else ""
        )
        note = (
            f"scaling: KV-cache usage per task, target {target:g} % ({target_utilization:.0%} "
            f"of the cache){granularity}; {timing}"
        )
    else:
        target = round(max_concurrency * target_utilization, 2)
        queries = [
            {
                "Id": "waiting",
                "MetricStat": service_metric(m.REQUESTS_WAITING, stack, service),
                "ReturnData": False,
            },
            {
                "Id": "running",
                "MetricStat": service_metric(m.REQUESTS_RUNNING, stack, service),
                "ReturnData": False,
            },
            {
                "Id": "load",
                "Expression": "waiting + running",
                "Label": "requests waiting + running per task",
                "ReturnData": True,
            },
        ]
        note = (
            f"scaling: requests waiting + running per task (metric math), target {target:g} = "
            f"{target_utilization:.0%} of the {max_concurrency} sequences the engine batches "
            f"at once (above {max_concurrency} requests queue and time to first token grows); "
            f"{timing}"
        )
    config = {
        **base,
        "TargetValue": float(target),
        "CustomizedMetricSpecification": {"Metrics": queries},
    }
    return ScalingPolicySpec(metric, float(target), out, scale_in, config, note)


def target_tracking_args(configuration: Mapping[str, Any]) -> dict[str, Any]:
    """A TargetTrackingScalingPolicyConfiguration (API shape) as the snake_case dict
    `aws.appautoscaling.Policy(target_tracking_scaling_policy_configuration=...)` takes."""
    out: dict[str, Any] = {
        "target_value": configuration["TargetValue"],
        "scale_out_cooldown": configuration["ScaleOutCooldown"],
        "scale_in_cooldown": configuration["ScaleInCooldown"],
        "disable_scale_in": configuration.get("DisableScaleIn", False),
    }
    predefined = configuration.get("PredefinedMetricSpecification")
    if predefined:
        out["predefined_metric_specification"] = {
            "predefined_metric_type": predefined["PredefinedMetricType"],
            "resource_label": predefined.get("ResourceLabel"),
        }
    custom = configuration.get("CustomizedMetricSpecification")
    if custom:
        metrics = []
        for q in custom["Metrics"]:
            item: dict[str, Any] = {"id": q["Id"], "return_data": q.get("ReturnData", True)}
            if "Expression" in q:
                item["expression"] = q["Expression"]
            if "Label" in q:
                item["label"] = q["Label"]
            if "MetricStat" in q:
                stat = q["MetricStat"]
                item["metric_stat"] = {
                    "metric": {
                        "metric_name": stat["Metric"]["MetricName"],
                        "namespace": stat["Metric"]["Namespace"],
                        "dimensions": [
                            {"name": d["Name"], "value": d["Value"]}
                            for d in stat["Metric"].get("Dimensions", [])
                        ],
                    },
                    "stat": stat["Stat"],
                }
            metrics.append(item)
        out["customized_metric_specification"] = {"metrics": metrics}
    return out


# ------------------------------------------------------------------------------------------------
# alarms
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class AlarmSettings:
    """Thresholds of the paging alarms. Defaults: target 5xx above 5 % of requests for 3 of 5
    minutes; TTFT p99 above 10 s for 3 of 5 minutes; a task pending (or a Fargate service short of
    its desired count) 15 minutes; GPU memory above 95 % for 5 minutes; the gateway's memory
    above 90 % for 5 minutes."""

    target_5xx_percent: float = 5.0
    ttft_p99_seconds: float = 10.0
    pending_minutes: int = 15
    gpu_memory_percent: float = 95.0
    gateway_memory_percent: float = 90.0


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
        if not bound_ms > 0:
            raise ObservabilityError("alarms.ttftP99Seconds must be positive")
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
    if not 1 <= minutes <= 1440:
        raise ObservabilityError(f"alarms.pendingMinutes {minutes} must be 1-1440")
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
    if not 0 < pct <= 100:
        raise ObservabilityError(f"alarms.target5xxPercent {pct} must be in (0, 100]")
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
    if not 0 < pct <= 100:
        raise ObservabilityError(f"alarms.gpuMemoryPercent {pct} must be in (0, 100]")
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
    if not 1 <= minutes <= 1440:
        raise ObservabilityError(f"alarms.pendingMinutes {minutes} must be 1-1440")
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
    if max_count < 1 or not 0 < target_cpu_percent <= 100:
        raise ObservabilityError(
            f"gateway: max count {max_count} must be >= 1 and target CPU {target_cpu_percent} "
            "in (0, 100]"
        )
    if longest_request_seconds < 1:
        raise ObservabilityError("gateway: the longest route timeout must be >= 1 s")
    memory = settings.gateway_memory_percent
    if not 0 < memory <= 100:
        raise ObservabilityError(f"alarms.gatewayMemoryPercent {memory} must be in (0, 100]")
    alb = _dims(LoadBalancer=load_balancer, TargetGroup=target_group)
    out = _target_group_alarms(
        stack=stack,
        service=service,
        load_balancer=load_balancer,
        target_group=target_group,
        min_count=min_count,
        settings=settings,
    )
    out.append(
        AlarmSpec(
            "unhealthy-targets",
            _alarm(
                alarm_name(stack, service, "unhealthy-targets"),
                f"{service}: a task has failed LiteLLM's liveness route "
                f"({litellm.HEALTH_PATH}) for 5 minutes.",
                evaluation_periods=5,
                datapoints=5,
                threshold=1,
                comparison="GreaterThanOrEqualToThreshold",
                missing="notBreaching",
                metric={
                    "Namespace": "AWS/ApplicationELB",
                    "MetricName": "UnHealthyHostCount",
                    "Dimensions": alb,
                    "Statistic": "Maximum",
                },
            ),
            "a gateway task has failed LiteLLM's liveness route for 5 minutes (the others carry "
            "its share)",
            "read the task's log stream (config load errors, the database unreachable, out of "
            "memory); ECS replaces a task the target group marks unhealthy, so a repeating "
            "alarm means every new task fails the same way",
        )
    )
    out.append(
        AlarmSpec(
            "response-time-p99",
            _alarm(
                alarm_name(stack, service, "response-time-p99"),
                f"{service}: p99 time to response at {longest_request_seconds} s (the longest "
                "route's timeout) in 3 of 5 minutes.",
                evaluation_periods=5,
                datapoints=3,
                threshold=longest_request_seconds,
                comparison="GreaterThanOrEqualToThreshold",
                missing="notBreaching",
                metric={
                    "Namespace": "AWS/ApplicationELB",
                    "MetricName": "TargetResponseTime",
                    "Dimensions": alb,
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
    )
    out.append(
        AlarmSpec(
            "cpu-at-max",
            _alarm(
                alarm_name(stack, service, "cpu-at-max"),
                f"{service}: average CPU above the {target_cpu_percent:g} % scaling target for 10 "
                f"minutes with all {max_count} tasks running.",
                evaluation_periods=10,
                datapoints=10,
                threshold=target_cpu_percent,
                comparison="GreaterThanThreshold",
                missing="notBreaching",
                metrics=[
                    _stat(
                        "cpu",
                        _ecs_metric("CPUUtilization", cluster_name, ecs_service_name),
                        "Average",
                    ),
                    _stat(
                        "running",
                        _ci_metric("RunningTaskCount", cluster_name, ecs_service_name),
                        "Average",
                    ),
                    _expression(
                        f"IF(FILL(running, 0) >= {max_count}, cpu, 0)",
                        "CPU (%) while at the maximum task count",
                    ),
                ],
            ),
            "the gateway is above its CPU scaling target at maxCount: scaling has nothing left "
            "to add and latency grows",
            "raise `gateway.maxCount` (or its cpu); a sudden rise with flat traffic points at "
            "retries (a failing model) in the log stream",
        )
    )
    out.append(
        AlarmSpec(
            "memory-high",
            _alarm(
                alarm_name(stack, service, "memory-high"),
                f"{service}: memory above {memory:g} % of the task size for 5 minutes.",
                evaluation_periods=5,
                datapoints=5,
                threshold=memory,
                comparison="GreaterThanThreshold",
                missing="notBreaching",
                metric={
                    **_ecs_metric("MemoryUtilization", cluster_name, ecs_service_name),
                    "Statistic": "Maximum",
                },
            ),
            f"the gateway's tasks use more than {memory:g} % of their memory: a task that runs "
            "out is killed with every stream on it",
            "raise `gateway.memoryMib` (on the Fargate grid); steady growth with flat traffic "
            "is a leak: a deploy restarts the tasks",
        )
    )
    out.append(
        _tasks_below_desired(
            stack, service, cluster_name, ecs_service_name, settings.pending_minutes
        )
    )
    return out


def queue_age_threshold_seconds(acceptable_latency_seconds: float, max_job_seconds: int) -> int:
    """How old a worker's oldest message may get: SQS ages a message from its enqueue until
    its delete, so a job that waited the acceptable latency and then ran the longest job is
    this old; beyond it, work is late."""
    return math.ceil(acceptable_latency_seconds + max_job_seconds)


def worker_alarms(
    *,
    stack: str,
    worker: str,
    queue_name: str,
    dead_letter_queue_name: str,
    cluster_name: str,
    ecs_service_name: str,
    acceptable_latency_seconds: float,
    max_job_seconds: int,
    backlog_target: float,
    max_count: int,
    max_receive_count: int,
    settings: AlarmSettings = AlarmSettings(),
) -> list[AlarmSpec]:
    """A queue worker's paging alarms.

    - `queue-age`: the oldest message older than `acceptable_latency_seconds` +
      `max_job_seconds` for 3 minutes (SQS ages a message from its enqueue until its delete,
      so a job that waited the acceptable latency and ran the longest job is that old: beyond
      it, work is late);
    - `dlq-depth`: a message in the dead-letter queue (a job failed `max_receive_count` times);
    - `backlog-at-max`: backlog per task above `backlog_target` while all `max_count` tasks
      run, for as long as the acceptable latency (at least 3 minutes): work arrives faster
      than the maximum can do it;
    - `tasks-below-desired`: fewer tasks running than desired for `settings.pending_minutes`.
    """
    if acceptable_latency_seconds <= 0 or max_job_seconds < 1 or backlog_target <= 0:
        raise ObservabilityError(
            f"worker {worker}: acceptable latency, job time and backlog target must be positive"
        )
    if max_count < 1 or max_receive_count < 1:
        raise ObservabilityError(f"worker {worker}: max count and receives must be >= 1")
    age = queue_age_threshold_seconds(acceptable_latency_seconds, max_job_seconds)
    sustained = min(max(3, math.ceil(acceptable_latency_seconds / 60)), 1440)

    def sqs(name: str, queue: str) -> dict[str, Any]:
        return {
            "Namespace": "AWS/SQS",
            "MetricName": name,
            "Dimensions": _dims(QueueName=queue),
        }

    return [
        AlarmSpec(
            "queue-age",
            _alarm(
                alarm_name(stack, worker, "queue-age"),
                f"{worker}: the oldest message is older than {age} s (acceptable latency "
                f"{acceptable_latency_seconds:g} s + longest job {max_job_seconds} s) for 3 "
                "minutes.",
                evaluation_periods=3,
                datapoints=3,
                threshold=age,
                comparison="GreaterThanThreshold",
                missing="notBreaching",
                metric={
                    **sqs("ApproximateAgeOfOldestMessage", queue_name),
                    "Statistic": "Maximum",
                },
            ),
            "the oldest job has waited longer than the acceptable latency plus the longest job: "
            "work is late",
            "look at the worker's row: tasks at maxCount (see backlog-at-max), tasks short of "
            "desired (they fail to start), or jobs that keep failing and return to the queue "
            "(the worker's log stream)",
        ),
        AlarmSpec(
            "dlq-depth",
            _alarm(
                alarm_name(stack, worker, "dlq-depth"),
                f"{worker}: a message reached the dead-letter queue (its job failed "
                f"{max_receive_count} times).",
                evaluation_periods=1,
                datapoints=1,
                threshold=1,
                comparison="GreaterThanOrEqualToThreshold",
                missing="notBreaching",
                metric={
                    **sqs("ApproximateNumberOfMessagesVisible", dead_letter_queue_name),
                    "Statistic": "Maximum",
                },
            ),
            "a job failed maxReceiveCount times and was moved to the dead-letter queue; it will "
            "not be retried by itself",
            "read the worker's log stream for the failure; fix it, then redrive the DLQ "
            "(`aws sqs start-message-move-task --source-arn <dlq arn>`) or delete the messages",
        ),
        AlarmSpec(
            "backlog-at-max",
            _alarm(
                alarm_name(stack, worker, "backlog-at-max"),
                f"{worker}: more than {backlog_target:g} messages per task with all {max_count} "
                f"tasks running for {sustained} minutes.",
                evaluation_periods=sustained,
                datapoints=sustained,
                threshold=backlog_target,
                comparison="GreaterThanThreshold",
                missing="notBreaching",
                metrics=[
                    _stat(
                        "visible", sqs("ApproximateNumberOfMessagesVisible", queue_name), "Maximum"
                    ),
                    _stat(
                        "running",
                        _ci_metric("RunningTaskCount", cluster_name, ecs_service_name),
                        "Average",
                    ),
                    _expression(
                        f"IF(FILL(running, 0) >= {max_count}, visible / FILL(running, 1), 0)",
                        "messages waiting per task while at the maximum task count",
                    ),
                ],
            ),
            "the backlog per task stays above the scaling target with every task running: work "
            "arrives faster than maxCount tasks finish it",
            "raise `maxCount` or `concurrency`, or make jobs shorter; check that the gateway "
            "and the models behind it keep up (their rows)",
        ),
        _tasks_below_desired(
            stack, worker, cluster_name, ecs_service_name, settings.pending_minutes
        ),
    ]


def deployment_rollback_rule(stack: str, cluster_arn: str) -> dict[str, Any]:
    """PutRule for ECS "deployment failed" events of this stack's cluster: the circuit breaker
    rolled a deployment back (`SERVICE_DEPLOYMENT_FAILED`), routed to the alarm topic."""
    suffix = "-ecs-deployment-rollback"
    # EventBridge rule names are at most 64 characters: a long stack name is cut (and hashed).
    name = derived_name(stack, invalid="[^A-Za-z0-9._-]", max_length=64 - len(suffix)) + suffix
    pattern = {
        "source": ["aws.ecs"],
        "detail-type": ["ECS Deployment State Change"],
        "resources": [{"prefix": _service_arn_prefix(cluster_arn)}],
        "detail": {"eventName": ["SERVICE_DEPLOYMENT_FAILED"]},
    }
    return {
        "Name": name,
        "Description": f"{stack}: an ECS deployment failed and the circuit breaker rolled it back",
        "EventPattern": json.dumps(pattern, separators=(",", ":")),
        "State": "ENABLED",
    }


def _service_arn_prefix(cluster_arn: str) -> str:
    """`arn:...:service/<cluster>/` from the cluster ARN: deployment events name the service."""
    head, _, cluster = cluster_arn.partition(":cluster/")
    if not cluster:
        raise ObservabilityError(f"{cluster_arn!r} is not an ECS cluster ARN")
    return f"{head}:service/{cluster}/"


@dataclass(frozen=True)
class Subscription:
    protocol: str
    endpoint: str


_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
_E164 = re.compile(r"^\+[1-9]\d{6,14}$")


def check_subscriptions(
    subscriptions: Sequence[Subscription], where: str = "platform.operations.alarmSubscriptions"
) -> list[tuple[str, str]]:
    """(config path, message) for each subscription SNS would refuse or never deliver to."""
    problems: list[tuple[str, str]] = []
    seen: set[tuple[str, str]] = set()
    for i, sub in enumerate(subscriptions):
        path = f"{where}[{i}]"
        if sub.protocol not in SNS_PROTOCOLS:
            problems.append(
                (f"{path}.protocol", f"{sub.protocol!r} is not one of {', '.join(SNS_PROTOCOLS)}")
            )
            continue
        ok = {
            "email": _EMAIL.match(sub.endpoint),
            "email-json": _EMAIL.match(sub.endpoint),
            "https": sub.endpoint.startswith("https://") and len(sub.endpoint) > len("https://"),
            "sms": _E164.match(sub.endpoint),
        }[sub.protocol]
        if not ok:
            hint = {
                "email": "an e-mail address",
                "email-json": "an e-mail address",
                "https": "an https:// URL (plain http would send alarms unencrypted)",
                "sms": "a phone number in E.164 form, e.g. +14155550100",
            }[sub.protocol]
            problems.append((f"{path}.endpoint", f"{sub.endpoint!r} must be {hint}"))
        if (sub.protocol, sub.endpoint) in seen:
            problems.append((path, "repeats an earlier subscription"))
        seen.add((sub.protocol, sub.endpoint))
    return problems


# ------------------------------------------------------------------------------------------------
# dashboard
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ModelPanel:
    service: str
    kind: str
    """The model's engine (its registry name)."""
    pool: str
    target_group: str
    ecs_service_name: str
    engine_metrics: bool = True
    """The task runs the metrics sidecar; without it the engine-series graphs are left out."""


@dataclass(frozen=True)
class RerankerPanel:
    service: str
    target_group: str
    ecs_service_name: str


@dataclass(frozen=True)
class GatewayPanel:
    """The AI gateway's row: `service` is its path; `longest_request_seconds` and
    `target_cpu_percent` are drawn as the alarm and scaling lines."""

    service: str
    target_group: str
    ecs_service_name: str
    longest_request_seconds: int
    target_cpu_percent: float


@dataclass(frozen=True)
class WorkerPanel:
    """A queue worker's row; `queue_age_seconds` and `backlog_target` are drawn as lines."""

    worker: str
    queue_name: str
    dead_letter_queue_name: str
    ecs_service_name: str
    queue_age_seconds: float
    backlog_target: float


@dataclass(frozen=True)
class DashboardInputs:
    """What the dashboard shows. ARN suffixes for the ALB and target groups, names for the
    cluster and services (known only at deploy time: the component applies over Outputs)."""

    stack: str
    region: str
    cluster_name: str
    load_balancer: str
    models: Sequence[ModelPanel] = ()
    rerankers: Sequence[RerankerPanel] = ()
    gateway: GatewayPanel | None = None
    workers: Sequence[WorkerPanel] = ()
    gpu_pools: Sequence[str] = ()
    neuron_pools: Sequence[str] = ()
    alarm_arns: Sequence[str] = field(default_factory=tuple)


def dashboard_name(stack: str) -> str:
    """`ecs-inference-<stack>`, valid for any stack name (a '.' is not; see `derived_name`)."""
    return derived_name(f"ecs-inference-{stack}", invalid="[^A-Za-z0-9_-]", max_length=255)


_ENGINE_GRAPHS = frozenset(
    {
        "Queue: waiting / running per task",
        "Time to first token p50 / p99 (ms)",
        "Tokens/s (prompt, generated)",
    }
)
"""Model graphs drawn only from the metrics sidecar's series."""


def _graph(
    title: str, metrics: list[list[Any]], region: str, *, stat: str = "Average", **extra: Any
) -> dict[str, Any]:
    props: dict[str, Any] = {
        "title": title,
        "region": region,
        "metrics": metrics,
        "view": "timeSeries",
        "stat": stat,
        "period": 60,
    }
    props.update(extra)
    return {"type": "metric", "width": 8, "height": 6, "properties": props}


def _engine(name: str, stack: str, service: str, **opts: Any) -> list[Any]:
    row: list[Any] = [m.NAMESPACE, name, m.DIM_STACK, stack, m.DIM_SERVICE, service]
    return [*row, opts] if opts else row


def dashboard_body(inputs: DashboardInputs) -> str:
    """The PutDashboard body (JSON): a row of widgets per model, per re-ranker, per pool, and
    the endpoint's; an alarm status widget on top when alarms are given."""
    s, r, lb = inputs.stack, inputs.region, inputs.load_balancer
    widgets: list[dict[str, Any]] = []

    def header(text: str) -> None:
        widgets.append(
            {"type": "text", "width": 24, "height": 1, "properties": {"markdown": f"## {text}"}}
        )

    if inputs.alarm_arns:
        widgets.append(
            {
                "type": "alarm",
                "width": 24,
                "height": 3,
                "properties": {"title": "Alarms", "alarms": list(inputs.alarm_arns)},
            }
        )
    for mp in inputs.models:
        tg = ["TargetGroup", mp.target_group, "LoadBalancer", lb]
        header(f"model {mp.service} ({mp.kind}, pool {mp.pool})")
        panels = [
            _graph(
                "Requests (per minute) and 5xx",
                [
                    ["AWS/ApplicationELB", "RequestCount", *tg, {"stat": "Sum"}],
                    ["AWS/ApplicationELB", "HTTPCode_Target_5XX_Count", *tg, {"stat": "Sum"}],
                ],
                r,
            ),
            _graph(
                "Queue: waiting / running per task",
                [
                    _engine(m.REQUESTS_WAITING, s, mp.service),
                    _engine(m.REQUESTS_RUNNING, s, mp.service),
                    _engine(m.KV_CACHE_USAGE, s, mp.service, yAxis="right"),
                ],
                r,
            ),
            _graph(
                "Time to first token p50 / p99 (ms)",
                [
                    _engine(m.TTFT_P50, s, mp.service),
                    _engine(m.TTFT_P99, s, mp.service, stat="Maximum"),
                ],
                r,
            ),
            _graph(
                "Tokens/s (prompt, generated)",
                [
                    _engine(m.PROMPT_TOKENS, s, mp.service, id="p", visible=False),
                    _engine(m.GENERATION_TOKENS, s, mp.service, id="g", visible=False),
                    [{"expression": "p / PERIOD(p)", "label": "prompt tokens/s"}],
                    [{"expression": "g / PERIOD(g)", "label": "generated tokens/s"}],
                ],
                r,
                stat="Sum",
            ),
            _graph(
                "Healthy targets, engines up",
                [
                    ["AWS/ApplicationELB", "HealthyHostCount", *tg, {"stat": "Minimum"}],
                    ["AWS/ApplicationELB", "UnHealthyHostCount", *tg, {"stat": "Maximum"}],
                    _engine(m.ENGINE_UP, s, mp.service, stat="SampleCount", label="samples"),
                ],
                r,
            ),
            _graph(
                "Tasks: running / desired / pending",
                [
                    [
                        "ECS/ContainerInsights",
                        name,
                        "ClusterName",
                        inputs.cluster_name,
                        "ServiceName",
                        mp.ecs_service_name,
                    ]
                    for name in ("RunningTaskCount", "DesiredTaskCount", "PendingTaskCount")
                ],
                r,
                stat="Maximum",
            ),
        ]
        if not mp.engine_metrics:
            # No sidecar (engines whose metrics it cannot scrape): ALB and ECS graphs only.
            panels = [p for p in panels if p["properties"]["title"] not in _ENGINE_GRAPHS]
        widgets += panels
    for rp in inputs.rerankers:
        tg = ["TargetGroup", rp.target_group, "LoadBalancer", lb]
        header(f"re-ranker {rp.service}")
        widgets += [
            _graph(
                "Latency p50 / p99 (ms)",
                [
                    _engine(m.RERANKER_LATENCY_P50, s, rp.service),
                    _engine(m.RERANKER_LATENCY_P99, s, rp.service, stat="Maximum"),
                ],
                r,
            ),
            _graph(
                "Requests, 429s (queue full), queue",
                [
                    _engine(m.RERANKER_REQUESTS, s, rp.service, stat="Sum"),
                    _engine(m.RERANKER_THROTTLED, s, rp.service, stat="Sum"),
                    _engine(m.RERANKER_QUEUE_WORK_TOKENS, s, rp.service, yAxis="right"),
                ],
                r,
            ),
            _graph(
                "CPU (%)",
                [
                    [
                        "AWS/ECS",
                        "CPUUtilization",
                        "ClusterName",
                        inputs.cluster_name,
                        "ServiceName",
                        rp.ecs_service_name,
                    ],
                    [
                        "AWS/ApplicationELB",
                        "HealthyHostCount",
                        *tg,
                        {"stat": "Minimum", "yAxis": "right"},
                    ],
                ],
                r,
            ),
        ]
    if inputs.gateway is not None:
        widgets += _gateway_row(inputs, inputs.gateway, header)
    for wp in inputs.workers:
        widgets += _worker_row(inputs, wp, header)
    for pool in inputs.gpu_pools:
        header(f"GPU pool {pool}")
        dims = [m.DIM_STACK, s, m.DIM_POOL, pool]
        widgets += [
            _graph(
                "GPU utilisation (%)",
                [[m.HOST_NAMESPACE, m.NVIDIA_UTILIZATION, *dims]],
                r,
                stat="Maximum",
            ),
            _graph(
                "GPU memory used / total (MiB)",
                [
                    [m.HOST_NAMESPACE, m.NVIDIA_MEMORY_USED, *dims],
                    [m.HOST_NAMESPACE, m.NVIDIA_MEMORY_TOTAL, *dims],
                ],
                r,
                stat="Maximum",
            ),
            _graph(
                "Temperature (C), power (W)",
                [
                    [m.HOST_NAMESPACE, m.NVIDIA_TEMPERATURE, *dims],
                    [m.HOST_NAMESPACE, m.NVIDIA_POWER, *dims, {"yAxis": "right"}],
                ],
                r,
                stat="Maximum",
            ),
        ]
    for pool in inputs.neuron_pools:
        header(f"Neuron pool {pool}")
        dims = [m.DIM_STACK, s, m.DIM_POOL, pool]
        widgets += [
            _graph(
                "NeuronCore utilisation (ratio)",
                [[m.HOST_NAMESPACE, m.NEURON_CORE_UTILIZATION, *dims]],
                r,
                stat="Maximum",
            ),
            _graph(
                "Neuron device memory used (bytes)",
                [
                    [
                        m.HOST_NAMESPACE,
                        m.NEURON_DEVICE_MEMORY_USED,
                        *dims,
                        m.NEURON_MEMORY_LOCATION,
                        "neuron_device",
                    ]
                ],
                r,
                stat="Maximum",
            ),
            _graph(
                "Neuron execution errors",
                [[m.HOST_NAMESPACE, m.NEURON_EXECUTION_ERRORS, *dims]],
                r,
                stat="Sum",
            ),
        ]
    header("endpoint")
    widgets += [
        _graph(
            "4xx / 5xx from the load balancer",
            [
                ["AWS/ApplicationELB", "HTTPCode_ELB_4XX_Count", "LoadBalancer", lb],
                ["AWS/ApplicationELB", "HTTPCode_ELB_5XX_Count", "LoadBalancer", lb],
            ],
            r,
            stat="Sum",
        ),
        _graph(
            "Authentication failures",
            [
                # jwt-validation and authenticate-cognito refusals (401s are ELB 4xx above);
                # the ELB counts failed IdP exchanges separately.
                ["AWS/ApplicationELB", "ELBAuthFailure", "LoadBalancer", lb],
                ["AWS/ApplicationELB", "ELBAuthError", "LoadBalancer", lb],
            ],
            r,
            stat="Sum",
        ),
        _graph(
            "Active / new connections",
            [
                ["AWS/ApplicationELB", "ActiveConnectionCount", "LoadBalancer", lb],
                ["AWS/ApplicationELB", "NewConnectionCount", "LoadBalancer", lb],
            ],
            r,
            stat="Sum",
        ),
    ]
    if len(widgets) > DASHBOARD_WIDGETS_MAX:
        raise ObservabilityError(
            f"the dashboard needs {len(widgets)} widgets; CloudWatch allows "
            f"{DASHBOARD_WIDGETS_MAX} per dashboard (split the stack)"
        )
    body = json.dumps({"start": "-PT6H", "periodOverride": "inherit", "widgets": widgets})
    if len(body.encode()) > DASHBOARD_BODY_MAX_BYTES:
        raise ObservabilityError(
            f"the dashboard body is {len(body.encode())} bytes; CloudWatch allows "
            f"{DASHBOARD_BODY_MAX_BYTES}"
        )
    return body


def _line(label: str, value: float) -> dict[str, Any]:
    return {"annotations": {"horizontal": [{"label": label, "value": float(value)}]}}


def _tasks_graph(inputs: DashboardInputs, ecs_service_name: str) -> dict[str, Any]:
    return _graph(
        "Tasks: running / desired",
        [
            [
                "ECS/ContainerInsights",
                name,
                "ClusterName",
                inputs.cluster_name,
                "ServiceName",
                ecs_service_name,
            ]
            for name in ("RunningTaskCount", "DesiredTaskCount")
        ],
        inputs.region,
        stat="Maximum",
    )


def _gateway_row(
    inputs: DashboardInputs, gp: GatewayPanel, header: Callable[[str], None]
) -> list[dict[str, Any]]:
    """Requests and 5xx, response time against the longest route's timeout, targets (LiteLLM's
    liveness), CPU and memory against the scaling target, tasks."""
    r, lb = inputs.region, inputs.load_balancer
    tg = ["TargetGroup", gp.target_group, "LoadBalancer", lb]
    ecs = ["ClusterName", inputs.cluster_name, "ServiceName", gp.ecs_service_name]
    header(f"gateway {gp.service} (LiteLLM)")
    return [
        _graph(
            "Requests (per minute) and 5xx",
            [
                ["AWS/ApplicationELB", "RequestCount", *tg, {"stat": "Sum"}],
                ["AWS/ApplicationELB", "HTTPCode_Target_5XX_Count", *tg, {"stat": "Sum"}],
                ["AWS/ApplicationELB", "HTTPCode_Target_4XX_Count", *tg, {"stat": "Sum"}],
            ],
            r,
        ),
        _graph(
            "Response time p50 / p99 (s)",
            [
                ["AWS/ApplicationELB", "TargetResponseTime", *tg, {"stat": "p50"}],
                ["AWS/ApplicationELB", "TargetResponseTime", *tg, {"stat": "p99"}],
            ],
            r,
            **_line("longest route timeout", gp.longest_request_seconds),
        ),
        _graph(
            "Healthy / unhealthy targets (LiteLLM liveness)",
            [
                ["AWS/ApplicationELB", "HealthyHostCount", *tg, {"stat": "Minimum"}],
                ["AWS/ApplicationELB", "UnHealthyHostCount", *tg, {"stat": "Maximum"}],
            ],
            r,
        ),
        _graph(
            "CPU / memory (%)",
            [
                ["AWS/ECS", "CPUUtilization", *ecs],
                ["AWS/ECS", "MemoryUtilization", *ecs, {"stat": "Maximum"}],
            ],
            r,
            **_line("CPU scaling target", gp.target_cpu_percent),
        ),
        _tasks_graph(inputs, gp.ecs_service_name),
    ]


def _worker_row(
    inputs: DashboardInputs, wp: WorkerPanel, header: Callable[[str], None]
) -> list[dict[str, Any]]:
    """Queue depth, age of the oldest message against its alarm, backlog per task against the
    scaling target, the dead-letter queue, tasks."""
    r = inputs.region
    queue = ["QueueName", wp.queue_name]
    running = [
        "ECS/ContainerInsights",
        "RunningTaskCount",
        "ClusterName",
        inputs.cluster_name,
        "ServiceName",
        wp.ecs_service_name,
    ]
    header(f"worker {wp.worker}")
    return [
        _graph(
            "Queue: visible / in flight",
            [
                ["AWS/SQS", "ApproximateNumberOfMessagesVisible", *queue],
                ["AWS/SQS", "ApproximateNumberOfMessagesNotVisible", *queue],
            ],
            r,
            stat="Maximum",
        ),
        _graph(
            "Age of the oldest message (s)",
            [["AWS/SQS", "ApproximateAgeOfOldestMessage", *queue]],
            r,
            stat="Maximum",
            **_line("queue-age alarm", wp.queue_age_seconds),
        ),
        _graph(
            "Backlog per task",
            [
                [
                    "AWS/SQS",
                    "ApproximateNumberOfMessagesVisible",
                    *queue,
                    {"id": "visible", "visible": False, "stat": "Maximum"},
                ],
                [*running, {"id": "running", "visible": False, "stat": "Average"}],
                [{"expression": "visible / running", "label": "messages per task"}],
            ],
            r,
            **_line("scaling target", wp.backlog_target),
        ),
        _graph(
            "Dead-letter queue (messages)",
            [
                [
                    "AWS/SQS",
                    "ApproximateNumberOfMessagesVisible",
                    "QueueName",
                    wp.dead_letter_queue_name,
                ]
            ],
            r,
            stat="Maximum",
        ),
        _tasks_graph(inputs, wp.ecs_service_name),
    ]


# ------------------------------------------------------------------------------------------------
# host telemetry (CloudWatch agent on the accelerator instances)
# ------------------------------------------------------------------------------------------------

CLOUDWATCH_AGENT_VERSION = "1.300062.0b1304"
"""Pinned CloudWatch agent release, installed from AWS's versioned download path (the regional
`amazoncloudwatch-agent-<region>` bucket, reached through the VPC's S3 gateway endpoint)."""
NEURON_MONITOR_PORT = 9010
"""Loopback port of `neuron-monitor-prometheus.py` on Neuron hosts (clear of the task ports,
which live on the tasks' own ENIs in awsvpc mode anyway)."""
HOST_TELEMETRY_INTERVAL_SECONDS = 60


def cloudwatch_agent_config(
    *, stack: str, pool: str, kind: Literal["gpu", "neuron"], log_group: str
) -> dict[str, Any]:
    """The agent's JSON config for one pool's instances.

    GPU: the `nvidia_gpu` plugin (nvidia-smi on the host: utilisation, memory used/total,
    temperature, power), with static Stack/Pool dimensions and a Stack/Pool rollup, published
    with PutMetricData to `contracts.metrics.HOST_NAMESPACE`. Neuron: the agent scrapes
    `neuron-monitor-prometheus.py` on loopback and writes EMF to `log_group` (CloudWatch
    extracts the metrics), keeping the families named in `contracts.metrics`.
    """
    static = {m.DIM_STACK: stack, m.DIM_POOL: pool}
    agent = {
        "metrics_collection_interval": HOST_TELEMETRY_INTERVAL_SECONDS,
        "run_as_user": "cwagent",
    }
    if kind == "gpu":
        return {
            "agent": agent,
            "metrics": {
                "namespace": m.HOST_NAMESPACE,
                "aggregation_dimensions": [[m.DIM_STACK, m.DIM_POOL]],
                "metrics_collected": {
                    "nvidia_gpu": {
                        "measurement": list(m.NVIDIA_MEASUREMENTS),
                        "metrics_collection_interval": HOST_TELEMETRY_INTERVAL_SECONDS,
                        "append_dimensions": static,
                    }
                },
            },
        }

    def declaration(names: Sequence[str], extra: Sequence[str] = ()) -> dict[str, Any]:
        return {
            "source_labels": ["job"],
            "label_matcher": "^neuron-monitor$",
            "dimensions": [[m.DIM_STACK, m.DIM_POOL, *extra]],
            "metric_selectors": [f"^{re.escape(n)}$" for n in names],
        }

    return {
        "agent": agent,
        "logs": {
            "metrics_collected": {
                "prometheus": {
                    "log_group_name": log_group,
                    "prometheus_config_path": PROMETHEUS_CONFIG_PATH,
                    "emf_processor": {
                        "metric_declaration_dedup": True,
                        "metric_namespace": m.HOST_NAMESPACE,
                        # Memory is labelled host / neuron_device: keep the label, or the
                        # rollup would add host and device bytes into one series.
                        "metric_declaration": [
                            declaration([m.NEURON_CORE_UTILIZATION, m.NEURON_EXECUTION_ERRORS]),
                            declaration([m.NEURON_DEVICE_MEMORY_USED], [m.NEURON_MEMORY_LOCATION]),
                        ],
                    },
                }
            }
        },
    }


AGENT_CONFIG_PATH = "/opt/aws/amazon-cloudwatch-agent/etc/ecs-inference.json"
PROMETHEUS_CONFIG_PATH = "/opt/aws/amazon-cloudwatch-agent/etc/ecs-inference-prometheus.yaml"


def neuron_prometheus_config(stack: str, pool: str) -> str:
    """The agent's Prometheus scrape config (YAML is a JSON superset: written as JSON)."""
    doc = {
        "global": {"scrape_interval": "60s", "scrape_timeout": "10s"},
        "scrape_configs": [
            {
                "job_name": "neuron-monitor",
                "static_configs": [
                    {
                        "targets": [f"127.0.0.1:{NEURON_MONITOR_PORT}"],
                        "labels": {m.DIM_STACK: stack, m.DIM_POOL: pool},
                    }
                ],
            }
        ],
    }
    return json.dumps(doc, indent=2)


def host_telemetry_user_data(
    *, stack: str, pool: str, kind: Literal["gpu", "neuron"], region: str, log_group: str
) -> str:
    """Bash appended to the pool's user data: install the pinned agent, write its config, start
    it; on Neuron hosts also run `neuron-monitor | neuron-monitor-prometheus.py` (both from the
    AMI's aws-neuronx-tools) as a systemd unit. Failures are logged, never fatal: telemetry
    must not keep an instance from joining the cluster."""
    config = json.dumps(
        cloudwatch_agent_config(stack=stack, pool=pool, kind=kind, log_group=log_group), indent=2
    )
    url = (
        f"https://amazoncloudwatch-agent-{region}.s3.{region}.amazonaws.com/amazon_linux/amd64/"
        f"{CLOUDWATCH_AGENT_VERSION}/amazon-cloudwatch-agent.rpm"
    )
    lines = [
        "# --- host telemetry (ecs-inference components/specs/operations.py) ---",
        "install_telemetry() {",
        "  set -u",
        f"  local rpm=/tmp/amazon-cloudwatch-agent-{CLOUDWATCH_AGENT_VERSION}.rpm",
        f"  curl --fail --silent --show-error --retry 5 --output \"$rpm\" '{url}' || return 1",
        '  rpm -U --replacepkgs "$rpm" || return 1',
        f"  cat > '{AGENT_CONFIG_PATH}' <<'ECS_INFERENCE_AGENT'",
        config,
        "ECS_INFERENCE_AGENT",
    ]
    if kind == "neuron":
        lines += [
            f"  cat > '{PROMETHEUS_CONFIG_PATH}' <<'ECS_INFERENCE_PROM'",
            neuron_prometheus_config(stack, pool),
            "ECS_INFERENCE_PROM",
            "  cat > /etc/systemd/system/neuron-monitor-prometheus.service <<'ECS_INFERENCE_UNIT'",
            "[Unit]",
            "Description=neuron-monitor metrics on loopback for the CloudWatch agent",
            "After=network-online.target",
            "[Service]",
            "ExecStart=/bin/sh -c '/opt/aws/neuron/bin/neuron-monitor | "
            "/opt/aws/neuron/bin/neuron-monitor-prometheus.py --port "
            f"{NEURON_MONITOR_PORT}'",
            "Restart=always",
            "RestartSec=10",
            "DynamicUser=yes",
            "[Install]",
            "WantedBy=multi-user.target",
            "ECS_INFERENCE_UNIT",
            "  systemctl daemon-reload",
            "  systemctl enable --now neuron-monitor-prometheus.service || return 1",
        ]
    lines += [
        "  /opt/aws/amazon-cloudwatch-agent/bin/amazon-cloudwatch-agent-ctl -a fetch-config "
        f"-m ec2 -s -c 'file:{AGENT_CONFIG_PATH}'",
        "}",
        "install_telemetry || echo 'ecs-inference: host telemetry not installed; the instance "
        "serves without it' >&2",
    ]
    return "\n".join(lines) + "\n"


def host_telemetry_policy(
    *, kind: Literal["gpu", "neuron"], log_group_arn: str | None = None
) -> dict[str, Any]:
    """Instance-role statements for the agent: PutMetricData only into the host namespace
    (GPU), or only the EMF log group's streams (Neuron). Nothing else: the config is in user
    data (no SSM read), dimensions are static (no ec2:DescribeTags)."""
    if kind == "gpu":
        return {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Sid": "PublishHostMetrics",
                    "Effect": "Allow",
                    "Action": "cloudwatch:PutMetricData",
                    # PutMetricData has no resource-level permissions; the namespace condition
                    # is the only scope it supports.
                    "Resource": "*",
                    "Condition": {"StringEquals": {"cloudwatch:namespace": m.HOST_NAMESPACE}},
                }
            ],
        }
    if not log_group_arn:
        raise ObservabilityError("Neuron host telemetry needs the EMF log group's ARN")
    group = log_group_arn.removesuffix(":*")
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "WriteHostEmf",
                "Effect": "Allow",
                "Action": ["logs:CreateLogStream", "logs:PutLogEvents", "logs:DescribeLogStreams"],
                "Resource": [group, f"{group}:log-stream:*"],
            }
        ],
    }


def isfinite_number(value: object) -> bool:
    """True for a real, finite int/float (bool excluded): what every threshold must be."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def alarm_table(alarms: Sequence[AlarmSpec]) -> list[tuple[str, str, str]]:
    """(key, meaning, action) per distinct alarm kind, for docs and the preview."""
    seen: dict[str, tuple[str, str, str]] = {}
    for a in alarms:
        seen.setdefault(a.key, (a.key, a.meaning, a.action))
    return list(seen.values())


def scaling_decisions(specs: Mapping[str, ScalingPolicySpec]) -> dict[str, list[str]]:
    """service -> the scaling line of its decisions."""
    return {service: [spec.note] for service, spec in specs.items()}


# ------------------------------------------------------------------------------------------------
# the metrics sidecar container
# ------------------------------------------------------------------------------------------------

SIDECAR_USER = "10002:10002"
"""The image's non-root user (images/metrics/Dockerfile)."""


def metrics_sidecar_container(
    *,
    kind: str,
    stack: str,
    service: str,
    image: str,
    port: int,
    engine_container: str,
    log_configuration: Mapping[str, Any],
    startup_grace_seconds: int,
    interval_seconds: int = m.DEFAULT_INTERVAL_SECONDS,
    region: str | None = None,
) -> dict[str, Any]:
    """The sidecar's ECS container definition (camelCase, as RegisterTaskDefinition takes it).

    Not essential (its death must not stop the model), started after the engine container
    (`dependsOn` START: it has nothing to scrape before), no port, a soft memory reservation
    (`contracts.metrics.SIDECAR_MEMORY_RESERVATION_MIB`), read-only root file system, the
    image's non-root user, logs through the service's own awslogs configuration (the EMF lines
    must land where CloudWatch extracts them; `log_configuration` is the engine's).
    """
    if not 1 <= port <= 65535:
        raise ObservabilityError(f"metrics sidecar: port {port} out of range")
    env = {
        m.ENV_TARGET_URL: f"http://127.0.0.1:{port}/metrics",
        m.ENV_SPEC: m.scrape_spec(kind),
        m.ENV_STACK: stack,
        m.ENV_SERVICE: service,
        m.ENV_INTERVAL_SECONDS: str(interval_seconds),
        m.ENV_STARTUP_GRACE_SECONDS: str(max(startup_grace_seconds, 0)),
        # Every container of the stack gets its region (tasks cannot ask IMDS); default None
        # leaves them out.
        **({variable: region for variable in ENV_REGION_VARIABLES} if region else {}),
    }
    return {
        "name": m.SIDECAR_CONTAINER_NAME,
        "image": image,
        "essential": False,
        "environment": [{"name": k, "value": env[k]} for k in sorted(env)],
        "memoryReservation": m.SIDECAR_MEMORY_RESERVATION_MIB,
        "readonlyRootFilesystem": True,
        "user": SIDECAR_USER,
        "dependsOn": [{"containerName": engine_container, "condition": "START"}],
        # awslogs names the stream <prefix>/<container>/<task id>: same group, own stream.
        "logConfiguration": dict(log_configuration),
        # The sidecar exits 0 on SIGTERM after its current scrape (<= the scrape timeout).
        "stopTimeout": math.ceil(m.SCRAPE_TIMEOUT_SECONDS) + 2,
    }


def alarm_metric_count(alarms: Sequence[AlarmSpec]) -> int:
    """Metrics the alarms evaluate, as CloudWatch bills them (a metric-math alarm pays for each
    metric it reads, not for the expression)."""
    total = 0
    for alarm in alarms:
        queries = alarm.request.get("Metrics")
        total += sum(1 for q in queries if "MetricStat" in q) if queries else 1
    return total
