"""Constraints AWS documents for an operation beyond its request shape, across resources.

Each entry quotes the sentence of botocore's documentation of the operation (or of one of its
members) that states the constraint, and checks the recorded stack against it; the quote is
checked against the pinned botocore's models by the tests, so a source cannot drift. Rules a
single resource's request shows are the fidelity layer's (`tools/aws_requests/` RULES,
docs/fidelity.md); these need the stack: which provider a service's strategy names, which
container a load balancer targets, which log group a cluster waits for.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from tools.aws_requests import Resource
from tools.rehearsal.model import (
    CAPACITY_PROVIDER,
    CLUSTER,
    CLUSTER_PROVIDERS,
    SERVICE,
    TASK_DEFINITION,
    StackModel,
    known,
    listify,
)

Violation = tuple[Resource, str]
Check = Callable[[StackModel], Iterator[Violation]]
ASG = "aws:autoscaling/group:Group"
TARGET_GROUP = "aws:lb/targetGroup:TargetGroup"
LOG_GROUP = "aws:cloudwatch/logGroup:LogGroup"


@dataclass(frozen=True)
class Constraint:
    """One documented constraint: where AWS states it, and the check."""

    service: str
    """botocore service name (`ecs`)."""
    operation: str
    member: str | None
    """Path of the input member whose documentation states it (`launchType`,
    `capacityProviderStrategy[].weight`); None: the operation's own documentation."""
    quote: str
    """The sentence, as the pinned botocore documents it."""
    check: Check

    @property
    def source(self) -> str:
        where = f"{self.operation}.{self.member}" if self.member else self.operation
        return f"botocore {self.service} {where}"


CONSTRAINTS: list[Constraint] = []
"""Every cross-resource constraint the rehearsal enforces, with its source, in check order."""


def constraint(
    service: str, operation: str, member: str | None, quote: str
) -> Callable[[Check], Check]:
    """Register the decorated check under the botocore documentation that states it."""

    def register(check: Check) -> Check:
        CONSTRAINTS.append(Constraint(service, operation, member, quote, check))
        return check

    return register


def _services(model: StackModel) -> Iterator[tuple[Resource, Resource | None]]:
    for service in model.of(SERVICE):
        task = model.by_arn(service.inputs.get("taskDefinition"), TASK_DEFINITION)
        yield service, task


@constraint(
    "ecs",
    "PutClusterCapacityProviders",
    None,
    "Amazon ECS Managed Instances doesn't support this, because when you create a "
    "capacity provider with Amazon ECS Managed Instances, it becomes available only "
    "within the specified cluster.",
)
def _managed_instances_in_association(model: StackModel) -> Iterator[Violation]:
    """No Managed Instances capacity provider in a cluster's association (its providers or
    its default strategy)."""
    scoped = {
        model.output(p, "name")
        for p in model.of(CAPACITY_PROVIDER)
        if p.inputs.get("managedInstancesProvider")
    }
    for assoc in model.of(CLUSTER_PROVIDERS):
        named = set(listify(assoc.inputs.get("capacityProviders")))
        named |= {
            s.get("capacityProvider")
            for s in listify(assoc.inputs.get("defaultCapacityProviderStrategies"))
            if isinstance(s, Mapping)
        }
        for name in sorted(n for n in named & scoped if isinstance(n, str)):
            yield assoc, f"PutClusterCapacityProviders names Managed Instances provider {name}"


@constraint(
    "ecs",
    "CreateService",
    "launchType",
    "If you want to use Amazon ECS Managed Instances, you must use the "
    "capacityProviderStrategy request parameter and omit the launchType request "
    "parameter.",
)
def _managed_instances_launch_type(model: StackModel) -> Iterator[Violation]:
    """No `launchType: MANAGED_INSTANCES` on a service: it names a capacity provider strategy."""
    for service, _ in _services(model):
        if service.inputs.get("launchType") == "MANAGED_INSTANCES":
            yield service, "launchType MANAGED_INSTANCES: use a capacity provider strategy"


