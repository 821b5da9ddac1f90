"""The capacity pools' plan: the instance types each pool launches for the models placed on it,
whether the pool can hold them all (and deploy them), and the pool's spec.

A pool with one configured `instanceType` is judged model by model: a model that does not fit
it is reported against the model. A list (or types from sizing) is judged as a whole: a member
that cannot serve a model, or layouts that disagree, are the pool's problem, with the split that
would work.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from ecs_inference import sizing
from ecs_inference.config.issues import ConfigIssue, Issues
from ecs_inference.config.pools import ManagedInstancePoolConfig, PoolConfig
from ecs_inference.config.stack import StackConfig
from ecs_inference.models import decisions
from ecs_inference.models.input import ModelConfig
from ecs_inference.operations.telemetry import (
    CLOUDWATCH_AGENT_VERSION,
    HOST_TELEMETRY_INTERVAL_SECONDS,
)
from ecs_inference.sizing import catalog, instance_types
from ecs_inference.sizing.headroom import DeployChoice, choose_deploy, rollout_room
from ecs_inference.sizing.instance_types import Demand, PoolTypes
from ecs_inference.specs import images as image_build
from ecs_inference.specs import managed_instances
from ecs_inference.specs.managed_instances import ManagedInstancesArgs, ManagedInstancesPoolSpec
from ecs_inference.specs.mixed_instances import MixedInstancesArgs
from ecs_inference.specs.pool import (
    PoolSpec,
    WarmPoolSpec,
    pool_decision_problems,
    provider_name_problems,
)

Kind = Literal["gpu", "neuron", "managed"]
SECTIONS: Mapping[Kind, str] = {
    "gpu": "gpuPools",
    "neuron": "neuronPools",
    "managed": "managedInstancePools",
}


@dataclass(frozen=True)
class PoolChoice:
    """One pool whose instance types are chosen: what the models placed on it are sized on."""

    name: str
    kind: Kind
    config: PoolConfig | ManagedInstancePoolConfig
    types: PoolTypes

    @property
    def section(self) -> str:
        return SECTIONS[self.kind]

    @property
    def path(self) -> str:
        return f"platform.{self.section}.{self.name}"


@dataclass(frozen=True)
class Placed:
    """A model on its pool, as the pool's capacity sees it."""

    name: str
    config: ModelConfig
    tasks_per_instance: int
    gpus_per_task: int
    image: str | None
    """The configured image reference; None: the stack's own build."""


def pool_resource_name(platform_name: str, pool: str) -> str:
    """Component name of a pool (it also names the ECS capacity provider)."""
    return f"{platform_name}-{pool}"


def mixed_args(cfg: PoolConfig, chosen: tuple[str, ...]) -> MixedInstancesArgs | None:
    """The pool's purchase options, or None when it launches one type On-Demand only (a plain
    launch template, which keeps a warm pool possible)."""
    if len(chosen) <= 1 and cfg.on_demand_percentage_above_base_capacity >= 100:
        return None
    return MixedInstancesArgs(
        on_demand_base_capacity=cfg.on_demand_base_capacity,
        on_demand_percentage_above_base=cfg.on_demand_percentage_above_base_capacity,
        spot_allocation_strategy=cfg.spot_allocation_strategy,
        on_demand_allocation_strategy=cfg.on_demand_allocation_strategy,
        capacity_rebalance=cfg.capacity_rebalance,
        spot_max_price=cfg.spot_max_price,
    )


def managed_args(cfg: ManagedInstancePoolConfig) -> ManagedInstancesArgs:
    """The Managed Instances options of a pool, from its config section."""
    return ManagedInstancesArgs(
        storage_gib=cfg.storage_gib,
        monitoring=cfg.monitoring,
        capacity_option_type=cfg.capacity_option_type,
        reservation_preference=cfg.reservation_preference,
        reservation_group_arn=cfg.reservation_group_arn,
        scale_in_after_seconds=cfg.scale_in_after_seconds,
        auto_repair=cfg.auto_repair,
        propagate_tags=cfg.propagate_tags,
    )


def pool_spec(cfg: PoolConfig, chosen: tuple[str, ...] = ()) -> PoolSpec:
    """The spec of one Auto Scaling group pool, from its config section and the types chosen for
    it (default: the configured `instanceType` alone)."""
    warm = cfg.warm_pool
    types = chosen or ((cfg.instance_type,) if cfg.instance_type else ())
    return PoolSpec(
        instance_type=types[0] if types else "",
        instance_types=types if len(types) > 1 else (),
        mixed=mixed_args(cfg, types),
        min_size=cfg.min_size,
        max_size=cfg.max_size,
        root_volume_gib=cfg.root_volume_gib,
        target_capacity_percent=cfg.target_capacity_percent,
        instance_warmup_seconds=cfg.instance_warmup_seconds,
        warm_pool=None
        if warm is None
        else WarmPoolSpec(
            min_size=warm.min_size,
            max_group_prepared_capacity=warm.max_group_prepared_capacity,
            state=warm.state,
        ),
    )


