"""AWS and provider limits, stated once.

Every limit the program designs around lives here, with its source. Components size names and
values against these; the offline preview checks what was registered against the same table.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

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


# --------------------------------------------------------------------------------------------
# Elastic Load Balancing (Application Load Balancer)
# --------------------------------------------------------------------------------------------

# An Application Load Balancer needs subnets in at least two Availability Zones and takes at most
# one subnet per zone (ELB CreateLoadBalancer: "You must specify subnets from at least two
# Availability Zones"; "You can specify only one subnet per Availability Zone").
ALB_MIN_AVAILABILITY_ZONES = 2
# ALB attribute idle_timeout.timeout_seconds: 1-4000 s, 60 s when unset (ELB user guide,
# "Connection idle timeout"). An SSE stream silent for longer is cut mid-answer.
ALB_IDLE_TIMEOUT_RANGE = (1, 4000)
ALB_IDLE_TIMEOUT_DEFAULT = 60
# Target group attribute deregistration_delay.timeout_seconds: 0-3600 s.
TARGET_GROUP_DEREGISTRATION_DELAY_MAX = 3600
# Listener rule priorities: 1-50000 (CreateRule).
LISTENER_RULE_PRIORITY_MAX = 50_000
# Target group HealthCheckPath: 1-1024 characters, starting with "/" (CreateTargetGroup).
HEALTH_CHECK_PATH_MAX = 1024

# --------------------------------------------------------------------------------------------
# Amazon EFS (weight stores) and S3 request rates
# --------------------------------------------------------------------------------------------

NFS_PORT = 2049
# CreateAccessPoint RootDirectory.Path: at most 100 characters and four subdirectories.
EFS_ACCESS_POINT_PATH_MAX = 100
EFS_ACCESS_POINT_PATH_MAX_DEPTH = 4
# CreateFileSystem ProvisionedThroughputInMibps: 1-3414 MiB/s (upper bound Region-dependent).
EFS_PROVISIONED_MIBPS_RANGE = (1, 3414)
# "Amazon EFS performance specifications" (EFS User Guide, read 2026-11-30), General Purpose,
# Regional: Elastic 1,500 MiB/s read per client and 20-60 GiB/s read per file system (low end
# kept); Provisioned 500 MiB/s per client, 3-10 GiB/s per file system, reads metered at 1/3.
EFS_ELASTIC_CLIENT_READ_MIBPS = 1500.0
EFS_ELASTIC_FS_READ_GIBPS = 20.0
EFS_PROVISIONED_CLIENT_READ_MIBPS = 500.0
EFS_PROVISIONED_FS_READ_GIBPS = 3.0
EFS_PROVISIONED_READ_MULTIPLIER = 3.0
# S3 performance guidelines (read 2026-11-30): at least 5,500 GET/HEAD per second per
# partitioned prefix.
S3_GET_PER_PREFIX_PER_SECOND = 5500

# --------------------------------------------------------------------------------------------
# ECS and Fargate
# --------------------------------------------------------------------------------------------

# Service healthCheckGracePeriodSeconds: a Java int (CreateService accepts 0-2147483647).
ECS_GRACE_PERIOD_MAX = 2_147_483_647
# Container stopTimeout on Fargate: at most 120 s (RegisterTaskDefinition, ContainerDefinition).
FARGATE_STOP_TIMEOUT_MAX = 120
# Task sizes at or above this many CPU units need Fargate Linux platform version 1.4.0 or later.
FARGATE_PLATFORM_1_4_MIN_CPU = 8192
# Fargate's default nofile soft and hard limits, and the most a task definition may raise them to
# (ECS developer guide, "Task definition parameters for Fargate", ulimits). A Python service with
# many concurrent upstream HTTP connections reaches the default sooner than its CPU limit.
FARGATE_NOFILE_DEFAULT = 65_535
FARGATE_NOFILE_MAX = 1_048_576


def _gib_steps(start_gib: int, stop_gib: int, step_gib: int) -> tuple[int, ...]:
    return tuple(g * 1024 for g in range(start_gib, stop_gib + 1, step_gib))


# Linux Fargate task sizes: CPU units -> the memory values (MiB) accepted with them. A pair off
# this grid is rejected by RegisterTaskDefinition. Rows up to 16384 are the ECS developer guide's
# table (also in botocore's ECS model); the 32768 row (60, 120 or 244 GB) comes from the
# project's seed document.
FARGATE_TASK_SIZES: dict[int, tuple[int, ...]] = {
    256: (512, 1024, 2048),
    512: _gib_steps(1, 4, 1),
    1024: _gib_steps(2, 8, 1),
    2048: _gib_steps(4, 16, 1),
    4096: _gib_steps(8, 30, 1),
    8192: _gib_steps(16, 60, 4),
    16384: _gib_steps(32, 120, 8),
    32768: (60 * 1024, 120 * 1024, 244 * 1024),
}

# What Fargate refuses in a task definition: RegisterTaskDefinition with FARGATE compatibility
# fails, and a Fargate launch of a task definition that carries it never runs. Keys are paths into
# a RegisterTaskDefinition request (`[]`: every item of a list). Each value is (what Fargate accepts
# there, sources). What it accepts: () when the parameter must be unset (absent, null, false or
# empty), else the accepted values (case-insensitive, every item of a list; a capability may carry
# the `CAP_` prefix), or an inclusive (low, high) integer range. Sources: `guide` is the ECS
# developer guide page "Amazon ECS task definition differences for Fargate"; `botocore:S.m` the
# documentation of member m of shape S in botocore's ECS model (tests/contracts check that every
# such sentence there is cited here or explained).
FARGATE_TASK_PARAMETERS: dict[str, tuple[tuple[str, ...] | tuple[int, int], tuple[str, ...]]] = {
    "ipcMode": (
        (),
        (
            "guide",
            "botocore:RegisterTaskDefinitionRequest.ipcMode",
            "botocore:TaskDefinition.ipcMode",
        ),
    ),
    "pidMode": (
        ("task",),
        ("botocore:RegisterTaskDefinitionRequest.pidMode", "botocore:TaskDefinition.pidMode"),
    ),
    "networkMode": (
        ("awsvpc",),
        (
            "guide",
            "botocore:RegisterTaskDefinitionRequest.networkMode",
            "botocore:TaskDefinition.networkMode",
        ),
    ),
    "placementConstraints": ((), ("guide", "botocore:TaskDefinition.placementConstraints")),
    # Elastic Inference attaches to EC2 container instances only.
    "inferenceAccelerators": ((), ("botocore:InferenceAccelerator",)),
    "volumes[].dockerVolumeConfiguration": (
        (),
        ("guide", "botocore:Volume.dockerVolumeConfiguration"),
    ),
    "volumes[].host.sourcePath": (
        (),
        ("botocore:HostVolumeProperties.sourcePath", "botocore:TaskDefinition.volumes"),
    ),
    "containerDefinitions[].disableNetworking": ((), ("guide",)),
    "containerDefinitions[].dnsSearchDomains": ((), ("guide",)),
    "containerDefinitions[].dnsServers": ((), ("guide",)),
    "containerDefinitions[].dockerSecurityOptions": (
        (),
        ("guide", "botocore:ContainerDefinition.dockerSecurityOptions"),
    ),
    "containerDefinitions[].extraHosts": ((), ("guide", "botocore:ContainerDefinition.extraHosts")),
    # Fargate tasks use awsvpc, which takes no hostname.
    "containerDefinitions[].hostname": ((), ("botocore:ContainerDefinition.hostname",)),
    "containerDefinitions[].links": ((), ("guide", "botocore:ContainerDefinition.links")),
    "containerDefinitions[].privileged": ((), ("guide", "botocore:ContainerDefinition.privileged")),
    # GPU, InferenceAccelerator and NeuronDevice, all the ECS resource types: none on Fargate.
    "containerDefinitions[].resourceRequirements": (
        (),
        ("guide", "botocore:ResourceRequirement.type"),
    ),
    "containerDefinitions[].linuxParameters.devices": (
        (),
        ("guide", "botocore:LinuxParameters.devices"),
    ),
    "containerDefinitions[].linuxParameters.sharedMemorySize": (
        (),
        ("guide", "botocore:LinuxParameters.sharedMemorySize"),
    ),
    "containerDefinitions[].linuxParameters.tmpfs": ((), ("guide",)),
    "containerDefinitions[].linuxParameters.maxSwap": (
        (),
        ("guide", "botocore:LinuxParameters.maxSwap"),
    ),
    "containerDefinitions[].linuxParameters.swappiness": (
        (),
        ("guide", "botocore:LinuxParameters.swappiness"),
    ),
    "containerDefinitions[].linuxParameters.capabilities.add[]": (
        ("SYS_PTRACE",),
        ("guide", "botocore:KernelCapabilities.add"),
    ),
    "containerDefinitions[].logConfiguration.logDriver": (
        ("awslogs", "splunk", "awsfirelens"),
        ("botocore:LogConfiguration.logDriver",),
    ),
    "containerDefinitions[].firelensConfiguration.options.config-file-type": (
        ("file",),
        ("botocore:FirelensConfiguration.options",),
    ),
    "containerDefinitions[].startTimeout": (
        (2, FARGATE_STOP_TIMEOUT_MAX),
        ("botocore:ContainerDefinition.startTimeout",),
    ),
    "containerDefinitions[].stopTimeout": (
        (2, FARGATE_STOP_TIMEOUT_MAX),
        ("botocore:ContainerDefinition.stopTimeout",),
    ),
}
# The value ECS assumes for a parameter of that table the task definition leaves unset.
FARGATE_TASK_PARAMETER_DEFAULTS: dict[str, str] = {"networkMode": "bridge"}
# The same for AWS Batch job definitions with platformCapabilities FARGATE (paths into a
# RegisterJobDefinitionRequest; `botocore:batch:S.m` cites botocore's Batch model; Batch's own
# resourceRequirements types VCPU and MEMORY stay valid, GPU does not).
BATCH_FARGATE_JOB_PARAMETERS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "nodeProperties": (
        (),
        (
            "botocore:batch:RegisterJobDefinitionRequest.nodeProperties",
            "botocore:batch:RegisterJobDefinitionRequest.containerProperties",
            "botocore:batch:NodeRangeProperty.instanceTypes",
        ),
    ),
    "type": (
        ("container",),
        ("botocore:batch:RegisterJobDefinitionRequest.type", "botocore:batch:JobDefinition.type"),
    ),
    "containerProperties.privileged": ((), ("botocore:batch:ContainerProperties.privileged",)),
    "containerProperties.ulimits": ((), ("botocore:batch:ContainerProperties.ulimits",)),
    "containerProperties.vcpus": ((), ("botocore:batch:ContainerProperties.vcpus",)),
    "containerProperties.memory": ((), ("botocore:batch:ContainerProperties.memory",)),
    "containerProperties.instanceType": ((), ("botocore:batch:ContainerProperties.instanceType",)),
    "containerProperties.resourceRequirements[].type": (
        ("VCPU", "MEMORY"),
        ("botocore:batch:ResourceRequirement.value",),
    ),
    "containerProperties.volumes[].host": (
        (),
        ("botocore:batch:Volume.host", "botocore:batch:Host.sourcePath"),
    ),
    "containerProperties.linuxParameters.devices": (
        (),
        ("botocore:batch:LinuxParameters.devices",),
    ),
    "containerProperties.linuxParameters.sharedMemorySize": (
        (),
        ("botocore:batch:LinuxParameters.sharedMemorySize",),
    ),
    "containerProperties.linuxParameters.tmpfs": ((), ("botocore:batch:LinuxParameters.tmpfs",)),
    "containerProperties.linuxParameters.maxSwap": (
        (),
        ("botocore:batch:LinuxParameters.maxSwap",),
    ),
    "containerProperties.linuxParameters.swappiness": (
        (),
        ("botocore:batch:LinuxParameters.swappiness",),
    ),
    "ecsProperties.taskProperties[].ipcMode": ((), ("botocore:batch:EcsTaskProperties.ipcMode",)),
    "ecsProperties.taskProperties[].containers[].privileged": (
        (),
        ("botocore:batch:TaskContainerProperties.privileged",),
    ),
    "ecsProperties.taskProperties[].containers[].resourceRequirements[].type": (
        ("VCPU", "MEMORY"),
        ("botocore:batch:ResourceRequirement.value",),
    ),
    "ecsProperties.taskProperties[].containers[].linuxParameters.devices": (
        (),
        ("botocore:batch:LinuxParameters.devices",),
    ),
    "ecsProperties.taskProperties[].containers[].linuxParameters.sharedMemorySize": (
        (),
        ("botocore:batch:LinuxParameters.sharedMemorySize",),
    ),
}

# --------------------------------------------------------------------------------------------
# CloudWatch Logs, EBS, Cognito
# --------------------------------------------------------------------------------------------

# PutRetentionPolicy accepts only these retention values (days).
CLOUDWATCH_LOG_RETENTION_DAYS = frozenset(
    {1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557,
     2922, 3288, 3653}
)  # fmt: skip

# gp3 (EBS volume types): 1 GiB to 16 TiB, 3,000-16,000 IOPS, 125-1,000 MiB/s, at most 500 IOPS
# per GiB and 0.25 MiB/s of throughput per provisioned IOPS.
GP3_SIZE_GIB_RANGE = (1, 16_384)
GP3_IOPS_RANGE = (3000, 16000)
GP3_THROUGHPUT_RANGE = (125, 1000)
GP3_BASELINE_IOPS = GP3_IOPS_RANGE[0]
"""IOPS every gp3 volume includes at no charge (Amazon EBS pricing)."""
GP3_BASELINE_MIBPS = GP3_THROUGHPUT_RANGE[0]
"""Throughput (MiB/s) every gp3 volume includes at no charge."""
GP3_MAX_IOPS_PER_GIB = 500
GP3_MAX_MIBPS_PER_IOPS = 0.25

# ALB authenticate-cognito SessionTimeout: 60 s to 7 days (the action's documented range);
# Cognito app client access token validity: 5 minutes to 1 day.
COGNITO_SESSION_TIMEOUT_RANGE = (60, 604_800)
COGNITO_ACCESS_TOKEN_MINUTES_RANGE = (5, 1440)

# --------------------------------------------------------------------------------------------
# Instance type selection, EC2 Auto Scaling mixed instances, Spot
# --------------------------------------------------------------------------------------------

# allowedInstanceTypes / excludedInstanceTypes (ECS instanceRequirements; EC2 attribute-based
# selection): at most 400 entries, each 1-30 characters of letters, digits, '.', '*' and '-'
# (botocore ECS model; terraform-provider-aws applies the same length and pattern).
LISTED_INSTANCE_TYPES_MAX = 400
INSTANCE_TYPE_PATTERN = r"^[a-zA-Z0-9.*-]{1,30}$"
# AcceleratorName values of ECS CreateCapacityProvider instanceRequirements (botocore ECS model).
# Narrower than EC2's own enum: no h200, inferentia2 or trainium.
ECS_ACCELERATOR_NAMES = frozenset(
    {"a100", "inferentia", "k520", "k80", "m60", "radeon-pro-v520", "t4", "vu9p", "v100",
     "a10g", "h100", "t4g", "l40s", "l4"}
)  # fmt: skip
# Instance types (launch template overrides) per Auto Scaling group: 40 (AWS documentation of
# LaunchTemplate.Overrides; botocore's model states no maximum). See docs/capacity.md.
ASG_INSTANCE_TYPES_MAX = 40
# InstancesDistribution allocation strategies (Auto Scaling API reference; botocore types them as
# free strings, so only this table catches a typo).
ASG_SPOT_ALLOCATION_STRATEGIES = (
    "lowest-price",
    "capacity-optimized",
    "capacity-optimized-prioritized",
    "price-capacity-optimized",
)
ASG_ON_DEMAND_ALLOCATION_STRATEGIES = ("prioritized", "lowest-price")
# OnDemandPercentageAboveBaseCapacity: 0-100.
ASG_ON_DEMAND_PERCENTAGE_RANGE = (0, 100)
# The notice EC2 gives before it stops or terminates a Spot instance (ECS developer guide, Spot
# Instance draining).
SPOT_INTERRUPTION_NOTICE_SECONDS = 120

# --------------------------------------------------------------------------------------------
# ECS Managed Instances
# --------------------------------------------------------------------------------------------

# Compatibility a task definition declares to run on Managed Instances (botocore Compatibility).
MANAGED_INSTANCES_COMPATIBILITY = "MANAGED_INSTANCES"
# CreateCapacityProvider managedInstancesProvider enums (botocore ECS model).
MANAGED_INSTANCES_MONITORING = ("BASIC", "DETAILED")
MANAGED_INSTANCES_CAPACITY_OPTIONS = ("ON_DEMAND", "SPOT", "RESERVED")
MANAGED_INSTANCES_RESERVATION_PREFERENCES = (
    "RESERVATIONS_ONLY",
    "RESERVATIONS_FIRST",
    "RESERVATIONS_EXCLUDED",
)
# infrastructureOptimization.scaleInAfter: -1 (off) or 0-3600 s (terraform-provider-aws
# IntBetween(-1, 3600), matching the API documentation).
MANAGED_INSTANCES_SCALE_IN_AFTER_RANGE = (-1, 3600)
# storageConfiguration.storageSizeGiB: the API's minimum is 1 GiB; gp3's maximum is 16 TiB.
MANAGED_INSTANCES_STORAGE_GIB_RANGE = (1, 16_384)
# ECS replaces every Managed Instance within this many days ("Shared responsibility model for
# Amazon ECS Managed Instances").
MANAGED_INSTANCES_MAX_LIFETIME_DAYS = 21
# Network modes of a Managed Instances task.
MANAGED_INSTANCES_NETWORK_MODES = ("awsvpc", "host")
# Task definition parameters ECS refuses for MANAGED_INSTANCES ("Amazon ECS task definition
# differences for Amazon ECS Managed Instances"), as paths into a RegisterTaskDefinition request.
MANAGED_INSTANCES_INVALID_TASK_PARAMETERS = (
    "ephemeralStorage",
    "inferenceAccelerators",
    "ipcMode",
    "proxyConfiguration",
    "volumes[].dockerVolumeConfiguration",
    "volumes[].fsxWindowsFileServerVolumeConfiguration",
    "volumes[].host.sourcePath",
    "containerDefinitions[].disableNetworking",
    "containerDefinitions[].dnsSearchDomains",
    "containerDefinitions[].dnsServers",
    "containerDefinitions[].dockerLabels",
    "containerDefinitions[].dockerSecurityOptions",
    "containerDefinitions[].extraHosts",
    "containerDefinitions[].hostname",
    "containerDefinitions[].links",
    "containerDefinitions[].linuxParameters.maxSwap",
    "containerDefinitions[].linuxParameters.sharedMemorySize",
    "containerDefinitions[].linuxParameters.swappiness",
    "containerDefinitions[].linuxParameters.tmpfs",
)
# The AWS-managed infrastructure policy scopes iam:PassRole to roles named `ecsInstanceRole*`
# ("Amazon ECS Managed Instances instance profile"); any other instance role needs its own grant.
MANAGED_INSTANCES_PASSABLE_ROLE_PREFIX = "ecsInstanceRole"

# --------------------------------------------------------------------------------------------
# What the offline preview checks beyond botocore's models (tools/aws_requests/; sources in
# docs/fidelity.md)
# --------------------------------------------------------------------------------------------

# ALB attribute client_keep_alive.seconds: 60 s to 7 days.
ALB_CLIENT_KEEP_ALIVE_RANGE = (60, 604_800)
# Target group attribute slow_start.duration_seconds: 0 (off) or 30-900 s.
TARGET_GROUP_SLOW_START_RANGE = (30, 900)
# Quotas for your Application Load Balancers: five condition values and five wildcards per rule;
# 100 rules per load balancer, default rules not counted (the default quota; adjustable).
CONDITION_VALUES_PER_RULE = 5
WILDCARDS_PER_RULE = 5
RULES_PER_ALB = 100
# RegisterTaskDefinition: the whole request at most 64 KiB.
TASK_DEFINITION_MAX_BYTES = 65_536
# EC2 user data: at most 16 KB before base64; IMDS PUT response hop limit 1-64.
USER_DATA_MAX_BYTES = 16_384
IMDS_HOP_LIMIT_RANGE = (1, 64)
# IAM and AWS STS quotas, in characters without whitespace: a role trust policy 2,048 (default
# quota), all inline policies of one role together 10,240, a managed policy 6,144; 10 managed
# policies per role (default quota). Role sessions 1-12 hours.
TRUST_POLICY_MAX_CHARS = 2048
ROLE_INLINE_POLICIES_MAX_CHARS = 10_240
MANAGED_POLICY_MAX_CHARS = 6144
MANAGED_POLICIES_PER_ROLE = 10
IAM_ROLE_SESSION_DURATION_RANGE = (3600, 43_200)
# S3 bucket policies: at most 20 KB.
BUCKET_POLICY_MAX_BYTES = 20_480
# Cognito prefix domains may not contain these words.
COGNITO_DOMAIN_RESERVED_WORDS = ("aws", "amazon", "cognito")
# Inbound, and separately outbound, rules per VPC security group (default quota).
RULES_PER_SECURITY_GROUP = 60
# Aurora Serverless v2 capacity: at most 256 ACUs (RDS ServerlessV2ScalingConfiguration).
AURORA_SERVERLESS_V2_ACU_MAX = 256
# SQS CreateQueue attribute ranges.
SQS_ATTRIBUTE_RANGES = {
    "delaySeconds": (0, 900),
    "maxMessageSize": (1024, 1_048_576),
    "messageRetentionSeconds": (60, 1_209_600),
    "receiveWaitTimeSeconds": (0, 20),
    "visibilityTimeoutSeconds": (0, 43_200),
}
# CloudWatch: at most 10 metric queries per alarm; 500 widgets per dashboard; alarm names 1-255
# characters; EvaluationPeriods x Period may not exceed one day.
ALARM_METRIC_QUERIES_MAX = 10
ALARM_NAME_MAX = 255
ALARM_EVALUATION_MAX_SECONDS = 86_400
# Application Auto Scaling cooldowns are whole seconds with no documented maximum; a day is the
# longest this project accepts (a longer one is always a typo).
SCALING_COOLDOWN_MAX_SECONDS = 86_400
DASHBOARD_MAX_WIDGETS = 500
# KMS ScheduleKeyDeletion: a pending-deletion window of 7-30 days (the provider sends the key's
# deletionWindowInDays only when the key is destroyed).
KMS_DELETION_WINDOW_DAYS = (7, 30)

# What pulumi-aws does when a type declares no autoname rule of its own: every resource whose
# Terraform schema has an input `name` is autonamed with at most 255 characters
# (provider/autonaming.go `setAutonaming`: `maxLength := 255`, `separator := "-"`).
PROVIDER_DEFAULT_AUTONAME_MAX = 255

# --------------------------------------------------------------------------------------------
# names
# --------------------------------------------------------------------------------------------

# S3 bucket names: 3-63 lowercase letters, digits, '.' and '-', alphanumeric at both ends; an
# s3:// URI is a bucket and an optional key prefix.
S3_BUCKET_NAME = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
S3_URI = re.compile(r"^s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](/[^\s]*)?$")
# ARNs the configuration may name (any partition: aws, aws-cn, aws-us-gov).
ACM_CERTIFICATE_ARN = re.compile(
    r"^arn:aws[a-z-]*:acm:[a-z0-9-]+:\d{12}:certificate/[A-Za-z0-9-]+$"
)
SECRETS_MANAGER_ARN = re.compile(r"^arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:\d{12}:secret:.+$")
# A secret's value (botocore secretsmanager SecretStringType: 1 to 65536 characters).
SECRETS_MANAGER_SECRET_STRING_MAX = 65536


def _ec2_id(prefix: str) -> re.Pattern[str]:
    # EC2 ids: the type's prefix and 8 hexadecimal digits (resources created before 2016-2018)
    # or 17 (every id issued since; EC2 "Resource IDs", longer IDs).
    return re.compile(rf"^{prefix}-(?:[0-9a-f]{{8}}|[0-9a-f]{{17}})$")


# Ids of an existing network the configuration may name.
VPC_ID = _ec2_id("vpc")
SUBNET_ID = _ec2_id("subnet")
VPC_ENDPOINT_ID = _ec2_id("vpce")
PREFIX_LIST_ID = _ec2_id("pl")


SSM_PARAMETER_NAME_MAX = 1011
"""Longest Parameter Store name a caller may create (SSM user guide)."""
SSM_STANDARD_PARAMETER_MAX_BYTES = 4096
"""Largest value of a Standard-tier parameter (PutParameter `Value`: 4 KB)."""
SSM_ADVANCED_PARAMETER_MAX_BYTES = 8192
"""Largest value of an Advanced-tier parameter (8 KB)."""


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
    # Parameter Store names (SSM user guide, "Creating Parameter Store parameters"): letters,
    # digits and `_.-/`, at most 1011 characters of the 2048 PutParameter's Name takes (the rest
    # is reserved by Systems Manager), not beginning with "aws" or "ssm" (case-insensitive).
    "aws:ssm/parameter:Parameter": NameRule(
        SSM_PARAMETER_NAME_MAX,
        r"^[A-Za-z0-9_.\-/]+$",
        prefix_input=None,
        reserved_prefixes=("aws", "ssm", "/aws", "/ssm"),
        source="ssm PutParameter Name; SSM user guide, parameter name requirements",
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
    # Cloud Map namespace names (CreateHttpNamespace Name: `^(?!arn:)[!-~]{1,1024}$`).
    "aws:servicediscovery/httpNamespace:HttpNamespace": NameRule(
        1024,
        r"^(?!arn:)[!-~]+$",
        prefix_input=None,
        source="servicediscovery CreateHttpNamespace Name",
    ),
    # RDS identifiers: 1-63 letters, digits and hyphens, starting with a letter, no two
    # consecutive hyphens, not ending with one (CreateDBCluster / CreateDBInstance). The provider
    # does not autoname them (the input is not `name` and resource_overrides.go sets no rule;
    # Terraform would pick `tf-<timestamp>`), so the program names them explicitly.
    "aws:rds/cluster:Cluster": NameRule(
        63,
        r"^[A-Za-z](?!.*--)[A-Za-z0-9-]*[A-Za-z0-9]$",
        note="a letter first, letters, digits and single hyphens, no hyphen last",
        name_input="clusterIdentifier",
        autoname_max=None,
        prefix_input="clusterIdentifierPrefix",
        source=_PROVIDER + "resource_overrides.go (no rule); rds DBClusterIdentifier",
    ),
    "aws:rds/clusterInstance:ClusterInstance": NameRule(
        63,
        r"^[A-Za-z](?!.*--)[A-Za-z0-9-]*[A-Za-z0-9]$",
        note="a letter first, letters, digits and single hyphens, no hyphen last",
        name_input="identifier",
        autoname_max=None,
        prefix_input="identifierPrefix",
        source=_PROVIDER + "resource_overrides.go (no rule); rds DBInstanceIdentifier",
    ),
    # DB subnet group names: up to 255 lowercase letters, digits, spaces, '.', '_' and '-'
    # (terraform-provider-aws validator; the API adds "must not be default").
    "aws:rds/subnetGroup:SubnetGroup": NameRule(
        255,
        r"^(?!default$)[ ._a-z0-9-]+$",
        note="lowercase letters, digits, spaces, '.', '_' and '-'; not 'default'",
        source="terraform-provider-aws db_subnet_group validator; rds CreateDBSubnetGroup",
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


def replacement_salt(forcing: Mapping[str, Any]) -> str:
    """The `salt` of `fitted_name` for a resource whose replace-forcing inputs (camelCase, the
    name itself left out) are `forcing`: canonical JSON, keys sorted and whole numbers as
    integers (the engine carries every number as a float, so a recorded 8000.0 and the
    program's 8000 salt alike)."""

    def canonical(value: Any) -> Any:
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, Mapping):
            return {k: canonical(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [canonical(v) for v in value]
        return value

    return json.dumps(canonical(dict(forcing)), sort_keys=True, separators=(",", ":"))


# --------------------------------------------------------------------------------------------
# SQS, Application Auto Scaling, ECS Service Connect and task protection (queue workers, gateway)
# --------------------------------------------------------------------------------------------

# The SQS attribute ranges above, by the names the queue workers use. VisibilityTimeout (12 h
# at most) also bounds any single job: ChangeMessageVisibility cannot extend past 12 h from the
# receive either.
SQS_VISIBILITY_TIMEOUT_MAX = SQS_ATTRIBUTE_RANGES["visibilityTimeoutSeconds"][1]
SQS_RETENTION_MIN, SQS_RETENTION_MAX = SQS_ATTRIBUTE_RANGES["messageRetentionSeconds"]
SQS_LONG_POLL_MAX = SQS_ATTRIBUTE_RANGES["receiveWaitTimeSeconds"][1]
# RedrivePolicy maxReceiveCount: 1-1000.
SQS_MAX_RECEIVE_COUNT_RANGE = (1, 1000)
# ReceiveMessageWaitTimeSeconds (long polling): 0-20 s.
SQS_LONG_POLL_MAX = 20
# Application Auto Scaling quota "Step adjustments per step scaling policy": 20 (default).
STEP_ADJUSTMENTS_MAX = 20
# ECS task scale-in protection ExpiresInMinutes: at most 2880 (48 h).
TASK_PROTECTION_MAX_MINUTES = 2880
# Service Connect timeouts when unset (HTTP app protocols): 15 s per request, 300 s idle.
SERVICE_CONNECT_DEFAULT_PER_REQUEST_SECONDS = 15
SERVICE_CONNECT_DEFAULT_IDLE_SECONDS = 300

# ECS native deployment strategies (API reference, DeploymentConfiguration / CanaryConfiguration /
# LinearConfiguration, read 2026-12-03; the pulumi-aws 7.51.1 schema states the same ranges).
ECS_DEPLOYMENT_STRATEGIES = ("ROLLING", "BLUE_GREEN", "CANARY", "LINEAR")
ECS_BAKE_MINUTES_RANGE = (0, 1440)
"""bakeTimeInMinutes, canaryBakeTimeInMinutes and stepBakeTimeInMinutes: 0 to 1440 minutes."""
ECS_CANARY_PERCENT_RANGE = (0.1, 100.0)
"""canaryPercent: multiples of 0.1 from 0.1 to 100.0 (API default 5.0)."""
ECS_LINEAR_STEP_PERCENT_RANGE = (3.0, 100.0)
"""stepPercent: 3.0 to 100.0 (API default 10.0)."""
ECS_PERCENT_STEP = 0.1
"""Traffic percentages are multiples of this."""
ECS_HOOK_STAGES = (
    "RECONCILE_SERVICE",
    "PRE_SCALE_UP",
    "POST_SCALE_UP",
    "TEST_TRAFFIC_SHIFT",
    "POST_TEST_TRAFFIC_SHIFT",
    "PRE_PRODUCTION_TRAFFIC_SHIFT",
    "PRODUCTION_TRAFFIC_SHIFT",
    "POST_PRODUCTION_TRAFFIC_SHIFT",
)
"""DeploymentLifecycleHook.lifecycleStages (botocore's ecs model enum)."""
ECS_HOOK_DEFAULT_CALLBACK_SECONDS = 30
"""A Lambda hook answering IN_PROGRESS is invoked again after this (unless `callBackDelay`)."""
LAMBDA_TIMEOUT_MAX_SECONDS = 900
"""A Lambda function runs at most 15 minutes."""