def _cluster_names(model: StackModel, ref: Any) -> set[Any]:
    cluster = model.cluster(ref)
    names = {ref}
    if cluster is not None:
        names |= {model.output(cluster, "name"), model.output(cluster, "arn")}
    return names


@constraint(
    "ecs",
    "CreateCluster",
    "capacityProviders",
    "A capacity provider must be associated with a cluster before it can be included as "
    "part of the default capacity provider strategy of the cluster or used in a capacity "
    "provider strategy when calling the CreateService or RunTask actions.",
)
def _strategy_not_associated(model: StackModel) -> Iterator[Violation]:
    """A service's strategy names only providers associated with its cluster, or Managed
    Instances providers created in it."""
    for service, _ in _services(model):
        strategy = listify(service.inputs.get("capacityProviderStrategies"))
        clusters = _cluster_names(model, service.inputs.get("cluster"))
        associated: set[Any] = set()
        for assoc in model.of(CLUSTER_PROVIDERS):
            if assoc.inputs.get("clusterName") in clusters:
                associated |= set(listify(assoc.inputs.get("capacityProviders")))
        for item in strategy:
            name = item.get("capacityProvider") if isinstance(item, Mapping) else None
            if not known(name) or name in associated:
                continue
            provider = model.by_name(name, CAPACITY_PROVIDER)
            if provider is not None and provider.inputs.get("managedInstancesProvider"):
                if provider.inputs.get("cluster") in clusters:
                    continue
                yield (
                    service,
                    f"strategy names {name}, a Managed Instances provider of another cluster",
                )
                continue
            yield service, f"strategy names {name}, which is not associated with the cluster"


def _strategies(model: StackModel) -> Iterator[tuple[Resource, list[Mapping[str, Any]]]]:
    for service in model.of(SERVICE):
        yield (
            service,
            [
                s
                for s in listify(service.inputs.get("capacityProviderStrategies"))
                if isinstance(s, Mapping)
            ],
        )
    for assoc in model.of(CLUSTER_PROVIDERS):
        items = listify(assoc.inputs.get("defaultCapacityProviderStrategies"))
        yield assoc, [s for s in items if isinstance(s, Mapping)]


@constraint(
    "ecs",
    "CreateService",
    "capacityProviderStrategy[].weight",
    "When multiple capacity providers are specified within a capacity provider strategy, "
    "at least one of the capacity providers must have a weight value greater than zero "
    "and any capacity providers with a weight of 0 can't be used to place tasks.",
)
def _strategy_weights(model: StackModel) -> Iterator[Violation]:
    """A strategy of several providers gives at least one a weight above 0."""
    for resource, strategy in _strategies(model):
        weights = [s.get("weight") or 0 for s in strategy]
        if len(strategy) > 1 and all(known(w) and float(w) == 0 for w in weights):
            yield resource, "no capacity provider of the strategy has a weight above 0"


@constraint(
    "ecs",
    "CreateService",
    "capacityProviderStrategy[].base",
    "Only one capacity provider in a capacity provider strategy can have a base defined.",
)
def _strategy_bases(model: StackModel) -> Iterator[Violation]:
    """At most one provider of a strategy has a base."""
    for resource, strategy in _strategies(model):
        based = [
            s.get("capacityProvider")
            for s in strategy
            if known(s.get("base")) and (s.get("base") or 0) > 0
        ]
        if len(based) > 1:
            yield resource, f"more than one provider of the strategy has a base: {based}"


@constraint(
    "ecs",
    "CreateCapacityProvider",
    "autoScalingGroupProvider.managedTerminationProtection",
    "The Auto Scaling group and each instance in the Auto Scaling group must have "
    "instance protection from scale-in actions on as well.",
)
def _termination_protection(model: StackModel) -> Iterator[Violation]:
    """Managed termination protection comes with managed scaling and the group's scale-in
    protection."""
    for provider in model.of(CAPACITY_PROVIDER):
        asg_provider = provider.inputs.get("autoScalingGroupProvider") or {}
        if asg_provider.get("managedTerminationProtection") != "ENABLED":
            continue
        scaling = asg_provider.get("managedScaling") or {}
        if scaling.get("status") != "ENABLED":
            yield provider, "managed termination protection without managed scaling"
        asg = model.by_arn(asg_provider.get("autoScalingGroupArn"), ASG)
        if asg is not None and asg.inputs.get("protectFromScaleIn") is not True:
            yield (
                provider,
                f"managed termination protection, but {asg.name} lacks protectFromScaleIn",
            )


