"""A queue worker's paging alarms (pure): every threshold from its config and its scaling target."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ecs_inference.specs.operations.alarms import (
    AlarmSettings,
    AlarmSpec,
    _alarm,
    _ci_metric,
    _dims,
    _expression,
    _stat,
    _tasks_below_desired,
    alarm_name,
)
from ecs_inference.specs.operations.errors import ObservabilityError


def queue_age_threshold_seconds(acceptable_latency_seconds: float, max_job_seconds: int) -> int:
    """How old a worker's oldest message may get: SQS ages a message from its enqueue until
    its delete, so a job that waited the acceptable latency and then ran the longest job is
    this old; beyond it, work is late."""
    return math.ceil(acceptable_latency_seconds + max_job_seconds)


@dataclass(frozen=True)
class _WorkerAlarmInputs:
    """What each of a worker's alarms is built from (`age`: the queue-age threshold in seconds;
    `sustained`: minutes the backlog alarm waits)."""

    stack: str
    worker: str
    queue_name: str
    dead_letter_queue_name: str
    cluster_name: str
    ecs_service_name: str
    acceptable_latency_seconds: float
    max_job_seconds: int
    backlog_target: float
    max_count: int
    max_receive_count: int
    age: int
    sustained: int


def _sqs(name: str, queue: str) -> dict[str, Any]:
    return {"Namespace": "AWS/SQS", "MetricName": name, "Dimensions": _dims(QueueName=queue)}


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
    c = _WorkerAlarmInputs(
        stack=stack,
        worker=worker,
        queue_name=queue_name,
        dead_letter_queue_name=dead_letter_queue_name,
        cluster_name=cluster_name,
        ecs_service_name=ecs_service_name,
        acceptable_latency_seconds=acceptable_latency_seconds,
        max_job_seconds=max_job_seconds,
        backlog_target=backlog_target,
        max_count=max_count,
        max_receive_count=max_receive_count,
        age=age,
        sustained=min(max(3, math.ceil(acceptable_latency_seconds / 60)), 1440),
    )
    return [
        _worker_queue_age(c),
        _worker_dlq_depth(c),
        _worker_backlog_at_max(c),
        _tasks_below_desired(
            stack, worker, cluster_name, ecs_service_name, settings.pending_minutes
        ),
    ]


def _worker_queue_age(c: _WorkerAlarmInputs) -> AlarmSpec:
    return AlarmSpec(
        "queue-age",
        _alarm(
            alarm_name(c.stack, c.worker, "queue-age"),
            f"{c.worker}: the oldest message is older than {c.age} s (acceptable latency "
            f"{c.acceptable_latency_seconds:g} s + longest job {c.max_job_seconds} s) for 3 "
            "minutes.",
            evaluation_periods=3,
            datapoints=3,
            threshold=c.age,
            comparison="GreaterThanThreshold",
            missing="notBreaching",
            metric={
                **_sqs("ApproximateAgeOfOldestMessage", c.queue_name),
                "Statistic": "Maximum",
            },
        ),
        "the oldest job has waited longer than the acceptable latency plus the longest job: "
        "work is late",
        "look at the worker's row: tasks at maxCount (see backlog-at-max), tasks short of "
        "desired (they fail to start), or jobs that keep failing and return to the queue "
        "(the worker's log stream)",
    )


def _worker_dlq_depth(c: _WorkerAlarmInputs) -> AlarmSpec:
    return AlarmSpec(
        "dlq-depth",
        _alarm(
            alarm_name(c.stack, c.worker, "dlq-depth"),
            f"{c.worker}: a message reached the dead-letter queue (its job failed "
            f"{c.max_receive_count} times).",
            evaluation_periods=1,
            datapoints=1,
            threshold=1,
            comparison="GreaterThanOrEqualToThreshold",
            missing="notBreaching",
            metric={
                **_sqs("ApproximateNumberOfMessagesVisible", c.dead_letter_queue_name),
                "Statistic": "Maximum",
            },
        ),
        "a job failed maxReceiveCount times and was moved to the dead-letter queue; it will "
        "not be retried by itself",
        "read the worker's log stream for the failure; fix it, then redrive the DLQ "
        "(`aws sqs start-message-move-task --source-arn <dlq arn>`) or delete the messages",
    )


def _worker_backlog_at_max(c: _WorkerAlarmInputs) -> AlarmSpec:
    return AlarmSpec(
        "backlog-at-max",
        _alarm(
            alarm_name(c.stack, c.worker, "backlog-at-max"),
            f"{c.worker}: more than {c.backlog_target:g} messages per task with all {c.max_count} "
            f"tasks running for {c.sustained} minutes.",
            evaluation_periods=c.sustained,
            datapoints=c.sustained,
            threshold=c.backlog_target,
            comparison="GreaterThanThreshold",
            missing="notBreaching",
            metrics=[
                _stat(
                    "visible", _sqs("ApproximateNumberOfMessagesVisible", c.queue_name), "Maximum"
                ),
                _stat(
                    "running",
                    _ci_metric("RunningTaskCount", c.cluster_name, c.ecs_service_name),
                    "Average",
                ),
                _expression(
                    f"IF(FILL(running, 0) >= {c.max_count}, visible / FILL(running, 1), 0)",
                    "messages waiting per task while at the maximum task count",
                ),
            ],
        ),
        "the backlog per task stays above the scaling target with every task running: work "
        "arrives faster than maxCount tasks finish it",
        "raise `maxCount` or `concurrency`, or make jobs shorter; check that the gateway "
        "and the models behind it keep up (their rows)",
    )
