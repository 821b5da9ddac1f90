"""The Endpoint component: its pure rules, and what it registers under the mock runtime.

Recorded inputs are what the Pulumi engine (and so a policy pack or `pulumi preview`) sees:
camelCase keys, numbers as floats. Listener actions and rules are also checked against the
ELBv2 CreateListener/CreateRule request shapes from botocore's API model, so a field AWS would
reject fails here rather than at `pulumi up`.
"""

from __future__ import annotations

import dataclasses
import json
import re
from typing import Any

import pulumi
import pytest
from pydantic import ValidationError

from ecs_inference.config.issues import ConfigError
from ecs_inference.config.load import issues_from_validation_error
from ecs_inference.endpoint.auth import cognito_token_url
from ecs_inference.endpoint.decisions import Routes
from ecs_inference.endpoint.input import AuthConfig, EndpointConfig
from ecs_inference.endpoint.routes import service_url_rewrite
from ecs_inference.endpoint.service import (
    ELB_LOG_DELIVERY_SERVICE,
    Endpoint,
    EndpointWiring,
    access_log_bucket_policy,
    security_group_rules,
)
from tests.aws_shapes import (
    ShapeError,
    create_listener_request,
    create_rule_request,
    create_user_pool_client_request,
    create_user_pool_request,
    validate_named_shape,
    validate_shape,
)
from tests.stack_config import issues_of, mutate, plan_of, reference
from tools.recording import RecordedResource, Recording, run_function

DOMAIN = "models.dev.example.internal"
VPC_CIDR = "10.40.0.0/16"
ACM_ARN = "arn:aws:acm:us-east-1:123456789012:certificate/0e1f2a3b-4c5d-6e7f-8091-a2b3c4d5e6f7"
TG_LLAMA = "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/llama/0123456789abcdef"
TG_RERANK = "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/rerank/fedcba987654"
EXISTING_POOL = "us-east-1_AbCdEf123"
PREFIX = "ecs-inference-test"
"""The Cognito prefix of a new pool without `domainPrefix`: `<project>-<stack>` of the mocks."""

ALB = "aws:lb/loadBalancer:LoadBalancer"
LISTENER = "aws:lb/listener:Listener"
RULE = "aws:lb/listenerRule:ListenerRule"
SG = "aws:ec2/securityGroup:SecurityGroup"
POOL = "aws:cognito/userPool:UserPool"
POOL_DOMAIN = "aws:cognito/userPoolDomain:UserPoolDomain"
CLIENT = "aws:cognito/userPoolClient:UserPoolClient"
RESOURCE_SERVER = "aws:cognito/resourceServer:ResourceServer"


WIRING = EndpointWiring(
    vpc_id="vpc-0123456789abcdef0",
    vpc_cidr=VPC_CIDR,
    subnet_ids=["subnet-0aaaaaaaaaaaaaaa1", "subnet-0bbbbbbbbbbbbbbb2"],
    routes=Routes(ports=(8000, 8080), longest_request_seconds=(900, 60)),
)
INPUT = {
    "domain_name": DOMAIN,
    "allowed_cidrs": ["10.0.0.0/8", "192.168.0.0/16"],
    "self_signed_certificate": True,
}
Args = tuple[EndpointConfig, EndpointWiring]


def make_args(**overrides: Any) -> Args:
    """The endpoint's input and wiring, each with the `overrides` of its own fields."""
    wired = {f.name for f in dataclasses.fields(EndpointWiring)}
    wiring = dataclasses.replace(WIRING, **{k: v for k, v in overrides.items() if k in wired})
    keys = {k: v for k, v in overrides.items() if k not in wired}
    return EndpointConfig.model_validate({**INPUT, **keys}), wiring


