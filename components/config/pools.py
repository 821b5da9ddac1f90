"""`platform.gpuPools`, `platform.neuronPools`, `platform.managedInstancePools`: the accelerator
capacity the model services run on."""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from ecs_inference.config.base import ROOT, Section
from ecs_inference.config.issues import ConfigIssue
from ecs_inference.contracts import aws_limits
from ecs_inference.sizing.instance_types import DEFAULT_MAX_PRICE_RATIO
from ecs_inference.specs import managed_instances
from ecs_inference.specs import pool as pool_spec
from ecs_inference.specs.managed_instances import ManagedInstancesArgs
from ecs_inference.specs.mixed_instances import MixedInstancesArgs
from ecs_inference.specs.pool import PoolSpec, WarmPoolSpec

_ASG_TYPES = aws_limits.ASG_INSTANCE_TYPES_MAX
_LISTED_TYPES = aws_limits.LISTED_INSTANCE_TYPES_MAX
_GP3_GIB = aws_limits.GP3_SIZE_GIB_RANGE
_MI_STORAGE = aws_limits.MANAGED_INSTANCES_STORAGE_GIB_RANGE
_MI_SCALE_IN = aws_limits.MANAGED_INSTANCES_SCALE_IN_AFTER_RANGE
_MAX_INSTANCES = pool_spec.POOL_INSTANCES_MAX
# The root volume holds the ECS AMI's own 30 GiB plus several multi-GB serving images.
_MIN_ROOT_VOLUME_GIB = 50


class WarmPoolConfig(Section):
    """Pre-initialised instances (booted, driver loaded, then parked) that join faster than new
    ones."""

    min_size: int = Field(WarmPoolSpec.min_size, ge=0, le=pool_spec.WARM_POOL_INSTANCES_MAX)
    """Instances kept pre-initialised in the warm pool."""
    max_group_prepared_capacity: int | None = Field(None, ge=0, le=_MAX_INSTANCES)
    """Cap on ASG + warm pool instances; unset: the ASG's maxSize."""
    state: Literal["Stopped", "Running"] = "Stopped"
    """State of warm instances (`Stopped` costs only the EBS volume). Hibernation does not
    apply to these accelerated instance types."""


class PoolConfig(Section):
    """One Auto Scaling group used as an ECS capacity provider: one accelerator instance type,
    several, or every catalog type that fits the models placed on it (cheapest first), bought
    On-Demand or partly as Spot through a mixed instances policy."""

    instance_type: str | None = None
    """One accelerator instance type from the catalog (the group launches only it). Give this
    or `instanceTypes`, or neither to take the types from sizing."""
    instance_types: list[str] | None = Field(None, min_length=1, max_length=_ASG_TYPES)
    """Several catalog types in priority order (a mixed instances policy). Every type must hold
    every model on the pool with the same GPU count / Neuron devices; otherwise the preview
    fails and proposes the split. Unset: from sizing (every catalog type that fits, cheapest
    first, within `maxPriceRatio`)."""
    excluded_instance_types: list[str] = Field(default_factory=list, max_length=_LISTED_TYPES)
    """Types or wildcards (`p5*`, `g6e.*`) never used, e.g. ones your account has no quota for."""
    max_instance_types: int | None = Field(None, ge=1, le=_ASG_TYPES)
    """Keep at most this many of the cheapest types taken from sizing; unset: all."""
    max_price_ratio: float | None = Field(DEFAULT_MAX_PRICE_RATIO, ge=1)
    """Types taken from sizing cost at most this multiple of the cheapest fitting one (so an
    8-GPU host is not a fallback for a one-GPU model); null keeps every price."""
    min_size: int = Field(PoolSpec.min_size, ge=0, le=_MAX_INSTANCES)
    """Instances always running."""
    max_size: int = Field(PoolSpec.max_size, ge=1, le=_MAX_INSTANCES)
    """Upper bound; leave room for a rolling deploy (see the deploy decision)."""
    root_volume_gib: int = Field(PoolSpec.root_volume_gib, ge=_MIN_ROOT_VOLUME_GIB, le=_GP3_GIB[1])
    """Root EBS volume; GPU/Neuron images are several GB and ECS keeps old ones until cleanup."""
    target_capacity_percent: int = Field(PoolSpec.target_capacity_percent, ge=1, le=100)
    """Capacity-provider managed scaling target; below 100 keeps spare instances."""
    instance_warmup_seconds: int = Field(
        PoolSpec.instance_warmup_seconds, ge=0, le=pool_spec.INSTANCE_WARMUP_MAX_SECONDS
    )
    """Time a new instance takes before it counts toward capacity metrics."""
    warm_pool: WarmPoolConfig | None = None
    """Pre-initialised instances with the image already pulled; unset: none. Only with one
    instance type bought On-Demand (EC2 Auto Scaling refuses a warm pool on a group with a
    mixed instances policy or Spot)."""
    on_demand_base_capacity: int = Field(
        MixedInstancesArgs.on_demand_base_capacity, ge=0, le=_MAX_INSTANCES
    )
    """Instances always bought On-Demand before any Spot."""
    on_demand_percentage_above_base_capacity: int = Field(
        MixedInstancesArgs.on_demand_percentage_above_base, ge=0, le=100
    )
    """On-Demand share of the capacity above the base; below 100 buys the rest as Spot."""
    spot_allocation_strategy: str = MixedInstancesArgs.spot_allocation_strategy
    """`price-capacity-optimized`, `capacity-optimized` or `capacity-optimized-prioritized`
    (`lowest-price` is refused for accelerators: the cheapest Spot pool is reclaimed most)."""
    on_demand_allocation_strategy: str = MixedInstancesArgs.on_demand_allocation_strategy
    """`prioritized` (the type order: cheapest first from sizing) or `lowest-price`."""
    capacity_rebalance: bool = MixedInstancesArgs.capacity_rebalance
    """Launch a replacement on a Spot rebalance recommendation, before the 2-minute notice."""
    spot_max_price: str | None = None
    """Maximum Spot price, USD per hour; unset: capped at the On-Demand price."""

    @field_validator("instance_type")
    @classmethod
    def _type(cls, value: str | None) -> str | None:
        if value is not None and not re.match(r"^[a-z][a-z0-9]*\.[a-z0-9]+$", value):
            raise ValueError("must be an EC2 instance type like g6e.xlarge")
        return value

    @model_validator(mode="after")
    def _sizes(self) -> PoolConfig:
        if self.min_size > self.max_size:
            raise ValueError(f"minSize ({self.min_size}) must not exceed maxSize ({self.max_size})")
        if self.instance_type is not None and self.instance_types is not None:
            raise ValueError(
                "give instanceType (one type) or instanceTypes (several), not both; omit both "
                "to take the types from sizing"
            )
        return self


