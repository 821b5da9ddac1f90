"""Every way a stack launches ECS tasks, and whether that launch lands on Fargate.

A task definition is only half the question "does this GPU task run on Fargate?"; the other
half is whatever launches it. Besides services, ECS runs tasks for task sets (external /
CodeDeploy deployments), EventBridge rule targets and EventBridge Scheduler schedules. Each
one lands on Fargate by ``launchType: FARGATE``, by a FARGATE / FARGATE_SPOT capacity provider
in its strategy, or, with neither, by the cluster's default capacity provider strategy (which
the stack may set through ``ClusterCapacityProviders`` or the cluster itself).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pulumi_policy.proxy import UnknownValueError

from .reachability import Model
from .resources import (
    CLUSTER,
    CLUSTER_CAPACITY_PROVIDERS,
    EVENT_RULE_NATIVE,
    EVENT_TARGET,
    FARGATE_CAPACITY_PROVIDERS,
    SCHEDULE,
    SERVICE,
    TASK_DEFINITION,
    TASK_SET,
    as_list,
    get,
    is_native,
)

Resource = Any

#: Every type that launches ECS tasks.
LAUNCHERS = SERVICE | TASK_SET | EVENT_TARGET | EVENT_RULE_NATIVE | SCHEDULE


def _provider_names(items: Iterable[Any]) -> list[str | None]:
    """Capacity provider names of a strategy; None where unknown. FARGATE and FARGATE_SPOT are
    built-in literal names, so an unknown name is one of the stack's own (EC2) providers:
    only this read tolerates an unknown value."""
    names: list[str | None] = []
    for item in items:
        try:
            value = get(item, "capacityProvider")
        except UnknownValueError:
            value = None
        names.append(None if value is None else str(value))
    return names


@dataclass(frozen=True)
class Launch:
    """One way ``resource`` launches ECS tasks.

    ``block`` holds the launch settings (the resource's props, or the nested ``ecsTarget`` /
    ``ecsParameters``); ``task_key`` / ``cluster_key`` are the top-level inputs holding the
    task definition and cluster references (property dependencies are recorded per top-level
    input).
    """

    resource: Resource
    block: Mapping[str, Any]
    task_value: Callable[[], Any]
    task_key: str
    cluster_value: Callable[[], Any]
    cluster_key: str
    strategy_key: str

    @property
    def label(self) -> str:
        kind = str(self.resource.resource_type).rsplit(":", 1)[-1]
        return f"{kind} {self.resource.name!r}"

    @property
    def why(self) -> str:
        launch_type = get(self.block, "launchType")
        if launch_type is not None:
            return f"launchType {launch_type}"
        return "capacity provider strategy"

    def on_fargate(self, defaults: ClusterDefaults) -> bool:
        """Launch type FARGATE, a Fargate provider in the strategy, or (neither set) a
        cluster whose default strategy in this stack is Fargate."""
        launch_type = get(self.block, "launchType")
        if launch_type is not None:
            return str(launch_type).upper() == "FARGATE"
        strategy = as_list(get(self.block, self.strategy_key))
        if strategy:
            return any(
                n is not None and n.upper() in FARGATE_CAPACITY_PROVIDERS
                for n in _provider_names(strategy)
            )
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
    """The task launches a service, task set, EventBridge target / rule or schedule makes."""
    rtype = resource.resource_type
    props = resource.props
    native = is_native(rtype)
    strategy = "capacityProviderStrategy" if native else "capacityProviderStrategies"
    if rtype in SERVICE | TASK_SET:
        return [
            Launch(
                resource,
                props,
                lambda: get(props, "taskDefinition"),
                "taskDefinition",
                lambda: get(props, "cluster"),
                "cluster",
                strategy,
            )
        ]
    if rtype in EVENT_TARGET:
        block = get(props, "ecsTarget")
        if block is None:
            return []
        return [
            Launch(
                resource,
                block,
                lambda: get(block, "taskDefinitionArn"),
                "ecsTarget",
                lambda: get(props, "arn"),
                "arn",
                "capacityProviderStrategies",
            )
        ]
    if rtype in EVENT_RULE_NATIVE:
        found = []
        for target in as_list(get(props, "targets")):
            block = get(target, "ecsParameters")
            if block is None:
                continue
            found.append(
                Launch(
                    resource,
                    block,
                    lambda b=block: get(b, "taskDefinitionArn"),
                    "targets",
                    lambda t=target: get(t, "arn"),
                    "targets",
                    "capacityProviderStrategy",
                )
            )
        return found
    if rtype in SCHEDULE:
        target = get(props, "target")
        block = get(target, "ecsParameters") if target is not None else None
        if block is None:
            return []
        return [
            Launch(
                resource,
                block,
                lambda: get(block, "taskDefinitionArn"),
                "target",
                lambda: get(target, "arn") if target is not None else None,
                "target",
                strategy,
            )
        ]
    return []


class ClusterDefaults:
    """Default capacity provider strategies that the stack sets on its clusters."""

    def __init__(self, model: Model) -> None:
        self.model = model
        self._fargate: dict[str, bool] | None = None

    def _table(self) -> dict[str, bool]:
        if self._fargate is None:
            table: dict[str, bool] = {}
            for cluster in self.model.of(CLUSTER):
                key = (
                    "defaultCapacityProviderStrategy"
                    if is_native(cluster.resource_type)
                    else ("defaultCapacityProviderStrategies")
                )
                if _has_fargate(as_list(get(cluster.props, key))):
                    table[cluster.urn] = True
            for assoc in self.model.of(CLUSTER_CAPACITY_PROVIDERS):
                native = is_native(assoc.resource_type)
                key = (
                    "defaultCapacityProviderStrategy"
                    if native
                    else ("defaultCapacityProviderStrategies")
                )
                clusters = self.model.refs(
                    assoc,
                    "cluster" if native else "clusterName",
                    CLUSTER,
                    what="which cluster's default strategy it sets",
                )
                fargate = _has_fargate(as_list(get(assoc.props, key)))
                for cluster in clusters:
                    table[cluster.urn] = table.get(cluster.urn, False) or fargate
            self._fargate = table
        return self._fargate

    def fargate(self, launch: Launch) -> bool:
        """True when the launch's cluster defaults to a Fargate capacity provider."""
        table = self._table()
        if not table:
            return False
        clusters = self.model.refs(
            launch.resource,
            launch.cluster_key,
            CLUSTER,
            values=lambda: [launch.cluster_value()],
            silent_external=True,
        )
        return any(table.get(c.urn, False) for c in clusters)


