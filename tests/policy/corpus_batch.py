"""Corpus stacks for AWS Batch jobs launched behind substitutions and parameters, in both
providers' shapes.

Every submitter (a Step Functions ``batch:submitJob`` state with literal names, or in aws-native
with its ``JobDefinition`` / ``JobQueue`` from ``definitionSubstitutions``; an EventBridge Pipe
with ``batchJobParameters``; an EventBridge target with ``batchTarget`` / a rule target with
``batchParameters``) sends a job definition to a job queue:

* an EC2 job definition asking for a GPU, to a queue of Fargate compute environments: the
  submitter is rejected (bad); to a queue of EC2 GPU compute environments (good);
* a Fargate job definition asking for a GPU: the definition is rejected where Batch refuses it,
  at registration, whatever submits it (bad); a plain Fargate job definition (good);
* a job definition set from the event at run time, and a queue outside the stack: noted.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

from tests.policy.corpus import A_BATCH, A_EVENT_TARGET, HOST, N_BATCH, N_RULE_EVENTS, Case, Ref
from tests.policy.corpus_fargate import A_PIPE, A_SFN, IMAGE, N_PIPE, N_SFN

RULE = "no-ec2-batch-job-on-fargate-queue"
A_QUEUE = "aws:batch/jobQueue:JobQueue"
N_QUEUE = "aws-native:batch:JobQueue"
A_ENV = "aws:batch/computeEnvironment:ComputeEnvironment"
N_ENV = "aws-native:batch:ComputeEnvironment"

JOB_NAME, QUEUE_NAME = "infer-job", "infer-queue"
SIZE = [{"type": "VCPU", "value": "1"}, {"type": "MEMORY", "value": "2048"}]
GPU_SIZE = [*SIZE, {"type": "GPU", "value": "1"}]
ROLE = "arn:aws:iam::123456789012:role/launcher"


def _environment(native: bool, fargate: bool) -> dict[str, Any]:
    resources: dict[str, Any] = {
        "type": "FARGATE" if fargate else "EC2",
        "subnets": ["subnet-0a1b2c3d"],
        "securityGroupIds": ["sg-0a1b2c3d"],
        "maxvCpus" if native else "maxVcpus": 16,
    }
    if not fargate:
        resources.update(instanceTypes=["g5.xlarge"], instanceRole="ecsInstanceRole", minVcpus=0)
        resources["minvCpus" if native else "minVcpus"] = resources.pop("minVcpus")
    return {"type": "MANAGED", "computeResources": resources}


def _queue(native: bool) -> dict[str, Any]:
    order = [{"order": 1, "computeEnvironment": Ref("env")}]
    if native:
        return {"jobQueueName": QUEUE_NAME, "priority": 1, "computeEnvironmentOrder": order}
    return {
        "name": QUEUE_NAME,
        "priority": 1,
        "state": "ENABLED",
        "computeEnvironmentOrders": order,
    }


def _job(native: bool, platform: str, gpu: bool) -> dict[str, Any]:
    properties = {"image": IMAGE, "resourceRequirements": GPU_SIZE if gpu else SIZE}
    return {
        "jobDefinitionName" if native else "name": JOB_NAME,
        "type": "container",
        "platformCapabilities": [platform],
        "containerProperties": properties if native else json.dumps(properties),
    }


def _submit_state(parameters: dict[str, Any]) -> dict[str, Any]:
    return {
        "StartAt": "Submit",
        "States": {
            "Submit": {
                "Type": "Task",
                "Resource": "arn:aws:states:::batch:submitJob.sync",
                "Parameters": {"JobName": "infer", **parameters},
                "End": True,
            }
        },
    }


def _sfn_literal(native: bool, queue: Any = QUEUE_NAME, job: Any = JOB_NAME) -> dict[str, Any]:
    text = json.dumps(_submit_state({"JobDefinition": job, "JobQueue": queue}))
    return {"roleArn": ROLE, "definitionString" if native else "definition": text}


def _sfn_substituted() -> dict[str, Any]:
    """aws-native: the definition as an object, its fields filled by CloudFormation."""
    return {
        "roleArn": ROLE,
        "definition": _submit_state({"JobDefinition": "${Job}", "JobQueue": "${Queue}"}),
        "definitionSubstitutions": {"Job": Ref("job"), "Queue": Ref("queue")},
    }


def _pipe(job: Any = None) -> dict[str, Any]:
    return {
        "roleArn": ROLE,
        "source": "arn:aws:sqs:us-east-1:123456789012:jobs",
        "target": Ref("queue"),
        "targetParameters": {
            "batchJobParameters": {"jobDefinition": job or Ref("job"), "jobName": "infer"}
        },
    }


def _event(native: bool, queue: Any = None) -> dict[str, Any]:
    queue = queue or Ref("queue")
    if native:
        block = {"jobDefinition": Ref("job"), "jobName": "infer"}
        target = {"id": "t", "arn": queue, "roleArn": ROLE, "batchParameters": block}
        return {"scheduleExpression": "rate(1 day)", "targets": [target]}
    block = {"jobDefinition": Ref("job"), "jobName": "infer"}
    return {"rule": "nightly", "arn": queue, "roleArn": ROLE, "batchTarget": block}


def _submitters(native: bool) -> dict[str, tuple[str, Callable[[], dict[str, Any]]]]:
    found = {
        "sfn-literal": (N_SFN if native else A_SFN, lambda: _sfn_literal(native)),
        "pipe": (N_PIPE if native else A_PIPE, _pipe),
        "event": (N_RULE_EVENTS if native else A_EVENT_TARGET, lambda: _event(native)),
    }
    if native:
        found["sfn-substituted"] = (N_SFN, _sfn_substituted)
    return found


#: (title part, queue on Fargate, job platform, GPU, expected with the launcher named "launcher")
_MATRIX = (
    ("ec2-gpu-job-fargate-queue", True, "EC2", True, {(RULE, "launcher")}),
    ("ec2-gpu-job-ec2-queue", False, "EC2", True, set()),
    ("fargate-gpu-job-fargate-queue", True, "FARGATE", True, {(HOST, "job")}),
    ("fargate-job-fargate-queue", True, "FARGATE", False, set()),
)


def _stack(
    title: str, expect: set[tuple[str, str]], native: bool, fargate: bool, notes: str = ""
) -> Case:
    """A case with a compute environment (on Fargate or EC2 GPU instances) and its queue."""
    case = Case(title, expect, notes=(notes,) if notes else ())
    case.add(N_ENV if native else A_ENV, "env", _environment(native, fargate))
    return case.add(N_QUEUE if native else A_QUEUE, "queue", _queue(native))


def _matrix_cases() -> Iterator[Case]:
    for native in (False, True):
        p = "native" if native else "aws"
        for kind, (type_, inputs) in _submitters(native).items():
            for part, fargate, platform, gpu, expect in _MATRIX:
                case = _stack(f"batch-submit-{p}-{kind}-{part}", expect, native, fargate)
                case.add(N_BATCH if native else A_BATCH, "job", _job(native, platform, gpu))
                yield case.add(type_, "launcher", inputs())


def _unknown_cases() -> Iterator[Case]:
    """What the verdict hangs on is not known: noted, never passed in silence."""
    outside = "arn:aws:batch:us-east-1:123456789012:job-queue/elsewhere"
    for native in (False, True):
        p = "native" if native else "aws"
        ec2_job = _job(native, "EC2", True)
        title = f"batch-submit-{p}-pipe-runtime-job-definition"
        runtime = _stack(title, set(), native, True, "sets jobDefinition = $.detail.job at run")
        runtime.add(N_BATCH if native else A_BATCH, "job", ec2_job)
        yield runtime.add(N_PIPE if native else A_PIPE, "launcher", _pipe("$.detail.job"))
        state = _submit_state({"JobDefinition.$": "$.job", "JobQueue": QUEUE_NAME})
        title = f"batch-submit-{p}-sfn-runtime-job-definition"
        sfn = _stack(title, set(), native, True, "state 'Submit' sets JobDefinition.$ = $.job")
        sfn.add(N_BATCH if native else A_BATCH, "job", ec2_job)
        key = "definitionString" if native else "definition"
        yield sfn.add(
            N_SFN if native else A_SFN, "launcher", {"roleArn": ROLE, key: json.dumps(state)}
        )
        elsewhere = Case(
            f"batch-submit-{p}-event-queue-outside-stack",
            set(),
            notes=("cannot verify which job queue it submits an EC2 job definition to",),
        )
        elsewhere.add(N_BATCH if native else A_BATCH, "job", ec2_job)
        launcher_type = N_RULE_EVENTS if native else A_EVENT_TARGET
        yield elsewhere.add(launcher_type, "launcher", _event(native, outside))


BATCH_ARN = "arn:aws:batch:us-east-1:123456789012"


def _arn_cases() -> Iterator[Case]:
    """Batch ARNs written out (a job definition with its revision, a job queue), matched to the
    stack's resources by name."""
    job = f"{BATCH_ARN}:job-definition/{JOB_NAME}:3"
    queue = f"{BATCH_ARN}:job-queue/{QUEUE_NAME}"
    for native in (False, True):
        p = "native" if native else "aws"
        submitters = {
            "pipe": (N_PIPE if native else A_PIPE, {**_pipe(job), "target": queue}),
            "sfn": (N_SFN if native else A_SFN, _sfn_literal(native, queue, job)),
        }
        for kind, (type_, inputs) in submitters.items():
            for fargate, expect in ((True, {(RULE, "launcher")}), (False, set())):
                on = "fargate" if fargate else "ec2"
                case = _stack(f"batch-submit-{p}-{kind}-arns-{on}-queue", expect, native, fargate)
                case.add(N_BATCH if native else A_BATCH, "job", _job(native, "EC2", True))
                yield case.add(type_, "launcher", inputs)


def cases() -> list[Case]:
    """Every case of this module."""
    return [*_matrix_cases(), *_unknown_cases(), *_arn_cases()]
