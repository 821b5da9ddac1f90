"""IAM policy documents for serving tasks, as pure functions returning JSON strings.

Every ECS task here has two roles, each granted exactly what it needs and nothing broader:
- the *execution role*, used by the ECS agent (or Fargate) before the container runs: pull the
  image from its ECR repository, write the container's log group, read the container's
  Secrets Manager secrets (`secrets` in the container definition, resolved at start);
- the *task role*, used by the code in the container: read its weights / model under one S3
  prefix (GetObject on the prefix's objects, ListBucket restricted to that prefix), which is
  what vLLM's Run:ai streamer, the Neuron entrypoint and the re-ranker's staging step do.

The documents are plain data so tests assert them exactly and the policy pack could reuse them;
components feed them ARNs that are only known at deploy time through `Output.apply`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ecs_inference.contracts import aws_limits

ECS_TASKS_PRINCIPAL = "ecs-tasks.amazonaws.com"
"""Service principal that assumes task and execution roles (EC2 and Fargate alike)."""
LAMBDA_PRINCIPAL = "lambda.amazonaws.com"
"""Service principal of Lambda functions' execution roles (the rollouts' smoke hook, the gateway
database's bootstrap)."""

# Private ECR registries: `<account>.dkr.ecr[-fips].<region>.amazonaws.com[.cn]` and the
# dual-stack `<account>.dkr-ecr.<region>.on.aws`.
_ECR_IMAGE = re.compile(
    r"^(?P<account>\d{12})\.(?:dkr\.ecr(?:-fips)?\.(?P<region>[a-z0-9-]+)\.amazonaws\.com"
    r"(?:\.cn)?|dkr-ecr\.(?P<region2>[a-z0-9-]+)\.on\.aws)/"
    r"(?P<repo>[a-z0-9][a-z0-9._/-]*?)(?::[\w.-]+)?(?:@sha256:[a-f0-9]{64})?$"
)
_ECR_HOST_HINT = re.compile(r"^\d{12}\.dkr[.-]ecr")
_BUCKET = aws_limits.S3_BUCKET_NAME
_SECRET_ARN = aws_limits.SECRETS_MANAGER_ARN
# An SSM parameter's ARN (the stack's own secrets: `components.stack_secrets`).
_PARAMETER_ARN = re.compile(r"^arn:aws[a-z-]*:ssm:[a-z0-9-]+:\d{12}:parameter/[A-Za-z0-9_.\-/]+$")
# A KMS key ARN (not an alias: IAM matches kms:Decrypt against the key ARN the request uses).
KMS_KEY_ARN = re.compile(r"^arn:aws[a-z-]*:kms:[a-z0-9-]+:\d{12}:key/[A-Za-z0-9-]+$")
_LOG_GROUP_ARN = re.compile(r"^arn:aws[a-z-]*:logs:[a-z0-9-]+:\d{12}:log-group:[^*]+$")


class PolicyArgumentError(ValueError):
    """An argument would make a policy broader than intended (or invalid)."""


def _document(statements: list[dict[str, Any]]) -> str:
    return json.dumps({"Version": "2012-10-17", "Statement": statements}, sort_keys=False)


def assume_role_policy(
    principal: str = ECS_TASKS_PRINCIPAL,
    *,
    account_id: str | None = None,
    region: str | None = None,
    partition: str = "aws",
) -> str:
    """Trust policy letting the AWS service `principal` assume the role: ECS tasks by default,
    or EC2 instances through an instance profile (`ec2.amazonaws.com`), ECS itself, Lambda.

    With `account_id` (default None: no condition) the trust is limited to tasks of that account
    (`aws:SourceAccount`), and with `region` too (default None) to ECS resources of that region
    (`aws:SourceArn`) — AWS's confused-deputy guard for ecs-tasks roles. `partition` default "aws".
    """
    statement: dict[str, Any] = {
        "Effect": "Allow",
        "Principal": {"Service": principal},
        "Action": "sts:AssumeRole",
    }
    if account_id is not None:
        if not re.fullmatch(r"\d{12}", account_id):
            raise PolicyArgumentError(f"account_id {account_id!r} must be 12 digits")
        condition: dict[str, Any] = {"StringEquals": {"aws:SourceAccount": account_id}}
        if region is not None:
            condition["ArnLike"] = {"aws:SourceArn": f"arn:{partition}:ecs:{region}:{account_id}:*"}
        statement["Condition"] = condition
    return _document([statement])


