"""The plan's check of its Fargate services against the table of what Fargate refuses
(`contracts.aws_limits.FARGATE_TASK_PARAMETERS`, read by `ecs_inference.specs.fargate`).

The re-rankers, the gateway and the workers run on Fargate. What their task definitions carry at
a path of the table comes either from their spec (`SPEC_PARAMETERS`: the spec field, the path it
is written at and the config key that sets it) or from the component's own constants (awsvpc,
awslogs, the init process, the gateway's and the workers' stop timeouts). The plan judges every
spec field of `SPEC_PARAMETERS` against the table and reports each refused value at the config
path that set it (the service's section when no key does: then the spec's default is at fault),
all in one run. A test records the task definitions of configs that set every key of these
sections, checks them against the whole table, and fails when a table value varies with the
config without an entry here: a key that reaches the table is judged here, or the test fails.

Keys a user writes in these sections that name a table parameter, or a model's accelerator keys,
are refused earlier, when the config is loaded (`ecs_inference.config.fargate`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ecs_inference.config.base import ROOT
from ecs_inference.config.issues import Issues
from ecs_inference.gateway.decisions import GatewayDecisions
from ecs_inference.gateway.input import GatewayConfig
from ecs_inference.specs import fargate
from ecs_inference.specs.service import RerankerSpec
from ecs_inference.workers.decisions import WorkerDecisions
from ecs_inference.workers.input import WorkerConfig

FargateSpec = RerankerSpec | GatewayConfig | WorkerConfig


@dataclass(frozen=True)
class SpecParameter:
    """A spec field its component writes at a path of the table."""

    field: str
    """The spec's field."""
    parameter: str
    """The table path the component writes it at."""
    key: str | None
    """The config key (relative to the service's section) that sets it; None: none does (the
    spec's default)."""


SPEC_PARAMETERS: Mapping[type, tuple[SpecParameter, ...]] = {
    RerankerSpec: (
        SpecParameter("stop_timeout_seconds", "containerDefinitions[].stopTimeout", None),
    ),
    GatewayConfig: (),
    WorkerConfig: (),
}
"""Per Fargate spec type, the fields its component writes at a path of the table."""


def spec_issues(path: str, spec: FargateSpec, issues: Issues) -> None:
    """Add an issue for each field of `spec` (the service at config path `path`) that puts a
    value Fargate refuses in its task definition."""
    for entry in SPEC_PARAMETERS[type(spec)]:
        value = getattr(spec, entry.field)
        if fargate.accepts(entry.parameter, value):
            continue
        refusal = fargate.Refusal(entry.parameter, (), entry.parameter, value)
        if entry.key is not None:
            issues.add(f"{path}.{entry.key}", str(refusal))
            continue
        # No key sets the field: the spec's own default is at fault, not the user's config.
        issues.add(path, f"{refusal}, from the spec's default {entry.field}; no key sets it")


def check_services(
    rerankers: Mapping[str, RerankerSpec],
    gateway: GatewayDecisions | None,
    workers: Mapping[str, WorkerDecisions],
    issues: Issues,
) -> None:
    """Judge every planned Fargate service's spec against the table (`spec_issues`)."""
    for name, rr in rerankers.items():
        spec_issues(f"{ROOT}.rerankers.{name}", rr, issues)
    if gateway is not None:
        spec_issues(f"{ROOT}.gateway", gateway.input, issues)
    for name, worker in workers.items():
        spec_issues(f"{ROOT}.workers.{name}", worker.input, issues)
