"""A pool's decisions (pure): what AWS would refuse of a pool once its types are chosen, its
image handling, and its decision lines. `GpuAsgPool`, `InferentiaPool` and the stack's plan both
call them, so a program that builds a pool gets the same checks and lines as a stack file.

Problems are `(config key, message)` pairs relative to the pool's section; the plan and a
component (`refuse`) both report them at the section's path, `platform.<section>.<pool>.<key>`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Literal, NoReturn

from ecs_inference.config.issues import ConfigError, ConfigIssue
from ecs_inference.contracts import aws_limits
from ecs_inference.decided import Decided
from ecs_inference.images import platforms as image_build
from ecs_inference.operations.telemetry import (
    CLOUDWATCH_AGENT_VERSION,
    HOST_TELEMETRY_INTERVAL_SECONDS,
)
from ecs_inference.pools.input import (
    MAX_INSTANCE_LIFETIME_DAYS,
    ManagedInstancePoolConfig,
    PoolConfig,
)
from ecs_inference.sizing import catalog
from ecs_inference.sizing.catalog import Accelerator
from ecs_inference.sizing.instance_types import InstanceRequirements

# ECS rejects capacity provider names that start with these (CreateCapacityProvider API) and
# allows only letters, digits, '_' and '-'; Pulumi's auto-name is the resource name + "-xxxxxxx".
RESERVED_PROVIDER_PREFIXES = ("aws", "ecs", "fargate")
PROVIDER_NAME = re.compile(r"^[A-Za-z0-9_-]{1,200}$")

KIND_LABEL: dict[Accelerator, str] = {"nvidia": "NVIDIA GPU", "neuron": "Inferentia/Trainium"}
_A_POOL: dict[Accelerator, str] = {"nvidia": "a GpuAsgPool", "neuron": "an InferentiaPool"}

#: Spot allocation strategies the API accepts, and the ones this project allows for GPUs.
API_SPOT_ALLOCATION_STRATEGIES = aws_limits.ASG_SPOT_ALLOCATION_STRATEGIES
GPU_SPOT_ALLOCATION_STRATEGIES: tuple[str, ...] = (
    "price-capacity-optimized",
    "capacity-optimized",
    "capacity-optimized-prioritized",
)
ON_DEMAND_ALLOCATION_STRATEGIES = aws_limits.ASG_ON_DEMAND_ALLOCATION_STRATEGIES
MAX_INSTANCE_TYPES_PER_GROUP = aws_limits.ASG_INSTANCE_TYPES_MAX


Kind = Literal["gpu", "neuron", "managed"]
SECTIONS: Mapping[Kind, str] = {
    "gpu": "gpuPools",
    "neuron": "neuronPools",
    "managed": "managedInstancePools",
}
"""The stack file's section of each kind of pool."""
KIND_OF: Mapping[Accelerator, Literal["gpu", "neuron"]] = {"nvidia": "gpu", "neuron": "neuron"}
"""The kind of an Auto Scaling group pool of each accelerator."""


def refuse(kind: Kind, pool: str, problems: Sequence[tuple[str, str]]) -> NoReturn:
    """Raise `ConfigError` with every problem at the path a stack file would name
    (`platform.<section>.<pool>.<key>`), before any resource is registered."""
    base = f"platform.{SECTIONS[kind]}.{pool}"
    raise ConfigError([ConfigIssue(f"{base}.{key}", message) for key, message in problems])


# --------------------------------------------------------------------------------------------
# checks
# --------------------------------------------------------------------------------------------


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


def pool_problems(name: str, pool: PoolConfig, accelerator: Accelerator) -> list[tuple[str, str]]:
    """What AWS refuses of an Auto Scaling group pool named `name` once its types are chosen:
    the capacity provider's name, the first type's accelerator kind, and the mixed instances
    policy of the types (a pool with no type yet is one problem)."""
    problems = provider_name_problems(name)
    types = pool.types
    if not types:
        return [
            *problems,
            (
                "instanceTypes",
                "give instanceType or instanceTypes (a stack takes them from sizing the models "
                "on the pool)",
            ),
        ]
    problems += _instance_problems(types[0], accelerator)
    if pool.mixed:
        # Every key here is a pool config key: `warmPool`, `instanceTypes`, the Spot options.
        problems += mixed_instances_problems(pool, types)
    return problems


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