def run_endpoint(args: Args, routes: bool = True) -> Recording:
    """Register one Endpoint (plus two routes) and export the ids tests compare against."""

    def program() -> None:
        ep = Endpoint("ep", *args)
        if routes:
            ep.route("llama", target_group_arn=TG_LLAMA, priority=100)
            ep.route("rerank", target_group_arn=TG_RERANK, priority=110)
        pulumi.export("lbArn", ep.load_balancer.arn)
        pulumi.export("sgId", ep.security_group.id)
        pulumi.export("listenerArn", ep.https_listener.arn)
        pulumi.export("certificateArn", ep.certificate_arn)
        pulumi.export("userPoolId", ep.user_pool_id)
        pulumi.export("userPoolArn", ep.user_pool_arn)
        pulumi.export("browserClientId", ep.browser_client.id)
        pulumi.export("apiClientId", ep.api_client_id)
        pulumi.export("issuer", ep.issuer)
        pulumi.export("jwksUri", ep.jwks_uri)
        pulumi.export("tokenUrl", ep.token_url)
        pulumi.export("llamaUrl", ep.service_url("llama"))
        if ep.access_log_bucket is not None:
            pulumi.export("bucketId", ep.access_log_bucket.id)

    return run_function(program)


@pytest.fixture(scope="module")
def dev() -> Recording:
    return run_endpoint(make_args())


@pytest.fixture(scope="module")
def prod() -> Recording:
    return run_endpoint(
        make_args(
            certificate_arn=ACM_ARN,
            self_signed_certificate=False,
            auth=AuthConfig(
                existing_user_pool_id=EXISTING_POOL,
                existing_user_pool_domain="login.example.com",
                api_scopes=["invoke", "admin"],
                session_timeout_seconds=3600,
            ),
        )
    )


def rules(rec: Recording) -> list[RecordedResource]:
    return rec.by_type(RULE)


def actions_in_order(rule: RecordedResource) -> list[dict[str, Any]]:
    return sorted(rule.inputs["actions"], key=lambda a: a["order"])


def header_condition(rule: RecordedResource) -> dict[str, Any] | None:
    found = [c["httpHeader"] for c in rule.inputs["conditions"] if "httpHeader" in c]
    return found[0] if found else None


# --------------------------------------------------------------------------------------------
# plain-value validation: one clear issue per mistake, nothing registered
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "value", "words"),
    [
        ("certificateArn", ACM_ARN, "exactly one"),
        ("selfSignedCertificate", False, "exactly one"),
        ("domainName", "Models.Example", "DNS name"),
        ("allowedCidrs", [], "at least 1"),
        ("allowedCidrs", ["10.0.0.0/33"], "not a CIDR"),
        ("allowedCidrs", ["0.0.0.0/0"], "whole internet"),
        ("allowedCidrs", ["::/0"], "whole internet"),
        ("sslPolicy", "ELBSecurityPolicy-TLS-1-2-2017-01", "TLS 1.3"),
        ("accessLogRetentionDays", 0, "must be >= 1"),
        ("idleTimeoutSeconds", 0, "must be >= 1"),
        ("auth.existingUserPoolId", EXISTING_POOL, "together"),
        ("auth.existingUserPoolId", "pool", "not a user pool id"),
        ("auth.domainPrefix", "-bad", "'-'"),
        ("auth.domainPrefix", "my-cognito-login", "reserved"),
        ("auth.apiScopes", [], "at least 1"),
        ("auth.apiScopes", ["a b"], "lowercase"),
        ("auth.apiScopes", ["x1", "x1"], "twice"),
        ("auth.sessionTimeoutSeconds", 0, "must be >= 60"),
        ("auth.accessTokenValidityMinutes", 4, "must be >= 5"),
    ],
)
def test_a_program_gets_the_stack_files_issue_at_the_same_key(
    key: str, value: Any, words: str
) -> None:
    """Each mistake is one issue, at its key (or the section, for a rule across keys), with the
    same message whether a stack file or a program (`EndpointConfig` built by hand) writes it:
    the input is the one place it is checked."""
    [stack] = issues_of(mutate(reference("dev"), f"endpoint.{key}", value), "dev")
    raw = mutate(reference("dev")["endpoint"], key, value)
    with pytest.raises(ValidationError) as info:
        EndpointConfig.model_validate(raw)
    [program] = issues_from_validation_error(info.value)
    at = program.path.replace("platform", "platform.endpoint", 1)
    assert (stack.path, stack.message) == (at, program.message)
    assert words in stack.message, stack.message


def test_internet_facing_endpoint_may_admit_the_internet() -> None:
    make_args(internet_facing=True, allowed_cidrs=["0.0.0.0/0"])