def deny_insecure_transport(
    sid: str, action: str, resource: str | list[str], principal: Any = "*"
) -> dict[str, Any]:
    """The resource-policy statement denying `action` on `resource` to every request not made
    over TLS (`aws:SecureTransport` false); `principal` default "*" (EFS wants `{"AWS": "*"}`)."""
    return {
        "Sid": sid,
        "Effect": "Deny",
        "Principal": principal,
        "Action": action,
        "Resource": resource,
        "Condition": {"Bool": {"aws:SecureTransport": "false"}},
    }


def ecr_repository_arn(image: str, partition: str = "aws") -> str | None:
    """ARN of the ECR repository `image` lives in, or None for a non-ECR registry.

    `123456789012.dkr.ecr.us-east-1.amazonaws.com/team/vllm:v1` ->
    `arn:aws:ecr:us-east-1:123456789012:repository/team/vllm`.
    """
    match = _ECR_IMAGE.match(image)
    if not match:
        if _ECR_HOST_HINT.match(image):
            # Silently granting nothing would surface only as a failed pull at deploy time.
            raise PolicyArgumentError(f"{image!r} looks like an ECR image but does not parse")
        return None
    region = match["region"] or match["region2"]
    return f"arn:{partition}:ecr:{region}:{match['account']}:repository/{match['repo']}"


def secret_policy_arn(value_from: str) -> str:
    """The secret ARN IAM must allow for an ECS `secrets[].valueFrom`.

    ECS accepts `<secret-arn>[:json-key:version-stage:version-id]`; GetSecretValue is authorised
    on the secret itself, i.e. the first seven `:`-separated fields. Wildcards are rejected (a
    `*` would read other secrets) and so is anything that is not a Secrets Manager ARN.
    """
    parts = value_from.split(":")
    arn = ":".join(parts[:7])
    if len(parts) not in (7, 10) or not _SECRET_ARN.match(arn) or "*" in arn or "?" in arn:
        raise PolicyArgumentError(
            f"{value_from!r} must be a full Secrets Manager secret ARN "
            "(arn:aws:secretsmanager:<region>:<account>:secret:<name>-<suffix>, optionally "
            "followed by :<json-key>:<version-stage>:<version-id>), without wildcards"
        )
    return arn


def secret_read(value_from: str) -> tuple[str, str]:
    """(action, resource) IAM must allow the execution role for a `secrets[].valueFrom`: an SSM
    parameter's ARN is read with `ssm:GetParameters` on that ARN, anything else must be a
    Secrets Manager secret (`secret_policy_arn`, read with `secretsmanager:GetSecretValue`)."""
    if _PARAMETER_ARN.match(value_from):
        return "ssm:GetParameters", value_from
    return "secretsmanager:GetSecretValue", secret_policy_arn(value_from)


def kms_decrypt_statement(sid: str, key_arns: Iterable[str], via_service: str) -> dict[str, Any]:
    """kms:Decrypt on exactly `key_arns`, and only when `via_service` (e.g.
    `s3.eu-west-1.amazonaws.com`) calls KMS on the role's behalf."""
    keys = sorted(set(key_arns))
    bad = [k for k in keys if not KMS_KEY_ARN.match(k)]
    if bad or not keys:
        raise PolicyArgumentError(f"{bad or keys!r}: need KMS key ARNs (arn:...:kms:...:key/<id>)")
    return {
        "Sid": sid,
        "Effect": "Allow",
        "Action": "kms:Decrypt",
        "Resource": keys,
        "Condition": {"StringEquals": {"kms:ViaService": via_service}},
    }


