"""`platform.gpuPools`, `platform.neuronPools`, `platform.managedInstancePools` and
`platform.cluster`: the accelerator capacity the model services run on, and their cluster.

Each model is both the stack file's section (camelCase keys) and the Python input of its
component (`GpuAsgPool`, `InferentiaPool`, `ManagedInstancesPool`, `Cluster`): a program that
builds one gets the same validators as the stack file."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from ecs_inference.config.base import ROOT, Section, raise_problems
from ecs_inference.config.issues import ConfigIssue
from ecs_inference.contracts import aws_limits as limits
from ecs_inference.sizing.instance_types import DEFAULT_MAX_PRICE_RATIO

_ASG_TYPES = limits.ASG_INSTANCE_TYPES_MAX
_LISTED_TYPES = limits.LISTED_INSTANCE_TYPES_MAX
_MI_STORAGE = limits.MANAGED_INSTANCES_STORAGE_GIB_RANGE
_MI_SCALE_IN = limits.MANAGED_INSTANCES_SCALE_IN_AFTER_RANGE
# The project's own bounds: far above any accelerator quota, low enough to catch a typo (10000
# for 100).
POOL_INSTANCES_MAX = 1000
WARM_POOL_INSTANCES_MAX = 100
INSTANCE_WARMUP_MAX_SECONDS = 10_000
# The root volume holds the ECS AMI's own 30 GiB plus several multi-GB serving images.
MIN_ROOT_VOLUME_GIB = 50

ContainerInsights = Literal["enhanced", "enabled", "disabled"]


class WarmPoolConfig(Section):
    """Pre-initialised instances (booted, driver loaded, then parked) that join faster than new
    ones. ReuseOnScaleIn stays off: ECS does not allow it on a capacity provider's group."""

    min_size: int = Field(1, ge=0, le=WARM_POOL_INSTANCES_MAX)
    """Instances kept pre-initialised in the warm pool; default 1."""
    max_group_prepared_capacity: int | None = Field(None, ge=0, le=POOL_INSTANCES_MAX)
    """Cap on ASG + warm pool instances; unset: the ASG's maxSize."""
    state: Literal["Stopped", "Running"] = "Stopped"
    """State of warm instances (`Stopped`, the default, costs only the EBS volume). Hibernation
    does not apply to these accelerated instance types."""

    @field_validator("state", mode="before")
    @classmethod
    def _not_hibernated(cls, value: object) -> object:
        if value == "Hibernated":
            raise ValueError(
                "Hibernated is not supported for accelerator pools (EC2 hibernation needs a "
                "hibernation-enabled launch template and at most 150 GB of RAM, and does not "
                "cover accelerated instance families); use Stopped (default) or Running"
            )
        return value

    @model_validator(mode="after")
    def _cap(self) -> WarmPoolConfig:
        cap = self.max_group_prepared_capacity
        if cap is not None and cap < self.min_size:
            raise_problems(
                "WarmPoolConfig",
                [
                    (
                        ("maxGroupPreparedCapacity",),
                        f"maxGroupPreparedCapacity ({cap}) is below the warm pool minSize "
                        f"({self.min_size}); the warm pool could never hold its minimum",
                    )
                ],
            )
        return self


class _PoolTypes(Section):
    """What every pool says of its instance types, and its tags."""

    instance_types: list[str] | None = Field(None, min_length=1, max_length=_LISTED_TYPES)
    """Catalog types in priority order; unset: from sizing (every catalog type that fits the
    models on the pool, cheapest first, within `maxPriceRatio`)."""
    excluded_instance_types: list[str] = Field(default_factory=list, max_length=_LISTED_TYPES)
    """Types or wildcards (`p5*`, `g6e.*`) never used, e.g. ones your account has no quota for."""
    max_instance_types: int | None = Field(None, ge=1, le=_LISTED_TYPES)
    """Keep at most this many of the cheapest types taken from sizing; unset: all."""
    max_price_ratio: float | None = Field(DEFAULT_MAX_PRICE_RATIO, ge=1)
    """Types taken from sizing cost at most this multiple of the cheapest fitting one (so an
    8-GPU host is not a fallback for a one-GPU model); null keeps every price; default 2.0."""
    tags: dict[str, str] = Field(default_factory=dict)
    """Extra tags on the group or capacity provider (copied to the instances); default none
    (the provider's default tags still apply)."""