def _service_connect(service: Resource) -> Mapping[str, Any]:
    config = service.inputs.get("serviceConnectConfiguration")
    return config if isinstance(config, Mapping) and config.get("enabled") else {}


@constraint(
    "ecs",
    "CreateService",
    "serviceConnectConfiguration.namespace",
    "The namespace must be in the same Amazon Web Services Region as the Amazon ECS "
    "service and cluster.",
)
def _namespace_region(model: StackModel) -> Iterator[Violation]:
    """The Service Connect namespace is in the service's Region."""
    for service, _ in _services(model):
        namespace = _service_connect(service).get("namespace")
        if isinstance(namespace, str) and namespace.startswith("arn:"):
            region = namespace.split(":")[3]
            if region != model.region:
                yield (
                    service,
                    f"Service Connect namespace {namespace} is in {region}, not {model.region}",
                )


def _port_mappings(model: StackModel, task: Resource | None) -> list[Mapping[str, Any]] | None:
    containers = model.containers(task) if task is not None else None
    if containers is None:
        return None
    return [p for c in containers for p in listify(c.get("portMappings")) if isinstance(p, Mapping)]


@constraint(
    "ecs",
    "CreateService",
    "serviceConnectConfiguration.services[].portName",
    "The portName must match the name of one of the portMappings from all the containers "
    "in the task definition of this Amazon ECS service.",
)
def _port_names(model: StackModel) -> Iterator[Violation]:
    """Each Service Connect `portName` names a port mapping of the task."""
    for service, task in _services(model):
        mappings = _port_mappings(model, task)
        if mappings is None:
            continue
        names = {p.get("name") for p in mappings}
        for entry in listify(_service_connect(service).get("services")):
            port = entry.get("portName") if isinstance(entry, Mapping) else None
            if known(port) and port not in names:
                yield service, f"Service Connect portName {port} names no port mapping of the task"


@constraint(
    "ecs",
    "CreateService",
    "serviceConnectConfiguration.services[].timeout.perRequestTimeoutSeconds",
    "perRequestTimeout can only be set if Service Connect appProtocol isn't TCP .",
)
def _per_request_timeout_on_tcp(model: StackModel) -> Iterator[Violation]:
    """`perRequestTimeoutSeconds` only on a port whose `appProtocol` is not TCP."""
    for service, task in _services(model):
        mappings = _port_mappings(model, task) or []
        protocols = {p.get("name"): p.get("appProtocol") for p in mappings}
        for entry in listify(_service_connect(service).get("services")):
            if not isinstance(entry, Mapping):
                continue
            timeout = entry.get("timeout") or {}
            port = entry.get("portName")
            timed = timeout.get("perRequestTimeoutSeconds") is not None
            if timed and port in protocols and protocols[port] in (None, "tcp"):
                yield service, f"perRequestTimeoutSeconds on {port}, whose appProtocol is TCP"


@constraint(
    "ecs",
    "CreateService",
    "loadBalancers[].targetGroupArn",
    "If your service's task definition uses the awsvpc network mode, you must choose ip "
    "as the target type, not instance .",
)
def _target_types(model: StackModel) -> Iterator[Violation]:
    """awsvpc tasks sit behind target groups of target type `ip`."""
    for service, task in _services(model):
        if task is None or task.inputs.get("networkMode") != "awsvpc":
            continue
        for lb in listify(service.inputs.get("loadBalancers")):
            group = (
                model.by_arn(lb.get("targetGroupArn"), TARGET_GROUP)
                if isinstance(lb, Mapping)
                else None
            )
            if group is not None and (group.inputs.get("targetType") or "instance") != "ip":
                yield (
                    service,
                    f"awsvpc tasks behind target group {group.name} of target type "
                    f"{group.inputs.get('targetType') or 'instance'}",
                )


