"""Mixed instances (several types, On-Demand base, Spot) for accelerator Auto Scaling groups:
the combinations AWS refuses, the request shape botocore's autoscaling model accepts, and what a
Spot reclaim means for a slow-to-warm service."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ecs_inference.pools import decisions
from ecs_inference.pools import spot as mi
from ecs_inference.pools.input import PoolConfig, WarmPoolConfig
from ecs_inference.pools.user_data import ecs_agent_settings
from tests.aws_shapes import ShapeError, named_shape, validate_shape


def purchase(**fields: Any) -> PoolConfig:
    """A pool's purchase options, by the names the policy's members have (unvalidated: the
    input's bounds have their own tests)."""
    above = fields.pop("on_demand_percentage_above_base", 100)
    values = PoolConfig().model_dump() | fields
    return PoolConfig.model_construct(
        **values | {"on_demand_percentage_above_base_capacity": above}
    )


class _Checks:
    """`pools.decisions` as the mixed instances checks of a pool with these types."""

    @staticmethod
    def mixed_instances_problems(
        args: PoolConfig, types: list[str], *, warm_pool: bool, max_size: int
    ) -> list[tuple[str, str]]:
        warm = WarmPoolConfig() if warm_pool else None
        pool = args.model_copy(update={"warm_pool": warm, "max_size": max_size})
        return decisions.mixed_instances_problems(pool, types)


checks = _Checks()

TYPES = ["g6e.xlarge", "g6e.2xlarge", "g6e.4xlarge"]
SPOT = purchase(on_demand_base_capacity=1, on_demand_percentage_above_base=25)


def test_strategy_tables_match_the_api_documentation():
    # botocore types both strategies as free strings; the API reference lists the values.
    assert set(decisions.GPU_SPOT_ALLOCATION_STRATEGIES) < set(
        decisions.API_SPOT_ALLOCATION_STRATEGIES
    )
    assert "lowest-price" not in decisions.GPU_SPOT_ALLOCATION_STRATEGIES
    shape: Any = named_shape("autoscaling", "InstancesDistribution")  # cached props: untyped
    assert shape.members["SpotAllocationStrategy"].type_name == "string"


def test_defaults_are_on_demand_and_valid():
    args = purchase()
    assert not args.uses_spot
    assert checks.mixed_instances_problems(args, TYPES, warm_pool=False, max_size=3) == []


@pytest.mark.parametrize(
    ("args", "types", "warm", "max_size", "key", "fragment"),
    [
        # AWS: no warm pool with Spot or a mixed instances policy
        (SPOT, TYPES[:1], True, 3, "warmPool", "Spot Instances"),
        (purchase(), TYPES, True, 3, "warmPool", "3 instance types"),
        (
            purchase(spot_allocation_strategy="lowest-price"),
            TYPES,
            False,
            3,
            "spotAllocationStrategy",
            "most often reclaimed",
        ),
        (
            purchase(spot_allocation_strategy="cheapest"),
            TYPES,
            False,
            3,
            "spotAllocationStrategy",
            "must be one of",
        ),
        (
            purchase(on_demand_allocation_strategy="capacity-optimized"),
            TYPES,
            False,
            3,
            "onDemandAllocationStrategy",
            "prioritized or lowest-price",
        ),
        (
            purchase(on_demand_base_capacity=3, on_demand_percentage_above_base=0),
            TYPES,
            False,
            3,
            "onDemandBaseCapacity",
            "no Spot instance would ever launch",
        ),
        (
            purchase(on_demand_percentage_above_base=0, spot_max_price="free"),
            TYPES,
            False,
            3,
            "spotMaxPrice",
            "above 0",
        ),
        (
            purchase(spot_max_price="3.50"),
            TYPES,
            False,
            3,
            "spotMaxPrice",
            "buys no Spot",
        ),
        (
            purchase(),
            [f"g6e.{i}xlarge" for i in range(41)],
            False,
            3,
            "instanceTypes",
            "at most 40",
        ),
    ],
)
def test_rejected_combinations(args, types, warm, max_size, key, fragment):
    problems = checks.mixed_instances_problems(args, types, warm_pool=warm, max_size=max_size)
    assert any(k == key and fragment in m for k, m in problems), problems


def test_single_type_on_demand_keeps_the_warm_pool():
    assert checks.mixed_instances_problems(purchase(), TYPES[:1], warm_pool=True, max_size=2) == []


def test_policy_request_is_what_autoscaling_accepts():
    policy = mi.mixed_instances_policy_request(
        purchase(
            on_demand_base_capacity=1,
            on_demand_percentage_above_base=0,
            spot_allocation_strategy="capacity-optimized-prioritized",
            spot_max_price="4.5",
        ),
        TYPES,
        "lt-0123456789abcdef0",
        "3",
    )
    request = {
        "AutoScalingGroupName": "inference-gpu-asg-abc1234",
        "MinSize": 0,
        "MaxSize": 4,
        "VPCZoneIdentifier": "subnet-0123456789abcdef0,subnet-0fedcba9876543210",
        "MixedInstancesPolicy": policy,
        "CapacityRebalance": True,
        "NewInstancesProtectedFromScaleIn": True,
    }
    api = validate_shape("autoscaling", "CreateAutoScalingGroup", request)
    overrides = api["MixedInstancesPolicy"]["LaunchTemplate"]["Overrides"]
    assert [o["InstanceType"] for o in overrides] == TYPES
    distribution = api["MixedInstancesPolicy"]["InstancesDistribution"]
    assert distribution["SpotMaxPrice"] == "4.5"


def test_shape_check_catches_a_misspelt_member():
    policy = mi.mixed_instances_policy_request(SPOT, TYPES, "lt-0123456789abcdef0", "1")
    distribution = policy["InstancesDistribution"]
    assert isinstance(distribution, dict)
    distribution["SpotInstancePool"] = 2  # sic: the API member is ...Pools
    with pytest.raises(ShapeError, match="SpotInstancePool"):
        validate_shape(
            "autoscaling",
            "CreateAutoScalingGroup",
            {
                "AutoScalingGroupName": "g",
                "MinSize": 0,
                "MaxSize": 1,
                "MixedInstancesPolicy": policy,
            },
        )


@pytest.mark.parametrize(
    ("base", "pct", "instances", "expected"),
    [
        (1, 100, 4, 4),
        (1, 0, 4, 1),
        (1, 50, 4, 2),  # 1 + floor(3 x 0.5)
        (2, 25, 10, 4),  # 2 + floor(8 x 0.25)
        (5, 0, 3, 3),  # the base caps at the group
        (0, 0, 3, 0),
    ],
)
def test_on_demand_instances(base, pct, instances, expected):
    args = purchase(on_demand_base_capacity=base, on_demand_percentage_above_base=pct)
    assert mi.on_demand_instances(args, instances) == expected


def test_spot_notes_put_numbers_on_a_reclaim():
    notes = mi.spot_interruption_notes(
        SPOT,
        service="llama",
        min_count=1,
        tasks_per_instance=1,
        replacement_seconds=600,
        instance_warmup_seconds=300,
        deregistration_delay_seconds=900,
        max_generation_seconds=900,
    )
    text = "\n".join(notes)
    assert "minimum of 1 task(s) fits the On-Demand instances" in text
    assert "120 s notice" in text
    assert "short ~780 s" in text  # 300 + 600 - 120
    assert "longer than 120 s (up to 900 s" in text


def test_spot_notes_warn_when_the_minimum_rides_on_spot():
    args = purchase(on_demand_base_capacity=0, on_demand_percentage_above_base=0)
    notes = mi.spot_interruption_notes(
        args,
        service="llama",
        min_count=2,
        tasks_per_instance=1,
        replacement_seconds=300,
        instance_warmup_seconds=300,
        deregistration_delay_seconds=60,
        max_generation_seconds=60,
    )
    assert any(
        "its minimum of 2 task(s) needs 2 instance(s), 0 of them On-Demand" in n for n in notes
    )
    assert not any("are cut" in n for n in notes)
    predicted = mi.spot_predictions(
        args, min_count=2, tasks_per_instance=1, max_generation_seconds=60
    )
    assert len(predicted) == 1 and "below its minimum" in predicted[0]
    assert "raise onDemandBaseCapacity to 2" in predicted[0]


def test_on_demand_only_note():
    notes = mi.spot_interruption_notes(
        purchase(),
        service="s",
        min_count=1,
        tasks_per_instance=1,
        replacement_seconds=1,
        instance_warmup_seconds=1,
        deregistration_delay_seconds=1,
        max_generation_seconds=1,
    )
    assert notes == ["s: On-Demand only; several types widen where capacity can be found"]


@settings(max_examples=100, deadline=None)
@given(
    base=st.integers(0, 5),
    pct=st.integers(0, 100),
    n_types=st.integers(1, 5),
    warm=st.booleans(),
    max_size=st.integers(1, 8),
    strategy=st.sampled_from(decisions.API_SPOT_ALLOCATION_STRATEGIES),
)
def test_warm_pool_accepted_only_for_one_on_demand_type(
    base, pct, n_types, warm, max_size, strategy
):
    args = purchase(
        on_demand_base_capacity=base,
        on_demand_percentage_above_base=pct,
        spot_allocation_strategy=strategy,
    )
    types = [f"g6e.{k}xlarge" for k in range(n_types)]
    keys = {
        k
        for k, _ in checks.mixed_instances_problems(args, types, warm_pool=warm, max_size=max_size)
    }
    assert ("warmPool" in keys) == (warm and (pct < 100 or n_types > 1))
    assert ("spotAllocationStrategy" in keys) == (strategy == "lowest-price")
    # whatever is accepted is a request AWS accepts
    if not keys:
        policy = mi.mixed_instances_policy_request(args, types, "lt-0123456789abcdef0", "1")
        validate_shape(
            "autoscaling",
            "CreateAutoScalingGroup",
            {
                "AutoScalingGroupName": "g",
                "MinSize": 0,
                "MaxSize": max_size,
                "MixedInstancesPolicy": policy,
            },
        )


@pytest.mark.parametrize("spot", [False, True])
def test_spot_hosts_drain_on_the_interruption_notice(spot):
    settings_ = ecs_agent_settings("inference", accelerator="nvidia", warm_pool=False, spot=spot)
    assert (settings_.get("ECS_ENABLE_SPOT_INSTANCE_DRAINING") == "true") is spot
