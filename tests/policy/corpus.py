"""A corpus of small stacks, good and bad, for every class of finding the pack judges.

Each ``Case`` lists resources in the provider's input shape; a reference to another resource's
output is written ``Ref(name, attr)``. ``build(case, literal=False)`` turns a case into the
records a preview produces: references become the engine's unknown value, and the referenced
resources are recorded as property dependencies of the top-level input. ``literal=True`` is
the other way a pack sees a stack (``pulumi up``, previews of existing stacks, hard-coded
ARNs): references are bare values (ARNs, ids, names, DNS names), every resource carries its
own identity outputs, and no dependency is recorded. A case must be judged the same both ways.

``expect`` is the exact set of mandatory ``(policy, resource name)`` pairs: empty for a good
stack. ``notes`` are substrings that must appear among the advisory ``guardrail-notes``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from pulumi.runtime.rpc import UNKNOWN

from tests.policy.policy_stacks import Res, Stack, urn_of

PATH = "no-unauthenticated-internet-path"
SG = "no-internet-ingress-to-unauthenticated-target"
PIP = "no-reachable-public-ip"
GPU = "no-gpu-task-on-fargate-service"
HOST = "no-accelerators-or-host-features-on-fargate"


@dataclass(frozen=True)
class Ref:
    """A reference to resource ``name``'s output ``attr`` (arn, id, name, dnsName)."""

    name: str
    attr: str = "arn"


@dataclass(frozen=True)
class IntegrationTarget:
    """``integrations/<id>``: an HTTP API route's target, built from an integration's id."""

    name: str


@dataclass
class Case:
    """One corpus stack."""

    title: str
    expect: set[tuple[str, str]]
    resources: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)
    notes: tuple[str, ...] = ()

    def add(self, type_: str, name: str, inputs: dict[str, Any]) -> Case:
        self.resources.append((type_, name, inputs))
        return self

    @property
    def provider(self) -> str:
        return "native" if any(t.startswith("aws-native:") for t, _, _ in self.resources) else "aws"


ELB_ARN = "arn:aws:elasticloadbalancing:us-east-1:123456789012"

# Native identity outputs, for literal stacks (CloudFormation names its own ARN / id keys).
_NATIVE_KEYS = {
    "aws-native:elasticloadbalancingv2:LoadBalancer": {"loadBalancerArn": "arn"},
    "aws-native:elasticloadbalancingv2:TargetGroup": {"targetGroupArn": "arn"},
    "aws-native:elasticloadbalancingv2:Listener": {"listenerArn": "arn"},
    "aws-native:ec2:SecurityGroup": {"groupId": "id"},
    "aws-native:ecs:TaskDefinition": {"taskDefinitionArn": "arn"},
    "aws-native:apigatewayv2:VpcLink": {"vpcLinkId": "id"},
    "aws-native:apigatewayv2:Api": {"apiId": "id"},
    "aws-native:apigatewayv2:Integration": {"integrationId": "id"},
    "aws-native:ec2:Subnet": {"subnetId": "id"},
}


#: Outputs that address a resource (DNS names, URLs, public IPs), for literal stacks.
_ADDRESS_OUTPUTS = {
    "aws:lambda/functionUrl:FunctionUrl": ("functionUrl",),
    "aws-native:lambda:Url": ("functionUrl",),
    "aws:apprunner/service:Service": ("serviceUrl",),
    "aws-native:apprunner:Service": ("serviceUrl",),
    "aws:ec2/eip:Eip": ("publicIp", "publicDns"),
    "aws-native:ec2:Eip": ("publicIp",),
    "aws:ec2/instance:Instance": ("publicDns",),
}


#: The form of each address output (``host``: a per-name number, for public IPs).
_ADDRESS_FORMS = {
    "functionUrl": "https://{name}0f1e2d3c.lambda-url.us-east-1.on.aws/",
    "serviceUrl": "{name}0f1e2d3c.us-east-1.awsapprunner.com",
    "publicIp": "203.0.113.{host}",
    "publicDns": "ec2-203-0-113-{host}.compute-1.amazonaws.com",
}


def identity(type_: str, name: str, inputs: dict[str, Any], attr: str) -> str:
    """The deterministic output ``attr`` of a resource, as ``pulumi up`` would know it."""
    token = type_.rsplit(":", 1)[-1].lower()
    if attr == "arn":
        if ("LoadBalancer" in type_ and "elasticloadbalancingv2" in type_) or type_.startswith(
            ("aws:lb/loadBalancer", "aws:alb/loadBalancer")
        ):
            kind = {"network": "net", "gateway": "gwy"}.get(
                str(inputs.get("loadBalancerType") or inputs.get("type") or ""), "app"
            )
            return f"{ELB_ARN}:loadbalancer/{kind}/{name}/50dc6c495c0c9188"
        return f"arn:aws:svc:us-east-1:123456789012:{token}/{name}/0f1e2d3c"
    if attr == "id":
        return f"{token[:4]}-{name}-0f1e2d3c"
    if attr == "dnsName":
        return f"{name}-1234567890.us-east-1.elb.amazonaws.com"
    if attr == "name":
        return str(inputs.get("name") or name)
    if attr in _ADDRESS_FORMS:
        return _ADDRESS_FORMS[attr].format(name=name, host=sum(map(ord, name)) % 250 + 1)
    if attr == "outputs":  # a StackReference output: the other stack's load balancer ARN
        return f"{ELB_ARN}:loadbalancer/app/{name}-shared/0123456789abcdef"
    raise ValueError(attr)


def build(case: Case, *, literal: bool = False) -> Stack:
    """The case as preview records (``literal``: as bare values without dependencies)."""
    table = {name: (type_, inputs) for type_, name, inputs in case.resources}

    def resolve(value: Any, refs: list[str]) -> Any:
        if isinstance(value, Ref):
            refs.append(value.name)
            if not literal:
                return UNKNOWN
            type_, inputs = table[value.name]
            return identity(type_, value.name, inputs, value.attr)
        if isinstance(value, dict):
            return {k: resolve(v, refs) for k, v in value.items()}
        if isinstance(value, list):
            return [resolve(v, refs) for v in value]
        if isinstance(value, IntegrationTarget):
            refs.append(value.name)
            if not literal:
                return UNKNOWN
            type_, inputs = table[value.name]
            return "integrations/" + identity(type_, value.name, inputs, "id")
        return value

    named = {
        ref.name for _, _, inputs in case.resources for ref in _refs(inputs) if ref.attr == "name"
    }
    records: list[Res] = []
    for type_, name, inputs in case.resources:
        resolved: dict[str, Any] = {}
        prop_deps: dict[str, tuple[str, ...]] = {}
        for key, value in inputs.items():
            refs: list[str] = []
            resolved[key] = resolve(value, refs)
            if refs and not literal:
                prop_deps[key] = tuple(dict.fromkeys(urn_of(table[r][0], r) for r in refs))
        if literal:
            for attr in ("arn", "id"):
                resolved.setdefault(attr, identity(type_, name, inputs, attr))
            if name in named:  # its name output, which another resource references
                resolved.setdefault("name", identity(type_, name, inputs, "name"))
            if "LoadBalancer" in type_:
                resolved.setdefault("dnsName", identity(type_, name, inputs, "dnsName"))
            for attr in _ADDRESS_OUTPUTS.get(type_, ()):
                resolved.setdefault(attr, identity(type_, name, inputs, attr))
            for key, attr in _NATIVE_KEYS.get(type_, {}).items():
                resolved.setdefault(key, identity(type_, name, inputs, attr))
        deps = tuple(dict.fromkeys(u for urns in prop_deps.values() for u in urns))
        records.append(
            Res(
                type=type_,
                name=name,
                urn=urn_of(type_, name),
                custom=True,
                inputs=resolved,
                dependencies=deps,
                property_dependencies=prop_deps,
            )
        )
    return Stack(records)


def _refs(value: Any) -> Iterator[Ref]:
    if isinstance(value, Ref):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _refs(item)
    elif isinstance(value, list):
        for item in value:
            yield from _refs(item)


# --- shapes -------------------------------------------------------------------------------------

