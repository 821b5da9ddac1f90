"""The components' own records (`ecs_inference.ledger`) against the stack's plan: built by the
stack program, every reference stack's pools, model services, re-rankers, gateway, workers,
network and operations record the cost facts and the model and re-ranker decisions the plan
computes, so a program that builds the components itself is previewed from the same facts."""

from __future__ import annotations

import dataclasses

import pytest

from ecs_inference import cost, ledger
from ecs_inference.operations.alarms import alarm_metric_count
from tests.stacks import REFERENCE_STACKS, ROOT, reference_plan, stack_config
from tools.recording import run_program


def _recorded(stack: str) -> ledger.Ledger:
    with ledger.collecting() as book:
        run_program(ROOT, project="ecs-inference", stack=stack, config=stack_config(stack))
    return book


def _by_key(pools: list[cost.PoolInput], keys: list[str]) -> dict[str, cost.PoolInput]:
    """Pools by their stack key (a stack names its pool components `<platform>-<key>`)."""
    out = {}
    for pool in pools:
        [key] = [k for k in keys if pool.name == k or pool.name.endswith(f"-{k}")]
        out[key] = dataclasses.replace(pool, name=key)
    return out


@pytest.mark.parametrize("stack", REFERENCE_STACKS)
def test_the_components_record_what_the_plan_decides(stack: str) -> None:
    plan = reference_plan(stack)
    book = _recorded(stack)
    facts = book.stack_input(plan.network.wiring.region)
    assert facts is not None
    planned = cost.stack_input(plan, alarms_metrics=alarm_metric_count(plan.alarm_specs()))
    keys = [p.name for p in planned.pools]
    assert _by_key(list(facts.pools), keys) == {p.name: p for p in planned.pools}
    assert facts.network == planned.network
    assert sorted(facts.fargate, key=repr) == sorted(planned.fargate, key=repr)
    assert (facts.alarms_metrics, facts.kms_keys) == (planned.alarms_metrics, planned.kms_keys)
    for name in plan.models:
        assert book.decided[f"model {name}"] == plan.decisions[f"model {name}"]
    for name in plan.rerankers:
        assert book.decided[f"reranker {name}"] == plan.decisions[f"reranker {name}"]
    assert book.decided.get("network") == plan.decisions.get("network")


def test_nothing_is_recorded_outside_a_ledger() -> None:
    """`pulumi up` opens none: recording is a no-op, and an opened ledger is closed after."""
    with ledger.collecting() as book:
        ledger.record_decisions("model x", ["a"])
    ledger.record_decisions("model y", ["b"])
    assert book.decided == {"model x": ["a"]}
    assert book.stack_input(None) is None
