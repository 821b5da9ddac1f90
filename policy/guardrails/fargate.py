"""Fargate rules: no accelerators or host features on Fargate, and task sizes on the grid.

Fargate hides the host, so anything that needs the host is rejected: AWS lists ``gpu``,
``privileged``, ``ipcMode``, ``devices``, ``placementConstraints`` and
``dockerVolumeConfiguration`` as task definition parameters that are not valid in Fargate tasks
(a GPU needs a host driver matching the image's CUDA build; Neuron devices are host devices).
CPU and memory come from a fixed grid that RegisterTaskDefinition enforces, and the 8 vCPU tier
and above need Linux platform version 1.4.0 or later. Catching these at preview turns a failed
deploy (or a task that never places) into a review comment.
"""

from __future__ import annotations

from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    ResourceValidationArgs,
    StackValidationArgs,
)
from pulumi_policy.proxy import UnknownValueError

from . import aws_limits
from .launches import ClusterDefaults, batch_containers, ec2_only, launches
from .reachability import Model
from .resources import (
    BATCH_JOB_DEFINITION,
    EVENT_RULE_NATIVE,
    EVENT_TARGET,
    SCHEDULE,
    SERVICE,
    TASK_DEFINITION,
    TASK_SET,
    UnknownCollector,
    accelerator_needs,
    as_bool,
    as_list,
    fargate_rejections,
    get,
    get_path,
    is_exempt,
    is_fargate_compatible,
    linked,
    parse_cpu_units,
    parse_memory_mib,
    service_runs_on_fargate,
)
from .rules import EXEMPT_ONLY, Config, Report, judge_each, resource_rule, stack_rule

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


# --- policies ---------------------------------------------------------------------------------


def _check_no_host_features(args: ResourceValidationArgs, config: Config, report: Report) -> None:
    if args.resource_type in BATCH_JOB_DEFINITION:
        _check_batch_job(args, report)
        return
    if not is_fargate_compatible(args.props):
        return
    found = fargate_rejections(args.props, args.resource_type)
    if found:
        report(f"Fargate-compatible task definition asks for: {'; '.join(found)}.", None)


def _check_batch_job(args: ResourceValidationArgs, report: Report) -> None:
    """AWS Batch on Fargate offers no GPUs or devices: a FARGATE job definition asking for
    them never runs (Batch rejects it or the job stays RUNNABLE)."""
    platforms = [str(p).upper() for p in as_list(get(args.props, "platformCapabilities"))]
    if "FARGATE" not in platforms:
        return
    found: list[str] = []
    for name, container in batch_containers(args.props):
        for req in as_list(get(container, "resourceRequirements")):
            kind = str(get(req, "type", ""))
            if kind.upper() == "GPU":
                found.append(f"{name} resourceRequirements GPU={get(req, 'value')}")
        for device in as_list(get_path(container, "linuxParameters", "devices")):
            found.append(f"{name} maps device {get(device, 'hostPath', '?')}")
        if as_bool(get(container, "privileged", False)):
            found.append(f"{name} privileged")
    if found:
        report(f"Batch job definition on FARGATE asks for: {'; '.join(found)}.", None)


no_host_features_on_fargate = resource_rule(
    name="no-accelerators-or-host-features-on-fargate",
    description=(
        "A task definition that Fargate can run (requiresCompatibilities includes FARGATE) must "
        "not ask for GPUs, Neuron or other devices, privileged mode, ipcMode, placement "
        "constraints or docker volume configuration; nor may an AWS Batch job definition on "
        "FARGATE ask for a GPU, devices or privileged mode. Fix: run accelerated work on an "
        "EC2 capacity provider (GPU/Inferentia ASG) and drop FARGATE from "
        "requiresCompatibilities / platformCapabilities, or remove the host-only parameter."
    ),
    level=EnforcementLevel.MANDATORY,
    types=TASK_DEFINITION | BATCH_JOB_DEFINITION,
    schema=EXEMPT_ONLY,
    check=_check_no_host_features,
)


