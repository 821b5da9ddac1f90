"""The stack's alarm table (pure): which subject gets which alarms, for the plan (which counts
and names them) and the Operations component (which creates them, with placeholders for the
deploy-time dimensions)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ecs_inference.specs.operations.alarms import (
    AlarmSettings,
    AlarmSpec,
    gateway_alarms,
    pool_alarms,
    service_alarms,
    worker_alarms,
)

if TYPE_CHECKING:
    # Only types here: the workers' and the gateway's decisions import the config, which
    # imports this package.
    from ecs_inference.gateway.decisions import GatewayDecisions
    from ecs_inference.workers.decisions import WorkerDecisions


@dataclass(frozen=True)
class ServiceSubject:
    """A model or re-ranker service to watch: `kind` is the engine or `reranker`; the target
    group's ARN suffix and the ECS service name are the alarms' dimensions."""

    service: str
    kind: str
    min_count: int
    target_group: str
    ecs_service_name: str
    engine_metrics: bool = True


@dataclass(frozen=True)
class GatewaySubject:
    """The AI gateway to watch under `label` (its path): its spec holds the thresholds."""

    label: str
    spec: GatewayDecisions
    target_group: str
    ecs_service_name: str


@dataclass(frozen=True)
class WorkerSubject:
    """A queue worker to watch under `label`: its decisions (with its input: the job timings
    the queue-age alarm judges against) and its queues' names."""

    label: str
    worker: WorkerDecisions
    queue_name: str
    dead_letter_queue_name: str
    ecs_service_name: str


def stack_alarms(
    *,
    stack: str,
    settings: AlarmSettings,
    load_balancer: str,
    cluster_name: str,
    services: Sequence[ServiceSubject] = (),
    gpu_pools: Sequence[str] = (),
    gateway: GatewaySubject | None = None,
    workers: Sequence[WorkerSubject] = (),
) -> list[tuple[str, AlarmSpec]]:
    """Every alarm of a stack with the label of the subject it watches. GPU pools are those whose
    hosts run the CloudWatch agent (the GPU memory alarm reads its metrics)."""
    out: list[tuple[str, AlarmSpec]] = []
    for s in services:
        specs = service_alarms(
            stack=stack,
            service=s.service,
            kind=s.kind,
            load_balancer=load_balancer,
            target_group=s.target_group,
            cluster_name=cluster_name,
            ecs_service_name=s.ecs_service_name,
            min_count=s.min_count,
            settings=settings,
            engine_metrics=s.engine_metrics,
        )
        out += [(s.service, spec) for spec in specs]
    for pool in gpu_pools:
        out += [
            (pool, spec)
            for spec in pool_alarms(stack=stack, pool=pool, kind="gpu", settings=settings)
        ]
    if gateway is not None:
        gw = gateway.spec
        specs = gateway_alarms(
            stack=stack,
            service=gw.input.path,
            load_balancer=load_balancer,
            target_group=gateway.target_group,
            cluster_name=cluster_name,
            ecs_service_name=gateway.ecs_service_name,
            min_count=gw.input.min_count,
            max_count=gw.input.max_count,
            target_cpu_percent=gw.input.target_cpu_percent,
            longest_request_seconds=gw.longest_request_seconds,
            settings=settings,
        )
        out += [(gateway.label, spec) for spec in specs]
    for w in workers:
        specs = worker_alarms(
            stack=stack,
            worker=w.worker.name,
            queue_name=w.queue_name,
            dead_letter_queue_name=w.dead_letter_queue_name,
            cluster_name=cluster_name,
            ecs_service_name=w.ecs_service_name,
            acceptable_latency_seconds=w.worker.input.acceptable_latency_seconds,
            max_job_seconds=w.worker.input.max_job_seconds,
            backlog_target=w.worker.backlog_target,
            max_count=w.worker.input.max_count,
            max_receive_count=w.worker.input.max_receive_count,
            settings=settings,
        )
        out += [(w.label, spec) for spec in specs]
    return out
