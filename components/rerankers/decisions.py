"""A re-ranker's decisions (pure): its Fargate size (exact, or the cheapest for its need, never
below the model's memory floor), deregistration delay, admission limits, rollout and container
environment, checked against Fargate and the image contract (`contracts/reranker.py`).
`FargateReranker` and the stack's plan both call `decide_reranker`, so a program gets the
decisions, ledger lines and errors of a stack file.

What is the same for every re-ranker is a constant here, not an input: Fargate capacity is not
scarce and the image starts in about a minute (S3 staging, ONNX session), so a re-ranker runs
with shorter timeouts than a model.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ecs_inference import iam, sizing
from ecs_inference.config.base import ROOT
from ecs_inference.config.issues import ConfigIssue
from ecs_inference.contracts import reranker as contract
from ecs_inference.contracts.aws_limits import LISTENER_RULE_PRIORITY_MAX
from ecs_inference.engines.base import KEEPALIVE_MARGIN_SECONDS
from ecs_inference.models.decisions import Placement
from ecs_inference.names import NAME_PATTERN
from ecs_inference.operations.watch import WatchedService
from ecs_inference.rerankers.input import RerankerConfig
from ecs_inference.rollouts.decisions import RolloutFacts, decide_rollout
from ecs_inference.secrets.refs import secret_refs
from ecs_inference.services.decisions import (
    METRICS_NOTE,
    FargateDecisions,
    ServedDecisions,
    deregistration,
)
from ecs_inference.sizing.fargate import CpuArchitecture
from ecs_inference.sizing.headroom import DeployChoice

GRACE_SECONDS = 120
"""Health-check grace period: the image's start (`contract.STARTUP_GRACE_SECONDS`) with room."""
STOP_TIMEOUT_SECONDS = contract.STOP_TIMEOUT_SECONDS
"""SIGTERM to SIGKILL: the contract's, within Fargate's 120 s cap."""
MANAGED_ENV = (contract.ENV_PORT, contract.ENV_MODEL_S3_URI, contract.ENV_KEEP_ALIVE_SECONDS)
"""Variables the component sets from its own decisions; `environment` may not set them."""


def reranker_path(name: str) -> str:
    """The re-ranker's config path, where its problems are reported."""
    return f"{ROOT}.rerankers.{name}"


def model_uri(bucket: str, prefix: str) -> str:
    """`s3://bucket/prefix/` (trailing slash: the service stages every object under it)."""
    prefix = prefix.strip("/")
    return f"s3://{bucket}/{prefix}/" if prefix else f"s3://{bucket}/"


def reranker_environment(
    *,
    service: str,
    bucket: str,
    prefix: str,
    alb_idle_timeout_seconds: int,
    overrides: Mapping[str, str],
) -> list[dict[str, str]]:
    """The container `environment`: contract defaults, the model URI, keep-alive above the ALB
    idle timeout, the service name as model name, then `overrides` (names and values checked by
    the contract: raises KeyError or ValueError)."""
    managed = {
        contract.ENV_MODEL_NAME: service,
        contract.ENV_MODEL_S3_URI: model_uri(bucket, prefix),
        contract.ENV_KEEP_ALIVE_SECONDS: str(alb_idle_timeout_seconds + KEEPALIVE_MARGIN_SECONDS),
    }
    return contract.container_environment({**managed, **dict(overrides)})


def _platform_at_least_1_4(version: str) -> bool:
    if version == "LATEST":
        return True
    try:
        parts = tuple(int(p) for p in version.split("."))
    except ValueError:
        return False
    return parts >= (1, 4, 0)


