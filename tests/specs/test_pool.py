"""The pool spec's checks (`specs.pool.pool_problems`): each names the camelCase key it came from
and says why, all at once."""

from __future__ import annotations

import pytest

from ecs_inference.sizing import catalog
from ecs_inference.specs.pool import PoolArgumentError, PoolSpec, WarmPoolSpec, pool_problems
from tests.capacity.conftest import gpu_args, neuron_args


def test_valid_args_have_no_problems() -> None:
    assert pool_problems("gpu-l40s", gpu_args(), "nvidia") == []
    assert pool_problems("neuron", neuron_args(instance_type="trn1.2xlarge"), "neuron") == []
    warm = WarmPoolSpec(min_size=2, max_group_prepared_capacity=4, state="Running")
    assert pool_problems("gpu", gpu_args(warm_pool=warm), "nvidia") == []


@pytest.mark.parametrize(
    ("name", "args", "accelerator", "key", "fragment"),
    [
        ("neuron", neuron_args(instance_type="g6e.xlarge"), "neuron", "instanceType",
         "g6e.xlarge has NVIDIA GPU accelerators, but an InferentiaPool needs"),
        ("gpu", gpu_args(instance_type="inf2.xlarge"), "nvidia", "instanceType",
         "put it in an InferentiaPool instead"),
        ("gpu", gpu_args(instance_type="g6e.xlarg"), "nvidia", "instanceType",
         "did you mean g6e.xlarge"),
        ("gpu", gpu_args(min_size=3, max_size=2), "nvidia", "minSize",
         "minSize (3) must not exceed maxSize (2)"),
        ("gpu", gpu_args(max_size=0), "nvidia", "maxSize", "between 1 and 1000"),
        ("gpu", gpu_args(root_volume_gib=20), "nvidia", "rootVolumeGib", "root snapshot is 30"),
        ("gpu", gpu_args(root_volume_gib=30, root_volume_iops=16000), "nvidia",
         "rootVolumeIops", "needs at least 32 GiB"),
        ("gpu", gpu_args(root_volume_iops=3000, root_volume_throughput=1000), "nvidia",
         "rootVolumeThroughput", "needs at least 4000 IOPS"),
        ("gpu", gpu_args(root_volume_throughput=2000), "nvidia", "rootVolumeThroughput",
         "between 125 and 1000"),
        ("gpu", gpu_args(target_capacity_percent=0), "nvidia", "targetCapacityPercent",
         "between 1 and 100"),
        ("gpu", gpu_args(ami_id="ubuntu"), "nvidia", "amiId", "must be an AMI id"),
        ("gpu", gpu_args(warm_pool=WarmPoolSpec(reuse_on_scale_in=True)), "nvidia",
         "warmPool.reuseOnScaleIn", "ECS does not allow"),
        ("gpu", gpu_args(warm_pool=WarmPoolSpec(state="Hibernated")), "nvidia",
         "warmPool.state", "use Stopped"),
        ("gpu", gpu_args(warm_pool=WarmPoolSpec(min_size=3, max_group_prepared_capacity=2)),
         "nvidia", "warmPool.maxGroupPreparedCapacity", "below the warm pool minSize (3)"),
        ("ecs-gpu", gpu_args(), "nvidia", "name", "ECS rejects"),
        ("FargatePool", gpu_args(), "nvidia", "name", "ECS rejects"),
        ("gpu pool", gpu_args(), "nvidia", "name", "letters, digits"),
    ],
)  # fmt: skip
def test_problems_name_the_key_and_say_why(
    name: str, args: PoolSpec, accelerator: catalog.Accelerator, key: str, fragment: str
) -> None:
    problems = pool_problems(name, args, accelerator)
    assert [k for k, _ in problems] == [key]
    assert fragment in problems[0][1]


def test_all_problems_reported_at_once() -> None:
    args = gpu_args(instance_type="inf2.xlarge", min_size=5, max_size=1, root_volume_gib=10)
    keys = [k for k, _ in pool_problems("gpu", args, "nvidia")]
    assert sorted(keys) == ["instanceType", "minSize", "rootVolumeGib"]


def test_wrong_kind_is_a_problem_of_the_instance_type() -> None:
    problems = pool_problems("neuron", neuron_args(instance_type="g6e.xlarge"), "neuron")
    assert problems[0][0] == "instanceType"
    assert "g6e.xlarge" in str(PoolArgumentError("neuron", problems))
    assert "GpuAsgPool" in str(PoolArgumentError("neuron", problems))
