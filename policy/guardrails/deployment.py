"""Deployment-safety rules for inference services: grace period, rollback, scaling, headroom.

Model servers are slow to become healthy (image pull + weight load + warm-up can take minutes)
and their capacity is scarce (GPU instances). The rules here catch the settings that turn that
into outages: a health-check grace period too short for the load (ECS kills healthy-but-warming
tasks), no deployment circuit breaker with rollback (a bad image keeps replacing good tasks),
scaling in faster than out (a warm GPU task is expensive to re-warm), and a rolling deploy that
needs more GPU instances than the Auto Scaling group may launch (the deploy never places), and
a queue worker (its task role may ``sqs:ReceiveMessage``) scaled only on CPU: a GPU worker
waiting on a slow model is not CPU-bound, so the backlog grows while the service stays small.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from fnmatch import fnmatchcase
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    PolicyResource,
    ResourceValidationArgs,
    StackValidationArgs,
)
from pulumi_policy.proxy import UnknownValueError

from .reachability import Model
from .resources import (
    AUTOSCALING_GROUP,
    CAPACITY_PROVIDER,
    EXEMPT_SCHEMA,
    MANAGED_POLICY,
    ROLE,
    ROLE_POLICY,
    ROLE_POLICY_ATTACHMENT,
    SCALABLE_TARGET,
    SCALING_POLICY,
    SERVICE,
    TASK_DEFINITION,
    UnknownCollector,
    accelerator_needs,
    as_bool,
    as_list,
    as_number,
    ceil_div,
    get,
    get_path,
    is_exempt,
    is_native,
    known,
    linked,
    of_types,
    service_circuit_breaker,
    service_deploy_settings,
    service_load_balancers,
    stored,
    strategy_provider_names,
)
from .rules import EXEMPT_ONLY, Config, Report, judge_each, resource_rule, stack_rule

Resource = Any

_GRACE_SCHEMA = {
    "minGracePeriodSeconds": {
        "type": "integer",
        "minimum": 0,
        "default": 120,
        "description": "Smallest healthCheckGracePeriodSeconds for load-balanced services.",
    },
    "exemptResources": EXEMPT_SCHEMA,
}


def _check_grace(args: ResourceValidationArgs, config: Config, report: Report) -> None:
    if not service_load_balancers(args.props):
        return
    grace = as_number(get(args.props, "healthCheckGracePeriodSeconds"))
    minimum = float(config["minGracePeriodSeconds"])
    if grace is None:
        report(
            "The service sits behind a load balancer but sets no healthCheckGracePeriodSeconds "
            f"(ECS then uses 0); expected at least {minimum:g} s."
        )
    elif grace < minimum:
        report(f"healthCheckGracePeriodSeconds is {grace:g} s; expected at least {minimum:g} s.")


health_check_grace_period = resource_rule(
    name="health-check-grace-period",
    description=(
        "Load-balanced ECS services should set healthCheckGracePeriodSeconds to cover image "
        "pull + weight load + warm-up, or ECS stops tasks that are still loading the model. "
        "Fix: set it to at least minGracePeriodSeconds (more for large models)."
    ),
    level=EnforcementLevel.ADVISORY,
    types=SERVICE,
    schema=_GRACE_SCHEMA,
    check=_check_grace,
)


def _check_circuit_breaker(args: ResourceValidationArgs, config: Config, report: Report) -> None:
    controller = str(get_path(args.props, "deploymentController", "type", default="ECS"))
    if controller.upper() != "ECS":
        return  # CODE_DEPLOY / EXTERNAL controllers have their own rollback.
    breaker = service_circuit_breaker(args.resource_type, args.props)
    enable = as_bool(get(breaker, "enable", False))
    rollback = as_bool(get(breaker, "rollback", False))
    if not (enable and rollback):
        report(f"deployment circuit breaker: enable={enable}, rollback={rollback}.")


deployment_circuit_breaker = resource_rule(
    name="deployment-circuit-breaker-rollback",
    description=(
        "ECS services should enable the deployment circuit breaker with rollback, so a bad "
        "image or model stops replacing healthy tasks and the last good deployment returns. "
        "Fix: deploymentCircuitBreaker {enable: true, rollback: true} (aws) or "
        "deploymentConfiguration.deploymentCircuitBreaker (aws-native)."
    ),
    level=EnforcementLevel.ADVISORY,
    types=SERVICE,
    schema=EXEMPT_ONLY,
    check=_check_circuit_breaker,
)

_SCALING_SCHEMA = {
    "minScaleInCooldownSeconds": {
        "type": "integer",
        "minimum": 0,
        "default": 300,
        "description": "Smallest acceptable scaleInCooldown for ECS target tracking policies.",
    },
    "exemptResources": EXEMPT_SCHEMA,
}


def _check_scaling(args: ResourceValidationArgs, config: Config, report: Report) -> None:
    if str(get(args.props, "serviceNamespace", "ecs")).lower() != "ecs":
        return
    tracking = get(args.props, "targetTrackingScalingPolicyConfiguration")
    if tracking is None or as_bool(get(tracking, "disableScaleIn", False)):
        return
    scale_in = as_number(get(tracking, "scaleInCooldown"))
    scale_out = as_number(get(tracking, "scaleOutCooldown"))
    minimum = float(config["minScaleInCooldownSeconds"])
    if scale_in is None or scale_out is None:
        report(
            "Target tracking policy leaves scaleInCooldown/scaleOutCooldown unset; set both, "
            f"scale-out short and scale-in at least {minimum:g} s."
        )
    elif scale_in < scale_out:
        report(f"scaleInCooldown {scale_in:g} s is shorter than scaleOutCooldown {scale_out:g} s.")
    elif scale_in < minimum:
        report(f"scaleInCooldown {scale_in:g} s is below {minimum:g} s.")


scale_out_faster_than_in = resource_rule(
    name="scale-out-faster-than-scale-in",
    description=(
        "ECS target tracking should scale out fast and in slowly: losing a warm model task is "
        "expensive to re-warm, adding one late only costs latency. Fix: set scaleOutCooldown "
        "short (e.g. 60 s) and scaleInCooldown longer and at least minScaleInCooldownSeconds."
    ),
    level=EnforcementLevel.ADVISORY,
    types=SCALING_POLICY,
    schema=_SCALING_SCHEMA,
    check=_check_scaling,
)

_HEADROOM_SCHEMA = {
    "tasksPerInstance": {
        "type": "integer",
        "minimum": 1,
        "default": 1,
        "description": (
            "How many tasks of an accelerated service fit on one instance (1 when each task "
            "takes all of an instance's GPUs, the usual shape for LLM serving)."
        ),
    },
    "exemptResources": EXEMPT_SCHEMA,
}


def deploy_peak_instances(
    desired: float, maximum_percent: float, tasks_per_instance: int
) -> tuple[int, int]:
    """(steady instances, instances at the peak of a rolling deploy) for one service.

    ECS starts new tasks before stopping old ones, up to
    ``floor(desired * maximumPercent / 100)`` running tasks (never fewer than desired).

    >>> deploy_peak_instances(2, 200, 1)
    (2, 4)
    """
    steady = ceil_div(desired, tasks_per_instance)
    peak_tasks = max(desired, float(int(desired * maximum_percent / 100.0)))
    return steady, ceil_div(peak_tasks, tasks_per_instance)


def strategy_providers(service, providers) -> list:
    native = is_native(service.resource_type)
    key = "capacityProviderStrategy" if native else "capacityProviderStrategies"
    found = linked(service, key, CAPACITY_PROVIDER)
    if found:
        return found
    names = {n for n in strategy_provider_names(service.resource_type, service.props) if n}
    return [cp for cp in providers if str(get(cp.props, "name", "")) in names]


_HEADROOM_TYPES = SERVICE | AUTOSCALING_GROUP


def _check_headroom(
    args: StackValidationArgs, config: Config, report: Report, unknowns: UnknownCollector
) -> None:
    per_instance = max(1, int(config["tasksPerInstance"]))
    providers = of_types(args.resources, CAPACITY_PROVIDER)
    pools: dict[str, list] = defaultdict(list)  # ASG URN -> [(service, steady, peak)]
    groups: dict[str, PolicyResource] = {}
    for service in of_types(args.resources, SERVICE):
        with unknowns.guard():
            tasks = linked(service, "taskDefinition", TASK_DEFINITION)
            if not any(accelerator_needs(t.props, t.resource_type) for t in tasks):
                continue
            desired, maximum = service_deploy_settings(service.resource_type, service.props)
            steady, peak = deploy_peak_instances(desired, maximum, per_instance)
            for cp in strategy_providers(service, providers):
                if get(cp.props, "managedInstancesProvider") is not None:
                    # ECS Managed Instances: no Auto Scaling group and no maximum; ECS launches
                    # the instances a deploy surge needs, so there is no headroom to check.
                    continue
                for asg in linked(cp, "autoScalingGroupProvider", AUTOSCALING_GROUP):
                    groups[asg.urn] = asg
                    pools[asg.urn].append((service, steady, peak, maximum))
    for urn, members in pools.items():
        asg = groups[urn]
        with unknowns.guard():
            max_size = as_number(get(asg.props, "maxSize"))
            if max_size is None:
                continue
            steady_total = sum(steady for _, steady, _, _ in members)
            for service, steady, peak, maximum in members:
                if is_exempt(config, service, _HEADROOM_TYPES) or is_exempt(
                    config, asg, _HEADROOM_TYPES
                ):
                    continue
                needed = steady_total - steady + peak
                if needed > max_size:
                    report(
                        f"rolling deploy of {service.name!r} (maximumPercent {maximum:g}) needs "
                        f"{needed} instance(s) in ASG {asg.name!r} ({steady_total} steady for the "
                        f"pool + {peak - steady} extra) but maxSize is {max_size:g}.",
                        service.urn,
                    )


gpu_deploy_headroom = stack_rule(
    name="gpu-deploy-headroom",
    description=(
        "A rolling deploy of a GPU/Neuron service starts new tasks before stopping old ones; "
        "the capacity provider's Auto Scaling group must be allowed to launch the extra "
        "instances. Fix: raise the ASG maxSize to cover the deploy peak, or deploy with "
        "maximumPercent 100 (stop one, start one). ECS Managed Instances providers have no "
        "maximum and are not checked."
    ),
    level=EnforcementLevel.ADVISORY,
    types=_HEADROOM_TYPES,
    schema=_HEADROOM_SCHEMA,
    check=_check_headroom,
)

# --- queue workers scaled on their backlog -------------------------------------------------------

_CPU_METRIC = "ECSServiceAverageCPUUtilization"
_SERVICE_RESOURCE_ID = re.compile(r"^service/[^/]+/([^/]+)$")


def _documents(value: Any) -> list[Mapping[str, Any]]:
    """A policy document (JSON string or object) as a list of one mapping, [] if unreadable."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return []
    return [value] if isinstance(value, Mapping) else []


