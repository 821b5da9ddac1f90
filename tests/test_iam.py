"""IAM documents of serving tasks: exact statements, and nothing broader than asked for."""

from __future__ import annotations

import json

import pytest

from ecs_inference import iam

ACCOUNT = "123456789012"
SECRET = f"arn:aws:secretsmanager:us-east-1:{ACCOUNT}:secret:vllm-api-key-AbCdEf"
LOG_GROUP = f"arn:aws:logs:us-east-1:{ACCOUNT}:log-group:/ecs-inference/dev/llama"
ECR_IMAGE = f"{ACCOUNT}.dkr.ecr.us-east-1.amazonaws.com/team/vllm:v0.33.0"


def statements(document: str) -> list[dict]:
    parsed = json.loads(document)
    assert parsed["Version"] == "2012-10-17"
    return parsed["Statement"]


def test_assume_role_trusts_ecs_tasks_of_one_account_and_region() -> None:
    [statement] = statements(iam.assume_role_policy(account_id=ACCOUNT, region="us-east-1"))
    assert statement == {
        "Effect": "Allow",
        "Principal": {"Service": "ecs-tasks.amazonaws.com"},
        "Action": "sts:AssumeRole",
        "Condition": {
            "StringEquals": {"aws:SourceAccount": ACCOUNT},
            "ArnLike": {"aws:SourceArn": f"arn:aws:ecs:us-east-1:{ACCOUNT}:*"},
        },
    }


def test_assume_role_without_account_has_no_condition_and_rejects_bad_account() -> None:
    [statement] = statements(iam.assume_role_policy())
    assert "Condition" not in statement
    with pytest.raises(iam.PolicyArgumentError, match="12 digits"):
        iam.assume_role_policy(account_id="12345")


def test_s3_read_policy_is_scoped_to_one_prefix() -> None:
    read, listing = statements(iam.s3_read_policy("weights", "/models/llama-3.1-8b/"))
    assert read == {
        "Sid": "ReadWeights",
        "Effect": "Allow",
        "Action": "s3:GetObject",
        "Resource": "arn:aws:s3:::weights/models/llama-3.1-8b/*",
    }
    assert listing == {
        "Sid": "ListWeightsPrefix",
        "Effect": "Allow",
        "Action": "s3:ListBucket",
        "Resource": "arn:aws:s3:::weights",
        "Condition": {
            "StringLike": {"s3:prefix": ["models/llama-3.1-8b", "models/llama-3.1-8b/*"]}
        },
    }


def test_s3_read_policy_whole_bucket_and_partition() -> None:
    read, listing = statements(iam.s3_read_policy("weights", "", partition="aws-cn"))
    assert read["Resource"] == "arn:aws-cn:s3:::weights/*"
    assert listing["Resource"] == "arn:aws-cn:s3:::weights"
    assert "Condition" not in listing


@pytest.mark.parametrize(
    ("bucket", "prefix", "message"),
    [
        ("Weights", "llama", "not an S3 bucket name"),
        ("weights", "llama/*", "plain key prefix"),
        ("weights", "a//b", "plain key prefix"),
        ("weights", "a/../b", "plain key prefix"),
    ],
)
def test_s3_read_policy_rejects_broadening_input(bucket: str, prefix: str, message: str) -> None:
    with pytest.raises(iam.PolicyArgumentError, match=message):
        iam.s3_read_policy(bucket, prefix)


def test_execution_role_policy_exact_statements() -> None:
    document = iam.execution_role_policy(
        log_group_arn=LOG_GROUP,
        containers=[
            {
                "image": ECR_IMAGE,
                "secrets": [
                    {"name": "A", "valueFrom": SECRET},
                    {"name": "B", "valueFrom": f"{SECRET}:password::"},
                ],
            }
        ],
    )
    assert statements(document) == [
        {
            "Sid": "WriteOwnLogGroup",
            "Effect": "Allow",
            "Action": ["logs:CreateLogStream", "logs:PutLogEvents"],
            "Resource": f"{LOG_GROUP}:log-stream:*",
        },
        {
            # the JSON-key form of the same secret collapses into the one secret ARN
            "Sid": "ReadContainerSecrets",
            "Effect": "Allow",
            "Action": "secretsmanager:GetSecretValue",
            "Resource": [SECRET],
        },
        {
            "Sid": "EcrAuthToken",
            "Effect": "Allow",
            "Action": "ecr:GetAuthorizationToken",
            "Resource": "*",
        },
        {
            "Sid": "PullImage",
            "Effect": "Allow",
            "Action": [
                "ecr:BatchCheckLayerAvailability",
                "ecr:BatchGetImage",
                "ecr:GetDownloadUrlForLayer",
            ],
            "Resource": [f"arn:aws:ecr:us-east-1:{ACCOUNT}:repository/team/vllm"],
        },
    ]


