"""FargateReranker: its decisions and checks (the same as a stack file's), the container
definition per the image contract, and the component under mocks (Fargate task definition
checked against botocore's RegisterTaskDefinition)."""

from __future__ import annotations

import json
from typing import Any

import pulumi_aws as aws
import pytest
from pydantic import ValidationError

from ecs_inference.config.issues import ConfigError
from ecs_inference.contracts import reranker as contract
from ecs_inference.models.decisions import Placement, StackFacts
from ecs_inference.rerankers.decisions import (
    GRACE_SECONDS,
    STOP_TIMEOUT_SECONDS,
    decide_reranker,
    reranker_environment,
)
from ecs_inference.rerankers.input import RerankerConfig
from ecs_inference.rerankers.service import (
    CONTAINER_NAME,
    FargateReranker,
    reranker_container_definitions,
)
from ecs_inference.services.base import PlacedWiring
from ecs_inference.services.fargate_table import task_refusals
from tests.aws_shapes import (
    register_task_definition_request,
    validate_named_shape,
    validate_shape,
)
from tests.services.conftest import (
    LB_SUFFIX,
    FakeRouter,
    check_service_children,
    service_wiring,
)
from tools.recording import ACCOUNT_ID, Recording, run_function

TOKEN = "ecs-inference:serving:FargateReranker"
IMAGE = f"{ACCOUNT_ID}.dkr.ecr.us-east-1.amazonaws.com/reranker:1.0.0"
SECRET = f"arn:aws:secretsmanager:us-east-1:{ACCOUNT_ID}:secret:rerank-token-AbCdEf"
FACTS = StackFacts(metrics_sidecar=False)


def reranker_input(**overrides: Any) -> RerankerConfig:
    settings: dict[str, Any] = {
        "model_uri": "s3://models/rerankers/minilm-l6/",
        "cpu": 2048,
        "memory_mib": 4096,
    }
    return RerankerConfig(**{**settings, **overrides})


def reranker_wiring(router: Any = None, **overrides: Any) -> PlacedWiring:
    settings: dict[str, Any] = {
        **service_wiring(router),
        "service": "rerank",
        "image": IMAGE,
        "placement": Placement(30, facts=FACTS),
    }
    return PlacedWiring(**{**settings, **overrides})


# --------------------------------------------------------------------------------------------
# pure
# --------------------------------------------------------------------------------------------


def test_environment_follows_the_contract() -> None:
    env = {
        e["name"]: e["value"]
        for e in reranker_environment(
            service="rerank",
            bucket="models",
            prefix="/rerankers/minilm-l6/",
            alb_idle_timeout_seconds=360,
            overrides={contract.ENV_MODEL_VARIANT: "int8"},
        )
    }
    assert set(env) <= set(contract.ENV_DEFAULTS)
    assert env[contract.ENV_MODEL_S3_URI] == "s3://models/rerankers/minilm-l6/"
    assert env[contract.ENV_PORT] == str(contract.PORT)
    # keep-alive outlives the ALB's idle timeout, or the ALB reuses a closed connection (502)
    assert int(env[contract.ENV_KEEP_ALIVE_SECONDS]) > 360
    assert env[contract.ENV_MODEL_NAME] == "rerank"
    assert env[contract.ENV_MODEL_VARIANT] == "int8"


def test_container_definition_is_fargate_clean() -> None:
    environment = reranker_environment(
        service="rerank", bucket="models", prefix="m", alb_idle_timeout_seconds=60, overrides={}
    )
    [container] = reranker_container_definitions(
        image=IMAGE,
        environment=environment,
        log_group_name="/ecs-inference/dev/rerank",
        region="us-west-2",
        stream_prefix="rerank",
        secrets={"HF_TOKEN_UNUSED": SECRET},
    )
    validate_named_shape("ecs", "ContainerDefinition", container)
    assert container["name"] == CONTAINER_NAME
    assert container["portMappings"] == [
        {"containerPort": contract.PORT, "protocol": "tcp", "name": "http"}
    ]
    assert container["stopTimeout"] == contract.STOP_TIMEOUT_SECONDS <= 120
    assert container["ulimits"] == [{"name": "nofile", "softLimit": 65535, "hardLimit": 65535}]
    assert container["linuxParameters"] == {"initProcessEnabled": True}
    assert task_refusals({"networkMode": "awsvpc", "containerDefinitions": [container]}) == []
    assert "healthCheck" not in container
    assert container["logConfiguration"]["options"]["awslogs-region"] == "us-west-2"
    assert container["secrets"] == [{"name": "HF_TOKEN_UNUSED", "valueFrom": SECRET}]