def _needs_when_known(task) -> list[str] | None:
    """Accelerator needs of an EC2-only task definition, None while its containers are
    unknown: being EC2-only already decides the verdict, the needs only word it."""
    try:
        return accelerator_needs(task.props, task.resource_type)
    except UnknownValueError:
        return None


_LAUNCHERS = SERVICE | TASK_SET | EVENT_TARGET | EVENT_RULE_NATIVE | SCHEDULE


def _check_no_gpu_service(
    args: StackValidationArgs, config: Config, report: Report, unknowns: UnknownCollector
) -> None:
    model = Model.of_stack(args.resources, unknowns)
    defaults = ClusterDefaults(model)

    def judge(launcher) -> None:
        for launch in launches(launcher):
            if not launch.on_fargate(defaults):
                continue
            for task in launch.task_definitions(model):
                if is_exempt(config, task, unknowns.own_types):
                    continue
                needs = _needs_when_known(task) if ec2_only(task.props) else None
                if needs is None and not ec2_only(task.props):
                    needs = accelerator_needs(task.props, task.resource_type)
                if needs:
                    report(
                        f"{launch.label} runs task definition {task.name!r} on Fargate "
                        f"({launch.why}), which needs an accelerator host: {'; '.join(needs)}.",
                        launcher.urn,
                    )
                elif ec2_only(task.props):
                    report(
                        f"{launch.label} runs on Fargate ({launch.why}) but task definition "
                        f"{task.name!r} is EC2-only (requiresCompatibilities "
                        f"{list(as_list(get(task.props, 'requiresCompatibilities')))}); Fargate "
                        "rejects it, and EC2-only task definitions carry what Fargate cannot "
                        "place (GPUs, devices).",
                        launcher.urn,
                    )

    judge_each(args.resources, _LAUNCHERS, config, unknowns, judge)


no_gpu_task_on_fargate_service = stack_rule(
    name="no-gpu-task-on-fargate-service",
    description=(
        "Nothing may launch a task that needs a GPU, Elastic Inference or mapped devices "
        "(Neuron), or an EC2-only task definition, on Fargate: ECS services and task sets "
        "(launchType FARGATE, a FARGATE / FARGATE_SPOT capacity provider, or none and a "
        "cluster whose default strategy in this stack is Fargate), EventBridge rule targets "
        "and EventBridge Scheduler schedules that run ECS tasks. Fix: use the GPU or "
        "Inferentia capacity provider of an EC2 Auto Scaling group."
    ),
    level=EnforcementLevel.MANDATORY,
    types=_LAUNCHERS | TASK_DEFINITION,
    schema=EXEMPT_ONLY,
    check=_check_no_gpu_service,
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


def _check_platform(
    args: StackValidationArgs, config: Config, report: Report, unknowns: UnknownCollector
) -> None:
    def judge(service) -> None:
        if not service_runs_on_fargate(service.resource_type, service.props):
            return
        version = get(service.props, "platformVersion")
        if platform_version_ok(version):
            return
        for task in linked(service, "taskDefinition", TASK_DEFINITION):
            cpu = parse_cpu_units(get(task.props, "cpu"))
            if cpu is not None and cpu >= PLATFORM_1_4_CPU:
                report(
                    f"Fargate service {service.name!r} pins platform version {version} but "
                    f"task definition {task.name!r} asks for cpu {cpu} (8 vCPU and above "
                    "need 1.4.0 or later).",
                    service.urn,
                )

    judge_each(args.resources, SERVICE, config, unknowns, judge)


fargate_platform_version = stack_rule(
    name="fargate-platform-version-for-large-tasks",
    description=(
        "Fargate tasks with 8 vCPU or more need Linux platform version 1.4.0 or later. Fix: set "
        "the service's platformVersion to LATEST (or 1.4.0+), or use a smaller task size."
    ),
    level=EnforcementLevel.MANDATORY,
    types=SERVICE | TASK_DEFINITION,
    schema=EXEMPT_ONLY,
    check=_check_platform,
)

POLICIES = [
    no_host_features_on_fargate,
    no_gpu_task_on_fargate_service,
    fargate_task_size_on_grid,
    fargate_platform_version,
]
