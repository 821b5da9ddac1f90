"""A service's rollout decided from its `rollout` section and its own facts (pure).

The deployment alarms are the service's own paging alarms that judge a revision (target 5xx
share, time to first token, engine down), named by the same function the operations feature
creates them with. The bake time is long enough for the slowest of those alarms to judge the new
revision on real traffic:

    bake_minutes = max(alarm_window_minutes, ceil(BAKE_REQUESTS / requests_per_minute))

where `alarm_window_minutes` is the longest evaluation window (periods x period) of the deployment
alarms, and `requests_per_minute` the traffic the service is sized to take at its minimum count
(its scaling target per task x minCount). Clamped to ECS's 0-1440 minutes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from ecs_inference.contracts.aws_limits import ECS_BAKE_MINUTES_RANGE, LAMBDA_TIMEOUT_MAX_SECONDS
from ecs_inference.operations.alarms import service_alarms
from ecs_inference.operations.input import AlarmsConfig
from ecs_inference.operations.watch import WatchedService
from ecs_inference.rollouts.input import RerankerSmokeConfig, RolloutConfig
from ecs_inference.rollouts.spec import ROLLING, RolloutSpec

DEPLOYMENT_ALARM_KEYS = ("target-5xx", "ttft-p99", "engine-down")
"""The paging alarms (`operations.alarms.service_alarms` keys) that judge a revision."""
BAKE_REQUESTS = 100
"""Requests the alarms should have seen from the new revision before the old one stops."""
SMOKE_LAMBDA_TIMEOUT_SECONDS = 300
"""The smoke hook's Lambda timeout: one short streamed answer, with room for a cold token call."""
SMOKE_MARGIN_SECONDS = 30
"""Above the first-token bound: the rest of the short answer, the token call and TLS."""
RERANK_QUERY = "How do I reset my password?"
RERANK_DOCUMENTS = (
    "To reset your password, open Settings, choose Security and select Reset password.",
    "Our office is closed on public holidays.",
)
"""The re-ranker smoke test: a query whose relevant document is unmistakable, in that order."""


@dataclass(frozen=True, kw_only=True)
class RolloutFacts:
    """What a rollout is decided from besides its section."""

    stack: str
    watched: WatchedService
    """The service as its paging alarms watch it (name, engine or `reranker`, minCount,
    whether the engine's series exist)."""
    served_model: str
    """The model name requests carry."""
    default_prompt: str
    """The engine's smoke prompt (`Engine.smoke_prompt`)."""
    requests_per_task_minute: float | None
    """The scaling target per task per minute; None: not request-based (alarm window only)."""
    startup_seconds: int
    """How long a new task takes to serve (the health-check grace period)."""
    alarm_settings: AlarmsConfig = field(default_factory=AlarmsConfig)