def allows_receive(document: Mapping[str, Any]) -> bool:
    """Whether an IAM policy document allows ``sqs:ReceiveMessage`` through an ``sqs:``
    action (``sqs:*``, ``sqs:Receive*``...; a bare ``*`` is an admin role, not a consumer).

    >>> allows_receive({"Statement": [{"Effect": "Allow", "Action": "sqs:Receive*"}]})
    True
    """
    for statement in as_list(get(document, "Statement")):
        if not isinstance(statement, Mapping):
            continue
        if str(get(statement, "Effect", "")).lower() != "allow":
            continue
        for action in as_list(get(statement, "Action")):
            text = str(action).lower()
            if text.startswith("sqs:") and fnmatchcase("sqs:receivemessage", text):
                return True
    return False


class RolePolicies:
    """IAM policy documents per role: inline (``inlinePolicies`` / aws-native ``policies``),
    role policies, attached customer managed policies (aws) and aws-native managed policies
    naming the role. Built once per rule run, only when a CPU-scaled service asks."""

    def __init__(self, model: Model) -> None:
        self.model = model
        self.docs: dict[str, list[Callable[[], Any]]] = {}
        # Role policies name their role by name (aws ``role``, aws-native ``roleName``); the
        # shared identity index knows aws ``name`` but not aws-native ``roleName``.
        self._by_name: dict[str, list[Resource]] = {}
        for role in model.of(ROLE):
            for key in ("name", "roleName"):
                value = known(role.props, key)
                if isinstance(value, str) and value:
                    self._by_name.setdefault(value, []).append(role)
        for role in model.of(ROLE):
            key = "policies" if is_native(role.resource_type) else "inlinePolicies"
            field = "policyDocument" if is_native(role.resource_type) else "policy"
            try:  # Optional+Computed: unknown on a first preview when the program left it unset
                items = as_list(stored(role.props, key, None, role))
            except UnknownValueError as error:  # [secret], or set from another output: unread
                self._add(role, lambda e=error: _raise(e))
                continue
            for item in items:
                if isinstance(item, Mapping):
                    self._add(role, lambda i=item, f=field: get(i, f))
        for rp in model.of(ROLE_POLICY):
            native = is_native(rp.resource_type)
            for role in self._roles(rp, "roleName" if native else "role"):
                field = "policyDocument" if native else "policy"
                self._add(role, lambda r=rp, f=field: get(r.props, f))
        for attachment in model.of(ROLE_POLICY_ATTACHMENT):
            roles = self._roles(attachment, "role")
            managed = model.refs(attachment, "policyArn", MANAGED_POLICY, silent_external=True)
            for role in roles:
                for policy in managed:
                    self._add(role, lambda p=policy: get(p.props, "policy"))
        for policy in model.of(MANAGED_POLICY):
            if not is_native(policy.resource_type):
                continue
            for role in self._roles(policy, "roles"):
                self._add(role, lambda p=policy: get(p.props, "policyDocument"))

    def _roles(self, resource: Resource, key: str) -> list[Resource]:
        found = self.model.refs(resource, key, ROLE, silent_external=True)
        if found:
            return found
        names = as_list(known(resource.props, key))
        return [r for n in names if isinstance(n, str) for r in self._by_name.get(n, ())]

    def _add(self, role: Resource, read: Callable[[], Any]) -> None:
        self.docs.setdefault(role.urn, []).append(read)

    def consumes(self, role: Resource) -> bool | None:
        """True when a policy of ``role`` allows sqs:ReceiveMessage; None when it does not
        but some document is unknown at preview."""
        unknown = False
        for read in self.docs.get(role.urn, ()):
            try:
                documents = _documents(read())
            except UnknownValueError:
                unknown = True
                continue
            if any(allows_receive(d) for d in documents):
                return True
        return None if unknown else False


