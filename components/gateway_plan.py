"""Plan of issue 17's services: the gateway's routes and size, each worker's queue and scaling.

`plan_gateway` and `plan_workers` check what the schema alone cannot — routes to model services
that exist, Bedrock models with a region, Fargate sizes on the grid, a path that is no service's,
jobs that fit SQS's visibility limit, workers that have a gateway to call — and return every
problem as a `ConfigIssue` naming the config path, so `build_plan` can report them with the rest
before any resource exists.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from components import sizing
from components.errors import ConfigIssue
from components.gateway_config import (
    GatewaySpec,
    ServiceTarget,
    bedrock_routes,
    resolve_routes,
)
from components.gateway_schema import GatewayConfig, WorkerConfig
from components.worker_scaling import (
    VisibilityTimeout,
    WorkerScalingError,
    backlog_target,
    from_zero_steps,
    visibility_timeout,
)

ROOT = "platform"


@dataclass(frozen=True)
class GatewayPlan:
    """The validated gateway: `spec` (what its LiteLLM config holds) and its Fargate `size`."""

    config: GatewayConfig
    spec: GatewaySpec
    size: sizing.FargateSize

    def decisions(self) -> list[str]:
        routes = ", ".join(f"{r.model_name} -> {r.target.api_base}" for r in self.spec.routes)
        lines = [
            f"LiteLLM proxy on {self.size.summary()}",
            f"routes: {routes or 'none'}",
        ]
        if self.spec.bedrock:
            lines.append(
                "Bedrock: "
                + ", ".join(
                    f"{b.model_name} -> {b.model_id} ({b.region})" for b in self.spec.bedrock
                )
            )
        lines.append(
            "database: Aurora Serverless v2 PostgreSQL (virtual keys, budgets, rate limits)"
            if self.spec.database
            else "database: off (the master key is the only LiteLLM key; no budgets)"
        )
        return lines


@dataclass(frozen=True)
class WorkerPlan:
    """One validated worker: its queue's `visibility`, the backlog-per-task `target`, `size`."""

    name: str
    config: WorkerConfig
    visibility: VisibilityTimeout
    target: float
    size: sizing.FargateSize

    def decisions(self) -> list[str]:
        steps = from_zero_steps(self.target, self.config.max_count)
        return [
            self.size.summary(),
            self.visibility.summary(),
            f"scale on backlog per task (visible / running) at {self.target:g} messages "
            f"({self.config.acceptable_latency_seconds:g} s acceptable latency / "
            f"{self.config.job_seconds:g} s per job x {self.config.concurrency}), "
            f"{self.config.min_count}-{self.config.max_count} tasks; out of zero in "
            f"{len(steps)} step(s); "
            + (
                f"to zero after {self.config.idle_minutes} min with nothing waiting or in flight"
                if self.config.min_count == 0
                else f"never below {self.config.min_count}"
            ),
        ]


def plan_gateway(
    cfg: GatewayConfig,
    targets: Mapping[str, ServiceTarget],
    *,
    service_names: Sequence[str],
    trusted_proxy_ranges: Sequence[str] = (),
) -> tuple[GatewayPlan | None, list[ConfigIssue]]:
    """Routes, Bedrock models and size of the gateway. `targets`: every model service as the
    gateway reaches it; `service_names`: every service with an ALB path (the gateway's path must
    differ); `trusted_proxy_ranges`: the VPC's CIDRs (where the ALB is)."""
    base = f"{ROOT}.gateway"
    routes, issues = resolve_routes(targets, cfg.routes, path=f"{base}.routes")
    bedrock, more = bedrock_routes(
        cfg.bedrock.models,
        cfg.bedrock.region,
        taken=[r.model_name for r in routes],
        path=f"{base}.bedrock",
    )
    issues += more
    if cfg.path in service_names:
        issues.append(
            ConfigIssue(
                f"{base}.path",
                f"{cfg.path!r} is already the path of a service; choose another path prefix",
            )
        )
    if not routes and not bedrock and not issues:
        issues.append(
            ConfigIssue(base, "the gateway routes to nothing: add a model service or Bedrock model")
        )
    try:
        size = sizing.fargate_size(cfg.cpu, cfg.memory_mib)
    except sizing.SizingError as exc:
        issues.append(ConfigIssue(f"{base}.cpu", str(exc)))
        size = None
    if issues or size is None:
        return None, issues
    spec = GatewaySpec(
        routes=routes,
        bedrock=bedrock,
        database=cfg.database.enabled,
        trusted_proxy_ranges=tuple(trusted_proxy_ranges),
    )
    return GatewayPlan(cfg, spec, size), []


def plan_workers(
    workers: Mapping[str, WorkerConfig], *, has_gateway: bool
) -> tuple[dict[str, WorkerPlan], list[ConfigIssue]]:
    """Queue and scaling decisions of every worker, and the problems found."""
    plans: dict[str, WorkerPlan] = {}
    issues: list[ConfigIssue] = []
    for name, cfg in workers.items():
        base = f"{ROOT}.workers.{name}"
        found: list[ConfigIssue] = []
        if not has_gateway:
            found.append(
                ConfigIssue(
                    base,
                    "a worker calls models through the gateway (GATEWAY_URL): configure "
                    "platform.gateway",
                )
            )
        if cfg.job_seconds > cfg.max_job_seconds:
            found.append(
                ConfigIssue(
                    f"{base}.jobSeconds",
                    f"the typical job ({cfg.job_seconds:g} s) is longer than maxJobSeconds "
                    f"({cfg.max_job_seconds} s)",
                )
            )
        visibility = target = size = None
        try:
            visibility = visibility_timeout(cfg.max_job_seconds, path=f"{base}.maxJobSeconds")
            target = backlog_target(
                cfg.acceptable_latency_seconds,
                cfg.job_seconds,
                cfg.concurrency,
                path=f"{base}.acceptableLatencySeconds",
            )
        except WorkerScalingError as exc:
            found.append(exc.issue)
        try:
            size = sizing.fargate_size(cfg.cpu, cfg.memory_mib)
        except sizing.SizingError as exc:
            found.append(ConfigIssue(f"{base}.cpu", str(exc)))
        if found or visibility is None or target is None or size is None:
            issues += found
            continue
        plans[name] = WorkerPlan(name, cfg, visibility, target, size)
    return plans, issues
