"""Every way a stack launches ECS tasks, and whether that launch lands on Fargate.

A task definition is only half the question "does this task run on Fargate?"; the other half is
whatever launches it: ECS services and task sets, EventBridge rule targets, EventBridge
Scheduler schedules, EventBridge Pipes with an ECS target, and Step Functions state machines
whose states run ECS tasks (``step_functions``). Each lands on Fargate by ``launchType:
FARGATE``, by a FARGATE / FARGATE_SPOT capacity provider in its strategy, or, with neither, by
the cluster's default capacity provider strategy (which the stack may set through
``ClusterCapacityProviders`` or the cluster itself).

The engine shows a stack rule the launchers' outputs: an unset ``launchType`` is unknown on a
first preview and "" after ``up`` (``resources.stored``), so the strategy decides then, and the
cluster's default when both are unset. A launch whose launch type or strategy is only known at
run time (a Step Functions field set from the state's input) cannot be told: ``Launch.runtime``
names the state and the field.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from pulumi_policy.proxy import UnknownValueError

from . import step_functions
from .reachability import Model
from .resources import (
    CLUSTER,
    CLUSTER_CAPACITY_PROVIDERS,
    EVENT_RULE_NATIVE,
    EVENT_TARGET,
    FARGATE_CAPACITY_PROVIDERS,
    PIPE,
    SCHEDULE,
    SERVICE,
    STATE_MACHINE,
    TASK_DEFINITION,
    TASK_SET,
    as_list,
    get,
    is_native,
    known,
    stored,
)
from .values import UndecidableValueError

Resource = Any

#: Every type that launches ECS tasks.
LAUNCHERS = SERVICE | TASK_SET | EVENT_TARGET | EVENT_RULE_NATIVE | SCHEDULE | PIPE | STATE_MACHINE


def _provider_names(items: Sequence[Any], key: str = "capacityProvider") -> list[str | None]:
    """Capacity provider names of a strategy; None where unknown. FARGATE and FARGATE_SPOT are
    built-in literal names, so an unknown name is one of the stack's own (EC2) providers:
    only this read tolerates an unknown value."""
    names: list[str | None] = []
    for item in items:
        try:
            value = get(item, key) if isinstance(item, Mapping) else None
        except UndecidableValueError:
            raise  # a secret name may be FARGATE
        except UnknownValueError:
            value = None
        names.append(None if value is None else str(value))
    return names


def _fargate(names: Sequence[str | None]) -> bool:
    return any(n is not None and n.upper() in FARGATE_CAPACITY_PROVIDERS for n in names)


@dataclass(frozen=True)
class Launch:
    """One way ``resource`` launches ECS tasks.

    ``launch_type`` and ``strategy`` read the launch settings (None / empty when unset);
    ``task_value`` / ``cluster_value`` read the task definition and cluster references, held
    in the top-level inputs ``task_key`` / ``cluster_key`` (the engine records property
    dependencies per top-level input). ``runtime`` says which launch field is only known at
    run time (the launch cannot be told), ``task_runtime`` the same of the task definition;
    ``where`` names the part of ``resource`` that launches (a Step Functions state).
    """

    resource: Resource
    launch_type: Callable[[], Any]
    strategy: Callable[[], list[str | None]]
    task_value: Callable[[], Any]
    task_key: str | tuple[str, ...]
    cluster_value: Callable[[], Any]
    cluster_key: str | tuple[str, ...]
    where: str = ""
    runtime: str | None = None
    task_runtime: str | None = None

    @property
    def label(self) -> str:
        kind = str(self.resource.resource_type).rsplit(":", 1)[-1]
        return f"{kind} {self.resource.name!r}{self.where}"

    @property
    def why(self) -> str:
        launch_type = self.launch_type()
        return f"launchType {launch_type}" if launch_type else "capacity provider strategy"

    def on_fargate(self, defaults: ClusterDefaults) -> bool:
        """Launch type FARGATE, a Fargate provider in the strategy, or (neither set) a
        cluster whose default strategy in this stack is Fargate. False for a run-time launch
        (see ``runtime``)."""
        if self.runtime is not None:
            return False
        launch_type = self.launch_type()
        if launch_type:
            return str(launch_type).upper() == "FARGATE"
        names = self.strategy()
        if names:
            return _fargate(names)
        return defaults.fargate(self)

    def task_definitions(self, model: Model) -> list[Resource]:
        """The task definitions this launch runs ("cannot verify" when unresolved)."""
        return model.refs(
            self.resource,
            self.task_key,
            TASK_DEFINITION,
            values=lambda: [self.task_value()],
            what="which task definition it launches on Fargate",
        )


def launches(resource: Resource) -> list[Launch]:
    """The task launches a service, task set, EventBridge target / rule, schedule, pipe or
    state machine makes."""
    rtype = resource.resource_type
    for types, reader in _READERS:
        if rtype in types:
            return reader(resource)
    return []


def _strategy_key(resource: Resource) -> str:
    native = is_native(resource.resource_type)
    return "capacityProviderStrategy" if native else "capacityProviderStrategies"


def _service(resource: Resource) -> list[Launch]:
    props = resource.props
    key = _strategy_key(resource)
    return [
        Launch(
            resource,
            lambda: stored(props, "launchType", None, resource),
            lambda: _provider_names(as_list(stored(props, key, None, resource))),
            lambda: get(props, "taskDefinition"),
            "taskDefinition",
            lambda: stored(props, "cluster", None, resource),
            "cluster",
        )
    ]


def _nested(
    resource: Resource, block: Mapping[str, Any], strategy_key: str, task_key: str, cluster: Any
) -> Launch:
    """A launch whose settings sit in a nested block (``ecsTarget``, ``ecsParameters``...)."""
    return Launch(
        resource,
        lambda: stored(block, "launchType"),
        lambda: _provider_names(as_list(stored(block, strategy_key))),
        lambda: get(block, "taskDefinitionArn"),
        task_key,
        cluster,
        task_key,
    )


def _event_target(resource: Resource) -> list[Launch]:
    props = resource.props
    block = get(props, "ecsTarget")
    if block is None:
        return []
    launch = _nested(
        resource, block, "capacityProviderStrategies", "ecsTarget", lambda: get(props, "arn")
    )
    return [launch]


def _event_rule(resource: Resource) -> list[Launch]:
    found = []
    for target in as_list(get(resource.props, "targets")):
        block = get(target, "ecsParameters")
        if block is not None:
            cluster = lambda t=target: get(t, "arn")  # noqa: E731 (bound per target)
            found.append(_nested(resource, block, "capacityProviderStrategy", "targets", cluster))
    return found


def _schedule(resource: Resource) -> list[Launch]:
    target = get(resource.props, "target")
    if target is None:
        return []
    block = get(target, "ecsParameters")
    if block is None:
        return []
    return [_nested(resource, block, _strategy_key(resource), "target", lambda: get(target, "arn"))]


def _pipe(resource: Resource) -> list[Launch]:
    props = resource.props
    block = get(props, "targetParameters")
    block = get(block, "ecsTaskParameters") if block is not None else None
    if block is None:
        return []
    launch = _nested(
        resource, block, _strategy_key(resource), "targetParameters", lambda: get(props, "target")
    )
    # Pipes fills a target parameter written as a JSON path from each event, at run time.
    runtime, task_runtime = dynamic(block, "launchType"), dynamic(block, "taskDefinitionArn")
    if task_runtime is not None:
        launch = replace(launch, task_value=lambda: None, task_runtime=task_runtime)
    return [replace(launch, runtime=runtime)] if runtime is not None else [launch]


def dynamic(block: Mapping[str, Any], key: str) -> str | None:
    """``"<key> = $.path"`` when a Pipes target parameter is a dynamic JSON path, else None."""
    value = known(block, key)
    return f"{key} = {value}" if isinstance(value, str) and value.startswith("$.") else None


def _state_machine(resource: Resource) -> list[Launch]:
    keys, parsed = state_machine(resource)
    return [_state_launch(resource, keys, state) for state in step_functions.ecs_states(parsed)]


def state_machine(resource: Resource) -> tuple[str | tuple[str, ...], Mapping[str, Any]]:
    """(the inputs that hold its references, the parsed definition) of a state machine, its
    ``${name}`` placeholders filled from aws-native ``definitionSubstitutions``."""
    key, definition = _definition(resource)
    substitutions = (
        get(resource.props, "definitionSubstitutions")
        if is_native(resource.resource_type)
        else None
    )
    parsed = step_functions.parse(definition, substitutions, key)
    # A substituted ARN's dependency is recorded on definitionSubstitutions.
    return ((key, "definitionSubstitutions") if substitutions else key), parsed


def _definition(resource: Resource) -> tuple[str, Any]:
    """(input key, definition) of a state machine: pulumi-aws ``definition`` (JSON string),
    aws-native ``definitionString`` or ``definition`` (an object)."""
    props = resource.props
    if not is_native(resource.resource_type):
        return "definition", get(props, "definition")
    text = get(props, "definitionString")
    if text is not None:
        return "definitionString", text
    return "definition", get(props, "definition")


def _state_launch(
    resource: Resource, key: str | tuple[str, ...], state: step_functions.EcsState
) -> Launch:
    launch_type, runtime = state.field("LaunchType")
    strategy, strategy_runtime = state.field("CapacityProviderStrategy")
    task, task_runtime = state.field("TaskDefinition")
    cluster, _ = state.field("Cluster")
    runtime = runtime or (strategy_runtime if not launch_type else None)
    read = step_functions.read
    return Launch(
        resource,
        lambda: read(launch_type) or None,
        lambda: _provider_names(as_list(read(strategy)), "CapacityProvider"),
        lambda: None if task_runtime else read(task),
        key,
        lambda: read(cluster),
        key,
        where=f" state {state.name!r}",
        runtime=runtime,
        task_runtime=task_runtime,
    )


_READERS: tuple[tuple[frozenset[str], Callable[[Resource], list[Launch]]], ...] = (
    (SERVICE | TASK_SET, _service),
    (EVENT_TARGET, _event_target),
    (EVENT_RULE_NATIVE, _event_rule),
    (SCHEDULE, _schedule),
    (PIPE, _pipe),
    (STATE_MACHINE, _state_machine),
)


class ClusterDefaults:
    """Default capacity provider strategies that the stack sets on its clusters."""

    def __init__(self, model: Model) -> None:
        self.model = model
        self._fargate: dict[str, bool] | None = None

    def _table(self) -> dict[str, bool]:
        if self._fargate is None:
            table: dict[str, bool] = {}
            for cluster in self.model.of(CLUSTER):
                if _fargate(_provider_names(as_list(get(cluster.props, _default_key(cluster))))):
                    table[cluster.urn] = True
            for assoc in self.model.of(CLUSTER_CAPACITY_PROVIDERS):
                native = is_native(assoc.resource_type)
                clusters = self.model.refs(
                    assoc,
                    "cluster" if native else "clusterName",
                    CLUSTER,
                    what="which cluster's default strategy it sets",
                )
                fargate = _fargate(_provider_names(as_list(get(assoc.props, _default_key(assoc)))))
                for cluster in clusters:
                    table[cluster.urn] = table.get(cluster.urn, False) or fargate
            self._fargate = table
        return self._fargate

    def fargate(self, launch: Launch) -> bool:
        """True when the launch's cluster defaults to a Fargate capacity provider. A cluster
        outside the stack (or none: the account's ``default`` cluster) has a default strategy
        the pack cannot see: "cannot verify", naming the launcher."""
        table = self._table()
        clusters = self.model.refs(
            launch.resource,
            launch.cluster_key,
            CLUSTER,
            values=lambda: [launch.cluster_value()],
            silent_external=True,
        )
        if not clusters:
            key = launch.cluster_key
            self.model.note(
                launch.resource,
                key if isinstance(key, str) else key[0],
                f"names no cluster of this stack{launch.where}, and neither launchType nor a "
                "capacity provider strategy is set: that cluster's default strategy decides",
                "whether it launches on Fargate",
            )
            return False
        return any(table.get(c.urn, False) for c in clusters)


def _default_key(resource: Resource) -> str:
    native = is_native(resource.resource_type)
    return "defaultCapacityProviderStrategy" if native else "defaultCapacityProviderStrategies"


def ec2_only(props: Mapping[str, Any]) -> bool:
    """A task definition whose ``requiresCompatibilities`` is set and excludes FARGATE."""
    return excludes_fargate(as_list(get(props, "requiresCompatibilities")))


def excludes_fargate(compatibilities: Sequence[Any]) -> bool:
    """``requiresCompatibilities`` set, without FARGATE."""
    compat = [str(c).upper() for c in compatibilities]
    return bool(compat) and "FARGATE" not in compat
