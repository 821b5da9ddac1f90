"""What the operations watch (`Watch`: the stack's services, accelerator pools, gateway and
workers, decided across components) and the placeholders that stand for what is known only at
deploy time (ARN suffixes, generated names) in the alarms and the dashboard, so the plan counts
and names them at preview and the Operations component swaps each placeholder for its Output."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from ecs_inference.specs.gateway import LiteLLMGatewaySpec

if TYPE_CHECKING:
    # Only a type here: the workers' decisions import the alarms, which read this module.
    from ecs_inference.workers.decisions import WorkerDecisions


@dataclass(frozen=True)
class WatchedService:
    """A load-balanced model or re-ranker service."""

    service: str
    kind: str
    """The model's engine (its registry name) or `reranker`."""
    min_count: int
    """Below one task, no-healthy-target is not an alarm."""
    pool: str | None = None
    """The pool it runs on; None for a Fargate re-ranker."""
    engine_metrics: bool = True
    """The task runs the metrics sidecar (the engine alarms and graphs read its series)."""


@dataclass(frozen=True, kw_only=True)
class Watch:
    """What the stack's alarms and dashboard cover."""

    services: tuple[WatchedService, ...] = ()
    """Model and re-ranker services."""
    pools: Mapping[str, Literal["gpu", "neuron"]] = field(
        default_factory=dict[str, Literal["gpu", "neuron"]]
    )
    """Pools whose hosts run the CloudWatch agent, by name: their panels, and the GPU memory
    alarm of a GPU pool."""
    gateway: LiteLLMGatewaySpec | None = None
    """The AI gateway; None: none."""
    workers: tuple[WorkerDecisions, ...] = ()
    """Queue workers (their decisions, which hold their input)."""

    def pools_of(self, kind: str) -> list[str]:
        return [name for name, k in self.pools.items() if k == kind]


# Placeholders for the deploy-time values inside the requests (they never reach AWS).
LOAD_BALANCER = "app/placeholder-lb/0000000000000000"
CLUSTER = "placeholder-cluster"
CLUSTER_ARN = "arn:aws:ecs:us-east-1:000000000000:cluster/placeholder-cluster"
# The placeholders' subjects: a service by its name; the gateway and the workers with a leading
# '_', which no service name has.
GATEWAY_KEY = "_gateway"


def target_group(subject: str) -> str:
    """The placeholder of `subject`'s target group ARN suffix."""
    return f"targetgroup/placeholder-{subject}/0000000000000000"


def ecs_service(subject: str) -> str:
    """The placeholder of `subject`'s ECS service name."""
    return f"placeholder-service-{subject}"


def queue(worker: str) -> str:
    """The placeholder of a worker's queue name."""
    return f"placeholder-queue-{worker}"


def dead_letter_queue(worker: str) -> str:
    """The placeholder of a worker's dead-letter queue name."""
    return f"placeholder-dlq-{worker}"


def worker_key(worker: str) -> str:
    return f"_worker-{worker}"


def worker_label(worker: str) -> str:
    """The subject label of a worker's alarms (`worker-<name>`: workers and services may share
    a name)."""
    return f"worker-{worker}"
