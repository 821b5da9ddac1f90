"""Pool spec: what one accelerator capacity pool is, as plain values, and its checks.

`PoolSpec` is built by the plan from `platform.gpuPools.<name>` / `platform.neuronPools.<name>`;
`pool_problems` lists everything AWS would reject, as (camelCase config key, message), before any
resource exists. The component (`components.capacity`) adds only the wiring (cluster, VPC,
subnets).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from ecs_inference.contracts.aws_limits import (
    GP3_IOPS_RANGE,
    GP3_MAX_IOPS_PER_GIB,
    GP3_MAX_MIBPS_PER_IOPS,
    GP3_THROUGHPUT_RANGE,
)
from ecs_inference.sizing import catalog
from ecs_inference.sizing.catalog import Accelerator
from ecs_inference.specs.mixed_instances import MixedInstancesArgs, mixed_instances_problems

#: The AL2023 ECS AMIs ship a 30 GiB root snapshot; a smaller volume fails at launch.
MIN_ROOT_VOLUME_GIB = 30
# The project's own bounds: far above any accelerator quota, low enough to catch a typo (10000
# for 100). The config schema takes its bounds from here.
POOL_INSTANCES_MAX = 1000
WARM_POOL_INSTANCES_MAX = 100
INSTANCE_WARMUP_MAX_SECONDS = 10_000


# ECS rejects capacity provider names that start with these (CreateCapacityProvider API) and
# allows only letters, digits, '_' and '-'; Pulumi's auto-name is the resource name + "-xxxxxxx".
RESERVED_PROVIDER_PREFIXES = ("aws", "ecs", "fargate")
PROVIDER_NAME = re.compile(r"^[A-Za-z0-9_-]{1,200}$")

KIND_LABEL: dict[Accelerator, str] = {"nvidia": "NVIDIA GPU", "neuron": "Inferentia/Trainium"}
_A_POOL: dict[Accelerator, str] = {"nvidia": "a GpuAsgPool", "neuron": "an InferentiaPool"}


class PoolArgumentError(ValueError):
    """Pool arguments that cannot work; raised before any resource is registered.

    `problems` holds `(key, message)` pairs, `key` being the camelCase pool config key
    (`instanceType`, `warmPool.reuseOnScaleIn`, ...) so callers can prefix the config path.
    """

    def __init__(self, pool: str, problems: Sequence[tuple[str, str]]) -> None:
        self.pool = pool
        self.problems = list(problems)
        lines = [f"pool {pool!r} is invalid:"] + [f"  - {k}: {m}" for k, m in self.problems]
        super().__init__("\n".join(lines))


@dataclass(frozen=True)
class WarmPoolSpec:
    """A warm pool of pre-initialised instances (booted once, driver loaded, then parked)."""

    min_size: int = 1
    """Instances kept in the warm pool."""
    max_group_prepared_capacity: int | None = None
    """Cap on warm + in-service instances; None: max_size minus desired, at least min_size."""
    state: Literal["Stopped", "Running", "Hibernated"] = "Stopped"
    """Stopped (pay for EBS only) or Running; Hibernated is rejected (needs a hibernation-enabled
    launch template and at most 150 GB of RAM, and does not apply to accelerated instances)."""
    reuse_on_scale_in: bool = False
    """Must stay False: ECS does not allow ReuseOnScaleIn on a capacity-provider ASG's warm pool
    (ECS developer guide, "Configuring pre-initialized instances")."""


@dataclass(frozen=True)
class PoolSpec:
    """One accelerator pool: an Auto Scaling group as a capacity provider, launching one
    instance type, or several through a mixed instances policy (optionally with Spot)."""

    instance_type: str
    """The first (cheapest, or first listed) catalog type of the pool's accelerator kind."""
    instance_types: tuple[str, ...] = ()
    """Every type the group may launch, in priority order; () means `instance_type` alone."""
    mixed: MixedInstancesArgs | None = None
    """On-Demand base, Spot share and allocation strategies; None with one type and no Spot
    (a plain launch template: EC2 Auto Scaling refuses a warm pool on any mixed policy)."""
    min_size: int = 0
    """ASG minimum (ECS managed scaling adds instances when tasks are pending)."""
    max_size: int = 2
    """ASG maximum; leave room for a rolling deploy."""
    root_volume_gib: int = 200
    """Encrypted gp3 root volume (image layers live here)."""
    root_volume_iops: int = 6000
    """gp3 IOPS (layer extraction writes many files in parallel)."""
    root_volume_throughput: int = 1000
    """gp3 MiB/s (a 10-20 GB CUDA image is written twice: compressed, then extracted)."""
    kms_key_id: str | None = None
    """KMS key of the root volume; None: the account's EBS default key."""
    target_capacity_percent: int = 100
    """Managed scaling target (100 = no idle spare instances)."""
    instance_warmup_seconds: int = 300
    """Managed scaling instance warm-up."""
    warm_pool: WarmPoolSpec | None = None
    """Pre-initialised instances, or None for no warm pool."""
    ami_id: str | None = None
    """An explicit AMI; None: the ECS-optimized AL2023 AMI of the pool's kind from SSM."""
    container_stop_timeout_seconds: int = 120
    """ECS_CONTAINER_STOP_TIMEOUT: SIGTERM-to-SIGKILL for containers without a stopTimeout."""
    image_minimum_cleanup_age_hours: int = 24
    """ECS_IMAGE_MINIMUM_CLEANUP_AGE: an unused image stays cached this long after its pull."""
    prepull_images: tuple[str, ...] = ()
    """Images a warm-pool instance pulls while it initialises (those of every service placed on
    the pool, by digest where known); ignored without a warm pool."""
    image_pull_behavior: Literal["default", "prefer-cached"] = "prefer-cached"
    """ECS_IMAGE_PULL_BEHAVIOR. `prefer-cached` only when every image placed on the pool is
    pinned by digest: with a mutable tag a host would keep running the image it cached first
    after the tag is re-pushed. `default` pulls at each task start (layers already on the
    host are not downloaded again)."""
    ssm_access: bool = True
    """Attach AmazonSSMManagedInstanceCore (Session Manager shell, no SSH port or key pair)."""
    instance_refresh: bool = False
    """Roll instances (launch before terminate) when the launch template changes."""
    tags: Mapping[str, str] = field(default_factory=dict)
    """Extra tags on the ASG (propagated to instances); provider default tags still apply."""
    host_telemetry_pool: str | None = None
    """Run the CloudWatch agent (nvidia-smi or neuron-monitor metrics) with this pool name as
    its Pool dimension; None: no host telemetry."""


