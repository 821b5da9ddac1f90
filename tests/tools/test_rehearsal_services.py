"""What AWS services and instances do with the stack's roles: each check passes on the
reference stack and fails, naming the call, when one grant it relies on is taken away."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from typing import Any

import pytest

from tools.preview import PreviewResult, run_preview
from tools.recording import ACCOUNT_ID, RecordedResource
from tools.rehearsal import rehearse

Edit = Callable[[dict[str, Any]], None]


@pytest.fixture(scope="module")
def prod() -> PreviewResult:
    result = run_preview("prod", policy_pack=None)
    assert result.ok, result.error
    return result


def drop_statements(key: str, keep: Callable[[dict[str, Any]], bool]) -> Edit:
    def edit(inputs: dict[str, Any]) -> None:
        doc = json.loads(inputs[key])
        doc["Statement"] = [s for s in doc["Statement"] if keep(s)]
        inputs[key] = json.dumps(doc)

    return edit


def without_principal(service: str) -> Callable[[dict[str, Any]], bool]:
    def keep(statement: dict[str, Any]) -> bool:
        return service not in json.dumps(statement.get("Principal"))

    return keep


def edited(result: PreviewResult, type_: str, name: str, edit: Edit) -> list[RecordedResource]:
    out = []
    for r in result.resources:
        if r.type == type_ and r.name == name:
            inputs = json.loads(json.dumps(r.inputs))
            edit(inputs)
            r = dataclasses.replace(r, inputs=inputs)
        out.append(r)
    return out


POLICY = "aws:iam/rolePolicy:RolePolicy"
ARN = "arn:aws:{}:us-east-1:123456789012:"
NO_STATEMENT = drop_statements("policy", lambda s: False)


def replace(key: str, old: str, new: str) -> Edit:
    def edit(inputs: dict[str, Any]) -> None:
        inputs[key] = inputs[key].replace(old, new)

    return edit


MUTATIONS = [
    # (what, type, logical name, edit, text every finding carries)
    ("topic policy without CloudWatch", "aws:sns/topicPolicy:TopicPolicy", "inference-ops-alarms",
     drop_statements("policy", without_principal("cloudwatch.amazonaws.com")),
     "sns:Publish on arn:aws:sns:us-east-1:123456789012:inference-ops-alarms-"),
    ("key policy without the publishing services", "aws:kms/key:Key", "inference-ops-alarms",
     drop_statements("policy", without_principal("events.amazonaws.com")),
     "on arn:aws:kms:us-east-1:123456789012:key/inference-ops-alarms-"),
    ("bucket policy without the ELB account", "aws:s3/bucketPolicy:BucketPolicy",
     "inference-edge-logs-policy", drop_statements("policy", without_principal("127311923021")),
     "s3:PutObject on arn:aws:s3:::inference-edge-logs-"),
    ("instance role without the hook grant", POLICY, "inference-l40s-8x-prepull", NO_STATEMENT,
     "autoscaling:CompleteLifecycleAction on " + ARN.format("autoscaling") + "autoScalingGroup:"),
    ("infrastructure role without PassRole", POLICY, "inference-l40s-pass-instance-role",
     NO_STATEMENT, "iam:PassRole on arn:aws:iam::123456789012:role/inference-l40s-instance-role-"),
    ("task role trusting EC2 instead", "aws:iam/role:Role", "inference-llama-8b-task",
     replace("assumeRolePolicy", "ecs-tasks.amazonaws.com", "ec2.amazonaws.com"),
     "sts:AssumeRole on arn:aws:iam::123456789012:role/inference-llama-8b-task-"),
    ("host telemetry without its namespace", POLICY, "inference-l40s-4x-telemetry",
     replace("policy", "ECSInference/Hosts", "Other"),
     "cloudwatch:PutMetricData on * is denied to role inference-l40s-4x-instance-role-"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("type_", "name", "edit", "expected"), [m[1:] for m in MUTATIONS], ids=[m[0] for m in MUTATIONS]
)
def test_a_missing_grant_is_named(
    prod: PreviewResult, type_: str, name: str, edit: Edit, expected: str
) -> None:
    out = rehearse(edited(prod, type_, name, edit), "us-east-1", ACCOUNT_ID)
    assert out.findings, f"{name}: nothing failed"
    assert all(expected in f.message for f in out.findings), [f.message for f in out.findings]


def test_a_logs_bucket_under_a_kms_key_is_refused(prod: PreviewResult) -> None:
    def kms(inputs: dict[str, Any]) -> None:
        inputs["rules"][0]["applyServerSideEncryptionByDefault"]["sseAlgorithm"] = "aws:kms"

    encryption = (
        "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration"
    )
    resources = edited(prod, encryption, "inference-edge-logs-encryption", kms)
    (finding,) = rehearse(resources, "us-east-1", ACCOUNT_ID).findings
    assert "ELB access logs need SSE-S3" in finding.message


def test_a_worker_key_the_gateway_refuses_fails_the_rehearsal() -> None:
    """A program of its own wiring a worker to a database-less gateway with another key."""
    agents = run_preview("agents", policy_pack=None)
    assert agents.ok, agents.error
    other = "arn:aws:secretsmanager:us-east-1:123456789012:secret:agents/other-key-AbCdEf"

    def other_key(inputs: dict[str, Any]) -> None:
        containers = json.loads(inputs["containerDefinitions"])
        for secret in containers[0]["secrets"]:
            if secret["name"] == "GATEWAY_API_KEY":
                secret["valueFrom"] = other
        inputs["containerDefinitions"] = json.dumps(containers)

    task = "aws:ecs/taskDefinition:TaskDefinition"
    resources = edited(agents, task, "inference-summarise-task", other_key)
    messages = [f.message for f in rehearse(resources, "us-east-1", ACCOUNT_ID).findings]
    assert any("container worker: GATEWAY_API_KEY is " + other in m for m in messages), messages
    assert any("every job would get 401" in m for m in messages)


def test_a_profile_grant_missing_a_destination_region_fails_the_rehearsal() -> None:
    """Calling through an inference profile is authorised on the profile and on the model in
    the Region the profile picks: a grant without one of them fails at some request."""
    agents = run_preview("agents", policy_pack=None)
    west = "arn:aws:bedrock:us-west-2::foundation-model/anthropic.claude-haiku-4-5-20251001-v1:0"

    def without_west(inputs: dict[str, Any]) -> None:
        doc = json.loads(inputs["policy"])
        doc["Statement"][0]["Resource"].remove(west)
        inputs["policy"] = json.dumps(doc)

    resources = edited(agents, POLICY, "inference-gateway-bedrock", without_west)
    messages = [f.message for f in rehearse(resources, "us-east-1", ACCOUNT_ID).findings]
    assert messages and all(f"on {west} is denied" in m for m in messages), messages
    assert all(
        "container litellm" in m and "serve claude-haiku from Bedrock" in m for m in messages
    )