def _has_fargate(strategy: Sequence[Any]) -> bool:
    return any(
        n is not None and n.upper() in FARGATE_CAPACITY_PROVIDERS for n in _provider_names(strategy)
    )


def ec2_only(props: Mapping[str, Any]) -> bool:
    """A task definition whose ``requiresCompatibilities`` is set and excludes FARGATE."""
    compat = [str(c).upper() for c in as_list(get(props, "requiresCompatibilities"))]
    return bool(compat) and "FARGATE" not in compat


def batch_containers(props: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """(label, container) for an AWS Batch job definition: ``containerProperties`` and the
    containers of ``ecsProperties.taskProperties`` (JSON strings in pulumi-aws, objects in
    aws-native)."""
    found: list[tuple[str, Mapping[str, Any]]] = []
    container = _json(get(props, "containerProperties"))
    if isinstance(container, Mapping):
        found.append(("containerProperties", container))
    ecs = _json(get(props, "ecsProperties"))
    if isinstance(ecs, Mapping):
        for task in as_list(get(ecs, "taskProperties")):
            for item in as_list(get(task, "containers")):
                if isinstance(item, Mapping):
                    found.append((f"container {get(item, 'name', '?')!r}", item))
    return found


def _json(value: Any) -> Any:
    if isinstance(value, str):
        import json

        try:
            return json.loads(value)
        except ValueError:
            return None
    return value