class PoolConfig(_PoolTypes):
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
    max_instance_types: int | None = Field(None, ge=1, le=_ASG_TYPES)
    """Keep at most this many of the cheapest types taken from sizing; unset: all."""
    min_size: int = Field(0, ge=0, le=POOL_INSTANCES_MAX)
    """Instances always running; default 0 (ECS managed scaling adds them for pending tasks)."""
    max_size: int = Field(2, ge=1, le=POOL_INSTANCES_MAX)
    """Upper bound; default 2. Leave room for a rolling deploy (see the deploy decision)."""
    root_volume_gib: int = Field(200, ge=MIN_ROOT_VOLUME_GIB, le=limits.GP3_SIZE_GIB_RANGE[1])
    """Encrypted gp3 root volume, GiB; default 200. GPU/Neuron images are several GB and ECS
    keeps old ones until cleanup."""
    root_volume_iops: int = Field(6000, ge=limits.GP3_IOPS_RANGE[0], le=limits.GP3_IOPS_RANGE[1])
    """gp3 IOPS of the root volume; default 6000 (layer extraction writes many files at once)."""
    root_volume_throughput: int = Field(
        1000, ge=limits.GP3_THROUGHPUT_RANGE[0], le=limits.GP3_THROUGHPUT_RANGE[1]
    )
    """gp3 throughput of the root volume, MiB/s; default 1000 (a 10-20 GB CUDA image is written
    twice: compressed, then extracted)."""
    kms_key_id: str | None = None
    """KMS key of the root volume; unset: the account's EBS default key."""
    target_capacity_percent: int = Field(100, ge=1, le=100)
    """Capacity-provider managed scaling target, percent; default 100. Below 100 keeps spare
    instances."""
    instance_warmup_seconds: int = Field(300, ge=0, le=INSTANCE_WARMUP_MAX_SECONDS)
    """Seconds a new instance takes before it counts toward capacity metrics; default 300."""
    warm_pool: WarmPoolConfig | None = None
    """Pre-initialised instances with the image already pulled; unset: none. Only with one
    instance type bought On-Demand (EC2 Auto Scaling refuses a warm pool on a group with a
    mixed instances policy or Spot)."""
    ami_id: str | None = Field(None, pattern=r"^ami-[0-9a-f]{8,17}$")
    """An explicit AMI; unset: the ECS-optimized AL2023 AMI of the pool's kind, from SSM."""
    container_stop_timeout_seconds: int = Field(120, ge=1, le=3600)
    """ECS_CONTAINER_STOP_TIMEOUT: SIGTERM-to-SIGKILL seconds for containers without a
    stopTimeout; default 120."""
    image_minimum_cleanup_age_hours: int = Field(24, ge=1, le=24 * 30)
    """ECS_IMAGE_MINIMUM_CLEANUP_AGE: hours an unused image stays cached after its pull;
    default 24."""
    ssm_access: bool = True
    """Attach AmazonSSMManagedInstanceCore (Session Manager shell, no SSH port or key pair);
    default on."""
    instance_refresh: bool = False
    """Roll instances (launch before terminate) when the launch template changes; default
    off."""
    on_demand_base_capacity: int = Field(1, ge=0, le=POOL_INSTANCES_MAX)
    """Instances always bought On-Demand before any Spot; default 1 keeps the first replica of
    every service on the pool through a Spot reclaim."""
    on_demand_percentage_above_base_capacity: int = Field(100, ge=0, le=100)
    """On-Demand share of the capacity above the base; default 100. Below 100 buys the rest as
    Spot."""
    spot_allocation_strategy: str = "price-capacity-optimized"
    """`price-capacity-optimized` (default), `capacity-optimized` or
    `capacity-optimized-prioritized` (`lowest-price` is refused for accelerators: the cheapest
    Spot pool is reclaimed most)."""
    on_demand_allocation_strategy: str = "prioritized"
    """`prioritized` (default: the type order, cheapest first from sizing) or `lowest-price`."""
    capacity_rebalance: bool = True
    """Launch a replacement on a Spot rebalance recommendation, before the 2-minute notice;
    default on."""
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
        # gp3 IOPS per GiB (500) always holds: the smallest root volume takes the most IOPS.
        iops, mibps = self.root_volume_iops, self.root_volume_throughput
        per_iops = limits.GP3_MAX_MIBPS_PER_IOPS
        if mibps > per_iops * iops:
            message = (
                f"gp3 allows at most {per_iops} MiB/s per provisioned IOPS: {mibps} MiB/s needs "
                f"at least {int(mibps / per_iops)} IOPS"
            )
            raise_problems("PoolConfig", [(("rootVolumeThroughput",), message)])
        return self

    @property
    def types(self) -> tuple[str, ...]:
        """The types the group launches, in priority order: `instanceTypes`, else
        `instanceType` alone; () while sizing has not chosen them."""
        if self.instance_types:
            return tuple(self.instance_types)
        return (self.instance_type,) if self.instance_type else ()

    @property
    def uses_spot(self) -> bool:
        """Part of the capacity above the On-Demand base is Spot."""
        return self.on_demand_percentage_above_base_capacity < 100

    @property
    def mixed(self) -> bool:
        """The group buys through a mixed instances policy: several types, or Spot. One type
        On-Demand only is a plain launch template, which keeps a warm pool possible."""
        return len(self.types) > 1 or self.uses_spot