def test_an_override_shorter_than_the_longest_request_fails_before_anything_registers() -> None:
    """As the stack file's `idleTimeoutSeconds` does, at its key, with its message."""
    [stack] = issues_of(mutate(reference("dev"), "endpoint.idleTimeoutSeconds", 200), "dev")
    routes = plan_of(reference("dev"), "dev").endpoint
    with pytest.raises(ConfigError) as info:
        Endpoint("ep", *make_args(idle_timeout_seconds=200, routes=routes))
    assert [(i.path, i.message) for i in info.value.issues] == [(stack.path, stack.message)]


# --------------------------------------------------------------------------------------------
# pure helpers
# --------------------------------------------------------------------------------------------


def test_security_group_rules_split_ip_versions_and_scope_egress() -> None:
    ingress, egress = security_group_rules(("10.0.0.0/8", "fd00::/8"), VPC_CIDR, (8000, 8000, 80))
    assert [(r["from_port"], r["to_port"]) for r in ingress] == [(443, 443), (80, 80)]
    for rule in ingress:
        assert rule["cidr_blocks"] == ["10.0.0.0/8"]
        assert rule["ipv6_cidr_blocks"] == ["fd00::/8"]
    assert [(r["from_port"], r["cidr_blocks"]) for r in egress] == [
        (443, ["0.0.0.0/0"]),
        (80, [VPC_CIDR]),
        (8000, [VPC_CIDR]),
    ]


@pytest.mark.parametrize(
    ("path", "rewritten"),
    [
        ("/llama/v1/chat/completions", "/v1/chat/completions"),
        ("/llama/v1/models?limit=1", "/v1/models?limit=1"),
        ("/llama/", "/"),
        ("/llama", "/"),
        ("/llama/health", "/health"),
    ],
)
def test_url_rewrite_strips_the_service_prefix(path: str, rewritten: str) -> None:
    regex, replace = service_url_rewrite("llama")
    # ALB writes capture groups as $1; Python as \1.
    assert re.sub(regex, replace.replace("$1", r"\1"), path) == rewritten


def test_access_log_policy_grants_log_delivery_and_denies_plaintext() -> None:
    arn = "arn:aws:s3:::logs"
    legacy = access_log_bucket_policy(arn, "123456789012", "us-east-1")
    principals = [s["Principal"] for s in legacy["Statement"] if s["Effect"] == "Allow"]
    assert principals == [
        {"Service": ELB_LOG_DELIVERY_SERVICE},
        {"AWS": "arn:aws:iam::127311923021:root"},
    ]
    for statement in legacy["Statement"]:
        if statement["Effect"] == "Allow":
            assert statement["Action"] == "s3:PutObject"
            assert statement["Resource"] == f"{arn}/alb/AWSLogs/123456789012/*"
    deny = [s for s in legacy["Statement"] if s["Effect"] == "Deny"]
    assert deny == [
        {
            "Sid": "DenyInsecureTransport",
            "Effect": "Deny",
            "Principal": "*",
            "Action": "s3:*",
            "Resource": [arn, f"{arn}/*"],
            "Condition": {"Bool": {"aws:SecureTransport": "false"}},
        }
    ]
    # A region opened after August 2022 has no ELB account: only the service principal.
    newer = access_log_bucket_policy(arn, "123456789012", "ap-southeast-5")
    allows = [s["Principal"] for s in newer["Statement"] if s["Effect"] == "Allow"]
    assert allows == [{"Service": ELB_LOG_DELIVERY_SERVICE}]
    gov = access_log_bucket_policy("arn:aws-us-gov:s3:::l", "1", "us-gov-west-1")
    assert {"AWS": "arn:aws-us-gov:iam::048591011584:root"} in [
        s["Principal"] for s in gov["Statement"]
    ]


def test_token_url_for_prefix_and_custom_domains() -> None:
    assert (
        cognito_token_url("ecs-inference-dev", "eu-west-1")
        == "https://ecs-inference-dev.auth.eu-west-1.amazoncognito.com/oauth2/token"
    )
    assert cognito_token_url("login.example.com", "eu-west-1") == (
        "https://login.example.com/oauth2/token"
    )


