"""Every resource's inputs as the AWS API requests they become, checked as AWS would (DESIGN §9).

One registry (`registry.py`), keyed by Pulumi type token, filled by one module per AWS service:

- `MAPPERS[token](inputs, physical_name)` returns the `ApiRequest`s the provider sends for a
  resource (CreateTargetGroup + ModifyTargetGroupAttributes, CreateRole + PutRolePolicy, ...).
  Each is validated against botocore's service model: required members, types, lengths,
  ranges, enums and patterns.
- `RULES[token]` are the per-resource AWS rules botocore cannot express (Cognito domain reserved
  words, IAM policy grammar and size, log retention values, ...); `STACK_RULES` are the ones that
  need several resources (listener priorities, rules per load balancer, inline policy size per
  role, warm pool with Spot). Each one's source is listed in docs/fidelity.md.

Values still unknown at preview time (the ARN of a resource not yet created) are left out of a
request and never reported, not even as a missing required member: they are never guessed.

Adding a resource type (with its naming rule in contracts/aws_limits.py `NAME_RULES`), in the
module of its AWS service (a new module is imported below)::

    @maps("aws:sns/topic:Topic")
    def _sns_topic(i: Inputs, name: str | None) -> list[ApiRequest]:
        return [ApiRequest("sns", "CreateTopic", {"Name": name, "Tags": tags(i.get("tags"))})]
"""

from __future__ import annotations

# Each service module registers its mappers and rules when imported.
from tools.aws_requests import (  # noqa: F401
    acm,
    application_autoscaling,
    autoscaling,
    cloudwatch,
    cognito,
    ec2,
    ecr,
    ecs,
    efs,
    elbv2,
    events,
    iam,
    kms,
    lambda_,
    logs,
    rds,
    route53,
    s3,
    secretsmanager,
    servicediscovery,
    sns,
    sqs,
    ssm,
    vpc,
)
from tools.aws_requests.iam import policy_chars, policy_problems
from tools.aws_requests.registry import (
    MAPPERS,
    RULES,
    STACK_RULES,
    ApiRequest,
    Finding,
    Inputs,
    Quotas,
    Resource,
    covered_types,
    maps,
    resource_problems,
    rule,
    stack_problems,
    stack_rule,
)

__all__ = [
    "MAPPERS",
    "RULES",
    "STACK_RULES",
    "ApiRequest",
    "Finding",
    "Inputs",
    "Quotas",
    "Resource",
    "covered_types",
    "maps",
    "policy_chars",
    "policy_problems",
    "resource_problems",
    "rule",
    "stack_problems",
    "stack_rule",
]
