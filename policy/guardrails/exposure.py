"""Exposure rules: no unauthenticated model endpoint reachable from the internet.

A self-hosted model server (vLLM, TGI, Triton, Ollama, ...) has no authentication of its own,
so "never expose a raw model API to the internet unauthenticated" is enforced at every way a
stack can make one reachable:

* an internet-facing ALB whose listener (default actions) or listener rule forwards before an
  ``authenticate-cognito`` / ``authenticate-oidc`` / ``jwt-validation`` action;
* an internet-facing NLB with a listener on a serving port (an NLB cannot authenticate);
* an ECS service whose tasks get a public IP (every container port is then one security group
  rule away from the internet);
* a security group rule open to ``0.0.0.0/0`` or ``::/0`` on a serving port.

Deliberate exceptions are listed by resource name or URN in ``exemptResources``.
"""

from __future__ import annotations

from pulumi_policy import (
    EnforcementLevel,
    ResourceValidationArgs,
    StackValidationArgs,
)

from .resources import (
    EXEMPT_SCHEMA,
    INGRESS_RULE,
    LISTENER,
    LISTENER_RULE,
    LOAD_BALANCER,
    SECURITY_GROUP,
    SERVICE,
    UnknownCollector,
    as_number,
    forwards_without_auth,
    get,
    is_exempt,
    lb_is_internet_facing,
    lb_type,
    linked,
    listener_actions,
    open_ingress,
    service_assigns_public_ip,
)
from .rules import EXEMPT_ONLY, Config, Report, judge_each, resource_rule, stack_rule

#: Ports model servers and their UIs listen on: HTTP(S) 80/443/8443, vLLM/TGI/FastAPI 8000,
#: Triton 8000-8002, TorchServe/TGI 8080, TF Serving 8500/8501, Jupyter 8888, Flask/MLflow 5000,
#: Gradio 7860, Open WebUI/Node 3000, MinIO/generic 9000, Ollama 11434, gRPC 50051.
DEFAULT_SERVING_PORTS = [
    80,
    443,
    3000,
    5000,
    7860,
    8000,
    8001,
    8002,
    8080,
    8443,
    8500,
    8501,
    8888,
    9000,
    11434,
    50051,
]

SERVING_PORTS_SCHEMA = {
    "type": "array",
    "items": {"type": "integer", "minimum": 0, "maximum": 65535},
    "default": DEFAULT_SERVING_PORTS,
    "description": "Ports that count as model-serving ports.",
}

_PORTS_AND_EXEMPT = {"servingPorts": SERVING_PORTS_SCHEMA, "exemptResources": EXEMPT_SCHEMA}


def _load_balancers_of(resource) -> list:
    """The load balancer(s) a listener or listener rule belongs to."""
    if resource.resource_type in LISTENER_RULE:
        listeners = linked(resource, "listenerArn", LISTENER)
        return [lb for ln in listeners for lb in linked(ln, "loadBalancerArn", LOAD_BALANCER)]
    return linked(resource, "loadBalancerArn", LOAD_BALANCER)


def _check_listener_auth(
    args: StackValidationArgs, config: Config, report: Report, unknowns: UnknownCollector
) -> None:
    def judge(resource) -> None:
        public_albs = [
            lb
            for lb in _load_balancers_of(resource)
            if not is_exempt(config, lb)
            and lb_type(lb.resource_type, lb.props) == "application"
            and lb_is_internet_facing(lb.resource_type, lb.props)
        ]
        if not public_albs:
            return
        if forwards_without_auth(listener_actions(resource.resource_type, resource.props)):
            kind = "listener rule" if resource.resource_type in LISTENER_RULE else "listener"
            report(
                f"{kind} {resource.name!r} on internet-facing ALB {public_albs[0].name!r} "
                "forwards to targets without an authenticate-cognito, authenticate-oidc or "
                "jwt-validation action first.",
                resource.urn,
            )

    judge_each(args.resources, LISTENER | LISTENER_RULE, config, unknowns, judge)