A_TD = "aws:ecs/taskDefinition:TaskDefinition"
A_SVC = "aws:ecs/service:Service"
A_LB = "aws:lb/loadBalancer:LoadBalancer"
A_LISTENER = "aws:lb/listener:Listener"
A_RULE = "aws:lb/listenerRule:ListenerRule"
A_TG = "aws:lb/targetGroup:TargetGroup"
A_TGA = "aws:lb/targetGroupAttachment:TargetGroupAttachment"
A_SG = "aws:ec2/securityGroup:SecurityGroup"
A_SG_IN = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"
A_SG_RULE = "aws:ec2/securityGroupRule:SecurityGroupRule"
A_PL = "aws:ec2/managedPrefixList:ManagedPrefixList"
A_CLUSTER = "aws:ecs/cluster:Cluster"
A_CCP = "aws:ecs/clusterCapacityProviders:ClusterCapacityProviders"
A_TASKSET = "aws:ecs/taskSet:TaskSet"
A_EVENT_TARGET = "aws:cloudwatch/eventTarget:EventTarget"
A_SCHEDULE = "aws:scheduler/schedule:Schedule"
A_BATCH = "aws:batch/jobDefinition:JobDefinition"
A_ELB = "aws:elb/loadBalancer:LoadBalancer"
A_API = "aws:apigatewayv2/api:Api"
A_ROUTE = "aws:apigatewayv2/route:Route"
A_INTEGRATION = "aws:apigatewayv2/integration:Integration"
A_VPC_LINK = "aws:apigatewayv2/vpcLink:VpcLink"
A_REST = "aws:apigateway/restApi:RestApi"
A_REST_RESOURCE = "aws:apigateway/resource:Resource"
A_METHOD = "aws:apigateway/method:Method"
A_REST_INTEGRATION = "aws:apigateway/integration:Integration"
A_REST_LINK = "aws:apigateway/vpcLink:VpcLink"
A_CF = "aws:cloudfront/distribution:Distribution"
A_VPC_ORIGIN = "aws:cloudfront/vpcOrigin:VpcOrigin"
A_APPRUNNER = "aws:apprunner/service:Service"
A_EXPRESS = "aws:ecs/expressGatewayService:ExpressGatewayService"
A_FUNCTION = "aws:lambda/function:Function"
A_URL = "aws:lambda/functionUrl:FunctionUrl"
A_INSTANCE = "aws:ec2/instance:Instance"
A_LT = "aws:ec2/launchTemplate:LaunchTemplate"
A_ASG = "aws:autoscaling/group:Group"
A_SUBNET = "aws:ec2/subnet:Subnet"
A_ENDPOINT = "aws:ec2/vpcEndpoint:VpcEndpoint"

N_TD = "aws-native:ecs:TaskDefinition"
N_SVC = "aws-native:ecs:Service"
N_LB = "aws-native:elasticloadbalancingv2:LoadBalancer"
N_LISTENER = "aws-native:elasticloadbalancingv2:Listener"
N_RULE = "aws-native:elasticloadbalancingv2:ListenerRule"
N_TG = "aws-native:elasticloadbalancingv2:TargetGroup"
N_SG = "aws-native:ec2:SecurityGroup"
N_SG_IN = "aws-native:ec2:SecurityGroupIngress"
N_PL = "aws-native:ec2:PrefixList"
N_TASKSET = "aws-native:ecs:TaskSet"
N_RULE_EVENTS = "aws-native:events:Rule"
N_SCHEDULE = "aws-native:scheduler:Schedule"
N_BATCH = "aws-native:batch:JobDefinition"
N_CLUSTER = "aws-native:ecs:Cluster"
N_API = "aws-native:apigatewayv2:Api"
N_ROUTE = "aws-native:apigatewayv2:Route"
N_INTEGRATION = "aws-native:apigatewayv2:Integration"
N_VPC_LINK = "aws-native:apigatewayv2:VpcLink"
N_METHOD = "aws-native:apigateway:Method"
N_REST = "aws-native:apigateway:RestApi"
N_REST_LINK = "aws-native:apigateway:VpcLink"
N_CF = "aws-native:cloudfront:Distribution"
N_VPC_ORIGIN = "aws-native:cloudfront:VpcOrigin"
N_APPRUNNER = "aws-native:apprunner:Service"
N_EXPRESS = "aws-native:ecs:ExpressGatewayService"
N_FUNCTION = "aws-native:lambda:Function"
N_URL = "aws-native:lambda:Url"
N_INSTANCE = "aws-native:ec2:Instance"
N_LT = "aws-native:ec2:LaunchTemplate"
N_ENDPOINT = "aws-native:ec2:VpcEndpoint"

IMAGE_VLLM = "123456789012.dkr.ecr.us-east-1.amazonaws.com/vllm:0.9"
IMAGE_WEB = "public.ecr.aws/nginx/nginx:1.27"


def container(name: str, image: str, port: int, gpu: bool = False) -> dict[str, Any]:
    item: dict[str, Any] = {
        "name": name,
        "image": image,
        "essential": True,
        "portMappings": [{"containerPort": float(port), "protocol": "tcp"}],
    }
    if gpu:
        item["resourceRequirements"] = [{"type": "GPU", "value": "1"}]
    return item


def td_inputs(native: bool, *, gpu: bool, fargate: bool, port: int = 8000, image: str = IMAGE_VLLM):
    containers = [container("model", image, port, gpu)]
    inputs: dict[str, Any] = {
        "family": "model",
        "networkMode": "awsvpc",
        "requiresCompatibilities": ["FARGATE"] if fargate else ["EC2"],
        "containerDefinitions": containers if native else json.dumps(containers),
    }
    if fargate:
        inputs.update(cpu="1024", memory="2048")
    return inputs


def service_inputs(
    native: bool,
    *,
    td: str,
    tg: str | None = None,
    sgs: tuple[str, ...] = (),
    public_ip: bool = False,
    launch_type: str | None = "FARGATE",
    port: int = 8000,
    cluster: str | None = None,
) -> dict[str, Any]:
    groups = [Ref(s, "id") for s in sgs]
    if native:
        network: dict[str, Any] = {
            "awsvpcConfiguration": {
                "subnets": ["subnet-0a1b2c3d"],
                "securityGroups": groups,
                "assignPublicIp": "ENABLED" if public_ip else "DISABLED",
            }
        }
    else:
        network = {
            "subnets": ["subnet-0a1b2c3d"],
            "securityGroups": groups,
            "assignPublicIp": public_ip,
        }
    inputs: dict[str, Any] = {
        "taskDefinition": Ref(td),
        "desiredCount": 1.0,
        "networkConfiguration": network,
    }
    if launch_type:
        inputs["launchType"] = launch_type
    if cluster:
        inputs["cluster"] = Ref(cluster)
    if tg:
        inputs["loadBalancers"] = [
            {"targetGroupArn": Ref(tg), "containerName": "model", "containerPort": float(port)}
        ]
    return inputs


def sg_inputs(native: bool, *rules: tuple[str, int, int, list[str]]) -> dict[str, Any]:
    """Inline ingress: (protocol, from, to, cidrs)."""
    if native:
        entries = []
        for proto, low, high, cidrs in rules:
            for cidr in cidrs:
                key = "cidrIpv6" if ":" in cidr else "cidrIp"
                entries.append(
                    {"ipProtocol": proto, "fromPort": float(low), "toPort": float(high), key: cidr}
                )
        return {"groupDescription": "sg", "vpcId": "vpc-0a1b", "securityGroupIngress": entries}
    entries = []
    for proto, low, high, cidrs in rules:
        entries.append(
            {
                "protocol": proto,
                "fromPort": float(low),
                "toPort": float(high),
                "cidrBlocks": [c for c in cidrs if ":" not in c],
                "ipv6CidrBlocks": [c for c in cidrs if ":" in c],
            }
        )
    return {"vpcId": "vpc-0a1b", "ingress": entries}


def lb_inputs(native: bool, *, public: bool, kind: str = "application", sgs: tuple[str, ...] = ()):
    groups = [Ref(s, "id") for s in sgs]
    if native:
        return {
            "scheme": "internet-facing" if public else "internal",
            "type": kind,
            "subnets": ["subnet-a", "subnet-b"],
            "securityGroups": groups,
        }
    return {
        "internal": not public,
        "loadBalancerType": kind,
        "subnets": ["subnet-a", "subnet-b"],
        "securityGroups": groups,
    }


def tg_inputs(port: int, target_type: str = "ip", protocol: str = "HTTP") -> dict[str, Any]:
    return {
        "port": float(port),
        "protocol": protocol,
        "targetType": target_type,
        "vpcId": "vpc-0a1b",
    }


def forward(native: bool, tg: str, order: float = 2.0) -> dict[str, Any]:
    return {"type": "forward", "order": order, "targetGroupArn": Ref(tg)}


def cognito(native: bool, on_unauth: str | None = None, order: float = 1.0) -> dict[str, Any]:
    block: dict[str, Any] = {
        "userPoolArn": "arn:aws:cognito-idp:us-east-1:1:userpool/x",
        "userPoolClientId": "c",
        "userPoolDomain": "d",
    }
    if on_unauth:
        block["onUnauthenticatedRequest"] = on_unauth
    key = "authenticateCognitoConfig" if native else "authenticateCognito"
    return {"type": "authenticate-cognito", "order": order, key: block}


