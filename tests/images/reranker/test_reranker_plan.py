"""The plan states the re-ranker's admission limits and hands the service its request timeout.

The limits come from the image contract's pure `admission_limits` for the planned Fargate size
and the service's `maxRequestSeconds`, the same bound the ALB idle timeout and deregistration
delay are derived from.
"""

from __future__ import annotations

from ecs_inference.contracts import reranker as contract
from ecs_inference.plan import build_plan
from tests.stack_config import mutate, reference


def _plan(raw: dict, stack: str = "dev"):
    from ecs_inference.config.load import load_stack_config

    return build_plan(load_stack_config(raw, stack))


def test_plan_states_admission_limits_derived_from_task_size_and_request_timeout():
    raw = reference("dev")
    name = next(iter(raw["rerankers"]))
    for seconds in (10, 45):
        changed = mutate(raw, f"rerankers.{name}.maxRequestSeconds", seconds)
        plan = _plan(changed)
        r = plan.rerankers[name]
        expected = contract.admission_limits(r.cpu / 1024, request_timeout_seconds=seconds)
        assert expected.summary() in plan.decisions[f"reranker {name}"]
        env = {e["name"]: e["value"] for e in r.container_environment}
        assert env[contract.ENV_REQUEST_TIMEOUT_SECONDS] == str(seconds)
