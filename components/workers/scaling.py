"""A queue worker's scaling policies, as pure values.

A worker (`workers.<name>`) takes jobs from an SQS queue; its latency is dominated by an upstream
model call, so it is scaled on how much work waits, not on CPU. AWS documents the metric for this
("scaling based on Amazon SQS"): **backlog per task** = `ApproximateNumberOfMessagesVisible` of
the queue / the service's running task count, as CloudWatch metric math, tracked at a target of
`acceptable latency / time per job` (× jobs a task works on at once): with that many messages
waiting per task, the last one starts within the acceptable latency.

Three Application Auto Scaling policies on the worker's ECS service, built here in the API's own
request shapes (checked against botocore's models in the tests):

- **target tracking** on backlog per task: scales out and in while at least one task runs;
- **scale out from zero**, a step policy (ExactCapacity) on an alarm over the queue. With no task
  running, backlog per task is `visible / 0`, which CloudWatch returns as no data, so target
  tracking cannot act; the alarm's metric is the number of visible messages *only while no task
  runs* (`IF(running < 1, visible, 0)`), so it never fights target tracking once tasks exist, and
  its steps jump straight to the capacity the backlog needs (a burst does not wait for 1, 2, 4...);
- **scale in to zero**, a step policy (ExactCapacity 0) on an alarm that the queue has been empty
  *including messages in flight* for `idle_minutes`: target tracking sees only visible messages and
  would otherwise leave a task idling at a backlog of 0 (its scale-in needs 15 minutes of low data
  points and stops at whatever the last computation gave), or stop one that is still working.

Jobs in flight when a scale-in happens are protected by ECS task scale-in protection (the worker
sets it while it holds a message, for at most the visibility timeout); see docs/gateway.md.

`desired_count(...)` evaluates these policies exactly as generated (step intervals relative to the
alarm threshold, target tracking's proportional rule), so tests and the preview can show what a
backlog table does.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from ecs_inference.contracts.aws_limits import STEP_ADJUSTMENTS_MAX
from ecs_inference.workers.input import WorkerConfig

SQS_NAMESPACE = "AWS/SQS"
# Container Insights (on in this project's clusters) publishes the running task count per
# service each minute; AWS/ECS has no task-count metric.
CONTAINER_INSIGHTS_NAMESPACE = "ECS/ContainerInsights"
METRIC_PERIOD_SECONDS = 60
"""SQS and Container Insights both publish at 1-minute resolution."""


# --------------------------------------------------------------------------------------------
# metric math
# --------------------------------------------------------------------------------------------


def _queue_metric(queue_name: Any, visible: bool = True) -> dict[str, Any]:
    """The queue's visible messages, or (`visible` False) those in flight."""
    return {
        "Namespace": SQS_NAMESPACE,
        "MetricName": f"ApproximateNumberOfMessages{'' if visible else 'Not'}Visible",
        "Dimensions": [{"Name": "QueueName", "Value": queue_name}],
    }


def _running_metric(cluster_name: Any, service_name: Any) -> dict[str, Any]:
    return {
        "Namespace": CONTAINER_INSIGHTS_NAMESPACE,
        "MetricName": "RunningTaskCount",
        "Dimensions": [
            {"Name": "ClusterName", "Value": cluster_name},
            {"Name": "ServiceName", "Value": service_name},
        ],
    }


def backlog_per_task_queries(
    queue_name: Any, cluster_name: Any, service_name: Any
) -> list[dict[str, Any]]:
    """Target tracking's metric math (TargetTrackingMetricDataQuery list): visible messages
    (Sum) / running tasks (Average), the expression the only one returning data."""
    return [
        {
            "Id": "visible",
            "MetricStat": {"Metric": _queue_metric(queue_name), "Stat": "Sum"},
            "ReturnData": False,
        },
        {
            "Id": "running",
            "MetricStat": {
                "Metric": _running_metric(cluster_name, service_name),
                "Stat": "Average",
            },
            "ReturnData": False,
        },
        {
            "Id": "backlog_per_task",
            "Expression": "visible / running",
            "Label": "Messages waiting per running task",
            "ReturnData": True,
        },
    ]


