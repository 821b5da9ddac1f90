"""The AWS limits this policy pack checks against: the pack's own copy.

The pack ships and runs alone (`pulumi preview --policy-pack policy`), so it cannot import the
program's `contracts/aws_limits.py`. Every name here also exists there with the same value, and
`tests/contracts/test_policy_limits.py` fails when the two copies disagree.
"""

from __future__ import annotations

# ALB attribute idle_timeout.timeout_seconds: 1-4000 s, 60 s when a stack leaves it unset.
ALB_IDLE_TIMEOUT_RANGE = (1, 4000)
ALB_IDLE_TIMEOUT_DEFAULT = 60
# Target group attribute deregistration_delay.timeout_seconds: 0-3600 s.
TARGET_GROUP_DEREGISTRATION_DELAY_MAX = 3600
# Task sizes at or above this many CPU units need Fargate Linux platform version 1.4.0 or later.
FARGATE_PLATFORM_1_4_MIN_CPU = 8192


def _gib_steps(start_gib: int, stop_gib: int, step_gib: int) -> tuple[int, ...]:
    return tuple(g * 1024 for g in range(start_gib, stop_gib + 1, step_gib))


# Linux Fargate task sizes: CPU units -> the memory values (MiB) RegisterTaskDefinition accepts.
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
