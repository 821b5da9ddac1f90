"""Advisories for ECS native rollouts (``deploymentConfiguration.strategy`` BLUE_GREEN, CANARY,
LINEAR).

* ``gpu-rollout-capacity``: a native strategy brings up the whole green revision beside blue
  (ECS developer guide, "Required resources for Amazon ECS canary deployments" and its linear
  and blue/green pages: plan cluster capacity for both service revisions during a deployment;
  green is scaled to the full desired count before production traffic moves), so a GPU service
  needs ``2 x desiredCount x GPUs per task`` GPUs at the peak of a rollout. The capacity
  provider's Auto Scaling group can never give more than ``maxSize x GPUs per instance`` (the
  largest GPU count of the types it may launch); a group of ``2 x desiredCount`` instances
  fits whatever it launches (a task that places at all needs at most one instance). A ROLLING
  service is ``gpu-deploy-headroom``'s (its maximumPercent peak), never judged here.
* ``rollout-test-rule-authenticates``: during a native rollout ECS routes the test listener
  rule to the green revision; that rule must authenticate like the production rule (the same
  authenticate action type, for jwt-validation the same issuer and JWKS endpoint, for
  authenticate-cognito the same user pool, for authenticate-oidc the same issuer), before it
  forwards and without letting anonymous requests through; otherwise the untested revision is
  reachable with less than production's authentication.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pulumi_policy import EnforcementLevel, StackValidationArgs
from pulumi_policy.proxy import UnknownValueError

from .deployment import strategy_providers
from .reachability import Model
from .reachability.elb import authenticates, ordered_actions
from .reachability.serving import instance_type
from .resources import (
    AUTOSCALING_GROUP,
    CAPACITY_PROVIDER,
    LAUNCH_TEMPLATE,
    LISTENER_RULE,
    SERVICE,
    TARGET_GROUP,
    UnknownCollector,
    as_list,
    as_number,
    container_definitions,
    get,
    get_path,
    is_native,
    known,
    of_types,
    present,
    service_deploy_settings,
    service_load_balancers,
    stored_path,
)
from .rules import EXEMPT_ONLY, Config, Report, judge_each, stack_rule
from .values import UndecidableValueError

Resource = Any

#: The strategies ECS runs itself with an alternate target group (not ROLLING).
NATIVE_STRATEGIES = frozenset({"BLUE_GREEN", "CANARY", "LINEAR"})

#: NVIDIA GPUs per EC2 instance type; the pack's own copy of the program's catalog
#: (``ecs_inference.sizing.catalog``, source: the EC2 accelerated computing instance pages);
#: ``tests/policy/test_rollouts.py`` fails when the two disagree.
GPUS_PER_INSTANCE_TYPE: dict[str, int] = {
    **{
        f"{family}.{size}": 1
        for family in ("g5", "g6", "g6e")
        for size in ("xlarge", "2xlarge", "4xlarge", "8xlarge", "16xlarge")
    },
    **{
        f"{family}.{size}": 4 for family in ("g5", "g6", "g6e") for size in ("12xlarge", "24xlarge")
    },
    **{f"{family}.48xlarge": 8 for family in ("g5", "g6", "g6e")},
    "p4d.24xlarge": 8,
    "p4de.24xlarge": 8,
    "p5.4xlarge": 1,
    "p5.48xlarge": 8,
    "p5e.48xlarge": 8,
}


def rollout_strategy(service: Resource) -> str:
    """``deploymentConfiguration.strategy`` (the same path in both providers), ROLLING when
    unset (an Optional+Computed block: unknown on a first preview when the program left it
    unset)."""
    strategy = stored_path(
        service.props, "deploymentConfiguration", "strategy", default="ROLLING", resource=service
    )
    return str(strategy).upper()


# --- GPUs for the green fleet ----------------------------------------------------------------


def gpus_per_task(task: Resource) -> int:
    """GPUs one task reserves: the sum of its containers' ``resourceRequirements`` GPU."""
    total = 0.0
    for container in container_definitions(task.props):
        for req in as_list(get(container, "resourceRequirements")):
            if str(get(req, "type", "")).upper() == "GPU":
                total += as_number(get(req, "value")) or 0.0
    return int(total)