no_unauthenticated_internet_listener = stack_rule(
    name="no-unauthenticated-internet-listener",
    description=(
        "Every listener default action and listener rule of an internet-facing ALB that forwards "
        "to targets must authenticate first (authenticate-cognito for browsers, jwt-validation "
        "or authenticate-oidc for API clients). Fix: add the authenticate action with a lower "
        "order than the forward, make the ALB internal, or list a reviewed exception in "
        "exemptResources."
    ),
    level=EnforcementLevel.MANDATORY,
    schema=EXEMPT_ONLY,
    check=_check_listener_auth,
)


def _check_public_nlb(
    args: StackValidationArgs, config: Config, report: Report, unknowns: UnknownCollector
) -> None:
    ports = {int(p) for p in config["servingPorts"]}

    def judge(listener) -> None:
        for lb in linked(listener, "loadBalancerArn", LOAD_BALANCER):
            if is_exempt(config, lb) or lb_type(lb.resource_type, lb.props) != "network":
                continue
            if not lb_is_internet_facing(lb.resource_type, lb.props):
                continue
            port = as_number(get(listener.props, "port"))
            if port is not None and int(port) in ports:
                report(
                    f"internet-facing NLB {lb.name!r} listens on serving port {int(port)} "
                    f"(listener {listener.name!r}); an NLB cannot authenticate callers.",
                    listener.urn,
                )

    judge_each(args.resources, LISTENER, config, unknowns, judge)


no_internet_facing_nlb = stack_rule(
    name="no-internet-facing-nlb-on-serving-port",
    description=(
        "An internet-facing Network Load Balancer must not listen on a model-serving port: NLBs "
        "pass TCP straight to the model server, which has no authentication. Fix: make the NLB "
        "internal (reach it over VPC peering / PrivateLink), or front the service with an ALB "
        "that authenticates."
    ),
    level=EnforcementLevel.MANDATORY,
    schema=_PORTS_AND_EXEMPT,
    check=_check_public_nlb,
)


def _check_public_ip(args: ResourceValidationArgs, config: Config, report: Report) -> None:
    if service_assigns_public_ip(args.resource_type, args.props):
        report(
            "The service's tasks get a public IP (assignPublicIp); they are reachable from the "
            "internet on every port their security groups allow."
        )


no_public_ip_on_serving_task = resource_rule(
    name="no-public-ip-on-serving-task",
    description=(
        "ECS services must not give their tasks public IPs. Fix: set assignPublicIp to false / "
        "DISABLED, run tasks in private subnets and pull images through a NAT gateway or the "
        "ECR, S3 and CloudWatch Logs VPC endpoints; expose them only through an "
        "authenticating load balancer."
    ),
    level=EnforcementLevel.MANDATORY,
    types=SERVICE,
    schema=EXEMPT_ONLY,
    check=_check_public_ip,
)


def _check_open_ingress(args: ResourceValidationArgs, config: Config, report: Report) -> None:
    ports = sorted({int(p) for p in config["servingPorts"]})
    for cidr, low, high in open_ingress(args.resource_type, args.props):
        hit = [p for p in ports if low <= p <= high]
        if hit:
            shown = ", ".join(map(str, hit[:8])) + (", ..." if len(hit) > 8 else "")
            report(f"Ingress from {cidr} on ports {low}-{high} opens serving port(s) {shown}.")


no_internet_ingress_on_serving_port = resource_rule(
    name="no-internet-ingress-on-serving-port",
    description=(
        "Security groups must not allow ingress from 0.0.0.0/0 or ::/0 on a model-serving port. "
        "Fix: allow only the load balancer's security group or your clients' CIDRs, or list a "
        "reviewed exception in exemptResources."
    ),
    level=EnforcementLevel.MANDATORY,
    types=SECURITY_GROUP | INGRESS_RULE,
    schema=_PORTS_AND_EXEMPT,
    check=_check_open_ingress,
)

POLICIES = [
    no_unauthenticated_internet_listener,
    no_internet_facing_nlb,
    no_public_ip_on_serving_task,
    no_internet_ingress_on_serving_port,
]
