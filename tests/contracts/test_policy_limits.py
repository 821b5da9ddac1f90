"""The policy pack's copy of the AWS limits agrees with `contracts/aws_limits.py`.

The pack ships alone, so it keeps its own copy (`policy/guardrails/aws_limits.py`); every public
name in that copy must exist in the program's table with the same value.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from ecs_inference.contracts import aws_limits

ROOT = Path(__file__).resolve().parents[2]


def load(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location("policy_aws_limits", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def public_values(module: ModuleType) -> dict[str, object]:
    return {
        name: value
        for name, value in vars(module).items()
        if name.isupper() and not name.startswith("_")
    }


def test_policy_copy_agrees_with_the_contracts() -> None:
    copy = public_values(load(ROOT / "policy/guardrails/aws_limits.py"))
    assert copy, "the policy pack's limits copy defines nothing"
    program = public_values(aws_limits)
    missing = sorted(set(copy) - set(program))
    assert not missing, f"policy limits not in contracts/aws_limits.py: {missing}"
    differ = {n: (copy[n], program[n]) for n in copy if copy[n] != program[n]}
    assert not differ, f"policy copy (left) disagrees with contracts (right): {differ}"


def test_the_pack_reads_its_limits_from_its_copy() -> None:
    """Each limit the pack checks is defined once in the pack, in its copy."""
    # The pack runs with its own directory first on sys.path, as the CLI starts it.
    if str(ROOT / "policy") not in sys.path:
        sys.path.insert(0, str(ROOT / "policy"))
    from guardrails import fargate, resources, streaming

    assert fargate.FARGATE_GRID == aws_limits.FARGATE_TASK_SIZES
    assert fargate.PLATFORM_1_4_CPU == aws_limits.FARGATE_PLATFORM_1_4_MIN_CPU
    assert streaming.MAX_DEREGISTRATION_DELAY == aws_limits.TARGET_GROUP_DEREGISTRATION_DELAY_MAX
    assert resources.DEFAULT_IDLE_TIMEOUT == aws_limits.ALB_IDLE_TIMEOUT_DEFAULT
    idle = streaming._IDLE_SCHEMA["minIdleTimeoutSeconds"]  # pyright: ignore[reportPrivateUsage]
    assert (idle["minimum"], idle["maximum"]) == aws_limits.ALB_IDLE_TIMEOUT_RANGE