# --------------------------------------------------------------------------------------------
# the load balancer, its security group and listeners
# --------------------------------------------------------------------------------------------


def test_every_child_is_parented_to_the_component(dev: Recording) -> None:
    component = dev.one("ecs-inference:ingress:Endpoint")
    children = [r for r in dev.resources if r is not component]
    assert children
    assert all(r.parent == component.urn for r in children)
    assert all(r.name.startswith("ep-") for r in children)


def test_alb_is_internal_with_derived_idle_timeout_and_logs(dev: Recording) -> None:
    alb = dev.one(ALB).inputs
    assert alb["loadBalancerType"] == "application"
    assert alb["internal"] is True
    assert alb["subnets"] == ["subnet-0aaaaaaaaaaaaaaa1", "subnet-0bbbbbbbbbbbbbbb2"]
    assert alb["idleTimeout"] == 930.0
    assert alb["dropInvalidHeaderFields"] is True
    assert alb["securityGroups"] == [dev.outputs["sgId"]]
    assert alb["accessLogs"] == {
        "enabled": True,
        "bucket": dev.outputs["bucketId"],
        "prefix": "alb",
    }
    # ELB tests write access when logging is switched on: the policy must exist first.
    policy = dev.one("aws:s3/bucketPolicy:BucketPolicy")
    assert policy.urn in dev.one(ALB).dependencies


def test_wires_to_the_network_component() -> None:
    from ecs_inference.network.input import NetworkConfig
    from ecs_inference.network.vpc import Network

    def program() -> None:
        net = Network("net", NetworkConfig())
        Endpoint(
            "ep",
            *make_args(
                vpc_id=net.vpc_id, subnet_ids=net.private_subnet_ids, vpc_cidr=net.cidr_block
            ),
        )
        pulumi.export("private", net.private_subnet_ids)
        pulumi.export("public", net.public_subnet_ids)

    rec = run_function(program)
    vpc = rec.one("awsx:ec2:Vpc")
    alb = rec.one(ALB).inputs
    assert alb["subnets"] == rec.outputs["private"]
    assert not set(alb["subnets"]) & set(rec.outputs["public"])
    assert rec.one(SG, "ep-alb-sg").inputs["vpcId"].startswith("vpc-")
    assert vpc.urn in rec.one(ALB).dependencies


def test_internet_facing_flag_sets_the_scheme() -> None:
    rec = run_endpoint(make_args(internet_facing=True), routes=False)
    assert rec.one(ALB).inputs["internal"] is False


def test_security_group_admits_only_client_networks(dev: Recording) -> None:
    sg = dev.one(SG).inputs
    assert sg["vpcId"] == "vpc-0123456789abcdef0"
    ingress = sg["ingress"]
    assert sorted((r["fromPort"], r["toPort"], r["protocol"]) for r in ingress) == [
        (80.0, 80.0, "tcp"),
        (443.0, 443.0, "tcp"),
    ]
    for rule in ingress:
        assert rule["cidrBlocks"] == ["10.0.0.0/8", "192.168.0.0/16"]
        assert not rule.get("ipv6CidrBlocks")
        assert not rule.get("securityGroups") and not rule.get("self")
    egress = sorted((r["fromPort"], r["toPort"], tuple(r["cidrBlocks"])) for r in sg["egress"])
    assert egress == [
        (443.0, 443.0, ("0.0.0.0/0",)),
        (8000.0, 8000.0, (VPC_CIDR,)),
        (8080.0, 8080.0, (VPC_CIDR,)),
    ]
    assert all(r["protocol"] == "tcp" for r in sg["egress"])


def test_https_listener_uses_tls13_and_404s_by_default(dev: Recording) -> None:
    https = dev.one(LISTENER, "-https").inputs
    assert (https["port"], https["protocol"]) == (443.0, "HTTPS")
    assert https["sslPolicy"] == "ELBSecurityPolicy-TLS13-1-2-2021-06"
    assert https["certificateArn"] == dev.outputs["certificateArn"]
    assert https["loadBalancerArn"] == dev.outputs["lbArn"]
    (default,) = https["defaultActions"]
    assert default["type"] == "fixed-response"
    assert default["fixedResponse"]["statusCode"] == "404"
    assert "targetGroupArn" not in default and "forward" not in default