def deployment_alarms(facts: RolloutFacts) -> tuple[tuple[str, ...], int]:
    """The deployment alarms' names and their longest evaluation window in minutes."""
    alarms = [
        a
        for a in service_alarms(facts.stack, facts.watched, facts.alarm_settings)
        if a.key in DEPLOYMENT_ALARM_KEYS
    ]
    window = max(
        (a.request["EvaluationPeriods"] * a.request.get("Period", 60) // 60 for a in alarms),
        default=0,
    )
    return tuple(a.name for a in alarms), window


def bake_minutes(window_minutes: int, requests_per_minute: float | None) -> int:
    """`max(window, ceil(BAKE_REQUESTS / rate))`, within ECS's range (module docstring)."""
    low, high = ECS_BAKE_MINUTES_RANGE
    wanted = window_minutes
    if requests_per_minute:
        wanted = max(wanted, math.ceil(BAKE_REQUESTS / requests_per_minute))
    return min(max(wanted, low), high)


def shift_minutes(config: RolloutConfig, bake: int, startup_seconds: int) -> int:
    """Minutes the green revision runs beside the blue one: its start, the shift's waits and
    the bake."""
    waits = 0
    if config.strategy == "canary":
        waits = config.canary_wait_minutes
    elif config.strategy == "linear":
        steps = math.ceil(100 / config.linear_step_percent)
        waits = (steps - 1) * config.linear_interval_minutes
    return math.ceil(startup_seconds / 60) + waits + bake


def decide_rollout(config: RolloutConfig, facts: RolloutFacts) -> tuple[RolloutSpec, list[str]]:
    """The rollout spec and its decision line."""
    if not config.native:
        # The deploy line already says how a rolling update uses the pool.
        return ROLLING, []
    names, window = deployment_alarms(facts)
    rate = (
        facts.requests_per_task_minute * max(facts.watched.min_count, 1)
        if facts.requests_per_task_minute
        else None
    )
    bake = config.bake_minutes if config.bake_minutes is not None else bake_minutes(window, rate)
    smoke = _smoke(config, facts)
    spec = RolloutSpec(
        config=config,
        bake_minutes=bake,
        alarm_names=names,
        smoke=smoke,
        shift_minutes=shift_minutes(config, bake, facts.startup_seconds),
    )
    return spec, [_line(config, spec, window, rate)]


def _smoke(config: RolloutConfig, facts: RolloutFacts) -> dict[str, Any]:
    """The service's part of the hook's `hookDetails` (camelCase, `SmokeSettings`'s keys)."""
    smoke = config.smoke
    first = smoke.max_first_token_seconds or facts.alarm_settings.ttft_p99_seconds
    deadline = min(first + SMOKE_MARGIN_SECONDS, SMOKE_LAMBDA_TIMEOUT_SECONDS - 10)
    common = {"model": facts.served_model, "firstTokenSeconds": first, "deadlineSeconds": deadline}
    if isinstance(smoke, RerankerSmokeConfig):
        return {
            "kind": "rerank",
            "prompt": smoke.query or RERANK_QUERY,
            "documents": list(smoke.documents or RERANK_DOCUMENTS),
            **common,
        }
    return {
        "kind": "chat",
        "prompt": smoke.prompt or facts.default_prompt,
        **({"expect": smoke.expect} if smoke.expect else {}),
        **common,
    }


def _line(config: RolloutConfig, spec: RolloutSpec, window: int, rate: float | None) -> str:
    if config.strategy == "canary":
        how = (
            f"canary ({config.canary_percent:g} % for {config.canary_wait_minutes} min, "
            "then the rest)"
        )
    elif config.strategy == "linear":
        how = (
            f"linear ({config.linear_step_percent:g} % every {config.linear_interval_minutes} min)"
        )
    else:
        how = "blue/green (all production traffic at once)"
    derived = (
        "set"
        if config.bake_minutes is not None
        else f"max(alarm window {window} min, {BAKE_REQUESTS} requests at "
        + (f"{rate:g}/min" if rate else "an unknown rate")
        + ")"
    )
    smoke = spec.smoke
    test = (
        f"reranks a fixed query ({len(smoke['documents'])} documents in a known order)"
        if smoke["kind"] == "rerank"
        else f"streams {smoke['prompt']!r}"
        + (f" expecting /{smoke['expect']}/" if "expect" in smoke else "")
        + f", first token within {smoke['firstTokenSeconds']:g} s"
    )
    return (
        f"rollout: {how}; a full green revision runs beside the blue one for ~{spec.shift_minutes}"
        f" min; smoke hook at POST_TEST_TRAFFIC_SHIFT {test}; deployment alarms "
        f"{', '.join(spec.alarm_names) or 'none'} roll back; bake {spec.bake_minutes} min "
        f"({derived}); browser (cookie) access off for this service: ECS shifts one production "
        "rule, the bearer (jwt-validation) one"
    )


assert SMOKE_LAMBDA_TIMEOUT_SECONDS <= LAMBDA_TIMEOUT_MAX_SECONDS
