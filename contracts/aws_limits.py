"""AWS and provider limits, stated once.

Every limit the program designs around lives here, with its source. Components size names and
values against these; the offline preview checks what was registered against the same table.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, replace

# pulumi-aws autonames a resource `<logical name>-<7 random characters>` (provider/resources.go:
# `tfbridge.AutoName(...)`, `AutoNameOptions{Separator: "-", Randlen: 7}`).
AUTONAME_SEPARATOR = "-"
AUTONAME_RANDOM_CHARS = 7
# `namePrefix` is completed by the provider with a 26-character unique id (terraform's
# `id.PrefixedUniqueId`: a timestamp plus a counter).
NAME_PREFIX_SUFFIX_CHARS = 26
# Hex digits of the stable hash that keeps a shortened name unique per project, stack and logical
# resource (32 bits: a collision needs ~65k names in one account and region).
NAME_HASH_CHARS = 8


# What pulumi-aws does when a type declares no autoname rule of its own: every resource whose
# Terraform schema has an input `name` is autonamed with at most 255 characters
# (provider/autonaming.go `setAutonaming`: `maxLength := 255`, `separator := "-"`).
PROVIDER_DEFAULT_AUTONAME_MAX = 255


@dataclass(frozen=True)
class NameRule:
    """The provider's and the API's rule for one resource type's physical name.

    Three ways a name reaches AWS: explicit (`name_input` set), `<prefix_input>` + 26
    characters, or the provider's autoname `<logical>-<7 random>` (only when `autoname_max` is
    not None). The provider refuses an autoname longer than `autoname_max`; AWS (and the
    Terraform validators in front of it) refuse any name longer than `max_length` or not
    matching `pattern`.
    """

    max_length: int
    """Longest name AWS accepts."""
    pattern: str = r"^[A-Za-z0-9-]+$"
    """What the whole name must match (AWS's character set)."""
    note: str = ""
    min_length: int = 1
    name_input: str = "name"
    """The Pulumi input that carries the name (camelCase)."""
    autoname_max: int | None = PROVIDER_DEFAULT_AUTONAME_MAX
    """The provider's `AutoName` Maxlen; None: the provider never autonames this type."""
    prefix_input: str | None = "namePrefix"
    """The Pulumi input that takes a prefix completed with 26 characters; None: no such input."""
    prefix_max: int | None = None
    """Longest prefix the provider accepts; default `max_length - 26`."""
    lowercase: bool = False
    """The provider lower-cases the autoname (S3 buckets)."""
    reserved_prefixes: tuple[str, ...] = ()
    """Case-insensitive beginnings AWS refuses."""
    source: str = ""
    """Where the limits come from."""

    def fits_autoname(self, logical: str) -> bool:
        """Whether `<logical>-<7 random>` stays within the limit."""
        return len(logical) + len(AUTONAME_SEPARATOR) + AUTONAME_RANDOM_CHARS <= self.max_length

    @property
    def longest_prefix(self) -> int:
        """Longest `prefix_input` value that still leaves room for the 26-character suffix."""
        if self.prefix_max is not None:
            return self.prefix_max
        return self.max_length - NAME_PREFIX_SUFFIX_CHARS

    def problems(self, name: str) -> list[str]:
        """What AWS would say about `name` as this type's physical name (empty when it fits)."""
        found: list[str] = []
        if len(name) > self.max_length:
            found.append(f"{len(name)} characters, longer than the maximum {self.max_length}")
        if len(name) < self.min_length:
            found.append(f"{len(name)} characters, shorter than the minimum {self.min_length}")
        if len(name) <= self.max_length and not re.match(self.pattern, name):
            found.append(
                f"does not match {self.pattern}" + (f" ({self.note})" if self.note else "")
            )
        for reserved in self.reserved_prefixes:
            if name.lower().startswith(reserved):
                found.append(f"must not begin with '{reserved}'")
        return found


_ELBV2_PATTERN = r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,30}[A-Za-z0-9])?$"
_ELBV2_NOTE = "alphanumerics and hyphens, not starting or ending with a hyphen"
# IAM names: `[\w+=,.@-]+` (iam service model, roleNameType / policyNameType / ...).
_IAM_PATTERN = r"^[\w+=,.@-]+$"
# Cognito pool, client and resource-server names: `[\w\s+=,.@-]+` (cognito-idp model).
_COGNITO_PATTERN = r"^[\w\s+=,.@-]+$"
_ECS_PATTERN = r"^[A-Za-z0-9_-]+$"
_PROVIDER = "pulumi-aws provider/"