# --------------------------------------------------------------------------------------------
# instance types
# --------------------------------------------------------------------------------------------


def _pool_sections(
    cfg: StackConfig,
) -> list[tuple[Kind, str, PoolConfig | ManagedInstancePoolConfig]]:
    return [
        *(("gpu", n, p) for n, p in cfg.gpu_pools.items()),
        *(("neuron", n, p) for n, p in cfg.neuron_pools.items()),
        *(("managed", n, p) for n, p in cfg.managed_instance_pools.items()),
    ]


def _single_type_fits(
    cfg: StackConfig,
    pool: PoolConfig,
    resource: str,
    accel: catalog.Accelerator,
    on_pool: list[Demand],
    issues: Issues,
) -> tuple[list[Demand], list[tuple[str, str]]]:
    """A pool of one configured type: the models that fit it (the others are their own
    problem), or the pool's problems with the type itself."""
    problems = pool_decision_problems(resource, pool_spec(pool), accel)
    if problems:
        return on_pool, problems
    assert pool.instance_type is not None
    inst = catalog.instance(pool.instance_type)
    kept: list[Demand] = []
    for demand in on_pool:
        try:
            instance_types.fit_on(demand, inst)
            kept.append(demand)
        except sizing.SizingError as exc:
            issues.extend([decisions.fit_issue(demand, cfg.models[demand.model], exc)])
    return kept, []


def _choose_one(
    cfg: StackConfig,
    kind: Kind,
    name: str,
    pool: PoolConfig | ManagedInstancePoolConfig,
    resource: str,
    demands: Mapping[str, Demand],
    issues: Issues,
    region: str | None,
) -> tuple[PoolTypes | None, list[tuple[str, str]]]:
    """The pool's chosen types, among those `region` offers, and its problems, as (config key,
    message)."""
    accel: catalog.Accelerator = "neuron" if kind == "neuron" else "nvidia"
    on_pool = [demands[m] for m, model in cfg.models.items() if model.pool == name and m in demands]
    single = pool.instance_type if isinstance(pool, PoolConfig) else None
    problems: list[tuple[str, str]] = []
    if isinstance(pool, PoolConfig) and single is not None:
        on_pool, problems = _single_type_fits(cfg, pool, resource, accel, on_pool, issues)
    listed = [single] if single is not None else pool.instance_types
    if not problems and listed is None and not on_pool:
        problems = [
            (
                "instanceTypes",
                "no model is placed on this pool, so there is nothing to take its instance "
                "types from; list instanceTypes or remove the pool",
            )
        ]
    if problems:
        return None, problems
    warm = isinstance(pool, PoolConfig) and pool.warm_pool is not None
    # A warm pool allows one type only; from sizing, that is the cheapest.
    most = 1 if warm and listed is None else pool.max_instance_types
    choice, problems = instance_types.choose_pool_types(
        accel,
        on_pool,
        listed,
        pool.excluded_instance_types,
        most,
        pool.max_price_ratio,
        region=region,
    )
    if single is not None:
        problems = [
            ("instanceType" if k.startswith("instanceTypes") else k, m) for k, m in problems
        ]
    if choice is None or problems:
        return None, problems
    if isinstance(pool, ManagedInstancePoolConfig):
        problems = provider_name_problems(resource)
        problems += managed_instances.managed_instances_problems(managed_args(pool))
        for demand in on_pool:
            for key, message in managed_instances.model_problems(choice.layouts[demand.model].tp):
                issues.add(f"platform.models.{demand.model}.{key}", message)
    else:
        problems = pool_decision_problems(resource, pool_spec(pool, choice.chosen), accel)
    return choice, problems


def choose_pools(
    cfg: StackConfig,
    platform_name: str,
    demands: Mapping[str, Demand],
    issues: Issues,
    region: str | None = None,
) -> dict[str, PoolChoice]:
    """Choose every pool's instance types for the models placed on it, among those the stack's
    `region` offers (None: any region), then check the pool."""
    pools: dict[str, PoolChoice] = {}
    for kind, name, pool in _pool_sections(cfg):
        base = f"platform.{SECTIONS[kind]}.{name}"
        resource = pool_resource_name(platform_name, name)
        choice, problems = _choose_one(cfg, kind, name, pool, resource, demands, issues, region)
        for key, message in problems:
            issues.add(base if key == "name" else f"{base}.{key}", message)
        if choice is not None and not problems:
            pools[name] = PoolChoice(name, kind, pool, choice)
    return pools