def _alarm_queries(expression: str, label: str, metrics: dict[str, dict[str, Any]], stat: str):
    queries: list[dict[str, Any]] = [
        {
            "Id": query_id,
            "MetricStat": {"Metric": metric, "Period": METRIC_PERIOD_SECONDS, "Stat": stat},
            "ReturnData": False,
        }
        for query_id, metric in metrics.items()
    ]
    queries.append({"Id": "signal", "Expression": expression, "Label": label, "ReturnData": True})
    return queries


# --------------------------------------------------------------------------------------------
# policies
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Step:
    """One step adjustment: metric minus threshold in [lower, upper) -> exact `capacity`
    (`upper` None: unbounded)."""

    lower: float
    upper: float | None
    capacity: int

    def api(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "MetricIntervalLowerBound": self.lower,
            "ScalingAdjustment": self.capacity,
        }
        if self.upper is not None:
            out["MetricIntervalUpperBound"] = self.upper
        return out


FROM_ZERO_THRESHOLD = 1.0
"""The scale-out-from-zero alarm fires at one visible message."""
TO_ZERO_THRESHOLD = 0.5
"""The scale-in-to-zero alarm fires below half a message, i.e. at zero: a threshold between
whole counts keeps the step interval unambiguous (AWS treats the bounds differently above and
below the threshold)."""


def from_zero_steps(target: float, max_count: int) -> tuple[Step, ...]:
    """Steps of the scale-out-from-zero policy: the task count target tracking would choose for
    the backlog (ceil(visible / target)), in at most `STEP_ADJUSTMENTS_MAX` bands. When
    `max_count` exceeds that, the first half of the bands are exact (1, 2, 3... tasks: a trickle
    gets one task) and the rest spaced evenly up to `max_count`, each rounding up to its band's
    top (a burst gets enough tasks at once; target tracking trims the excess a minute later)."""
    if max_count < 1:
        raise ValueError("a worker that scales from zero needs max_count >= 1")
    if max_count <= STEP_ADJUSTMENTS_MAX:
        capacities = list(range(1, max_count + 1))
    else:
        exact = STEP_ADJUSTMENTS_MAX // 2
        spread = STEP_ADJUSTMENTS_MAX - exact
        capacities = list(range(1, exact + 1)) + [
            math.ceil(exact + j * (max_count - exact) / spread) for j in range(1, spread + 1)
        ]
    steps: list[Step] = []
    lower = 0.0
    for i, capacity in enumerate(capacities):
        last = i == len(capacities) - 1
        # A visible count v needs `capacity` tasks while v <= capacity * target; messages are
        # whole, so the band ends below floor(capacity * target) + 1 (offset by the threshold).
        # (+1e-9: a target derived in floating point, 1.9999999999999432, means 2 per task.)
        upper = (
            None if last else float(math.floor(capacity * target + 1e-9) + 1 - FROM_ZERO_THRESHOLD)
        )
        if upper is not None and upper <= lower:
            continue  # empty band (target below 1 message per task): the next one covers it
        steps.append(Step(lower, upper, capacity))
        if upper is not None:
            lower = upper
    return tuple(steps)


MetricName = TypeVar("MetricName")


