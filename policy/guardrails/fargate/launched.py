"""What launches tasks on Fargate: no accelerator task, a platform version for large tasks, and
task definitions that declare Fargate.

Stack rules over every launch (``launches``): a service, task set, EventBridge target or
schedule lands on Fargate by its launch type, its capacity provider strategy, or its cluster's
default strategy. A GPU task definition (or one that is EC2-only) launched there never places;
the 8 vCPU tier and above need Linux platform version 1.4.0 or later; a task definition without
``requiresCompatibilities`` was validated for EC2 only.
"""

from __future__ import annotations

from typing import Any

from pulumi_policy import EnforcementLevel, StackValidationArgs
from pulumi_policy.proxy import UnknownValueError

from ..launches import LAUNCHERS, ClusterDefaults, ec2_only, launches
from ..reachability import Model
from ..resources import (
    SERVICE,
    TASK_DEFINITION,
    UnknownCollector,
    accelerator_needs,
    as_list,
    get,
    is_exempt,
    linked,
    parse_cpu_units,
    service_runs_on_fargate,
)
from ..rules import EXEMPT_ONLY, Config, Report, judge_each, stack_rule
from .tasks import PLATFORM_1_4_CPU, platform_version_ok

Resource = Any


def _needs_when_known(task) -> list[str] | None:
    """Accelerator needs of an EC2-only task definition, None while its containers are
    unknown: being EC2-only already decides the verdict, the needs only word it."""
    try:
        return accelerator_needs(task.props, task.resource_type)
    except UnknownValueError:
        return None


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

    judge_each(args.resources, LAUNCHERS, config, unknowns, judge)


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
    types=LAUNCHERS | TASK_DEFINITION,
    schema=EXEMPT_ONLY,
    check=_check_no_gpu_service,
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


def _check_declares_fargate(
    args: StackValidationArgs, config: Config, report: Report, unknowns: UnknownCollector
) -> None:
    model = Model.of_stack(args.resources, unknowns)
    defaults = ClusterDefaults(model)

    def judge(launcher: Resource) -> None:
        for launch in launches(launcher):
            if not launch.on_fargate(defaults):
                continue
            for task in launch.task_definitions(model):
                if as_list(get(task.props, "requiresCompatibilities")):
                    continue  # FARGATE listed, or EC2-only: the mandatory Fargate rule's case
                report(
                    f"{launch.label} runs task definition {task.name!r} on Fargate "
                    f"({launch.why}), but the task definition does not set "
                    "requiresCompatibilities; ECS validated it for EC2 only.",
                    launcher.urn,
                )

    judge_each(model.of(LAUNCHERS), LAUNCHERS, config, unknowns, judge)


fargate_task_definition_requires_fargate = stack_rule(
    name="fargate-task-definition-requires-fargate",
    description=(
        "Whatever launches tasks on Fargate (a service or task set with launchType FARGATE or "
        "a FARGATE / FARGATE_SPOT provider, or a cluster default that is Fargate; EventBridge "
        "targets, schedules) should run a task definition with requiresCompatibilities "
        "[FARGATE]: without it ECS validates the task definition for EC2 only, and a "
        "parameter Fargate rejects surfaces as a failed task instead of at registration. "
        "Fix: set requiresCompatibilities: [FARGATE] (with task-level cpu and memory)."
    ),
    level=EnforcementLevel.ADVISORY,
    types=LAUNCHERS | TASK_DEFINITION,
    schema=EXEMPT_ONLY,
    check=_check_declares_fargate,
)
