"""What launches tasks on Fargate: nothing Fargate refuses, a platform version for large tasks,
and task definitions that declare Fargate.

Stack rules over every launch (``launches``): a service, task set, EventBridge target, schedule,
pipe or Step Functions state lands on Fargate by its launch type, its capacity provider strategy,
or its cluster's default strategy. A task definition that carries anything Fargate refuses
(``parameters``), or that is EC2-only, never runs there, whatever its ``requiresCompatibilities``
says; the 8 vCPU tier and above need Linux platform version 1.4.0 or later; a task definition
without ``requiresCompatibilities`` was validated for EC2 only. A launch the pack cannot tell
(a run-time launch type) is a "cannot verify" naming the state and the field.
"""

from __future__ import annotations

from typing import Any

from pulumi_policy import EnforcementLevel, StackValidationArgs
from pulumi_policy.proxy import UnknownValueError

from ..launches import LAUNCHERS, ClusterDefaults, Launch, excludes_fargate, launches
from ..reachability import Model
from ..resources import (
    SERVICE,
    TASK_DEFINITION,
    TASK_SET,
    UnknownCollector,
    as_list,
    get,
    is_exempt,
    parse_cpu_units,
    stored,
)
from ..rules import EXEMPT_ONLY, Config, Report, judge_each, stack_rule
from .parameters import task_refusals
from .tasks import PLATFORM_1_4_CPU, platform_version_ok

Resource = Any


def _refusals(model: Model, task: Resource) -> list[str]:
    """What Fargate refuses in ``task``, read once per stack: a task definition is judged for
    every launch that may run it (a launcher whose task definition is a family or an unknown
    reference may run many). A read that raises is read again (``Model.memo``)."""
    return model.memo(
        ("fargate-refusals", task.urn),
        lambda: task_refusals(task.props, task.resource_type, task),
    )


def _refusals_when_known(model: Model, task: Resource) -> list[str] | None:
    """What Fargate refuses in an EC2-only task definition, None while its containers are
    unknown: being EC2-only already decides the verdict, the refusals only word it."""
    try:
        return _refusals(model, task)
    except UnknownValueError:
        return None


def _fargate_launches(
    model: Model, defaults: ClusterDefaults, launcher: Resource, unknowns: UnknownCollector
):
    """(launch, task definition) for each launch of ``launcher`` on Fargate; a launch decided
    only at run time is noted, naming the state and the field."""
    for launch in launches(launcher):
        if launch.runtime is not None:
            _note_runtime(launch, launch.runtime, "whether it launches on Fargate", unknowns)
            continue
        if not launch.on_fargate(defaults):
            continue
        if launch.task_runtime is not None:
            _note_runtime(launch, launch.task_runtime, "which task definition it runs", unknowns)
        for task in launch.task_definitions(model):
            yield launch, task


def _note_runtime(launch: Launch, field: str, what: str, unknowns: UnknownCollector) -> None:
    unknowns.note(
        f"cannot verify {what}: {launch.label} sets {field} at run time.", launch.resource.urn
    )


def _compatibilities(model: Model, task: Resource) -> list[Any]:
    """A task definition's ``requiresCompatibilities``, read once per stack: a launcher whose
    task definition is a family may run every revision the stack registers."""
    return model.memo(
        ("compatibilities", task.urn),
        lambda: list(as_list(get(task.props, "requiresCompatibilities"))),
    )


def _judge_task(model: Model, launch: Launch, task: Resource, report: Report) -> None:
    compat = _compatibilities(model, task)
    ec2 = excludes_fargate(compat)
    refused = _refusals_when_known(model, task) if ec2 else _refusals(model, task)
    head = f"{launch.label} runs task definition {task.name!r} on Fargate ({launch.why})"
    if refused:
        report(f"{head}, which Fargate refuses: {'; '.join(refused)}.", launch.resource.urn)
    elif ec2:
        report(
            f"{head}, but it is EC2-only (requiresCompatibilities {compat}); Fargate rejects "
            "it, and EC2-only task definitions carry what Fargate cannot place (GPUs, devices).",
            launch.resource.urn,
        )