def _asg_instance_types(model: Model, asg: Resource) -> list[Any]:
    """Instance types an Auto Scaling group may launch: its mixed-instances overrides, else
    the instance type of the launch templates it launches from."""
    overrides = as_list(get_path(asg.props, "mixedInstancesPolicy", "launchTemplate", "overrides"))
    types = [get(o, "instanceType") for o in overrides if get(o, "instanceType") is not None]
    if types:
        return types
    for key in ("launchTemplate", "mixedInstancesPolicy"):
        for template in model.refs(asg, key, LAUNCH_TEMPLATE, silent_external=True):
            found = instance_type(template)
            if found is not None:
                types.append(found)
    return types


def _check_capacity(
    args: StackValidationArgs, config: Config, report: Report, unknowns: UnknownCollector
) -> None:
    model = Model.of_stack(args.resources, unknowns)
    providers = of_types(args.resources, CAPACITY_PROVIDER)

    def judge(service: Resource) -> None:
        strategy = rollout_strategy(service)
        if strategy not in NATIVE_STRATEGIES:
            return
        per_task = max((gpus_per_task(t) for t in model.task_definitions(service)), default=0)
        if per_task == 0:
            return
        desired, _ = service_deploy_settings(service.resource_type, service.props)
        needed = int(2 * desired * per_task)
        for cp in strategy_providers(service, providers):
            if get(cp.props, "managedInstancesProvider") is not None:
                continue  # ECS Managed Instances: no group maximum
            for asg in model.refs(cp, "autoScalingGroupProvider", AUTOSCALING_GROUP):
                max_size = as_number(get(asg.props, "maxSize"))
                # An instance that can place the task at all holds at least one: a group of
                # 2 x desiredCount instances fits whatever types it launches.
                if max_size is not None and max_size >= 2 * desired:
                    continue
                _judge_group(service, strategy, desired, per_task, needed, asg, model, report)

    judge_each(model.of(SERVICE), SERVICE, config, unknowns, judge)


def _judge_group(
    service: Resource,
    strategy: str,
    desired: float,
    per_task: int,
    needed: int,
    asg: Resource,
    model: Model,
    report: Report,
) -> None:
    max_size = as_number(get(asg.props, "maxSize"))
    try:
        types = [str(t) for t in _asg_instance_types(model, asg)]
        unknown = [t for t in types if t not in GPUS_PER_INSTANCE_TYPE]
        why = f"launches {unknown[0]!r}, not a GPU type the pack knows" if unknown else ""
    except UndecidableValueError:
        raise  # [secret]: "can't run policy" names the property
    except UnknownValueError:  # set from another resource's output on a first preview
        types, why = [], "launches instance types unknown at preview"
    if max_size is None or not types or why:
        model.notes.note(
            f"cannot verify the {strategy} rollout capacity of {service.name!r}: ASG "
            f"{asg.name!r} {why or 'sets no maxSize or instance type'}.",
            service.urn,
        )
        return
    per_instance = max(GPUS_PER_INSTANCE_TYPE[t] for t in types)
    available = int(max_size) * per_instance
    if needed > available:
        report(
            f"{strategy} rollout of {service.name!r} runs the green revision beside blue: "
            f"2 x {desired:g} task(s) x {per_task} GPU(s) = {needed} GPUs, but ASG {asg.name!r} "
            f"can give at most {max_size:g} x {per_instance} = {available} GPUs.",
            service.urn,
        )


gpu_rollout_capacity = stack_rule(
    name="gpu-rollout-capacity",
    description=(
        "A GPU service deployed with BLUE_GREEN, CANARY or LINEAR runs the full new revision "
        "beside the old one, so it needs 2 x desiredCount x GPUs per task; the capacity "
        "provider's Auto Scaling group can give at most maxSize x GPUs per instance. Fix: "
        "raise the group's maxSize (or use a larger instance type), or deploy ROLLING. "
        "ROLLING services are judged by gpu-deploy-headroom."
    ),
    level=EnforcementLevel.ADVISORY,
    types=SERVICE,
    schema=EXEMPT_ONLY,
    check=_check_capacity,
)


# --- the test listener rule authenticates like production ------------------------------------

_AUTH_KEYS: dict[str, tuple[str, tuple[str, ...]]] = {
    # action type -> (aws block name, the fields that name the identity provider)
    "jwt-validation": ("jwtValidation", ("issuer", "jwksEndpoint")),
    "authenticate-cognito": ("authenticateCognito", ("userPoolArn",)),
    "authenticate-oidc": ("authenticateOidc", ("issuer",)),
}