class ManagedInstancePoolConfig(_PoolTypes):
    """NVIDIA GPU capacity from Amazon ECS Managed Instances: ECS launches, patches and replaces
    the instances (at most 21 days each) among the types that fit the vLLM models placed on the
    pool. No Auto Scaling group: `warmPool`, `minSize`, `maxSize`, `amiId`, root volume and
    Spot-mix options are refused with the reason. Models needing more than one GPU per task stay
    on `gpuPools` (Managed Instances tasks cannot size /dev/shm)."""

    storage_gib: int = Field(200, ge=_MI_STORAGE[0], le=_MI_STORAGE[1])
    """Data volume of each instance (image layers and container storage), GiB; default 200:
    CUDA serving images are 10-20 GB compressed and ECS keeps the previous one for rollback."""
    monitoring: Literal["BASIC", "DETAILED"] = "DETAILED"
    """EC2 monitoring: `DETAILED` (default) publishes one-minute metrics."""
    capacity_option_type: Literal["ON_DEMAND", "SPOT", "RESERVED"] = "ON_DEMAND"
    """How instances are bought (default `ON_DEMAND`); changing it replaces the capacity
    provider. To mix On-Demand and Spot, use two pools."""
    reservation_preference: (
        Literal["RESERVATIONS_ONLY", "RESERVATIONS_FIRST", "RESERVATIONS_EXCLUDED"] | None
    ) = None
    """With `capacityOptionType: RESERVED`, how Capacity Reservations are used."""
    reservation_group_arn: str | None = None
    """With `RESERVATIONS_ONLY`, the Capacity Reservation resource group."""
    scale_in_after_seconds: int | None = Field(1800, ge=_MI_SCALE_IN[0], le=_MI_SCALE_IN[1])
    """Seconds an idle instance is kept (with its image cache) before ECS removes it; -1
    never; default 1800: a GPU host that already pulled a multi-GB image is worth keeping for a
    burst that returns within half an hour."""
    auto_repair: bool = True
    """Let ECS replace instances it finds unhealthy; default on."""
    propagate_tags: bool = True
    """Copy the capacity provider's tags to the instances; default on."""

    @model_validator(mode="after")
    def _reservations(self) -> ManagedInstancePoolConfig:
        pref, reserved = self.reservation_preference, self.capacity_option_type == "RESERVED"
        raise_problems(
            "ManagedInstancePoolConfig",
            [
                (
                    ("reservationPreference",),
                    "capacityOptionType RESERVED needs a reservation preference "
                    "(RESERVATIONS_ONLY, RESERVATIONS_FIRST or RESERVATIONS_EXCLUDED)"
                    if reserved and pref is None
                    else "applies only with capacityOptionType RESERVED"
                    if pref is not None and not reserved
                    else None,
                ),
                (
                    ("reservationGroupArn",),
                    "a Capacity Reservation group can only be set with reservationPreference "
                    "RESERVATIONS_ONLY"
                    if self.reservation_group_arn is not None and pref != "RESERVATIONS_ONLY"
                    else None,
                ),
            ],
        )
        return self


