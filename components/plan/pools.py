"""The capacity pools' plan, across the services that share each pool: the instance types each
pool launches for the models placed on it, whether the pool can hold them all (and deploy them),
and what the stack decides for the pool (`PoolPlacement`); the pool's own decisions are
`components.pools.decisions`.

A pool with one configured `instanceType` is judged model by model: a model that does not fit
it is reported against the model. A list (or types from sizing) is judged as a whole: a member
that cannot serve a model, or layouts that disagree, are the pool's problem, with the split that
would work.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ecs_inference import sizing
from ecs_inference.config.issues import ConfigIssue, Issues
from ecs_inference.config.stack import StackConfig
from ecs_inference.models import decisions
from ecs_inference.models.input import ModelConfig
from ecs_inference.pools import managed_instances
from ecs_inference.pools.decisions import (
    SECTIONS,
    AsgPoolDecisions,
    Kind,
    ManagedPoolDecisions,
    PoolPlacement,
    decide_asg_pool,
    decide_managed_pool,
    pool_problems,
    provider_name_problems,
)
from ecs_inference.pools.input import ManagedInstancePoolConfig, PoolConfig
from ecs_inference.sizing import catalog, instance_types
from ecs_inference.sizing.headroom import DeployChoice, RolloutRoom, choose_deploy
from ecs_inference.sizing.instance_types import Demand, PoolTypes


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


def with_types(pool: PoolConfig, chosen: Sequence[str]) -> PoolConfig:
    """`pool` launching `chosen` (the types sizing chose, in priority order)."""
    return pool.model_copy(update={"instance_type": None, "instance_types": list(chosen)})


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
    problems = pool_problems(resource, pool, accel)
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
        for demand in on_pool:
            for key, message in managed_instances.model_problems(choice.layouts[demand.model].tp):
                issues.add(f"platform.models.{demand.model}.{key}", message)
    else:
        problems = pool_problems(resource, with_types(pool, choice.chosen), accel)
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
        room = RolloutRoom(
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
# what the stack decides for each pool
# --------------------------------------------------------------------------------------------


def asg_pool(
    pool: PoolChoice, on_pool: Sequence[Placed], notes: Sequence[str], host_telemetry: bool
) -> AsgPoolDecisions:
    """An Auto Scaling group pool as decided, on the types chosen for the services on it."""
    assert isinstance(pool.config, PoolConfig)
    placement = PoolPlacement(
        images={m.name: m.image for m in on_pool},
        host_telemetry_pool=pool.name if host_telemetry else None,
        sizing=tuple(pool.types.summary()),
        sharing=tuple(notes),
    )
    accel: catalog.Accelerator = "neuron" if pool.kind == "neuron" else "nvidia"
    return decide_asg_pool(with_types(pool.config, pool.types.chosen), accel, placement)


def managed_pool(pool: PoolChoice) -> ManagedPoolDecisions:
    """A Managed Instances pool on the types chosen for the services on it."""
    assert isinstance(pool.config, ManagedInstancePoolConfig)
    requirements = instance_types.managed_instance_requirements(pool.types)
    return decide_managed_pool(pool.config, requirements, pool.types.summary())
