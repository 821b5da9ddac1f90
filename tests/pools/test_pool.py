"""A pool's checks: its input refuses what AWS would refuse of a value (each at its camelCase key,
all at once), and `pools.decisions.pool_problems` what depends on the name, kind and types."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from ecs_inference.config.issues import ConfigError
from ecs_inference.pools.decisions import pool_problems, refuse
from ecs_inference.pools.input import PoolConfig, WarmPoolConfig
from ecs_inference.sizing import catalog
from tests.pools.conftest import gpu_args, neuron_args


def test_valid_args_have_no_problems() -> None:
    assert pool_problems("gpu-l40s", gpu_args()[0], "nvidia") == []
    assert pool_problems("neuron", neuron_args(instance_type="trn1.2xlarge")[0], "neuron") == []
    warm = WarmPoolConfig(min_size=2, max_group_prepared_capacity=4, state="Running")
    assert pool_problems("gpu", gpu_args(warm_pool=warm)[0], "nvidia") == []


@pytest.mark.parametrize(
    ("name", "args", "accelerator", "key", "fragment"),
    [
        ("neuron", neuron_args(instance_type="g6e.xlarge"), "neuron", "instanceType",
         "g6e.xlarge has NVIDIA GPU accelerators, but an InferentiaPool needs"),
        ("gpu", gpu_args(instance_type="inf2.xlarge"), "nvidia", "instanceType",
         "put it in an InferentiaPool instead"),
        ("gpu", gpu_args(instance_type="g6e.xlarg"), "nvidia", "instanceType",
         "did you mean g6e.xlarge"),
        ("ecs-gpu", gpu_args(), "nvidia", "name", "ECS rejects"),
        ("FargatePool", gpu_args(), "nvidia", "name", "ECS rejects"),
        ("gpu pool", gpu_args(), "nvidia", "name", "letters, digits"),
    ],
)  # fmt: skip
def test_problems_name_the_key_and_say_why(
    name: str, args: tuple[PoolConfig, Any], accelerator: catalog.Accelerator, key: str,
    fragment: str,
) -> None:  # fmt: skip
    problems = pool_problems(name, args[0], accelerator)
    assert [k for k, _ in problems] == [key]
    assert fragment in problems[0][1]


@pytest.mark.parametrize(
    ("fields", "loc", "fragment"),
    [
        ({"min_size": 3, "max_size": 2}, (), "minSize (3) must not exceed maxSize (2)"),
        ({"max_size": 0}, ("max_size",), "greater than or equal to 1"),
        ({"root_volume_gib": 20}, ("root_volume_gib",), "greater than or equal to 50"),
        ({"root_volume_iops": 3000, "root_volume_throughput": 1000}, ("rootVolumeThroughput",),
         "needs at least 4000 IOPS"),
        ({"root_volume_throughput": 2000}, ("root_volume_throughput",), "less than or equal"),
        ({"target_capacity_percent": 0}, ("target_capacity_percent",), "greater than or equal"),
        ({"ami_id": "ubuntu"}, ("ami_id",), "should match pattern"),
        ({"warm_pool": {"state": "Hibernated"}}, ("warm_pool", "state"), "use Stopped"),
        ({"warm_pool": {"reuseOnScaleIn": True}}, ("warm_pool", "reuseOnScaleIn"), "Extra"),
        ({"warm_pool": {"minSize": 3, "maxGroupPreparedCapacity": 2}},
         ("warm_pool", "maxGroupPreparedCapacity"), "below the warm pool minSize (3)"),
    ],
)  # fmt: skip
def test_the_input_refuses_a_value_at_its_key(
    fields: dict[str, Any], loc: tuple[str, ...], fragment: str
) -> None:
    with pytest.raises(ValidationError) as info:
        PoolConfig(instance_type="g6e.xlarge", **fields)
    found = {tuple(e["loc"])[: len(loc)]: e["msg"] for e in info.value.errors()}
    assert loc in found, found
    assert fragment in found[loc]


def test_all_input_problems_reported_at_once() -> None:
    with pytest.raises(ValidationError) as info:
        PoolConfig(instance_type="g6e.xlarge", max_size=0, root_volume_gib=10)
    assert {e["loc"][0] for e in info.value.errors()} == {"max_size", "root_volume_gib"}


def test_wrong_kind_is_a_problem_of_the_instance_type() -> None:
    problems = pool_problems("neuron", neuron_args(instance_type="g6e.xlarge")[0], "neuron")
    assert problems[0][0] == "instanceType"
    with pytest.raises(ConfigError) as info:
        refuse("neuron", "inf", problems)
    (issue,) = info.value.issues
    assert issue.path == "platform.neuronPools.inf.instanceType"
    assert "g6e.xlarge" in issue.message and "GpuAsgPool" in issue.message


def test_a_pool_without_types_is_a_problem() -> None:
    problems = pool_problems("gpu", PoolConfig(), "nvidia")
    assert [k for k, _ in problems] == ["instanceTypes"]
