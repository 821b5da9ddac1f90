"""Happy-path factories, one per resource family, in both providers' shapes, for rule tests.

A factory returns a compliant ``corpus.Case`` for pulumi-aws (``native=False``) or aws-native
(``native=True``); a rule test changes one thing (:func:`edit`) and judges the result in
process, as a preview records it and literally (``corpus.build``). The ECS + load balancer
family is ``policy_stacks.aws_baseline`` / ``native_baseline`` (the stack the rule tests of
``test_rules_aws.py`` and ``test_rules_native.py`` change); the families here are the other
front doors and hosts the exposure rules judge:

* ``api-gateway``: an HTTP API route with a JWT authorizer, through a VPC link, to the model;
* ``cloudfront``: a distribution whose behaviour requires signed requests, to a VPC origin
  in front of the model;
* ``instance``: a GPU instance in a private subnet, its security group open to the VPC only;
* ``launch-template``: a launch template without a public IP, its group open to the VPC only;
* ``auto-scaling-group``: a group in a private subnet launching from a template whose group is
  open to the VPC only.

``model_backend`` is the model they reach: an internal ALB forwarding to an ECS service on
EC2. A new rule's test file takes a factory, changes one thing and lists what it expects.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.policy.corpus import (
    A_API,
    A_ASG,
    A_CF,
    A_INSTANCE,
    A_INTEGRATION,
    A_LT,
    A_ROUTE,
    A_SUBNET,
    A_VPC_LINK,
    A_VPC_ORIGIN,
    N_API,
    N_CF,
    N_INSTANCE,
    N_INTEGRATION,
    N_LT,
    N_ROUTE,
    N_SUBNET,
    N_VPC_LINK,
    N_VPC_ORIGIN,
    Case,
    IntegrationTarget,
    Ref,
    forward,
    lb_inputs,
    service_inputs,
    sg_inputs,
    td_inputs,
    tg_inputs,
    types,
    vpc_link_integration,
    vpc_origin_endpoint,
)
from tests.policy.policy_stacks import N_ASG

AMI = "ami-0123456789abcdef0"
VPC_ONLY = ("tcp", 8000, 8000, ["10.0.0.0/8"])


def edit(case: Case, name: str, change: Callable[[dict[str, Any]], None]) -> Case:
    """``case`` with ``change`` applied to a copy of resource ``name``'s inputs."""
    resources = []
    for type_, each, inputs in case.resources:
        if each == name:
            inputs = _copy(inputs)
            change(inputs)
        resources.append((type_, each, inputs))
    return Case(case.title, case.expect, resources, case.notes)


def _copy(value: Any) -> Any:
    """A deep copy that keeps ``Ref`` and ``IntegrationTarget`` markers as they are."""
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value


def model_backend(case: Case, native: bool) -> Case:
    """An internal ALB (``alb``, listener ``https``) forwarding to target group ``tg`` of a
    GPU service ``svc`` on EC2, its tasks in group ``task-sg`` (no ingress)."""
    t = types(native)
    case.add(t["SG"], "task-sg", sg_inputs(native))
    case.add(t["LB"], "alb", {**lb_inputs(native, public=False), **_streaming(native, "alb")})
    case.add(t["TG"], "tg", {**tg_inputs(8000), **_streaming(native, "tg")})
    listener = {
        "loadBalancerArn": Ref("alb"),
        "port": 443.0,
        "protocol": "HTTPS",
        "defaultActions": [forward(native, "tg", 1.0)],
    }
    case.add(t["LISTENER"], "https", listener)
    case.add(t["TD"], "td", td_inputs(native, gpu=True, fargate=False))
    svc = service_inputs(native, td="td", tg="tg", sgs=("task-sg",), launch_type="EC2")
    breaker = {"deploymentCircuitBreaker": {"enable": True, "rollback": True}}
    svc.update(breaker if not native else {"deploymentConfiguration": breaker})
    svc["healthCheckGracePeriodSeconds"] = 600.0
    return case.add(t["SVC"], "svc", svc)


def _streaming(native: bool, kind: str) -> dict[str, Any]:
    """A 900 s idle timeout (load balancer) or deregistration delay (target group): long
    generations are neither cut nor dropped on deploy."""
    if kind == "alb":
        key, attributes = "idle_timeout.timeout_seconds", "loadBalancerAttributes"
        plain = {"idleTimeout": 900.0}
    else:
        key, attributes = "deregistration_delay.timeout_seconds", "targetGroupAttributes"
        plain = {"deregistrationDelay": 900.0}
    return {attributes: [{"key": key, "value": "900"}]} if native else plain


def api_gateway(native: bool) -> Case:
    """HTTP API ``api``: route ``route`` (JWT authorizer) → integration → VPC link → ``https``."""
    case = model_backend(Case(f"{_shape(native)}-api-gateway", set()), native)
    case.add(N_API if native else A_API, "api", {"name": "llm", "protocolType": "HTTP"})
    link = {"name": "llm", "subnetIds": ["subnet-a"], "securityGroupIds": []}
    case.add(N_VPC_LINK if native else A_VPC_LINK, "link", link)
    case.add(N_INTEGRATION if native else A_INTEGRATION, "integration", vpc_link_integration())
    route = {
        "apiId": Ref("api", "id"),
        "routeKey": "ANY /{proxy+}",
        "target": IntegrationTarget("integration"),
        "authorizationType": "JWT",
        "authorizerId": "abc123",
    }
    return case.add(N_ROUTE if native else A_ROUTE, "route", route)