def oidc(native: bool, on_unauth: str | None = None, order: float = 1.0) -> dict[str, Any]:
    block: dict[str, Any] = {
        "issuer": "https://idp",
        "authorizationEndpoint": "https://idp/auth",
        "tokenEndpoint": "https://idp/token",
        "userInfoEndpoint": "https://idp/userinfo",
        "clientId": "c",
    }
    if on_unauth:
        block["onUnauthenticatedRequest"] = on_unauth
    key = "authenticateOidcConfig" if native else "authenticateOidc"
    return {"type": "authenticate-oidc", "order": order, key: block}


def jwt(native: bool, order: float = 1.0) -> dict[str, Any]:
    key = "jwtValidationConfig" if native else "jwtValidation"
    return {
        "type": "jwt-validation",
        "order": order,
        key: {"issuer": "https://idp", "jwksEndpoint": "https://idp/jwks"},
    }


def vpc_link_integration() -> dict[str, Any]:
    """HTTP API ``api``'s proxy integration through VPC link ``link`` to listener ``https``."""
    return {
        "apiId": Ref("api", "id"),
        "integrationType": "HTTP_PROXY",
        "integrationMethod": "ANY",
        "connectionType": "VPC_LINK",
        "connectionId": Ref("link", "id"),
        "integrationUri": Ref("https"),
        "payloadFormatVersion": "1.0",
    }


def vpc_origin_endpoint() -> dict[str, Any]:
    """A CloudFront VPC origin's endpoint: load balancer ``alb``, HTTPS only."""
    return {
        "arn": Ref("alb"),
        "httpPort": 80.0,
        "httpsPort": 443.0,
        "name": "alb",
        "originProtocolPolicy": "https-only",
    }


def types(native: bool):
    """The type tokens of one provider."""
    if native:
        return dict(TD=N_TD, SVC=N_SVC, LB=N_LB, LISTENER=N_LISTENER, RULE=N_RULE, TG=N_TG, SG=N_SG)
    return dict(TD=A_TD, SVC=A_SVC, LB=A_LB, LISTENER=A_LISTENER, RULE=A_RULE, TG=A_TG, SG=A_SG)


# --- ALB / NLB cases ------------------------------------------------------------------------


def alb_case(
    title: str,
    native: bool,
    *,
    expect: set[tuple[str, str]],
    public: bool = True,
    default_actions: list[dict[str, Any]] | None = None,
    rule_actions: list[dict[str, Any]] | None = None,
    mtls: str | None = None,
    sg_open: bool = True,
) -> Case:
    """An ALB (open on 443 when ``sg_open``) in front of a vLLM service on an EC2 capacity
    provider; the listener's default actions and one rule's actions vary."""
    t = types(native)
    case = Case(title, expect)
    case.add(
        t["SG"],
        "alb-sg",
        sg_inputs(native, ("tcp", 443, 443, ["0.0.0.0/0", "::/0"] if sg_open else ["10.0.0.0/8"])),
    )
    case.add(t["SG"], "task-sg", sg_inputs(native))
    case.add(t["LB"], "alb", lb_inputs(native, public=public, sgs=("alb-sg",)))
    case.add(t["TG"], "tg", tg_inputs(8000))
    listener: dict[str, Any] = {
        "loadBalancerArn": Ref("alb"),
        "port": 443.0,
        "protocol": "HTTPS",
        "defaultActions": default_actions
        if default_actions is not None
        else [
            {
                "type": "fixed-response",
                "order": 1.0,
                "fixedResponse": {"contentType": "text/plain", "statusCode": "404"},
            }
        ],
    }
    if mtls:
        listener["mutualAuthentication"] = {
            "mode": mtls,
            "trustStoreArn": "arn:aws:elasticloadbalancing:us-east-1:1:truststore/t/1",
        }
    case.add(t["LISTENER"], "https", listener)
    if rule_actions is not None:
        case.add(
            t["RULE"],
            "api",
            {
                "listenerArn": Ref("https"),
                "priority": 10.0,
                "actions": rule_actions,
                "conditions": [{"pathPattern": {"values": ["/v1/*"]}}],
            },
        )
    case.add(t["TD"], "td", td_inputs(native, gpu=True, fargate=False))
    case.add(
        t["SVC"],
        "svc",
        service_inputs(native, td="td", tg="tg", sgs=("task-sg",), launch_type="EC2"),
    )
    return case


def nlb_to_alb_case(
    title: str, native: bool, *, alb_actions: list[dict[str, Any]], expect, public: bool = True
) -> Case:
    """An NLB (internet-facing unless ``public`` is false) forwarding TCP 443 to an alb-type
    target group whose ALB is internal and forwards to the model service."""
    t = types(native)
    case = Case(title, expect)
    case.add(t["SG"], "task-sg", sg_inputs(native))
    case.add(t["LB"], "nlb", lb_inputs(native, public=public, kind="network"))
    case.add(t["LB"], "alb", lb_inputs(native, public=False))
    case.add(t["TG"], "alb-tg", tg_inputs(443, "alb", "TCP"))
    if native:
        case.resources[-1][2]["targets"] = [{"id": Ref("alb"), "port": 443.0}]
    else:
        case.add(
            A_TGA,
            "alb-attach",
            {"targetGroupArn": Ref("alb-tg"), "targetId": Ref("alb"), "port": 443.0},
        )
    case.add(
        t["LISTENER"],
        "tcp",
        {
            "loadBalancerArn": Ref("nlb"),
            "port": 443.0,
            "protocol": "TCP",
            "defaultActions": [forward(native, "alb-tg", 1.0)],
        },
    )
    case.add(t["TG"], "tg", tg_inputs(8000))
    case.add(
        t["LISTENER"],
        "https",
        {
            "loadBalancerArn": Ref("alb"),
            "port": 443.0,
            "protocol": "HTTPS",
            "defaultActions": alb_actions,
        },
    )
    case.add(t["TD"], "td", td_inputs(native, gpu=True, fargate=False))
    case.add(
        t["SVC"],
        "svc",
        service_inputs(native, td="td", tg="tg", sgs=("task-sg",), launch_type="EC2"),
    )
    return case


def nlb_case(title: str, native: bool, *, public: bool, front: int, target: int, expect) -> Case:
    """An NLB (front port ``front``) forwarding to an SGLang service on ``target``."""
    t = types(native)
    case = Case(title, expect)
    case.add(t["SG"], "task-sg", sg_inputs(native))
    case.add(t["LB"], "nlb", lb_inputs(native, public=public, kind="network"))
    case.add(t["TG"], "tg", tg_inputs(target, "ip", "TCP"))
    case.add(
        t["LISTENER"],
        "tcp",
        {
            "loadBalancerArn": Ref("nlb"),
            "port": float(front),
            "protocol": "TCP",
            "defaultActions": [forward(native, "tg", 1.0)],
        },
    )
    case.add(
        t["TD"],
        "td",
        td_inputs(native, gpu=True, fargate=False, port=target, image="lmsysorg/sglang:v0.4"),
    )
    case.add(
        t["SVC"],
        "svc",
        service_inputs(native, td="td", tg="tg", sgs=("task-sg",), launch_type="EC2", port=target),
    )
    return case


def fixed(native: bool) -> list[dict[str, Any]]:
    key = "fixedResponseConfig" if native else "fixedResponse"
    return [
        {
            "type": "fixed-response",
            "order": 1.0,
            key: {"contentType": "text/plain", "statusCode": "404"},
        }
    ]


