"""Which instance types a pool may use, derived from the sizing of the models placed on it.

A pool may list several instance types (an ASG mixed instances policy, or the
`allowedInstanceTypes` of an ECS Managed Instances capacity provider) or take "any catalog type
that fits, cheapest first" from sizing. Several types are only safe when the
task definition, which is ONE for all of them, is right on each:

- every type must hold every model placed on the pool (the VRAM method, the Neuron fit);
- every type must give each model the same *device layout*: the task pins its GPU count
  (`resourceRequirements` GPU = tensor parallel size, and vLLM's `--tensor-parallel-size`) or the
  Neuron artifact's tp degree, device count and target chip. A list whose members disagree is
  rejected with the split that would work (explicit lists), or narrowed to the layout of the
  cheapest fitting type (lists taken from sizing);
- the task's CPU and memory reservation must fit the smallest type's share.

Pure functions over `components.catalog` and `components.sizing`; no Pulumi import. Problems are
`(config key, message)` pairs, the key relative to the pool's config section
(`instanceTypes`, `instanceTypes[1]`, `excludedInstanceTypes`), so the plan can prefix the path.

For Managed Instances, `managed_instance_requirements` turns the chosen types into the
`instanceRequirements` block of CreateCapacityProvider: the allowed types themselves plus the
accelerator envelope (manufacturer, names, count, total memory) and the vCPU/memory envelope, so
ECS can never pick a type whose layout was not checked here.
"""

from __future__ import annotations

import fnmatch
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from ecs_inference import sizing
from ecs_inference.contracts import aws_limits
from ecs_inference.sizing import catalog, offerings
from ecs_inference.sizing.catalog import Accelerator, InstanceType
from ecs_inference.sizing.neuron import NeuronDemand

MIB_PER_GIB = 1024

#: Catalog device name -> ECS/EC2 `AcceleratorName` (None: ECS has no name for it, see
#: `aws_limits.ECS_ACCELERATOR_NAMES`).
ACCELERATOR_NAME: dict[str, str | None] = {
    "A10G": "a10g",
    "L4": "l4",
    "L40S": "l40s",
    "A100 40GB": "a100",
    "A100 80GB": "a100",
    "H100": "h100",
    "H200": None,
    "Inferentia2": None,
    "Trainium": None,
}

#: `AcceleratorManufacturer` per accelerator kind (botocore ECS and EC2 models).
ACCELERATOR_MANUFACTURER: dict[Accelerator, str] = {
    "nvidia": "nvidia",
    "neuron": "amazon-web-services",
}

INSTANCE_TYPE_PATTERN = re.compile(aws_limits.INSTANCE_TYPE_PATTERN)
#: Sizing-derived lists keep types up to this multiple of the cheapest fitting type's price.
DEFAULT_MAX_PRICE_RATIO = 2.0


# --------------------------------------------------------------------------------------------
# what a model needs from a type
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GpuDemand:
    """One vLLM model placed on a GPU pool: its memory need and how it may be split.

    tensor_parallel_size: a pinned size, or None (default) for the smallest that fits each type.
    gpu_memory_utilization: vLLM's fraction of each GPU it may use. Default 0.9.
    """

    model: str
    need: sizing.MemoryNeed
    gpu_memory_utilization: float = 0.9
    tensor_parallel_size: int | None = None

    accelerator: Literal["nvidia"] = "nvidia"


@dataclass(frozen=True)
class DeclaredDemand:
    """A custom-image service sized from the accelerator memory it declares (no architecture).

    The image is opaque, so nothing is derived: `devices` (custom.gpus or custom.neuronDevices)
    is fixed, and each of them must hold its share of `accelerator_memory_gib` within
    `utilization` of a device. key: the config key of the device count, for messages. label:
    what the fit summary names (default None: `model`), e.g. the served model name.
    """

    model: str
    accelerator: Accelerator
    accelerator_memory_gib: float
    devices: int
    utilization: float = 0.9
    key: Literal["gpus", "neuronDevices"] = "gpus"
    label: str | None = None