# --------------------------------------------------------------------------------------------
# sharing a pool: capacity at maxCount, deploys, ENIs
# --------------------------------------------------------------------------------------------


def share(
    pool: PoolChoice, on_pool: Sequence[Placed], issues: Issues
) -> tuple[dict[str, DeployChoice], list[str]]:
    """The deploy of every model on `pool` and the pool's notes on how it is shared.

    The pool is shared: its maxSize must hold every service on it at maxCount at once, and a
    deploy of one service only has what the others leave at their maxCount. A model whose pool
    cannot hold it gets no deploy (the issue says why).
    """
    if not isinstance(pool.config, PoolConfig):
        # Managed Instances has no group maximum: ECS launches what a surge needs.
        return {m.name: decisions.MANAGED_INSTANCES_DEPLOY for m in on_pool}, []
    max_size = pool.config.max_size
    at_max = {m.name: math.ceil(m.config.max_count / m.tasks_per_instance) for m in on_pool}
    steady = sum(math.ceil(m.config.desired_count / m.tasks_per_instance) for m in on_pool)
    if steady > max_size:
        issues.add(
            f"{pool.path}.maxSize",
            f"the services on this pool ({', '.join(at_max)}) need {steady} instance(s) at their "
            f"desired counts but maxSize is {max_size}; raise maxSize or lower desiredCount",
        )
        return {}, []
    total = sum(at_max.values())
    if total > max_size:
        _over_capacity(pool, on_pool, at_max, total, issues)
        return {}, []
    notes: list[str] = []
    if len(on_pool) > 1:
        notes.append(
            f"shared by {', '.join(at_max)}: {total} of {max_size} instance(s) with every "
            "service at its maxCount"
        )
    eni_notes, eni_issue = _eni_check(pool, on_pool)
    if eni_issue is not None:
        issues.extend([eni_issue])
        return {}, notes
    deploys = {
        m.name: choose_deploy(
            m.config.min_count,
            m.config.max_count,
            m.tasks_per_instance,
            max_size - (total - at_max[m.name]),
            m.config.desired_count,
        )
        for m in on_pool
    }
    notes += _rollout_room(on_pool, max_size - total, at_max, issues)
    return deploys, [*notes, *eni_notes]


def _rollout_room(
    on_pool: Sequence[Placed], spare: int, at_max: Mapping[str, int], issues: Issues
) -> list[str]:
    """Each blue/green, canary or linear service's second revision, on what the others leave
    it at their maxCount; too little is an issue at its `rollout.strategy`."""
    notes: list[str] = []
    for m in on_pool:
        if not m.config.rollout.native:
            continue
        room = rollout_room(
            m.config.rollout.strategy,
            m.config.max_count,
            m.tasks_per_instance,
            spare + at_max[m.name],
        )
        if (problem := room.problem()) is not None:
            issues.add(f"platform.models.{m.name}.rollout.strategy", problem)
        else:
            notes.append(f"rollout of {m.name}: {room.summary()}")
    return notes


def _over_capacity(
    pool: PoolChoice,
    on_pool: Sequence[Placed],
    at_max: Mapping[str, int],
    total: int,
    issues: Issues,
) -> None:
    """Tasks beyond maxSize would wait in PROVISIONING forever: said against the one service
    when it is alone on the pool, else against the pool."""
    assert isinstance(pool.config, PoolConfig)
    max_size = pool.config.max_size
    pool_path = f"{pool.path}.maxSize"
    if len(on_pool) == 1:
        (only,) = on_pool
        issues.add(
            f"platform.models.{only.name}.maxCount",
            f"maxCount {only.config.max_count} needs {total} instance(s) at "
            f"{only.tasks_per_instance} task(s) per instance but {pool_path} is {max_size}; "
            "tasks beyond it would wait in PROVISIONING forever: lower maxCount or raise maxSize",
        )
        return
    issues.add(
        pool_path,
        f"the services on this pool ({', '.join(f'{n} {at_max[n]}' for n in at_max)} "
        f"instance(s) at their maxCount) need {total} instance(s) together but maxSize is "
        f"{max_size}; tasks beyond it would wait in PROVISIONING forever: raise maxSize or "
        "lower the services' maxCount",
    )


