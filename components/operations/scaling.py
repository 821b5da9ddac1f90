"""Scaling on the engine's load (pure): the target-tracking policy of an LLM service.

Why not ALBRequestCountPerTarget by default: one LLM request may be 20 tokens or 20,000; a
request count says little about load. The engine knows: requests running (in the batch) and
waiting (queued). Their sum per task against the batch size the engine was launched with
(`maxConcurrentSequences`, or the Neuron batch size) is the load signal; KV-cache usage is the
alternative for long-context traffic, where memory fills before the batch does. Every builder
returns the AWS API request's own shape (PascalCase, as botocore spells it).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, cast

from ecs_inference import engines
from ecs_inference.contracts import metrics as m
from ecs_inference.contracts.aws_limits import SCALING_COOLDOWN_MAX_SECONDS
from ecs_inference.operations.errors import ObservabilityError

ScalingMetric = Literal["engineLoad", "kvCache", "albRequests"]


# Application Auto Scaling: a target-tracking policy name is 1-256 chars.
COOLDOWN_MAX_SECONDS = SCALING_COOLDOWN_MAX_SECONDS


# Target tracking's own alarms (AWS-managed): scale out after 3 one-minute periods above the
# target, scale in after 15 below it. Stated in the decision text; not configurable.
TT_SCALE_OUT_MINUTES, TT_SCALE_IN_MINUTES = 3, 15


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


def _query(id: str, metric: str, stack: str, service: str, **rest: Any) -> dict[str, Any]:
    """A metric-math query reading a sidecar metric, per service (the Average over its tasks)."""
    dims = [{"Name": m.DIM_STACK, "Value": stack}, {"Name": m.DIM_SERVICE, "Value": service}]
    stat = {"Metric": {"Namespace": m.NAMESPACE, "MetricName": metric, "Dimensions": dims}}
    return {"Id": id, "MetricStat": {**stat, "Stat": "Average"}, **rest}


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


def engine_load_queries(stack: str, service: str) -> list[dict[str, Any]]:
    """Metric math for `engineLoad`: requests waiting + running per task."""
    return [
        _query("waiting", m.REQUESTS_WAITING, stack, service, ReturnData=False),
        _query("running", m.REQUESTS_RUNNING, stack, service, ReturnData=False),
        {
            "Id": "load",
            "Expression": "waiting + running",
            "Label": "requests waiting + running per task",
            "ReturnData": True,
        },
    ]


def kv_cache_queries(stack: str, service: str) -> list[dict[str, Any]]:
    """The metric of `kvCache`: KV-cache usage per task, in percent."""
    label = "KV-cache usage per task (%)"
    return [_query("kv", m.KV_CACHE_USAGE, stack, service, Label=label, ReturnData=True)]


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
    reads: only `albRequests`. The input bounds the settings and refuses another metric for such
    an engine (`models.input.AutoscalingConfig`, `scaling_metric_problem`).
    """
    serving = engines.get(engine)
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
        queries = kv_cache_queries(stack, service)
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
        queries = engine_load_queries(stack, service)
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


def snake_case(value: Any) -> Any:
    """`value` with every member name of its mappings in snake case, as the provider names an
    API request's members (`TargetValue`: `target_value`): a TargetTrackingScalingPolicy
    configuration in the API's shape becomes what `aws.appautoscaling.Policy` takes."""
    if isinstance(value, Mapping):
        members = cast("Mapping[str, Any]", value)
        return {
            re.sub(r"(?<!^)(?=[A-Z])", "_", k).lower(): snake_case(v) for k, v in members.items()
        }
    if isinstance(value, list):
        return [snake_case(v) for v in cast("list[Any]", value)]
    return value