def test_http_listener_only_redirects(dev: Recording) -> None:
    http = dev.one(LISTENER, "-http").inputs
    assert (http["port"], http["protocol"]) == (80.0, "HTTP")
    assert http["defaultActions"] == [
        {
            "type": "redirect",
            "redirect": {"protocol": "HTTPS", "port": "443", "statusCode": "HTTP_301"},
        }
    ]
    assert not [r for r in rules(dev) if r.inputs["listenerArn"] != dev.outputs["listenerArn"]]


# --------------------------------------------------------------------------------------------
# routing: authenticate before forwarding, always
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_every_rule_authenticates_before_it_forwards(stack: str, request: Any) -> None:
    rec: Recording = request.getfixturevalue(stack)
    found = rules(rec)
    assert len(found) == 4
    for rule in found:
        kinds = [a["type"] for a in actions_in_order(rule)]
        header = header_condition(rule)
        if header is not None:
            assert header == {"httpHeaderName": "Authorization", "values": ["Bearer *"]}
            assert kinds == ["jwt-validation", "forward"], rule.name
        else:
            assert kinds == ["authenticate-cognito", "forward"], rule.name


def test_routes_match_the_service_prefix_and_rewrite_it(dev: Recording) -> None:
    by_name = {r.name: r.inputs for r in rules(dev)}
    expected = {
        "ep-llama-bearer": (100.0, "llama", TG_LLAMA),
        "ep-llama-browser": (101.0, "llama", TG_LLAMA),
        "ep-rerank-bearer": (110.0, "rerank", TG_RERANK),
        "ep-rerank-browser": (111.0, "rerank", TG_RERANK),
    }
    assert set(by_name) == set(expected)
    for name, (priority, service, target) in expected.items():
        rule = by_name[name]
        assert rule["priority"] == priority
        paths = [c["pathPattern"]["values"] for c in rule["conditions"] if "pathPattern" in c]
        assert paths == [[f"/{service}", f"/{service}/*"]]
        assert rule["transforms"] == [
            {
                "type": "url-rewrite",
                "urlRewriteConfig": {"rewrite": {"regex": f"^/{service}/?(.*)$", "replace": "/$1"}},
            }
        ]
        assert rule["actions"][-1] == {"type": "forward", "order": 2.0, "targetGroupArn": target}


def test_bearer_rule_validates_tokens_of_the_pool(dev: Recording) -> None:
    pool_id = dev.outputs["userPoolId"]
    issuer = f"https://cognito-idp.us-east-1.amazonaws.com/{pool_id}"
    assert dev.outputs["issuer"] == issuer
    jwt = actions_in_order(dev.one(RULE, "llama-bearer"))[0]["jwtValidation"]
    assert jwt["issuer"] == issuer
    assert jwt["jwksEndpoint"] == f"{issuer}/.well-known/jwks.json"
    claims = {c["name"]: c for c in jwt["additionalClaims"]}
    assert claims["scope"] == {
        "name": "scope",
        "format": "space-separated-values",
        "values": [f"https://{DOMAIN}/invoke"],
    }
    assert claims["token_use"]["values"] == ["access"]


def test_browser_rule_signs_in_with_the_browser_client(dev: Recording) -> None:
    cognito = actions_in_order(dev.one(RULE, "llama-browser"))[0]["authenticateCognito"]
    assert cognito == {
        "userPoolArn": dev.outputs["userPoolArn"],
        "userPoolClientId": dev.outputs["browserClientId"],
        "userPoolDomain": PREFIX,
        "scope": "openid",
        "sessionTimeout": 28800.0,
        "onUnauthenticatedRequest": "authenticate",
    }
    # The rule waits for the client and the hosted domain it names.
    client = dev.one(CLIENT, "-browser")
    domain = dev.one(POOL_DOMAIN)
    assert {client.urn, domain.urn} <= set(dev.one(RULE, "llama-browser").dependencies)


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_listeners_and_rules_match_the_elbv2_api(stack: str, request: Any) -> None:
    rec: Recording = request.getfixturevalue(stack)
    for listener in rec.by_type(LISTENER):
        validate_shape("elbv2", "CreateListener", create_listener_request(listener.inputs))
    for rule in rules(rec):
        api = validate_shape("elbv2", "CreateRule", create_rule_request(rule.inputs))
        assert api["Transforms"][0]["UrlRewriteConfig"]["Rewrites"][0]["Replace"] == "/$1"


