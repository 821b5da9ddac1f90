"""`platform.workers.<name>`: a queue worker on Fargate that calls models through the gateway.

`WorkerConfig` is both the stack file's section (camelCase keys) and the Python input of
`QueueWorker`: a program that builds one gets the same validators as the stack file."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from pydantic import Field, model_validator

from ecs_inference.contracts import aws_limits
from ecs_inference.services.input import FargateServiceConfig

_RECEIVES = aws_limits.SQS_MAX_RECEIVE_COUNT_RANGE
_RETENTION = (aws_limits.SQS_RETENTION_MIN, aws_limits.SQS_RETENTION_MAX)


class WorkerConfig(FargateServiceConfig[int]):
    """A queue worker on Fargate: the user's image takes jobs from its own SQS queue (with a
    dead-letter queue) and calls models through the gateway (`GATEWAY_URL`, `QUEUE_URL`
    injected). It scales on backlog per task, to zero when the queue is empty."""

    SCALES_FROM_ZERO: ClassVar[bool] = True  # the queue's backlog exists with zero tasks
    DEFAULTS: ClassVar[Mapping[str, object]] = {
        "cpu": 256,
        "memory_mib": 512,
        # None at deploy time and none kept on an empty queue: the queue decides.
        "desired_count": 0,
        "min_count": 0,
        "max_count": 10,
    }

    max_job_seconds: int = Field(ge=1)
    """Longest job; the queue's visibility timeout is derived from it (SQS allows at most 12 h
    in total)."""
    job_seconds: float = Field(gt=0)
    """Typical time per job (sets the backlog a task may hold)."""
    acceptable_latency_seconds: float = Field(gt=0)
    """How long a job may wait before it starts; with jobSeconds it sets the scaling target."""
    concurrency: int = Field(1, ge=1, le=1000)
    """Jobs one task works on at once (`WORKER_CONCURRENCY`); default 1."""
    max_receive_count: int = Field(3, ge=_RECEIVES[0], le=_RECEIVES[1])
    """Receives before a message moves to the dead-letter queue; default 3."""
    retention_seconds: int = Field(345_600, ge=_RETENTION[0], le=_RETENTION[1])
    """How long an unprocessed message is kept, in seconds; default 345600 (SQS's 4 days; the
    DLQ keeps messages 14 days)."""
    idle_minutes: int = Field(15, ge=1, le=aws_limits.ALARM_EVALUATION_MAX_SECONDS // 60)
    """Minutes with nothing waiting or in flight before scaling to zero; default 15 (the alarm
    that scales in evaluates at most a day)."""
    kms_key_id: str | None = None
    """KMS key for queue encryption; unset: SQS-managed keys (SSE-SQS)."""
    result_queue: bool = False
    """Create a result queue (`<queue>-results`, encrypted like the work queue) that the worker
    may send to (`RESULT_QUEUE_URL`); off: none (images/worker then logs each result)."""

    @model_validator(mode="after")
    def _worker(self) -> WorkerConfig:
        if self.image is None:
            raise ValueError("a worker needs `image`: its own image, pinned by tag or digest")
        return self
