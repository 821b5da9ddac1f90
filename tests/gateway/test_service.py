"""LiteLLMGateway under mocks: the proxy's task, its private and public routes, its rules."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pulumi import Output

from ecs_inference.plan.gateway import bedrock_routes, resolve_routes
from ecs_inference.services.gateway import (
    CONFIG_FILE,
    LiteLLMGateway,
    LiteLLMGatewayArgs,
    ModelEndpoint,
    entrypoint,
    gateway_security_group,
)
from ecs_inference.services.gateway_db import DatabaseOutputs
from ecs_inference.specs.gateway import (
    GATEWAY_PORT,
    HEALTH_PATH,
    GatewaySpec,
    ServiceTarget,
)
from ecs_inference.specs.service_connect import Namespace
from tests.aws_shapes import (
    UNKNOWN,
    register_task_definition_request,
    validate_named_shape,
    validate_shape,
)
from tests.services.conftest import CLUSTER_ARN, LB_SUFFIX, FakeRouter
from tools.recording import ACCOUNT_ID, Recording, run_function

SECRET = f"arn:aws:secretsmanager:us-east-1:{ACCOUNT_ID}:secret:gw/master-AbCdEf"
SALT = f"arn:aws:secretsmanager:us-east-1:{ACCOUNT_ID}:secret:gw/salt-AbCdEf"
DB_CLUSTER = "arn:aws:rds:us-east-1:123456789012:cluster:gw"
DB_SECRET = f"arn:aws:secretsmanager:us-east-1:{ACCOUNT_ID}:secret:rds!cluster-1-AbCdEf"
IMAGE = "ghcr.io/berriai/litellm:main-v1.108.7"
TARGETS = {
    "llama": ServiceTarget("llama", "llama-3.1-8b", "llama.inference", 8000, 300),
    "qwen": ServiceTarget("qwen", "qwen", "qwen.inference", 8000, 900),
}


NAMESPACE = Namespace(
    "inference", "arn:aws:servicediscovery:us-east-1:123456789012:namespace/ns-0abc"
)


def spec(database: bool = False, bedrock: bool = True) -> GatewaySpec:
    routes, _ = resolve_routes(TARGETS)
    bed, _ = bedrock_routes({"haiku": "amazon.nova-lite-v1:0"} if bedrock else {}, "us-east-1")
    return GatewaySpec(routes=routes, bedrock=bed, database=database)


def program(database: bool = False, bedrock: bool = True, **overrides: Any):
    def run() -> None:
        s = spec(database, bedrock)
        sg = gateway_security_group("gw", vpc_id="vpc-0abc")
        settings: dict[str, Any] = {
            "litellm": s,
            "master_key_secret_arn": SECRET,
            "salt_key_secret_arn": SALT if database else None,
            "database": DatabaseOutputs(
                Output.from_input("db.internal"),
                5432,
                "litellm",
                Output.from_input(DB_SECRET),
                Output.from_input(DB_CLUSTER),
                Output.from_input("cluster-ABCDEFGHIJKLMNOPQRSTUVWXYZ"),
            )
            if database
            else None,
            "path": "gateway",
            "priority": 500,
            "image": IMAGE,
            "cpu": 1024,
            "memory_mib": 2048,
            "cluster_arn": CLUSTER_ARN,
            "vpc_id": "vpc-0abc",
            "subnet_ids": ["subnet-a", "subnet-b"],
            "security_group": sg,
            "alb_security_group_id": "sg-alb",
            "load_balancer_arn_suffix": LB_SUFFIX,
            "router": FakeRouter(),
            "service_connect_namespace": NAMESPACE,
            "models": {
                "llama": ModelEndpoint("sg-llama", 8000),
                "qwen": ModelEndpoint("sg-qwen", 8000),
            },
            "database_security_group_id": "sg-db" if database else None,
            "deregistration_delay_seconds": 930,
        }
        settings.update(overrides)
        gw = LiteLLMGateway("gw", LiteLLMGatewayArgs(**settings))
        gw.admit("worker-summarise", "sg-worker", "worker summarise")

    return run


@pytest.fixture(scope="module")
def rec() -> Recording:
    return run_function(program(), stack="dev")


def test_container_writes_the_generated_config_and_keeps_keys_secret(rec: Recording):
    task = rec.one("aws:ecs/taskDefinition:TaskDefinition").inputs
    validate_shape("ecs", "RegisterTaskDefinition", register_task_definition_request(task))
    assert task["runtimePlatform"]["cpuArchitecture"] == "ARM64"
    (container,) = json.loads(task["containerDefinitions"])
    assert container["entryPoint"] == entrypoint()
    assert CONFIG_FILE in container["entryPoint"][2]
    assert container["portMappings"] == [
        {"containerPort": GATEWAY_PORT, "protocol": "tcp", "name": "http", "appProtocol": "http"}
    ]
    env = {e["name"]: e["value"] for e in container["environment"]}
    assert "hosted_vllm/qwen" in env["LITELLM_CONFIG_YAML"]
    assert container["secrets"] == [{"name": "LITELLM_MASTER_KEY", "valueFrom": SECRET}]
    assert not any("secretsmanager" in v for v in env.values())


def test_service_connect_serves_workers_and_times_out_after_the_longest_route(rec: Recording):
    svc = rec.one("aws:ecs/service:Service").inputs
    sc = svc["serviceConnectConfiguration"]
    validate_named_shape(
        "ecs",
        "ServiceConnectConfiguration",
        {
            "enabled": sc["enabled"],
            "namespace": sc["namespace"],
            "services": [
                {
                    "portName": s["portName"],
                    "discoveryName": s["discoveryName"],
                    "clientAliases": [
                        {"port": int(a["port"]), "dnsName": a["dnsName"]} for a in s["clientAlias"]
                    ],
                    "timeout": {k: int(v) for k, v in s["timeout"].items()},
                }
                for s in sc["services"]
            ],
        },
    )
    (server,) = sc["services"]
    assert server["clientAlias"] == [{"port": 4000, "dnsName": "gateway.inference"}]
    # The longest route is Bedrock's default 600 s... or qwen's 900 s: the larger wins.
    assert server["timeout"]["perRequestTimeoutSeconds"] == 930
    assert svc["networkConfiguration"]["assignPublicIp"] is False
    tg = rec.one("aws:lb/targetGroup:TargetGroup").inputs
    assert tg["healthCheck"]["path"] == HEALTH_PATH and tg["targetType"] == "ip"


def test_security_group_rules_admit_the_alb_and_clients_and_reach_only_models(rec: Recording):
    ingress = rec.by_type("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule")
    assert sorted(r.inputs["referencedSecurityGroupId"] for r in ingress) == [
        "sg-alb",
        "sg-worker",
    ]
    assert {r.inputs["fromPort"] for r in ingress} == {GATEWAY_PORT}
    egress = rec.by_type("aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule")
    targets = sorted(
        (r.inputs.get("referencedSecurityGroupId") or r.inputs["cidrIpv4"], r.inputs["fromPort"])
        for r in egress
    )
    assert targets == [("0.0.0.0/0", 443), ("sg-llama", 8000), ("sg-qwen", 8000)]
    sg = rec.one("aws:ec2/securityGroup:SecurityGroup").inputs
    assert not sg.get("ingress") and not sg.get("egress")  # rules are standalone only
    for rule in ingress + egress:
        inputs = {k: v for k, v in rule.inputs.items() if v != UNKNOWN}
        validate_shape(
            "ec2",
            "AuthorizeSecurityGroupIngress",
            {
                "GroupId": "sg-0123456789abcdef0",
                "IpPermissions": [
                    {
                        "IpProtocol": inputs["ipProtocol"],
                        "FromPort": int(inputs["fromPort"]),
                        "ToPort": int(inputs["toPort"]),
                        **(
                            {"IpRanges": [{"CidrIp": inputs["cidrIpv4"]}]}
                            if "cidrIpv4" in inputs
                            else {
                                "UserIdGroupPairs": [
                                    {"GroupId": inputs["referencedSecurityGroupId"]}
                                ]
                            }
                        ),
                    }
                ],
            },
        )


def test_task_role_invokes_exactly_the_bedrock_models(rec: Recording):
    policy = json.loads(rec.one("aws:iam/rolePolicy:RolePolicy", "-bedrock").inputs["policy"])
    (statement,) = policy["Statement"]
    assert statement["Resource"] == [
        "arn:aws:bedrock:us-east-1::foundation-model/amazon.nova-lite-v1:0"
    ]


def test_without_bedrock_the_task_role_has_no_policy():
    rec = run_function(program(bedrock=False))
    assert [p.name for p in rec.by_type("aws:iam/rolePolicy:RolePolicy")] == ["gw-execution"]


def test_database_logs_in_with_iam_tokens_and_holds_no_master_grant():
    """Issue 24 item 5, issue 33 item 4: no password from the rotating RDS secret reaches the
    proxy, and the task that serves requests holds neither the master secret nor the Data API:
    one container, whose task role may only log in as LiteLLM's IAM user."""
    rec = run_function(program(database=True))
    (proxy,) = json.loads(
        rec.one("aws:ecs/taskDefinition:TaskDefinition").inputs["containerDefinitions"]
    )
    assert not any(s["name"].startswith("DATABASE_") for s in proxy["secrets"])
    assert "dependsOn" not in proxy
    execution = json.loads(rec.one("aws:iam/rolePolicy:RolePolicy", "-execution").inputs["policy"])
    (read,) = [s for s in execution["Statement"] if "secretsmanager:GetSecretValue" in s["Action"]]
    assert sorted(read["Resource"]) == sorted([SALT, SECRET])
    task = json.loads(rec.one("aws:iam/rolePolicy:RolePolicy", "-database").inputs["policy"])
    assert task["Statement"] == [
        {
            "Sid": "ConnectAsLiteLLM",
            "Effect": "Allow",
            "Action": "rds-db:connect",
            "Resource": "arn:aws:rds-db:us-east-1:123456789012:dbuser:"
            "cluster-ABCDEFGHIJKLMNOPQRSTUVWXYZ/litellm",
        }
    ]
    egress = rec.by_type("aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule")
    assert ("sg-db", 5432) in {
        (r.inputs.get("referencedSecurityGroupId"), r.inputs["fromPort"]) for r in egress
    }