@dataclass(frozen=True)
class WorkerScaling(Generic[MetricName]):
    """Every scaling decision for one worker service.

    `target` backlog per task; the worker's input (`worker`) bounds the scalable target
    (`minCount`, `maxCount`) and waits `idleMinutes` before scaling in to zero; cooldowns in
    seconds. `queue_name`, `cluster_name` and `service_name` name the metrics: strings, or (in a
    component) values only known when the resources exist, which end up unchanged in the same
    places of the requests.
    """

    queue_name: MetricName
    cluster_name: MetricName
    service_name: MetricName
    target: float
    worker: WorkerConfig
    scale_out_cooldown: int = 60
    scale_in_cooldown: int = 300

    @property
    def from_zero(self) -> tuple[Step, ...]:
        return from_zero_steps(self.target, self.worker.max_count)

    @property
    def scales_to_zero(self) -> bool:
        return self.worker.min_count == 0

    # -- API requests ---------------------------------------------------------------------

    def target_tracking_configuration(self) -> dict[str, Any]:
        """PutScalingPolicy `TargetTrackingScalingPolicyConfiguration`."""
        return {
            "TargetValue": float(self.target),
            "CustomizedMetricSpecification": {
                "Metrics": backlog_per_task_queries(
                    self.queue_name, self.cluster_name, self.service_name
                )
            },
            "ScaleOutCooldown": self.scale_out_cooldown,
            "ScaleInCooldown": self.scale_in_cooldown,
            "DisableScaleIn": False,
        }

    def from_zero_policy_configuration(self) -> dict[str, Any]:
        """PutScalingPolicy `StepScalingPolicyConfiguration` of the scale-out-from-zero policy."""
        return _exact_steps([s.api() for s in self.from_zero], self.scale_out_cooldown)

    def to_zero_policy_configuration(self) -> dict[str, Any]:
        """PutScalingPolicy `StepScalingPolicyConfiguration` of the scale-in-to-zero policy."""
        # The alarm fires below TO_ZERO_THRESHOLD: any breach (metric below it) -> 0 tasks.
        steps = [{"MetricIntervalUpperBound": 0.0, "ScalingAdjustment": 0}]
        return _exact_steps(steps, self.scale_in_cooldown)

    def from_zero_alarm(
        self, alarm_name: str | None = None, policy_arn: Any = None
    ) -> dict[str, Any]:
        """PutMetricAlarm request: visible messages while no task runs (missing task counts,
        as for a service that has never run, count as zero)."""
        return _named(alarm_name, policy_arn) | {
            "AlarmDescription": "Work waiting and no worker task running: scale out from zero",
            "ActionsEnabled": True,
            "Metrics": _alarm_queries(
                "IF(FILL(running, 0) < 1, visible, 0)",
                "Visible messages while no task runs",
                {
                    "visible": _queue_metric(self.queue_name),
                    "running": _running_metric(self.cluster_name, self.service_name),
                },
                "Maximum",
            ),
            "EvaluationPeriods": 1,
            "DatapointsToAlarm": 1,
            "Threshold": FROM_ZERO_THRESHOLD,
            "ComparisonOperator": "GreaterThanOrEqualToThreshold",
            "TreatMissingData": "notBreaching",
        }

    def to_zero_alarm(
        self, alarm_name: str | None = None, policy_arn: Any = None
    ) -> dict[str, Any]:
        """PutMetricAlarm request: no visible and no in-flight message for `idle_minutes`."""
        return _named(alarm_name, policy_arn) | {
            "AlarmDescription": (
                f"Nothing waiting or in flight for {self.worker.idle_minutes} min: scale in to zero"
            ),
            "ActionsEnabled": True,
            "Metrics": _alarm_queries(
                "visible + in_flight",
                "Messages waiting or being worked on",
                {
                    "visible": _queue_metric(self.queue_name),
                    "in_flight": _queue_metric(self.queue_name, visible=False),
                },
                "Maximum",
            ),
            "EvaluationPeriods": self.worker.idle_minutes,
            "DatapointsToAlarm": self.worker.idle_minutes,
            "Threshold": TO_ZERO_THRESHOLD,
            "ComparisonOperator": "LessThanThreshold",
            # SQS stops publishing for a queue that has been empty for hours: that is empty too.
            "TreatMissingData": "breaching",
        }

    def summary(self) -> str:
        worker = self.worker
        return (
            f"scale on backlog per task (visible / running) at target {self.target:g}, "
            f"{worker.min_count}-{worker.max_count} tasks; from zero by steps "
            f"{', '.join(_step_text(s) for s in self.from_zero)}"
            + (f"; to zero after {worker.idle_minutes} min empty" if self.scales_to_zero else "")
        )