def _raise(error: UnknownValueError) -> Any:
    raise error


class ServiceScaling:
    """The scaling policies of each service: policy -> (scalable target ->) service, by
    property dependency, then by the ``service/<cluster>/<name>`` resource id."""

    def __init__(self, model: Model) -> None:
        self.model = model
        self.policies: dict[str, list[Resource]] = {}
        self.unlinked: list[Resource] = []
        names: dict[str, list[Resource]] = {}
        for service in model.of(SERVICE):
            for name in {str(known(service.props, "name") or ""), str(service.name)} - {""}:
                names.setdefault(name, []).append(service)
        self._names = names
        for policy in model.of(SCALING_POLICY):
            services = self._services(policy, ("resourceId", "scalingTargetId"))
            if not services:
                self.unlinked.append(policy)
            for service in services:
                self.policies.setdefault(service.urn, []).append(policy)

    def _services(self, resource: Resource, keys: tuple[str, ...]) -> list[Resource]:
        recorded = resource.property_dependencies or {}
        found: dict[str, Resource] = {}
        for key in keys:
            for dep in recorded.get(key) or ():
                if dep.resource_type in SERVICE:
                    found[dep.urn] = dep
                elif dep.resource_type in SCALABLE_TARGET:
                    for s in self._services(dep, ("resourceId",)):
                        found[s.urn] = s
            value = known(resource.props, key)
            if not isinstance(value, str):
                continue
            match = _SERVICE_RESOURCE_ID.match(value)
            if match:
                for s in self._names.get(match.group(1), ()):
                    found[s.urn] = s
            for target in self.model.lookup(value, SCALABLE_TARGET):
                for s in self._services(target, ("resourceId",)):
                    found[s.urn] = s
        return list(found.values())


