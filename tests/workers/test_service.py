"""QueueWorker under mocks: what it registers, checked as the AWS requests it becomes.

Each recorded resource is turned into the API request the provider sends (CreateQueue,
PutScalingPolicy, PutMetricAlarm, RegisterTaskDefinition, PutRolePolicy) and validated against
botocore's models; the scaling policies are recorded exactly as `worker_scaling` computed them.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from ecs_inference.config.issues import ConfigError
from ecs_inference.contracts.worker import ENV_RESULT_QUEUE_URL
from ecs_inference.services.service_connect import Namespace
from ecs_inference.workers.decisions import GatewayKeys
from ecs_inference.workers.input import WorkerConfig
from ecs_inference.workers.queues import MANAGED_ENV, task_protection_minutes
from ecs_inference.workers.scaling import WorkerScaling
from ecs_inference.workers.service import QUEUE_ACTIONS, QueueWorker, WorkerWiring
from tests.aws_shapes import UNKNOWN, register_task_definition_request, validate_shape
from tests.services.conftest import CLUSTER_ARN
from tools.recording import ACCOUNT_ID, Recording, run_function

IMAGE = f"{ACCOUNT_ID}.dkr.ecr.us-east-1.amazonaws.com/summarise:1.4.0"
SECRET = f"arn:aws:secretsmanager:us-east-1:{ACCOUNT_ID}:secret:summarise-token-AbCdEf"


NAMESPACE = Namespace(
    "inference", "arn:aws:servicediscovery:us-east-1:123456789012:namespace/ns-0abc"
)


MASTER = f"arn:aws:secretsmanager:us-east-1:{ACCOUNT_ID}:secret:gateway-master-AbCdEf"


def worker_input(**overrides: Any) -> WorkerConfig:
    """A worker whose decisions are a 990 s visibility timeout (900 s job + 90 s margin) and a
    backlog target of 10 messages per task (300 s acceptable latency / 30 s per job)."""
    settings: dict[str, Any] = {
        "image": IMAGE,
        "max_job_seconds": 900,
        "job_seconds": 30,
        "acceptable_latency_seconds": 300,
        "cpu": 256,
        "memory_mib": 512,
        "max_count": 8,
        "secrets": {"UPSTREAM_TOKEN": SECRET},
    }
    settings.update(overrides)
    return WorkerConfig(**settings)


WIRING = WorkerWiring(
    worker="summarise",
    cluster_arn=CLUSTER_ARN,
    vpc_id="vpc-0abc",
    subnet_ids=["subnet-a", "subnet-b"],
    gateway_url="http://gateway.inference:4000",
    gateway_keys=GatewayKeys(MASTER),
    gateway_security_group_id="sg-gateway",
    service_connect_namespace=NAMESPACE,
)


def worker(name: str = "dev-summarise", **overrides: Any) -> QueueWorker:
    wiring = WIRING if name == "dev-summarise" else replace(WIRING, worker=None)
    return QueueWorker(name, worker_input(**overrides), wiring)


@pytest.fixture(scope="module")
def rec() -> Recording:
    return run_function(lambda: worker(), stack="dev")


def known(value: Any) -> Any:
    """Drop values unknown during preview (they are never guessed)."""
    if isinstance(value, dict):
        return {k: known(v) for k, v in value.items() if v != UNKNOWN}
    if isinstance(value, list):
        return [known(v) for v in value if v != UNKNOWN]
    return value


def _int(v: Any) -> Any:
    return int(v) if isinstance(v, float) and v.is_integer() else v


def test_queue_and_dlq_are_encrypted_with_redrive(rec: Recording):
    queue = rec.one("aws:sqs/queue:Queue", "-queue").inputs
    dlq = rec.one("aws:sqs/queue:Queue", "-dlq").inputs
    assert queue["visibilityTimeoutSeconds"] == 990
    assert queue["sqsManagedSseEnabled"] is True and dlq["sqsManagedSseEnabled"] is True
    assert dlq["messageRetentionSeconds"] == 1_209_600
    for name, inputs in (("dev-summarise-queue-abc1234", queue), ("dlq-x", dlq)):
        attrs = {
            "VisibilityTimeout": inputs.get("visibilityTimeoutSeconds"),
            "MessageRetentionPeriod": inputs.get("messageRetentionSeconds"),
            "ReceiveMessageWaitTimeSeconds": inputs.get("receiveWaitTimeSeconds"),
            "SqsManagedSseEnabled": inputs.get("sqsManagedSseEnabled"),
            "RedrivePolicy": inputs.get("redrivePolicy"),
        }
        attrs = {k: str(_int(v)).lower() for k, v in attrs.items() if v not in (None, UNKNOWN)}
        validate_shape("sqs", "CreateQueue", {"QueueName": name, "Attributes": attrs})
    assert (queue["name"], dlq["name"]) == (
        "ecs-inference-dev-summarise",
        "ecs-inference-dev-summarise-dlq",
    )
    policies = rec.by_type("aws:sqs/queuePolicy:QueuePolicy")
    assert len(policies) == 2
    assert len(rec.by_type("aws:sqs/redriveAllowPolicy:RedriveAllowPolicy")) == 1


def test_a_result_queue_is_encrypted_tls_only_and_the_only_place_the_task_may_send():
    rec = run_function(lambda: worker(result_queue=True), stack="dev")
    results = rec.one("aws:sqs/queue:Queue", "-results").inputs
    assert results["name"] == "ecs-inference-dev-summarise-results"
    assert results["sqsManagedSseEnabled"] is True
    validate_shape(
        "sqs",
        "CreateQueue",
        {
            "QueueName": results["name"],
            "Attributes": {"MessageRetentionPeriod": str(_int(results["messageRetentionSeconds"]))},
        },
    )
    assert len(rec.by_type("aws:sqs/queuePolicy:QueuePolicy")) == 3
    (container,) = json.loads(rec.one("aws:ecs/taskDefinition:TaskDefinition").inputs[
        "containerDefinitions"])  # fmt: skip
    env = {e["name"]: e["value"] for e in container["environment"]}
    assert env[ENV_RESULT_QUEUE_URL] == (
        f"https://sqs.us-east-1.amazonaws.com/{ACCOUNT_ID}/ecs-inference-dev-summarise-results"
    )
    policy = json.loads(rec.one("aws:iam/rolePolicy:RolePolicy", "-task").inputs["policy"])
    send = [s for s in policy["Statement"] if "sqs:SendMessage" in json.dumps(s["Action"])]
    assert len(send) == 1 and send[0]["Action"] == "sqs:SendMessage"
    assert send[0]["Resource"] != "*"


def test_task_definition_is_fargate_arm64_with_the_managed_variables(rec: Recording):
    task = rec.one("aws:ecs/taskDefinition:TaskDefinition").inputs
    assert task["requiresCompatibilities"] == ["FARGATE"]
    assert task["runtimePlatform"]["cpuArchitecture"] == "ARM64"
    request = register_task_definition_request(task)
    validate_shape("ecs", "RegisterTaskDefinition", request)
    (container,) = json.loads(task["containerDefinitions"])
    env = {e["name"]: e["value"] for e in container["environment"]}
    assert set(MANAGED_ENV) - {ENV_RESULT_QUEUE_URL} <= set(env)
    assert ENV_RESULT_QUEUE_URL not in env  # no result queue unless asked
    assert env["GATEWAY_URL"] == "http://gateway.inference:4000"
    # Known at preview: the queue has a fixed, per-stack name.
    assert env["QUEUE_URL"] == (
        f"https://sqs.us-east-1.amazonaws.com/{ACCOUNT_ID}/ecs-inference-dev-summarise"
    )
    assert env["TASK_PROTECTION_MINUTES"] == str(task_protection_minutes(990)) == "17"
    # Its own secret, and the gateway's master key to call the gateway with.
    assert container["secrets"] == [
        {"name": "GATEWAY_API_KEY", "valueFrom": MASTER},
        {"name": "UPSTREAM_TOKEN", "valueFrom": SECRET},
    ]
    assert "portMappings" not in container and container["stopTimeout"] == 120


def test_service_is_private_and_a_service_connect_client(rec: Recording):
    svc = rec.one("aws:ecs/service:Service").inputs
    assert svc["networkConfiguration"]["assignPublicIp"] is False
    assert svc["serviceConnectConfiguration"] == {"enabled": True, "namespace": NAMESPACE.arn}
    assert svc["capacityProviderStrategies"][0]["capacityProvider"] == "FARGATE"
    assert "loadBalancers" not in svc
    sg = rec.one("aws:ec2/securityGroup:SecurityGroup").inputs
    assert not sg.get("ingress")
    ports = sorted((e["fromPort"], tuple(e.get("securityGroups", []))) for e in sg["egress"])
    assert ports == [(443, ()), (4000, ("sg-gateway",))]


def test_scaling_policies_are_the_computed_ones_and_valid_requests(rec: Recording):
    expected = WorkerScaling("q", "inference", "s", 10.0, worker_input(min_count=0))
    target = rec.one("aws:appautoscaling/target:Target").inputs
    assert (target["minCapacity"], target["maxCapacity"]) == (0, 8)
    backlog = rec.one("aws:appautoscaling/policy:Policy", "-backlog").inputs
    tt = backlog["targetTrackingScalingPolicyConfiguration"]
    assert tt["targetValue"] == 10.0
    metrics = tt["customizedMetricSpecification"]["metrics"]
    assert [m["id"] for m in metrics] == ["visible", "running", "backlog_per_task"]
    assert metrics[2]["expression"] == "visible / running"
    running_dims = metrics[1]["metricStat"]["metric"]["dimensions"]
    assert running_dims[0] == {"name": "ClusterName", "value": "inference"}

    from_zero = rec.one("aws:appautoscaling/policy:Policy", "-from-zero").inputs
    steps = from_zero["stepScalingPolicyConfiguration"]["stepAdjustments"]
    assert [s["scalingAdjustment"] for s in steps] == [s.capacity for s in expected.from_zero]
    # The provider takes bounds as strings; they parse back to the computed numbers.
    assert [float(s["metricIntervalLowerBound"]) for s in steps] == [
        s.lower for s in expected.from_zero
    ]
    for policy in (
        backlog,
        from_zero,
        rec.one("aws:appautoscaling/policy:Policy", "-to-zero").inputs,
    ):
        request = known(
            {
                "PolicyName": "p",
                "ServiceNamespace": policy["serviceNamespace"],
                "ResourceId": "service/inference/summarise",
                "ScalableDimension": policy["scalableDimension"],
                "PolicyType": policy["policyType"],
            }
        )
        if "targetTrackingScalingPolicyConfiguration" in policy:
            request["TargetTrackingScalingPolicyConfiguration"] = (
                expected.target_tracking_configuration()
            )
        else:
            config = policy["stepScalingPolicyConfiguration"]
            request["StepScalingPolicyConfiguration"] = {
                "AdjustmentType": config["adjustmentType"],
                "Cooldown": _int(config["cooldown"]),
                "MetricAggregationType": config["metricAggregationType"],
                "StepAdjustments": [
                    {
                        **(
                            {"MetricIntervalLowerBound": float(s["metricIntervalLowerBound"])}
                            if "metricIntervalLowerBound" in s
                            else {}
                        ),
                        **(
                            {"MetricIntervalUpperBound": float(s["metricIntervalUpperBound"])}
                            if "metricIntervalUpperBound" in s
                            else {}
                        ),
                        "ScalingAdjustment": _int(s["scalingAdjustment"]),
                    }
                    for s in config["stepAdjustments"]
                ],
            }
        validate_shape("application-autoscaling", "PutScalingPolicy", request)


def test_alarms_trigger_the_step_policies(rec: Recording):
    alarms = rec.by_type("aws:cloudwatch/metricAlarm:MetricAlarm")
    assert sorted(a.name for a in alarms) == ["dev-summarise-from-zero", "dev-summarise-to-zero"]
    from_zero = rec.one("aws:cloudwatch/metricAlarm:MetricAlarm", "-from-zero").inputs
    (signal,) = [q for q in from_zero["metricQueries"] if q.get("returnData")]
    assert signal["expression"] == "IF(FILL(running, 0) < 1, visible, 0)"
    for alarm in alarms:
        inputs = alarm.inputs
        request = {
            "AlarmName": alarm.name,
            "EvaluationPeriods": _int(inputs["evaluationPeriods"]),
            "DatapointsToAlarm": _int(inputs["datapointsToAlarm"]),
            "Threshold": inputs["threshold"],
            "ComparisonOperator": inputs["comparisonOperator"],
            "TreatMissingData": inputs["treatMissingData"],
            "Metrics": [
                known(
                    {
                        "Id": q["id"],
                        "ReturnData": q["returnData"],
                        **({"Expression": q["expression"]} if "expression" in q else {}),
                        **({"Label": q["label"]} if "label" in q else {}),
                        **(
                            {
                                "MetricStat": {
                                    "Metric": {
                                        "Namespace": q["metric"]["namespace"],
                                        "MetricName": q["metric"]["metricName"],
                                        "Dimensions": [
                                            {"Name": k, "Value": v}
                                            for k, v in q["metric"]["dimensions"].items()
                                            if v != UNKNOWN
                                        ],
                                    },
                                    "Period": _int(q["metric"]["period"]),
                                    "Stat": q["metric"]["stat"],
                                }
                            }
                            if "metric" in q
                            else {}
                        ),
                    }
                )
                for q in inputs["metricQueries"]
            ],
        }
        validate_shape("cloudwatch", "PutMetricAlarm", request)


def test_task_role_reads_only_its_own_queue(rec: Recording):
    policy = json.loads(rec.one("aws:iam/rolePolicy:RolePolicy", "-task").inputs["policy"])
    queue_stmt, protection = policy["Statement"]
    assert queue_stmt["Action"] == list(QUEUE_ACTIONS)
    assert queue_stmt["Resource"].startswith("arn:aws:sqs:us-east-1:")
    assert "*" not in queue_stmt["Resource"]
    assert protection["Resource"] == f"arn:aws:ecs:us-east-1:{ACCOUNT_ID}:task/inference/*"
    execution = json.loads(rec.one("aws:iam/rolePolicy:RolePolicy", "-execution").inputs["policy"])
    secrets = [s for s in execution["Statement"] if "secretsmanager:GetSecretValue" in s["Action"]]
    assert secrets and sorted(secrets[0]["Resource"]) == sorted([SECRET, MASTER])


def test_min_count_above_zero_has_no_scale_to_zero_policy():
    rec = run_function(lambda: worker("w", min_count=1, desired_count=1))
    names = [p.name for p in rec.by_type("aws:appautoscaling/policy:Policy")]
    assert sorted(names) == ["w-backlog", "w-from-zero"]
    assert len(rec.by_type("aws:cloudwatch/metricAlarm:MetricAlarm")) == 1


def test_the_execution_role_decrypts_secrets_with_their_keys_only():
    key = f"arn:aws:kms:us-east-1:{ACCOUNT_ID}:key/0a1b2c3d-4e5f-6789-abcd-ef0123456789"
    rec = run_function(lambda: worker("w", kms_key_arns={"secrets": [key]}))
    execution = json.loads(rec.one("aws:iam/rolePolicy:RolePolicy", "-execution").inputs["policy"])
    (decrypt,) = [s for s in execution["Statement"] if s["Action"] == "kms:Decrypt"]
    assert decrypt["Resource"] == [key]
    assert decrypt["Condition"]["StringEquals"]["kms:ViaService"] == (
        "secretsmanager.us-east-1.amazonaws.com"
    )


def test_a_program_gets_the_stack_files_errors():
    """A worker built in a program is decided as the stack file's: a job SQS cannot hide for
    long enough fails at the key a stack file would name, before anything is created."""
    with pytest.raises(ConfigError) as info:
        run_function(lambda: worker("w", max_job_seconds=43_200, job_seconds=30))
    assert [i.path for i in info.value.issues] == ["platform.workers.w.maxJobSeconds"]
