"""LiteLLMGateway under mocks: the proxy's task, its private and public routes, its rules."""

from __future__ import annotations

import json
from typing import Any, cast

import pytest
from pulumi import Output

from ecs_inference.config.issues import ConfigError
from ecs_inference.contracts.litellm import HEALTH_PATH
from ecs_inference.contracts.litellm import PORT as GATEWAY_PORT
from ecs_inference.gateway.database import DatabaseOutputs
from ecs_inference.gateway.decisions import GatewayPlacement
from ecs_inference.gateway.input import GatewayConfig
from ecs_inference.gateway.litellm_config import ServiceTarget
from ecs_inference.gateway.service import (
    CONFIG_FILE,
    GatewayWiring,
    LiteLLMGateway,
    entrypoint,
    gateway_security_group,
)
from ecs_inference.services.service_connect import Namespace
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
IMAGE = "ghcr.io/berriai/litellm:main-v1.108.7"
TARGETS = {
    "llama": ServiceTarget("llama", "llama-3.1-8b", "llama.inference", 8000, 300),
    "qwen": ServiceTarget("qwen", "qwen", "qwen.inference", 8000, 900),
}


NAMESPACE = Namespace(
    "inference", "arn:aws:servicediscovery:us-east-1:123456789012:namespace/ns-0abc"
)


def gateway_input(database: bool = False, bedrock: bool = True) -> GatewayConfig:
    return GatewayConfig.model_validate(
        {
            "masterKeySecretArn": SECRET,
            "image": IMAGE,
            "bedrock": {"region": "us-east-1", "models": {"haiku": "amazon.nova-lite-v1:0"}}
            if bedrock
            else {},
            "database": {"enabled": True, "saltKeySecretArn": SALT} if database else {},
        }
    )


def program(database: bool = False, bedrock: bool = True, **overrides: Any):
    def run() -> None:
        sg = gateway_security_group("gw", vpc_id="vpc-0abc")
        settings: dict[str, Any] = {
            "placement": GatewayPlacement(TARGETS, priority=500),
            "database": DatabaseOutputs(
                Output.from_input("db.internal"),
                Output.from_input("cluster-ABCDEFGHIJKLMNOPQRSTUVWXYZ"),
                Output.from_input("sg-db"),
            )
            if database
            else None,
            "cluster_arn": CLUSTER_ARN,
            "vpc_id": "vpc-0abc",
            "subnet_ids": ["subnet-a", "subnet-b"],
            "security_group": sg,
            "alb_security_group_id": "sg-alb",
            "load_balancer_arn_suffix": LB_SUFFIX,
            "router": FakeRouter(),
            "service_connect_namespace": NAMESPACE,
            "service_security_groups": {"llama": "sg-llama", "qwen": "sg-qwen"},
        }
        settings.update(overrides)
        gw = LiteLLMGateway("gw", gateway_input(database, bedrock), GatewayWiring(**settings))
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


def test_the_database_is_wired_exactly_when_the_input_enables_it():
    """A program gets the errors a stack file gets, at their config paths."""

    def run() -> None:
        LiteLLMGateway(
            "gw",
            gateway_input(database=True),
            GatewayWiring(
                placement=GatewayPlacement(TARGETS),
                security_group=gateway_security_group("gw", vpc_id="vpc-0abc"),
                cluster_arn=CLUSTER_ARN,
                vpc_id="vpc-0abc",
                subnet_ids=["subnet-a"],
                alb_security_group_id="sg-alb",
                load_balancer_arn_suffix=LB_SUFFIX,
                router=cast(Any, FakeRouter()),
                service_connect_namespace=NAMESPACE,
            ),
        )

    with pytest.raises(ConfigError, match="exactly when") as info:
        run_function(run)
    assert [i.path for i in info.value.issues] == ["platform.gateway.database"]