def _elb_cases() -> Iterator[Case]:
    for native in (False, True):
        p = "native" if native else "aws"
        yield alb_case(
            f"{p}-alb-public-forward-no-auth",
            native,
            default_actions=[forward(native, "tg", 1.0)],
            expect={(PATH, "https"), (SG, "alb-sg")},
        )
        yield alb_case(
            f"{p}-alb-public-rule-forward-no-auth",
            native,
            rule_actions=[forward(native, "tg", 1.0)],
            expect={(PATH, "api"), (SG, "alb-sg")},
        )
        yield alb_case(
            f"{p}-alb-public-jwt",
            native,
            rule_actions=[jwt(native), forward(native, "tg")],
            expect=set(),
        )
        yield alb_case(
            f"{p}-alb-public-cognito-default",
            native,
            rule_actions=[cognito(native), forward(native, "tg")],
            expect=set(),
        )
        yield alb_case(
            f"{p}-alb-public-cognito-deny",
            native,
            default_actions=[cognito(native, "deny"), forward(native, "tg")],
            expect=set(),
        )
        yield alb_case(
            f"{p}-alb-public-oidc-authenticate",
            native,
            rule_actions=[oidc(native, "authenticate"), forward(native, "tg")],
            expect=set(),
        )
        yield alb_case(
            f"{p}-alb-public-cognito-allow",
            native,
            rule_actions=[cognito(native, "allow"), forward(native, "tg")],
            expect={(PATH, "api"), (SG, "alb-sg")},
        )
        yield alb_case(
            f"{p}-alb-public-oidc-allow",
            native,
            default_actions=[oidc(native, "allow"), forward(native, "tg")],
            expect={(PATH, "https"), (SG, "alb-sg")},
        )
        yield alb_case(
            f"{p}-alb-public-forward-before-jwt",
            native,
            rule_actions=[forward(native, "tg", 1.0), jwt(native, 2.0)],
            expect={(PATH, "api"), (SG, "alb-sg")},
        )
        yield alb_case(
            f"{p}-alb-public-mtls-verify",
            native,
            default_actions=[forward(native, "tg", 1.0)],
            mtls="verify",
            expect=set(),
        )
        yield alb_case(
            f"{p}-alb-public-mtls-passthrough",
            native,
            default_actions=[forward(native, "tg", 1.0)],
            mtls="passthrough",
            expect={(PATH, "https"), (SG, "alb-sg")},
        )
        yield alb_case(
            f"{p}-alb-public-fixed-response-only",
            native,
            default_actions=fixed(native),
            expect=set(),
        )
        yield alb_case(
            f"{p}-alb-internal-forward-no-auth",
            native,
            public=False,
            default_actions=[forward(native, "tg", 1.0)],
            expect=set(),
        )
        yield alb_case(
            f"{p}-alb-public-no-auth-closed-sg",
            native,
            default_actions=[forward(native, "tg", 1.0)],
            sg_open=False,
            expect={(PATH, "https")},
        )
        yield nlb_to_alb_case(
            f"{p}-nlb-to-authenticating-alb",
            native,
            alb_actions=[jwt(native), forward(native, "tg")],
            expect=set(),
        )
        yield nlb_to_alb_case(
            f"{p}-nlb-to-open-alb",
            native,
            alb_actions=[forward(native, "tg", 1.0)],
            expect={(PATH, "tcp")},
        )
        yield nlb_case(
            f"{p}-nlb-public-sglang-443-to-30000",
            native,
            public=True,
            front=443,
            target=30000,
            expect={(PATH, "tcp")},
        )
        yield nlb_case(
            f"{p}-nlb-internal", native, public=False, front=443, target=30000, expect=set()
        )


# --- security groups ---------------------------------------------------------------------------


def sg_task_case(
    title: str, native: bool, *, rules, expect, public_ip: bool = False, extra=None
) -> Case:
    """A Fargate re-ranker-like service (no load balancer) behind one security group."""
    t = types(native)
    case = Case(title, expect)
    case.add(t["SG"], "task-sg", sg_inputs(native, *rules))
    case.add(
        t["TD"],
        "td",
        td_inputs(native, gpu=False, fargate=True, port=8265, image="rayproject/ray:2.9"),
    )
    case.add(
        t["SVC"],
        "svc",
        service_inputs(native, td="td", sgs=("task-sg",), public_ip=public_ip, port=8265),
    )
    if extra:
        extra(case)
    return case


def _sg_cases() -> Iterator[Case]:
    for native in (False, True):
        p = "native" if native else "aws"
        yield sg_task_case(
            f"{p}-sg-task-open-ray-dashboard",
            native,
            rules=[("tcp", 8265, 8265, ["0.0.0.0/0"])],
            expect={(SG, "task-sg")},
        )
        yield sg_task_case(
            f"{p}-sg-task-split-halves",
            native,
            rules=[("tcp", 30000, 30000, ["0.0.0.0/1", "128.0.0.0/1"])],
            expect={(SG, "task-sg")},
        )
        yield sg_task_case(
            f"{p}-sg-task-ipv6-all-ports",
            native,
            rules=[("-1", 0, 0, ["::/0"])],
            expect={(SG, "task-sg")},
        )
        yield sg_task_case(
            f"{p}-sg-task-ssh-open",
            native,
            rules=[("tcp", 22, 22, ["0.0.0.0/0"])],
            expect={(SG, "task-sg")},
        )
        yield sg_task_case(
            f"{p}-sg-task-client-cidr",
            native,
            rules=[("tcp", 8265, 8265, ["203.0.113.0/24", "198.51.100.7/32"])],
            expect=set(),
        )
        yield sg_task_case(
            f"{p}-sg-task-half-internet-only",
            native,
            rules=[("tcp", 8265, 8265, ["10.0.0.0/8", "0.0.0.0/1"])],
            expect=set(),
        )
        yield sg_task_case(
            f"{p}-sg-task-icmp-open", native, rules=[("icmp", -1, -1, ["0.0.0.0/0"])], expect=set()
        )
        yield sg_task_case(
            f"{p}-public-ip-open-sg",
            native,
            rules=[("tcp", 8265, 8265, ["0.0.0.0/0"])],
            public_ip=True,
            expect={(SG, "task-sg"), (PIP, "svc")},
        )
        yield sg_task_case(
            f"{p}-public-ip-closed-sg",
            native,
            rules=[("tcp", 8265, 8265, ["10.0.0.0/8"])],
            public_ip=True,
            expect=set(),
        )

        def split_rules(case: Case, native: bool = native) -> None:
            if native:
                case.add(
                    N_SG_IN,
                    "half-a",
                    {
                        "groupId": Ref("task-sg", "id"),
                        "ipProtocol": "tcp",
                        "fromPort": 8265.0,
                        "toPort": 8265.0,
                        "cidrIp": "0.0.0.0/1",
                    },
                )
                case.add(
                    N_SG_IN,
                    "half-b",
                    {
                        "groupId": Ref("task-sg", "id"),
                        "ipProtocol": "tcp",
                        "fromPort": 8000.0,
                        "toPort": 9000.0,
                        "cidrIp": "128.0.0.0/1",
                    },
                )
            else:
                case.add(
                    A_SG_IN,
                    "half-a",
                    {
                        "securityGroupId": Ref("task-sg", "id"),
                        "ipProtocol": "tcp",
                        "fromPort": 8265.0,
                        "toPort": 8265.0,
                        "cidrIpv4": "0.0.0.0/1",
                    },
                )
                case.add(
                    A_SG_IN,
                    "half-b",
                    {
                        "securityGroupId": Ref("task-sg", "id"),
                        "ipProtocol": "tcp",
                        "fromPort": 8000.0,
                        "toPort": 9000.0,
                        "cidrIpv4": "128.0.0.0/1",
                    },
                )

        yield sg_task_case(
            f"{p}-sg-standalone-rules-add-up",
            native,
            rules=[],
            extra=split_rules,
            expect={(SG, "half-a"), (SG, "half-b")},
        )

        def prefix_list(case: Case, native: bool = native) -> None:
            entries = [{"cidr": "0.0.0.0/0", "description": "everyone"}]
            case.add(
                N_PL if native else A_PL,
                "clients",
                {"addressFamily": "IPv4", "maxEntries": 5.0, "name": "clients", "entries": entries},
            )
            if native:
                case.add(
                    N_SG_IN,
                    "from-list",
                    {
                        "groupId": Ref("task-sg", "id"),
                        "ipProtocol": "tcp",
                        "fromPort": 8265.0,
                        "toPort": 8265.0,
                        "sourcePrefixListId": Ref("clients", "id"),
                    },
                )
            else:
                case.add(
                    A_SG_IN,
                    "from-list",
                    {
                        "securityGroupId": Ref("task-sg", "id"),
                        "ipProtocol": "tcp",
                        "fromPort": 8265.0,
                        "toPort": 8265.0,
                        "prefixListId": Ref("clients", "id"),
                    },
                )

        yield sg_task_case(
            f"{p}-sg-prefix-list-internet",
            native,
            rules=[],
            extra=prefix_list,
            expect={(SG, "from-list")},
        )

        def endpoint(case: Case, native: bool = native) -> None:
            case.add(
                t_sg(native), "endpoint-sg", sg_inputs(native, ("tcp", 443, 443, ["0.0.0.0/0"]))
            )
            case.add(
                N_ENDPOINT if native else A_ENDPOINT,
                "ecr-api",
                {
                    "vpcId": "vpc-0a1b",
                    "serviceName": "com.amazonaws.us-east-1.ecr.api",
                    "vpcEndpointType": "Interface",
                    "securityGroupIds": [Ref("endpoint-sg", "id")],
                },
            )

        yield sg_task_case(
            f"{p}-sg-vpc-endpoint-open-443", native, rules=[], extra=endpoint, expect=set()
        )