def _eni_check(pool: PoolChoice, on_pool: Sequence[Placed]) -> tuple[list[str], ConfigIssue | None]:
    """awsvpc gives every task its own ENI: an instance that can hold several tasks must have
    that many interfaces on its default network card besides its own (without trunking, which
    the stack does not enable). One line per chosen type that holds more than one task."""
    if not on_pool or pool.kind != "gpu":
        return [], None  # Neuron tasks run one per instance (distinctInstance)
    smallest = min(m.gpus_per_task for m in on_pool)
    notes: list[str] = []
    for inst in pool.types.instances:
        tasks = inst.accelerator_count // smallest
        if tasks <= 1:
            continue
        limit = catalog.awsvpc_task_limit(inst.name)
        if tasks > limit:
            return notes, ConfigIssue(
                pool.path,
                f"{inst.name} can hold {tasks} tasks of {smallest} GPU(s) but its default network "
                f"card takes only {limit} awsvpc task ENI(s) besides its own "
                f"({catalog.DEFAULT_CARD_ENIS[inst.name]} interfaces); the tasks beyond them "
                "would never place: use a type with more interfaces, larger tasks, or enable "
                "ECS awsvpc trunking and raise the limit in the catalog",
            )
        notes.append(
            f"awsvpc ENIs on {inst.name}: up to {tasks} task(s) of {smallest} GPU(s) need {tasks} "
            f"of the {limit} task ENIs its default network card takes without trunking"
        )
    return notes, None


# --------------------------------------------------------------------------------------------
# the pool's spec and decisions
# --------------------------------------------------------------------------------------------


def _images_on(pool: PoolChoice, on_pool: Sequence[Placed]) -> tuple[PoolSpec, list[str]]:
    """The Auto Scaling group's spec with its image handling: a warm pool pre-pulls the images
    it knows; prefer-cached only when every image the pool runs is a digest or the stack's own
    build (its content tag is immutable in its repository), since a mutable tag re-pushed
    later would otherwise keep running stale on every host that cached it."""
    assert isinstance(pool.config, PoolConfig)
    notes: list[str] = []
    prepull: tuple[str, ...] = ()
    if pool.config.warm_pool is not None:
        prepull = tuple(sorted({m.image for m in on_pool if m.image is not None}))
        built = sorted(m.name for m in on_pool if m.image is None)
        notes.append(
            f"warm pool pre-pulls {len(prepull)} image(s) while its instances initialise "
            "(ECR login with the instance role, then the group stops them)"
            + (f"; not the stack-built image(s) of {', '.join(built)}" if built else "")
        )
    tagged = sorted(
        f"{m.name} ({m.image})"
        for m in on_pool
        if m.image is not None and not image_build.is_digest_reference(m.image)
    )
    behavior: Literal["default", "prefer-cached"] = "default" if tagged else "prefer-cached"
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
    spec = replace(
        pool_spec(pool.config, pool.types.chosen),
        image_pull_behavior=behavior,
        prepull_images=prepull,
    )
    return spec, notes


def asg_pool_spec(
    pool: PoolChoice, on_pool: Sequence[Placed], notes: Sequence[str], host_telemetry: bool
) -> tuple[PoolSpec, list[str]]:
    """An Auto Scaling group pool's spec and its decision lines."""
    spec, image_notes = _images_on(pool, on_pool)
    spec = replace(spec, host_telemetry_pool=pool.name if host_telemetry else None)
    accel: catalog.Accelerator = "neuron" if pool.kind == "neuron" else "nvidia"
    lines = [*pool.types.summary(), f"AMI from SSM {catalog.ECS_AMI_SSM_PARAMETERS[accel]}"]
    mixed = spec.mixed
    if mixed is not None:
        lines.append(
            f"mixed instances policy over {len(pool.types.chosen)} type(s): On-Demand base "
            f"{mixed.on_demand_base_capacity}, {mixed.on_demand_percentage_above_base} % "
            f"On-Demand above it ({mixed.on_demand_allocation_strategy}), Spot "
            f"{mixed.spot_allocation_strategy}, capacity rebalance "
            f"{'on' if mixed.capacity_rebalance else 'off'}"
        )
    lines += [*notes, *image_notes]
    if host_telemetry:
        lines.append(host_telemetry_line(pool.kind))
    return spec, lines


def managed_pool_spec(pool: PoolChoice) -> tuple[ManagedInstancesPoolSpec, list[str]]:
    """A Managed Instances pool's spec and its decision lines."""
    assert isinstance(pool.config, ManagedInstancePoolConfig)
    spec = ManagedInstancesPoolSpec(
        requirements=instance_types.managed_instance_requirements(pool.types),
        options=managed_args(pool.config),
    )
    lines = [
        *pool.types.summary(),
        spec.requirements.summary(),
        "Managed Instances: ECS picks and patches the OS image and replaces each host "
        f"within {managed_instances.MAX_INSTANCE_LIFETIME_DAYS} days (each replacement "
        "re-warms its models); idle hosts are kept "
        f"{spec.options.scale_in_after_seconds} s",
    ]
    return spec, lines


def host_telemetry_line(kind: Kind) -> str:
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
