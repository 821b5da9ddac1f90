"""Corpus stacks for front doors in their other shapes, both providers, bad and good:

* REST APIs through a VPC link V1 (pulumi-aws ``targetArn``, aws-native ``targetArns``) to an
  internal NLB in front of an internal ALB: good when the ALB validates JWTs, bad when it only
  forwards; through a VPC link V2 (``integrationTarget``) straight to an internal ALB;
* APIs defined by an OpenAPI ``body`` (REST in Swagger 2, HTTP in OpenAPI 3): Lambda proxy
  operations with a Cognito / JWT authorizer (good), none, an API key only, or an anonymous
  alternative (bad); an HTTP API private integration to an internal ALB's listener;
* CloudFront to a Lambda function URL that proxies to an internal model: ``AWS_IAM`` with an
  origin access control (bad: CloudFront signs, nobody checks the viewer), ``NONE`` (bad, the
  URL too), ``AWS_IAM`` without one (good: CloudFront's unsigned requests are refused);
  CloudFront to an Elastic IP's public DNS name on a GPU instance (bad, good when signed); to
  a Route 53 record aliasing an internet-facing ALB (bad without authentication, good with it);
* public App Runner services and function URLs whose environment names an internal ALB that
  forwards to a model without authentication (bad);
* aws-native Step Functions ``definition`` objects whose task definition and launch type come
  from ``definitionSubstitutions`` (bad on Fargate, good on EC2);
* a service with neither launch type nor strategy on a cluster outside the stack: noted.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from tests.policy.corpus import (
    A_API,
    A_APPRUNNER,
    A_CF,
    A_FUNCTION,
    A_INSTANCE,
    A_METHOD,
    A_REST,
    A_REST_INTEGRATION,
    A_REST_LINK,
    A_REST_RESOURCE,
    A_URL,
    A_VPC_LINK,
    GPU,
    N_API,
    N_APPRUNNER,
    N_CF,
    N_FUNCTION,
    N_INSTANCE,
    N_METHOD,
    N_REST,
    N_REST_LINK,
    N_URL,
    N_VPC_LINK,
    PATH,
    SG,
    Case,
    Ref,
    alb_case,
    forward,
    jwt,
    nlb_to_alb_case,
    sg_inputs,
    types,
)
from tests.policy.corpus_fargate import _SHM_PATH, run_task_state, task
from tests.policy.corpus_reach import _internal_alb

A_OAC = "aws:cloudfront/originAccessControl:OriginAccessControl"
N_OAC = "aws-native:cloudfront:OriginAccessControl"
A_EIP = "aws:ec2/eip:Eip"
N_EIP = "aws-native:ec2:Eip"
A_RECORD = "aws:route53/record:Record"
N_RECORD = "aws-native:route53:RecordSet"
N_SFN = "aws-native:stepfunctions:StateMachine"
ROLE = "arn:aws:iam::123456789012:role/fn"
USER_POOL = "arn:aws:cognito-idp:us-east-1:123456789012:userpool/us-east-1_abc"


def _rest_method(case: Case, native: bool, integration: dict[str, Any]) -> None:
    """A REST API with one ANY method without authorizer and ``integration`` behind it."""
    if native:
        case.add(N_REST, "rest", {"name": "llm"})
        method = {
            "restApiId": Ref("rest", "id"),
            "resourceId": "abc",
            "httpMethod": "ANY",
            "authorizationType": "NONE",
            "integration": integration,
        }
        case.add(N_METHOD, "method", method)
        return
    case.add(A_REST, "rest", {"name": "llm"})
    case.add(
        A_REST_RESOURCE,
        "proxy",
        {"restApi": Ref("rest", "id"), "parentId": "root", "pathPart": "{proxy+}"},
    )
    where = {"restApi": Ref("rest", "id"), "resourceId": Ref("proxy", "id"), "httpMethod": "ANY"}
    case.add(A_METHOD, "method", {**where, "authorization": "NONE"})
    case.add(A_REST_INTEGRATION, "integration", {**where, **integration})


def _private_integration(**extra: Any) -> dict[str, Any]:
    return {
        "type": "HTTP_PROXY",
        "integrationHttpMethod": "ANY",
        "connectionType": "VPC_LINK",
        "uri": "https://models.internal/{proxy}",
        **extra,
    }


def _rest_link_cases(native: bool) -> Iterator[Case]:
    p = "native" if native else "aws"
    for auth, expect in (("jwt", set()), ("open", {(PATH, "method")})):
        actions = (
            [jwt(native), forward(native, "tg")] if auth == "jwt" else [forward(native, "tg", 1.0)]
        )
        case = nlb_to_alb_case(
            f"{p}-front-rest-v1-link-nlb-alb-{auth}",
            native,
            alb_actions=actions,
            expect=expect,
            public=False,
        )
        # pulumi-aws's link takes one NLB (targetArn), CloudFormation's a list (targetArns).
        link = {"targetArns": [Ref("nlb")]} if native else {"targetArn": Ref("nlb")}
        case.add(N_REST_LINK if native else A_REST_LINK, "link", {"name": "llm", **link})
        _rest_method(case, native, _private_integration(connectionId=Ref("link", "id")))
        yield case
        case = Case(f"{p}-front-rest-v2-link-alb-{auth}", expect)
        _internal_alb(case, native, actions)
        case.add(
            N_VPC_LINK if native else A_VPC_LINK,
            "link",
            {"name": "llm", "subnetIds": ["subnet-a"], "securityGroupIds": []},
        )
        integration = _private_integration(
            connectionId=Ref("link", "id"), integrationTarget=Ref("lb")
        )
        _rest_method(case, native, integration)
        yield case


def _function(case: Case, native: bool, name: str = "fn", **environment: Any) -> None:
    inputs: dict[str, Any] = {
        "functionName" if native else "name": f"{name}-proxy",
        "runtime": "python3.12",
        "handler": "app.handler",
        "role": ROLE,
    }
    if environment:
        inputs["environment"] = {"variables": environment}
    case.add(N_FUNCTION if native else A_FUNCTION, name, inputs)


def _invoke(native: bool, function: str) -> Any:
    """A Lambda proxy integration's URI: a reference (aws-native objects) or the literal
    invoke ARN (pulumi-aws bodies are text, written with the function's name)."""
    if native:
        return Ref(function)
    arn = f"arn:aws:lambda:us-east-1:123456789012:function:{function}-proxy"
    return f"arn:aws:apigateway:us-east-1:lambda:path/2015-03-31/functions/{arn}/invocations"


_SECURITY: dict[str, tuple[list[Any] | None, set[tuple[str, str]]]] = {
    "authorizer": ([{"auth": []}], set()),
    "open": (None, {(PATH, "api")}),
    "api-key-only": ([{"api_key": []}], {(PATH, "api")}),
    "anonymous-alternative": ([{"auth": []}, {}], {(PATH, "api")}),
}


def _schemes(http: bool) -> dict[str, Any]:
    authorizer: dict[str, Any] = (
        {
            "type": "oauth2",
            "x-amazon-apigateway-authorizer": {
                "type": "jwt",
                "identitySource": "$request.header.Authorization",
                "jwtConfiguration": {"issuer": "https://issuer.example.com", "audience": ["llm"]},
            },
        }
        if http
        else {
            "type": "apiKey",
            "name": "Authorization",
            "in": "header",
            "x-amazon-apigateway-authtype": "cognito_user_pools",
            "x-amazon-apigateway-authorizer": {
                "type": "cognito_user_pools",
                "providerARNs": [USER_POOL],
            },
        }
    )
    return {"auth": authorizer, "api_key": {"type": "apiKey", "name": "x-api-key", "in": "header"}}


def _document(http: bool, native: bool, operation: dict[str, Any]) -> dict[str, Any]:
    """Swagger 2 for REST, OpenAPI 3 for HTTP APIs."""
    paths = {"/v1/{proxy+}": {"x-amazon-apigateway-any-method": operation}}
    if http:
        return {
            "openapi": "3.0.1",
            "info": {"title": "llm", "version": "1"},
            "paths": paths,
            "components": {"securitySchemes": _schemes(http)},
        }
    return {
        "swagger": "2.0",
        "info": {"title": "llm", "version": "1"},
        "paths": paths,
        "securityDefinitions": _schemes(http),
    }


def _body_cases(native: bool) -> Iterator[Case]:
    p = "native" if native else "aws"
    for http in (False, True):
        kind = "http" if http else "rest"
        for variant, (security, expect) in _SECURITY.items():
            case = Case(f"{p}-front-{kind}-openapi-lambda-{variant}", expect)
            _function(case, native)
            operation: dict[str, Any] = {
                "x-amazon-apigateway-integration": {
                    "type": "aws_proxy",
                    "httpMethod": "POST",
                    "uri": _invoke(native, "fn"),
                    "payloadFormatVersion": "2.0" if http else "1.0",
                }
            }
            if security is not None:
                operation["security"] = security
            document = _document(http, native, operation)
            body = document if native else json.dumps(document)
            api_type = (N_API if native else A_API) if http else (N_REST if native else A_REST)
            inputs: dict[str, Any] = {"name": "llm", "body": body}
            if http:
                inputs["protocolType"] = "HTTP"
            case.add(api_type, "api", inputs)
            yield case
    for variant, (security, expect) in (
        ("jwt", _SECURITY["authorizer"]),
        ("open", _SECURITY["open"]),
    ):
        case = Case(f"{p}-front-http-openapi-vpc-link-alb-{variant}", expect)
        _internal_alb(case, native, [forward(native, "tg", 1.0)])
        operation = {
            "x-amazon-apigateway-integration": {
                "type": "http_proxy",
                "httpMethod": "ANY",
                "connectionType": "VPC_LINK",
                "connectionId": "vl-0a1b2c",
                "uri": Ref("lb-443") if native else f"{ELB}:listener/app/lb/50dc6c495c0c9188/1a2b",
                "payloadFormatVersion": "1.0",
            }
        }
        if security is not None:
            operation["security"] = security
        document = _document(True, native, operation)
        body = document if native else json.dumps(document)
        case.add(
            N_API if native else A_API, "api", {"name": "llm", "protocolType": "HTTP", "body": body}
        )
        yield case


ELB = "arn:aws:elasticloadbalancing:us-east-1:123456789012"


def _distribution(case: Case, native: bool, origin: dict[str, Any], signed: bool = False) -> None:
    behavior: dict[str, Any] = {
        "targetOriginId": origin["originId"],
        "viewerProtocolPolicy": "https-only",
        "allowedMethods": ["GET", "HEAD", "OPTIONS", "PUT", "POST", "PATCH", "DELETE"],
        "cachedMethods": ["GET", "HEAD"],
    }
    if signed:
        behavior["trustedKeyGroups"] = ["kg-123"]
    config = {"enabled": True, "origins": [origin], "defaultCacheBehavior": behavior}
    if native:
        case.add(N_CF, "cdn", {"distributionConfig": config})
        return
    extra = {
        "restrictions": {"geoRestriction": {"restrictionType": "none"}},
        "viewerCertificate": {"cloudfrontDefaultCertificate": True},
    }
    case.add(A_CF, "cdn", {**config, **extra})


def _custom(origin_id: str, domain: Any, **extra: Any) -> dict[str, Any]:
    return {
        "originId": origin_id,
        "domainName": domain,
        "customOriginConfig": {
            "httpPort": 80.0,
            "httpsPort": 443.0,
            "originProtocolPolicy": "https-only",
            "originSslProtocols": ["TLSv1.2"],
        },
        **extra,
    }


def _url(case: Case, native: bool, auth: str, function: str = "fn") -> None:
    if native:
        inputs = {"targetFunctionArn": Ref(function), "authType": auth}
    else:
        inputs = {"functionName": Ref(function, "name"), "authorizationType": auth}
    case.add(N_URL if native else A_URL, "url", inputs)


def _cloudfront_url_cases(native: bool) -> Iterator[Case]:
    p = "native" if native else "aws"
    variants = (
        ("oac", "AWS_IAM", True, {(PATH, "cdn")}),
        ("open", "NONE", False, {(PATH, "cdn"), (PATH, "url")}),
        ("iam-without-oac", "AWS_IAM", False, set()),
    )
    for name, auth, oac, expect in variants:
        case = Case(f"{p}-front-cloudfront-function-url-{name}", expect)
        _internal_alb(case, native, [forward(native, "tg", 1.0)])
        _function(case, native, MODEL_URL=Ref("lb", "dnsName"))
        _url(case, native, auth)
        extra: dict[str, Any] = {}
        if oac:
            control = {
                "name": "fn",
                "originAccessControlOriginType": "lambda",
                "signingBehavior": "always",
                "signingProtocol": "sigv4",
            }
            case.add(
                N_OAC if native else A_OAC,
                "oac",
                {"originAccessControlConfig": control} if native else control,
            )
            extra["originAccessControlId"] = Ref("oac", "id")
        _distribution(case, native, _custom("fn", Ref("url", "functionUrl"), **extra))
        yield case


def _cloudfront_address_cases(native: bool) -> Iterator[Case]:
    p = "native" if native else "aws"
    t = types(native)
    for signed, expect in ((False, {(PATH, "cdn")}), (True, set())):
        state = "signed" if signed else "open"
        case = Case(f"{p}-front-cloudfront-eip-gpu-instance-{state}", expect)
        case.add(t["SG"], "ec2-sg", sg_inputs(native, ("tcp", 443, 443, ["10.0.0.0/8"])))
        groups = {"securityGroupIds" if native else "vpcSecurityGroupIds": [Ref("ec2-sg", "id")]}
        case.add(
            N_INSTANCE if native else A_INSTANCE,
            "gpu",
            {
                "imageId": "ami-0abcdef1234567890",
                "instanceType": "g5.xlarge",
                "subnetId": "subnet-a",
                **groups,
            },
        )
        eip = (
            {"instanceId": Ref("gpu", "id")}
            if native
            else {"instance": Ref("gpu", "id"), "domain": "vpc"}
        )
        case.add(N_EIP if native else A_EIP, "ip", eip)
        address = Ref("ip", "publicIp" if native else "publicDns")
        _distribution(case, native, _custom("gpu", address), signed)
        yield case
        auth = "jwt" if signed else "open"
        actions = [jwt(native), forward(native, "tg")] if signed else [forward(native, "tg", 1.0)]
        bad = {(PATH, "cdn"), (PATH, "https"), (SG, "alb-sg")}
        case = alb_case(
            f"{p}-front-cloudfront-dns-record-alb-{auth}",
            native,
            expect=set() if signed else bad,
            default_actions=actions,
        )
        if native:
            record = {
                "hostedZoneId": "Z0123456789ABC",
                "name": "models.example.com.",
                "type": "A",
                "aliasTarget": {"dnsName": Ref("alb", "dnsName"), "hostedZoneId": "Z35SXDOTRQ7X7K"},
            }
        else:
            record = {
                "zoneId": "Z0123456789ABC",
                "name": "models.example.com",
                "type": "A",
                "aliases": [
                    {
                        "name": Ref("alb", "dnsName"),
                        "zoneId": "Z35SXDOTRQ7X7K",
                        "evaluateTargetHealth": False,
                    }
                ],
            }
        case.add(N_RECORD if native else A_RECORD, "dns", record)
        _distribution(case, native, _custom("alb", "models.example.com"))
        yield case


def _proxy_cases(native: bool) -> Iterator[Case]:
    p = "native" if native else "aws"
    case = Case(f"{p}-front-app-runner-proxy-to-internal-model", {(PATH, "runner")})
    _internal_alb(case, native, [forward(native, "tg", 1.0)])
    variables: Any = (
        [{"name": "MODEL_URL", "value": Ref("lb", "dnsName")}]
        if native
        else {"MODEL_URL": Ref("lb", "dnsName")}
    )
    image = {
        "imageIdentifier": "public.ecr.aws/nginx/nginx:1.27",
        "imageRepositoryType": "ECR_PUBLIC",
        "imageConfiguration": {"port": "3000", "runtimeEnvironmentVariables": variables},
    }
    egress = {
        "egressType": "VPC",
        "vpcConnectorArn": "arn:aws:apprunner:us-east-1:123456789012:vpcconnector/c/1/abc",
    }
    case.add(
        N_APPRUNNER if native else A_APPRUNNER,
        "runner",
        {
            "sourceConfiguration": {"imageRepository": image},
            "networkConfiguration": {"egressConfiguration": egress},
        },
    )
    yield case
    case = Case(f"{p}-front-function-url-proxy-to-internal-model", {(PATH, "url")})
    _internal_alb(case, native, [forward(native, "tg", 1.0)])
    _function(case, native, MODEL_URL=Ref("lb", "dnsName"))
    _url(case, native, "NONE")
    yield case


def _launch_cases() -> Iterator[Case]:
    for launch, expect in (("FARGATE", {(GPU, "sfn")}), ("EC2", set())):
        case = Case(f"native-front-sfn-object-substitutions-{launch.lower()}", expect)
        case.add(
            "aws-native:ecs:TaskDefinition",
            "td",
            task(True, fargate=None, family="worker", **_SHM_PATH),
        )
        state = run_task_state({"TaskDefinition": "${TaskDef}", "LaunchType": "${Launch}"})
        case.add(
            N_SFN,
            "sfn",
            {
                "roleArn": "arn:aws:iam::123456789012:role/sfn",
                "definition": {"StartAt": "Run", "States": {"Run": state}},
                "definitionSubstitutions": {"TaskDef": Ref("td"), "Launch": launch},
            },
        )
        yield case
    for native in (False, True):
        p = "native" if native else "aws"
        t = types(native)
        case = Case(
            f"{p}-front-service-on-a-cluster-outside-the-stack",
            set(),
            notes=("names no cluster of this stack",),
        )
        case.add(t["TD"], "td", task(native, fargate=None, family="worker", **_SHM_PATH))
        cluster = "arn:aws:ecs:us-east-1:123456789012:cluster/shared"
        case.add(
            t["SVC"], "svc", {"taskDefinition": Ref("td"), "cluster": cluster, "desiredCount": 1.0}
        )
        yield case


def _pipe_cases() -> Iterator[Case]:
    """A pipe whose task definition or launch type is a dynamic JSON path: filled from each
    event at run time, so the pack names the field instead of guessing."""
    for native in (False, True):
        p = "native" if native else "aws"
        t = types(native)
        for field, parameters in (
            ("task", {"taskDefinitionArn": "$.detail.taskDefinition", "launchType": "FARGATE"}),
            ("launch-type", {"taskDefinitionArn": Ref("td"), "launchType": "$.detail.launch"}),
        ):
            key = next(k for k, v in parameters.items() if isinstance(v, str) and v[:2] == "$.")
            case = Case(f"{p}-front-pipe-dynamic-{field}", set(), notes=(f"sets {key} = $.detail",))
            case.add(t["TD"], "td", task(native, fargate=None, family="worker", **_SHM_PATH))
            pipe = {
                "roleArn": "arn:aws:iam::123456789012:role/pipe",
                "source": "arn:aws:sqs:us-east-1:123456789012:jobs",
                "target": "arn:aws:ecs:us-east-1:123456789012:cluster/batch",
                "targetParameters": {"ecsTaskParameters": parameters},
            }
            case.add("aws-native:pipes:Pipe" if native else "aws:pipes/pipe:Pipe", "pipe", pipe)
            yield case


def cases() -> list[Case]:
    """Every case of this module."""
    found: list[Case] = []
    for native in (False, True):
        found += [
            *_rest_link_cases(native),
            *_body_cases(native),
            *_cloudfront_url_cases(native),
            *_cloudfront_address_cases(native),
            *_proxy_cases(native),
        ]
    return [*found, *_launch_cases(), *_pipe_cases()]
