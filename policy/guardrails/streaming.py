"""Load balancer rules for token streaming: idle timeout, deregistration delay, ip targets.

An LLM streams a response over one long HTTP connection. The ALB severs a connection that is
idle for longer than its idle timeout (default 60 s, configurable 1-4000 s), which is the
classic "streaming works in dev, breaks in prod" failure. When a task is replaced, ECS
deregisters it and waits out the target group's deregistration delay before SIGTERM; a delay
shorter than the service's longest request cuts in-flight streams on every deploy and scale-in.
The longest request is what the target group's ``ml:max-request-seconds`` tag states (the owner
knows it: ecs-inference derives each delay from it), else what the ALB's idle timeout was sized
for. Tasks in awsvpc mode are addressed by their ENI, so their target group must use
target type ``ip`` (ECS rejects ``instance`` target groups for awsvpc services).
"""

from __future__ import annotations

from pulumi_policy import (
    EnforcementLevel,
    ResourceValidationArgs,
    StackValidationArgs,
)

from . import aws_limits, tags
from .resources import (
    EXEMPT_SCHEMA,
    LISTENER,
    LISTENER_RULE,
    LOAD_BALANCER,
    SERVICE,
    TARGET_GROUP,
    TASK_DEFINITION,
    UnknownCollector,
    as_number,
    get,
    is_exempt,
    lb_idle_timeout,
    lb_type,
    linked,
    of_types,
    service_uses_awsvpc,
    tags_of,
    tg_deregistration_delay,
    tg_target_type,
)
from .rules import EXEMPT_ONLY, Config, Report, judge_each, resource_rule, stack_rule

#: ELB's upper bound for a target group deregistration delay.
MAX_DEREGISTRATION_DELAY = float(aws_limits.TARGET_GROUP_DEREGISTRATION_DELAY_MAX)
#: Target group tag stating the longest request of the service behind it (seconds).
MAX_REQUEST_TAG = tags.MAX_REQUEST_SECONDS

_IDLE_SCHEMA = {
    "minIdleTimeoutSeconds": {
        "type": "integer",
        "minimum": aws_limits.ALB_IDLE_TIMEOUT_RANGE[0],
        "maximum": aws_limits.ALB_IDLE_TIMEOUT_RANGE[1],
        "default": 300,
        "description": "Smallest acceptable ALB idle timeout in seconds (AWS default is 60).",
    },
    "exemptResources": EXEMPT_SCHEMA,
}


def _check_idle_timeout(args: ResourceValidationArgs, config: Config, report: Report) -> None:
    if lb_type(args.resource_type, args.props) != "application":
        return
    idle = lb_idle_timeout(args.resource_type, args.props)
    minimum = float(config["minIdleTimeoutSeconds"])
    if idle < minimum:
        report(
            f"ALB idle timeout is {idle:g} s (60 s when unset); streamed generations longer "
            f"than that are cut. Expected at least {minimum:g} s."
        )


alb_idle_timeout_for_streaming = resource_rule(
    name="alb-idle-timeout-for-streaming",
    description=(
        "ALBs in front of streaming model servers need an idle timeout longer than the longest "
        "generation (AWS default 60 s). Fix: set idleTimeout (aws) or the "
        "idle_timeout.timeout_seconds attribute (aws-native) to at least minIdleTimeoutSeconds, "
        "and make the server send SSE keep-alives well inside it."
    ),
    level=EnforcementLevel.ADVISORY,
    types=LOAD_BALANCER,
    schema=_IDLE_SCHEMA,
    check=_check_idle_timeout,
)

_DEREG_SCHEMA = {
    "toleranceSeconds": {
        "type": "integer",
        "minimum": 0,
        "default": 60,
        "description": (
            "How far the deregistration delay may fall below the idle timeout: the idle timeout "
            "is usually sized as longest generation + a margin, and only the generation has to "
            "drain."
        ),
    },
    "exemptResources": EXEMPT_SCHEMA,
}


def _albs_by_target_group(resources) -> dict[str, list]:
    """Target group URN -> ALBs whose listeners or rules route to it."""
    routes: dict[str, list] = {}
    for resource in of_types(resources, LISTENER | LISTENER_RULE):
        if resource.resource_type in LISTENER_RULE:
            key = "actions"
            listeners = linked(resource, "listenerArn", LISTENER)
        else:
            key = "defaultActions"
            listeners = [resource]
        albs = [
            lb
            for ln in listeners
            for lb in linked(ln, "loadBalancerArn", LOAD_BALANCER)
            if lb_type(lb.resource_type, lb.props) == "application"
        ]
        for tg in linked(resource, key, TARGET_GROUP):
            routes.setdefault(tg.urn, []).extend(albs)
    return routes