Demand = GpuDemand | NeuronDemand | DeclaredDemand


@dataclass(frozen=True)
class DeclaredFit:
    """A declared-memory service on one instance type (see `DeclaredDemand`)."""

    model: str
    instance_name: str
    devices: int
    devices_on_instance: int
    per_device_gib: float
    usable_per_device_gib: float
    kind: str

    @property
    def tasks_per_instance(self) -> int:
        """Copies one instance holds: GPUs are an ECS resource (they pack); Neuron device
        paths are fixed, so a Neuron task takes its instance."""
        if self.kind == "neuronDevices":
            return 1
        return max(1, self.devices_on_instance // self.devices)

    def summary(self) -> str:
        return (
            f"{self.model}: declared {self.per_device_gib * self.devices:g} GiB over "
            f"{self.devices} device(s) = {self.per_device_gib:.1f} GiB each on {self.instance_name}"
            f" ({self.usable_per_device_gib:.1f} usable each), {self.tasks_per_instance} task(s) "
            "per instance"
        )


class DeclaredFitError(sizing.SizingError):
    """A declared-memory service does not fit a type; `key` is the custom setting to change
    (`gpus`, `neuronDevices` or `acceleratorMemoryGiB`)."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(message)
        self.key = key


def declared_fit(demand: DeclaredDemand, instance: InstanceType) -> DeclaredFit:
    """`demand` on `instance`; raises `DeclaredFitError` when it does not fit."""
    count = instance.accelerator_count
    each = instance.accelerator_memory_gib
    if demand.devices > count:
        raise DeclaredFitError(
            demand.key, f"{demand.devices} exceeds the {count} device(s) of {instance.name}"
        )
    per_device = demand.accelerator_memory_gib / demand.devices
    usable = each * demand.utilization
    if per_device > usable:
        raise DeclaredFitError(
            "acceleratorMemoryGiB",
            f"{demand.accelerator_memory_gib:g} GiB over {demand.devices} device(s) is "
            f"{per_device:.1f} GiB each, but {instance.name} offers {usable:.1f} usable GiB per "
            f"device ({demand.utilization:g} of {each:g}); use more devices or a larger instance "
            "type",
        )
    return DeclaredFit(
        demand.label or demand.model,
        instance.name,
        demand.devices,
        count,
        per_device,
        usable,
        demand.key,
    )


@dataclass(frozen=True, order=True)
class DeviceLayout:
    """What the ONE task definition of a model fixes about the devices of its host.

    devices_per_task: GPUs reserved (tensor parallel size) or Neuron devices mapped.
    tp: tensor parallel size (GPU) or the artifact's tp degree (Neuron).
    device_family: the accelerator model every type of the pool must share: the chip a Neuron
        artifact was compiled for (`Inferentia2`, `Trainium`), or the GPU (`A10G`, `L4`,
        `L40S`, ...). One CUDA image would run on any NVIDIA type, but a pool is one capacity
        provider that a service's strategy routes to ("one ASG per GPU type", seed 000): mixing
        GPUs of different speed behind one target-tracking policy makes the per-task load each
        task can carry, and so the scaling target, depend on which GPU a task landed on.
    """

    accelerator: Accelerator
    devices_per_task: int
    tp: int
    device_family: str | None = None

    def describe(self) -> str:
        if self.accelerator == "neuron":
            return f"tp degree {self.tp} on {self.devices_per_task} {self.device_family} device(s)"
        gpus = f"{self.devices_per_task} {self.device_family} GPU(s)"
        return f"tensor parallel {self.tp} ({gpus} per task)"


@dataclass(frozen=True)
class TypeFit:
    """How one model sits on one instance type."""

    instance: InstanceType
    layout: DeviceLayout
    fit: sizing.GpuFit | sizing.NeuronFit | DeclaredFit

    @property
    def tasks_per_instance(self) -> int:
        return self.fit.tasks_per_instance


def fit_on(demand: Demand, instance: InstanceType) -> TypeFit:
    """The fit of `demand` on `instance`; raises `sizing.SizingError` when it does not fit."""
    if instance.accelerator != demand.accelerator:
        raise sizing.SizingError(
            f"{instance.name} has {instance.accelerator_name} devices, but {demand.model} needs "
            f"{'NVIDIA GPUs' if demand.accelerator == 'nvidia' else 'Neuron devices'}"
        )
    if isinstance(demand, DeclaredDemand):
        declared = declared_fit(demand, instance)
        layout = DeviceLayout(
            demand.accelerator, demand.devices, demand.devices, instance.accelerator_name
        )
        return TypeFit(instance, layout, declared)
    if isinstance(demand, GpuDemand):
        gpu = sizing.choose_tensor_parallel(
            demand.need,
            instance,
            demand.gpu_memory_utilization,
            tensor_parallel_size=demand.tensor_parallel_size,
        )
        return _gpu_type_fit(gpu)
    neuron = sizing.neuron_fit(demand, instance)
    layout = DeviceLayout(
        "neuron", neuron.devices_mapped, demand.compiled.tp_degree, instance.accelerator_name
    )
    return TypeFit(instance, layout, neuron)


def _gpu_type_fit(gpu: sizing.GpuFit) -> TypeFit:
    layout = DeviceLayout("nvidia", gpu.tp_size, gpu.tp_size, gpu.instance.accelerator_name)
    return TypeFit(gpu.instance, layout, gpu)


def try_fit(demand: Demand, instance: InstanceType) -> TypeFit | None:
    """`fit_on` without the explanation: None when `demand` does not fit `instance`.

    Scanning the whole catalog for a pool asks this of every type; building each misfit's
    message (with the cheapest types that would fit, itself a catalog scan) would make the scan
    quadratic, so the GPU case without a pinned size asks sizing for the fit alone.
    """
    if instance.accelerator != demand.accelerator:
        return None
    if isinstance(demand, GpuDemand) and demand.tensor_parallel_size is None:
        found = sizing.cheapest_fitting(
            demand.need,
            gpu_memory_utilization=demand.gpu_memory_utilization,
            limit=1,
            candidates=[instance],
        )
        if not found:
            return None
        return _gpu_type_fit(found[0])
    try:
        return fit_on(demand, instance)
    except sizing.SizingError:
        return None


def _by_price(types: Iterable[InstanceType], region: str | None = None) -> list[InstanceType]:
    return sorted(types, key=lambda i: (offerings.ranking_usd_per_hour(i.name, region), i.name))


def candidates(accelerator: Accelerator, region: str | None = None) -> tuple[InstanceType, ...]:
    """Every catalog type of `accelerator` kind that `region` offers (None: every region),
    cheapest there first."""
    pool = catalog.gpu_instances() if accelerator == "nvidia" else catalog.neuron_instances()
    return tuple(_by_price((i for i in pool if offerings.offered(i.name, region)), region))


def fitting_types(
    demand: Demand, among: Iterable[InstanceType] | None = None, region: str | None = None
) -> list[TypeFit]:
    """Every type (default: the catalog's of the demand's kind that `region` offers) that holds
    `demand`, cheapest first: the "any type that fits" list."""
    pool = candidates(demand.accelerator, region) if among is None else _by_price(among, region)
    return [f for inst in pool if (f := try_fit(demand, inst)) is not None]


# --------------------------------------------------------------------------------------------
# choosing a pool's types
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PoolTypes:
    """The instance types a pool uses and why.

    source: "instanceTypes" (listed in the config) or "sizing" (every catalog type that fits).
    fitting: catalog types holding every model on the pool, cheapest first (before exclusions
        and layout narrowing).
    chosen: the types the pool uses, cheapest first (ASG overrides are tried in this order by the
        `prioritized` on-demand strategy; Managed Instances gets them as `allowedInstanceTypes`).
    layouts: model -> the device layout it has on every chosen type.
    fits: model -> type name -> its fit (chosen types only).
    dropped: type name -> why a fitting type is not used.
    """

    accelerator: Accelerator
    source: Literal["instanceTypes", "sizing"]
    fitting: tuple[str, ...]
    chosen: tuple[str, ...]
    layouts: Mapping[str, DeviceLayout]
    fits: Mapping[str, Mapping[str, TypeFit]]
    dropped: Mapping[str, str] = field(default_factory=dict[str, str])

    @property
    def instances(self) -> tuple[InstanceType, ...]:
        return tuple(catalog.instance(n) for n in self.chosen)

    @property
    def cheapest(self) -> InstanceType:
        return self.instances[0]

    def tasks_per_instance(self, model: str) -> int:
        """The fewest copies of `model` any chosen type holds (what capacity planning may rely
        on when ECS or EC2 picks the type)."""
        return min(f.tasks_per_instance for f in self.fits[model].values())

    def summary(self) -> list[str]:
        """Decision lines: the types that fit, the ones chosen, each model's layout."""
        lines = [
            f"types that fit every model: {', '.join(self.fitting) or 'none'}",
            f"chosen ({'from sizing, cheapest first' if self.source == 'sizing' else 'as listed'}"
            f"): {', '.join(self.chosen)}",
        ]
        lines += [f"not used: {name} ({why})" for name, why in self.dropped.items()]
        lines += [
            f"{model}: {layout.describe()} on every type" for model, layout in self.layouts.items()
        ]
        return lines


def _split_proposal(
    groups: Mapping[tuple[DeviceLayout, ...], list[str]], models: Sequence[str]
) -> str:
    parts: list[str] = []
    for layouts, names in sorted(
        groups.items(), key=lambda kv: catalog.instance(kv[1][0]).on_demand_usd_hour
    ):
        how = "; ".join(f"{m} {lay.describe()}" for m, lay in zip(models, layouts, strict=True))
        parts.append(f"[{', '.join(names)}] ({how})")
    return " and ".join(parts)


def _layout_key(
    fits: Mapping[str, Mapping[str, TypeFit]], models: Sequence[str], name: str
) -> tuple[DeviceLayout, ...]:
    return tuple(fits[m][name].layout for m in models)


def choose_pool_types(
    accelerator: Accelerator,
    demands: Sequence[Demand],
    instance_types: Sequence[str] | None = None,
    excluded: Sequence[str] = (),
    max_types: int | None = None,
    max_price_ratio: float | None = DEFAULT_MAX_PRICE_RATIO,
    region: str | None = None,
) -> tuple[PoolTypes | None, list[tuple[str, str]]]:
    """Choose the types of a pool of `accelerator` kind for the models on it.

    instance_types, excluded, max_types, max_price_ratio: the pool's `instanceTypes`,
        `excludedInstanceTypes`, `maxInstanceTypes` and `maxPriceRatio`, with their defaults
        (`pools.input`); the last two narrow sizing-derived lists only.
    region: the stack's region. Only types it offers (`offerings.offered`) are candidates, ranked
        by its prices; a listed type it does not offer is a problem naming the regions that do.
        Default None: every region, us-east-1 prices.

    Returns the choice (None when there is none) and the problems, as (config key, message).
    An explicit list is taken as the user's intent: a member that does not fit, or whose layout
    disagrees with the others', is a problem (with the split that would work). A derived list is
    narrowed to the layout of its cheapest type, and what was left out is recorded in `dropped`.
    """
    models = [d.model for d in demands]
    if len(set(models)) != len(models):
        raise ValueError(f"duplicate model names among {models}")
    problems = _exclusion_problems(excluded)
    if problems:
        return None, problems

    def is_excluded(name: str) -> bool:
        return any(fnmatch.fnmatchcase(name, p.lower()) for p in excluded)

    # candidates, in priority order
    if instance_types is not None:
        pool = _listed_types(accelerator, instance_types, is_excluded, problems, region)
        if problems:
            return None, problems
    else:
        pool = [i for i in candidates(accelerator, region) if not is_excluded(i.name)]
    fits, misfits = _fit_all(demands, pool, explain=instance_types is not None)
    fitting = [i.name for i in pool if i.name not in misfits]
    if instance_types is not None:
        problems = _listed_problems(pool, models, fits, misfits, fitting)
        if problems:
            return None, problems
        chosen, dropped = list(fitting), {}
        source: Literal["instanceTypes", "sizing"] = "instanceTypes"
    else:
        if not fitting:
            return None, [
                (
                    _empty_key(excluded),
                    _nothing_fits(accelerator, demands, misfits, excluded, region),
                )
            ]
        chosen, dropped = _narrowed(fits, models, fitting, max_types, max_price_ratio, region)
        source = "sizing"
    return (
        PoolTypes(
            accelerator=accelerator,
            source=source,
            fitting=tuple(fitting),
            chosen=tuple(chosen),
            layouts={m: fits[m][chosen[0]].layout for m in models},
            fits={m: {n: fits[m][n] for n in chosen} for m in models},
            dropped=dropped,
        ),
        [],
    )


def _exclusion_problems(excluded: Sequence[str]) -> list[tuple[str, str]]:
    """`excludedInstanceTypes` entries that are no instance type or wildcard (their count,
    `maxInstanceTypes` and `maxPriceRatio` are bounded by the pool's input)."""
    return [
        (
            f"excludedInstanceTypes[{i}]",
            f"{pattern!r} is not an instance type or wildcard (1-30 letters, digits, '.', "
            "'*' or '-')",
        )
        for i, pattern in enumerate(excluded)
        if not INSTANCE_TYPE_PATTERN.fullmatch(pattern)
    ]


def _fit_all(
    demands: Sequence[Demand], pool: Sequence[InstanceType], *, explain: bool
) -> tuple[dict[str, dict[str, TypeFit]], dict[str, dict[str, str]]]:
    """Every model on every candidate: (model -> type -> fit, type -> model -> why not). With
    `explain` (the user listed the types) each misfit says why it cannot serve."""
    fits: dict[str, dict[str, TypeFit]] = {d.model: {} for d in demands}
    misfits: dict[str, dict[str, str]] = {}
    for demand in demands:
        for inst in pool:
            found = try_fit(demand, inst)
            if found is not None:
                fits[demand.model][inst.name] = found
                continue
            why = ""
            if explain:
                try:
                    fit_on(demand, inst)
                except sizing.SizingError as exc:
                    why = str(exc)
            misfits.setdefault(inst.name, {})[demand.model] = why
    return fits, misfits


def _listed_problems(
    pool: Sequence[InstanceType],
    models: Sequence[str],
    fits: Mapping[str, Mapping[str, TypeFit]],
    misfits: Mapping[str, Mapping[str, str]],
    fitting: Sequence[str],
) -> list[tuple[str, str]]:
    """An explicit list's members that cannot serve a model, or whose layouts disagree (with
    the split that would work)."""
    problems = [
        (f"instanceTypes[{index}]", f"{inst.name} cannot serve {model}: {why}")
        for index, inst in enumerate(pool)
        for model, why in misfits.get(inst.name, {}).items()
    ]
    if problems:
        return problems
    groups: dict[tuple[DeviceLayout, ...], list[str]] = {}
    for name in fitting:
        groups.setdefault(_layout_key(fits, models, name), []).append(name)
    if len(groups) <= 1:
        return []
    disagree = [m for j, m in enumerate(models) if len({key[j] for key in groups}) > 1]
    return [
        (
            "instanceTypes",
            "the listed types disagree on the device layout "
            f"{', '.join(disagree)} need{'s' if len(disagree) == 1 else ''} (one task "
            "definition pins its GPU count / Neuron devices for every type); split the "
            f"pool into {_split_proposal(groups, models)}",
        )
    ]


def _narrowed(
    fits: Mapping[str, Mapping[str, TypeFit]],
    models: Sequence[str],
    fitting: Sequence[str],
    max_types: int | None,
    max_price_ratio: float | None,
    region: str | None = None,
) -> tuple[list[str], dict[str, str]]:
    """A derived list narrowed to its cheapest type's layout, price ceiling (at `region`'s
    prices) and count: (chosen, dropped type -> why)."""
    anchor = _layout_key(fits, models, fitting[0])
    cheapest = offerings.ranking_usd_per_hour(fitting[0], region)
    ceiling = None if max_price_ratio is None else cheapest * max_price_ratio
    chosen: list[str] = []
    dropped: dict[str, str] = {}
    for name in fitting:
        key = _layout_key(fits, models, name)
        price = offerings.ranking_usd_per_hour(name, region)
        if key != anchor:
            dropped[name] = "different device layout: " + "; ".join(
                f"{m} {lay.describe()}" for m, lay in zip(models, key, strict=True)
            )
        elif ceiling is not None and price > ceiling:
            dropped[name] = (
                f"~${price:.2f}/h, more than {max_price_ratio:g} x the cheapest fitting "
                f"{fitting[0]} (maxPriceRatio)"
            )
        elif max_types is not None and len(chosen) >= max_types:
            dropped[name] = f"beyond maxInstanceTypes ({max_types})"
        else:
            chosen.append(name)
    return chosen, dropped


def _empty_key(excluded: Sequence[str]) -> str:
    return "excludedInstanceTypes" if excluded else "instanceTypes"


def _nothing_fits(
    accelerator: Accelerator,
    demands: Sequence[Demand],
    misfits: Mapping[str, Mapping[str, str]],
    excluded: Sequence[str],
    region: str | None = None,
) -> str:
    kind = "GPU" if accelerator == "nvidia" else "Neuron"
    offered_in = f" offered in {region}" if region else ""
    if not misfits:
        if not excluded:
            return f"no {kind} type of the catalog is offered in {region}"
        return (
            f"excludedInstanceTypes ({', '.join(excluded)}) removes every {kind} type in the "
            f"catalog{offered_in}"
        )
    # Name, per model, the cheapest type that would hold it alone: the pool cannot hold them all.
    hints: list[str] = []
    for demand in demands:
        alone = fitting_types(demand, region=region)
        where = alone[0].instance.name if alone else f"no catalog type{offered_in}"
        hints.append(f"{demand.model} fits {where}")
    hint = "; ".join(hints)
    extra = f" after excluding {', '.join(excluded)}" if excluded else ""
    return (
        f"no catalog type{offered_in}{extra} holds every model on this pool ({hint}); "
        "move models to separate pools or lower their memory need"
    )


def _listed_types(
    accelerator: Accelerator,
    names: Sequence[str],
    is_excluded: Callable[[str], bool],
    problems: list[tuple[str, str]],
    region: str | None = None,
) -> list[InstanceType]:
    out: list[InstanceType] = []
    seen: set[str] = set()
    if not names:
        problems.append(
            (
                "instanceTypes",
                "list at least one instance type, or omit it to take them from sizing",
            )
        )
    if len(names) > aws_limits.LISTED_INSTANCE_TYPES_MAX:
        problems.append(
            (
                "instanceTypes",
                f"at most {aws_limits.LISTED_INSTANCE_TYPES_MAX} types, got {len(names)}",
            )
        )
    for index, name in enumerate(names):
        key = f"instanceTypes[{index}]"
        try:
            inst = catalog.instance(name)
        except catalog.CatalogLookupError as exc:
            problems.append((key, str(exc)))
            continue
        if inst.accelerator != accelerator:
            problems.append(
                (
                    key,
                    f"{inst.name} has {inst.accelerator_name} devices; this pool needs "
                    f"{'NVIDIA GPU' if accelerator == 'nvidia' else 'Inferentia/Trainium'} types",
                )
            )
        elif inst.name in seen:
            problems.append((key, f"{inst.name} is listed twice"))
        elif is_excluded(inst.name):
            problems.append((key, f"{inst.name} is also matched by excludedInstanceTypes"))
        elif region is not None and not offerings.offered(inst.name, region):
            problems.append((key, offerings.not_offered_message(inst.name, region)))
        else:
            seen.add(inst.name)
            out.append(inst)
    return out


# --------------------------------------------------------------------------------------------
# task reservation across types
# --------------------------------------------------------------------------------------------


def task_reservation(
    fits: Iterable[TypeFit], host_memory_reserve_fraction: float
) -> tuple[int, int]:
    """(CPU units, memory MiB) one task may reserve so that it places on every type.

    Each type's share is its vCPU x 1024 and memory (less `host_memory_reserve_fraction` kept for
    the OS and the ECS agent) divided by the copies it holds; the reservation is the smallest
    share, so a larger type never makes the task unplaceable on a smaller one.
    """
    if not 0 <= host_memory_reserve_fraction < 1:
        raise ValueError(
            f"host_memory_reserve_fraction must be in [0, 1), got {host_memory_reserve_fraction}"
        )
    shares = [
        (
            (f.instance.vcpu * 1024) // f.tasks_per_instance,
            int(f.instance.memory_gib * MIB_PER_GIB * (1 - host_memory_reserve_fraction))
            // f.tasks_per_instance,
        )
        for f in fits
    ]
    if not shares:
        raise ValueError("no instance types to reserve on")
    return min(c for c, _ in shares), min(m for _, m in shares)


# --------------------------------------------------------------------------------------------
# ECS Managed Instances: instanceRequirements
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class InstanceRequirements:
    """The `instanceRequirements` of a Managed Instances capacity provider (ECS API names in
    `to_api`). Ranges are inclusive; None leaves a bound open."""

    vcpu_min: int
    vcpu_max: int | None
    memory_mib_min: int
    memory_mib_max: int | None
    allowed_instance_types: tuple[str, ...]
    accelerator_manufacturers: tuple[str, ...]
    accelerator_types: tuple[str, ...] = ()
    accelerator_names: tuple[str, ...] = ()
    accelerator_count_min: int | None = None
    accelerator_count_max: int | None = None
    accelerator_total_memory_mib_min: int | None = None
    bare_metal: Literal["included", "excluded", "required"] = "excluded"
    burstable_performance: Literal["included", "excluded", "required"] = "excluded"

    def to_api(self) -> dict[str, object]:
        """The request member `instanceRequirements` of CreateCapacityProvider, camelCase."""
        out: dict[str, object] = {
            "vCpuCount": _range(self.vcpu_min, self.vcpu_max),
            "memoryMiB": _range(self.memory_mib_min, self.memory_mib_max),
            "allowedInstanceTypes": list(self.allowed_instance_types),
            "acceleratorManufacturers": list(self.accelerator_manufacturers),
            "bareMetal": self.bare_metal,
            "burstablePerformance": self.burstable_performance,
        }
        if self.accelerator_types:
            out["acceleratorTypes"] = list(self.accelerator_types)
        if self.accelerator_names:
            out["acceleratorNames"] = list(self.accelerator_names)
        if self.accelerator_count_min is not None:
            out["acceleratorCount"] = _range(self.accelerator_count_min, self.accelerator_count_max)
        if self.accelerator_total_memory_mib_min is not None:
            out["acceleratorTotalMemoryMiB"] = {"min": self.accelerator_total_memory_mib_min}
        return out

    def summary(self) -> str:
        accel = ", ".join(self.accelerator_names) or ", ".join(self.accelerator_manufacturers)
        count = (
            f", {self.accelerator_count_min}-{self.accelerator_count_max} device(s)"
            if self.accelerator_count_min is not None
            else ""
        )
        mem = (
            f", >= {self.accelerator_total_memory_mib_min} MiB accelerator memory"
            if self.accelerator_total_memory_mib_min is not None
            else ""
        )
        return (
            f"instance requirements: {accel}{count}{mem}, {self.vcpu_min}-{self.vcpu_max} vCPU, "
            f"{self.memory_mib_min}-{self.memory_mib_max} MiB; only "
            f"{', '.join(self.allowed_instance_types)}"
        )


def _range(low: int, high: int | None) -> dict[str, int]:
    return {"min": low} if high is None else {"min": low, "max": high}


def _total_memory_mib_both_ways(instance: InstanceType) -> float:
    driver = instance.accelerator_memory_gib * MIB_PER_GIB
    nominal = instance.accelerator_memory_gb * 10**9 / 2**20
    return min(driver, nominal) * instance.accelerator_count


def managed_instance_requirements(choice: PoolTypes) -> InstanceRequirements:
    """`instanceRequirements` that let ECS pick only among `choice.chosen`.

    `allowedInstanceTypes` is the list itself; the envelope around it (min/max vCPU, memory and
    device count over the chosen types; accelerator manufacturer and, when ECS has a name for
    every device, the accelerator names) keeps the request self-describing in the console and is
    exact, from the catalog. Accelerator memory gets only a lower bound: the memory a model's task
    occupies (sizing's per-GPU need times the GPUs it uses), capped at every chosen type's total
    under both the nominal and the driver-visible convention, so it can never exclude a chosen
    type; an upper bound could, depending on how EC2 counts.
    Bare metal and burstable types are excluded: neither serves these models.
    """
    instances = choice.instances
    names = [ACCELERATOR_NAME.get(i.accelerator_name) for i in instances]
    all_named = all(n is not None for n in names)
    gpu = choice.accelerator == "nvidia"
    needed_mib: int | None = None
    if gpu:
        per_task: list[float] = []
        for model_fits in choice.fits.values():
            for f in model_fits.values():
                gpu = f.fit
                if isinstance(gpu, DeclaredFit):
                    per_task.append(gpu.per_device_gib * gpu.devices * MIB_PER_GIB)
                    continue
                assert isinstance(gpu, sizing.GpuFit)
                per_task.append(gpu.per_gpu_gib * gpu.tp_size * MIB_PER_GIB)
        # EC2 may report device memory nominally (decimal GB) or as the driver does; the bound
        # stays at or below both figures of every chosen type, so it can never exclude one.
        floor_mib = min(_total_memory_mib_both_ways(i) for i in instances)
        needed_mib = max(1, math.floor(min(max(per_task), floor_mib))) if per_task else None
    return InstanceRequirements(
        vcpu_min=min(i.vcpu for i in instances),
        vcpu_max=max(i.vcpu for i in instances),
        memory_mib_min=min(i.memory_gib for i in instances) * MIB_PER_GIB,
        memory_mib_max=max(i.memory_gib for i in instances) * MIB_PER_GIB,
        allowed_instance_types=choice.chosen,
        accelerator_manufacturers=(ACCELERATOR_MANUFACTURER[choice.accelerator],),
        accelerator_types=("gpu",) if gpu else (),
        accelerator_names=tuple(sorted({n for n in names if n})) if all_named else (),
        # EC2 documents device counts for GPUs; for Inferentia/Trainium the allowed list alone
        # selects, so a count convention that differs cannot exclude every type.
        accelerator_count_min=min(i.accelerator_count for i in instances) if gpu else None,
        accelerator_count_max=max(i.accelerator_count for i in instances) if gpu else None,
        accelerator_total_memory_mib_min=needed_mib,
    )
