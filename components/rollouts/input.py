"""`platform.models.<name>.rollout` and `platform.rerankers.<name>.rollout`: how a new revision
of a service replaces the old one.

`rolling` (the default) is ECS's rolling update with the rolling-back circuit breaker. The other
three are ECS's native deployment strategies, which run a whole new (green) revision beside the
old (blue) one: `blueGreen` moves all production traffic at once, `canary` moves `canaryPercent`
first and the rest after `canaryWaitMinutes`, `linear` moves `linearStepPercent` every
`linearIntervalMinutes`. Before any production traffic moves, the smoke test (`smoke`) sends real
requests to the new revision through the test listener rule; its failure, or a deployment alarm
during the shift or the bake, rolls back.

Why rolling is the default for GPU model services: ECS scales the green revision to the service's
full task count before it shifts any traffic, whatever the strategy (canary at 5 % still launches
a whole green fleet), so the three native strategies need twice the service's accelerators during
a deployment, for as long as the shift and the bake last. Rolling with the circuit breaker needs
at most one task's room and catches a revision that never gets healthy; choose `canary` or
`blueGreen` for a service whose pool can hold both revisions and where a healthy revision serving
a bad model must never take all traffic (docs/rollouts.md).
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator, model_validator

from ecs_inference.config.base import Section
from ecs_inference.contracts.aws_limits import (
    ECS_BAKE_MINUTES_RANGE,
    ECS_CANARY_PERCENT_RANGE,
    ECS_LINEAR_STEP_PERCENT_RANGE,
    ECS_PERCENT_STEP,
)

Strategy = Literal["rolling", "blueGreen", "canary", "linear"]

_BAKE_LOW, _BAKE_HIGH = ECS_BAKE_MINUTES_RANGE


def _on_step(value: float) -> float:
    steps = round(value / ECS_PERCENT_STEP)
    if abs(steps * ECS_PERCENT_STEP - value) > 1e-9:
        raise ValueError(f"must be a multiple of {ECS_PERCENT_STEP:g} (ECS refuses {value!r})")
    return value


class SmokeConfig(Section):
    """The smoke test the new revision must pass at `POST_TEST_TRAFFIC_SHIFT` (blueGreen, canary
    and linear only)."""

    prompt: str | None = Field(None, min_length=1, max_length=2000)
    """Chat prompt a model service is sent (re-rankers get a fixed query with a known order);
    unset: its engine's default (`Engine.smoke_prompt`)."""
    expect: str | None = Field(None, min_length=1, max_length=500)
    """Regular expression the answer must contain; unset: any non-empty answer passes."""
    max_first_token_seconds: float | None = Field(None, gt=0, le=600)
    """Longest wait for the first streamed token, in seconds; unset: the stack's time-to-first-
    token alarm threshold (`operations.alarms.ttftP99Seconds`), the latency the service promises."""

    @field_validator("expect")
    @classmethod
    def _pattern(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                re.compile(value)
            except re.error as exc:
                raise ValueError(f"is not a regular expression: {exc}") from None
        return value


class RolloutConfig(Section):
    """How a new revision replaces the old one: the strategy and its timings (minutes)."""

    strategy: Strategy = "rolling"
    """`rolling` (ECS rolling update, circuit breaker with rollback; needs at most one extra
    task's room), `blueGreen`, `canary` or `linear` (ECS native: a full new revision beside the
    old one, a smoke test through the test listener rule, deployment alarms that roll back)."""
    canary_percent: float = Field(
        10.0, ge=ECS_CANARY_PERCENT_RANGE[0], le=ECS_CANARY_PERCENT_RANGE[1]
    )
    """canary: production traffic the new revision takes first, in percent (0.1-100, multiples
    of 0.1)."""
    canary_wait_minutes: int = Field(10, ge=_BAKE_LOW, le=_BAKE_HIGH)
    """canary: minutes at `canaryPercent` before the rest of the traffic moves (0-1440)."""
    linear_step_percent: float = Field(
        25.0, ge=ECS_LINEAR_STEP_PERCENT_RANGE[0], le=ECS_LINEAR_STEP_PERCENT_RANGE[1]
    )
    """linear: production traffic moved at each step, in percent (3-100, multiples of 0.1)."""
    linear_interval_minutes: int = Field(5, ge=_BAKE_LOW, le=_BAKE_HIGH)
    """linear: minutes between steps (0-1440)."""
    bake_minutes: int | None = Field(None, ge=_BAKE_LOW, le=_BAKE_HIGH)
    """Minutes both revisions keep running after all production traffic moved, while the
    deployment alarms may still roll back (0-1440); unset: derived from the service's traffic
    (docs/rollouts.md, "Bake time")."""
    smoke: SmokeConfig = Field(default_factory=lambda: SmokeConfig.model_validate({}))
    """The smoke test before production traffic moves."""

    _percent = field_validator("canary_percent", "linear_step_percent")(_on_step)

    @model_validator(mode="after")
    def _rolling_has_no_timings(self) -> RolloutConfig:
        if self.strategy == "rolling" and self.bake_minutes is not None:
            raise ValueError(
                "bakeMinutes applies to blueGreen, canary and linear only (a rolling update "
                "stops old tasks as new ones get healthy); remove it or choose a strategy"
            )
        return self

    @property
    def native(self) -> bool:
        """Whether ECS runs a green revision beside the blue one (not rolling)."""
        return self.strategy != "rolling"


class RerankerSmokeConfig(Section):
    """A re-ranker's smoke test: a query and documents whose order the new revision must
    reproduce."""

    query: str | None = Field(None, min_length=1, max_length=2000)
    """The query; unset: a built-in one whose relevant document is unmistakable."""
    documents: list[str] | None = Field(None, min_length=2, max_length=20)
    """The documents in the order the service must rank them, most relevant first (2-20);
    required with `query`, unset with it."""
    max_first_token_seconds: float | None = Field(None, gt=0, le=600)
    """Longest wait for the answer, in seconds; unset: the stack's time-to-first-token alarm
    threshold (`operations.alarms.ttftP99Seconds`)."""

    @model_validator(mode="after")
    def _together(self) -> RerankerSmokeConfig:
        if (self.query is None) != (self.documents is None):
            raise ValueError(
                "give query and documents together: the test needs the order the documents "
                "must come back in for that query"
            )
        return self


class RerankerRolloutConfig(RolloutConfig):
    """A re-ranker's rollout: the same strategies, a ranking smoke test."""

    smoke: RerankerSmokeConfig = Field(  # pyright: ignore[reportIncompatibleVariableOverride]
        default_factory=lambda: RerankerSmokeConfig.model_validate({})
    )
    """The ranking test before production traffic moves."""


def default_rollout() -> RolloutConfig:
    """The default section (rolling)."""
    return RolloutConfig.model_validate({})


def default_reranker_rollout() -> RerankerRolloutConfig:
    """A re-ranker's default section (rolling)."""
    return RerankerRolloutConfig.model_validate({})