def test_the_constant_timeouts_fit_the_image() -> None:
    """ECS would stop tasks still loading below the image's start time; the drain must end
    before the stop timeout."""
    assert GRACE_SECONDS >= contract.STARTUP_GRACE_SECONDS
    assert contract.DRAIN_TIMEOUT_SECONDS < STOP_TIMEOUT_SECONDS


def problems(wiring: dict[str, Any] | None = None, **overrides: Any) -> list[str]:
    """What the schema, then the decisions, refuse of a re-ranker built by hand."""
    try:
        rr = reranker_input(**overrides)
    except ValidationError as exc:
        return [str(exc)]
    placement = Placement(**{"priority": 30, "idle_timeout_seconds": 360, **(wiring or {})})
    decided, found = decide_reranker("rerank", rr, placement, IMAGE)
    assert (decided is None) == bool(found)
    assert all(i.path.startswith("platform.rerankers.rerank") for i in found)
    return [i.message for i in found]


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"cpu": 1024, "memory_mib": 1024}, "does not accept memory 1024"),
        ({"cpu": 3000, "memory_mib": 4096}, "not a valid task size"),
        ({"cpu": 256, "memory_mib": 512}, "below the re-ranker's floor"),
        ({"cpu_architecture": "arm64"}, "'ARM64' or 'X86_64'"),
        ({"cpu": 8192, "memory_mib": 16384, "platform_version": "1.3.0"}, "needs Fargate platform"),
        ({"scaling_metric": "cpu", "scaling_target": 150.0}, "is a percentage"),
        ({"scaling_metric": "latency"}, "'requestCount' or 'cpu'"),
        ({"environment": {"DRAIN_TIMEOUT_SECONDS": "45"}}, "must be a whole number of seconds"),
        ({"environment": {"MAX_DOCS": "5"}}, "unknown re-ranker environment variable"),
        ({"environment": {"MODEL_VARIANT": "fp16"}}, "MODEL_VARIANT must be one of"),
        ({"environment": {"MODEL_S3_URI": "s3://other/x/"}}, "already controls"),
        ({"secrets": {"MAX_BATCH": SECRET}}, "plain settings of the re-ranker"),
        ({"secrets": {"MAX_BATCH": SECRET}, "environment": {"MAX_BATCH": "8"}}, "in both"),
        ({"model_uri": "s3://models/a/*"}, "plain key prefix"),
        ({"min_count": 3}, "minCount <= desiredCount <= maxCount"),
    ],
)
def test_invalid_inputs_are_rejected(overrides: dict[str, Any], message: str) -> None:
    found = problems(**overrides)
    assert any(message in p for p in found), found


def test_what_a_program_gives_by_hand_is_checked() -> None:
    assert any("priority 0 outside" in p for p in problems({"priority": 0}))
    decided, found = decide_reranker("Re_rank", reranker_input(), Placement(30, 60), "x y")
    assert decided is None
    assert [i.message.split(" ")[0] for i in found] == ["service", "image"]


def test_valid_size_is_decided() -> None:
    decided, _ = decide_reranker(
        "rerank", reranker_input(cpu=8192, memory_mib=16384), Placement(30, 60), IMAGE
    )
    assert decided is not None
    size = decided.size
    assert (size.cpu, size.memory_mib, size.needs_platform_1_4) == (8192, 16384, True)


