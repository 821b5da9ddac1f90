"""Corpus stacks for the front doors and route conditions the reachability model gained, in both
providers' shapes (custom routing accelerators exist in pulumi-aws only).

* Global Accelerator: an accelerator whose endpoint group points at an *internal* ALB without
  authentication (bad: reported on the accelerator's listener), or one that validates JWTs
  (good); at an internal NLB; at an EC2 instance; at an Elastic IP on an instance; a listener
  whose ports miss the ALB's listener (good); port overrides onto it (bad); a disabled
  accelerator (good); custom routing to a subnet holding a GPU instance (bad), disabled (good);
* load balancers that leave their scheme, action orders and listener port unset (bad without
  authentication, good with it): a first preview shows them unknown;
* WebSocket APIs, authenticated by the ``$connect`` route's authorizer or not at all; public
  and internal Elastic Beanstalk environments, a worker one; Lightsail container endpoints and
  instance firewalls (default, office-only, a model port open);
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
    A_API,
    A_FUNCTION,
    A_INSTANCE,
    A_INTEGRATION,
    A_ROUTE,
    A_SUBNET,
    A_VPC_ORIGIN,
    N_API,
    N_FUNCTION,
    N_INSTANCE,
    N_INTEGRATION,
    N_ROUTE,
    N_VPC_ORIGIN,
    PATH,
    Case,
    IntegrationTarget,
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
A_BEANSTALK = "aws:elasticbeanstalk/environment:Environment"
N_BEANSTALK = "aws-native:elasticbeanstalk:Environment"
A_LIGHTSAIL_DEPLOYMENT = (
    "aws:lightsail/containerServiceDeploymentVersion:ContainerServiceDeploymentVersion"
)
N_LIGHTSAIL_CONTAINER = "aws-native:lightsail:Container"
A_LIGHTSAIL_INSTANCE = "aws:lightsail/instance:Instance"
N_LIGHTSAIL_INSTANCE = "aws-native:lightsail:Instance"
A_LIGHTSAIL_PORTS = "aws:lightsail/instancePublicPorts:InstancePublicPorts"
N_CF = "aws-native:cloudfront:Distribution"


def _gpu_service(case: Case, native: bool) -> None:
    """A vLLM task definition on EC2 and its service behind target group ``tg``."""
    t = types(native)
    case.add(t["TD"], "td", td_inputs(native, gpu=True, fargate=False))
    service = {
        "taskDefinition": Ref("td"),
        "launchType": "EC2",
        "loadBalancers": [
            {"targetGroupArn": Ref("tg"), "containerName": "model", "containerPort": 8000.0}
        ],
    }
    case.add(t["SVC"], "svc", service)


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
    _gpu_service(case, native)


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
    _gpu_service(case, native)


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
            _gpu_service(case, native)
            yield case


def _websocket_cases() -> Iterator[Case]:
    """A WebSocket API authenticates when a client connects (the ``$connect`` route's
    authorizer); its other routes take none."""
    for native in (False, True):
        p = "native" if native else "aws"
        for connect_auth, expect in (
            ("CUSTOM", set()),
            ("NONE", {(PATH, "connect"), (PATH, "send")}),
        ):
            case = Case(f"websocket-{p}-connect-{connect_auth.lower()}", expect)
            case.add(N_FUNCTION if native else A_FUNCTION, "fn", {"runtime": "python3.12"})
            api = {"protocolType": "WEBSOCKET", "routeSelectionExpression": "$request.body.action"}
            case.add(N_API if native else A_API, "api", api)
            case.add(
                N_INTEGRATION if native else A_INTEGRATION,
                "integration",
                {
                    "apiId": Ref("api", "id"),
                    "integrationType": "AWS_PROXY",
                    "integrationUri": Ref("fn"),
                },
            )
            for name, key, auth in (
                ("connect", "$connect", connect_auth),
                ("send", "sendmessage", "NONE"),
            ):
                route = {
                    "apiId": Ref("api", "id"),
                    "routeKey": key,
                    "authorizationType": auth,
                    "target": IntegrationTarget("integration"),
                }
                case.add(N_ROUTE if native else A_ROUTE, name, route)
            yield case


def _managed_cases() -> Iterator[Case]:
    """Elastic Beanstalk and Lightsail: AWS creates the load balancer, instance or endpoint."""
    for native in (False, True):
        p = "native" if native else "aws"
        key, name = ("optionSettings", "optionName") if native else ("settings", "name")
        env_type = N_BEANSTALK if native else A_BEANSTALK
        for scheme, expect in (("public", {(PATH, "env")}), ("internal", set())):
            setting = {"namespace": "aws:ec2:vpc", name: "ELBScheme", "value": scheme}
            env = {"applicationName" if native else "application": "models", key: [setting]}
            yield Case(f"beanstalk-{p}-{scheme}", expect).add(env_type, "env", env)
        worker = {"applicationName" if native else "application": "jobs"}
        worker["tier"] = {"name": "Worker", "type": "SQS/HTTP"} if native else "Worker"
        yield Case(f"beanstalk-{p}-worker", set()).add(env_type, "env", worker)
        container = {"containerName": "model", "containerPort": 8000, "healthCheck": {}}
        if native:
            deployment = {
                "serviceName": "models",
                "power": "large",
                "scale": 1,
                "containerServiceDeployment": {
                    "containers": [{"containerName": "model", "image": "vllm/vllm-openai:v0.9.2"}],
                    "publicEndpoint": container,
                },
            }
            yield Case(f"lightsail-{p}-public-endpoint", {(PATH, "deploy")}).add(
                N_LIGHTSAIL_CONTAINER, "deploy", deployment
            )
            private = {
                **deployment,
                "containerServiceDeployment": {
                    "containers": deployment["containerServiceDeployment"]["containers"]
                },
            }
            yield Case(f"lightsail-{p}-no-endpoint", set()).add(
                N_LIGHTSAIL_CONTAINER, "deploy", private
            )
        else:
            deployment = {
                "serviceName": "models",
                "containers": [{"containerName": "model", "image": "vllm/vllm-openai:v0.9.2"}],
                "publicEndpoint": container,
            }
            yield Case(f"lightsail-{p}-public-endpoint", {(PATH, "deploy")}).add(
                A_LIGHTSAIL_DEPLOYMENT, "deploy", deployment
            )
            private = {k: v for k, v in deployment.items() if k != "publicEndpoint"}
            yield Case(f"lightsail-{p}-no-endpoint", set()).add(
                A_LIGHTSAIL_DEPLOYMENT, "deploy", private
            )
        instance = {
            "blueprintId": "ubuntu_22_04",
            "bundleId": "medium_3_0",
            "availabilityZone": "us-east-1a",
        }
        yield Case(f"lightsail-{p}-instance-default-firewall", {(PATH, "vm")}).add(
            N_LIGHTSAIL_INSTANCE if native else A_LIGHTSAIL_INSTANCE, "vm", instance
        )
        office = [{"protocol": "tcp", "fromPort": 22, "toPort": 22, "cidrs": ["198.51.100.0/24"]}]
        case = Case(f"lightsail-{p}-instance-office-only", set())
        if native:
            case.add(N_LIGHTSAIL_INSTANCE, "vm", {**instance, "networking": {"ports": office}})
        else:
            case.add(A_LIGHTSAIL_INSTANCE, "vm", {**instance, "name": "vm"})
            case.add(
                A_LIGHTSAIL_PORTS,
                "vm-ports",
                {"instanceName": Ref("vm", "name"), "portInfos": office},
            )
        yield case
        if not native:
            open_ports = [{"protocol": "tcp", "fromPort": 8000, "toPort": 8000}]
            case = Case("lightsail-aws-instance-model-port-open", {(PATH, "vm-ports")})
            case.add(A_LIGHTSAIL_INSTANCE, "vm", {**instance, "name": "vm"})
            case.add(
                A_LIGHTSAIL_PORTS,
                "vm-ports",
                {"instanceName": Ref("vm", "name"), "portInfos": open_ports},
            )
            yield case


def cases() -> list[Case]:
    """Every case of this module."""
    return [
        *_ga_cases(),
        *_condition_cases(),
        *_defaults_cases(),
        *_websocket_cases(),
        *_managed_cases(),
    ]
