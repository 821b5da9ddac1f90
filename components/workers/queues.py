"""A queue worker's queues (pure): their names, their attributes and what SQS would refuse of
them, and the variables the worker's component sets in its container."""

from __future__ import annotations

import json
import math

from ecs_inference.contracts.aws_limits import (
    SQS_LONG_POLL_MAX,
    SQS_MAX_RECEIVE_COUNT_RANGE,
    SQS_RETENTION_MAX,
    SQS_RETENTION_MIN,
    SQS_VISIBILITY_TIMEOUT_MAX,
    name_rule,
)
from ecs_inference.contracts.worker import (
    ENV_CONCURRENCY,
    ENV_GATEWAY_URL,
    ENV_QUEUE_URL,
    ENV_RESULT_QUEUE_URL,
    ENV_TASK_PROTECTION_MINUTES,
    ENV_VISIBILITY_TIMEOUT,
)


def task_protection_minutes(visibility_timeout_seconds: int) -> int:
    """How long a worker protects itself per message: the visibility timeout, in whole minutes
    (after that the message is someone else's anyway)."""
    return max(1, math.ceil(visibility_timeout_seconds / 60))


def worker_environment(
    *,
    queue_url: str,
    gateway_url: str,
    visibility_timeout_seconds: int,
    concurrency: int,
    result_queue_url: str | None = None,
) -> dict[str, str]:
    """The variables the worker's component sets in its container (`RESULT_QUEUE_URL` with a
    result queue's URL; default none)."""
    env = {
        ENV_QUEUE_URL: queue_url,
        ENV_GATEWAY_URL: gateway_url,
        ENV_VISIBILITY_TIMEOUT: str(visibility_timeout_seconds),
        ENV_TASK_PROTECTION_MINUTES: str(task_protection_minutes(visibility_timeout_seconds)),
        ENV_CONCURRENCY: str(concurrency),
    }
    return env | ({} if result_queue_url is None else {ENV_RESULT_QUEUE_URL: result_queue_url})


MANAGED_ENV = tuple(
    worker_environment(
        queue_url="",
        gateway_url="",
        visibility_timeout_seconds=1,
        concurrency=1,
        result_queue_url="",
    )
)
"""The variables the worker's component sets; `environment` and `secrets` may not name them."""


def queue_names(project: str, stack: str, worker: str) -> tuple[str, str, str]:
    """(work queue, dead-letter queue, result queue) names: `<project>-<stack>-<worker>[-dlq|
    -results]`. Fixed names, so the queue URLs and their metrics' QueueName are known at preview
    (the container definition and the alarms show them) and unique per stack in an account and
    region."""
    base = f"{project}-{stack}-{worker}"
    return base, f"{base}-dlq", f"{base}-results"


def queue_name_problems(project: str, stack: str, worker: str) -> list[str]:
    """Why SQS would refuse one of the worker's queue names (none: it would not)."""
    rule = name_rule("aws:sqs/queue:Queue")
    assert rule is not None
    return [
        f"queue name {n!r}: {'; '.join(problems)} (at most {rule.max_length} letters, digits, "
        "'-' or '_': shorten the project, stack or worker name)"
        for n in queue_names(project, stack, worker)
        if (problems := rule.problems(n))
    ]


def queue_attribute_problems(
    *,
    visibility_timeout_seconds: int,
    retention_seconds: int = 345_600,
    receive_wait_seconds: int = SQS_LONG_POLL_MAX,
    max_receive_count: int = 3,
) -> list[str]:
    """What SQS would refuse of `queue_attributes`' values (empty: nothing)."""
    ranges = [
        ("VisibilityTimeout", visibility_timeout_seconds, (0, SQS_VISIBILITY_TIMEOUT_MAX)),
        ("MessageRetentionPeriod", retention_seconds, (SQS_RETENTION_MIN, SQS_RETENTION_MAX)),
        ("ReceiveMessageWaitTimeSeconds", receive_wait_seconds, (0, SQS_LONG_POLL_MAX)),
        ("maxReceiveCount", max_receive_count, SQS_MAX_RECEIVE_COUNT_RANGE),
    ]
    return [
        f"{name} {value} outside {low}-{high}"
        for name, value, (low, high) in ranges
        if not low <= value <= high
    ]


def queue_attributes(
    *,
    visibility_timeout_seconds: int,
    retention_seconds: int = 345_600,
    receive_wait_seconds: int = SQS_LONG_POLL_MAX,
    dead_letter_arn: str | None = None,
    max_receive_count: int = 3,
    kms_key_id: str | None = None,
) -> dict[str, str]:
    """CreateQueue/SetQueueAttributes `Attributes` (every value a string, as the API wants).

    Defaults: retention 4 days (SQS's default), long polling 20 s (fewer empty receives), no
    dead-letter queue (the DLQ itself), 3 receives before a message moves to the DLQ, SSE with
    SQS-managed keys unless `kms_key_id` is given. The values are the plan's (the schema bounds
    retention, the plan derives the visibility timeout); `queue_attribute_problems` checks
    values a program chose by hand.
    """
    attrs = {
        "VisibilityTimeout": str(visibility_timeout_seconds),
        "MessageRetentionPeriod": str(retention_seconds),
        "ReceiveMessageWaitTimeSeconds": str(receive_wait_seconds),
    }
    if kms_key_id is None:
        attrs["SqsManagedSseEnabled"] = "true"
    else:
        attrs["KmsMasterKeyId"] = kms_key_id
    if dead_letter_arn is not None:
        attrs["RedrivePolicy"] = json.dumps(
            {"deadLetterTargetArn": dead_letter_arn, "maxReceiveCount": max_receive_count}
        )
    return attrs