def t_sg(native: bool) -> str:
    return N_SG if native else A_SG


# --- GPU on Fargate ------------------------------------------------------------------------------


def _gpu_cases() -> Iterator[Case]:
    for native in (False, True):
        p = "native" if native else "aws"
        t = types(native)
        case = Case(f"{p}-taskset-fargate-gpu", {(GPU, "ts")})
        case.add(t["TD"], "td", td_inputs(native, gpu=True, fargate=False))
        case.add(
            N_TASKSET if native else A_TASKSET,
            "ts",
            {
                "cluster": "llm",
                "service": "llm-svc",
                "taskDefinition": Ref("td"),
                "launchType": "FARGATE",
            },
        )
        yield case
        case = Case(f"{p}-taskset-ec2-gpu", set())
        case.add(t["TD"], "td", td_inputs(native, gpu=True, fargate=False))
        case.add(
            N_TASKSET if native else A_TASKSET,
            "ts",
            {
                "cluster": "llm",
                "service": "llm-svc",
                "taskDefinition": Ref("td"),
                "launchType": "EC2",
            },
        )
        yield case
        if native:
            case = Case(f"{p}-events-rule-fargate-gpu", {(GPU, "nightly")})
            case.add(N_TD, "td", td_inputs(True, gpu=True, fargate=False))
            case.add(N_CLUSTER, "cluster", {"clusterName": "batch"})
            case.add(
                N_RULE_EVENTS,
                "nightly",
                {
                    "scheduleExpression": "rate(1 day)",
                    "targets": [
                        {
                            "id": "t",
                            "arn": Ref("cluster"),
                            "roleArn": "arn:aws:iam::1:role/r",
                            "ecsParameters": {
                                "taskDefinitionArn": Ref("td"),
                                "launchType": "FARGATE",
                                "networkConfiguration": {
                                    "awsVpcConfiguration": {"subnets": ["subnet-a"]}
                                },
                            },
                        }
                    ],
                },
            )
            yield case
        else:
            case = Case(f"{p}-event-target-fargate-spot-gpu", {(GPU, "nightly-target")})
            case.add(A_TD, "td", td_inputs(False, gpu=True, fargate=False))
            case.add(A_CLUSTER, "cluster", {"name": "batch"})
            case.add(
                A_EVENT_TARGET,
                "nightly-target",
                {
                    "rule": "nightly",
                    "arn": Ref("cluster"),
                    "roleArn": "arn:aws:iam::1:role/r",
                    "ecsTarget": {
                        "taskDefinitionArn": Ref("td"),
                        "capacityProviderStrategies": [
                            {"capacityProvider": "FARGATE_SPOT", "weight": 1.0}
                        ],
                        "networkConfiguration": {"subnets": ["subnet-a"]},
                    },
                },
            )
            yield case
        case = Case(f"{p}-schedule-fargate-gpu", {(GPU, "sched")})
        case.add(t["TD"], "td", td_inputs(native, gpu=True, fargate=False))
        strategy_key = "capacityProviderStrategy" if native else "capacityProviderStrategies"
        case.add(
            N_SCHEDULE if native else A_SCHEDULE,
            "sched",
            {
                "scheduleExpression": "rate(1 hour)",
                "flexibleTimeWindow": {"mode": "OFF"},
                "target": {
                    "arn": "arn:aws:ecs:us-east-1:1:cluster/batch",
                    "roleArn": "arn:aws:iam::1:role/r",
                    "ecsParameters": {
                        "taskDefinitionArn": Ref("td"),
                        strategy_key: [{"capacityProvider": "FARGATE", "weight": 1.0}],
                    },
                },
            },
        )
        yield case
        # Batch job definitions on Fargate asking for a GPU.
        props = {
            "image": IMAGE_VLLM,
            "resourceRequirements": [
                {"type": "GPU", "value": "1"},
                {"type": "VCPU", "value": "4"},
                {"type": "MEMORY", "value": "16384"},
            ],
        }
        yield Case(f"{p}-batch-fargate-gpu", {(HOST, "job")}).add(
            N_BATCH if native else A_BATCH,
            "job",
            {
                "type": "container",
                "platformCapabilities": ["FARGATE"],
                "containerProperties": props if native else json.dumps(props),
            },
        )
        yield Case(f"{p}-batch-ec2-gpu", set()).add(
            N_BATCH if native else A_BATCH,
            "job",
            {
                "type": "container",
                "platformCapabilities": ["EC2"],
                "containerProperties": props if native else json.dumps(props),
            },
        )
        # A service without launch type or strategy on a cluster whose default strategy is Fargate.
        case = Case(f"{p}-service-cluster-default-fargate", {(GPU, "svc")})
        case.add(t["TD"], "td", td_inputs(native, gpu=True, fargate=False))
        if native:
            case.add(
                N_CLUSTER,
                "cluster",
                {
                    "clusterName": "llm",
                    "capacityProviders": ["FARGATE"],
                    "defaultCapacityProviderStrategy": [
                        {"capacityProvider": "FARGATE", "weight": 1.0}
                    ],
                },
            )
        else:
            case.add(A_CLUSTER, "cluster", {"name": "llm"})
            case.add(
                A_CCP,
                "cluster-cps",
                {
                    "clusterName": Ref("cluster", "name"),
                    "capacityProviders": ["FARGATE"],
                    "defaultCapacityProviderStrategies": [
                        {"capacityProvider": "FARGATE", "weight": 1.0}
                    ],
                },
            )
        case.add(
            t["SVC"], "svc", service_inputs(native, td="td", launch_type=None, cluster="cluster")
        )
        yield case
        # The same service on a cluster without a Fargate default: ECS's default launch type is EC2.
        case = Case(f"{p}-service-cluster-default-ec2", set())
        case.add(t["TD"], "td", td_inputs(native, gpu=True, fargate=False))
        case.add(
            N_CLUSTER if native else A_CLUSTER,
            "cluster",
            {"clusterName": "llm"} if native else {"name": "llm"},
        )
        case.add(
            t["SVC"], "svc", service_inputs(native, td="td", launch_type=None, cluster="cluster")
        )
        yield case
        # EC2-only task definition whose containers are unknown, run by a Fargate service.
        case = Case(f"{p}-fargate-service-ec2-only-td-unknown-containers", {(GPU, "svc")})
        td = td_inputs(native, gpu=True, fargate=False)
        td["containerDefinitions"] = Ref("rendered", "id")
        case.add("aws:ssm/parameter:Parameter", "rendered", {"type": "String", "value": "x"})
        case.add(t["TD"], "td", td)
        case.add(t["SVC"], "svc", service_inputs(native, td="td"))
        yield case


# --- other front doors ---------------------------------------------------------------------------