def test_a_program_gets_the_stack_files_errors() -> None:
    with pytest.raises(ConfigError) as info:
        FargateReranker("rr", reranker_input(cpu=256, memory_mib=512), reranker_wiring())
    [issue] = info.value.issues
    assert issue.path == "platform.rerankers.rerank"
    assert "below the re-ranker's floor" in issue.message
    with pytest.raises(ConfigError, match="metrics sidecar needs an image"):
        FargateReranker("rr", reranker_input(), reranker_wiring(placement=Placement(30)))


# --------------------------------------------------------------------------------------------
# under mocks
# --------------------------------------------------------------------------------------------


def record(**overrides: Any) -> tuple[Recording, FakeRouter]:
    router = FakeRouter()
    rec = run_function(
        lambda: FargateReranker("dev-rerank", reranker_input(**overrides), reranker_wiring(router)),
        stack="dev",
    )
    return rec, router


@pytest.fixture(scope="module")
def requests_rec() -> tuple[Recording, FakeRouter]:
    return record(secrets={"API_TOKEN": SECRET}, environment={"MODEL_VARIANT": "int8"})


def test_children_parented_and_named(requests_rec) -> None:
    rec, _ = requests_rec
    check_service_children(rec, TOKEN, "dev-rerank-")


def test_fargate_task_definition(requests_rec) -> None:
    rec, _ = requests_rec
    inputs = rec.one("aws:ecs/taskDefinition:TaskDefinition").inputs
    assert inputs["requiresCompatibilities"] == ["FARGATE"]
    assert inputs["networkMode"] == "awsvpc"
    assert (inputs["cpu"], inputs["memory"]) == ("2048", "4096")
    assert inputs["runtimePlatform"] == {
        "cpuArchitecture": "ARM64",
        "operatingSystemFamily": "LINUX",
    }
    assert "placementConstraints" not in inputs and "ipcMode" not in inputs
    request = register_task_definition_request(inputs)
    validate_shape("ecs", "RegisterTaskDefinition", request)
    [container] = request["containerDefinitions"]
    env = {e["name"]: e["value"] for e in container["environment"]}
    assert env["MODEL_S3_URI"] == "s3://models/rerankers/minilm-l6/"
    assert env["MODEL_VARIANT"] == "int8"
    assert "API_TOKEN" not in env
    assert container["secrets"] == [{"name": "API_TOKEN", "valueFrom": SECRET}]
    assert task_refusals(request) == []


def test_fargate_service(requests_rec) -> None:
    rec, router = requests_rec
    service = rec.one("aws:ecs/service:Service")
    inputs = service.inputs
    rule = rec.one("aws:lb/listenerRule:ListenerRule")
    sg = rec.one("aws:ec2/securityGroup:SecurityGroup")
    assert inputs["capacityProviderStrategies"] == [
        {"capacityProvider": "FARGATE", "weight": 1.0, "base": 0.0}
    ]
    assert "launchType" not in inputs
    assert inputs["platformVersion"] == "LATEST"
    network = inputs["networkConfiguration"]
    assert network["assignPublicIp"] is False
    assert network["subnets"] == ["subnet-a", "subnet-b"]
    assert sg.urn in service.property_dependencies["networkConfiguration"]
    assert inputs["loadBalancers"] == [
        {
            "targetGroupArn": rule.inputs["actions"][0]["targetGroupArn"],
            "containerName": CONTAINER_NAME,
            "containerPort": float(contract.PORT),
        }
    ]
    assert inputs["healthCheckGracePeriodSeconds"] >= contract.STARTUP_GRACE_SECONDS
    assert inputs["deploymentCircuitBreaker"] == {"enable": True, "rollback": True}
    assert inputs["desiredCount"] == 2.0
    assert "placementConstraints" not in inputs
    assert inputs["waitForSteadyState"] is False
    assert rule.urn in service.dependencies
    assert router.calls == [{"service": "rerank", "priority": 30, "opts": None}]


