"""Fargate task definitions: nothing Fargate rejects, and task sizes on the grid.

Resource rules on a task definition that Fargate can run (``requiresCompatibilities`` includes
FARGATE; ECS then validates it for Fargate at registration) and on AWS Batch job definitions
for the FARGATE platform. Fargate hides the host, so anything that needs the host is rejected
(``parameters``: AWS's own lists); CPU and memory come from a fixed grid that
RegisterTaskDefinition enforces.
"""

from __future__ import annotations

from typing import Any

from pulumi_policy import EnforcementLevel, ResourceValidationArgs

from .. import aws_limits
from ..resources import (
    BATCH_JOB_DEFINITION,
    TASK_DEFINITION,
    as_list,
    get,
    get_path,
    is_fargate_compatible,
    parse_cpu_units,
    parse_memory_mib,
)
from ..rules import EXEMPT_ONLY, Config, Report, resource_rule
from .parameters import job_refusals, task_refusals

#: Linux Fargate task sizes: CPU units -> allowed memory in MiB (AWS Fargate task size table).
FARGATE_GRID: dict[int, tuple[int, ...]] = aws_limits.FARGATE_TASK_SIZES
#: CPU units from which Fargate needs Linux platform version 1.4.0 or later.
PLATFORM_1_4_CPU = aws_limits.FARGATE_PLATFORM_1_4_MIN_CPU


def grid_problem(cpu: int | None, memory: int | None) -> str | None:
    """Why (cpu units, memory MiB) is not a Fargate task size, or None when it is.

    >>> grid_problem(2048, 8192) is None
    True
    """
    if cpu is None or memory is None:
        return "Fargate needs task-level cpu and memory"
    if cpu not in FARGATE_GRID:
        return f"cpu {cpu} is not a Fargate size (one of {', '.join(map(str, FARGATE_GRID))})"
    allowed = FARGATE_GRID[cpu]
    if memory not in allowed:
        low, high = allowed[0], allowed[-1]
        return (
            f"memory {memory} MiB is not valid with cpu {cpu}; allowed {low}-{high} MiB "
            f"({', '.join(str(m) for m in allowed[:6])}{', ...' if len(allowed) > 6 else ''})"
        )
    return None


def cheapest_size_for(memory: int) -> tuple[int, int] | None:
    """Smallest (cpu, memory) on the grid with at least ``memory`` MiB, for fix hints."""
    for cpu, options in FARGATE_GRID.items():
        for option in options:
            if option >= memory:
                return (cpu, option)
    return None


def platform_version_ok(version: Any) -> bool:
    """True for LATEST/unset or a version >= 1.4.0 (unparsable versions are left to ECS)."""
    if version is None or str(version).upper() == "LATEST":
        return True
    try:
        parts = tuple(int(p) for p in str(version).split("."))
    except ValueError:
        return True
    return parts >= (1, 4, 0)


def _check_no_host_features(args: ResourceValidationArgs, config: Config, report: Report) -> None:
    if args.resource_type in BATCH_JOB_DEFINITION:
        platforms = [str(p).upper() for p in as_list(get(args.props, "platformCapabilities"))]
        if "FARGATE" in platforms:
            found = job_refusals(args.props, args.resource_type)
            if found:
                report(f"Batch job definition on FARGATE asks for: {'; '.join(found)}.", None)
        return
    if is_fargate_compatible(args.props):
        found = task_refusals(args.props, args.resource_type)
        if found:
            report(f"Fargate-compatible task definition asks for: {'; '.join(found)}.", None)


no_host_features_on_fargate = resource_rule(
    name="no-accelerators-or-host-features-on-fargate",
    description=(
        "A task definition that Fargate can run (requiresCompatibilities includes FARGATE) must "
        "not ask for anything Fargate refuses (GPUs, Neuron or other devices, privileged mode, "
        "ipcMode, a pidMode or networkMode other than task / awsvpc, sharedMemorySize, tmpfs, "
        "swap, capabilities other than SYS_PTRACE, host or docker volumes, placement "
        "constraints, DNS / hosts / links settings; docs/policy.md lists the table and its "
        "sources); nor may an AWS Batch job definition on FARGATE (GPUs, devices, privileged "
        "mode, ulimits, host volumes, multinode). Fix: run accelerated work on an "
        "EC2 capacity provider (GPU/Inferentia ASG) and drop FARGATE from "
        "requiresCompatibilities / platformCapabilities, or remove the host-only parameter."
    ),
    level=EnforcementLevel.MANDATORY,
    types=TASK_DEFINITION | BATCH_JOB_DEFINITION,
    schema=EXEMPT_ONLY,
    check=_check_no_host_features,
)


def _check_grid(args: ResourceValidationArgs, config: Config, report: Report) -> None:
    if not is_fargate_compatible(args.props):
        return
    family = str(get_path(args.props, "runtimePlatform", "operatingSystemFamily", default="LINUX"))
    if not family.upper().startswith("LINUX"):
        return  # Windows Fargate has its own, smaller table; ECS validates it.
    cpu = parse_cpu_units(get(args.props, "cpu"))
    memory = parse_memory_mib(get(args.props, "memory"))
    problem = grid_problem(cpu, memory)
    if problem:
        hint = cheapest_size_for(memory) if memory else None
        suffix = (
            f" Smallest size with that memory: cpu {hint[0]}, memory {hint[1]}." if hint else ""
        )
        report(f"{problem}.{suffix}", None)


fargate_task_size_on_grid = resource_rule(
    name="fargate-task-size-on-grid",
    description=(
        "A Fargate task definition must set task-level cpu and memory on the documented Fargate "
        "grid (256: 512/1024/2048 MiB; 512: 1-4 GB; 1024: 2-8 GB; 2048: 4-16 GB; 4096: 8-30 GB; "
        "8192: 16-60 GB in 4 GB steps; 16384: 32-120 GB in 8 GB steps; 32768: 60/120/244 GB). "
        "Fix: pick the smallest valid size that holds the memory you need."
    ),
    level=EnforcementLevel.MANDATORY,
    types=TASK_DEFINITION,
    schema=EXEMPT_ONLY,
    check=_check_grid,
)
