"""What the operations watch, as plain values: the stack's services, pools, gateway and workers
with the thresholds their alarms judge by, and where the alarms go (`OperationsSpec`, built by
the plan). `operations_alarms` and `dashboard_inputs` turn it into the alarms and the dashboard
with placeholders for what is known only at deploy time (ARN suffixes, generated names), so the
plan counts and names the alarms at preview and the Operations component swaps the placeholders
for its Outputs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ecs_inference.specs.operations.alarms import (
    AlarmSettings,
    AlarmSpec,
    queue_age_threshold_seconds,
)
from ecs_inference.specs.operations.dashboard import (
    DashboardInputs,
    GatewayPanel,
    ModelPanel,
    RerankerPanel,
    WorkerPanel,
    dashboard_body,
)
from ecs_inference.specs.operations.errors import ObservabilityError
from ecs_inference.specs.operations.notifications import Subscription
from ecs_inference.specs.operations.table import (
    GatewaySubject,
    ServiceSubject,
    WorkerSubject,
    stack_alarms,
)

if TYPE_CHECKING:
    # Only types here: the workers' and the gateway's decisions import the config, which
    # imports this package.
    from ecs_inference.gateway.decisions import GatewayDecisions
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
class OperationsSpec:
    """What the stack's alarm topic, alarms, rollback rule and dashboard cover."""

    services: tuple[WatchedService, ...] = ()
    """Model and re-ranker services."""
    gpu_pools: tuple[str, ...] = ()
    """GPU pools whose hosts run the CloudWatch agent (their panels and GPU memory alarm)."""
    neuron_pools: tuple[str, ...] = ()
    """Neuron pools whose hosts run the CloudWatch agent (their panels)."""
    gateway: GatewayDecisions | None = None
    """The AI gateway; None: none."""
    workers: tuple[WorkerDecisions, ...] = ()
    """Queue workers (their decisions, which hold their input)."""
    alarm_settings: AlarmSettings = field(default_factory=AlarmSettings)
    """Alarm thresholds."""
    subscriptions: tuple[Subscription, ...] = ()
    """Alarm topic subscriptions (none: the topic exists, subscribe later)."""
    dashboard: bool = True
    """Create the stack's dashboard."""


# Placeholders for the deploy-time values inside the specs (they never reach AWS).
LOAD_BALANCER = "app/placeholder-lb/0000000000000000"
CLUSTER = "placeholder-cluster"
CLUSTER_ARN = "arn:aws:ecs:us-east-1:000000000000:cluster/placeholder-cluster"


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


def worker_label(worker: str) -> str:
    """The subject label of a worker's alarms (`worker-<name>`: workers and services may share
    a name)."""
    return f"worker-{worker}"


# The placeholders' subjects: a service by its name; the gateway and the workers with a leading
# '_', which no service name has.
GATEWAY_KEY = "_gateway"


def worker_key(worker: str) -> str:
    return f"_worker-{worker}"


def operations_alarms(spec: OperationsSpec, stack: str) -> list[tuple[str, AlarmSpec]]:
    """Every alarm of the stack with the label of the subject it watches, with placeholders for
    the deploy-time dimensions."""
    gateway = spec.gateway
    return stack_alarms(
        stack=stack,
        settings=spec.alarm_settings,
        load_balancer=LOAD_BALANCER,
        cluster_name=CLUSTER,
        services=[
            ServiceSubject(
                s.service,
                s.kind,
                s.min_count,
                target_group(s.service),
                ecs_service(s.service),
                engine_metrics=s.engine_metrics,
            )
            for s in spec.services
        ],
        gpu_pools=spec.gpu_pools,
        gateway=None
        if gateway is None
        else GatewaySubject(
            gateway.input.path, gateway, target_group(GATEWAY_KEY), ecs_service(GATEWAY_KEY)
        ),
        workers=[
            WorkerSubject(
                worker_label(w.name),
                w,
                queue(w.name),
                dead_letter_queue(w.name),
                ecs_service(worker_key(w.name)),
            )
            for w in spec.workers
        ],
    )


def dashboard_inputs(
    spec: OperationsSpec,
    *,
    stack: str,
    region: str,
    alarm_arns: Sequence[str],
    values: Mapping[str, str],
) -> DashboardInputs:
    """The dashboard of `spec`, with each placeholder taken from `values` (placeholder -> what
    it stands for; the placeholders themselves to check the limits before deploy time)."""
    models: list[ModelPanel] = []
    rerankers: list[RerankerPanel] = []
    for s in spec.services:
        tg, svc = values[target_group(s.service)], values[ecs_service(s.service)]
        if s.kind == "reranker":
            rerankers.append(RerankerPanel(s.service, tg, svc))
        else:
            models.append(ModelPanel(s.service, s.kind, s.pool or "", tg, svc, s.engine_metrics))
    gw = spec.gateway
    gateway = None
    if gw is not None:
        gateway = GatewayPanel(
            gw.input.path,
            values[target_group(GATEWAY_KEY)],
            values[ecs_service(GATEWAY_KEY)],
            longest_request_seconds=gw.longest_request_seconds,
            target_cpu_percent=gw.input.target_cpu_percent,
        )
    workers = [
        WorkerPanel(
            w.name,
            values[queue(w.name)],
            values[dead_letter_queue(w.name)],
            values[ecs_service(worker_key(w.name))],
            queue_age_seconds=queue_age_threshold_seconds(
                w.input.acceptable_latency_seconds, w.input.max_job_seconds
            ),
            backlog_target=w.backlog_target,
        )
        for w in spec.workers
    ]
    return DashboardInputs(
        stack=stack,
        region=region,
        cluster_name=values[CLUSTER],
        load_balancer=values[LOAD_BALANCER],
        models=models,
        rerankers=rerankers,
        gateway=gateway,
        workers=workers,
        gpu_pools=list(spec.gpu_pools),
        neuron_pools=list(spec.neuron_pools),
        alarm_arns=list(alarm_arns),
    )


class _Placeholders(dict[str, str]):
    """Every placeholder stands for itself: the limits are checked before deploy time."""

    def __missing__(self, key: str) -> str:
        return key


def operations_problems(spec: OperationsSpec, stack: str) -> dict[str, str]:
    """What CloudWatch would refuse of the stack's alarms and dashboard (names, evaluation
    windows, widget count, body size), by the config key that decides it; empty when none.
    The plan calls it for its own spec; a program that builds an `OperationsSpec` by hand
    calls it before creating `Operations`."""
    try:
        alarms = operations_alarms(spec, stack)
    except ObservabilityError as exc:
        return {"platform.operations.alarms": str(exc)}
    if not spec.dashboard:
        return {}
    names = [a.name for _, a in alarms]
    inputs = dashboard_inputs(
        spec, stack=stack, region="us-east-1", alarm_arns=names, values=_Placeholders()
    )
    try:
        dashboard_body(inputs)
    except ObservabilityError as exc:
        return {"platform.operations.dashboard": str(exc)}
    return {}
