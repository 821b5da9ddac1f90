"""Spot for an accelerator Auto Scaling group (pure): what a reclaim means for the services on
it, and the `MixedInstancesPolicy` a pool's input becomes.

GPU capacity is the scarcest thing a stack buys: a group pinned to one type cannot scale while
that type is short in an AZ. A mixed instances policy lets the group launch any of the types that
`components.sizing.instance_types.choose_pool_types` proved safe for the pool's task definitions,
and optionally buy part of the capacity as Spot (the checks: `components.pools.decisions`).

Spot interruption: EC2 gives a Spot instance a two-minute notice. With
`ECS_ENABLE_SPOT_INSTANCE_DRAINING` the agent sets the instance DRAINING on that notice, so ECS
deregisters its tasks from the target group and starts replacements elsewhere; whatever is still
streaming when the two minutes end is cut. Capacity rebalancing launches a replacement on the
earlier (but not guaranteed) rebalance recommendation, and ECS managed draining empties the old
instance before the group terminates it. `spot_interruption_notes` puts numbers on this for a
service whose replacement takes minutes to warm.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from ecs_inference.contracts import aws_limits
from ecs_inference.pools.input import PoolConfig

SPOT_INTERRUPTION_NOTICE_SECONDS = aws_limits.SPOT_INTERRUPTION_NOTICE_SECONDS

#: ECS agent setting for Spot hosts: drain on the interruption notice (off by default).
SPOT_AGENT_SETTINGS: Mapping[str, str] = {"ECS_ENABLE_SPOT_INSTANCE_DRAINING": "true"}


def mixed_instances_policy_request(
    args: PoolConfig,
    instance_types: Sequence[str],
    launch_template_id: object,
    launch_template_version: object,
) -> dict[str, object]:
    """The `MixedInstancesPolicy` member of CreateAutoScalingGroup (API names), types in
    priority order; the group's, in snake case. The template's id and version are strings, or
    the launch template's Outputs."""
    distribution: dict[str, object] = {
        "OnDemandAllocationStrategy": args.on_demand_allocation_strategy,
        "OnDemandBaseCapacity": args.on_demand_base_capacity,
        "OnDemandPercentageAboveBaseCapacity": args.on_demand_percentage_above_base_capacity,
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


def on_demand_instances(args: PoolConfig, instances: int) -> int:
    """How many of `instances` are surely On-Demand: the base, then the percentage of the rest,
    rounded down, so what is claimed to survive a Spot reclaim holds however AWS rounds."""
    base = min(args.on_demand_base_capacity, instances)
    above = instances - base
    return base + math.floor(above * args.on_demand_percentage_above_base_capacity / 100)


def spot_predictions(
    args: PoolConfig,
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
    args: PoolConfig,
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
        f"({args.on_demand_percentage_above_base_capacity} % On-Demand above the base, "
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
