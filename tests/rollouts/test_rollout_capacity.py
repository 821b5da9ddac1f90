"""A blue/green, canary or linear deployment runs a second full revision: the pool must hold it
at the service's largest count (a preview error naming the numbers otherwise), and the cost
states one rollout."""

from __future__ import annotations

import pytest

from ecs_inference import cost
from ecs_inference.sizing.headroom import RolloutRoom
from tests.stack_config import issues_of, mutate, plan_of, reference


def test_the_room_is_twice_the_largest_count() -> None:
    assert RolloutRoom("canary", 2, 1, 4).fits
    assert not RolloutRoom("canary", 2, 1, 3).fits
    assert RolloutRoom("blueGreen", 3, 2, 3).fits  # 6 tasks on 3 instances of 2
    problem = RolloutRoom("blueGreen", 4, 1, 5).problem()
    assert problem is not None
    assert "4 green task(s) beside 4 blue = 8 task(s) on 8 instance(s)" in problem
    assert "the pool leaves this service 5" in problem and "by 3" in problem


@pytest.mark.parametrize(
    ("model", "pool", "size", "numbers"),
    [
        ("llama-70b", "l40s-8x", 3, "= 4 task(s) on 4 instance(s) at 1 per instance; the pool "
         "leaves this service 3"),
        ("qwen-32b", "l40s-4x", 7, "= 8 task(s) on 8 instance(s) at 1 per instance; the pool "
         "leaves this service 7"),
    ],
)  # fmt: skip
def test_a_pool_too_small_for_the_shift_fails_the_preview(
    model: str, pool: str, size: int, numbers: str
) -> None:
    raw = mutate(reference("prod"), f"gpuPools.{pool}.maxSize", size)
    issues = issues_of(raw, "prod")
    assert [i.path for i in issues] == [f"platform.models.{model}.rollout.strategy"]
    assert numbers in issues[0].message and "PROVISIONING" in issues[0].message


def test_the_same_pool_is_enough_for_a_rolling_service() -> None:
    raw = mutate(reference("prod"), "gpuPools.l40s-8x.maxSize", 3)
    raw = mutate(raw, "models.llama-70b.rollout", {"strategy": "rolling"})
    plan_of(raw, "prod")


def test_the_cost_states_one_rollout() -> None:
    plan = plan_of(reference("prod"), "prod")
    rollouts = {name: (usd, how) for name, usd, how in cost.estimate(plan).rollouts}
    assert set(rollouts) == {"llama-70b", "qwen-32b"}
    usd, how = rollouts["qwen-32b"]
    minutes = plan.models["qwen-32b"].rollout.shift_minutes
    price = cost.stack_input(plan).pools
    (pool,) = [p for p in price if p.name == "l40s-4x"]
    # 2 green tasks at one per instance: 2 more instances for the rollout's minutes
    assert usd == pytest.approx(2 * pool.usd_per_hour * minutes / 60)
    assert f"for ~{minutes} min" in how
