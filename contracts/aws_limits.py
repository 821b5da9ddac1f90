"""AWS and provider limits, stated once.

Every limit the program designs around lives here, with its source. Components size names and
values against these; the offline preview checks what was registered against the same table.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

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

# --------------------------------------------------------------------------------------------
# CloudWatch Logs, EBS, Cognito
# --------------------------------------------------------------------------------------------

# PutRetentionPolicy accepts only these retention values (days).
CLOUDWATCH_LOG_RETENTION_DAYS = frozenset(
    {1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557,
     2922, 3288, 3653}
)  # fmt: skip

# gp3 (EBS volume types): 3,000-16,000 IOPS, 125-1,000 MiB/s, at most 500 IOPS per GiB and
# 0.25 MiB/s of throughput per provisioned IOPS.
GP3_IOPS_RANGE = (3000, 16000)
GP3_THROUGHPUT_RANGE = (125, 1000)
GP3_MAX_IOPS_PER_GIB = 500
GP3_MAX_MIBPS_PER_IOPS = 0.25

# ALB authenticate-cognito SessionTimeout: 60 s to 7 days (the action's documented range);
# Cognito app client access token validity: 5 minutes to 1 day.
COGNITO_SESSION_TIMEOUT_RANGE = (60, 604_800)
COGNITO_ACCESS_TOKEN_MINUTES_RANGE = (5, 1440)

# --------------------------------------------------------------------------------------------
# names
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class NameRule:
    """The provider's and the API's rule for one resource type's `name`."""

    max_length: int
    """Longest name the provider (and the API) accepts."""
    pattern: str = r"^[A-Za-z0-9-]+$"
    """What the whole name must match."""
    note: str = ""

    def fits_autoname(self, logical: str) -> bool:
        """Whether `<logical>-<7 random>` stays within the limit."""
        return len(logical) + len(AUTONAME_SEPARATOR) + AUTONAME_RANDOM_CHARS <= self.max_length


# Target groups and load balancers: 32 characters, alphanumerics and hyphens, no leading or
# trailing hyphen (provider/resources.go `aws_lb_target_group`/`aws_lb`: `Maxlen: 32`; ELBv2
# CreateTargetGroup / CreateLoadBalancer docs).
ELBV2_NAME = NameRule(
    max_length=32,
    pattern=r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,30}[A-Za-z0-9])?$",
    note="alphanumerics and hyphens, not starting or ending with a hyphen",
)


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