def execution_role_policy(
    *,
    log_group_arn: str,
    containers: Sequence[Mapping[str, Any]],
    partition: str = "aws",
    secret_kms_key_arns: Iterable[str] = (),
) -> str:
    """Inline policy of a task's execution role, derived from the task's container definitions.

    The ECS agent (or Fargate) pulls every container's image and resolves every container's
    `secrets` with this role before any container starts, sidecars included, so the grants come
    from `containers` (the list the task definition registers), never from one image:
    - logs:CreateLogStream / PutLogEvents on the streams of `log_group_arn` only;
    - secretsmanager:GetSecretValue, ssm:GetParameters on exactly the secrets and parameters
      the containers' `secrets[].valueFrom` name (see `secret_read`; none: no statement);
    - for every image in ECR: ecr:GetAuthorizationToken (an account-level call, AWS only
      accepts Resource "*") and the three layer-pull actions on those repositories. Images from
      other registries need no IAM permission to pull;
    - with `secret_kms_key_arns` (default none): kms:Decrypt on those customer-managed keys,
      through Secrets Manager of the log group's region only.

    No wildcard ARN is accepted: a `*` in a secret ARN would read other secrets.
    """
    if not _LOG_GROUP_ARN.match(log_group_arn):
        raise PolicyArgumentError(
            f"log_group_arn {log_group_arn!r} must be one log group's ARN (no wildcard)"
        )
    group = log_group_arn.removesuffix(":*")
    statements: list[dict[str, Any]] = [
        {
            "Sid": "WriteOwnLogGroup",
            "Effect": "Allow",
            "Action": ["logs:CreateLogStream", "logs:PutLogEvents"],
            "Resource": f"{group}:log-stream:*",
        }
    ]
    reads = sorted(
        {
            secret_read(entry["valueFrom"])
            for container in containers
            for entry in container.get("secrets") or ()
        }
    )
    for action, sid in (
        ("secretsmanager:GetSecretValue", "ReadContainerSecrets"),
        ("ssm:GetParameters", "ReadContainerParameters"),
    ):
        resources = [resource for a, resource in reads if a == action]
        if resources:
            statements.append(
                {"Sid": sid, "Effect": "Allow", "Action": action, "Resource": resources}
            )
    kms_keys = list(secret_kms_key_arns)
    if kms_keys:
        region = log_group_arn.split(":")[3]
        statements.append(
            kms_decrypt_statement(
                "DecryptContainerSecrets", kms_keys, f"secretsmanager.{region}.amazonaws.com"
            )
        )
    repositories = sorted(
        {arn for c in containers if (arn := ecr_repository_arn(c["image"], partition))}
    )
    if repositories:
        statements += [
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
                "Resource": repositories,
            },
        ]
    return _document(statements)


# What the SSM agent ECS injects into a task needs for an ECS Exec session; AWS documents these
# with Resource "*" (the channels have no ARN).
ECS_EXEC_ACTIONS = (
    "ssmmessages:CreateControlChannel",
    "ssmmessages:CreateDataChannel",
    "ssmmessages:OpenControlChannel",
    "ssmmessages:OpenDataChannel",
)


def ecs_exec_policy(log_group_arn: str | None = None) -> str:
    """Task role policy for ECS Exec: the ssmmessages channels, and with `log_group_arn`
    (default None: sessions not logged) writing the session transcript to that one group
    (the agent in the task writes it with the task role)."""
    statements: list[dict[str, Any]] = [
        {
            "Sid": "EcsExecChannels",
            "Effect": "Allow",
            "Action": list(ECS_EXEC_ACTIONS),
            "Resource": "*",
        }
    ]
    if log_group_arn is not None:
        if not _LOG_GROUP_ARN.match(log_group_arn):
            raise PolicyArgumentError(f"log_group_arn {log_group_arn!r} must be one log group")
        group = log_group_arn.removesuffix(":*")
        statements += [
            {
                "Sid": "EcsExecDescribeLogGroups",
                "Effect": "Allow",
                # Account-level list call: AWS accepts no narrower resource.
                "Action": "logs:DescribeLogGroups",
                "Resource": "*",
            },
            {
                "Sid": "EcsExecSessionLog",
                "Effect": "Allow",
                "Action": ["logs:CreateLogStream", "logs:DescribeLogStreams", "logs:PutLogEvents"],
                "Resource": [group, f"{group}:log-stream:*"],
            },
        ]
    return _document(statements)