def cpu_only(policies: Sequence[Resource]) -> bool:
    """Every policy tracks ECSServiceAverageCPUUtilization (and there is one)."""
    if not policies:
        return False
    for policy in policies:
        if str(get(policy.props, "policyType", "")) != "TargetTrackingScaling":
            return False
        metric = get_path(
            policy.props,
            "targetTrackingScalingPolicyConfiguration",
            "predefinedMetricSpecification",
            "predefinedMetricType",
        )
        if metric != _CPU_METRIC:
            return False
    return True


def _check_queue_scaling(
    args: StackValidationArgs, config: Config, report: Report, unknowns: UnknownCollector
) -> None:
    model = Model.of_stack(args.resources, unknowns)
    if not model.of(SCALING_POLICY):
        return
    scaling = ServiceScaling(model)
    roles: list[RolePolicies] = []

    def judge(service: Resource) -> None:
        policies = scaling.policies.get(service.urn, [])
        # No policy of its own but one that names no service the pack can read: that one may
        # be this service's, on CPU only.
        if not (cpu_only(policies) or (not policies and scaling.unlinked)):
            return
        if not roles:
            roles.append(RolePolicies(model))
        verdict: bool | None = False
        for task in model.task_definitions(service):
            for role in model.refs(task, "taskRoleArn", ROLE, silent_external=True):
                consumes = roles[0].consumes(role)
                if consumes:
                    verdict = True
                    break
                if consumes is None:
                    verdict = None
            if verdict:
                break
        if verdict is None:
            unknowns.note(
                f"cannot verify whether service {service.name!r} (scaled on CPU only) consumes "
                "an SQS queue: its task role's policy is unknown at preview.",
                service.urn,
            )
            return
        if not verdict:
            return
        if scaling.unlinked:
            unknowns.note(
                f"cannot verify how queue consumer {service.name!r} scales: scaling policy "
                f"{scaling.unlinked[0].name!r} names no service of this stack.",
                service.urn,
            )
            return
        report(
            f"service {service.name!r} consumes an SQS queue (task role allows "
            "sqs:ReceiveMessage) but scales only on ECSServiceAverageCPUUtilization.",
            service.urn,
        )

    judge_each(model.of(SERVICE), SERVICE, config, unknowns, judge)


queue_workers_scale_on_backlog = stack_rule(
    name="queue-workers-scale-on-backlog",
    description=(
        "A service whose task role may sqs:ReceiveMessage is a queue worker; when its only "
        "scaling policy tracks ECSServiceAverageCPUUtilization it stays small while the "
        "backlog grows (a worker waiting on a model is not CPU-bound). Fix: scale on backlog "
        "per task (a customized metric of ApproximateNumberOfMessagesVisible divided by the "
        "running task count, or step scaling on the queue depth)."
    ),
    level=EnforcementLevel.ADVISORY,
    types=SERVICE,
    schema=EXEMPT_ONLY,
    check=_check_queue_scaling,
)


POLICIES = [
    health_check_grace_period,
    deployment_circuit_breaker,
    scale_out_faster_than_in,
    gpu_deploy_headroom,
    queue_workers_scale_on_backlog,
]