# Target groups and load balancers: 32 characters, alphanumerics and hyphens, no leading or
# trailing hyphen (CreateTargetGroup / CreateLoadBalancer API reference; the provider's own
# autoname limit is 32 for target groups, 255 for load balancers, whose 32 Terraform enforces).
ELBV2_NAME = NameRule(
    max_length=32,
    pattern=_ELBV2_PATTERN,
    note=_ELBV2_NOTE,
    # terraform-provider-aws docs (lb, lb_target_group): "name_prefix ... Cannot be longer than
    # 6 characters".
    prefix_max=6,
    source="ELBv2 API reference; terraform-provider-aws lb docs",
)

# Every type the programs here create that has a physical name, by Pulumi type token. Provider
# autoname limits: pulumi/pulumi-aws provider/autonaming.go (default 255), aliases.go
# (`aws_lb_target_group`), resource_overrides.go (`aws_iam_role`, `aws_s3_bucket`, ...), as
# extracted in tests/contracts/fixtures/pulumi_aws_autonaming.txt. AWS limits: the service's API
# reference and botocore model (shape names given).
NAME_RULES: dict[str, NameRule] = {
    "aws:lb/targetGroup:TargetGroup": replace(
        ELBV2_NAME, autoname_max=32, source=_PROVIDER + "aliases.go; CreateTargetGroup"
    ),
    "aws:lb/loadBalancer:LoadBalancer": replace(
        ELBV2_NAME,
        reserved_prefixes=("internal-",),
        source="CreateLoadBalancer: 32 characters, must not begin with 'internal-'",
    ),
    "aws:iam/role:Role": NameRule(
        64, _IAM_PATTERN, autoname_max=64, source=_PROVIDER + "resource_overrides.go; roleNameType"
    ),
    "aws:iam/rolePolicy:RolePolicy": NameRule(128, _IAM_PATTERN, source="iam policyNameType"),
    "aws:iam/policy:Policy": NameRule(128, _IAM_PATTERN, source="iam policyNameType"),
    "aws:iam/instanceProfile:InstanceProfile": NameRule(
        128, _IAM_PATTERN, source="iam instanceProfileNameType"
    ),
    "aws:ecs/cluster:Cluster": NameRule(
        255, _ECS_PATTERN, prefix_input=None, source="ECS CreateCluster clusterName"
    ),
    "aws:ecs/service:Service": NameRule(
        255, _ECS_PATTERN, prefix_input=None, source="ECS CreateService serviceName"
    ),
    "aws:ecs/capacityProvider:CapacityProvider": NameRule(
        255,
        _ECS_PATTERN,
        prefix_input=None,
        reserved_prefixes=("aws", "ecs", "fargate"),
        source="ECS CreateCapacityProvider: can't be prefixed with aws, ecs or fargate",
    ),
    "aws:ecs/taskDefinition:TaskDefinition": NameRule(
        255,
        _ECS_PATTERN,
        name_input="family",
        autoname_max=None,
        prefix_input=None,
        source="ECS RegisterTaskDefinition family",
    ),
    "aws:cloudwatch/logGroup:LogGroup": NameRule(
        512, r"^[.\-_/#A-Za-z0-9]+$", source="logs LogGroupName"
    ),
    "aws:ec2/securityGroup:SecurityGroup": NameRule(
        255,
        r"^[A-Za-z0-9 ._\-:/()#,@\[\]+=&;{}!$*]+$",
        prefix_max=100,
        reserved_prefixes=("sg-",),
        source="EC2 CreateSecurityGroup GroupName (VPC character set, not 'sg-')",
    ),
    "aws:ec2/launchTemplate:LaunchTemplate": NameRule(
        128, r"^[a-zA-Z0-9().\-/_]+$", min_length=3, source="ec2 LaunchTemplateName"
    ),
    "aws:autoscaling/group:Group": NameRule(
        255, r"^[^\x00-\x08\x0b\x0c\x0e-\x1f]+$", source="autoscaling XmlStringMaxLen255"
    ),
    "aws:cognito/userPool:UserPool": NameRule(
        128, _COGNITO_PATTERN, prefix_input=None, source="cognito-idp UserPoolNameType"
    ),
    "aws:cognito/userPoolClient:UserPoolClient": NameRule(
        128, _COGNITO_PATTERN, prefix_input=None, source="cognito-idp ClientNameType"
    ),
    "aws:cognito/resourceServer:ResourceServer": NameRule(
        256, _COGNITO_PATTERN, prefix_input=None, source="cognito-idp ResourceServerNameType"
    ),
    "aws:cognito/userPoolDomain:UserPoolDomain": NameRule(
        63,
        r"^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$",
        name_input="domain",
        autoname_max=None,
        prefix_input=None,
        note="lowercase letters, digits and hyphens",
        source="cognito-idp DomainType",
    ),
    "aws:appautoscaling/policy:Policy": NameRule(
        256, r"^\S(?:.*\S)?$", prefix_input=None, source="application-autoscaling PolicyName"
    ),
    "aws:s3/bucket:Bucket": NameRule(
        63,
        r"^[a-z0-9][a-z0-9.-]*[a-z0-9]$",
        min_length=3,
        name_input="bucket",
        autoname_max=63,
        prefix_input="bucketPrefix",
        prefix_max=37,
        lowercase=True,
        reserved_prefixes=("xn--", "sthree-", "amzn-s3-demo-"),
        note="lowercase letters, digits, dots and hyphens",
        source=_PROVIDER + "resource_overrides.go; S3 bucket naming rules",
    ),
    "aws:secretsmanager/secret:Secret": NameRule(
        512, r"^[A-Za-z0-9/_+=.@-]+$", source="secretsmanager NameType"
    ),
    "aws:ecr/repository:Repository": NameRule(
        256,
        r"^(?:[a-z0-9]+(?:[._-][a-z0-9]+)*/)*[a-z0-9]+(?:[._-][a-z0-9]+)*$",
        min_length=2,
        prefix_input=None,
        note="lowercase path segments",
        source="ecr RepositoryName",
    ),
    "aws:sns/topic:Topic": NameRule(
        256,
        r"^[A-Za-z0-9_-]+(?:\.fifo)?$",
        autoname_max=80,
        source=_PROVIDER + "resource_overrides.go; SNS CreateTopic",
    ),
    "aws:sqs/queue:Queue": NameRule(
        80,
        r"^[A-Za-z0-9_-]+(?:\.fifo)?$",
        autoname_max=80,
        source=_PROVIDER + "resource_overrides.go; SQS CreateQueue",
    ),
    "aws:cloudwatch/eventRule:EventRule": NameRule(
        64,
        r"^[.\-_A-Za-z0-9]+$",
        autoname_max=64,
        source=_PROVIDER + "resource_overrides.go; events RuleName",
    ),
    "aws:cloudwatch/metricAlarm:MetricAlarm": NameRule(
        255, r"^.+$", prefix_input=None, source="cloudwatch AlarmName"
    ),
    "aws:lambda/function:Function": NameRule(
        64,
        r"^[A-Za-z0-9_-]+$",
        autoname_max=64,
        prefix_input=None,
        source=_PROVIDER + "resource_overrides.go; lambda FunctionName",
    ),
    "aws:cloudwatch/dashboard:Dashboard": NameRule(
        255,
        r"^[A-Za-z0-9_-]+$",
        name_input="dashboardName",
        autoname_max=None,
        prefix_input=None,
        source="cloudwatch PutDashboard DashboardName",
    ),
    # The provider autonames the creation token up to 255 characters; EFS accepts 64.
    "aws:efs/fileSystem:FileSystem": NameRule(
        64,
        r"^.+$",
        name_input="creationToken",
        prefix_input=None,
        source=_PROVIDER + "resource_overrides.go; efs CreationToken",
    ),
}