def test_route_rejects_conflicts_and_bad_names() -> None:
    errors: list[str] = []

    def program() -> None:
        ep = Endpoint("ep", *make_args())
        ep.route("llama", target_group_arn=TG_LLAMA, priority=10)
        for kwargs in (
            {"service": "llama", "priority": 20},  # same service twice
            {"service": "other", "priority": 11},  # overlaps 10/11
            {"service": "other", "priority": 9},  # overlaps 10/11
            {"service": "other", "priority": 50_000},  # needs 50001
            {"service": "other", "priority": 0},
            {"service": "Bad_Name", "priority": 30},
        ):
            try:
                ep.route(kwargs["service"], target_group_arn=TG_LLAMA, priority=kwargs["priority"])
            except ValueError as exc:
                errors.append(str(exc))

    rec = run_function(program)
    assert len(errors) == 6, errors
    assert "already defined" in errors[0]
    assert "overlap" in errors[1] and "overlap" in errors[2]
    assert "1-49999" in errors[3] and "1-49999" in errors[4]
    assert "lowercase" in errors[5]
    assert len(rec.by_type(RULE)) == 2


def test_route_opts_can_reparent_the_rules() -> None:
    def program() -> None:
        ep = Endpoint("ep", *make_args())
        owner = pulumi.ComponentResource("test:index:Owner", "owner")
        ep.route(
            "llama",
            target_group_arn=TG_LLAMA,
            priority=1,
            opts=pulumi.ResourceOptions(parent=owner),
        )

    rec = run_function(program)
    owner = rec.one("test:index:Owner")
    assert {r.parent for r in rec.by_type(RULE)} == {owner.urn}


def test_outputs_for_api_callers(dev: Recording, prod: Recording) -> None:
    assert dev.outputs["llamaUrl"] == f"https://{DOMAIN}/llama/"
    assert dev.outputs["tokenUrl"] == (
        f"https://{PREFIX}.auth.us-east-1.amazoncognito.com/oauth2/token"
    )
    assert prod.outputs["tokenUrl"] == "https://login.example.com/oauth2/token"
    assert dev.outputs["apiClientId"]


# --------------------------------------------------------------------------------------------
# certificate
# --------------------------------------------------------------------------------------------


def test_self_signed_certificate_is_imported_into_acm(dev: Recording) -> None:
    key = dev.one("tls:index/privateKey:PrivateKey").inputs
    assert key["algorithm"] == "RSA" and key["rsaBits"] == 2048.0
    cert = dev.one("tls:index/selfSignedCert:SelfSignedCert").inputs
    assert cert["dnsNames"] == [DOMAIN]
    assert cert["subject"]["commonName"] == DOMAIN
    assert "server_auth" in cert["allowedUses"]
    acm = dev.one("aws:acm/certificate:Certificate").inputs
    assert "BEGIN CERTIFICATE" in acm["certificateBody"]
    assert "BEGIN PRIVATE KEY" in acm["privateKey"]
    assert dev.outputs["certificateArn"].startswith("arn:aws:acm:")


def test_acm_certificate_arn_is_used_as_given(prod: Recording) -> None:
    assert not prod.by_type("tls:index/privateKey:PrivateKey")
    assert not prod.by_type("tls:index/selfSignedCert:SelfSignedCert")
    assert not prod.by_type("aws:acm/certificate:Certificate")
    assert prod.one(LISTENER, "-https").inputs["certificateArn"] == ACM_ARN


# --------------------------------------------------------------------------------------------
# Cognito
# --------------------------------------------------------------------------------------------