@constraint(
    "ecs",
    "CreateService",
    "loadBalancers[].containerPort",
    "This port must correspond to a containerPort in the task definition the tasks in the"
    " service are using.",
)
def _load_balancer_targets(model: StackModel) -> Iterator[Violation]:
    """A service's load balancer targets a container and port the task maps."""
    for service, task in _services(model):
        containers = model.containers(task) if task is not None else None
        if containers is None:
            continue
        ports = {
            (c.get("name"), float(p["containerPort"]))
            for c in containers
            for p in listify(c.get("portMappings"))
            if isinstance(p, Mapping) and isinstance(p.get("containerPort"), int | float)
        }
        for lb in listify(service.inputs.get("loadBalancers")):
            if not isinstance(lb, Mapping):
                continue
            name, port = lb.get("containerName"), lb.get("containerPort")
            if not known(name) or not isinstance(port, int | float):
                continue
            if name not in {c.get("name") for c in containers}:
                yield (
                    service,
                    f"load balancer targets container {name}, which the task does not have",
                )
            elif (name, float(port)) not in ports:
                yield (
                    service,
                    f"load balancer targets {name}:{port:g}, which the container does not map",
                )


def _efs_volumes(
    model: StackModel,
) -> Iterator[tuple[Resource, Mapping[str, Any], Mapping[str, Any]]]:
    for task in model.of(TASK_DEFINITION):
        for volume in listify(task.inputs.get("volumes")):
            efs = volume.get("efsVolumeConfiguration") if isinstance(volume, Mapping) else None
            if isinstance(efs, Mapping):
                yield task, volume, efs


@constraint(
    "ecs",
    "RegisterTaskDefinition",
    "volumes[].efsVolumeConfiguration.transitEncryption",
    "Transit encryption must be turned on if Amazon EFS IAM authorization is used.",
)
def _efs_transit_encryption(model: StackModel) -> Iterator[Violation]:
    """EFS IAM authorization comes with transit encryption."""
    for task, volume, efs in _efs_volumes(model):
        auth = efs.get("authorizationConfig") or {}
        if auth.get("iam") == "ENABLED" and efs.get("transitEncryption") != "ENABLED":
            yield (
                task,
                f"EFS volume {volume.get('name')}: IAM authorization without transit encryption",
            )


@constraint(
    "ecs",
    "RegisterTaskDefinition",
    "volumes[].efsVolumeConfiguration.authorizationConfig.accessPointId",
    "If an access point is specified, the root directory value specified in the "
    "EFSVolumeConfiguration must either be omitted or set to / which will enforce the path "
    "set on the EFS access point. If an access point is used, transit encryption must be on "
    "in the EFSVolumeConfiguration .",
)
def _efs_access_point(model: StackModel) -> Iterator[Violation]:
    """An EFS access point comes with transit encryption, and a root directory of `/` or none."""
    for task, volume, efs in _efs_volumes(model):
        if not (efs.get("authorizationConfig") or {}).get("accessPointId"):
            continue
        if efs.get("transitEncryption") != "ENABLED":
            yield (
                task,
                f"EFS volume {volume.get('name')}: an access point without transit encryption",
            )
        if efs.get("rootDirectory") not in (None, "", "/"):
            yield (
                task,
                f"EFS volume {volume.get('name')}: an access point with rootDirectory "
                f"{efs.get('rootDirectory')}",
            )