def name_rule(type_token: str) -> NameRule | None:
    """The naming rule of a Pulumi resource type, or None when the type has no physical name."""
    return NAME_RULES.get(type_token)


def fitted_name(logical: str, rule: NameRule, *, scope: str, salt: str = "") -> str | None:
    """An explicit physical name for `logical` when the provider's autoname would not fit.

    Returns None when `<logical>-<7 random>` fits `rule` (the provider autonames it, exactly as
    before, so existing stacks see no change). Otherwise returns `<logical, truncated>-<hash>`,
    where the hash covers `scope` (project and stack, so two stacks in one account and region
    never collide, which autonaming guaranteed with its random suffix) and `salt` (the inputs
    that force a replacement, so a replacement gets a new name and create-before-delete still
    works with an explicit name). Deterministic: the same inputs give the same name on every run.
    """
    if rule.fits_autoname(logical):
        return None
    digest = hashlib.sha256(f"{scope}\0{logical}\0{salt}".encode()).hexdigest()[:NAME_HASH_CHARS]
    keep = rule.max_length - len(AUTONAME_SEPARATOR) - NAME_HASH_CHARS
    head = re.sub(r"[^A-Za-z0-9-]", "-", logical)[:keep].rstrip("-")
    name = f"{head}{AUTONAME_SEPARATOR}{digest}" if head else digest
    if not re.match(rule.pattern, name):  # pragma: no cover - the construction above guarantees it
        raise ValueError(f"fitted name {name!r} breaks {rule}")
    return name
