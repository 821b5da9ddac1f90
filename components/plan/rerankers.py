"""The re-rankers' plan: each one's Fargate size (exact, or the cheapest for its need), its
deregistration delay and the spec its component builds."""

from __future__ import annotations

from collections.abc import Mapping

from ecs_inference import iam, sizing
from ecs_inference.config.issues import Issues
from ecs_inference.config.rerankers import RerankerConfig
from ecs_inference.config.stack import StackConfig
from ecs_inference.contracts import reranker as contract
from ecs_inference.operations.watch import WatchedService
from ecs_inference.rollouts.decisions import RolloutFacts, decide_rollout
from ecs_inference.services.decisions import METRICS_NOTE, deregistration, service_issue
from ecs_inference.specs.secrets import secret_refs
from ecs_inference.specs.service import (
    RerankerSpec,
    ServiceArgsError,
    reranker_decision_checks,
    reranker_size_problem,
)


def _size(rr: RerankerConfig) -> sizing.FargateSize:
    """The exact size, or the cheapest grid size for the need (never below the model's memory
    floor); raises `sizing.SizingError` for a size the re-ranker cannot run on."""
    model = rr.model.encoder()
    if rr.cpu is not None:
        size = sizing.fargate_size(rr.cpu, rr.memory_mib)
    else:
        need = max(rr.need_memory_mib, model.memory_floor_mib)
        size = sizing.fargate_size(need_memory_mib=need, need_vcpu=rr.need_vcpu)
    if (problem := reranker_size_problem(size, rr.platform_version, model)) is not None:
        raise sizing.SizingError(problem)
    return size


def _admission(rr: RerankerConfig, size: sizing.FargateSize) -> contract.AdmissionLimits:
    """The image contract's work limits for this task size and the configured model (the
    service derives the same from the bundle it serves)."""
    drain = rr.environment.get(contract.ENV_DRAIN_TIMEOUT_SECONDS, "")
    model = rr.model.encoder()
    return contract.admission_limits(
        size.cpu / 1024,
        request_timeout_seconds=rr.max_request_seconds,
        drain_timeout_seconds=int(drain)
        if drain.isdigit() and int(drain) > 0
        else contract.DRAIN_TIMEOUT_SECONDS,
        encoder=model.shape,
        max_length=model.max_length,
    )


def reranker_service(
    name: str,
    rr: RerankerConfig,
    cfg: StackConfig,
    priority: int,
    idle_timeout_seconds: int,
    stack: str = "stack",
) -> tuple[RerankerSpec, list[str]]:
    """The re-ranker's spec and decision lines; raises `sizing.SizingError`."""
    size = _size(rr)
    delay = deregistration(rr.max_request_seconds)
    bucket, prefix = iam.split_s3_uri(rr.model_uri)
    sidecar = cfg.operations.metrics_sidecar
    rollout, rollout_lines = decide_rollout(
        rr.rollout,
        RolloutFacts(
            stack=stack,
            watched=WatchedService(name, "reranker", rr.min_count, engine_metrics=sidecar),
            served_model=rr.environment.get(
                contract.ENV_MODEL_NAME, contract.ENV_DEFAULTS[contract.ENV_MODEL_NAME]
            ),
            default_prompt="",
            requests_per_task_minute=rr.scaling_target
            if rr.scaling_metric == "requestCount"
            else None,
            startup_seconds=RerankerSpec.health_check_grace_period_seconds,
            alarm_settings=cfg.operations.alarms,
        ),
    )
    spec = RerankerSpec(
        service=name,
        priority=priority,
        image=rr.image or cfg.images.reranker,
        model_bucket=bucket,
        model_prefix=prefix,
        model=rr.model.encoder(),
        cpu=size.cpu,
        memory_mib=size.memory_mib,
        cpu_architecture=rr.cpu_architecture,
        platform_version=rr.platform_version,
        desired_count=rr.desired_count,
        min_count=rr.min_count,
        max_count=rr.max_count,
        scaling_metric=rr.scaling_metric,
        scaling_target=rr.scaling_target,
        deregistration_delay_seconds=delay.seconds,
        max_request_seconds=delay.max_generation_seconds,
        alb_idle_timeout_seconds=idle_timeout_seconds,
        # The service bounds each request (and its admission) by the same maxRequestSeconds
        # the ALB idle timeout and the deregistration delay are derived from.
        environment={contract.ENV_REQUEST_TIMEOUT_SECONDS: str(rr.max_request_seconds)}
        | dict(rr.environment),
        secrets=secret_refs(f"platform.rerankers.{name}", rr.secrets),
        weights_kms_key_arn=rr.kms_key_arns.weights,
        secrets_kms_key_arns=tuple(rr.kms_key_arns.secrets),
        execute_command=cfg.cluster.execute_command,
        execute_command_logging=cfg.cluster.execute_command_logging,
        log_retention_days=rr.log_retention_days,
        metrics_sidecar=sidecar,
        metrics_image=cfg.images.metrics,
        rollout=rollout,
    )
    lines = [
        spec.model.summary(),
        size.summary(),
        delay.summary(),
        _admission(rr, size).summary(),
        *rollout_lines,
    ]
    return spec, [*lines, *([METRICS_NOTE] if sidecar else [])]


def plan_rerankers(
    cfg: StackConfig,
    priorities: Mapping[str, int],
    idle_timeout_seconds: int,
    issues: Issues,
    stack: str = "stack",
) -> tuple[dict[str, RerankerSpec], dict[str, list[str]]]:
    """Every re-ranker's spec and its decisions (a size that fits no Fargate task is an issue)."""
    specs: dict[str, RerankerSpec] = {}
    decisions: dict[str, list[str]] = {}
    for name, rr in cfg.rerankers.items():
        path = f"platform.rerankers.{name}"
        try:
            spec, lines = reranker_service(
                name, rr, cfg, priorities[name], idle_timeout_seconds, stack
            )
        except sizing.SizingError as exc:
            issues.add(exc.at(path), str(exc))
            continue
        try:
            reranker_decision_checks(path, spec)
        except (ServiceArgsError, ValueError) as exc:
            issues.extend([service_issue(path, exc)])
            continue
        specs[name] = spec
        decisions[f"reranker {name}"] = lines
    return specs, decisions