# --------------------------------------------------------------------------------------------
# validation (pure)
# --------------------------------------------------------------------------------------------


def _int_in(value: object, low: int, high: int, what: str) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int):
        return f"{what} must be a whole number, got {value!r}"
    if not low <= value <= high:
        return f"{what} must be between {low} and {high}, got {value}"
    return None


def provider_name_problems(name: str) -> list[tuple[str, str]]:
    """What CreateCapacityProvider rejects about a pool's component name (it names the ECS
    capacity provider of an ASG pool and of a Managed Instances pool alike)."""
    if not PROVIDER_NAME.fullmatch(name):
        return [
            ("name", "must be letters, digits, '_' or '-' (it names the ECS capacity provider)")
        ]
    if name.lower().startswith(RESERVED_PROVIDER_PREFIXES):
        return [
            (
                "name",
                f"{name!r} starts with 'aws', 'ecs' or 'fargate', which ECS rejects for capacity "
                "provider names; choose another pool name",
            )
        ]
    return []


def pool_problems(name: str, args: PoolSpec, accelerator: Accelerator) -> list[tuple[str, str]]:
    """Everything wrong with a hand-built `args` for a pool of `accelerator` kind, as (config
    key, message): the ranges the config schema applies to each key, then
    `pool_decision_problems`. Checks only plain values (never Outputs), so it runs before any
    resource exists.
    """
    problems = _size_problems(args)
    problems += _root_volume_problems(args)
    problems += _checked(
        ("targetCapacityPercent", args.target_capacity_percent, 1, 100),
        ("instanceWarmupSeconds", args.instance_warmup_seconds, 0, INSTANCE_WARMUP_MAX_SECONDS),
        ("containerStopTimeoutSeconds", args.container_stop_timeout_seconds, 1, 3600),
        ("imageMinimumCleanupAgeHours", args.image_minimum_cleanup_age_hours, 1, 24 * 30),
    )
    if args.ami_id is not None and not re.fullmatch(r"ami-[0-9a-f]{8,17}", args.ami_id):
        problems.append(
            ("amiId", f"must be an AMI id like ami-0123456789abcdef0, got {args.ami_id!r}")
        )
    if args.warm_pool is not None:
        problems += _warm_pool_problems(args.warm_pool)
    return problems + pool_decision_problems(name, args, accelerator)


def pool_decision_problems(
    name: str, args: PoolSpec, accelerator: Accelerator
) -> list[tuple[str, str]]:
    """What the plan decides for a pool, checked, as (config key, message): the capacity
    provider's name, the instance types it chose for the accelerator kind, the warm pool's cap
    against its minimum, and the mixed instances policy of the chosen types."""
    problems = provider_name_problems(name)
    problems += _instance_problems(args.instance_type, accelerator)
    if args.warm_pool is not None and (msg := _prepared_capacity_problem(args.warm_pool)):
        problems.append(("warmPool.maxGroupPreparedCapacity", msg))
    if args.mixed is not None or len(args.instance_types) > 1:
        # Every key here is a pool config key: `warmPool`, `instanceTypes`, the Spot options.
        problems += mixed_instances_problems(
            args.mixed or MixedInstancesArgs(),
            args.instance_types or (args.instance_type,),
            warm_pool=args.warm_pool is not None,
            max_size=args.max_size,
        )
    return problems