def mixed_instances_problems(pool: PoolConfig, types: Sequence[str]) -> list[tuple[str, str]]:
    """Everything AWS (or GPU sense) rejects about buying `types` as `pool` says.

    A warm pool cannot be added to a group with a mixed instances policy or whose launch
    template requests Spot (Auto Scaling API reference, PutWarmPool); `lowest-price` Spot is
    refused: it fills from the cheapest pool, which for GPUs is the one most likely reclaimed.
    """
    problems: list[tuple[str, str]] = []
    strategy = pool.spot_allocation_strategy
    if strategy not in API_SPOT_ALLOCATION_STRATEGIES:
        problems.append(
            (
                "spotAllocationStrategy",
                f"must be one of {', '.join(GPU_SPOT_ALLOCATION_STRATEGIES)}, got {strategy!r}",
            )
        )
    elif strategy not in GPU_SPOT_ALLOCATION_STRATEGIES:
        problems.append(
            (
                "spotAllocationStrategy",
                "lowest-price fills Spot from the cheapest pool, which for GPU and Neuron types "
                "is the one most often reclaimed; use price-capacity-optimized (default), "
                "capacity-optimized or capacity-optimized-prioritized",
            )
        )
    if pool.on_demand_allocation_strategy not in ON_DEMAND_ALLOCATION_STRATEGIES:
        problems.append(
            (
                "onDemandAllocationStrategy",
                f"must be prioritized or lowest-price, got {pool.on_demand_allocation_strategy!r}",
            )
        )
    if pool.spot_max_price is not None:
        try:
            price = Decimal(pool.spot_max_price)
        except (InvalidOperation, TypeError):
            price = Decimal(-1)
        if not price.is_finite() or price <= 0:
            problems.append(
                (
                    "spotMaxPrice",
                    f"must be a price in USD per hour above 0, like '4.50', got "
                    f"{pool.spot_max_price!r}; omit it to cap at the On-Demand price",
                )
            )
        elif not pool.uses_spot:
            problems.append(
                ("spotMaxPrice", "is set but the pool buys no Spot (percentage above base 100)")
            )
    if len(types) > MAX_INSTANCE_TYPES_PER_GROUP:
        problems.append(
            (
                "instanceTypes",
                f"an Auto Scaling group takes at most {MAX_INSTANCE_TYPES_PER_GROUP} instance "
                f"types, got {len(types)}",
            )
        )
    if pool.warm_pool is not None and (pool.uses_spot or len(types) > 1):
        what = "Spot Instances" if pool.uses_spot else f"{len(types)} instance types"
        problems.append(
            (
                "warmPool",
                "EC2 Auto Scaling cannot add a warm pool to a group with a mixed instances "
                f"policy or Spot Instances, and this pool uses {what}; remove warmPool, or use "
                "one instance type On-Demand only (onDemandPercentageAboveBaseCapacity 100)",
            )
        )
    if pool.uses_spot and pool.on_demand_base_capacity >= pool.max_size:
        problems.append(
            (
                "onDemandBaseCapacity",
                f"the On-Demand base ({pool.on_demand_base_capacity}) covers the whole group "
                f"(maxSize {pool.max_size}), so no Spot instance would ever launch; lower it or "
                "set onDemandPercentageAboveBaseCapacity to 100",
            )
        )
    return problems


# --------------------------------------------------------------------------------------------
# what the pool decides
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PoolPlacement:
    """What the stack decides for a pool across the services on it; the defaults are a pool of
    a program's own: no service image known, no host telemetry, no sizing lines."""

    images: Mapping[str, str | None] = field(default_factory=dict[str, "str | None"])
    """Service on the pool -> its image reference (None: the stack's own build)."""
    host_telemetry_pool: str | None = None
    """Run the CloudWatch agent (nvidia-smi or neuron-monitor metrics) with this pool name as
    its Pool dimension; None: no host telemetry."""
    sizing: tuple[str, ...] = ()
    """The stack's lines on the types sizing chose, printed first."""
    sharing: tuple[str, ...] = ()
    """The stack's lines on how the services share the pool."""


@dataclass(frozen=True)
class AsgPoolDecisions(Decided[PoolConfig, PoolPlacement]):
    """An Auto Scaling group pool as decided: its input (types chosen), how its hosts pull
    images, and its decision lines."""

    accelerator: Accelerator
    image_pull_behavior: Literal["default", "prefer-cached"]
    """ECS_IMAGE_PULL_BEHAVIOR. `prefer-cached` only when every image placed on the pool is
    pinned by digest: with a mutable tag a host would keep running the image it cached first
    after the tag is re-pushed. `default` pulls at each task start."""
    prepull_images: tuple[str, ...]
    """Images a warm-pool instance pulls while it initialises (those of every service placed on
    the pool, by digest where known); () without a warm pool."""


