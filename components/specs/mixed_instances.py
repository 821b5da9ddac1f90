"""Several instance types and Spot for an accelerator Auto Scaling group (mixed instances policy).

GPU capacity is the scarcest thing a stack buys: a group pinned to one type cannot scale while
that type is short in an AZ. A mixed instances policy lets the group launch any of the types that
`components.sizing.instance_types.choose_pool_types` proved safe for the pool's task definitions,
and optionally buy part of the capacity as Spot.

What AWS constrains, and this module checks before any resource exists:
- a warm pool cannot be added to a group with a mixed instances policy or whose launch template
  requests Spot Instances (Auto Scaling API reference, PutWarmPool), so a pool of one type
  without Spot must be built with a plain launch template, never a one-type mixed policy;
- at most 40 instance types per group (launch template overrides; see docs/capacity.md on how
  well that figure is sourced);
- `OnDemandPercentageAboveBaseCapacity` is 0-100 and `OnDemandBaseCapacity` at least 0
  (botocore autoscaling model: integers; the ranges are the API reference's);
- Spot allocation strategies: lowest-price, capacity-optimized, capacity-optimized-prioritized,
  price-capacity-optimized; On-Demand: prioritized, lowest-price (API reference,
  InstancesDistribution). `lowest-price` Spot is refused here: it fills from the cheapest pool,
  which for GPUs is the one most likely to be reclaimed, and it is the only strategy that needs
  `SpotInstancePools`.

Spot interruption: EC2 gives a Spot instance a two-minute notice. With
`ECS_ENABLE_SPOT_INSTANCE_DRAINING` the agent sets the instance DRAINING on that notice, so ECS
deregisters its tasks from the target group and starts replacements elsewhere; whatever is still
streaming when the two minutes end is cut. Capacity rebalancing launches a replacement on the
earlier (but not guaranteed) rebalance recommendation, and ECS managed draining empties the old
instance before the group terminates it. `spot_interruption_notes` puts numbers on this for a
service whose replacement takes minutes to warm.

Pure functions; no Pulumi import. Problems are `(config key, message)` pairs relative to the
pool's config section.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Literal

from ecs_inference.contracts import aws_limits

MAX_INSTANCE_TYPES_PER_GROUP = aws_limits.ASG_INSTANCE_TYPES_MAX
SPOT_INTERRUPTION_NOTICE_SECONDS = aws_limits.SPOT_INTERRUPTION_NOTICE_SECONDS

SpotAllocationStrategy = Literal[
    "price-capacity-optimized", "capacity-optimized", "capacity-optimized-prioritized"
]
OnDemandAllocationStrategy = Literal["prioritized", "lowest-price"]

#: Spot allocation strategies the API accepts, and the ones this project allows for GPUs.
API_SPOT_ALLOCATION_STRATEGIES = aws_limits.ASG_SPOT_ALLOCATION_STRATEGIES
GPU_SPOT_ALLOCATION_STRATEGIES: tuple[str, ...] = (
    "price-capacity-optimized",
    "capacity-optimized",
    "capacity-optimized-prioritized",
)
ON_DEMAND_ALLOCATION_STRATEGIES = aws_limits.ASG_ON_DEMAND_ALLOCATION_STRATEGIES

#: ECS agent setting for Spot hosts: drain on the interruption notice (off by default).
SPOT_AGENT_SETTINGS: Mapping[str, str] = {"ECS_ENABLE_SPOT_INSTANCE_DRAINING": "true"}


@dataclass(frozen=True)
class MixedInstancesArgs:
    """How a group buys its instances across several types."""

    on_demand_base_capacity: int = 1
    """Instances always bought On-Demand before any Spot; one keeps the first replica of every
    service on the pool through a Spot reclaim."""
    on_demand_percentage_above_base: int = 100
    """On-Demand share (0-100) of the capacity above the base; at 100 (no Spot) several types
    only widen where capacity can be found."""
    spot_allocation_strategy: str = "price-capacity-optimized"
    """Spot pools with the most spare capacity, then the cheapest of those (fewer interruptions
    than lowest price for a small premium); "capacity-optimized-prioritized" follows the type
    order where capacity allows."""
    on_demand_allocation_strategy: str = "prioritized"
    """The type order, i.e. the cheapest fitting type first when the list comes from sizing."""
    capacity_rebalance: bool = True
    """Launch a replacement on a Spot rebalance recommendation, before the interruption
    notice."""
    spot_max_price: str | None = None
    """Maximum Spot price in USD per hour; None caps it at the On-Demand price, as AWS
    recommends."""

    @property
    def uses_spot(self) -> bool:
        return self.on_demand_percentage_above_base < 100


def _whole(value: object, low: int, high: int | None, what: str) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int):
        return f"{what} must be a whole number, got {value!r}"
    if value < low or (high is not None and value > high):
        bound = f"between {low} and {high}" if high is not None else f"at least {low}"
        return f"{what} must be {bound}, got {value}"
    return None


def mixed_instances_problems(
    args: MixedInstancesArgs,
    instance_types: Sequence[str],
    *,
    warm_pool: bool,
    max_size: int,
) -> list[tuple[str, str]]:
    """Everything AWS (or GPU sense) rejects about buying `instance_types` with `args` in a
    group of at most `max_size` instances, with or without a `warm_pool`."""
    problems: list[tuple[str, str]] = []

    def check(key: str, message: str | None) -> None:
        if message:
            problems.append((key, message))

    base_msg = _whole(args.on_demand_base_capacity, 0, None, "onDemandBaseCapacity")
    pct_msg = _whole(
        args.on_demand_percentage_above_base,
        *aws_limits.ASG_ON_DEMAND_PERCENTAGE_RANGE,
        "onDemandPercentageAboveBaseCapacity",
    )
    check("onDemandBaseCapacity", base_msg)
    check("onDemandPercentageAboveBaseCapacity", pct_msg)

    if args.spot_allocation_strategy not in API_SPOT_ALLOCATION_STRATEGIES:
        check(
            "spotAllocationStrategy",
            f"must be one of {', '.join(GPU_SPOT_ALLOCATION_STRATEGIES)}, "
            f"got {args.spot_allocation_strategy!r}",
        )
    elif args.spot_allocation_strategy not in GPU_SPOT_ALLOCATION_STRATEGIES:
        check(
            "spotAllocationStrategy",
            "lowest-price fills Spot from the cheapest pool, which for GPU and Neuron types is "
            "the one most often reclaimed; use price-capacity-optimized (default), "
            "capacity-optimized or capacity-optimized-prioritized",
        )
    if args.on_demand_allocation_strategy not in ON_DEMAND_ALLOCATION_STRATEGIES:
        check(
            "onDemandAllocationStrategy",
            f"must be prioritized or lowest-price, got {args.on_demand_allocation_strategy!r}",
        )
    if args.spot_max_price is not None:
        try:
            price = Decimal(args.spot_max_price)
        except (InvalidOperation, TypeError):
            price = Decimal(-1)
        if not price.is_finite() or price <= 0:
            check(
                "spotMaxPrice",
                f"must be a price in USD per hour above 0, like '4.50', got "
                f"{args.spot_max_price!r}; omit it to cap at the On-Demand price",
            )
        elif not args.uses_spot:
            check("spotMaxPrice", "is set but the pool buys no Spot (percentage above base 100)")

    if len(instance_types) > MAX_INSTANCE_TYPES_PER_GROUP:
        check(
            "instanceTypes",
            f"an Auto Scaling group takes at most {MAX_INSTANCE_TYPES_PER_GROUP} instance types, "
            f"got {len(instance_types)}",
        )
    if warm_pool and (args.uses_spot or len(instance_types) > 1):
        what = "Spot Instances" if args.uses_spot else f"{len(instance_types)} instance types"
        check(
            "warmPool",
            f"EC2 Auto Scaling cannot add a warm pool to a group with a mixed instances policy "
            f"or Spot Instances, and this pool uses {what}; remove warmPool, or use one instance "
            "type On-Demand only (onDemandPercentageAboveBaseCapacity 100)",
        )
    if (
        not (base_msg or pct_msg)
        and args.uses_spot
        and isinstance(max_size, int)
        and args.on_demand_base_capacity >= max_size
    ):
        check(
            "onDemandBaseCapacity",
            f"the On-Demand base ({args.on_demand_base_capacity}) covers the whole group (maxSize "
            f"{max_size}), so no Spot instance would ever launch; lower it or set "
            "onDemandPercentageAboveBaseCapacity to 100",
        )
    return problems


def mixed_instances_policy_request(
    args: MixedInstancesArgs,
    instance_types: Sequence[str],
    launch_template_id: str,
    launch_template_version: str,
) -> dict[str, object]:
    """The `MixedInstancesPolicy` member of CreateAutoScalingGroup (API names), types in
    priority order."""
    distribution: dict[str, object] = {
        "OnDemandAllocationStrategy": args.on_demand_allocation_strategy,
        "OnDemandBaseCapacity": args.on_demand_base_capacity,
        "OnDemandPercentageAboveBaseCapacity": args.on_demand_percentage_above_base,
        "SpotAllocationStrategy": args.spot_allocation_strategy,
    }
    if args.spot_max_price is not None:
        distribution["SpotMaxPrice"] = args.spot_max_price
    return {
        "LaunchTemplate": {
            "LaunchTemplateSpecification": {
                "LaunchTemplateId": launch_template_id,
                "Version": launch_template_version,
            },
            "Overrides": [{"InstanceType": name} for name in instance_types],
        },
        "InstancesDistribution": distribution,
    }


def on_demand_instances(args: MixedInstancesArgs, instances: int) -> int:
    """How many of `instances` are surely On-Demand: the base, then the percentage of the rest,
    rounded down, so what is claimed to survive a Spot reclaim holds however AWS rounds."""
    base = min(args.on_demand_base_capacity, instances)
    above = instances - base
    return base + math.floor(above * args.on_demand_percentage_above_base / 100)


def spot_predictions(
    args: MixedInstancesArgs,
    *,
    min_count: int,
    tasks_per_instance: int,
    max_generation_seconds: int,
) -> list[str]:
    """What a Spot reclaim predicts for a service (advisories): its minimum lost, and
    generations longer than the notice cut; none without Spot."""
    if not args.uses_spot:
        return []
    notice = SPOT_INTERRUPTION_NOTICE_SECONDS
    min_instances = math.ceil(max(min_count, 0) / max(tasks_per_instance, 1))
    on_demand = on_demand_instances(args, min_instances)
    found = []
    if on_demand < min_instances:
        found.append(
            f"a Spot reclaim can take it below its minimum of {min_count} task(s) (an outage "
            f"when it reclaims them all): they need {min_instances} instance(s) but only "
            f"{on_demand} are surely On-Demand; raise onDemandBaseCapacity to {min_instances}"
        )
    if max_generation_seconds > notice:
        found.append(
            f"a Spot reclaim gives {notice} s notice, shorter than the {max_generation_seconds}"
            " s generations the deregistration delay waits for: streams on a reclaimed host are "
            "cut and clients must retry; keep such services on On-Demand capacity "
            "(onDemandPercentageAboveBaseCapacity 100) or shorten maxGenerationSeconds"
        )
    return found


def spot_interruption_notes(
    args: MixedInstancesArgs,
    *,
    service: str,
    min_count: int,
    tasks_per_instance: int,
    replacement_seconds: int,
    instance_warmup_seconds: int,
    deregistration_delay_seconds: int,
    max_generation_seconds: int,
) -> list[str]:
    """Decision lines: what a Spot reclaim means for `service`.

    `replacement_seconds` is the service's health-check grace period (image pull + weight load +
    warm-up); `instance_warmup_seconds` the time a new instance takes to join the cluster.
    """
    if not args.uses_spot:
        return [f"{service}: On-Demand only; several types widen where capacity can be found"]
    notice = SPOT_INTERRUPTION_NOTICE_SECONDS
    min_instances = math.ceil(max(min_count, 0) / max(tasks_per_instance, 1))
    on_demand = on_demand_instances(args, min_instances)
    lines = [
        f"{service}: Spot above {args.on_demand_base_capacity} On-Demand instance(s) "
        f"({args.on_demand_percentage_above_base} % On-Demand above the base, "
        f"{args.spot_allocation_strategy})",
    ]
    if on_demand >= min_instances:
        lines.append(
            f"{service}: its minimum of {min_count} task(s) fits the On-Demand instances, so a "
            "Spot reclaim never takes it below the minimum"
        )
    else:
        lines.append(
            f"{service}: its minimum of {min_count} task(s) needs {min_instances} instance(s), "
            f"{on_demand} of them On-Demand"
        )
    outage = instance_warmup_seconds + replacement_seconds - notice
    cut = max(0, max_generation_seconds - notice)
    lines.append(
        f"{service}: a reclaimed Spot host gets {notice} s notice; ECS drains it, but a "
        f"replacement needs ~{instance_warmup_seconds} s for a new instance + "
        f"{replacement_seconds} s to load and warm, so capacity is short ~{max(outage, 0)} s "
        "past the notice unless capacity rebalancing started the replacement early"
        + ("" if args.capacity_rebalance else " (capacityRebalance is off)")
    )
    if cut:
        lines.append(
            f"{service}: generations longer than {notice} s (up to {max_generation_seconds} s "
            f"here; deregistration delay {deregistration_delay_seconds} s) are cut when a Spot "
            "host is reclaimed; clients must retry"
        )
    return lines
