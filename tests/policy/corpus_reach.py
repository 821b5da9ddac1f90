"""Corpus stacks for the front doors and route conditions the reachability model gained, in both
providers' shapes (custom routing accelerators exist in pulumi-aws only).

* Global Accelerator: an accelerator whose endpoint group points at an *internal* ALB without
  authentication (bad: reported on the accelerator's listener), or one that validates JWTs
  (good); at an internal NLB; at an EC2 instance; at an Elastic IP on an instance; a listener
  whose ports miss the ALB's listener (good); port overrides onto it (bad); a disabled
  accelerator (good); custom routing to a subnet holding a GPU instance (bad), disabled (good);
* load balancers that leave their scheme, action orders and listener port unset (bad without
  authentication, good with it): a first preview shows them unknown;
* listener rule conditions on an internet-facing ALB whose default action validates JWTs: a
  forward-only rule for ``sourceIp`` 10.0.0.0/8 (good: no internet client has that source
  address), for the stack's own VPC range (good), for a public range (bad), for
  ``X-Forwarded-For`` 10.0.0.0/8 (bad: the client writes that header); the same private
  ``sourceIp`` rule behind a CloudFront VPC origin (bad: CloudFront's own private addresses
  match it).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tests.policy.corpus import (
    A_INSTANCE,
    A_SUBNET,
    A_VPC_ORIGIN,
    N_INSTANCE,
    N_VPC_ORIGIN,
    PATH,
    Case,
    Ref,
    forward,
    jwt,
    lb_inputs,
    sg_inputs,
    td_inputs,
    tg_inputs,
    types,
)

A_GA = "aws:globalaccelerator/accelerator:Accelerator"
A_GA_LISTENER = "aws:globalaccelerator/listener:Listener"
A_GA_GROUP = "aws:globalaccelerator/endpointGroup:EndpointGroup"
A_GA_CUSTOM = "aws:globalaccelerator/customRoutingAccelerator:CustomRoutingAccelerator"
A_GA_CUSTOM_LISTENER = "aws:globalaccelerator/customRoutingListener:CustomRoutingListener"
A_GA_CUSTOM_GROUP = "aws:globalaccelerator/customRoutingEndpointGroup:CustomRoutingEndpointGroup"
N_GA = "aws-native:globalaccelerator:Accelerator"
N_GA_LISTENER = "aws-native:globalaccelerator:Listener"
N_GA_GROUP = "aws-native:globalaccelerator:EndpointGroup"
A_EIP = "aws:ec2/eip:Eip"
A_VPC = "aws:ec2/vpc:Vpc"
N_VPC = "aws-native:ec2:VPC"
N_SUBNET = "aws-native:ec2:Subnet"
A_CF = "aws:cloudfront/distribution:Distribution"
N_CF = "aws-native:cloudfront:Distribution"


def _internal_alb(
    case: Case, native: bool, actions: list[dict[str, Any]], kind: str = "application"
):
    """An internal load balancer (closed group) listening on 443 in front of a GPU service."""
    t = types(native)
    case.add(t["SG"], "lb-sg", sg_inputs(native, ("tcp", 443, 443, ["10.0.0.0/8"])))
    case.add(t["LB"], "lb", lb_inputs(native, public=False, kind=kind, sgs=("lb-sg",)))
    case.add(t["TG"], "tg", tg_inputs(8000, protocol="TCP" if kind == "network" else "HTTP"))
    case.add(
        t["LISTENER"],
        "lb-443",
        {
            "loadBalancerArn": Ref("lb"),
            "port": 443.0,
            "protocol": "HTTPS",
            "defaultActions": actions,
        },
    )
    case.add(t["TD"], "td", td_inputs(native, gpu=True, fargate=False))
    case.add(
        t["SVC"],
        "svc",
        {
            "taskDefinition": Ref("td"),
            "launchType": "EC2",
            "loadBalancers": [
                {"targetGroupArn": Ref("tg"), "containerName": "model", "containerPort": 8000.0}
            ],
        },
    )


def _accelerator(
    case: Case,
    native: bool,
    endpoint: Ref,
    *,
    ports: tuple[int, int] = (443, 443),
    overrides: list[dict[str, float]] | None = None,
    enabled: bool = True,
) -> None:
    case.add(N_GA if native else A_GA, "ga", {"name": "models", "enabled": enabled})
    case.add(
        N_GA_LISTENER if native else A_GA_LISTENER,
        "ga-listener",
        {
            "acceleratorArn": Ref("ga"),
            "protocol": "TCP",
            "portRanges": [{"fromPort": float(ports[0]), "toPort": float(ports[1])}],
        },
    )
    group: dict[str, Any] = {
        "listenerArn": Ref("ga-listener"),
        "endpointConfigurations": [{"endpointId": endpoint, "weight": 100.0}],
    }
    if native:
        group["endpointGroupRegion"] = "us-east-1"
    if overrides:
        group["portOverrides"] = overrides
    case.add(N_GA_GROUP if native else A_GA_GROUP, "ga-group", group)


def _instance(case: Case, native: bool, name: str = "gpu-host") -> None:
    case.add(
        N_SUBNET if native else A_SUBNET,
        "private",
        {"vpcId": "vpc-0a1b", "cidrBlock": "10.0.1.0/24", "mapPublicIpOnLaunch": False},
    )
    inputs: dict[str, Any] = {
        "imageId": "ami-0abcdef1234567890",
        "instanceType": "g5.xlarge",
        "subnetId": Ref("private", "id"),
    }
    if not native:
        inputs["associatePublicIpAddress"] = False
    case.add(N_INSTANCE if native else A_INSTANCE, name, inputs)


def _ga_cases() -> Iterator[Case]:
    for native in (False, True):
        p = "native" if native else "aws"
        bad = {(PATH, "ga-listener")}
        case = Case(f"ga-{p}-internal-alb-open", bad)
        _internal_alb(case, native, [forward(native, "tg", 1.0)])
        _accelerator(case, native, Ref("lb"))
        yield case
        case = Case(f"ga-{p}-internal-alb-jwt", set())
        _internal_alb(case, native, [jwt(native), forward(native, "tg", 2.0)])
        _accelerator(case, native, Ref("lb"))
        yield case
        case = Case(f"ga-{p}-internal-nlb", bad)
        _internal_alb(case, native, [forward(native, "tg", 1.0)], kind="network")
        _accelerator(case, native, Ref("lb"))
        yield case
        case = Case(f"ga-{p}-ports-miss-the-listener", set())
        _internal_alb(case, native, [forward(native, "tg", 1.0)])
        _accelerator(case, native, Ref("lb"), ports=(80, 80))
        yield case
        case = Case(f"ga-{p}-port-override-onto-the-listener", bad)
        _internal_alb(case, native, [forward(native, "tg", 1.0)])
        overrides = [{"listenerPort": 80.0, "endpointPort": 443.0}]
        _accelerator(case, native, Ref("lb"), ports=(80, 80), overrides=overrides)
        yield case
        case = Case(f"ga-{p}-disabled", set())
        _internal_alb(case, native, [forward(native, "tg", 1.0)])
        _accelerator(case, native, Ref("lb"), enabled=False)
        yield case
        case = Case(f"ga-{p}-instance", bad)
        _instance(case, native)
        _accelerator(case, native, Ref("gpu-host", "id"))
        yield case
    case = Case("ga-aws-elastic-ip", {(PATH, "ga-listener")})
    _instance(case, False)
    case.add(A_EIP, "eip", {"domain": "vpc", "instance": Ref("gpu-host", "id")})
    _accelerator(case, False, Ref("eip", "id"))
    yield case
    for enabled, expect in ((True, {(PATH, "ga-listener")}), (False, set())):
        case = Case(f"ga-aws-custom-routing-{'on' if enabled else 'disabled'}", expect)
        _instance(case, False)
        case.add(A_GA_CUSTOM, "ga", {"name": "sessions", "enabled": enabled})
        case.add(
            A_GA_CUSTOM_LISTENER,
            "ga-listener",
            {"acceleratorArn": Ref("ga"), "portRanges": [{"fromPort": 10000.0, "toPort": 20000.0}]},
        )
        case.add(
            A_GA_CUSTOM_GROUP,
            "ga-group",
            {
                "listenerArn": Ref("ga-listener"),
                "destinationConfigurations": [
                    {"fromPort": 8000.0, "toPort": 8000.0, "protocols": ["TCP"]}
                ],
                "endpointConfigurations": [{"endpointId": Ref("private", "id")}],
            },
        )
        yield case


# --- rule conditions ------------------------------------------------------------------------------


def _source_ip(native: bool, *cidrs: str) -> dict[str, Any]:
    if native:
        return {"field": "source-ip", "sourceIpConfig": {"values": list(cidrs)}}
    return {"sourceIp": {"values": list(cidrs)}}


def _header(native: bool, name: str, *values: str) -> dict[str, Any]:
    if native:
        return {
            "field": "http-header",
            "httpHeaderConfig": {"httpHeaderName": name, "values": list(values)},
        }
    return {"httpHeader": {"httpHeaderName": name, "values": list(values)}}


def _conditioned_alb(case: Case, native: bool, conditions: list[Any], *, public: bool = True):
    """An ALB whose default action validates JWTs, and one forward-only rule with
    ``conditions`` (group closed to 10.0.0.0/8, so only the route is judged)."""
    t = types(native)
    case.add(t["SG"], "alb-sg", sg_inputs(native, ("tcp", 443, 443, ["10.0.0.0/8"])))
    case.add(t["LB"], "alb", lb_inputs(native, public=public, sgs=("alb-sg",)))
    case.add(t["TG"], "tg", tg_inputs(8000))
    case.add(
        t["LISTENER"],
        "https",
        {
            "loadBalancerArn": Ref("alb"),
            "port": 443.0,
            "protocol": "HTTPS",
            "defaultActions": [jwt(native), forward(native, "tg", 2.0)],
        },
    )
    case.add(
        t["RULE"],
        "ops",
        {
            "listenerArn": Ref("https"),
            "priority": 5.0,
            "actions": [forward(native, "tg", 1.0)],
            "conditions": conditions,
        },
    )
    case.add(t["TD"], "td", td_inputs(native, gpu=True, fargate=False))
    case.add(
        t["SVC"],
        "svc",
        {
            "taskDefinition": Ref("td"),
            "launchType": "EC2",
            "loadBalancers": [
                {"targetGroupArn": Ref("tg"), "containerName": "model", "containerPort": 8000.0}
            ],
        },
    )


def _condition_cases() -> Iterator[Case]:
    for native in (False, True):
        p = "native" if native else "aws"
        path = (
            {"pathPattern": {"values": ["/ops/*"]}}
            if not native
            else {
                "field": "path-pattern",
                "pathPatternConfig": {"values": ["/ops/*"]},
            }
        )
        case = Case(f"rule-{p}-source-ip-private", set())
        _conditioned_alb(case, native, [_source_ip(native, "10.0.0.0/8"), path])
        yield case
        case = Case(f"rule-{p}-source-ip-stack-vpc", set())
        case.add(N_VPC if native else A_VPC, "vpc", {"cidrBlock": "54.240.0.0/16"})
        _conditioned_alb(case, native, [_source_ip(native, "54.240.0.0/16")])
        yield case
        case = Case(f"rule-{p}-source-ip-public", {(PATH, "ops")})
        _conditioned_alb(case, native, [_source_ip(native, "10.0.0.0/8", "52.0.0.0/8")])
        yield case
        case = Case(f"rule-{p}-forwarded-for-header", {(PATH, "ops")})
        _conditioned_alb(case, native, [_header(native, "X-Forwarded-For", "10.*")])
        yield case
        case = Case(f"rule-{p}-source-ip-behind-cloudfront", {(PATH, "cdn")})
        _conditioned_alb(case, native, [_source_ip(native, "10.0.0.0/8")], public=False)
        endpoint = {"arn": Ref("alb"), "name": "alb", "httpPort": 80.0, "httpsPort": 443.0}
        case.add(
            N_VPC_ORIGIN if native else A_VPC_ORIGIN, "vpco", {"vpcOriginEndpointConfig": endpoint}
        )
        behavior = {"targetOriginId": "alb", "viewerProtocolPolicy": "https-only"}
        origin = {
            "originId": "alb",
            "domainName": Ref("alb", "dnsName"),
            "vpcOriginConfig": {"vpcOriginId": Ref("vpco", "id")},
        }
        config = {"enabled": True, "origins": [origin], "defaultCacheBehavior": behavior}
        case.add(
            N_CF if native else A_CF, "cdn", {"distributionConfig": config} if native else config
        )
        yield case


def _defaults_cases() -> Iterator[Case]:
    """Load balancers that leave the scheme, action orders and the listener port to AWS (what
    a first preview shows as unknown): judged by the defaults."""
    for native in (False, True):
        p = "native" if native else "aws"
        t = types(native)
        for auth, expect in ((False, {(PATH, "listener")}), (True, set())):
            case = Case(f"defaults-{p}-alb-{'jwt' if auth else 'open'}", expect)
            lb = lb_inputs(native, public=True)
            lb.pop("scheme" if native else "internal")
            case.add(t["LB"], "lb", lb)
            case.add(t["TG"], "tg", tg_inputs(8000))
            actions = [{"type": "forward", "targetGroupArn": Ref("tg")}]
            if auth:
                actions.insert(0, {k: v for k, v in jwt(native).items() if k != "order"})
            case.add(
                t["LISTENER"], "listener", {"loadBalancerArn": Ref("lb"), "defaultActions": actions}
            )
            case.add(t["TD"], "td", td_inputs(native, gpu=True, fargate=False))
            case.add(
                t["SVC"],
                "svc",
                {
                    "taskDefinition": Ref("td"),
                    "launchType": "EC2",
                    "loadBalancers": [
                        {
                            "targetGroupArn": Ref("tg"),
                            "containerName": "model",
                            "containerPort": 8000.0,
                        }
                    ],
                },
            )
            yield case


def cases() -> list[Case]:
    """Every case of this module."""
    return [*_ga_cases(), *_condition_cases(), *_defaults_cases()]
