"""Timeouts: ALB idle timeout, target-group deregistration delay, ECS health-check grace."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from ecs_inference.contracts.aws_limits import (
    ALB_IDLE_TIMEOUT_DEFAULT,
    ALB_IDLE_TIMEOUT_RANGE,
    ECS_GRACE_PERIOD_MAX,
    TARGET_GROUP_DEREGISTRATION_DELAY_MAX,
)
from ecs_inference.sizing.memory import SizingError, non_negative, positive_int

# --------------------------------------------------------------------------------------------
# Timeouts
# --------------------------------------------------------------------------------------------

ALB_IDLE_TIMEOUT_MIN, ALB_IDLE_TIMEOUT_MAX = ALB_IDLE_TIMEOUT_RANGE


@dataclass(frozen=True)
class IdleTimeout:
    """The ALB idle timeout: ``seconds`` and how it was reached."""

    seconds: int
    longest_generation_seconds: int
    margin_seconds: int
    source: str  # "derived", "clamped", "override" or "default"

    def summary(self) -> str:
        how = {
            "derived": f"longest generation {self.longest_generation_seconds} s + margin "
            f"{self.margin_seconds} s",
            "clamped": f"longest generation {self.longest_generation_seconds} s + margin, capped at"
            f" the ALB maximum {ALB_IDLE_TIMEOUT_MAX} s",
            "override": f"override, longest generation {self.longest_generation_seconds} s",
            "default": "ALB default, no routed service declares a generation time",
        }[self.source]
        return f"ALB idle timeout {self.seconds} s ({how})"


def alb_idle_timeout(
    max_generation_seconds_list: Iterable[float],
    margin: int = 30,
    override: int | None = None,
) -> IdleTimeout:
    """ALB idle timeout for the services routed through one load balancer.

    A non-streaming completion sends nothing until it is done, so the connection must survive
    the longest generation any routed service allows: ``max(max_generation_seconds) + margin``
    (margin default 30 s), capped at the ALB maximum of 4000 s. With no services the ALB
    default (60 s) stands. ``override`` (default None) must be 1–4000 and not shorter than the
    longest generation.
    """
    gens = [
        math.ceil(non_negative(s, "max_generation_seconds")) for s in max_generation_seconds_list
    ]
    margin_s = math.ceil(non_negative(margin, "idle timeout margin"))
    longest = max(gens, default=0)
    if override is not None:
        value = positive_int(override, "idle timeout override")
        if value > ALB_IDLE_TIMEOUT_MAX:
            raise SizingError(
                f"idle timeout override {value} s is above the ALB maximum of "
                f"{ALB_IDLE_TIMEOUT_MAX} s"
            )
        if value < longest:
            raise SizingError(
                f"idle timeout override {value} s is shorter than the longest generation a routed "
                f"service allows ({longest} s); raise it to at least {longest} s or lower "
                "maxGenerationSeconds"
            )
        return IdleTimeout(value, longest, margin_s, "override")
    if not gens:
        return IdleTimeout(ALB_IDLE_TIMEOUT_DEFAULT, 0, margin_s, "default")
    if longest > ALB_IDLE_TIMEOUT_MAX:
        raise SizingError(
            f"the longest generation a routed service allows ({longest} s) exceeds the ALB's "
            f"maximum idle timeout of {ALB_IDLE_TIMEOUT_MAX} s; lower maxGenerationSeconds or "
            "require streaming for long generations"
        )
    wanted = max(longest + margin_s, ALB_IDLE_TIMEOUT_MIN)
    if wanted > ALB_IDLE_TIMEOUT_MAX:
        return IdleTimeout(ALB_IDLE_TIMEOUT_MAX, longest, margin_s, "clamped")
    return IdleTimeout(wanted, longest, margin_s, "derived")


@dataclass(frozen=True)
class DeregistrationDelay:
    seconds: int
    max_generation_seconds: int

    def summary(self) -> str:
        return (
            f"deregistration delay {self.seconds} s (the service's {self.max_generation_seconds} s "
            f"longest request + {self.seconds - self.max_generation_seconds} s; a deploy or "
            "scale-in waits this long per task, then a stream still open is cut)"
        )


def deregistration_delay(max_generation_seconds: float, margin: int = 0) -> DeregistrationDelay:
    """Target-group deregistration delay for a service.

    On a deploy or scale-in ECS deregisters the task and waits out this delay before SIGTERM;
    after SIGTERM only the container stopTimeout (at most 120 s on Fargate) is left. So the delay
    must be at least the service's longest generation (plus ``margin``, default 0 s), and the ALB
    allows at most 3600 s.
    """
    gen = math.ceil(non_negative(max_generation_seconds, "max_generation_seconds"))
    value = gen + math.ceil(non_negative(margin, "deregistration delay margin"))
    if value > TARGET_GROUP_DEREGISTRATION_DELAY_MAX:
        raise SizingError(
            f"a deregistration delay of {value} s (to cover a {gen} s generation) is above the "
            f"ALB maximum of {TARGET_GROUP_DEREGISTRATION_DELAY_MAX} s; lower maxGenerationSeconds"
        )
    return DeregistrationDelay(value, gen)


@dataclass(frozen=True)
class GracePeriod:
    seconds: int
    image_pull_seconds: float
    weight_load_seconds: float
    warmup_seconds: float
    safety_factor: float
    overridden: bool

    @property
    def warm_start_seconds(self) -> int:
        """The estimate with the image already on the host (pre-pulled by a warm pool)."""
        return math.ceil((self.weight_load_seconds + self.warmup_seconds) * self.safety_factor)

    def warm_start_summary(self) -> str:
        """The decision line for a task that starts on a warm-pool instance."""
        if self.overridden:
            return "warm start: image pre-pulled by the warm pool (grace period overridden)"
        return (
            f"warm start: image pre-pulled by the warm pool, so about {self.warm_start_seconds} s "
            f"(weight load {self.weight_load_seconds:.0f} s + warm-up {self.warmup_seconds:.0f} s"
            f", x {self.safety_factor:g}); the grace period keeps the cold {self.seconds} s, as "
            "a scale-out beyond the warm pool starts cold"
        )

    def summary(self) -> str:
        if self.overridden:
            return f"health-check grace period {self.seconds} s (override)"
        return (
            f"health-check grace period {self.seconds} s (image pull {self.image_pull_seconds:.0f}"
            f" s + weight load {self.weight_load_seconds:.0f} s + warm-up "
            f"{self.warmup_seconds:.0f} s, x {self.safety_factor:g})"
        )


def image_pull_seconds(image_gib: float, mib_per_second: float) -> float:
    """Seconds to pull and extract an image of `image_gib` at `mib_per_second`."""
    return image_gib * 1024 / mib_per_second


def health_check_grace_period(
    image_gib: float,
    weights_gib: float,
    *,
    image_pull_mib_per_second: float,
    weight_load_mib_per_second: float,
    warmup_seconds: float,
    safety_factor: float = 1.5,
    cap_seconds: int = 3600,
    override: int | None = None,
) -> GracePeriod:
    """ECS health-check grace period: how long a new task may fail health checks while loading.

    Estimate for a cold instance (the worst case a scale-out meets; prefer-cached pulls make warm
    instances faster): the image pulled at ``image_pull_mib_per_second``, the weights loaded at
    ``weight_load_mib_per_second``, then ``warmup_seconds``, all times ``safety_factor``
    (default 1.5). An estimate above ``cap_seconds`` (default 3600 s) is an error: such a model
    needs a warm pool or faster storage, or an explicit ``override`` (default None), which may be
    0 up to ECS's maximum of 2147483647 s. The rates' and warm-up's defaults and their reasons
    are the config's (`platform.models.<name>.startup`).
    """
    if override is not None:
        # Config values arrive typed, but callers outside the plan may pass anything.
        if isinstance(override, bool) or not isinstance(override, (int, float)):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise SizingError(
                f"health-check grace period override must be seconds, got {override!r}"
            )
        if not 0 <= override <= ECS_GRACE_PERIOD_MAX or float(override) != int(override):
            raise SizingError(
                f"health-check grace period override {override!r} must be a whole number of "
                f"seconds from 0 to {ECS_GRACE_PERIOD_MAX}"
            )
        return GracePeriod(int(override), 0.0, 0.0, 0.0, 1.0, True)
    image = non_negative(image_gib, "image_gib")
    weights = non_negative(weights_gib, "weights_gib")
    pull_rate = non_negative(image_pull_mib_per_second, "image_pull_mib_per_second")
    load_rate = non_negative(weight_load_mib_per_second, "weight_load_mib_per_second")
    if pull_rate == 0 or load_rate == 0:
        raise SizingError("image pull and weight load rates must be above 0 MiB/s")
    warmup = non_negative(warmup_seconds, "warmup_seconds")
    factor = non_negative(safety_factor, "safety_factor")
    if factor < 1:
        raise SizingError(f"safety_factor must be at least 1, got {safety_factor!r}")
    pull_s = image_pull_seconds(image, pull_rate)
    load_s = weights * 1024 / load_rate
    estimate = math.ceil((pull_s + load_s + warmup) * factor)
    if estimate > cap_seconds:
        raise SizingError(
            f"the estimated load time of {estimate} s (image pull {pull_s:.0f} s + weight load "
            f"{load_s:.0f} s + warm-up {warmup:.0f} s, x {factor:g}) is above the {cap_seconds} s "
            "cap; use a warm pool or faster weight storage, or set the grace period explicitly"
        )
    return GracePeriod(estimate, pull_s, load_s, warmup, factor, False)