def _stated_longest_request(tg) -> float | None:
    """The target group's ``ml:max-request-seconds`` tag as seconds; None when absent or not a
    non-negative number (the rule then falls back to the ALB idle timeout)."""
    value = as_number(tags_of(tg.props).get(MAX_REQUEST_TAG))
    return value if value is not None and value >= 0 else None


def _check_deregistration(
    args: StackValidationArgs, config: Config, report: Report, unknowns: UnknownCollector
) -> None:
    tolerance = float(config["toleranceSeconds"])
    routes: dict[str, list] = {}
    with unknowns.guard():
        routes = _albs_by_target_group(args.resources)

    def judge(tg) -> None:
        albs = routes.get(tg.urn, [])
        if not albs:
            return
        delay = tg_deregistration_delay(tg.resource_type, tg.props)
        stated = _stated_longest_request(tg)
        if stated is not None:
            # The owner states what the delay must cover: the service's own longest request.
            if delay < stated:
                report(
                    f"target group {tg.name!r} drains for {delay:g} s but its tag "
                    f"{MAX_REQUEST_TAG}={stated:g} says requests last up to {stated:g} s; "
                    f"deploys and scale-in cut streams longer than {delay:g} s (expected at "
                    f"least {stated:g} s).",
                    tg.urn,
                )
            return
        alb = max(albs, key=lambda lb: lb_idle_timeout(lb.resource_type, lb.props))
        idle = lb_idle_timeout(alb.resource_type, alb.props)
        needed = min(idle, MAX_DEREGISTRATION_DELAY) - tolerance
        if delay < needed:
            report(
                f"target group {tg.name!r} drains for {delay:g} s but ALB {alb.name!r} keeps "
                f"streams open for up to {idle:g} s idle; deploys and scale-in cut streams "
                f"longer than {delay:g} s (expected at least {needed:g} s, or tag the group "
                f"{MAX_REQUEST_TAG}=<the service's longest request in seconds>).",
                tg.urn,
            )

    judge_each(args.resources, TARGET_GROUP, config, unknowns, judge)


deregistration_delay_vs_idle_timeout = stack_rule(
    name="deregistration-delay-covers-streams",
    description=(
        "A target group behind an ALB should drain at least as long as its longest request: "
        "the value of its ml:max-request-seconds tag when the owner states it, otherwise as "
        "long as the ALB keeps streams open (its idle timeout, capped at ELB's 3600 s maximum, "
        "minus toleranceSeconds). Fix: raise deregistrationDelay (aws) or "
        "deregistration_delay.timeout_seconds (aws-native) to cover the longest request, or, "
        "when the service's requests are known to be shorter than the ALB's idle timeout, tag "
        "the group ml:max-request-seconds with that length. A long delay is not free: ELB ends "
        "deregistration early only when a target has no in-flight requests and no open "
        "connections, and the ALB keeps idle keep-alive connections, so deploys and scale-in "
        "usually wait it out in full."
    ),
    level=EnforcementLevel.ADVISORY,
    types=TARGET_GROUP,
    schema=_DEREG_SCHEMA,
    check=_check_deregistration,
)


def _uses_awsvpc(service) -> bool:
    if service_uses_awsvpc(service.resource_type, service.props):
        return True
    return any(
        str(get(task.props, "networkMode", "")).lower() == "awsvpc"
        for task in linked(service, "taskDefinition", TASK_DEFINITION)
    )


def _check_target_type(
    args: StackValidationArgs, config: Config, report: Report, unknowns: UnknownCollector
) -> None:
    def judge(service) -> None:
        groups = linked(service, "loadBalancers", TARGET_GROUP)
        if not groups or not _uses_awsvpc(service):
            return
        for tg in groups:
            target_type = tg_target_type(tg.props)
            if target_type != "ip" and not is_exempt(config, tg, SERVICE | TARGET_GROUP):
                report(
                    f"awsvpc service {service.name!r} registers in target group {tg.name!r} "
                    f"of target type {target_type!r}; awsvpc tasks are addressed by ENI IP.",
                    tg.urn,
                )

    judge_each(args.resources, SERVICE, config, unknowns, judge)


target_type_ip_for_awsvpc = stack_rule(
    name="target-type-ip-for-awsvpc",
    description=(
        "Target groups of awsvpc ECS services (every Fargate service) must use target type ip. "
        "Fix: set targetType to ip on the target group."
    ),
    level=EnforcementLevel.ADVISORY,
    types=SERVICE | TARGET_GROUP,
    schema=EXEMPT_ONLY,
    check=_check_target_type,
)

POLICIES = [
    alb_idle_timeout_for_streaming,
    deregistration_delay_vs_idle_timeout,
    target_type_ip_for_awsvpc,
]