def decide_asg_pool(
    pool: PoolConfig, accelerator: Accelerator, placement: PoolPlacement
) -> AsgPoolDecisions:
    """The pool's image handling and decision lines: a warm pool pre-pulls the images it knows;
    prefer-cached only when every image the pool runs is a digest or the stack's own build (its
    content tag is immutable in its repository), since a mutable tag re-pushed later would
    otherwise keep running stale on every host that cached it."""
    images = placement.images
    notes: list[str] = []
    prepull: tuple[str, ...] = ()
    if pool.warm_pool is not None:
        prepull = tuple(sorted({i for i in images.values() if i is not None}))
        built = sorted(name for name, image in images.items() if image is None)
        notes.append(
            f"warm pool pre-pulls {len(prepull)} image(s) while its instances initialise "
            "(ECR login with the instance role, then the group stops them)"
            + (f"; not the stack-built image(s) of {', '.join(built)}" if built else "")
        )
    tagged = sorted(
        f"{name} ({image})"
        for name, image in images.items()
        if image is not None and not image_build.is_digest_reference(image)
    )
    if not tagged:
        notes.append(
            "image pull behaviour prefer-cached: every image on the pool is pinned by digest"
        )
    else:
        notes.append(
            f"image pull behaviour default, not prefer-cached: {', '.join(tagged)} "
            f"{'is a mutable tag' if len(tagged) == 1 else 'are mutable tags'}, which a host would "
            "keep running stale after a re-push; pin them by digest (<repository>@sha256:<digest>,"
            " what the CI deploys) to start tasks from the cached image"
        )
    ami = pool.ami_id or f"from SSM {catalog.ECS_AMI_SSM_PARAMETERS[accelerator]}"
    lines = [*placement.sizing, f"AMI {ami}"]
    if pool.mixed:
        lines.append(
            f"mixed instances policy over {len(pool.types)} type(s): On-Demand base "
            f"{pool.on_demand_base_capacity}, {pool.on_demand_percentage_above_base_capacity} % "
            f"On-Demand above it ({pool.on_demand_allocation_strategy}), Spot "
            f"{pool.spot_allocation_strategy}, capacity rebalance "
            f"{'on' if pool.capacity_rebalance else 'off'}"
        )
    lines += [*placement.sharing, *notes]
    if placement.host_telemetry_pool:
        lines.append(host_telemetry_line(KIND_OF[accelerator]))
    return AsgPoolDecisions(
        input=pool,
        accelerator=accelerator,
        placement=placement,
        image_pull_behavior="default" if tagged else "prefer-cached",
        prepull_images=prepull,
        lines=tuple(lines),
    )


@dataclass(frozen=True)
class ManagedPoolDecisions:
    """A Managed Instances pool as decided: its input (types chosen), the requirements ECS
    launches among, and its decision lines."""

    input: ManagedInstancePoolConfig
    requirements: InstanceRequirements
    lines: tuple[str, ...]


def decide_managed_pool(
    pool: ManagedInstancePoolConfig, requirements: InstanceRequirements, sizing: Sequence[str]
) -> ManagedPoolDecisions:
    """A Managed Instances pool on `requirements`, with its lines after the stack's `sizing`."""
    lines = (
        *sizing,
        requirements.summary(),
        "Managed Instances: ECS picks and patches the OS image and replaces each host "
        f"within {MAX_INSTANCE_LIFETIME_DAYS} days (each replacement re-warms its models); idle "
        f"hosts are kept {pool.scale_in_after_seconds} s",
    )
    types = {"instance_types": list(requirements.allowed_instance_types)}
    return ManagedPoolDecisions(pool.model_copy(update=types), requirements, lines)


def host_telemetry_line(kind: Literal["gpu", "neuron"]) -> str:
    """The decision line of the CloudWatch agent on a pool's hosts."""
    return (
        f"host telemetry: CloudWatch agent {CLOUDWATCH_AGENT_VERSION} "
        + (
            "nvidia_smi (utilisation, memory, temperature, power)"
            if kind == "gpu"
            else "scraping neuron-monitor (NeuronCore utilisation, device memory, errors)"
        )
        + f" every {HOST_TELEMETRY_INTERVAL_SECONDS} s, per Stack/Pool"
    )