class ClusterConfig(Section):
    """The ECS cluster."""

    container_insights: ContainerInsights = "enhanced"
    """Container Insights level; `enhanced` (default) adds per-task and per-container
    metrics."""
    execute_command: bool = False
    """ECS Exec (`aws ecs execute-command`) into every service's tasks: the services enable it,
    the task roles get the ssmmessages channels and may write the session log. Off (default):
    no shell into a serving container at all."""
    execute_command_logging: bool = True
    """With `executeCommand`: log every session (who ran what in a task) to CloudWatch; default
    on."""


# --------------------------------------------------------------------------------------------
# the keys a Managed Instances pool refuses, with the reason
# --------------------------------------------------------------------------------------------

MAX_INSTANCE_LIFETIME_DAYS = limits.MANAGED_INSTANCES_MAX_LIFETIME_DAYS
_NO_ASG = "a Managed Instances pool has no Auto Scaling group: ECS adds and removes instances"
_NO_AGENT_CONFIG = "ECS configures the agent on Managed Instances; there is no user data"
_ONE_PURCHASE_OPTION = (
    "a Managed Instances pool buys one way: set capacityOptionType (ON_DEMAND or SPOT), and mix "
    "On-Demand and Spot with two pools in the service's capacity-provider strategy"
)

#: Pool config key -> why a Managed Instances pool cannot take it, and what to do instead.
UNSUPPORTED_OPTIONS: Mapping[str, str] = {
    "warmPool": "ECS keeps no warm pool of Managed Instances; to start faster, keep idle "
    "instances longer with scaleInAfterSeconds",
    "amiId": "ECS chooses and patches the operating system image of Managed Instances itself",
    "minSize": f"{_NO_ASG} as tasks need them; bound the services' minCount instead",
    "maxSize": f"{_NO_ASG} as tasks need them; bound the services' maxCount instead",
    "targetCapacityPercent": f"{_NO_ASG}, so there is no managed-scaling target",
    "instanceWarmupSeconds": f"{_NO_ASG}, so there is no managed-scaling warm-up",
    "instanceRefresh": f"ECS replaces Managed Instances itself (patching, at most "
    f"{MAX_INSTANCE_LIFETIME_DAYS} days each), draining them first",
    "rootVolumeIops": "only the data volume size (storageGib) of a Managed Instance is set",
    "rootVolumeThroughput": "only the data volume size (storageGib) of a Managed Instance is set",
    "rootVolumeGib": "a Managed Instance's data volume is sized by storageGib",
    "kmsKeyId": "a Managed Instance's data volume takes only a size (storageSizeGiB), no KMS "
    "key; turn on EBS encryption by default in the account",
    "ssmAccess": "Managed Instances allow no SSH and no Session Manager access (AWS operates "
    "the hosts); use ECS Exec on the task",
    "containerStopTimeoutSeconds": f"{_NO_AGENT_CONFIG}; set the container's stopTimeout",
    "imageMinimumCleanupAgeHours": _NO_AGENT_CONFIG,
    "onDemandBaseCapacity": _ONE_PURCHASE_OPTION,
    "onDemandPercentageAboveBaseCapacity": _ONE_PURCHASE_OPTION,
    "spotAllocationStrategy": _ONE_PURCHASE_OPTION,
    "onDemandAllocationStrategy": _ONE_PURCHASE_OPTION,
    "capacityRebalance": _ONE_PURCHASE_OPTION,
    "spotMaxPrice": _ONE_PURCHASE_OPTION,
}


def unsupported_option_problems(options: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The keys of a Managed Instances pool's raw config that only an ASG pool understands, as
    (key, why and what to use instead); keys whose value is None are ignored."""
    return [
        (key, f"not supported on a Managed Instances pool: {UNSUPPORTED_OPTIONS[key]}")
        for key, value in options.items()
        if key in UNSUPPORTED_OPTIONS and value is not None
    ]


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
        found = unsupported_option_problems(pool)
        issues += [
            ConfigIssue(f"{ROOT}.managedInstancePools.{name}.{key}", message)
            for key, message in found
        ]
        dropped = {key for key, _ in found}
        cleaned[name] = {k: v for k, v in pool.items() if k not in dropped}
    return {**raw, "managedInstancePools": cleaned}, issues