def test_new_user_pool_is_locked_down(dev: Recording) -> None:
    pool = dev.one(POOL).inputs
    assert pool["deletionProtection"] == "ACTIVE"
    assert pool["adminCreateUserConfig"]["allowAdminCreateUserOnly"] is True
    assert pool["mfaConfiguration"] == "OPTIONAL"
    assert pool["softwareTokenMfaConfiguration"] == {"enabled": True}
    policy = pool["passwordPolicy"]
    assert policy["minimumLength"] >= 12
    assert all(
        policy[k]
        for k in ("requireLowercase", "requireUppercase", "requireNumbers", "requireSymbols")
    )
    domain = dev.one(POOL_DOMAIN).inputs
    assert domain == {"domain": PREFIX, "userPoolId": dev.outputs["userPoolId"]}


def test_browser_client_uses_the_code_grant_and_alb_callback(dev: Recording) -> None:
    client = dev.one(CLIENT, "-browser").inputs
    assert client["allowedOauthFlows"] == ["code"]
    assert client["allowedOauthFlowsUserPoolClient"] is True
    assert client["allowedOauthScopes"] == ["openid"]
    assert client["callbackUrls"] == [f"https://{DOMAIN}/oauth2/idpresponse"]
    assert client["generateSecret"] is True
    assert client["supportedIdentityProviders"] == ["COGNITO"]
    # Refresh tokens (days) outlive the ALB session (8 h by default) so it is never cut short.
    assert client["refreshTokenValidity"] == 1.0
    assert client["tokenValidityUnits"]["refreshToken"] == "days"


def test_api_client_uses_client_credentials_with_resource_server_scopes(dev: Recording) -> None:
    server = dev.one(RESOURCE_SERVER)
    assert server.inputs["identifier"] == f"https://{DOMAIN}"
    assert server.inputs["scopes"] == [
        {"scopeName": "invoke", "scopeDescription": "invoke the inference services"}
    ]
    client = dev.one(CLIENT, "-api-client")
    assert client.inputs["allowedOauthFlows"] == ["client_credentials"]
    assert client.inputs["allowedOauthScopes"] == [f"https://{DOMAIN}/invoke"]
    assert client.inputs["generateSecret"] is True
    assert client.inputs["accessTokenValidity"] == 60.0
    assert client.inputs["tokenValidityUnits"]["accessToken"] == "minutes"
    assert server.urn in client.dependencies


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_cognito_requests_match_the_cognito_api(stack: str, request: Any) -> None:
    rec: Recording = request.getfixturevalue(stack)
    for pool in rec.by_type(POOL):
        validate_shape("cognito-idp", "CreateUserPool", create_user_pool_request(pool.inputs))
    for domain in rec.by_type(POOL_DOMAIN):
        validate_shape("cognito-idp", "CreateUserPoolDomain", domain.inputs)
    validate_shape("cognito-idp", "CreateResourceServer", rec.one(RESOURCE_SERVER).inputs)
    clients = rec.by_type(CLIENT)
    assert len(clients) == 2
    for client in clients:
        api = validate_shape(
            "cognito-idp", "CreateUserPoolClient", create_user_pool_client_request(client.inputs)
        )
        assert api["TokenValidityUnits"]["AccessToken"] == "minutes"


def test_existing_user_pool_creates_no_pool(prod: Recording) -> None:
    assert not prod.by_type(POOL)
    assert not prod.by_type(POOL_DOMAIN)
    for resource in (*prod.by_type(CLIENT), prod.one(RESOURCE_SERVER)):
        assert resource.inputs["userPoolId"] == EXISTING_POOL
    assert prod.one(CLIENT, "-api-client").inputs["allowedOauthScopes"] == [
        f"https://{DOMAIN}/invoke",
        f"https://{DOMAIN}/admin",
    ]
    cognito = actions_in_order(prod.one(RULE, "llama-browser"))[0]["authenticateCognito"]
    assert cognito["userPoolArn"] == (
        f"arn:aws:cognito-idp:us-east-1:123456789012:userpool/{EXISTING_POOL}"
    )
    assert cognito["userPoolDomain"] == "login.example.com"
    assert cognito["sessionTimeout"] == 3600.0
    jwt = actions_in_order(prod.one(RULE, "llama-bearer"))[0]["jwtValidation"]
    assert jwt["issuer"] == f"https://cognito-idp.us-east-1.amazonaws.com/{EXISTING_POOL}"


# --------------------------------------------------------------------------------------------
# access logs
# --------------------------------------------------------------------------------------------