class ManagedInstancePoolConfig(Section):
    """NVIDIA GPU capacity from Amazon ECS Managed Instances: ECS launches, patches and replaces
    the instances (at most 21 days each) among the types that fit the vLLM models placed on the
    pool. No Auto Scaling group: `warmPool`, `minSize`, `maxSize`, `amiId`, root volume and
    Spot-mix options are refused with the reason. Models needing more than one GPU per task stay
    on `gpuPools` (Managed Instances tasks cannot size /dev/shm)."""

    instance_types: list[str] | None = Field(None, min_length=1, max_length=_LISTED_TYPES)
    """Catalog types ECS may launch (`allowedInstanceTypes`); unset: from sizing, as for
    `gpuPools`."""
    excluded_instance_types: list[str] = Field(default_factory=list, max_length=_LISTED_TYPES)
    """Types or wildcards never used."""
    max_instance_types: int | None = Field(None, ge=1, le=_LISTED_TYPES)
    """Keep at most this many of the cheapest types taken from sizing; unset: all."""
    max_price_ratio: float | None = Field(DEFAULT_MAX_PRICE_RATIO, ge=1)
    """Types taken from sizing cost at most this multiple of the cheapest fitting one."""
    storage_gib: int = Field(ManagedInstancesArgs.storage_gib, ge=_MI_STORAGE[0], le=_MI_STORAGE[1])
    """Data volume of each instance (image layers and container storage)."""
    monitoring: Literal["BASIC", "DETAILED"] = ManagedInstancesArgs.monitoring
    """EC2 monitoring: `DETAILED` publishes one-minute metrics."""
    capacity_option_type: Literal["ON_DEMAND", "SPOT", "RESERVED"] = (
        ManagedInstancesArgs.capacity_option_type
    )
    """How instances are bought; changing it replaces the capacity provider. To mix On-Demand
    and Spot, use two pools."""
    reservation_preference: (
        Literal["RESERVATIONS_ONLY", "RESERVATIONS_FIRST", "RESERVATIONS_EXCLUDED"] | None
    ) = None
    """With `capacityOptionType: RESERVED`, how Capacity Reservations are used."""
    reservation_group_arn: str | None = None
    """With `RESERVATIONS_ONLY`, the Capacity Reservation resource group."""
    scale_in_after_seconds: int | None = Field(
        ManagedInstancesArgs.scale_in_after_seconds, ge=_MI_SCALE_IN[0], le=_MI_SCALE_IN[1]
    )
    """Seconds an idle instance is kept (with its image cache) before ECS removes it; -1
    never."""
    auto_repair: bool = ManagedInstancesArgs.auto_repair
    """Let ECS replace instances it finds unhealthy."""
    propagate_tags: bool = ManagedInstancesArgs.propagate_tags
    """Copy the capacity provider's tags to the instances."""


def managed_instance_option_issues(raw: dict[str, Any]) -> tuple[dict[str, Any], list[ConfigIssue]]:
    """`raw` without the keys of `managedInstancePools.<name>` that only an ASG pool takes, and
    one issue per such key saying why a Managed Instances pool cannot take it (instead of the
    schema's bare "unknown key")."""
    section = raw.get("managedInstancePools")
    if not isinstance(section, dict):
        return raw, []
    issues: list[ConfigIssue] = []
    cleaned: dict[str, Any] = {}
    for name, pool in section.items():
        if not isinstance(pool, dict):
            cleaned[name] = pool
            continue
        found = managed_instances.unsupported_option_problems(pool)
        issues += [
            ConfigIssue(f"{ROOT}.managedInstancePools.{name}.{key}", message)
            for key, message in found
        ]
        dropped = {key for key, _ in found}
        cleaned[name] = {k: v for k, v in pool.items() if k not in dropped}
    return {**raw, "managedInstancePools": cleaned}, issues
