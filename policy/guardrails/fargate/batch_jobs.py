"""AWS Batch jobs submitted to a Fargate job queue: the job definition must be a Fargate one.

A job queue on Fargate lists only Fargate compute environments (FARGATE / FARGATE_SPOT; Batch
refuses to mix them with EC2 ones), and a job runs there only when its job definition declares
``platformCapabilities: [FARGATE]`` (unset means EC2). A job definition for EC2 (the only kind
that may ask for GPUs) sent to such a queue never runs. What Fargate refuses inside a Fargate
job definition (GPUs among it) is the resource rule ``no-accelerators-or-host-features-on-fargate``
on the definition itself, where RegisterJobDefinition fails.

Jobs are submitted by Step Functions ``batch:submitJob`` states (``JobDefinition`` /
``JobQueue`` given literally or through aws-native ``definitionSubstitutions``), EventBridge
Pipes with ``batchJobParameters`` (the pipe's ``target`` is the queue), and EventBridge rule
targets with ``batchTarget`` (pulumi-aws) or ``batchParameters`` (aws-native; the target's
``arn`` is the queue). A field set at run time, a queue or job definition the pack cannot
resolve: "cannot verify", naming the launcher and the property.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from pulumi_policy import EnforcementLevel, StackValidationArgs

from .. import step_functions
from ..launches import dynamic, state_machine
from ..reachability import Model
from ..reachability.index import label
from ..resources import (
    BATCH_COMPUTE_ENVIRONMENT,
    BATCH_JOB_DEFINITION,
    BATCH_JOB_QUEUE,
    EVENT_RULE_NATIVE,
    EVENT_TARGET,
    FARGATE_CAPACITY_PROVIDERS,
    PIPE,
    STATE_MACHINE,
    UnknownCollector,
    as_list,
    get,
    get_path,
    is_native,
)
from ..rules import EXEMPT_ONLY, Config, Report, judge_each, stack_rule

Resource = Any

#: Every type that submits AWS Batch jobs.
SUBMITTERS = EVENT_TARGET | EVENT_RULE_NATIVE | PIPE | STATE_MACHINE


@dataclass(frozen=True)
class Submission:
    """One way ``resource`` submits Batch jobs: the job definition and job queue references
    (read by ``job`` / ``queue``, held in the top-level inputs ``job_key`` / ``queue_key``),
    ``runtime`` naming a field only known at run time, ``where`` the part that submits."""

    resource: Resource
    job: Callable[[], Any]
    job_key: str | tuple[str, ...]
    queue: Callable[[], Any]
    queue_key: str | tuple[str, ...]
    where: str = ""
    runtime: str | None = None

    @property
    def label(self) -> str:
        return label(self.resource) + self.where


def submissions(resource: Resource) -> Iterator[Submission]:
    """The Batch job submissions a state machine, pipe or EventBridge target / rule makes."""
    rtype, props = resource.resource_type, resource.props
    if rtype in STATE_MACHINE:
        yield from _states(resource)
    elif rtype in PIPE:
        block = get(props, "targetParameters")
        block = get(block, "batchJobParameters") if block is not None else None
        if block is not None:
            yield Submission(
                resource,
                lambda: get(block, "jobDefinition"),
                "targetParameters",
                lambda: get(props, "target"),
                "target",
                runtime=dynamic(block, "jobDefinition"),
            )
    elif rtype in EVENT_TARGET:
        block = get(props, "batchTarget")
        if block is not None:
            job = lambda: get(block, "jobDefinition")  # noqa: E731
            yield Submission(resource, job, "batchTarget", lambda: get(props, "arn"), "arn")
    elif rtype in EVENT_RULE_NATIVE:
        for target in as_list(get(props, "targets")):
            block = get(target, "batchParameters")
            if block is not None:
                job = lambda b=block: get(b, "jobDefinition")  # noqa: E731 (bound per target)
                queue = lambda t=target: get(t, "arn")  # noqa: E731
                yield Submission(resource, job, "targets", queue, "targets")


def _states(resource: Resource) -> Iterator[Submission]:
    keys, parsed = state_machine(resource)
    read = step_functions.read
    for state in step_functions.batch_states(parsed):
        job, job_runtime = state.field("JobDefinition")
        queue, queue_runtime = state.field("JobQueue")
        yield Submission(
            resource,
            lambda j=job: read(j),
            keys,
            lambda q=queue: read(q),
            keys,
            where=f" state {state.name!r}",
            runtime=job_runtime or queue_runtime,
        )


def _fargate_queue(model: Model, queue: Resource) -> bool:
    """A job queue whose compute environments in this stack are Fargate, read once per stack."""

    def compute() -> bool:
        key = (
            "computeEnvironmentOrder"
            if is_native(queue.resource_type)
            else ("computeEnvironmentOrders")
        )
        envs = model.refs(
            queue,
            key,
            BATCH_COMPUTE_ENVIRONMENT,
            values=lambda: [get(o, "computeEnvironment") for o in as_list(get(queue.props, key))],
            what="whether the job queue is on Fargate",
        )
        kinds = [get_path(e.props, "computeResources", "type", default="EC2") for e in envs]
        return any(str(k).upper() in FARGATE_CAPACITY_PROVIDERS for k in kinds)

    return model.memo(("batch-fargate-queue", queue.urn), compute)


def _platforms(model: Model, job: Resource) -> list[str]:
    """A job definition's platform capabilities (EC2 when unset), read once per stack: a
    submitter that names a job definition by name may run every revision the stack holds."""
    return model.memo(
        ("batch-platforms", job.urn),
        lambda: (
            [str(p).upper() for p in as_list(get(job.props, "platformCapabilities"))] or ["EC2"]
        ),
    )


def _judge(model: Model, sub: Submission, report: Report, unknowns: UnknownCollector) -> None:
    if sub.runtime is not None:
        unknowns.note(
            f"cannot verify which job definition runs on which job queue: {sub.label} sets "
            f"{sub.runtime} at run time.",
            sub.resource.urn,
        )
        return
    jobs = model.refs(
        sub.resource,
        sub.job_key,
        BATCH_JOB_DEFINITION,
        values=lambda: [sub.job()],
        what="which job definition it submits",
    )
    ec2_jobs = [j for j in jobs if "FARGATE" not in _platforms(model, j)]
    if not ec2_jobs:
        return  # a Fargate job definition runs on a Fargate queue; what it asks: its own rule
    queues = model.refs(
        sub.resource,
        sub.queue_key,
        BATCH_JOB_QUEUE,
        values=lambda: [sub.queue()],
        what="which job queue it submits an EC2 job definition to",
    )
    for queue in queues:
        if not _fargate_queue(model, queue):
            continue
        for job in ec2_jobs:
            report(
                f"{sub.label} submits job definition {job.name!r} (platformCapabilities "
                f"{_platforms(model, job)}) to job queue {queue.name!r}, whose compute "
                "environments are Fargate: Batch runs a job only on compute environments of the "
                "platform its job definition declares, so the job never runs there.",
                sub.resource.urn,
            )


def _check(
    args: StackValidationArgs, config: Config, report: Report, unknowns: UnknownCollector
) -> None:
    model = Model.of_stack(args.resources, unknowns)

    def judge(submitter: Resource) -> None:
        for sub in submissions(submitter):
            _judge(model, sub, report, unknowns)

    judge_each(model.of(SUBMITTERS), SUBMITTERS, config, unknowns, judge)


no_ec2_job_on_fargate_queue = stack_rule(
    name="no-ec2-batch-job-on-fargate-queue",
    description=(
        "Nothing may submit an AWS Batch job definition for EC2 (platformCapabilities unset or "
        "EC2: the only kind that can ask for GPUs) to a job queue whose compute environments "
        "are Fargate (FARGATE / FARGATE_SPOT): Step Functions batch:submitJob states (fields "
        "literal or from definitionSubstitutions), EventBridge Pipes with batchJobParameters, "
        "EventBridge rule targets with batchTarget / BatchParameters. Fix: submit GPU jobs to "
        "a queue of EC2 compute environments with GPU instance types, or give a job that "
        "needs no GPU platformCapabilities [FARGATE]."
    ),
    level=EnforcementLevel.MANDATORY,
    types=SUBMITTERS | BATCH_JOB_DEFINITION | BATCH_JOB_QUEUE | BATCH_COMPUTE_ENVIRONMENT,
    schema=EXEMPT_ONLY,
    check=_check,
)