def _api_cases() -> Iterator[Case]:
    for native in (False, True):
        p = "native" if native else "aws"
        t = types(native)
        for auth, expect in (("NONE", {(PATH, "route")}), ("JWT", set()), ("AWS_IAM", set())):
            case = Case(f"{p}-http-api-vpc-link-{auth.lower()}", expect)
            case.add(t["SG"], "task-sg", sg_inputs(native))
            case.add(t["LB"], "alb", lb_inputs(native, public=False))
            case.add(t["TG"], "tg", tg_inputs(8000))
            case.add(
                t["LISTENER"],
                "https",
                {
                    "loadBalancerArn": Ref("alb"),
                    "port": 443.0,
                    "protocol": "HTTPS",
                    "defaultActions": [forward(native, "tg", 1.0)],
                },
            )
            case.add(t["TD"], "td", td_inputs(native, gpu=True, fargate=False))
            case.add(
                t["SVC"],
                "svc",
                service_inputs(native, td="td", tg="tg", sgs=("task-sg",), launch_type="EC2"),
            )
            case.add(N_API if native else A_API, "api", {"name": "llm", "protocolType": "HTTP"})
            case.add(
                N_VPC_LINK if native else A_VPC_LINK,
                "link",
                {"name": "llm", "subnetIds": ["subnet-a"], "securityGroupIds": []},
            )
            case.add(
                N_INTEGRATION if native else A_INTEGRATION,
                "integration",
                vpc_link_integration(),
            )
            route: dict[str, Any] = {
                "apiId": Ref("api", "id"),
                "routeKey": "ANY /{proxy+}",
                "target": IntegrationTarget("integration"),
                "authorizationType": auth,
            }
            if auth == "JWT":
                route["authorizerId"] = "abc123"
            case.add(N_ROUTE if native else A_ROUTE, "route", route)
            yield case
    # REST API: method -> VPC link -> NLB -> model service.
    for auth, expect in (
        ("NONE", {(PATH, "method"), (PATH, "tcp")}),
        ("COGNITO_USER_POOLS", {(PATH, "tcp")}),
    ):
        case = Case(f"aws-rest-api-vpc-link-{auth.lower()}", expect)
        case.add(A_SG, "task-sg", sg_inputs(False))
        case.add(A_LB, "nlb", lb_inputs(False, public=False, kind="network"))
        case.add(A_TG, "tg", tg_inputs(8000, "ip", "TCP"))
        case.add(
            A_LISTENER,
            "tcp",
            {
                "loadBalancerArn": Ref("nlb"),
                "port": 80.0,
                "protocol": "TCP",
                "defaultActions": [forward(False, "tg", 1.0)],
            },
        )
        case.add(A_TD, "td", td_inputs(False, gpu=True, fargate=False))
        case.add(
            A_SVC,
            "svc",
            service_inputs(False, td="td", tg="tg", sgs=("task-sg",), launch_type="EC2"),
        )
        case.add(A_REST, "rest", {"name": "llm"})
        case.add(
            A_REST_RESOURCE,
            "proxy",
            {"restApi": Ref("rest", "id"), "parentId": "root", "pathPart": "{proxy+}"},
        )
        case.add(
            A_REST_LINK,
            "link",
            {"name": "llm", "targetArn": Ref("nlb"), "targetArns": [Ref("nlb")]},
        )
        case.add(
            A_METHOD,
            "method",
            {
                "restApi": Ref("rest", "id"),
                "resourceId": Ref("proxy", "id"),
                "httpMethod": "ANY",
                "authorization": auth,
            },
        )
        case.add(
            A_REST_INTEGRATION,
            "integration",
            {
                "restApi": Ref("rest", "id"),
                "resourceId": Ref("proxy", "id"),
                "httpMethod": "ANY",
                "type": "HTTP_PROXY",
                "integrationHttpMethod": "ANY",
                "connectionType": "VPC_LINK",
                "connectionId": Ref("link", "id"),
                "uri": "http://nlb.internal/{proxy}",
            },
        )
        # The NLB is internal: only the API reaches it, so only the API's authorizer decides.
        case.expect = {e for e in expect if e != (PATH, "tcp")}
        yield case
    case = Case("native-rest-api-method-none-vpc-link", {(PATH, "method")})
    case.add(N_SG, "task-sg", sg_inputs(True))
    case.add(N_LB, "nlb", lb_inputs(True, public=False, kind="network"))
    case.add(N_TG, "tg", tg_inputs(8000, "ip", "TCP"))
    case.add(
        N_LISTENER,
        "tcp",
        {
            "loadBalancerArn": Ref("nlb"),
            "port": 80.0,
            "protocol": "TCP",
            "defaultActions": [forward(True, "tg", 1.0)],
        },
    )
    case.add(N_TD, "td", td_inputs(True, gpu=True, fargate=False))
    case.add(
        N_SVC, "svc", service_inputs(True, td="td", tg="tg", sgs=("task-sg",), launch_type="EC2")
    )
    case.add(N_REST, "rest", {"name": "llm"})
    case.add(N_REST_LINK, "link", {"name": "llm", "targetArns": [Ref("nlb")]})
    case.add(
        N_METHOD,
        "method",
        {
            "restApiId": Ref("rest", "id"),
            "resourceId": "abc",
            "httpMethod": "ANY",
            "authorizationType": "NONE",
            "integration": {
                "type": "HTTP_PROXY",
                "integrationHttpMethod": "ANY",
                "connectionType": "VPC_LINK",
                "connectionId": Ref("link", "id"),
                "uri": "http://nlb.internal/",
            },
        },
    )
    yield case
    # Quick-create HTTP API straight to a Lambda function: a $default route without authorizer.
    case = Case("aws-http-api-quick-create-lambda", {(PATH, "api")})
    case.add(
        A_FUNCTION,
        "fn",
        {"runtime": "python3.12", "handler": "app.handler", "role": "arn:aws:iam::1:role/r"},
    )
    case.add(A_API, "api", {"name": "hello", "protocolType": "HTTP", "target": Ref("fn")})
    yield case


def _front_door_cases() -> Iterator[Case]:
    for native in (False, True):
        p = "native" if native else "aws"
        t = types(native)
        for signed, expect in ((False, {(PATH, "cdn")}), (True, set())):
            case = Case(f"{p}-cloudfront-vpc-origin-{'signed' if signed else 'open'}", expect)
            case.add(t["SG"], "task-sg", sg_inputs(native))
            case.add(t["LB"], "alb", lb_inputs(native, public=False))
            case.add(t["TG"], "tg", tg_inputs(8000))
            case.add(
                t["LISTENER"],
                "https",
                {
                    "loadBalancerArn": Ref("alb"),
                    "port": 443.0,
                    "protocol": "HTTPS",
                    "defaultActions": [forward(native, "tg", 1.0)],
                },
            )
            case.add(t["TD"], "td", td_inputs(native, gpu=True, fargate=False))
            case.add(
                t["SVC"],
                "svc",
                service_inputs(native, td="td", tg="tg", sgs=("task-sg",), launch_type="EC2"),
            )
            case.add(
                N_VPC_ORIGIN if native else A_VPC_ORIGIN,
                "origin",
                {"vpcOriginEndpointConfig": vpc_origin_endpoint()},
            )
            behavior: dict[str, Any] = {
                "targetOriginId": "alb",
                "viewerProtocolPolicy": "https-only",
                "allowedMethods": ["GET", "HEAD", "POST"],
                "cachedMethods": ["GET", "HEAD"],
            }
            if signed:
                behavior["trustedKeyGroups"] = ["kg-123"]
            origin = {
                "originId": "alb",
                "domainName": Ref("alb", "dnsName"),
                "vpcOriginConfig": {"vpcOriginId": Ref("origin", "id")},
            }
            if native:
                case.add(
                    N_CF,
                    "cdn",
                    {
                        "distributionConfig": {
                            "enabled": True,
                            "origins": [origin],
                            "defaultCacheBehavior": behavior,
                        }
                    },
                )
            else:
                case.add(
                    A_CF,
                    "cdn",
                    {
                        "enabled": True,
                        "origins": [origin],
                        "defaultCacheBehavior": behavior,
                        "restrictions": {"geoRestriction": {"restrictionType": "none"}},
                        "viewerCertificate": {"cloudfrontDefaultCertificate": True},
                    },
                )
            yield case
        case = Case(f"{p}-cloudfront-s3-site", set())
        origin = {
            "originId": "site",
            "domainName": "site.s3.us-east-1.amazonaws.com",
            "s3OriginConfig": {"originAccessIdentity": ""},
        }
        behavior = {
            "targetOriginId": "site",
            "viewerProtocolPolicy": "redirect-to-https",
            "allowedMethods": ["GET", "HEAD"],
            "cachedMethods": ["GET", "HEAD"],
        }
        if native:
            case.add(
                N_CF,
                "cdn",
                {
                    "distributionConfig": {
                        "enabled": True,
                        "origins": [origin],
                        "defaultCacheBehavior": behavior,
                    }
                },
            )
        else:
            case.add(
                A_CF,
                "cdn",
                {"enabled": True, "origins": [origin], "defaultCacheBehavior": behavior},
            )
        yield case
        for public, expect in ((True, {(PATH, "runner")}), (False, set())):
            network = {"ingressConfiguration": {"isPubliclyAccessible": public}}
            source = {
                "imageRepository": {
                    "imageIdentifier": "public.ecr.aws/x/ollama:latest",
                    "imageRepositoryType": "ECR_PUBLIC",
                    "imageConfiguration": {"port": "11434"},
                }
            }
            yield Case(f"{p}-app-runner-{'public' if public else 'private'}", expect).add(
                N_APPRUNNER if native else A_APPRUNNER,
                "runner",
                {"sourceConfiguration": source, "networkConfiguration": network},
            )
        yield Case(f"{p}-app-runner-default-public", {(PATH, "runner")}).add(
            N_APPRUNNER if native else A_APPRUNNER,
            "runner",
            {
                "sourceConfiguration": {
                    "imageRepository": {"imageIdentifier": "x", "imageRepositoryType": "ECR_PUBLIC"}
                }
            },
        )
        for auth, expect in (("NONE", {(PATH, "url")}), ("AWS_IAM", set())):
            case = Case(f"{p}-lambda-url-{auth.lower()}", expect)
            case.add(
                N_FUNCTION if native else A_FUNCTION,
                "fn",
                {"runtime": "python3.12", "handler": "a.h", "role": "arn:aws:iam::1:role/r"},
            )
            if native:
                case.add(N_URL, "url", {"targetFunctionArn": Ref("fn"), "authType": auth})
            else:
                case.add(
                    A_URL, "url", {"functionName": Ref("fn", "name"), "authorizationType": auth}
                )
            yield case
        # ECS Express: default subnets (default VPC, public) vs private subnets of the stack.
        sub = N_SUBNET if native else A_SUBNET
        container_block = {"image": IMAGE_VLLM, "containerPort": 8000.0}
        roles = {
            "executionRoleArn": "arn:aws:iam::1:role/e",
            "infrastructureRoleArn": "arn:aws:iam::1:role/i",
        }
        express = N_EXPRESS if native else A_EXPRESS
        yield Case(f"{p}-express-default-subnets", {(PATH, "express")}).add(
            express,
            "express",
            {**roles, "primaryContainer": container_block if native else [container_block]},
        )
        case = Case(f"{p}-express-private-subnets", set())
        case.add(
            sub,
            "private-a",
            {"vpcId": "vpc-0a1b", "cidrBlock": "10.0.1.0/24", "mapPublicIpOnLaunch": False},
        )
        case.add(
            sub,
            "private-b",
            {"vpcId": "vpc-0a1b", "cidrBlock": "10.0.2.0/24", "mapPublicIpOnLaunch": False},
        )
        net = {"subnets": [Ref("private-a", "id"), Ref("private-b", "id")]}
        case.add(
            express,
            "express",
            {
                **roles,
                "primaryContainer": container_block if native else [container_block],
                **({"networkConfiguration": net} if native else {"networkConfigurations": [net]}),
            },
        )
        yield case
        case = Case(f"{p}-express-public-subnets", {(PATH, "express")})
        case.add(
            sub,
            "public-a",
            {"vpcId": "vpc-0a1b", "cidrBlock": "10.0.1.0/24", "mapPublicIpOnLaunch": True},
        )
        net = {"subnets": [Ref("public-a", "id")]}
        case.add(
            express,
            "express",
            {
                **roles,
                "primaryContainer": container_block if native else [container_block],
                **({"networkConfiguration": net} if native else {"networkConfigurations": [net]}),
            },
        )
        yield case
    for internal, expect in ((False, {(PATH, "classic")}), (True, set())):
        case = Case(f"aws-classic-elb-{'internal' if internal else 'public'}", expect)
        case.add(
            A_INSTANCE,
            "vm",
            {
                "ami": "ami-0123456789abcdef0",
                "instanceType": "g5.xlarge",
                "subnetId": "subnet-private",
            },
        )
        case.add(
            A_ELB,
            "classic",
            {
                "internal": internal,
                "subnets": ["subnet-a"],
                "listeners": [
                    {
                        "instancePort": 8000.0,
                        "instanceProtocol": "http",
                        "lbPort": 80.0,
                        "lbProtocol": "http",
                    }
                ],
                "instances": [Ref("vm", "id")],
            },
        )
        yield case


