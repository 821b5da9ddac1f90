"""ModelService: the pure container definition and validation, then the component under mocks.

Container definitions and the task definition are checked against botocore's ECS
RegisterTaskDefinition shape; the target group and scaling policy against ELBv2 and
Application Auto Scaling request shapes; IAM documents are compared exactly.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pulumi_aws as aws
import pytest

from ecs_inference.config.issues import ConfigError
from ecs_inference.contracts import engine as engine_contract
from ecs_inference.contracts import neuron as neuron_contract
from ecs_inference.contracts import vllm as vllm_contract
from ecs_inference.contracts.tags import MAX_REQUEST_SECONDS
from ecs_inference.engines.neuron import NeuronLaunch
from ecs_inference.models.decisions import ModelDecisions, Placement, StackFacts
from ecs_inference.models.input import ModelConfig
from ecs_inference.models.service import (
    CONTAINER_NAME,
    ModelService,
    ModelWiring,
    decide_service,
    model_container_definitions,
)
from ecs_inference.pools.decisions import PoolPlacement, decide_asg_pool
from ecs_inference.pools.input import PoolConfig
from ecs_inference.services.base import cluster_name_from_arn
from ecs_inference.services.checks import ServiceArgsError, check_deploy_progress
from ecs_inference.sizing.gpu import GpuFit
from ecs_inference.sizing.headroom import DeployChoice
from tests.aws_shapes import (
    register_task_definition_request,
    validate_named_shape,
    validate_shape,
)
from tests.services.conftest import (
    CLUSTER_ARN,
    LB_SUFFIX,
    FakeRouter,
    check_service_children,
    service_wiring,
)
from tools.recording import ACCOUNT_ID, Recording, run_function

TOKEN = "ecs-inference:serving:ModelService"
SECRET = f"arn:aws:secretsmanager:us-east-1:{ACCOUNT_ID}:secret:llama-api-key-AbCdEf"
IMAGE = f"{ACCOUNT_ID}.dkr.ecr.us-east-1.amazonaws.com/vllm:v0.33.0"


class FakePool:
    """Stands in for a pool component: its capacity provider and the types it launches."""

    def __init__(self, capacity_provider_name: str, *types: str, max_size: int = 4) -> None:
        self.capacity_provider_name = capacity_provider_name
        self.instance_types = types
        pool = PoolConfig(instance_types=list(types), max_size=max_size)
        self.decided = decide_asg_pool(pool, "nvidia", PoolPlacement())


VLLM_INPUT: dict[str, Any] = {
    "engine": "vllm",
    "pool": "g6e",
    "architecture": "llama-3.1-8b",
    "weightsUri": "s3://weights/models/llama-3.1-8b/",
    "maxModelLen": 8192,
    "tensorParallelSize": 2,
    "desiredCount": 2,
    "minCount": 1,
    "maxCount": 4,
    "maxGenerationSeconds": 285,
    "autoscaling": {"metric": "albRequests"},
    "environment": {"VLLM_LOGGING_LEVEL": "INFO"},
    "secrets": {"ENGINE_LICENSE_KEY": SECRET},
}
NEURON_INPUT: dict[str, Any] = {
    "engine": "neuron",
    "pool": "inf2",
    "architecture": "llama-3.1-8b",
    "weightsUri": "s3://weights/neuron/mistral-7b-bs4-tp4/",
    "neuron": {"batchSize": 4, "sequenceLength": 4096, "tpDegree": 4},
    "minCount": 1,
    "maxCount": 2,
    "autoscaling": {"metric": "albRequests"},
}


FACTS = StackFacts(metrics_sidecar=False, region="us-east-1")


def vllm_wiring(router: Any = None, **overrides: Any) -> ModelWiring:
    settings: dict[str, Any] = {
        **service_wiring(router),
        "service": "llama",
        "pool": FakePool("dev-g6e-cp", "g6e.12xlarge"),
        "image": IMAGE,
        "placement": Placement(priority=10, facts=FACTS),
    }
    settings.update(overrides)
    return ModelWiring(**settings)


def neuron_wiring(router: Any = None) -> ModelWiring:
    return vllm_wiring(
        router,
        service="mistral",
        pool=FakePool("dev-inf2-cp", "inf2.24xlarge", max_size=2),
        # Stop one, then start one: no spare Neuron host needed.
        placement=Placement(
            priority=20,
            deploy=DeployChoice(0, 100, "deploy: stop one, then start one"),
            facts=FACTS,
        ),
    )


# --------------------------------------------------------------------------------------------
# pure: container definitions
# --------------------------------------------------------------------------------------------


def test_vllm_container_definition() -> None:
    decided = decide_service("llama", ModelConfig.model_validate(VLLM_INPUT), vllm_wiring())[0]
    launch, fit = decided.launch, decided.fit
    [container] = model_container_definitions(
        image=IMAGE,
        launch=launch,
        fit=fit,
        log_group_name="/ecs-inference/dev/llama",
        region="us-east-1",
        stream_prefix="llama",
        shm_size_mib=16_384,
        stop_timeout_seconds=120,
        environment={"VLLM_LOGGING_LEVEL": "INFO"},
        secrets={"ENGINE_LICENSE_KEY": SECRET},
    )
    validate_named_shape("ecs", "ContainerDefinition", container)
    assert container["name"] == CONTAINER_NAME
    assert container["essential"] is True
    assert container["resourceRequirements"] == [{"type": "GPU", "value": "2"}]
    assert container["linuxParameters"] == {"initProcessEnabled": True, "sharedMemorySize": 16_384}
    assert {"name": "memlock", "softLimit": -1, "hardLimit": -1} in container["ulimits"]
    assert {"name": "nofile", "softLimit": 65535, "hardLimit": 65535} in container["ulimits"]
    assert container["portMappings"] == launch.port_mappings()
    assert container["stopTimeout"] == 120
    assert "healthCheck" not in container
    env = {e["name"]: e["value"] for e in container["environment"]}
    for entry in launch.container_environment():
        assert env[entry["name"]] == entry["value"]
    assert env["VLLM_LOGGING_LEVEL"] == "INFO"
    assert env[vllm_contract.ENV_TENSOR_PARALLEL_SIZE] == "2"
    assert [e["name"] for e in container["environment"]] == sorted(env)
    # the key travels as a secret reference, never as a plain value
    assert "ENGINE_LICENSE_KEY" not in env
    assert container["secrets"] == [{"name": "ENGINE_LICENSE_KEY", "valueFrom": SECRET}]
    assert container["logConfiguration"] == {
        "logDriver": "awslogs",
        "options": {
            "awslogs-group": "/ecs-inference/dev/llama",
            "awslogs-region": "us-east-1",
            "awslogs-stream-prefix": "llama",
            "mode": "non-blocking",
            "max-buffer-size": "25m",
        },
    }


def test_neuron_container_definition_maps_exactly_the_devices() -> None:
    compiled = {"batchSize": 4, "sequenceLength": 4096, "tpDegree": 8}
    model = ModelConfig.model_validate({**NEURON_INPUT, "neuron": compiled})
    decided = decide_service("mistral", model, neuron_wiring())[0]
    launch = decided.launch
    assert isinstance(launch, NeuronLaunch)
    devices = ["/dev/neuron0", "/dev/neuron1", "/dev/neuron2", "/dev/neuron3"]
    [container] = model_container_definitions(
        image=IMAGE,
        launch=launch,
        fit=decided.fit,
        log_group_name="/g",
        region="us-east-1",
        stream_prefix="mistral",
        neuron_devices=devices,
    )
    validate_named_shape("ecs", "ContainerDefinition", container)
    assert "resourceRequirements" not in container
    assert container["linuxParameters"]["devices"] == [
        {"hostPath": d, "containerPath": d, "permissions": ["read", "write"]} for d in devices
    ]
    assert decided.neuron_devices == tuple(devices)
    assert "sharedMemorySize" not in container["linuxParameters"]
    assert [u["name"] for u in container["ulimits"]] == ["nofile"]
    assert "healthCheck" not in container and "secrets" not in container


# --------------------------------------------------------------------------------------------
# pure: validation
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "wiring", "message"),
    [
        ({}, {"placement": Placement(priority=0, facts=FACTS)}, "priority 0 outside 1-50000"),
        ({}, {"image": ""}, "non-empty image"),
        ({}, {"image": IMAGE.replace("vllm", "VLLM")}, "looks like an ECR image"),
        (
            {},
            {"placement": Placement(10, deploy=DeployChoice(100, 100, "d"), facts=FACTS)},
            "could never replace a task",
        ),
        ({"environment": {"ENGINE_MAX_MODEL_LEN": "1"}}, {}, "already controls"),
    ],
)
def test_a_decision_that_cannot_work_is_refused_at_the_models_path(raw, wiring, message) -> None:
    model = ModelConfig.model_validate({**VLLM_INPUT, **raw})
    with pytest.raises(ConfigError, match=message) as info:
        decide_service("llama", model, vllm_wiring(**wiring))
    assert [i.path for i in info.value.issues] == ["platform.models.llama"]


def test_the_gpus_reserved_are_the_fits_and_the_launchs() -> None:
    decided, _ = decide_service("llama", ModelConfig.model_validate(VLLM_INPUT), vllm_wiring())
    assert isinstance(decided.fit, GpuFit)
    assert decided.gpu_count == decided.fit.tp_size == decided.launch.gpus == 2


@pytest.mark.parametrize(
    ("low", "high", "counts", "ok"),
    [
        (100, 200, (1, 4), True),  # surge
        (0, 100, (1, 4), True),  # stop one, then start one (no spare accelerator needed)
        (50, 100, (2, 4), True),
        (50, 100, (1, 4), False),  # one task: keeps 1, may run 1
        (100, 100, (1, 1), False),
        (100, 150, (1, 4), False),  # one task: floor(1.5) = 1
    ],
)
def test_deploy_progress_at_every_reachable_count(low, high, counts, ok) -> None:
    lo, hi = counts
    if ok:
        check_deploy_progress("s", low, high, lo, hi, lo)
    else:
        with pytest.raises(ServiceArgsError, match="could never replace a task"):
            check_deploy_progress("s", low, high, lo, hi, lo)


def test_cluster_name_from_arn() -> None:
    assert cluster_name_from_arn(CLUSTER_ARN) == "inference"
    assert cluster_name_from_arn("inference") == "inference"


# --------------------------------------------------------------------------------------------
# under mocks
# --------------------------------------------------------------------------------------------


def record(raw: dict[str, Any], make_wiring) -> tuple[Recording, FakeRouter, ModelDecisions]:
    router = FakeRouter()
    built: list[ModelService] = []

    def program() -> None:
        built.append(ModelService("dev-llm", ModelConfig.model_validate(raw), make_wiring(router)))

    rec = run_function(program, stack="dev")
    return rec, router, built[0].decided


@pytest.fixture(scope="module")
def vllm_rec() -> tuple[Recording, FakeRouter, ModelDecisions]:
    return record(VLLM_INPUT, vllm_wiring)


@pytest.fixture(scope="module")
def neuron_rec() -> tuple[Recording, FakeRouter, ModelDecisions]:
    return record(NEURON_INPUT, neuron_wiring)


def test_children_parented_and_named(vllm_rec) -> None:
    rec, _, _ = vllm_rec
    check_service_children(rec, TOKEN, "dev-llm-")


def test_vllm_task_definition(vllm_rec) -> None:
    rec, _, _ = vllm_rec
    task = rec.one("aws:ecs/taskDefinition:TaskDefinition")
    inputs = task.inputs
    assert inputs["requiresCompatibilities"] == ["EC2"]
    assert inputs["networkMode"] == "awsvpc"
    # g6e.12xlarge: 48 vCPU and 384 GiB less 10 % for the agent and OS, 4 GPUs; tensor
    # parallel 2 places two tasks per instance.
    assert (inputs["cpu"], inputs["memory"]) == (
        str(48 * 1024 // 2),
        str(int(384 * 1024 * 0.9) // 2),
    )
    assert inputs["family"] == "ecs-inference-dev-llama"
    assert ":role/dev-llm-execution-" in inputs["executionRoleArn"]
    assert ":role/dev-llm-task-" in inputs["taskRoleArn"]
    request = register_task_definition_request(inputs)
    validate_shape("ecs", "RegisterTaskDefinition", request)
    [container] = request["containerDefinitions"]
    assert container["resourceRequirements"] == [{"type": "GPU", "value": "2"}]
    assert container["linuxParameters"]["sharedMemorySize"] == 2048 * 2
    assert container["logConfiguration"]["options"]["awslogs-group"] == "/ecs-inference/dev/llama"
    assert container["logConfiguration"]["options"]["awslogs-region"] == "us-east-1"
    assert "healthCheck" not in container
    # the log group exists before any task can try to log into it
    log_group = rec.one("aws:cloudwatch/logGroup:LogGroup")
    assert log_group.inputs == {"name": "/ecs-inference/dev/llama", "retentionInDays": 30.0}
    assert log_group.urn in task.dependencies


def test_vllm_service(vllm_rec) -> None:
    rec, router, spec = vllm_rec
    service = rec.one("aws:ecs/service:Service")
    inputs = service.inputs
    tg = rec.one("aws:lb/targetGroup:TargetGroup")
    sg = rec.one("aws:ec2/securityGroup:SecurityGroup")
    rule = rec.one("aws:lb/listenerRule:ListenerRule")
    assert inputs["cluster"] == CLUSTER_ARN
    assert inputs["capacityProviderStrategies"] == [
        {"capacityProvider": "dev-g6e-cp", "weight": 1.0, "base": 0.0}
    ]
    assert "launchType" not in inputs
    network = inputs["networkConfiguration"]
    assert network["subnets"] == ["subnet-a", "subnet-b"]
    assert network["assignPublicIp"] is False
    assert len(network["securityGroups"]) == 1
    assert sg.urn in service.property_dependencies["networkConfiguration"]
    [lb] = inputs["loadBalancers"]
    assert lb == {
        "targetGroupArn": rule.inputs["actions"][0]["targetGroupArn"],
        "containerName": CONTAINER_NAME,
        "containerPort": 8000.0,
    }
    assert lb["targetGroupArn"].startswith("arn:aws:elasticloadbalancing:")
    assert inputs["healthCheckGracePeriodSeconds"] == spec.health_check_grace_period_seconds
    assert inputs["deploymentCircuitBreaker"] == {"enable": True, "rollback": True}
    assert inputs["deploymentMinimumHealthyPercent"] == 100.0
    assert inputs["deploymentMaximumPercent"] == 200.0
    assert inputs["desiredCount"] == 2.0
    assert "placementConstraints" not in inputs
    assert inputs["enableEcsManagedTags"] is True
    assert inputs["propagateTags"] == "SERVICE"
    assert inputs["waitForSteadyState"] is False
    # the target group is attached to the ALB (by the rule) before the service registers into it
    assert rule.urn in service.dependencies
    assert router.calls == [{"service": "llama", "priority": 10, "opts": None}]
    assert tg.urn in rule.property_dependencies["actions"]


def test_task_security_group_admits_only_the_alb(vllm_rec) -> None:
    rec, _, _ = vllm_rec
    sg = rec.one("aws:ec2/securityGroup:SecurityGroup")
    assert sg.inputs["vpcId"] == "vpc-0abc"
    assert sg.inputs["ingress"] == [
        {
            "description": "ALB to the serving port (requests and health checks)",
            "protocol": "tcp",
            "fromPort": 8000.0,
            "toPort": 8000.0,
            "securityGroups": ["sg-alb"],
        }
    ]
    assert sg.inputs["egress"] == [
        {
            "description": "HTTPS to AWS APIs (VPC endpoints or NAT)",
            "protocol": "tcp",
            "fromPort": 443.0,
            "toPort": 443.0,
            "cidrBlocks": ["0.0.0.0/0"],
        }
    ]


def test_target_group(vllm_rec) -> None:
    rec, _, _ = vllm_rec
    tg = rec.one("aws:lb/targetGroup:TargetGroup").inputs
    assert tg["targetType"] == "ip"
    assert tg["protocol"] == "HTTP"
    assert tg["port"] == 8000.0
    assert tg["deregistrationDelay"] == 300.0
    # What the delay covers, for the policy pack's deregistration-delay-covers-streams.
    assert tg["tags"] == {MAX_REQUEST_SECONDS: "285"}
    assert tg["loadBalancingAlgorithmType"] == "least_outstanding_requests"
    hc = tg["healthCheck"]
    assert hc["path"] == engine_contract.HEALTH_PATH == "/health"
    assert hc["matcher"] == "200"
    validate_shape(
        "elbv2",
        "CreateTargetGroup",
        {
            "Name": "llama",
            "Protocol": tg["protocol"],
            "Port": tg["port"],
            "VpcId": tg["vpcId"],
            "TargetType": tg["targetType"],
            "HealthCheckEnabled": hc["enabled"],
            "HealthCheckProtocol": hc["protocol"],
            "HealthCheckPort": hc["port"],
            "HealthCheckPath": hc["path"],
            "HealthCheckIntervalSeconds": hc["interval"],
            "HealthCheckTimeoutSeconds": hc["timeout"],
            "HealthyThresholdCount": hc["healthyThreshold"],
            "UnhealthyThresholdCount": hc["unhealthyThreshold"],
            "Matcher": {"HttpCode": hc["matcher"]},
            "Tags": [{"Key": k, "Value": v} for k, v in tg["tags"].items()],
        },
    )
    assert hc["timeout"] < hc["interval"]


def test_autoscaling_on_alb_requests_per_target(vllm_rec) -> None:
    rec, _, spec = vllm_rec
    tg_name = rec.one("aws:lb/targetGroup:TargetGroup").name
    target = rec.one("aws:appautoscaling/target:Target").inputs
    # service/<cluster name>/<auto-named service>
    assert target["resourceId"].startswith("service/inference/dev-llm-service-")
    assert target["serviceNamespace"] == "ecs"
    assert target["scalableDimension"] == "ecs:service:DesiredCount"
    assert (target["minCapacity"], target["maxCapacity"]) == (1.0, 4.0)
    policy = rec.one("aws:appautoscaling/policy:Policy").inputs
    assert policy["resourceId"] == target["resourceId"]
    tracking = policy["targetTrackingScalingPolicyConfiguration"]
    assert tracking["targetValue"] == 30.0
    # scale out once a new task serves (its grace period), scale in at least twice as slow
    assert tracking["scaleOutCooldown"] == spec.health_check_grace_period_seconds
    assert tracking["scaleInCooldown"] >= 2 * tracking["scaleOutCooldown"]
    assert tracking["scaleOutCooldown"] < tracking["scaleInCooldown"]
    spec = tracking["predefinedMetricSpecification"]
    assert spec["predefinedMetricType"] == "ALBRequestCountPerTarget"
    label = spec["resourceLabel"]
    assert label.startswith(LB_SUFFIX + "/targetgroup/" + tg_name)
    validate_shape("application-autoscaling", "RegisterScalableTarget", target)
    validate_shape("application-autoscaling", "PutScalingPolicy", {"policyName": "p", **policy})


def test_iam_roles_scoped_exactly(vllm_rec) -> None:
    rec, _, _ = vllm_rec
    policies = {
        p.name: json.loads(p.inputs["policy"]) for p in rec.by_type("aws:iam/rolePolicy:RolePolicy")
    }
    assert policies["dev-llm-task"]["Statement"] == [
        {
            "Sid": "ReadWeights",
            "Effect": "Allow",
            "Action": "s3:GetObject",
            "Resource": "arn:aws:s3:::weights/models/llama-3.1-8b/*",
        },
        {
            "Sid": "ListWeightsPrefix",
            "Effect": "Allow",
            "Action": "s3:ListBucket",
            "Resource": "arn:aws:s3:::weights",
            "Condition": {
                "StringLike": {"s3:prefix": ["models/llama-3.1-8b", "models/llama-3.1-8b/*"]}
            },
        },
    ]
    execution = {s["Sid"]: s for s in policies["dev-llm-execution"]["Statement"]}
    assert execution["ReadContainerSecrets"]["Resource"] == [SECRET]
    assert execution["WriteOwnLogGroup"]["Resource"] == (
        f"arn:aws:logs:us-east-1:{ACCOUNT_ID}:log-group:/ecs-inference/dev/llama:log-stream:*"
    )
    assert execution["PullImage"]["Resource"] == [
        f"arn:aws:ecr:us-east-1:{ACCOUNT_ID}:repository/vllm"
    ]
    roles = rec.by_type("aws:iam/role:Role")
    assert len(roles) == 2
    for role in roles:
        [trust] = json.loads(role.inputs["assumeRolePolicy"])["Statement"]
        assert trust["Principal"] == {"Service": "ecs-tasks.amazonaws.com"}
        assert trust["Condition"]["StringEquals"] == {"aws:SourceAccount": ACCOUNT_ID}
    # no managed policy with account-wide grants is attached
    assert rec.by_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment") == []


def test_neuron_service_places_one_task_per_instance(neuron_rec) -> None:
    rec, router, _ = neuron_rec
    service = rec.one("aws:ecs/service:Service").inputs
    assert service["placementConstraints"] == [{"type": "distinctInstance"}]
    assert service["capacityProviderStrategies"][0]["capacityProvider"] == "dev-inf2-cp"
    assert service["deploymentMinimumHealthyPercent"] == 0.0
    assert service["deploymentMaximumPercent"] == 100.0
    task = rec.one("aws:ecs/taskDefinition:TaskDefinition").inputs
    request = register_task_definition_request(task)
    validate_shape("ecs", "RegisterTaskDefinition", request)
    [container] = request["containerDefinitions"]
    assert "resourceRequirements" not in container
    assert [d["hostPath"] for d in container["linuxParameters"]["devices"]] == [
        "/dev/neuron0",
        "/dev/neuron1",
    ]
    env = {e["name"]: e["value"] for e in container["environment"]}
    assert env[neuron_contract.ENV_TP_DEGREE] == "4"
    assert env[neuron_contract.ENV_BATCH_SIZE] == "4"
    policy = json.loads(rec.one("aws:iam/rolePolicy:RolePolicy", "-task").inputs["policy"])[
        "Statement"
    ][0]
    assert policy["Resource"] == "arn:aws:s3:::weights/neuron/mistral-7b-bs4-tp4/*"
    assert router.calls[0]["service"] == "mistral"


def test_decisions_and_wiring_are_frozen(vllm_rec) -> None:
    for value, field in ((vllm_rec[2], "task_cpu"), (vllm_wiring(), "image")):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(value, field, "other")


def test_with_the_real_endpoint_every_rule_precedes_the_service() -> None:
    """Against the real `Endpoint.route`: both of its rules (bearer and browser) forward to this
    service's target group, and the ECS service waits for both."""
    from ecs_inference.endpoint.decisions import Routes
    from ecs_inference.endpoint.input import EndpointConfig
    from ecs_inference.endpoint.service import Endpoint, EndpointWiring

    def program() -> None:
        endpoint = Endpoint(
            "dev-ep",
            EndpointConfig(
                domain_name="models.example.internal",
                allowed_cidrs=["10.0.0.0/8"],
                idle_timeout_seconds=360,
                self_signed_certificate=True,
            ),
            EndpointWiring(
                vpc_id="vpc-0abc",
                vpc_cidr="10.40.0.0/16",
                subnet_ids=["subnet-a", "subnet-b"],
                routes=Routes(ports=(8000,)),
            ),
        )
        ModelService(
            "dev-llm",
            ModelConfig.model_validate(VLLM_INPUT),
            vllm_wiring(
                endpoint,
                alb_security_group_id=endpoint.security_group.id,
                load_balancer_arn_suffix=endpoint.load_balancer.arn_suffix,
            ),
        )

    rec = run_function(program, stack="dev")
    service = rec.one("aws:ecs/service:Service")
    tg = rec.one("aws:lb/targetGroup:TargetGroup")
    rules = [
        r
        for r in rec.by_type("aws:lb/listenerRule:ListenerRule")
        if tg.urn in r.property_dependencies.get("actions", ())
    ]
    assert len(rules) == 2
    for rule in rules:
        assert rule.urn in service.dependencies
    alb = rec.one("aws:lb/loadBalancer:LoadBalancer")
    sg = rec.one("aws:ec2/securityGroup:SecurityGroup", "dev-llm-tasks")
    assert (
        rec.one("aws:ec2/securityGroup:SecurityGroup", "alb-sg").urn
        in (sg.property_dependencies["ingress"])
    )
    label = rec.one("aws:appautoscaling/policy:Policy").inputs[
        "targetTrackingScalingPolicyConfiguration"
    ]["predefinedMetricSpecification"]["resourceLabel"]
    assert label.startswith("app/" + alb.name)


def test_service_waits_for_the_capacity_provider_association() -> None:
    def program() -> None:
        association = aws.ecs.ClusterCapacityProviders(
            "assoc", cluster_name="inference", capacity_providers=["dev-g6e-cp"]
        )
        ModelService(
            "llm",
            ModelConfig.model_validate(VLLM_INPUT),
            vllm_wiring(service_depends_on=[association]),
        )

    rec = run_function(program)
    association = rec.one("aws:ecs/clusterCapacityProviders:ClusterCapacityProviders")
    assert association.urn in rec.one("aws:ecs/service:Service").dependencies