def test_execution_role_policy_pulls_every_container_image_and_reads_every_secret() -> None:
    """ECS pulls every container's image and resolves every container's secrets with the
    execution role before the task starts: a sidecar's repository and secret are granted too."""
    sidecar = f"{ACCOUNT}.dkr.ecr.us-east-1.amazonaws.com/ecs-inference/metrics:v1"
    other_secret = f"arn:aws:secretsmanager:us-east-1:{ACCOUNT}:secret:sidecar-AbCdEf"
    document = iam.execution_role_policy(
        log_group_arn=LOG_GROUP,
        containers=[
            {"image": ECR_IMAGE},
            {"image": sidecar, "secrets": [{"name": "S", "valueFrom": other_secret}]},
            {"image": "public.ecr.aws/aws-observability/aws-otel-collector:v0.40.0"},
        ],
    )
    by_sid = {s["Sid"]: s for s in statements(document)}
    assert by_sid["PullImage"]["Resource"] == [
        f"arn:aws:ecr:us-east-1:{ACCOUNT}:repository/ecs-inference/metrics",
        f"arn:aws:ecr:us-east-1:{ACCOUNT}:repository/team/vllm",
    ]
    assert by_sid["ReadContainerSecrets"]["Resource"] == [other_secret]


def test_execution_role_policy_without_secrets_or_ecr_image() -> None:
    document = iam.execution_role_policy(
        log_group_arn=LOG_GROUP, containers=[{"image": "vllm/vllm-openai:v0.33.0"}]
    )
    assert [s["Sid"] for s in statements(document)] == ["WriteOwnLogGroup"]
    # the only "*" resource anywhere is ECR's account-level auth token call
    assert '"*"' not in document


@pytest.mark.parametrize(
    "arn",
    [
        f"arn:aws:secretsmanager:us-east-1:{ACCOUNT}:secret:*",
        f"arn:aws:secretsmanager:us-east-1:{ACCOUNT}:secret:key-??????",
        f"arn:aws:ssm:us-east-1:{ACCOUNT}:parameter/*",
        "key-AbCdEf",
    ],
)
def test_execution_role_policy_rejects_wildcard_or_foreign_secrets(arn: str) -> None:
    with pytest.raises(iam.PolicyArgumentError, match="Secrets Manager secret ARN"):
        iam.execution_role_policy(
            log_group_arn=LOG_GROUP,
            containers=[{"image": ECR_IMAGE, "secrets": [{"name": "S", "valueFrom": arn}]}],
        )


def test_execution_role_policy_reads_a_parameter_with_get_parameters() -> None:
    parameter = f"arn:aws:ssm:us-east-1:{ACCOUNT}:parameter/app/dev/key"
    document = json.loads(
        iam.execution_role_policy(
            log_group_arn=LOG_GROUP,
            containers=[{"image": ECR_IMAGE, "secrets": [{"name": "S", "valueFrom": parameter}]}],
        )
    )
    (read,) = [s for s in document["Statement"] if s["Sid"] == "ReadContainerParameters"]
    assert (read["Action"], read["Resource"]) == ("ssm:GetParameters", [parameter])


def test_execution_role_policy_rejects_wildcard_log_group() -> None:
    with pytest.raises(iam.PolicyArgumentError, match="one log group"):
        iam.execution_role_policy(
            log_group_arn=f"arn:aws:logs:us-east-1:{ACCOUNT}:log-group:*", containers=[]
        )


@pytest.mark.parametrize(
    ("image", "expected"),
    [
        (ECR_IMAGE, f"arn:aws:ecr:us-east-1:{ACCOUNT}:repository/team/vllm"),
        (
            f"{ACCOUNT}.dkr.ecr.eu-west-1.amazonaws.com/reranker@sha256:{'a' * 64}",
            f"arn:aws:ecr:eu-west-1:{ACCOUNT}:repository/reranker",
        ),
        (
            f"{ACCOUNT}.dkr-ecr.us-east-1.on.aws/vllm:v1",
            f"arn:aws:ecr:us-east-1:{ACCOUNT}:repository/vllm",
        ),
        ("public.ecr.aws/neuron/vllm:1.0", None),
        ("vllm/vllm-openai:v0.33.0", None),
    ],
)
def test_ecr_repository_arn(image: str, expected: str | None) -> None:
    assert iam.ecr_repository_arn(image) == expected


def test_malformed_ecr_image_is_an_error_not_a_missing_grant() -> None:
    with pytest.raises(iam.PolicyArgumentError, match="looks like an ECR image"):
        iam.ecr_repository_arn(f"{ACCOUNT}.dkr.ecr.us-east-1.amazonaws.com/Bad Repo:v1")


def test_split_s3_uri() -> None:
    assert iam.split_s3_uri("s3://weights/models/llama/") == ("weights", "models/llama")
    assert iam.split_s3_uri("s3://weights") == ("weights", "")
    with pytest.raises(iam.PolicyArgumentError):
        iam.split_s3_uri("https://weights/x")