N_SUBNET = "aws-native:ec2:Subnet"

# --- ECS Service Connect ---------------------------------------------------------------------

A_NS = "aws:servicediscovery/httpNamespace:HttpNamespace"
N_NS = "aws-native:servicediscovery:HttpNamespace"
IMAGE_GATEWAY = "ghcr.io/berriai/litellm:main-v1.108.7"


def service_connect_block(
    native: bool, namespace: str | None, alias: tuple[str, int] | None = None
) -> dict[str, Any]:
    """``serviceConnectConfiguration``: a client (``alias`` None) or a server publishing
    ``dnsName:port`` under port name ``http``; ``namespace`` None: the cluster's default."""
    block: dict[str, Any] = {"enabled": True}
    if namespace is not None:
        block["namespace"] = Ref(namespace)
    if alias is not None:
        dns, port = alias
        aliases = [{"dnsName": dns, "port": float(port)}]
        block["services"] = [
            {
                "portName": "http",
                "discoveryName": dns.split(".", 1)[0],
                ("clientAliases" if native else "clientAlias"): aliases,
            }
        ]
    return block


def service_connect_case(
    title: str,
    native: bool,
    *,
    expect: set[tuple[str, str]],
    client_public_ip: bool = False,
    client_open: bool = False,
    front: str | None = None,
    client_namespace: str | None = "ns",
    server_namespace: str = "ns",
    server_open: bool = False,
) -> Case:
    """A vLLM server (EC2, GPU) published by Service Connect as ``llm.internal:8000`` in
    namespace ``server_namespace``, its group admitting nobody from the internet (``server_open``:
    8000 from anywhere), and a LiteLLM-like client ``gateway`` (Fargate, port 4000) in
    ``client_namespace`` (None: the cluster's default, ``ns``). The client gets a public IP,
    a group open on 4000, or an internet-facing ALB in front (``front``: ``open`` forwards,
    ``jwt`` validates first)."""
    t = types(native)
    ns_type = N_NS if native else A_NS
    case = Case(title, expect)
    for ns in dict.fromkeys(("ns", server_namespace)):
        case.add(ns_type, ns, {"name": f"{ns}.internal"})
    cluster = None
    if client_namespace is None:
        cluster = "cluster"
        defaults = {"serviceConnectDefaults": {"namespace": Ref("ns")}}
        case.add(
            N_CLUSTER if native else A_CLUSTER,
            "cluster",
            {"clusterName": "llm", **defaults} if native else {"name": "llm", **defaults},
        )
    rules = [("tcp", 8000, 8000, ["0.0.0.0/0"])] if server_open else []
    case.add(t["SG"], "model-sg", sg_inputs(native, *rules))
    case.add(t["TD"], "model-td", td_inputs(native, gpu=True, fargate=False))
    server = service_inputs(native, td="model-td", sgs=("model-sg",), launch_type="EC2")
    server["serviceConnectConfiguration"] = service_connect_block(
        native, server_namespace, ("llm.internal", 8000)
    )
    case.add(t["SVC"], "model", server)
    rules = [("tcp", 4000, 4000, ["0.0.0.0/0", "::/0"])] if client_open else []
    case.add(t["SG"], "gw-sg", sg_inputs(native, *rules))
    case.add(
        t["TD"],
        "gw-td",
        td_inputs(native, gpu=False, fargate=True, port=4000, image=IMAGE_GATEWAY),
    )
    if front is not None:
        case.add(t["SG"], "alb-sg", sg_inputs(native, ("tcp", 443, 443, ["0.0.0.0/0"])))
        case.add(t["LB"], "alb", lb_inputs(native, public=True, sgs=("alb-sg",)))
        case.add(t["TG"], "gw-tg", tg_inputs(4000))
        actions = [forward(native, "gw-tg", 1.0)]
        if front == "jwt":
            actions = [jwt(native), forward(native, "gw-tg")]
        case.add(
            t["LISTENER"],
            "https",
            {
                "loadBalancerArn": Ref("alb"),
                "port": 443.0,
                "protocol": "HTTPS",
                "defaultActions": actions,
            },
        )
    client = service_inputs(
        native,
        td="gw-td",
        tg="gw-tg" if front is not None else None,
        sgs=("gw-sg",),
        public_ip=client_public_ip,
        port=4000,
        cluster=cluster,
    )
    client["serviceConnectConfiguration"] = service_connect_block(native, client_namespace)
    case.add(t["SVC"], "gateway", client)
    return case


def _service_connect_cases() -> Iterator[Case]:
    for native in (False, True):
        p = "native" if native else "aws"
        exposed = {(PIP, "gateway"), (SG, "gw-sg")}
        yield service_connect_case(
            f"{p}-sc-public-client-reaches-server",
            native,
            client_public_ip=True,
            client_open=True,
            expect=exposed,
        )
        yield service_connect_case(
            f"{p}-sc-public-client-cluster-default-namespace",
            native,
            client_public_ip=True,
            client_open=True,
            client_namespace=None,
            expect=exposed,
        )
        yield service_connect_case(
            f"{p}-sc-public-client-other-namespace",
            native,
            client_public_ip=True,
            client_open=True,
            server_namespace="other",
            expect=exposed,
        )
        yield service_connect_case(
            f"{p}-sc-open-alb-to-client",
            native,
            front="open",
            expect={(PATH, "https"), (SG, "alb-sg")},
        )
        yield service_connect_case(
            f"{p}-sc-authenticated-alb-to-client", native, front="jwt", expect=set()
        )
        yield service_connect_case(f"{p}-sc-namespace-only-client", native, expect=set())
        yield service_connect_case(
            f"{p}-sc-private-client-public-ip-closed-group",
            native,
            client_public_ip=True,
            expect=set(),
        )
        yield service_connect_case(
            f"{p}-sc-server-group-open-on-service-connect-port",
            native,
            server_open=True,
            expect={(SG, "model-sg")},
        )