def _exact_steps(steps: list[dict[str, Any]], cooldown: int) -> dict[str, Any]:
    """A step policy setting the task count to the step's capacity on the alarm's maximum."""
    return {
        "AdjustmentType": "ExactCapacity",
        "StepAdjustments": steps,
        "Cooldown": cooldown,
        "MetricAggregationType": "Maximum",
    }


def _named(alarm_name: str | None, policy_arn: Any) -> dict[str, Any]:
    """AlarmName and AlarmActions when known (a component lets the provider name the alarm and
    sets the action to the policy's ARN itself)."""
    out: dict[str, Any] = {}
    if alarm_name is not None:
        out["AlarmName"] = alarm_name
    if policy_arn is not None:
        out["AlarmActions"] = [policy_arn]
    return out


def _step_text(step: Step) -> str:
    low = int(step.lower + FROM_ZERO_THRESHOLD)
    if step.upper is None:
        return f">={low} msgs -> {step.capacity}"
    return f"{low}-{int(step.upper + FROM_ZERO_THRESHOLD) - 1} -> {step.capacity}"


# --------------------------------------------------------------------------------------------
# evaluation (what Application Auto Scaling does with the generated policies)
# --------------------------------------------------------------------------------------------


def step_capacity(steps: Sequence[dict[str, Any]], threshold: float, value: float) -> int | None:
    """The ScalingAdjustment of the step whose interval holds `value - threshold`, or None.

    As Application Auto Scaling documents it: at or above the threshold the lower bound is
    inclusive and the upper exclusive; below it, the lower bound is exclusive and the upper
    inclusive; a missing bound is unbounded.
    """
    offset = value - threshold
    for step in steps:
        lower = step.get("MetricIntervalLowerBound", -math.inf)
        upper = step.get("MetricIntervalUpperBound", math.inf)
        inside = lower <= offset < upper if offset >= 0 else lower < offset <= upper
        if inside:
            return int(step["ScalingAdjustment"])
    return None


def target_tracking_capacity(running: int, metric: float, target: float) -> int:
    """Target tracking's proportional rule: ceil(running × metric / target)."""
    # The tolerance absorbs float error (3 × (10 / 3) / 10 is 1.0000000000000002), not policy.
    return math.ceil(running * metric / target - 1e-9)


@dataclass(frozen=True)
class Decision:
    """`count` tasks desired and the policy that chose it."""

    count: int
    reason: str


def desired_count(
    scaling: WorkerScaling, *, visible: int, in_flight: int, running: int, idle_for_minutes: int = 0
) -> Decision:
    """What the generated policies set the service's desired count to, for one minute's data
    points: `visible` and `in_flight` messages, `running` tasks, and how long the queue has
    been completely empty (`idle_for_minutes`). A steady-state view: cooldowns and target
    tracking's own alarm periods are not modelled."""
    if running == 0:
        if visible < FROM_ZERO_THRESHOLD:
            return Decision(_clamp(scaling, 0), "no work waiting")
        config = scaling.from_zero_policy_configuration()
        capacity = step_capacity(config["StepAdjustments"], FROM_ZERO_THRESHOLD, visible)
        assert capacity is not None, "the last step is unbounded"
        return Decision(_clamp(scaling, capacity), "scale out from zero (step)")
    idle = visible + in_flight == 0 and idle_for_minutes >= scaling.worker.idle_minutes
    if scaling.scales_to_zero and idle:
        config = scaling.to_zero_policy_configuration()
        capacity = step_capacity(config["StepAdjustments"], TO_ZERO_THRESHOLD, 0.0)
        assert capacity == 0
        return Decision(0, f"queue empty for {scaling.worker.idle_minutes} min (step)")
    tracked = target_tracking_capacity(running, visible / running, scaling.target)
    # Below the running count, tasks that hold a message stay (scale-in protection) until their
    # job ends; the desired count is what target tracking sets all the same.
    return Decision(_clamp(scaling, tracked), "target tracking")


def _clamp(scaling: WorkerScaling, count: int) -> int:
    return max(scaling.worker.min_count, min(scaling.worker.max_count, count))