def _checked(*ranges: tuple[str, object, int, int]) -> list[tuple[str, str]]:
    """(key, message) for each (key, value, low, high) whose value is not a whole number in
    low..high."""
    return [
        (key, msg) for key, value, low, high in ranges if (msg := _int_in(value, low, high, key))
    ]


def _instance_problems(instance_type: str, accelerator: Accelerator) -> list[tuple[str, str]]:
    """An instance type the catalog does not know, or one of the other accelerator kind."""
    try:
        instance = catalog.instance(instance_type)
    except catalog.CatalogLookupError as exc:
        return [("instanceType", str(exc))]
    if instance.accelerator == accelerator:
        return []
    wanted = catalog.gpu_instances() if accelerator == "nvidia" else catalog.neuron_instances()
    families = sorted({i.family for i in wanted})
    return [
        (
            "instanceType",
            f"{instance.name} has {KIND_LABEL[instance.accelerator]} accelerators, but "
            f"{_A_POOL[accelerator]} needs {KIND_LABEL[accelerator]} instances "
            f"({', '.join(families)}); put it in {_A_POOL[instance.accelerator]} instead",
        )
    ]


def _size_problems(args: PoolSpec) -> list[tuple[str, str]]:
    problems = _checked(
        ("minSize", args.min_size, 0, POOL_INSTANCES_MAX),
        ("maxSize", args.max_size, 1, POOL_INSTANCES_MAX),
    )
    if not problems and args.min_size > args.max_size:
        problems.append(
            ("minSize", f"minSize ({args.min_size}) must not exceed maxSize ({args.max_size})")
        )
    return problems


def _root_volume_problems(args: PoolSpec) -> list[tuple[str, str]]:
    """The gp3 root volume: its size, IOPS and throughput, each in range and in proportion."""
    problems: list[tuple[str, str]] = []
    root_msg = _int_in(args.root_volume_gib, MIN_ROOT_VOLUME_GIB, 16_384, "rootVolumeGib")
    if root_msg:
        problems.append(
            (
                "rootVolumeGib",
                f"{root_msg} (the ECS AMI root snapshot is {MIN_ROOT_VOLUME_GIB} GiB)",
            )
        )
    problems += _checked(
        ("rootVolumeIops", args.root_volume_iops, *GP3_IOPS_RANGE),
        ("rootVolumeThroughput", args.root_volume_throughput, *GP3_THROUGHPUT_RANGE),
    )
    if problems:
        return problems
    if args.root_volume_iops > GP3_MAX_IOPS_PER_GIB * args.root_volume_gib:
        problems.append(
            (
                "rootVolumeIops",
                f"gp3 allows at most {GP3_MAX_IOPS_PER_GIB} IOPS per GiB: "
                f"{args.root_volume_iops} IOPS needs at least "
                f"{-(-args.root_volume_iops // GP3_MAX_IOPS_PER_GIB)} GiB",
            )
        )
    if args.root_volume_throughput > GP3_MAX_MIBPS_PER_IOPS * args.root_volume_iops:
        problems.append(
            (
                "rootVolumeThroughput",
                f"gp3 allows at most {GP3_MAX_MIBPS_PER_IOPS} MiB/s per provisioned IOPS: "
                f"{args.root_volume_throughput} MiB/s needs at least "
                f"{int(args.root_volume_throughput / GP3_MAX_MIBPS_PER_IOPS)} IOPS",
            )
        )
    return problems


def _prepared_capacity_problem(warm: WarmPoolSpec) -> str | None:
    """Why the warm pool's cap cannot hold its minimum, or None."""
    cap = warm.max_group_prepared_capacity
    if cap is None or not isinstance(warm.min_size, int) or cap >= warm.min_size:
        return None
    return (
        f"maxGroupPreparedCapacity ({cap}) is below the warm pool minSize ({warm.min_size}); "
        "the warm pool could never hold its minimum"
    )


def _warm_pool_problems(warm: WarmPoolSpec) -> list[tuple[str, str]]:
    """A warm pool ECS or EC2 would refuse for an accelerator capacity provider."""
    cap = warm.max_group_prepared_capacity
    problems = _checked(
        ("warmPool.minSize", warm.min_size, 0, WARM_POOL_INSTANCES_MAX),
        *([("warmPool.maxGroupPreparedCapacity", cap, 0, POOL_INSTANCES_MAX)] if cap else []),
    )
    if warm.state == "Hibernated":
        problems.append(
            (
                "warmPool.state",
                "Hibernated is not supported for accelerator pools (EC2 hibernation needs a "
                "hibernation-enabled launch template and at most 150 GB of RAM, and does not "
                "cover accelerated instance families); use Stopped (default) or Running",
            )
        )
    elif warm.state not in ("Stopped", "Running"):
        problems.append(("warmPool.state", f"must be Stopped or Running, got {warm.state!r}"))
    if warm.reuse_on_scale_in:
        problems.append(
            (
                "warmPool.reuseOnScaleIn",
                "ECS does not allow returning instances to the warm pool on scale-in "
                "(ReuseOnScaleIn) for an Auto Scaling group used by a capacity provider; set it "
                "to false",
            )
        )
    return problems
