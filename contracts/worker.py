"""The queue worker's container contract: the environment the `QueueWorker` component sets and
the example worker (`images/worker/worker.py`) reads, and the AWS calls it makes with the task
role. Stdlib only; the worker image ships its own file and reads the same names.
"""

from __future__ import annotations

from .aws_calls import AwsCall, Environment, has_all, sqs_queue_arn

CONTAINER_NAME = "worker"
ENV_QUEUE_URL = "QUEUE_URL"
"""The jobs queue the worker long-polls (ReceiveMessage, DeleteMessage, ChangeMessageVisibility)."""
ENV_GATEWAY_URL = "GATEWAY_URL"
"""The AI gateway the worker sends each job to (Service Connect name and port)."""
ENV_VISIBILITY_TIMEOUT = "VISIBILITY_TIMEOUT_SECONDS"
ENV_TASK_PROTECTION_MINUTES = "TASK_PROTECTION_MINUTES"
"""Minutes of ECS task scale-in protection per job (UpdateTaskProtection through the agent)."""
ENV_CONCURRENCY = "WORKER_CONCURRENCY"
ENV_RESULT_QUEUE_URL = "RESULT_QUEUE_URL"
"""Optional queue the worker sends each result to (SendMessage)."""
ENV_API_KEY = "GATEWAY_API_KEY"
"""The key the worker presents to the gateway (a secret): with no gateway database, the
gateway's master key is the only key it accepts."""

SIGNATURE = (ENV_QUEUE_URL, ENV_GATEWAY_URL, ENV_TASK_PROTECTION_MINUTES)
"""Variables that identify this contract's containers."""


def aws_calls(environment: Environment) -> tuple[AwsCall, ...]:
    """Consume the jobs queue, send to the result queue when one is set, and hold task
    scale-in protection on the worker's own task (the ECS agent's task-protection endpoint calls
    UpdateTaskProtection with the task role, on `task/<cluster>/<task id>`)."""
    if not has_all(environment, SIGNATURE):
        return ()
    calls: list[AwsCall] = []
    queue = sqs_queue_arn(environment[ENV_QUEUE_URL])
    if queue is not None:
        calls += [
            AwsCall(action, queue, "consume the jobs queue")
            for action in ("sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:ChangeMessageVisibility")
        ]
    results = sqs_queue_arn(environment.get(ENV_RESULT_QUEUE_URL, ""))
    if results is not None:
        calls.append(AwsCall("sqs:SendMessage", results, "send each result"))
    calls.append(
        AwsCall(
            "ecs:UpdateTaskProtection",
            "arn:{partition}:ecs:{region}:{account}:task/{cluster}/{task}",
            "protect the task from scale-in while a job runs",
        )
    )
    return tuple(calls)