def cloudfront(native: bool) -> Case:
    """Distribution ``cdn`` whose default behaviour requires signed requests (a trusted key
    group), to VPC origin ``origin`` in front of the internal ALB."""
    case = model_backend(Case(f"{_shape(native)}-cloudfront", set()), native)
    origin_type = N_VPC_ORIGIN if native else A_VPC_ORIGIN
    case.add(origin_type, "origin", {"vpcOriginEndpointConfig": vpc_origin_endpoint()})
    config = {
        "enabled": True,
        "origins": [
            {
                "originId": "alb",
                "domainName": Ref("alb", "dnsName"),
                "vpcOriginConfig": {"vpcOriginId": Ref("origin", "id")},
            }
        ],
        "defaultCacheBehavior": {
            "targetOriginId": "alb",
            "viewerProtocolPolicy": "https-only",
            "allowedMethods": ["GET", "HEAD", "POST"],
            "cachedMethods": ["GET", "HEAD"],
            "trustedKeyGroups": ["kg-123"],
        },
    }
    if native:
        return case.add(N_CF, "cdn", {"distributionConfig": config})
    config["restrictions"] = {"geoRestriction": {"restrictionType": "none"}}
    config["viewerCertificate"] = {"cloudfrontDefaultCertificate": True}
    return case.add(A_CF, "cdn", config)


def instance(native: bool) -> Case:
    """GPU instance ``vm`` in private subnet ``private``, group ``vm-sg`` open to the VPC."""
    case = Case(f"{_shape(native)}-instance", set())
    case.add(types(native)["SG"], "vm-sg", sg_inputs(native, VPC_ONLY))
    subnet = {"vpcId": "vpc-0a1b", "cidrBlock": "10.0.1.0/24"}
    case.add(N_SUBNET if native else A_SUBNET, "private", subnet)
    groups = "securityGroupIds" if native else "vpcSecurityGroupIds"
    vm = {
        "imageId" if native else "ami": AMI,
        "instanceType": "g5.xlarge",
        groups: [Ref("vm-sg", "id")],
        "subnetId": Ref("private", "id"),
    }
    return case.add(N_INSTANCE if native else A_INSTANCE, "vm", vm)


def launch_template(native: bool) -> Case:
    """Launch template ``lt``: one network interface without a public IP, in group ``lt-sg``
    open to the VPC."""
    case = Case(f"{_shape(native)}-launch-template", set())
    case.add(types(native)["SG"], "lt-sg", sg_inputs(native, VPC_ONLY))
    nic: dict[str, Any] = {"deviceIndex": 0.0, "associatePublicIpAddress": False}
    nic["groups" if native else "securityGroups"] = [Ref("lt-sg", "id")]
    data = {"imageId": AMI, "instanceType": "g5.xlarge", "networkInterfaces": [nic]}
    if native:
        return case.add(N_LT, "lt", {"launchTemplateData": data})
    nic["associatePublicIpAddress"] = "false"  # pulumi-aws types it as a string
    return case.add(A_LT, "lt", data)


def auto_scaling_group(native: bool) -> Case:
    """Auto Scaling group ``asg`` in private subnet ``private``, launching from template ``lt``
    whose group ``lt-sg`` is open to the VPC."""
    case = Case(f"{_shape(native)}-auto-scaling-group", set())
    case.add(types(native)["SG"], "lt-sg", sg_inputs(native, VPC_ONLY))
    subnet = {"vpcId": "vpc-0a1b", "cidrBlock": "10.0.1.0/24"}
    case.add(N_SUBNET if native else A_SUBNET, "private", subnet)
    template = {"imageId": AMI, "instanceType": "g5.xlarge"}
    if native:
        template["securityGroupIds"] = [Ref("lt-sg", "id")]
        case.add(N_LT, "lt", {"launchTemplateData": template})
        asg = {
            "maxSize": "2",
            "minSize": "1",
            "vpcZoneIdentifier": [Ref("private", "id")],
            "launchTemplate": {"launchTemplateId": Ref("lt", "id"), "version": "1"},
        }
        return case.add(N_ASG, "asg", asg)
    template["vpcSecurityGroupIds"] = [Ref("lt-sg", "id")]
    case.add(A_LT, "lt", template)
    asg = {
        "maxSize": 2.0,
        "minSize": 1.0,
        "vpcZoneIdentifiers": [Ref("private", "id")],
        "launchTemplate": {"id": Ref("lt", "id"), "version": "$Latest"},
    }
    return case.add(A_ASG, "asg", asg)


def _shape(native: bool) -> str:
    return "native" if native else "aws"


FAMILIES: dict[str, Callable[[bool], Case]] = {
    "api-gateway": api_gateway,
    "cloudfront": cloudfront,
    "instance": instance,
    "launch-template": launch_template,
    "auto-scaling-group": auto_scaling_group,
}
