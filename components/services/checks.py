"""The checks every load-balanced service shares (`common_decision_checks` and its helpers),
and what they and `EcsService` read of a decided service (`ServedService`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Protocol

from ecs_inference import iam
from ecs_inference.contracts.aws_limits import (
    ECS_GRACE_PERIOD_MAX,
    LISTENER_RULE_PRIORITY_MAX,
    TARGET_GROUP_DEREGISTRATION_DELAY_MAX,
)
from ecs_inference.rollouts.spec import RolloutSpec
from ecs_inference.sizing import DeregistrationDelay
from ecs_inference.sizing.headroom import DeployChoice


class ServiceArgsError(ValueError):
    """Plain service arguments are inconsistent; the message names the argument and values."""


class ServedService(Protocol):
    """What every load-balanced service decides, as its checks and `EcsService` read it: a
    re-ranker's `RerankerDecisions`, a model's `ModelDecisions`. Its rule priority and ECS Exec
    are its placement's (`PlacedWiring.placement`)."""

    @property
    def service(self) -> str: ...
    @property
    def desired_count(self) -> int: ...
    @property
    def min_count(self) -> int: ...
    @property
    def max_count(self) -> int: ...
    @property
    def scale_out_cooldown(self) -> int: ...
    @property
    def scale_in_cooldown(self) -> int: ...
    @property
    def health_check_grace_period_seconds(self) -> int: ...
    @property
    def delay(self) -> DeregistrationDelay: ...
    @property
    def deploy(self) -> DeployChoice: ...
    @property
    def metrics_sidecar(self) -> bool: ...
    @property
    def rollout(self) -> RolloutSpec: ...


def _deferred(value: object) -> bool:
    """An Output (the stack's own build, known at deploy time), recognised without Pulumi."""
    return callable(getattr(value, "apply", None))


# --------------------------------------------------------------------------------------------
# validation (pure)
# --------------------------------------------------------------------------------------------


def _int(where: str, name: str, value: object, lo: int, hi: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ServiceArgsError(f"{where}: {name} must be an integer, got {value!r}")
    if value < lo or (hi is not None and value > hi):
        bound = f"{lo}-{hi}" if hi is not None else f">= {lo}"
        raise ServiceArgsError(f"{where}: {name} {value} outside {bound}")
    return value


def common_decision_checks(
    where: str,
    args: ServedService,
    *,
    priority: int,
    image: object,
    environment: Mapping[str, str],
    secrets: Mapping[str, str],
    managed_env: Sequence[str],
) -> None:
    """What the plan decides for every service and checks here: the image it chose (a
    reference, None or an Output: the stack's own build), the rule priority, the deregistration
    delay against the longest request, the grace period, a deploy that can make progress, and
    user variables against those the service sets itself."""
    _int(where, "priority", priority, 1, LISTENER_RULE_PRIORITY_MAX)
    # None (a spec) or an Output (its component) is the stack's own build (images.build): a
    # digest reference in the stack's ECR repository, checked when the execution role's pull
    # statement is derived from it.
    if image is not None and not _deferred(image):
        if not isinstance(image, str) or not image.strip() or any(c.isspace() for c in image):
            raise ServiceArgsError(f"{where}: image {image!r} must be a non-empty image reference")
        try:
            iam.ecr_repository_arn(image)
        except iam.PolicyArgumentError as exc:
            raise ServiceArgsError(f"{where}: {exc}") from None
    delay = args.delay.seconds
    _int(where, "deregistration_delay_seconds", delay, 0, TARGET_GROUP_DEREGISTRATION_DELAY_MAX)
    longest = args.delay.max_generation_seconds
    _int(where, "max_request_seconds", longest, 1, TARGET_GROUP_DEREGISTRATION_DELAY_MAX)
    if delay < longest:
        # ECS waits out the delay before SIGTERM: a shorter one cuts the longest streams on
        # every deploy and scale-in.
        raise ServiceArgsError(
            f"{where}: deregistration_delay_seconds {delay} is shorter than "
            f"max_request_seconds {longest}; raise the delay to at least the longest request"
        )
    grace = args.health_check_grace_period_seconds
    _int(where, "health_check_grace_period_seconds", grace, 0, ECS_GRACE_PERIOD_MAX)
    low = args.deploy.minimum_healthy_percent
    _int(where, "deployment_minimum_healthy_percent", low, 0, 100)
    high = _int(where, "deployment_maximum_percent", args.deploy.maximum_percent, 100, 200)
    check_deploy_progress(where, low, high, args.min_count, args.max_count, args.desired_count)
    for kind, mapping in (("environment", environment), ("secrets", secrets)):
        for name in mapping:
            if name in managed_env:
                raise ServiceArgsError(
                    f"{where}: {kind} sets {name}, which the service already controls"
                )
    if both := sorted(set(environment) & set(secrets)):
        raise ServiceArgsError(f"{where}: {both[0]} is set in both environment and secrets")


def check_deploy_progress(
    where: str, minimum_healthy: int, maximum: int, min_count: int, max_count: int, desired: int
) -> None:
    """A rolling deploy must be able to start a new task or stop an old one at every task count
    autoscaling may reach: ECS keeps ceil(n × min%) running and runs at most floor(n × max%)."""
    for n in sorted({desired, *range(max(min_count, 1), max_count + 1)} - {0}):
        keep = math.ceil(n * minimum_healthy / 100)
        peak = math.floor(n * maximum / 100)
        if peak <= keep:
            raise ServiceArgsError(
                f"{where}: with {n} task(s), deployment_minimum_healthy_percent "
                f"{minimum_healthy} keeps {keep} running and deployment_maximum_percent "
                f"{maximum} allows {peak}: a deploy could never replace a task (lower the "
                "minimum or raise the maximum)"
            )
