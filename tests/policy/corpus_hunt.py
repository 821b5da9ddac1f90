"""Corpus stacks written to hunt misses (issue 13): the same classes as ``corpus.py`` in shapes
it does not use. Each is judged like the rest of the corpus (preview and ``--literal``, exact
mandatory sets). Verdicts and why:

* IPv6: ``::/0``, and ``::/1`` + ``8000::/1`` (the internet split in two), are the internet;
  so is ``::/1`` alone (it holds all of 2000::/3, global unicast), ``8000::/1`` alone is not;
* a prefix list holding the internet, named by a standalone ingress rule, opens its group;
* an NLB forwarding front port 80 to 8000 through a weighted ``forward`` block is a route;
* an ALB with an authenticated 443 listener and an unauthenticated 80 listener is open on 80;
* a rule that forwards without authentication is open even when a later rule authenticates;
* a redirect-only listener is no route, so its open group is fine when every other path
  authenticates;
* ``authenticate-oidc`` with ``deny`` authenticates; an action list that lists the forward
  first but orders the authenticate action first authenticates;
* an HTTP API route with a Lambda (``CUSTOM``) authorizer authenticates, ``NONE`` to a Lambda
  does not; a REST method with ``AWS_IAM`` authenticates;
* CloudFront: a viewer-request Lambda@Edge on every behavior counts as viewer authentication
  (debatable: the pack cannot read what the function checks; it is where signed-cookie / JWT
  checks at the edge live, so the pack trusts it and says so in docs/policy.md), a
  viewer-response function does not, nor does one behavior without it;
* Batch ``ecsProperties`` GPU containers on FARGATE are rejected, the same on EC2 are fine;
* an EventBridge target with ``launchType: FARGATE`` running a GPU task is rejected, one on an
  EC2 capacity provider strategy is fine;
* App Runner with ``isPubliclyAccessible: false`` is private; ECS Express in public subnets is
  public;
* an aws-native launch template whose interface asks ``associatePublicIpAddress: "true"`` (a
  string) behind an open group gets a public IP;
* an internet-facing ALB whose groups admit ``::/0`` but whose only listener validates JWTs is
  fine; an NLB whose group admits the internet in four ``/2`` pieces is open.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from tests.policy.corpus import (
    A_API,
    A_APPRUNNER,
    A_ASG,
    A_BATCH,
    A_CF,
    A_ELB,
    A_EVENT_TARGET,
    A_EXPRESS,
    A_FUNCTION,
    A_INTEGRATION,
    A_LT,
    A_METHOD,
    A_PL,
    A_REST,
    A_REST_INTEGRATION,
    A_REST_LINK,
    A_REST_RESOURCE,
    A_ROUTE,
    A_SG,
    A_SG_IN,
    A_SUBNET,
    A_SVC,
    A_TD,
    GPU,
    HOST,
    IMAGE_VLLM,
    N_API,
    N_APPRUNNER,
    N_BATCH,
    N_CF,
    N_EXPRESS,
    N_FUNCTION,
    N_INTEGRATION,
    N_LT,
    N_METHOD,
    N_REST,
    N_REST_LINK,
    N_ROUTE,
    N_RULE_EVENTS,
    N_SUBNET,
    PATH,
    PIP,
    SG,
    Case,
    IntegrationTarget,
    Ref,
    alb_case,
    cognito,
    fixed,
    forward,
    jwt,
    lb_inputs,
    oidc,
    service_inputs,
    sg_inputs,
    sg_task_case,
    td_inputs,
    tg_inputs,
    types,
)


def _sgs() -> Iterator[Case]:
    yield sg_task_case(
        "aws-hunt-sg-ipv6-any",
        False,
        rules=[("tcp", 8000, 8000, ["::/0"])],
        expect={(SG, "task-sg")},
    )
    yield sg_task_case(
        "native-hunt-sg-ipv6-split-halves",
        True,
        rules=[("tcp", 30000, 30000, ["::/1"]), ("tcp", 30000, 30000, ["8000::/1"])],
        expect={(SG, "task-sg")},
    )
    # 2000::/3 (all global unicast) lies in the lower half: ::/1 alone is the internet, the
    # upper half alone is not.
    yield sg_task_case(
        "native-hunt-sg-ipv6-lower-half-holds-global-unicast",
        True,
        rules=[("tcp", 30000, 30000, ["::/1"])],
        expect={(SG, "task-sg")},
    )
    yield sg_task_case(
        "aws-hunt-sg-numeric-protocol-all",
        False,
        rules=[("tcp", 1, 1, ["10.0.0.0/8"])],
        extra=_numeric_protocol,
        expect={(SG, "task-sg")},
    )
    yield from _external_groups()
    yield sg_task_case(
        "aws-hunt-sg-ipv6-upper-half-only",
        False,
        rules=[("tcp", 30000, 30000, ["8000::/1"])],
        expect=set(),
    )

    def prefix_rule(case: Case) -> None:
        case.add(
            A_PL,
            "anywhere",
            {
                "name": "anywhere",
                "addressFamily": "IPv4",
                "maxEntries": 2.0,
                "entries": [{"cidr": "0.0.0.0/1"}, {"cidr": "128.0.0.0/1"}],
            },
        )
        case.add(
            A_SG_IN,
            "pl-rule",
            {
                "securityGroupId": Ref("task-sg", "id"),
                "ipProtocol": "tcp",
                "fromPort": 8265.0,
                "toPort": 8265.0,
                "prefixListId": Ref("anywhere", "id"),
            },
        )

    yield sg_task_case(
        "aws-hunt-sg-rule-prefix-list-split-internet",
        False,
        rules=[],
        extra=prefix_rule,
        expect={(SG, "pl-rule")},
    )


def _numeric_protocol(case: Case) -> None:
    # A program that writes protocol=-1 (a number) registers -1.0: all traffic.
    case.resources[0][2]["ingress"] = [
        {"protocol": -1.0, "fromPort": 0.0, "toPort": 0.0, "cidrBlocks": ["0.0.0.0/0"]}
    ]


def _external_groups() -> Iterator[Case]:
    """A group outside the stack, named by its id only: a standalone rule of this stack opens
    it to the internet and a service of this stack runs in it."""
    for native in (False, True):
        p = "native" if native else "aws"
        t = types(native)
        case = Case(f"{p}-hunt-external-group-opened-by-rule", {(SG, "open-rule")})
        case.add(t["TD"], "td", td_inputs(native, gpu=False, fargate=True, port=8000))
        svc = service_inputs(native, td="td")
        network = svc["networkConfiguration"]
        (network["awsvpcConfiguration"] if native else network)["securityGroups"] = [
            "sg-0123456789abcdef0"
        ]
        case.add(t["SVC"], "svc", svc)
        if native:
            case.add(
                "aws-native:ec2:SecurityGroupIngress",
                "open-rule",
                {
                    "groupId": "sg-0123456789abcdef0",
                    "ipProtocol": "tcp",
                    "fromPort": 8000.0,
                    "toPort": 8000.0,
                    "cidrIp": "0.0.0.0/0",
                },
            )
        else:
            case.add(
                A_SG_IN,
                "open-rule",
                {
                    "securityGroupId": "sg-0123456789abcdef0",
                    "ipProtocol": "tcp",
                    "fromPort": 8000.0,
                    "toPort": 8000.0,
                    "cidrIpv4": "0.0.0.0/0",
                },
            )
        yield case
        # The same rule opening a different external group: nothing of the stack runs in it.
        other = Case(f"{p}-hunt-external-group-rule-elsewhere", set(), notes=("cannot verify",))
        for type_, name, inputs in case.resources:
            inputs = json.loads(json.dumps(inputs, default=str)) if name == "open-rule" else inputs
            if name == "open-rule":
                inputs["groupId" if native else "securityGroupId"] = "sg-0fedcba9876543210"
            other.add(type_, name, inputs)
        yield other


def _nlbs() -> Iterator[Case]:
    t = types(False)
    case = Case("aws-hunt-nlb-80-to-8000-weighted-forward", {(PATH, "tcp")})
    case.add(t["SG"], "task-sg", sg_inputs(False))
    case.add(t["LB"], "nlb", lb_inputs(False, public=True, kind="network"))
    case.add(t["TG"], "tg", tg_inputs(8000, "ip", "TCP"))
    case.add(
        t["LISTENER"],
        "tcp",
        {
            "loadBalancerArn": Ref("nlb"),
            "port": 80.0,
            "protocol": "TCP",
            "defaultActions": [
                {
                    "type": "forward",
                    "forward": {"targetGroups": [{"arn": Ref("tg"), "weight": 1.0}]},
                }
            ],
        },
    )
    case.add(t["TD"], "td", td_inputs(False, gpu=True, fargate=False))
    case.add(
        t["SVC"],
        "svc",
        service_inputs(False, td="td", tg="tg", sgs=("task-sg",), launch_type="EC2"),
    )
    yield case
    # An NLB with a security group admitting the internet in four /2 pieces.
    t = types(True)
    quarters = ["0.0.0.0/2", "64.0.0.0/2", "128.0.0.0/2", "192.0.0.0/2"]
    case = Case("native-hunt-nlb-sg-quarters", {(PATH, "tcp"), (SG, "nlb-sg")})
    case.add(t["SG"], "nlb-sg", sg_inputs(True, ("tcp", 443, 443, quarters)))
    case.add(t["SG"], "task-sg", sg_inputs(True))
    case.add(t["LB"], "nlb", lb_inputs(True, public=True, kind="network", sgs=("nlb-sg",)))
    case.add(t["TG"], "tg", tg_inputs(8000, "ip", "TCP"))
    case.add(
        t["LISTENER"],
        "tcp",
        {
            "loadBalancerArn": Ref("nlb"),
            "port": 443.0,
            "protocol": "TLS",
            "defaultActions": [forward(True, "tg", 1.0)],
        },
    )
    case.add(t["TD"], "td", td_inputs(True, gpu=True, fargate=False))
    case.add(
        t["SVC"], "svc", service_inputs(True, td="td", tg="tg", sgs=("task-sg",), launch_type="EC2")
    )
    yield case


def _albs() -> Iterator[Case]:
    for native in (False, True):
        p = "native" if native else "aws"
        t = types(native)
        # Two listeners: 443 validates JWTs, 80 forwards without authentication.
        case = alb_case(
            f"{p}-hunt-alb-second-listener-open",
            native,
            default_actions=[jwt(native), forward(native, "tg")],
            expect={(PATH, "http"), (SG, "alb-sg")},
        )
        case.resources[0] = (
            t["SG"],
            "alb-sg",
            sg_inputs(native, ("tcp", 80, 80, ["0.0.0.0/0"]), ("tcp", 443, 443, ["0.0.0.0/0"])),
        )
        case.add(
            t["LISTENER"],
            "http",
            {
                "loadBalancerArn": Ref("alb"),
                "port": 80.0,
                "protocol": "HTTP",
                "defaultActions": [forward(native, "tg", 1.0)],
            },
        )
        yield case
        # Same, but 80 only redirects to 443: no route.
        case = alb_case(
            f"{p}-hunt-alb-redirect-listener",
            native,
            default_actions=[jwt(native), forward(native, "tg")],
            expect=set(),
        )
        case.resources[0] = (
            t["SG"],
            "alb-sg",
            sg_inputs(native, ("tcp", 80, 80, ["0.0.0.0/0"]), ("tcp", 443, 443, ["::/0"])),
        )
        key = "redirectConfig" if native else "redirect"
        case.add(
            t["LISTENER"],
            "http",
            {
                "loadBalancerArn": Ref("alb"),
                "port": 80.0,
                "protocol": "HTTP",
                "defaultActions": [
                    {
                        "type": "redirect",
                        key: {"port": "443", "protocol": "HTTPS", "statusCode": "HTTP_301"},
                    }
                ],
            },
        )
        yield case
        # First rule forwards without authentication; a later rule authenticates.
        case = alb_case(
            f"{p}-hunt-alb-first-rule-open-later-rule-auth",
            native,
            rule_actions=[forward(native, "tg", 1.0)],
            expect={(PATH, "api"), (SG, "alb-sg")},
        )
        case.add(
            t["RULE"],
            "admin",
            {
                "listenerArn": Ref("https"),
                "priority": 20.0,
                "actions": [cognito(native, "deny"), forward(native, "tg")],
                "conditions": [{"pathPattern": {"values": ["/admin/*"]}}],
            },
        )
        yield case
        yield alb_case(
            f"{p}-hunt-alb-oidc-deny-default",
            native,
            default_actions=[oidc(native, "deny"), forward(native, "tg")],
            expect=set(),
        )
        # Listed forward-first, but ordered authenticate-first: ALB runs by order.
        yield alb_case(
            f"{p}-hunt-alb-forward-listed-first-ordered-second",
            native,
            rule_actions=[forward(native, "tg", 2.0), jwt(native, 1.0)],
            expect=set(),
        )
        yield alb_case(
            f"{p}-hunt-alb-fixed-response-rules-only",
            native,
            default_actions=fixed(native),
            rule_actions=fixed(native),
            expect=set(),
        )


def _apis() -> Iterator[Case]:
    for native in (False, True):
        p = "native" if native else "aws"
        for auth, expect in (("NONE", {(PATH, "route")}), ("CUSTOM", set())):
            case = Case(f"{p}-hunt-http-api-lambda-{auth.lower()}", expect)
            case.add(
                N_FUNCTION if native else A_FUNCTION,
                "fn",
                {"runtime": "python3.12", "handler": "a.h", "role": "arn:aws:iam::1:role/r"},
            )
            case.add(N_API if native else A_API, "api", {"name": "x", "protocolType": "HTTP"})
            case.add(
                N_INTEGRATION if native else A_INTEGRATION,
                "integration",
                {
                    "apiId": Ref("api", "id"),
                    "integrationType": "AWS_PROXY",
                    "integrationUri": Ref("fn"),
                    "payloadFormatVersion": "2.0",
                },
            )
            route: dict[str, Any] = {
                "apiId": Ref("api", "id"),
                "routeKey": "POST /v1/chat",
                "target": IntegrationTarget("integration"),
                "authorizationType": auth,
            }
            if auth == "CUSTOM":
                route["authorizerId"] = "lambda-auth"
            case.add(N_ROUTE if native else A_ROUTE, "route", route)
            yield case
    # REST API with AWS_IAM in front of a VPC link to an internal NLB.
    for native in (False, True):
        p = "native" if native else "aws"
        t = types(native)
        case = Case(f"{p}-hunt-rest-api-aws-iam-vpc-link", set())
        case.add(t["SG"], "task-sg", sg_inputs(native))
        case.add(t["LB"], "nlb", lb_inputs(native, public=False, kind="network"))
        case.add(t["TG"], "tg", tg_inputs(8000, "ip", "TCP"))
        case.add(
            t["LISTENER"],
            "tcp",
            {
                "loadBalancerArn": Ref("nlb"),
                "port": 80.0,
                "protocol": "TCP",
                "defaultActions": [forward(native, "tg", 1.0)],
            },
        )
        case.add(t["TD"], "td", td_inputs(native, gpu=True, fargate=False))
        case.add(
            t["SVC"],
            "svc",
            service_inputs(native, td="td", tg="tg", sgs=("task-sg",), launch_type="EC2"),
        )
        integration = {
            "type": "HTTP_PROXY",
            "integrationHttpMethod": "ANY",
            "connectionType": "VPC_LINK",
            "connectionId": Ref("link", "id"),
            "uri": "http://nlb.internal/",
        }
        if native:
            case.add(N_REST, "rest", {"name": "llm"})
            case.add(N_REST_LINK, "link", {"name": "llm", "targetArns": [Ref("nlb")]})
            case.add(
                N_METHOD,
                "method",
                {
                    "restApiId": Ref("rest", "id"),
                    "resourceId": "abc",
                    "httpMethod": "POST",
                    "authorizationType": "AWS_IAM",
                    "integration": integration,
                },
            )
        else:
            case.add(A_REST, "rest", {"name": "llm"})
            case.add(
                A_REST_RESOURCE,
                "proxy",
                {"restApi": Ref("rest", "id"), "parentId": "root", "pathPart": "{proxy+}"},
            )
            case.add(A_REST_LINK, "link", {"name": "llm", "targetArns": [Ref("nlb")]})
            case.add(
                A_METHOD,
                "method",
                {
                    "restApi": Ref("rest", "id"),
                    "resourceId": Ref("proxy", "id"),
                    "httpMethod": "POST",
                    "authorization": "AWS_IAM",
                },
            )
            case.add(
                A_REST_INTEGRATION,
                "integration",
                {
                    "restApi": Ref("rest", "id"),
                    "resourceId": Ref("proxy", "id"),
                    "httpMethod": "POST",
                    **integration,
                },
            )
        yield case


def _cloudfront() -> Iterator[Case]:
    edge = "arn:aws:lambda:us-east-1:123456789012:function:edge-auth:3"
    variants = [
        ("lambda-edge-viewer-request", [("viewer-request", True)], None, set()),
        ("function-viewer-response-only", [("viewer-response", False)], None, {(PATH, "cdn")}),
        ("one-behavior-unguarded", [("viewer-request", False)], [], {(PATH, "cdn")}),
        ("function-viewer-request", [("viewer-request", False)], None, set()),
    ]
    for native in (False, True):
        p = "native" if native else "aws"
        t = types(native)
        for title, functions, ordered, expect in variants:
            case = Case(f"{p}-hunt-cloudfront-{title}", expect)
            case.add(t["SG"], "task-sg", sg_inputs(native))
            # An internal ALB forwarding without authentication, reached as a custom origin on
            # its DNS name: only the distribution can authenticate the route.
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
            behavior: dict[str, Any] = {
                "targetOriginId": "alb",
                "viewerProtocolPolicy": "https-only",
                "allowedMethods": ["GET", "HEAD", "POST"],
                "cachedMethods": ["GET", "HEAD"],
            }
            for event, lambda_edge in functions:
                if lambda_edge:
                    behavior["lambdaFunctionAssociations"] = [
                        {"eventType": event, "lambdaArn": edge}
                    ]
                else:
                    behavior["functionAssociations"] = [
                        {"eventType": event, "functionArn": "arn:aws:cloudfront::1:function/f"}
                    ]
            origin = {
                "originId": "alb",
                "domainName": Ref("alb", "dnsName"),
                "customOriginConfig": {
                    "httpPort": 80.0,
                    "httpsPort": 443.0,
                    "originProtocolPolicy": "https-only",
                    "originSslProtocols": ["TLSv1.2"],
                },
            }
            config: dict[str, Any] = {
                "enabled": True,
                "origins": [origin],
                "defaultCacheBehavior": behavior,
            }
            if ordered is not None:  # one more behavior, without the function
                plain = {k: v for k, v in behavior.items() if not k.endswith("Associations")}
                config["cacheBehaviors" if native else "orderedCacheBehaviors"] = [
                    {**plain, "pathPattern": "/open/*"}
                ]
            if native:
                case.add(N_CF, "cdn", {"distributionConfig": config})
            else:
                case.add(A_CF, "cdn", config)
            yield case


def _launches() -> Iterator[Case]:
    ecs_props = {
        "taskProperties": [
            {
                "containers": [
                    {
                        "name": "train",
                        "image": IMAGE_VLLM,
                        "resourceRequirements": [
                            {"type": "GPU", "value": "1"},
                            {"type": "VCPU", "value": "4"},
                            {"type": "MEMORY", "value": "16384"},
                        ],
                    }
                ]
            }
        ]
    }
    for native in (False, True):
        p = "native" if native else "aws"
        for platform, expect in (("FARGATE", {(HOST, "job")}), ("EC2", set())):
            yield Case(f"{p}-hunt-batch-ecs-properties-gpu-{platform.lower()}", expect).add(
                N_BATCH if native else A_BATCH,
                "job",
                {
                    "type": "container",
                    "platformCapabilities": [platform],
                    "ecsProperties": ecs_props if native else json.dumps(ecs_props),
                },
            )
    for launch, expect in (("FARGATE", {(GPU, "target")}), (None, set())):
        t = types(False)
        case = Case(f"aws-hunt-event-target-{'fargate' if launch else 'ec2-strategy'}", expect)
        case.add(t["TD"], "td", td_inputs(False, gpu=True, fargate=False))
        ecs: dict[str, Any] = {
            "taskDefinitionArn": Ref("td"),
            "networkConfiguration": {"subnets": ["subnet-a"]},
        }
        if launch:
            ecs["launchType"] = launch
        else:
            ecs["capacityProviderStrategies"] = [{"capacityProvider": "gpu-cp", "weight": 1.0}]
        case.add(
            A_EVENT_TARGET,
            "target",
            {
                "rule": "nightly",
                "arn": "arn:aws:ecs:us-east-1:123456789012:cluster/batch",
                "roleArn": "arn:aws:iam::1:role/r",
                "ecsTarget": ecs,
            },
        )
        yield case
    case = Case("native-hunt-events-rule-fargate-spot-strategy", {(GPU, "rule")})
    case.add(types(True)["TD"], "td", td_inputs(True, gpu=True, fargate=False))
    case.add(
        N_RULE_EVENTS,
        "rule",
        {
            "scheduleExpression": "rate(1 day)",
            "targets": [
                {
                    "id": "t",
                    "arn": "arn:aws:ecs:us-east-1:123456789012:cluster/batch",
                    "ecsParameters": {
                        "taskDefinitionArn": Ref("td"),
                        "capacityProviderStrategy": [
                            {"capacityProvider": "FARGATE_SPOT", "weight": 1.0}
                        ],
                    },
                }
            ],
        },
    )
    yield case


def _front_doors() -> Iterator[Case]:
    for native in (False, True):
        p = "native" if native else "aws"
        yield Case(f"{p}-hunt-app-runner-vllm-private", set()).add(
            N_APPRUNNER if native else A_APPRUNNER,
            "runner",
            {
                "sourceConfiguration": {
                    "imageRepository": {
                        "imageIdentifier": IMAGE_VLLM,
                        "imageRepositoryType": "ECR",
                        "imageConfiguration": {"port": "8000"},
                    }
                },
                "networkConfiguration": {
                    "ingressConfiguration": {"isPubliclyAccessible": False},
                    "egressConfiguration": {"egressType": "DEFAULT"},
                },
            },
        )
        case = Case(f"{p}-hunt-express-mixed-subnets", {(PATH, "express")})
        sub = N_SUBNET if native else A_SUBNET
        case.add(sub, "private-a", {"vpcId": "vpc-1", "cidrBlock": "10.0.1.0/24"})
        case.add(
            sub,
            "public-b",
            {"vpcId": "vpc-1", "cidrBlock": "10.0.2.0/24", "mapPublicIpOnLaunch": True},
        )
        net = {"subnets": [Ref("private-a", "id"), Ref("public-b", "id")]}
        block = {"image": IMAGE_VLLM, "containerPort": 8000.0}
        case.add(
            N_EXPRESS if native else A_EXPRESS,
            "express",
            {
                "executionRoleArn": "arn:aws:iam::1:role/e",
                "infrastructureRoleArn": "arn:aws:iam::1:role/i",
                "primaryContainer": block if native else [block],
                **({"networkConfiguration": net} if native else {"networkConfigurations": [net]}),
            },
        )
        yield case
    case = Case("native-hunt-launch-template-string-public-ip", {(SG, "lt-sg"), (PIP, "lt")})
    case.add(types(True)["SG"], "lt-sg", sg_inputs(True, ("tcp", 8080, 8080, ["0.0.0.0/0"])))
    case.add(
        N_LT,
        "lt",
        {
            "launchTemplateData": {
                "imageId": "ami-0123456789abcdef0",
                "instanceType": "g6e.xlarge",
                "networkInterfaces": [
                    {
                        "deviceIndex": 0.0,
                        "associatePublicIpAddress": "true",
                        "groups": [Ref("lt-sg", "id")],
                    }
                ],
            }
        },
    )
    yield case
    # An authenticated internet-facing ALB may be open to all of IPv6.
    t = types(False)
    case = alb_case(
        "aws-hunt-alb-jwt-open-ipv6",
        False,
        default_actions=[jwt(False), forward(False, "tg")],
        expect=set(),
    )
    case.resources[0] = (t["SG"], "alb-sg", sg_inputs(False, ("tcp", 443, 443, ["::/0"])))
    yield case


def _default_vpc_groups() -> Iterator[Case]:
    """Auto Scaling groups given availability zones only launch in the default VPC, whose
    subnets assign public IPs, unless the template turns them off."""
    for public, expect in (
        (None, {(SG, "lt-sg"), (PIP, "asg")}),
        ("false", {(SG, "lt-sg")}),
    ):
        title = "default" if public is None else "template-says-no"
        case = Case(f"aws-hunt-asg-availability-zones-only-{title}", expect)
        case.add(A_SG, "lt-sg", sg_inputs(False, ("tcp", 11434, 11434, ["0.0.0.0/0"])))
        lt: dict[str, Any] = {"imageId": "ami-0123456789abcdef0", "instanceType": "g5.xlarge"}
        if public is None:
            lt["vpcSecurityGroupIds"] = [Ref("lt-sg", "id")]
        else:
            lt["networkInterfaces"] = [
                {
                    "deviceIndex": 0.0,
                    "associatePublicIpAddress": public,
                    "securityGroups": [Ref("lt-sg", "id")],
                }
            ]
        case.add(A_LT, "lt", lt)
        case.add(
            A_ASG,
            "asg",
            {
                "maxSize": 2.0,
                "minSize": 1.0,
                "availabilityZones": ["us-east-1a", "us-east-1b"],
                "launchTemplate": {"id": Ref("lt", "id"), "version": "$Latest"},
            },
        )
        yield case


def _classic_to_service() -> Iterator[Case]:
    """A classic ELB in front of an ECS service (``loadBalancers[].elbName``): under scope
    model-serving the vLLM service behind it counts (see test_hunt_scope)."""
    case = Case("aws-hunt-classic-elb-to-ecs-service", {(PATH, "classic")})
    case.add(
        A_ELB,
        "classic",
        {
            "name": "llm-classic",
            "subnets": ["subnet-a"],
            "listeners": [
                {
                    "instancePort": 8000.0,
                    "instanceProtocol": "http",
                    "lbPort": 80.0,
                    "lbProtocol": "http",
                }
            ],
        },
    )
    case.add(A_TD, "td", td_inputs(False, gpu=True, fargate=False))
    svc = service_inputs(False, td="td", launch_type="EC2")
    svc["loadBalancers"] = [
        {"elbName": Ref("classic", "name"), "containerName": "model", "containerPort": 8000.0}
    ]
    svc.pop("networkConfiguration")
    case.add(A_SVC, "svc", svc)
    yield case


def cases() -> list[Case]:
    """Every hunting case."""
    return [
        *_sgs(),
        *_nlbs(),
        *_albs(),
        *_apis(),
        *_cloudfront(),
        *_launches(),
        *_front_doors(),
        *_default_vpc_groups(),
        *_classic_to_service(),
    ]