@constraint(
    "ecs",
    "CreateCluster",
    "configuration.executeCommandConfiguration.logConfiguration.cloudWatchLogGroupName",
    "The CloudWatch log group must already be created.",
)
def _exec_log_group_created_first(model: StackModel) -> Iterator[Violation]:
    """The ECS Exec log group exists before the cluster: the cluster depends on it."""
    for cluster in model.of(CLUSTER):
        config = (
            (cluster.inputs.get("configuration") or {}).get("executeCommandConfiguration")
        ) or {}
        name = (config.get("logConfiguration") or {}).get("cloudWatchLogGroupName")
        group = model.by_name(name, LOG_GROUP)
        if group is not None and group.urn not in set(getattr(cluster, "dependencies", ()) or ()):
            yield (
                cluster,
                f"ECS Exec logs to {name}, which the cluster does not wait for (no dependency)",
            )


@constraint(
    "ecs",
    "CreateService",
    "networkConfiguration",
    "This parameter is required for task definitions that use the awsvpc network mode to "
    "receive their own elastic network interface, and it isn't supported for other "
    "network modes.",
)
def _network_configuration(model: StackModel) -> Iterator[Violation]:
    """`networkConfiguration` exactly when the task definition uses awsvpc."""
    for service, task in _services(model):
        if task is None or not known(task.inputs.get("networkMode")):
            continue
        awsvpc = task.inputs.get("networkMode") == "awsvpc"
        has = bool(service.inputs.get("networkConfiguration"))
        if awsvpc and not has:
            yield service, "awsvpc task definition, but the service has no networkConfiguration"
        elif has and not awsvpc:
            yield (
                service,
                "networkConfiguration with network mode "
                f"{task.inputs.get('networkMode') or 'bridge'}",
            )


@constraint(
    "ecs",
    "RegisterTaskDefinition",
    "containerDefinitions[].dependsOn[].condition",
    "This condition can't be set on an essential container.",
)
def _depends_on_essential(model: StackModel) -> Iterator[Violation]:
    """`dependsOn` COMPLETE or SUCCESS never waits for an essential container."""
    for task in model.of(TASK_DEFINITION):
        containers = model.containers(task) or []
        essential = {c.get("name") for c in containers if c.get("essential", True)}
        for c in containers:
            for dep in listify(c.get("dependsOn")):
                if (
                    isinstance(dep, Mapping)
                    and dep.get("condition") in ("COMPLETE", "SUCCESS")
                    and dep.get("containerName") in essential
                ):
                    yield (
                        task,
                        f"container {c.get('name')} waits for essential "
                        f"{dep.get('containerName')} to {dep.get('condition')}",
                    )


@constraint(
    "autoscaling",
    "CreateAutoScalingGroup",
    "MaxInstanceLifetime",
    "If specified, the value must be either 0 or a number equal to or greater than 86,400"
    " seconds (1 day).",
)
def _max_instance_lifetime(model: StackModel) -> Iterator[Violation]:
    """`maxInstanceLifetime` is 0 or at least 86,400 s."""
    for asg in model.of(ASG):
        value = asg.inputs.get("maxInstanceLifetime")
        if known(value) and value is not None and 0 < float(value) < 86400:
            yield asg, f"maxInstanceLifetime {value:g} s: 0 or at least 86,400"


@constraint(
    "autoscaling",
    "CreateAutoScalingGroup",
    "MixedInstancesPolicy.LaunchTemplate.Overrides[].WeightedCapacity",
    "If you specify a value for WeightedCapacity for one instance type, you must specify "
    "a value for WeightedCapacity for all of them.",
)
def _weighted_capacity(model: StackModel) -> Iterator[Violation]:
    """`weightedCapacity` on every instance-type override or on none."""
    for asg in model.of(ASG):
        template = ((asg.inputs.get("mixedInstancesPolicy") or {}).get("launchTemplate")) or {}
        weights = [
            o.get("weightedCapacity")
            for o in listify(template.get("overrides"))
            if isinstance(o, Mapping)
        ]
        if any(w is not None for w in weights) and any(w is None for w in weights):
            yield asg, "weightedCapacity on some instance type overrides but not all"


def violations(model: StackModel) -> Iterator[tuple[Constraint, Resource, str]]:
    for constraint in CONSTRAINTS:
        for resource, message in constraint.check(model):
            yield constraint, resource, message