def size_problem(
    size: sizing.FargateSize,
    platform_version: str,
    model: contract.EncoderModel = contract.REFERENCE_MODEL,
) -> str | None:
    """Why a Fargate task of `size` cannot run the re-ranker serving `model` (default
    all-MiniLM-L6-v2) on `platform_version`, or None."""
    if size.memory_mib < model.memory_floor_mib:
        return (
            f"memory_mib {size.memory_mib} is below the re-ranker's floor of "
            f"{model.memory_floor_mib} MiB for {model.name or model.model_type} "
            f"({model.parameters / 1e6:.0f}M parameters: resident weights, ONNX Runtime arenas, "
            "web stack)"
        )
    if size.needs_platform_1_4 and not _platform_at_least_1_4(platform_version):
        return f"cpu {size.cpu} needs Fargate platform 1.4.0 or later, got {platform_version!r}"
    return None


def fargate_size(rr: RerankerConfig) -> sizing.FargateSize:
    """The exact size, or the cheapest grid size for the need (never below the model's memory
    floor); raises `sizing.SizingError` for a size the re-ranker cannot run on."""
    model = rr.model.encoder()
    if rr.cpu is not None:
        size = sizing.fargate_size(rr.cpu, rr.memory_mib)
    else:
        need = max(rr.need_memory_mib, model.memory_floor_mib)
        size = sizing.fargate_size(need_memory_mib=need, need_vcpu=rr.need_vcpu)
    if (problem := size_problem(size, rr.platform_version, model)) is not None:
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


@dataclass(frozen=True, kw_only=True)
class RerankerDecisions(FargateDecisions[RerankerConfig, Placement], ServedDecisions):
    """What a re-ranker decides from its input (`input`, read from there) and its placement
    behind the endpoint. The properties are what the load-balanced service base
    (`EcsService._serve`) and the cost lines read of it."""

    service: str
    """The re-ranker's key: its path `/<service>/`, log group, task family and model name."""
    model_bucket: str
    """S3 bucket of the model (`modelUri`): the task role reads only its prefix."""
    model_prefix: str
    """Key prefix of the model under `model_bucket`."""
    container_environment: Sequence[Mapping[str, str]]
    """The container's `environment` (`reranker_environment`)."""

    health_check_grace_period_seconds = GRACE_SECONDS
    scale_out_cooldown = 60
    scale_in_cooldown = 300
    deploy = DeployChoice(100, 200, "deploy: surge (min 100 %, max 200 %)")

    @property
    def min_count(self) -> int:
        return self.input.min_count

    @property
    def desired_count(self) -> int:
        return self.input.desired_count

    @property
    def max_count(self) -> int:
        return self.input.max_count

    @property
    def metrics_sidecar(self) -> bool:
        return self.placement.facts.metrics_sidecar

    @property
    def cpu(self) -> int:
        return self.size.cpu

    @property
    def memory_mib(self) -> int:
        return self.size.memory_mib

    @property
    def cpu_architecture(self) -> CpuArchitecture:
        return self.input.cpu_architecture


def _contract_problems(
    name: str, rr: RerankerConfig, bucket: str, prefix: str, idle: int
) -> tuple[list[dict[str, str]], list[str]]:
    """The container environment, and what the image contract and the service refuse in the
    input's environment and secrets."""
    found = [
        f"{kind} sets {env}, which the service already controls"
        for kind, names in (("environment", rr.environment), ("secrets", rr.secrets))
        for env in names
        if env in MANAGED_ENV
    ]
    if both := sorted(set(rr.environment) & set(rr.secrets)):
        found.append(f"{both[0]} is set in both environment and secrets")
    if clash := sorted(set(rr.secrets) & set(contract.ENV_DEFAULTS)):
        found.append(
            f"secrets {clash} are plain settings of the re-ranker (set them under "
            "environment); a name in both lists is ambiguous"
        )
    environment: list[dict[str, str]] = []
    try:
        iam.s3_read_policy(bucket, prefix)
        # The service bounds each request (and its admission) by the same maxRequestSeconds
        # the ALB idle timeout and the deregistration delay are derived from.
        environment = reranker_environment(
            service=name,
            bucket=bucket,
            prefix=prefix,
            alb_idle_timeout_seconds=idle,
            overrides={contract.ENV_REQUEST_TIMEOUT_SECONDS: str(rr.max_request_seconds)}
            | dict(rr.environment),
        )
    except (iam.PolicyArgumentError, KeyError, ValueError) as exc:
        return [], [*found, exc.args[0] if isinstance(exc, KeyError) else str(exc)]
    env = {e["name"]: e["value"] for e in environment}
    drain = env.get(contract.ENV_DRAIN_TIMEOUT_SECONDS, str(contract.DRAIN_TIMEOUT_SECONDS))
    if not drain.isdigit() or int(drain) >= STOP_TIMEOUT_SECONDS:
        found.append(
            f"{contract.ENV_DRAIN_TIMEOUT_SECONDS} {drain!r} must be a whole number of seconds "
            f"below stop_timeout_seconds {STOP_TIMEOUT_SECONDS} (ECS kills the container when "
            "the stop timeout ends, cutting requests still draining)"
        )
    return environment, found


