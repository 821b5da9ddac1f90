"""Exposure rules: nothing the internet can reach without authenticating.

A self-hosted model server (vLLM, TGI, Triton, Ollama, ...) has no authentication of its own,
so "never expose a raw model API to the internet unauthenticated" is judged on *reachability*
(``reachability.Model``): from every internet entry point, along the routes the stack
declares, to what serves. Three rules read the one model:

* ``no-unauthenticated-internet-path``: a route from an entry point (internet-facing ALB / NLB
  / GWLB listener or rule, classic ELB, API Gateway route or method, CloudFront distribution,
  public App Runner or ECS Express service, Lambda function URL) to something that serves, on
  which nothing authenticates;
* ``no-internet-ingress-to-unauthenticated-target``: a security group whose ingress admits the
  internet (any port, CIDRs and stack prefix lists added up) attached to what serves
  unauthenticated traffic: tasks, instances, a load balancer on an unauthenticated route;
* ``no-reachable-public-ip``: a task, instance, launch template or Auto Scaling group that gets
  a public IP behind a security group that admits the internet.

``scope`` (``model-serving`` by default) narrows the three rules to routes that reach a model:
accelerators, known serving images or model ports, resources tagged ``ml:serving=true``, or a
target the pack cannot see; every other finding becomes an advisory note. ``all`` makes every
finding mandatory.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pulumi_policy import EnforcementLevel, StackValidationArgs

from .reachability import (
    Leg,
    Model,
    asg_security_groups,
    attachments,
    describe_ports,
    entry_legs,
    external_groups,
    internet_ports,
    model_serving,
    public_ip,
    security_groups_of,
    servers_unknown,
    service_connect_servers,
    task_serves_model,
    unauthenticated_lbs,
)
from .resources import (
    APP_RUNNER,
    AUTOSCALING_GROUP,
    BEANSTALK_ENVIRONMENT,
    CLASSIC_ELB,
    DEFAULT_SECURITY_GROUP,
    DISTRIBUTION,
    EXEMPT_SCHEMA,
    EXPRESS_SERVICE,
    FUNCTION_URL,
    GA_ACCELERATOR,
    GA_CUSTOM_ENDPOINT_GROUP,
    GA_ENDPOINT_GROUP,
    GA_LISTENER,
    HTTP_API,
    HTTP_INTEGRATION,
    HTTP_ROUTE,
    INGRESS_RULE,
    INSTANCE,
    LAUNCH_CONFIGURATION,
    LAUNCH_TEMPLATE,
    LIGHTSAIL_CONTAINERS,
    LIGHTSAIL_INSTANCE,
    LIGHTSAIL_PUBLIC_PORTS,
    LISTENER,
    LISTENER_RULE,
    LOAD_BALANCER,
    NETWORK_INTERFACE,
    REST_INTEGRATION,
    REST_METHOD,
    SECURITY_GROUP,
    SERVICE,
    TARGET_GROUP,
    TASK_SET,
    VPC_ORIGIN,
    UnknownCollector,
    as_bool,
    is_exempt,
    stored,
)
from .rules import Config, Report, stack_rule

#: Ports model servers and their UIs listen on: vLLM/TGI/Triton 8000-8002, TorchServe/TGI
#: 8080, TF Serving 8500/8501, Gradio 7860, Ollama 11434, SGLang 30000, Ray dashboard 8265,
#: MLflow/Flask 5000, Jupyter 8888, gRPC 50051.
DEFAULT_MODEL_PORTS = [
    5000,
    7860,
    8000,
    8001,
    8002,
    8080,
    8265,
    8500,
    8501,
    8888,
    11434,
    30000,
    50051,
]

SCOPE_SCHEMA: dict[str, Any] = {
    "type": "string",
    "enum": ["all", "model-serving"],
    "default": "model-serving",
    "description": (
        "all: every unauthenticated internet route is a violation. model-serving: only routes "
        "that reach an accelerator task or instance, a known model-serving image, a model "
        "port, or a resource tagged ml:serving=true; other findings become advisory notes."
    ),
}
MODEL_PORTS_SCHEMA: dict[str, Any] = {
    "type": "array",
    "items": {"type": "integer", "minimum": 0, "maximum": 65535},
    "default": DEFAULT_MODEL_PORTS,
    "description": (
        "Ports that mark a model server: they select routes under scope model-serving and "
        "name the finding a model port; any open port counts as exposure."
    ),
}
_SCHEMA = {
    "scope": SCOPE_SCHEMA,
    "modelPorts": MODEL_PORTS_SCHEMA,
    "exemptResources": EXEMPT_SCHEMA,
}

PATH_TYPES = (
    LOAD_BALANCER
    | LISTENER
    | LISTENER_RULE
    | TARGET_GROUP
    | CLASSIC_ELB
    | HTTP_API
    | HTTP_ROUTE
    | HTTP_INTEGRATION
    | REST_METHOD
    | REST_INTEGRATION
    | DISTRIBUTION
    | VPC_ORIGIN
    | APP_RUNNER
    | EXPRESS_SERVICE
    | FUNCTION_URL
    | GA_ACCELERATOR
    | BEANSTALK_ENVIRONMENT
    | LIGHTSAIL_CONTAINERS
    | LIGHTSAIL_INSTANCE
    | LIGHTSAIL_PUBLIC_PORTS
    | GA_LISTENER
    | GA_ENDPOINT_GROUP
    | GA_CUSTOM_ENDPOINT_GROUP
    | SERVICE
    | TASK_SET
)
SG_TYPES = SECURITY_GROUP | DEFAULT_SECURITY_GROUP | INGRESS_RULE
COMPUTE_TYPES = (
    SERVICE | TASK_SET | INSTANCE | LAUNCH_TEMPLATE | LAUNCH_CONFIGURATION | AUTOSCALING_GROUP
)


def _label(resource: Any) -> str:
    return f"{str(resource.resource_type).rsplit(':', 1)[-1]} {resource.name!r}"


def _exempt(config: Config, resources: Iterable[Any], own: frozenset[str]) -> bool:
    return any(is_exempt(config, r, own) for r in resources)


def _in_scope(config: Config, serving: bool) -> bool:
    return config["scope"] == "all" or serving


# --- unauthenticated routes ------------------------------------------------------------------


def _check_paths(
    args: StackValidationArgs, config: Config, report: Report, unknowns: UnknownCollector
) -> None:
    model = Model.of_stack(args.resources, unknowns)
    ports = {int(p) for p in config["modelPorts"]}
    by_front: dict[str, list[tuple[Any, Leg]]] = {}
    for entry, leg in entry_legs(model):
        if leg.auth is None:
            by_front.setdefault(leg.front.urn, []).append((entry, leg))
    for legs in by_front.values():
        with unknowns.guard():
            kept = [
                (entry, leg)
                for entry, leg in legs
                if not _exempt(config, (entry, *leg.hops, *leg.via, *leg.ends), PATH_TYPES)
            ]
            if not kept:
                continue
            front = kept[0][1].front
            serving = config["scope"] == "all" or any(
                model_serving(model, leg, ports) for _, leg in kept
            )
            routes = "; ".join(list(dict.fromkeys(" -> ".join(leg.chain) for _, leg in kept))[:5])
            ends = [e for _, leg in kept for e in leg.ends]
            served = (
                ", ".join(dict.fromkeys(_label(e) for e in ends)) or "targets outside the stack"
            )
            message = (
                f"{_label(front)} lets the internet reach {served} without authentication "
                f"({routes})."
            )
            if _in_scope(config, serving):
                report(message, front.urn)
            else:
                unknowns.note(f"outside scope model-serving: {message}", front.urn)


no_unauthenticated_internet_path = stack_rule(
    name="no-unauthenticated-internet-path",
    description=(
        "Every route from the internet (internet-facing ALB/NLB/GWLB listener or rule, classic "
        "ELB, API Gateway route or method, CloudFront distribution, Global Accelerator, public "
        "App Runner, ECS Express, Elastic Beanstalk or Lightsail service, Lambda function URL) "
        "to something that serves must authenticate "
        "first: an authenticate-cognito / authenticate-oidc action that denies or "
        "authenticates unauthenticated requests, jwt-validation, mutual TLS verify, an API "
        "Gateway authorizer, or signed requests / a viewer-request function on CloudFront. "
        "Fix: add the authentication at the front, make the load balancer internal, or list "
        "a reviewed exception in exemptResources."
    ),
    level=EnforcementLevel.MANDATORY,
    types=PATH_TYPES,
    schema=_SCHEMA,
    check=_check_paths,
)


# --- security groups by attachment -------------------------------------------------------------


def _check_security_groups(
    args: StackValidationArgs, config: Config, report: Report, unknowns: UnknownCollector
) -> None:
    model = Model.of_stack(args.resources, unknowns)
    ports = {int(p) for p in config["modelPorts"]}
    groups: list[tuple[str, str, Any]] = [
        (sg.urn, repr(sg.name), sg) for sg in model.of(SECURITY_GROUP | DEFAULT_SECURITY_GROUP)
    ]
    with unknowns.guard():
        groups += [
            (key, f"{key.split(':', 1)[1]!r} (outside this stack)", None)
            for key in external_groups(model)
        ]
    for key, name, sg in groups:
        with unknowns.guard():
            _judge_group(model, config, report, unknowns, ports, key, name, sg)


def _judge_group(
    model: Model,
    config: Config,
    report: Report,
    unknowns: UnknownCollector,
    ports: set[int],
    key: str,
    name: str,
    sg: Any,
) -> None:
    """Judge one security group (``sg`` None: a group outside the stack, known by its id, that
    the stack's rules open and the stack's resources use)."""
    ranges, holders = internet_ports(model, key)
    if not ranges:
        return
    shown = describe_ports(ranges)
    attached = attachments(model, key)
    anchor = sg if sg is not None else holders[0]
    if _exempt(
        config, (*([sg] if sg is not None else []), *holders, *(r for _, r in attached)), SG_TYPES
    ):
        return
    if not attached:
        unknowns.note(
            f"cannot verify: security group {name} admits the internet on port(s) "
            f"{shown} but is attached to nothing in this stack.",
            anchor.urn,
        )
        return
    exposed, serving_tasks = _exposed_attachments(model, attached, unknowns, name, anchor)
    if not exposed:
        return
    model_ports = sorted(p for p in ports if any(lo <= p <= hi for lo, hi in ranges))
    serving = config["scope"] == "all" or bool(model_ports)
    behind = _service_connect_behind(model, serving_tasks)
    serving = serving or any(
        task_serves_model(td, ports)
        for task in (*serving_tasks, *behind)
        for td in model.task_definitions(task)
    )
    serving = serving or _servers_unknown(model, serving_tasks)
    # A load balancer is in scope when one of its unauthenticated routes is.
    lbs = {r.urn for kind, r in attached if kind == "lb"}
    serving = serving or any(
        model_serving(model, leg, ports)
        for _, leg in entry_legs(model)
        if leg.auth is None and any(v.urn in lbs for v in leg.via)
    )
    kind = f" including model port(s) {', '.join(map(str, model_ports[:6]))}" if model_ports else ""
    message = (
        f"security group {name} admits the internet on port(s) {shown}{kind} and is "
        f"attached to {', '.join(exposed)}, which serve(s) it without authentication"
        f"{_service_connect_words(model, serving_tasks)}."
    )
    for holder in holders:
        if _in_scope(config, serving):
            report(message, holder.urn)
        else:
            unknowns.note(f"outside scope model-serving: {message}", holder.urn)


def _exposed_attachments(
    model: Model,
    attached: list[tuple[str, Any]],
    unknowns: UnknownCollector,
    name: str,
    anchor: Any,
) -> tuple[list[str], list[Any]]:
    """(labels of the attachments that serve the internet, the ECS services / task sets among
    them, whose task definitions decide scope model-serving)."""
    exposed: list[str] = []
    tasks: list[Any] = []
    for kind, resource in attached:
        if kind in {"task", "instance"}:
            exposed.append(_label(resource))
            if resource.resource_type in SERVICE | TASK_SET:
                tasks.append(resource)
        elif kind == "lb":
            if resource.resource_type in CLASSIC_ELB:
                if not as_bool(stored(resource.props, "internal", False, resource)):
                    exposed.append(_label(resource))
            elif resource.urn in unauthenticated_lbs(model):
                exposed.append(_label(resource))
        elif kind == "other":
            unknowns.note(
                f"cannot verify: security group {name} admits the internet and is attached "
                f"to {resource.resource_type} {resource.name!r}, which this pack does not judge.",
                anchor.urn,
            )
    return exposed, tasks


no_internet_ingress_to_unauthenticated_target = stack_rule(
    name="no-internet-ingress-to-unauthenticated-target",
    description=(
        "A security group whose ingress admits the internet (0.0.0.0/0, ::/0, or CIDRs and "
        "prefix-list entries that add up to it; any port) must not be attached to something "
        "that serves unauthenticated traffic: ECS tasks, EC2 instances / launch templates, an "
        "NLB or classic ELB, an ALB with an unauthenticated route. An ALB whose every route "
        "authenticates may be open; interface VPC endpoint groups are not exposure. Fix: admit "
        "only the load balancer's security group or your clients' CIDRs."
    ),
    level=EnforcementLevel.MANDATORY,
    types=SG_TYPES,
    schema=_SCHEMA,
    check=_check_security_groups,
)


# --- public IPs -------------------------------------------------------------------------------


def _check_public_ips(
    args: StackValidationArgs, config: Config, report: Report, unknowns: UnknownCollector
) -> None:
    model = Model.of_stack(args.resources, unknowns)
    ports = {int(p) for p in config["modelPorts"]}
    defaults = model.of(DEFAULT_SECURITY_GROUP)
    for resource in model.of(COMPUTE_TYPES | NETWORK_INTERFACE):
        with unknowns.guard():
            why = public_ip(model, resource)
            if why is None:
                continue
            if resource.resource_type in AUTOSCALING_GROUP:
                sgs = asg_security_groups(model, resource)
            else:
                sgs = security_groups_of(model, resource)
            if sgs is None:
                if not defaults:
                    unknowns.note(
                        f"cannot verify: {_label(resource)} gets a public IP ({why}) and uses "
                        "its VPC's default security group, which is not declared in this stack.",
                        resource.urn,
                    )
                    continue
                sgs = defaults
            open_groups = [(sg, internet_ports(model, sg.urn)[0]) for sg in sgs]
            open_groups = [(sg, r) for sg, r in open_groups if r]
            if not open_groups:
                continue
            if _exempt(config, (resource, *(sg for sg, _ in open_groups)), COMPUTE_TYPES):
                continue
            serving = config["scope"] == "all" or any(
                lo <= p <= hi for _, r in open_groups for lo, hi in r for p in ports
            )
            tasks = [resource] if resource.resource_type in SERVICE | TASK_SET else []
            serving = serving or any(
                task_serves_model(td, ports)
                for task in (*tasks, *_service_connect_behind(model, tasks))
                for td in model.task_definitions(task)
            )
            serving = serving or _servers_unknown(model, tasks)
            detail = "; ".join(f"{sg.name!r} on {describe_ports(r)}" for sg, r in open_groups)
            message = (
                f"{_label(resource)} gets a public IP ({why}) and its security group(s) admit "
                f"the internet ({detail}): it is reachable without authentication"
                f"{_service_connect_words(model, tasks)}."
            )
            if _in_scope(config, serving):
                report(message, resource.urn)
            else:
                unknowns.note(f"outside scope model-serving: {message}", resource.urn)


def _service_connect_behind(model: Model, tasks: Iterable[Any]) -> list[Any]:
    """The Service Connect servers the given ECS services reach (see ``Model``)."""
    found: dict[str, Any] = {}
    for task in tasks:
        if task.resource_type in SERVICE:
            for server, _ in service_connect_servers(model, task):
                found.setdefault(server.urn, server)
    return list(found.values())


def _servers_unknown(model: Model, tasks: Iterable[Any]) -> bool:
    """Some ECS service among ``tasks`` reaches Service Connect servers the pack cannot list."""
    return any(t.resource_type in SERVICE and servers_unknown(model, t) for t in tasks)


def _service_connect_words(model: Model, tasks: Iterable[Any]) -> str:
    """``, and through Service Connect ...`` naming client and servers (empty when none)."""
    parts = [
        f"{_label(task)} -> {alias} ({_label(server)})"
        for task in tasks
        if task.resource_type in SERVICE
        for server, alias in service_connect_servers(model, task)
    ]
    if not parts:
        return ""
    return ", and through Service Connect so are the servers it calls: " + "; ".join(parts[:5])


no_reachable_public_ip = stack_rule(
    name="no-reachable-public-ip",
    description=(
        "ECS tasks, EC2 instances, launch templates and Auto Scaling groups must not get a "
        "public IP (assignPublicIp, associatePublicIpAddress, an elastic IP, a subnet that maps "
        "public IPs, the default VPC) behind a security group that admits the internet. Fix: "
        "run them in private subnets (pull through NAT or VPC endpoints) and expose them only "
        "through an authenticating load balancer."
    ),
    level=EnforcementLevel.MANDATORY,
    types=COMPUTE_TYPES,
    schema=_SCHEMA,
    check=_check_public_ips,
)

POLICIES = [
    no_unauthenticated_internet_path,
    no_internet_ingress_to_unauthenticated_target,
    no_reachable_public_ip,
]