def test_security_group_and_target_group(requests_rec) -> None:
    rec, _ = requests_rec
    sg = rec.one("aws:ec2/securityGroup:SecurityGroup").inputs
    [ingress] = sg["ingress"]
    assert ingress["securityGroups"] == ["sg-alb"]
    assert (ingress["fromPort"], ingress["toPort"]) == (float(contract.PORT),) * 2
    assert "cidrBlocks" not in ingress
    [egress] = sg["egress"]
    assert (egress["protocol"], egress["fromPort"], egress["toPort"]) == ("tcp", 443.0, 443.0)
    tg = rec.one("aws:lb/targetGroup:TargetGroup").inputs
    assert tg["targetType"] == "ip"
    assert tg["port"] == float(contract.PORT)
    assert tg["healthCheck"]["path"] == contract.HEALTH_PATH
    # the default longest request (30 s) plus the margin, as a stack file decides
    assert tg["deregistrationDelay"] == 45.0


def test_request_count_scaling(requests_rec) -> None:
    rec, _ = requests_rec
    tg_name = rec.one("aws:lb/targetGroup:TargetGroup").name
    target = rec.one("aws:appautoscaling/target:Target").inputs
    assert (target["minCapacity"], target["maxCapacity"]) == (1.0, 4.0)
    policy = rec.one("aws:appautoscaling/policy:Policy").inputs
    tracking = policy["targetTrackingScalingPolicyConfiguration"]
    spec = tracking["predefinedMetricSpecification"]
    assert spec["predefinedMetricType"] == "ALBRequestCountPerTarget"
    assert spec["resourceLabel"].startswith(f"{LB_SUFFIX}/targetgroup/{tg_name}")
    assert tracking["targetValue"] == 100.0
    validate_shape("application-autoscaling", "PutScalingPolicy", {"policyName": "p", **policy})


def test_cpu_scaling_and_x86() -> None:
    rec, _ = record(scaling_metric="cpu", scaling_target=60.0, cpu_architecture="X86_64")
    tracking = rec.one("aws:appautoscaling/policy:Policy").inputs[
        "targetTrackingScalingPolicyConfiguration"
    ]
    assert tracking["predefinedMetricSpecification"] == {
        "predefinedMetricType": "ECSServiceAverageCPUUtilization"
    }
    assert tracking["targetValue"] == 60.0
    task = rec.one("aws:ecs/taskDefinition:TaskDefinition").inputs
    assert task["runtimePlatform"]["cpuArchitecture"] == "X86_64"


def test_task_role_reads_only_the_model_prefix(requests_rec) -> None:
    rec, _ = requests_rec
    task_policy = json.loads(rec.one("aws:iam/rolePolicy:RolePolicy", "-task").inputs["policy"])
    assert [s["Resource"] for s in task_policy["Statement"]] == [
        "arn:aws:s3:::models/rerankers/minilm-l6/*",
        "arn:aws:s3:::models",
    ]
    assert task_policy["Statement"][1]["Condition"] == {
        "StringLike": {"s3:prefix": ["rerankers/minilm-l6", "rerankers/minilm-l6/*"]}
    }
    execution = json.loads(rec.one("aws:iam/rolePolicy:RolePolicy", "-execution").inputs["policy"])
    secrets = [s for s in execution["Statement"] if s["Sid"] == "ReadContainerSecrets"]
    assert secrets[0]["Resource"] == [SECRET]


def test_service_waits_for_the_capacity_provider_association() -> None:
    def program() -> None:
        association = aws.ecs.ClusterCapacityProviders(
            "assoc", cluster_name="inference", capacity_providers=["FARGATE"]
        )
        FargateReranker("rr", reranker_input(), reranker_wiring(service_depends_on=[association]))

    rec = run_function(program)
    association = rec.one("aws:ecs/clusterCapacityProviders:ClusterCapacityProviders")
    service = rec.one("aws:ecs/service:Service")
    assert association.urn in service.dependencies
    assert rec.one("aws:lb/listenerRule:ListenerRule").urn in service.dependencies