def _wiring_problems(name: str, placement: Placement, image: str | None) -> list[str]:
    """What a program may give wrong that a stack's plan decides: the name, the rule priority,
    the image reference (None: the stack's own build)."""
    found = []
    if not NAME_PATTERN.match(name):
        found.append(f"service {name!r} must be 2-21 lowercase letters, digits and '-'")
    if not 1 <= placement.priority <= LISTENER_RULE_PRIORITY_MAX:
        found.append(f"priority {placement.priority} outside 1-{LISTENER_RULE_PRIORITY_MAX}")
    if image is not None:
        if not image.strip() or any(c.isspace() for c in image):
            found.append(f"image {image!r} must be a non-empty image reference")
        else:
            try:
                iam.ecr_repository_arn(image)
            except iam.PolicyArgumentError as exc:
                found.append(str(exc))
    return found


def decide_reranker(
    name: str, rr: RerankerConfig, placement: Placement, image: str | None = None
) -> tuple[RerankerDecisions | None, list[ConfigIssue]]:
    """The re-ranker's decisions, or None and every problem at its config path. `placement`'s
    idle timeout must be set (the endpoint's); `image`: its reference, None (default) for the
    stack's own build."""
    path = reranker_path(name)
    assert placement.idle_timeout_seconds is not None
    found = [ConfigIssue(path, p) for p in _wiring_problems(name, placement, image)]
    try:
        size = fargate_size(rr)
    except sizing.SizingError as exc:
        return None, [*found, ConfigIssue(exc.at(path), str(exc))]
    bucket, prefix = iam.split_s3_uri(rr.model_uri)
    environment, problems = _contract_problems(
        name, rr, bucket, prefix, placement.idle_timeout_seconds
    )
    found += [ConfigIssue(path, p) for p in problems]
    if found:
        return None, found
    facts = placement.facts
    rollout, rollout_lines = decide_rollout(
        rr.rollout,
        RolloutFacts(
            stack=facts.stack,
            watched=WatchedService(
                name, "reranker", rr.min_count, engine_metrics=facts.metrics_sidecar
            ),
            served_model=rr.environment.get(
                contract.ENV_MODEL_NAME, contract.ENV_DEFAULTS[contract.ENV_MODEL_NAME]
            ),
            default_prompt="",
            requests_per_task_minute=rr.scaling_target
            if rr.scaling_metric == "requestCount"
            else None,
            startup_seconds=GRACE_SECONDS,
            alarm_settings=facts.alarm_settings,
        ),
    )
    delay = deregistration(rr.max_request_seconds)
    lines = [
        rr.model.encoder().summary(),
        size.summary(),
        delay.summary(),
        _admission(rr, size).summary(),
        *rollout_lines,
        *([METRICS_NOTE] if facts.metrics_sidecar else []),
    ]
    decided = RerankerDecisions(
        service=name,
        input=rr,
        placement=placement,
        size=size,
        delay=delay,
        rollout=rollout,
        model_bucket=bucket,
        model_prefix=prefix,
        container_environment=environment,
        secret_refs=secret_refs(path, rr.secrets),
        lines=tuple(lines),
    )
    return decided, []