def partition_of(region: str) -> str:
    """The AWS partition a region belongs to."""
    if region.startswith("cn-"):
        return "aws-cn"
    if region.startswith("us-gov-"):
        return "aws-us-gov"
    return "aws"


def split_s3_uri(uri: str) -> tuple[str, str]:
    """`s3://bucket/a/b/` -> ("bucket", "a/b"): bucket and prefix without surrounding slashes."""
    if not uri.startswith("s3://"):
        raise PolicyArgumentError(f"{uri!r} is not an s3:// URI")
    bucket, _, prefix = uri.removeprefix("s3://").partition("/")
    return bucket, prefix.strip("/")


def s3_read_policy(
    bucket: str,
    prefix: str,
    *,
    partition: str = "aws",
    kms_key_arn: str | None = None,
    region: str | None = None,
    extra_prefixes: Sequence[str] = (),
) -> str:
    """Task role policy: read the objects under one S3 prefix, and list only that prefix.
    `extra_prefixes` (default none) are further prefixes of the bucket read the same way (a
    model's LoRA adapters).

    `prefix` is given without leading/trailing slash ("models/llama"); the empty prefix means
    the whole bucket (a bucket dedicated to one model). `s3:ListBucket` is a bucket-level action,
    so it is scoped with the `s3:prefix` condition (the prefix itself and everything under it);
    `s3:GetObject` (which also covers HEAD and ranged GETs used by the streamer) is scoped to
    the object ARNs under the prefix. `partition` default "aws". With `kms_key_arn` (default
    None: SSE-S3 objects need no KMS permission) kms:Decrypt on that key through S3 of `region`.
    """
    if not _BUCKET.match(bucket):
        raise PolicyArgumentError(f"bucket {bucket!r} is not an S3 bucket name")
    prefixes = [p.strip("/") for p in (prefix, *extra_prefixes)]
    for each in prefixes:
        if any(c in each for c in "*?$") or any(part in ("", ".", "..") for part in _parts(each)):
            raise PolicyArgumentError(
                f"prefix {each!r} must be a plain key prefix (no wildcards, empty or dot segments)"
            )
    if "" in prefixes:
        prefixes = [""]  # the whole bucket covers every other prefix
    prefixes = list(dict.fromkeys(prefixes))
    bucket_arn = f"arn:{partition}:s3:::{bucket}"
    objects = [f"{bucket_arn}/{p}/*" if p else f"{bucket_arn}/*" for p in prefixes]
    list_statement: dict[str, Any] = {
        "Sid": "ListWeightsPrefix",
        "Effect": "Allow",
        "Action": "s3:ListBucket",
        "Resource": bucket_arn,
    }
    if prefixes != [""]:
        listed = [key for p in prefixes for key in (p, f"{p}/*")]
        list_statement["Condition"] = {"StringLike": {"s3:prefix": listed}}
    statements: list[dict[str, Any]] = [
        {
            "Sid": "ReadWeights",
            "Effect": "Allow",
            "Action": "s3:GetObject",
            "Resource": objects[0] if len(objects) == 1 else objects,
        },
        list_statement,
    ]
    if kms_key_arn is not None:
        if region is None:
            raise PolicyArgumentError("a KMS key for the weights needs the bucket's region")
        statements.append(
            kms_decrypt_statement("DecryptWeights", [kms_key_arn], f"s3.{region}.amazonaws.com")
        )
    return _document(statements)


def _parts(prefix: str) -> Sequence[str]:
    return prefix.split("/") if prefix else ()
