"""The `rollout` section's validation and what is decided from it (pure)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from ecs_inference.operations.alarms import service_alarms
from ecs_inference.operations.watch import WatchedService
from ecs_inference.rollouts.decisions import (
    BAKE_REQUESTS,
    RolloutFacts,
    bake_minutes,
    decide_rollout,
    deployment_alarms,
    shift_minutes,
)
from ecs_inference.rollouts.input import RerankerRolloutConfig, RolloutConfig


def config(**keys: object) -> RolloutConfig:
    return RolloutConfig.model_validate(keys)


def facts(kind: str = "vllm", min_count: int = 1, rate: float | None = 30.0) -> RolloutFacts:
    return RolloutFacts(
        stack="prod",
        watched=WatchedService("llama", kind, min_count, "l40s", True),
        served_model="llama",
        default_prompt="Reply with the single word: ready",
        requests_per_task_minute=rate,
        startup_seconds=600,
    )


@pytest.mark.parametrize(
    ("keys", "message"),
    [
        ({"strategy": "canary", "canaryPercent": 0.05}, "greater than or equal to 0.1"),
        ({"strategy": "canary", "canaryPercent": 10.05}, "multiple of 0.1"),
        ({"strategy": "linear", "linearStepPercent": 2}, "greater than or equal to 3"),
        ({"strategy": "blueGreen", "bakeMinutes": 1441}, "less than or equal to 1440"),
        ({"bakeMinutes": 5}, "bakeMinutes applies to blueGreen, canary and linear only"),
        ({"strategy": "blueGreen", "smoke": {"expect": "("}}, "is not a regular expression"),
        ({"strategy": "redBlack"}, "'rolling', 'blueGreen', 'canary' or 'linear'"),
    ],
)
def test_a_bad_rollout_is_refused(keys: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message.replace("(", r"\(")):
        config(**keys)


def test_a_reranker_query_needs_its_documents() -> None:
    with pytest.raises(ValidationError, match="give query and documents together"):
        RerankerRolloutConfig.model_validate({"smoke": {"query": "refunds?"}})


def test_rolling_is_the_default_and_decides_nothing_more() -> None:
    spec, lines = decide_rollout(config(), facts())
    assert spec.strategy == "ROLLING" and not spec.config.native and lines == []


def test_the_bake_lets_the_alarms_see_enough_requests() -> None:
    """bake = max(longest alarm window, ceil(BAKE_REQUESTS / requests per minute))."""
    assert bake_minutes(5, 60.0) == 5
    assert bake_minutes(5, 10.0) == BAKE_REQUESTS // 10
    assert bake_minutes(5, 0.01) == 1440
    assert bake_minutes(5, None) == 5
    spec, (line,) = decide_rollout(config(strategy="blueGreen"), facts(min_count=1, rate=4.0))
    assert spec.bake_minutes == 25
    assert "bake 25 min (max(alarm window 5 min, 100 requests at 4/min))" in line


def test_the_alarm_window_is_the_alarms_own() -> None:
    names, window = deployment_alarms(facts())
    alarms = {a.name: a.request for a in service_alarms("prod", WatchedService("llama", "vllm", 1))}
    assert set(names) <= set(alarms)
    assert window == max(
        alarms[n]["EvaluationPeriods"] * alarms[n].get("Period", 60) // 60 for n in names
    )


def test_the_shift_counts_start_waits_and_bake() -> None:
    assert shift_minutes(config(strategy="blueGreen"), 5, 600) == 15
    assert shift_minutes(config(strategy="canary", canaryWaitMinutes=15), 10, 600) == 35
    # 25 % steps: 4 steps, 3 waits between them
    linear = config(strategy="linear", linearStepPercent=25, linearIntervalMinutes=5)
    assert shift_minutes(linear, 5, 60) == 1 + 15 + 5


def test_the_smoke_bound_is_the_latency_target_unless_set() -> None:
    spec, _ = decide_rollout(config(strategy="canary"), facts())
    assert spec.smoke["firstTokenSeconds"] == 10.0
    spec, _ = decide_rollout(
        config(strategy="canary", smoke={"maxFirstTokenSeconds": 2, "prompt": "hi", "expect": "h"}),
        facts(),
    )
    assert (spec.smoke["firstTokenSeconds"], spec.smoke["prompt"], spec.smoke["expect"]) == (
        2,
        "hi",
        "h",
    )


def test_a_reranker_smoke_ranks_a_known_order() -> None:
    spec, _ = decide_rollout(
        RerankerRolloutConfig.model_validate({"strategy": "blueGreen"}),
        facts(kind="reranker", rate=None),
    )
    assert spec.smoke["kind"] == "rerank" and len(spec.smoke["documents"]) == 2