def _instance_cases() -> Iterator[Case]:
    for native in (False, True):
        p = "native" if native else "aws"
        sg_type = t_sg(native)
        case = Case(f"{p}-instance-default-vpc-open-ssh", {(SG, "vm-sg"), (PIP, "vm")})
        case.add(sg_type, "vm-sg", sg_inputs(native, ("tcp", 22, 22, ["0.0.0.0/0"])))
        key = "securityGroupIds" if native else "vpcSecurityGroupIds"
        case.add(
            N_INSTANCE if native else A_INSTANCE,
            "vm",
            {
                "imageId" if native else "ami": "ami-0123456789abcdef0",
                "instanceType": "g5.xlarge",
                key: [Ref("vm-sg", "id")],
            },
        )
        yield case
        case = Case(f"{p}-instance-private-subnet-closed", set())
        case.add(sg_type, "vm-sg", sg_inputs(native, ("tcp", 22, 22, ["10.0.0.0/8"])))
        case.add(
            N_SUBNET if native else A_SUBNET,
            "private",
            {"vpcId": "vpc-0a1b", "cidrBlock": "10.0.1.0/24"},
        )
        case.add(
            N_INSTANCE if native else A_INSTANCE,
            "vm",
            {
                "imageId" if native else "ami": "ami-0123456789abcdef0",
                "instanceType": "g5.xlarge",
                key: [Ref("vm-sg", "id")],
                "subnetId": Ref("private", "id"),
            },
        )
        yield case
        case = Case(f"{p}-launch-template-public-ip-open", {(SG, "lt-sg"), (PIP, "lt")})
        case.add(sg_type, "lt-sg", sg_inputs(native, ("tcp", 8000, 8000, ["0.0.0.0/0"])))
        nic: dict[str, Any] = {
            "deviceIndex": 0.0,
            "associatePublicIpAddress": True if native else "true",
        }
        if native:
            nic["groups"] = [Ref("lt-sg", "id")]
            case.add(
                N_LT,
                "lt",
                {
                    "launchTemplateData": {
                        "imageId": "ami-0123456789abcdef0",
                        "instanceType": "g5.xlarge",
                        "networkInterfaces": [nic],
                    }
                },
            )
        else:
            nic["securityGroups"] = [Ref("lt-sg", "id")]
            case.add(
                A_LT,
                "lt",
                {
                    "imageId": "ami-0123456789abcdef0",
                    "instanceType": "g5.xlarge",
                    "networkInterfaces": [nic],
                },
            )
        yield case
    case = Case("aws-asg-public-subnet-open-template", {(SG, "lt-sg"), (PIP, "asg")})
    case.add(A_SG, "lt-sg", sg_inputs(False, ("tcp", 11434, 11434, ["0.0.0.0/0"])))
    case.add(
        A_SUBNET,
        "public-a",
        {"vpcId": "vpc-0a1b", "cidrBlock": "10.0.0.0/24", "mapPublicIpOnLaunch": True},
    )
    case.add(
        A_LT,
        "lt",
        {
            "imageId": "ami-0123456789abcdef0",
            "instanceType": "g5.xlarge",
            "vpcSecurityGroupIds": [Ref("lt-sg", "id")],
        },
    )
    case.add(
        A_ASG,
        "asg",
        {
            "maxSize": 2.0,
            "minSize": 1.0,
            "vpcZoneIdentifiers": [Ref("public-a", "id")],
            "launchTemplate": {"id": Ref("lt", "id"), "version": "$Latest"},
        },
    )
    yield case


def _silence_cases() -> Iterator[Case]:
    case = Case("aws-listener-on-external-alb", set(), notes=("cannot verify",))
    case.add(A_TG, "tg", tg_inputs(8000))
    case.add(
        A_LISTENER,
        "https",
        {
            "loadBalancerArn": f"{ELB_ARN}:loadbalancer/app/shared/0123456789abcdef",
            "port": 443.0,
            "protocol": "HTTPS",
            "defaultActions": [forward(False, "tg", 1.0)],
        },
    )
    yield case
    case = Case(
        "aws-listener-on-alb-from-stack-reference",
        set(),
        notes=("cannot verify", "loadBalancerArn"),
    )
    case.add("pulumi:pulumi:StackReference", "shared", {"name": "org/network/prod"})
    case.add(A_TG, "tg", tg_inputs(8000))
    case.add(
        A_LISTENER,
        "https",
        {
            "loadBalancerArn": Ref("shared", "outputs"),
            "port": 443.0,
            "protocol": "HTTPS",
            "defaultActions": [forward(False, "tg", 1.0)],
        },
    )
    yield case
    case = Case(
        "aws-service-runs-external-task-definition",
        set(),
        notes=("cannot verify", "taskDefinition"),
    )
    case.add(
        A_SVC,
        "svc",
        service_inputs(False, td="td-missing")
        | {"taskDefinition": "arn:aws:ecs:us-east-1:123456789012:task-definition/shared-gpu:3"},
    )
    yield case
    case = Case("aws-open-sg-attached-to-nothing", set(), notes=("attached to nothing",))
    case.add(A_SG, "orphan", sg_inputs(False, ("tcp", 8000, 8000, ["0.0.0.0/0"])))
    yield case


#: The three exposure rules, whose ``scope`` decides which findings are mandatory.
SCOPED = frozenset({PATH, SG, PIP})

#: Bad cases whose routes reach no model (a hello-world Lambda, App Runner's sample image, SSH
#: on a plain instance, Elastic Beanstalk and Lightsail defaults, a WebSocket API to a
#: function, a gateway whose Service Connect namespace serves nothing): under the default
#: ``scope: model-serving`` their exposure findings are advisories ("outside scope
#: model-serving"); under ``scope: all`` they are mandatory (``Case.expect``).
PUBLIC_APPS = frozenset(
    {
        "aws-app-runner-default-public",
        "aws-front-http-openapi-lambda-anonymous-alternative",
        "aws-front-http-openapi-lambda-api-key-only",
        "aws-front-http-openapi-lambda-open",
        "aws-front-rest-openapi-lambda-anonymous-alternative",
        "aws-front-rest-openapi-lambda-api-key-only",
        "aws-front-rest-openapi-lambda-open",
        "aws-http-api-quick-create-lambda",
        "aws-hunt-http-api-lambda-none",
        "aws-instance-default-vpc-open-ssh",
        "aws-lambda-url-none",
        "aws-sc-public-client-other-namespace",
        "beanstalk-aws-public",
        "beanstalk-native-public",
        "lightsail-aws-instance-default-firewall",
        "lightsail-aws-public-endpoint",
        "lightsail-native-instance-default-firewall",
        "lightsail-native-public-endpoint",
        "native-app-runner-default-public",
        "native-front-http-openapi-lambda-anonymous-alternative",
        "native-front-http-openapi-lambda-api-key-only",
        "native-front-http-openapi-lambda-open",
        "native-front-rest-openapi-lambda-anonymous-alternative",
        "native-front-rest-openapi-lambda-api-key-only",
        "native-front-rest-openapi-lambda-open",
        "native-hunt-http-api-lambda-none",
        "native-instance-default-vpc-open-ssh",
        "native-lambda-url-none",
        "native-sc-public-client-other-namespace",
        "websocket-aws-connect-none",
        "websocket-native-connect-none",
    }
)


def expected(case: Case, scope: str) -> set[tuple[str, str]]:
    """The mandatory (policy, resource) pairs of ``case`` under exposure ``scope``."""
    if scope == "model-serving" and case.title in PUBLIC_APPS:
        return {(policy, name) for policy, name in case.expect if policy not in SCOPED}
    return set(case.expect)


def cases() -> list[Case]:
    """Every corpus case."""
    found = [
        *_elb_cases(),
        *_sg_cases(),
        *_gpu_cases(),
        *_api_cases(),
        *_front_door_cases(),
        *_instance_cases(),
        *_silence_cases(),
        *_service_connect_cases(),
    ]
    from tests.policy import (  # their cases build on the helpers above
        corpus_batch,
        corpus_fargate,
        corpus_front_doors,
        corpus_hunt,
        corpus_reach,
    )

    found += corpus_hunt.cases() + corpus_fargate.cases() + corpus_reach.cases()
    found += corpus_front_doors.cases() + corpus_batch.cases()
    names = [c.title for c in found]
    assert len(names) == len(set(names)), "duplicate corpus titles"
    return found
