"""What every load-balanced service (models, re-rankers, the gateway) decides alike: how long a
task deregisters, the note on the metrics sidecar, and how a spec check's error becomes a
config issue; and what every Fargate service (re-rankers, the gateway, workers) decides alike:
its task size. Pure: the plan and the components call it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ecs_inference import sizing
from ecs_inference.config.issues import ConfigIssue
from ecs_inference.decided import Decided, InputT, PlacementT
from ecs_inference.rollouts.spec import RolloutSpec

DEREGISTRATION_MARGIN_SECONDS = 15
"""Added to a service's longest request for its deregistration delay: the last response bytes,
the client's read of them, and the ALB noticing the target is idle."""

METRICS_NOTE = (
    "metrics: sidecar (non-essential, after the engine) publishes the engine's /metrics as "
    "CloudWatch EMF every 15 s, namespace ECSInference, per Stack/Service and per task; "
    "EngineUp = 0 when the engine stops answering"
)


def deregistration(own_seconds: int) -> sizing.DeregistrationDelay:
    """The service's own longest request plus `DEREGISTRATION_MARGIN_SECONDS`, never the ALB-wide
    idle timeout: ELB ends deregistration early only when a target has no request in flight AND
    no open connection, and the ALB keeps idle keep-alive connections to targets (which hold them
    for the idle timeout + 5 s), so in practice every deploy, scale-in and managed-draining step
    waits out the whole delay while the task and its GPU host stay billed."""
    return sizing.deregistration_delay(own_seconds, margin=DEREGISTRATION_MARGIN_SECONDS)


@dataclass(frozen=True, kw_only=True)
class ServedDecisions:
    """What a load-balanced service (a model or a re-ranker) decides alike and the service base
    reads: its deregistration delay, its rollout and its secrets' references."""

    delay: sizing.DeregistrationDelay
    """The target group's deregistration delay, from the service's longest request
    (`deregistration`)."""
    rollout: RolloutSpec
    """How a new revision replaces the old one (`components.rollouts`)."""
    secret_refs: Mapping[str, str]
    """The input's `secrets` as references (ARNs or the stack's own): the container's `secrets`,
    and what the execution role may read."""


@dataclass(frozen=True, kw_only=True)
class FargateDecisions(Decided[InputT, PlacementT]):
    """What a Fargate service (a re-ranker, the gateway, a worker) decides alike: its task size,
    which its task definition and cost lines read."""

    size: sizing.FargateSize
    """The task's size on the Fargate grid: the input's `cpu` and `memoryMib`, or the cheapest
    size for a re-ranker's need."""


def service_issue(path: str, exc: ValueError) -> ConfigIssue:
    """A spec check's error (`<where>: <message>`) as the issue at `path`."""
    message = str(exc)
    return ConfigIssue(path, message.split(": ", 1)[1] if message.startswith(path) else message)