def test_access_log_bucket_is_encrypted_private_tls_only_and_expires(dev: Recording) -> None:
    bucket_id = dev.outputs["bucketId"]
    sse = dev.one(
        "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration"
    )
    assert sse.inputs["bucket"] == bucket_id
    # ALB log delivery supports SSE-S3 only.
    assert sse.inputs["rules"][0]["applyServerSideEncryptionByDefault"] == {
        "sseAlgorithm": "AES256"
    }
    block = dev.one("aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock").inputs
    assert block == {
        "bucket": bucket_id,
        "blockPublicAcls": True,
        "blockPublicPolicy": True,
        "ignorePublicAcls": True,
        "restrictPublicBuckets": True,
    }
    (rule,) = dev.one("aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration").inputs[
        "rules"
    ]
    assert rule["status"] == "Enabled"
    assert rule["expiration"]["days"] == 90.0
    assert rule["filter"]["prefix"] == "alb/"
    ownership = dev.one("aws:s3/bucketOwnershipControls:BucketOwnershipControls").inputs
    assert ownership["rule"] == {"objectOwnership": "BucketOwnerEnforced"}
    policy = json.loads(dev.one("aws:s3/bucketPolicy:BucketPolicy").inputs["policy"])
    sids = [s["Sid"] for s in policy["Statement"]]
    assert sids == ["ElbLogDelivery", "ElbLogDeliveryRegionalAccount", "DenyInsecureTransport"]
    validate_named_shape(
        "s3",
        "ServerSideEncryptionRule",
        {"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}},
    )


def test_access_logs_can_be_switched_off() -> None:
    rec = run_endpoint(make_args(access_logs=False), routes=False)
    assert not rec.by_type("aws:s3/bucket:Bucket")
    assert not rec.by_type("aws:s3/bucketPolicy:BucketPolicy")
    assert "accessLogs" not in rec.one(ALB).inputs


# --------------------------------------------------------------------------------------------
# the shape checker itself can fail
# --------------------------------------------------------------------------------------------


def test_shape_checker_rejects_what_aws_would_reject(dev: Recording) -> None:
    rule = create_rule_request(dev.one(RULE, "llama-bearer").inputs)
    broken_claim = json.loads(json.dumps(rule))
    broken_claim["Actions"][0]["JwtValidationConfig"]["AdditionalClaims"][0]["Format"] = "csv"
    with pytest.raises(ShapeError, match="not one of"):
        validate_shape("elbv2", "CreateRule", broken_claim)
    missing_issuer = json.loads(json.dumps(rule))
    del missing_issuer["Actions"][0]["JwtValidationConfig"]["Issuer"]
    with pytest.raises(ShapeError, match="Missing required parameter"):
        validate_shape("elbv2", "CreateRule", missing_issuer)
    with pytest.raises(ShapeError, match="exceeds the maximum"):
        validate_shape("elbv2", "CreateRule", {**rule, "Priority": 50_001})
    with pytest.raises(ShapeError, match="Unknown parameter"):
        validate_shape("elbv2", "CreateRule", {**rule, "Transform": []})
    listener = create_listener_request(dev.one(LISTENER, "-https").inputs)
    listener["DefaultActions"][0]["FixedResponseConfig"]["StatusCode"] = "302"
    with pytest.raises(ShapeError, match="does not match"):
        validate_shape("elbv2", "CreateListener", listener)


def test_shape_checker_normalises_pulumi_spelling_for_ecs() -> None:
    # Pulumi's sizeInGib vs the API's sizeInGiB; floats from the recorder become ints.
    api = validate_shape(
        "ecs",
        "RegisterTaskDefinition",
        {
            "family": "f",
            "containerDefinitions": [{"name": "c", "image": "i:1", "memory": 512.0}],
            "ephemeralStorage": {"sizeInGib": 30.0},
        },
    )
    assert api["ephemeralStorage"] == {"sizeInGiB": 30}
    assert api["containerDefinitions"][0]["memory"] == 512
    with pytest.raises(ShapeError, match="Invalid type"):
        validate_named_shape("ecs", "ContainerDefinition", {"name": "c", "memory": 1.5})