def _check_no_gpu_service(
    args: StackValidationArgs, config: Config, report: Report, unknowns: UnknownCollector
) -> None:
    model = Model.of_stack(args.resources, unknowns)
    defaults = ClusterDefaults(model)

    def judge(launcher: Resource) -> None:
        for launch, task in _fargate_launches(model, defaults, launcher, unknowns):
            if not is_exempt(config, task, unknowns.own_types):
                _judge_task(model, launch, task, report)

    judge_each(model.of(LAUNCHERS), LAUNCHERS, config, unknowns, judge)


no_gpu_task_on_fargate_service = stack_rule(
    name="no-gpu-task-on-fargate-service",
    description=(
        "Nothing may launch on Fargate a task definition that carries what Fargate refuses "
        "(GPUs, Neuron or other devices, privileged mode, host network or PID mode, shared "
        "memory, tmpfs, added capabilities other than SYS_PTRACE, host volumes, docker "
        "volumes... see docs/policy.md for the table and its sources) or that is EC2-only: "
        "ECS services and task sets, EventBridge rule targets, Scheduler schedules, "
        "EventBridge Pipes and Step Functions states that run ECS tasks (launchType FARGATE, "
        "a FARGATE / FARGATE_SPOT capacity provider, or none and a cluster whose default "
        "strategy in this stack is Fargate). Fix: use the GPU or Inferentia capacity provider "
        "of an EC2 Auto Scaling group, or remove the parameter."
    ),
    level=EnforcementLevel.MANDATORY,
    types=LAUNCHERS | TASK_DEFINITION,
    schema=EXEMPT_ONLY,
    check=_check_no_gpu_service,
)


def _check_platform(
    args: StackValidationArgs, config: Config, report: Report, unknowns: UnknownCollector
) -> None:
    model = Model.of_stack(args.resources, unknowns)
    defaults = ClusterDefaults(model)

    def judge(service: Resource) -> None:
        version = stored(service.props, "platformVersion", None, service)
        if platform_version_ok(version):
            return
        for launch, task in _fargate_launches(model, defaults, service, unknowns):
            cpu = parse_cpu_units(get(task.props, "cpu"))
            if cpu is not None and cpu >= PLATFORM_1_4_CPU:
                report(
                    f"Fargate service {service.name!r} pins platform version {version} but "
                    f"task definition {task.name!r} asks for cpu {cpu} (8 vCPU and above "
                    "need 1.4.0 or later).",
                    launch.resource.urn,
                )

    judge_each(model.of(SERVICE | TASK_SET), SERVICE | TASK_SET, config, unknowns, judge)


fargate_platform_version = stack_rule(
    name="fargate-platform-version-for-large-tasks",
    description=(
        "Fargate tasks with 8 vCPU or more need Linux platform version 1.4.0 or later. Fix: set "
        "the service's platformVersion to LATEST (or 1.4.0+), or use a smaller task size."
    ),
    level=EnforcementLevel.MANDATORY,
    types=SERVICE | TASK_SET | TASK_DEFINITION,
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
            if launch.runtime is not None or not launch.on_fargate(defaults):
                continue
            for task in launch.task_definitions(model):
                if _compatibilities(model, task):
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
        "targets, schedules, pipes, Step Functions states) should run a task definition with "
        "requiresCompatibilities [FARGATE]: without it ECS validates the task definition for "
        "EC2 only, and a parameter Fargate rejects surfaces as a failed task instead of at "
        "registration. Fix: set requiresCompatibilities: [FARGATE] (with task-level cpu and "
        "memory)."
    ),
    level=EnforcementLevel.ADVISORY,
    types=LAUNCHERS | TASK_DEFINITION,
    schema=EXEMPT_ONLY,
    check=_check_declares_fargate,
)
