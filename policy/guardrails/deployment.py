"""Deployment-safety rules for inference services: grace period, rollback, scaling, headroom.

Model servers are slow to become healthy (image pull + weight load + warm-up can take minutes)
and their capacity is scarce (GPU instances). The rules here catch the settings that turn that
into outages: a health-check grace period too short for the load (ECS kills healthy-but-warming
tasks), no deployment circuit breaker with rollback (a bad image keeps replacing good tasks),
scaling in faster than out (a warm GPU task is expensive to re-warm), and a rolling deploy that
needs more GPU instances than the Auto Scaling group may launch (the deploy never places).
"""

from __future__ import annotations

from collections import defaultdict

from pulumi_policy import (
    EnforcementLevel,
    PolicyResource,
    ResourceValidationArgs,
    StackValidationArgs,
)

from .resources import (
    AUTOSCALING_GROUP,
    CAPACITY_PROVIDER,
    EXEMPT_SCHEMA,
    SCALING_POLICY,
    SERVICE,
    TASK_DEFINITION,
    UnknownCollector,
    accelerator_needs,
    as_bool,
    as_number,
    ceil_div,
    get,
    get_path,
    is_exempt,
    is_native,
    linked,
    of_types,
    service_circuit_breaker,
    service_deploy_settings,
    service_load_balancers,
    strategy_provider_names,
)
from .rules import EXEMPT_ONLY, Config, Report, resource_rule, stack_rule

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


def _strategy_providers(service, providers) -> list:
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
            for cp in _strategy_providers(service, providers):
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

POLICIES = [
    health_check_grace_period,
    deployment_circuit_breaker,
    scale_out_faster_than_in,
    gpu_deploy_headroom,
]