def auth_signatures(rule: Resource) -> set[tuple[Any, ...]]:
    """(action type, identity provider fields...) of each authenticate action that runs before
    the rule forwards and refuses anonymous requests."""
    native = is_native(rule.resource_type)
    found: set[tuple[Any, ...]] = set()
    for action in ordered_actions(as_list(get(rule.props, "actions"))):
        kind = str(get(action, "type", "")).lower()
        if kind == "forward":
            break
        if kind not in _AUTH_KEYS or authenticates(action, kind, native) is None:
            continue
        block, fields = _AUTH_KEYS[kind]
        config = get(action, block + ("Config" if native else ""))
        found.add((kind, *(_provider_field(rule, config or {}, f) for f in fields)))
    return found


def _provider_field(rule: Resource, config: Mapping[str, Any], field: str) -> str:
    """An identity provider field; unknown at preview (an output of, say, the user pool), the
    resources the rule's actions take values from stand for it (target groups aside)."""
    try:
        return str(get(config, field, ""))
    except UndecidableValueError:
        raise
    except UnknownValueError:
        deps = (rule.property_dependencies or {}).get("actions") or ()
        sources = sorted(d.urn for d in deps if d.resource_type not in TARGET_GROUP)
        if not sources:
            raise
        return "output of " + ", ".join(sources)


def _rule(model: Model, service: Resource, lb: Mapping[str, Any], key: str) -> list[Resource]:
    value = known(get(lb, "advancedConfiguration"), key)  # unknown at preview: by dependency
    if not isinstance(value, str) or not value:
        return []
    return model.lookup(value, LISTENER_RULE)


def _judge_pair(model: Model, service: Resource, lb: Mapping[str, Any], report: Report) -> None:
    advanced = get(lb, "advancedConfiguration")
    if advanced is None:
        return
    if not present(advanced, "testListenerRule"):
        report(
            f"service {service.name!r} rolls out {rollout_strategy(service)} without a "
            "testListenerRule: the new revision cannot be tested through an authenticated rule "
            "before it takes production traffic.",
            service.urn,
        )
        return
    production, test = (
        _rule(model, service, lb, "productionListenerRule"),
        _rule(model, service, lb, "testListenerRule"),
    )
    if not production or not test:
        _by_dependency(model, service, report)
        return
    missing = auth_signatures(production[0]) - auth_signatures(test[0])
    if missing:
        kinds = ", ".join(sorted(" ".join(m) for m in missing))
        report(
            f"test listener rule {test[0].name!r} of service {service.name!r} does not "
            f"authenticate like production rule {production[0].name!r} (missing before its "
            f"forward: {kinds}).",
            service.urn,
        )


def _by_dependency(model: Model, service: Resource, report: Report) -> None:
    """ARNs unknown at preview: the engine records both rules under ``loadBalancers`` without
    saying which is which. Rules that all authenticate alike pass whichever is the test rule."""
    deps = (service.property_dependencies or {}).get("loadBalancers") or ()
    rules = [d for d in deps if d.resource_type in LISTENER_RULE]
    signatures = {frozenset(auth_signatures(r)) for r in rules}
    if len(rules) >= 2 and len(signatures) == 1 and next(iter(signatures)):
        return
    model.notes.note(
        f"cannot verify that the test listener rule of {service.name!r} authenticates like "
        "production: its listener rule ARNs name no rule of this stack.",
        service.urn,
    )


def _check_test_rule(
    args: StackValidationArgs, config: Config, report: Report, unknowns: UnknownCollector
) -> None:
    model = Model.of_stack(args.resources, unknowns)

    def judge(service: Resource) -> None:
        if rollout_strategy(service) not in NATIVE_STRATEGIES:
            return
        for lb in service_load_balancers(service.props):
            _judge_pair(model, service, lb, report)

    judge_each(model.of(SERVICE), SERVICE, config, unknowns, judge)


rollout_test_rule_authenticates = stack_rule(
    name="rollout-test-rule-authenticates",
    description=(
        "During a BLUE_GREEN, CANARY or LINEAR rollout ECS sends the test listener rule's "
        "traffic to the new revision; that rule must authenticate like the production rule "
        "(the same authenticate action, for jwt-validation the same issuer and JWKS endpoint, "
        "for authenticate-cognito the same user pool) before it forwards. Fix: set "
        "loadBalancers[].advancedConfiguration.testListenerRule to a rule with production's "
        "authenticate action."
    ),
    level=EnforcementLevel.ADVISORY,
    types=SERVICE,
    schema=EXEMPT_ONLY,
    check=_check_test_rule,
)

POLICIES = [gpu_rollout_capacity, rollout_test_rule_authenticates]
