"""QueueWorker: a Fargate service that works through its own SQS queue and scales on backlog.

On top of `FargateService` (log group, roles, task definition, service, scalable target) it adds:
- a dead-letter queue (14 days retention), the work queue (visibility timeout from the
  longest job, long polling, redrive to the DLQ after `max_receive_count` receives) and, when
  asked, a result queue, all with server-side encryption and a queue policy that refuses
  requests without TLS, and a redrive-allow policy so only this queue may use the DLQ;
- a task role that may only receive/delete/extend messages of its queue, send to its result
  queue, and set ECS task scale-in protection on tasks of its cluster;
- a security group with no ingress (a worker pulls its work) and egress only to HTTPS (AWS APIs)
  and to the gateway's port;
- its container, which gets `QUEUE_URL`, `GATEWAY_URL`, `VISIBILITY_TIMEOUT_SECONDS`,
  `TASK_PROTECTION_MINUTES`, `WORKER_CONCURRENCY` and, with a result queue, `RESULT_QUEUE_URL`;
  the service is a Service Connect client of the gateway's namespace when given, with no load
  balancer;
- the three policies of `components.workers.scaling` (target tracking on backlog per task,
  steps out of zero and in to zero) with their two CloudWatch alarms. The request-shaped values
  from that module are converted here, unchanged, into provider arguments.

`QueueWorker(name, input, wiring)`: `input` is the worker's `WorkerConfig` (its stack-file
section), `wiring` what it takes from around it (`WorkerWiring`). It decides its visibility
timeout, scaling target and size itself (`components.workers.decisions.worker_service`), with
the errors a stack file gets, before it creates anything.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

import pulumi
import pulumi_aws as aws
from pulumi import Input, Output

from ecs_inference import ledger
from ecs_inference.arns import arn_of
from ecs_inference.config.issues import Issues
from ecs_inference.contracts import litellm
from ecs_inference.contracts.aws_limits import SQS_RETENTION_MAX
from ecs_inference.contracts.worker import CONTAINER_NAME
from ecs_inference.iam import deny_insecure_transport
from ecs_inference.network.rules import PortRule, aws_api_rule
from ecs_inference.operations.component import metric_alarm_args
from ecs_inference.operations.scaling import snake_case
from ecs_inference.services.base import ClusterWiring, Deployment, TaskRole, cluster_name_from_arn
from ecs_inference.services.containers import container_definition
from ecs_inference.services.fargate import FargateService
from ecs_inference.services.service_connect import Namespace
from ecs_inference.workers.decisions import GatewayKeys, WorkerDecisions, worker_service
from ecs_inference.workers.input import WorkerConfig
from ecs_inference.workers.queues import queue_attributes, queue_names, worker_environment
from ecs_inference.workers.scaling import WorkerScaling

TOKEN = "ecs-inference:workers:QueueWorker"
# SIGTERM to SIGKILL: Fargate's maximum, so a worker can finish or hand back (ChangeMessage-
# Visibility 0) the message it holds; scale-in protection keeps long jobs from getting here.
WORKER_STOP_TIMEOUT_SECONDS = 120

QUEUE_ACTIONS = (
    "sqs:ReceiveMessage",
    "sqs:DeleteMessage",
    "sqs:ChangeMessageVisibility",
    "sqs:GetQueueAttributes",
    "sqs:GetQueueUrl",
)
TASK_PROTECTION_ACTIONS = ("ecs:GetTaskProtection", "ecs:UpdateTaskProtection")


@dataclass(frozen=True, kw_only=True)
class WorkerWiring(ClusterWiring):
    """What a queue worker takes from around it besides its input: the cluster's wiring
    (`ClusterWiring`) and the gateway it calls."""

    gateway_url: Input[str]
    """The gateway's private URL (`GATEWAY_URL`), e.g. `LiteLLMGateway.private_url`."""
    gateway_keys: GatewayKeys
    """The keys the gateway accepts: a worker without its own `GATEWAY_API_KEY` gets the master
    key's reference, and one the gateway would refuse is an error."""
    gateway_security_group_id: Input[str] | None = None
    """The gateway tasks' group; None: no egress rule to it."""
    gateway_port: int = litellm.PORT
    """The gateway's port (LiteLLM's)."""
    service_connect_namespace: Namespace | None = None
    """Namespace whose Service Connect names the worker resolves; None: no Service Connect."""
    worker: str | None = None
    """The worker's key (its queues, log group and task family); None (default): the
    component's name. A stack names its components `<platform>-<worker>`."""


def queue_url(name: str, *, region: str, account_id: str, dns_suffix: str) -> str:
    """The URL SQS gives a queue: `https://sqs.<region>.<dns suffix>/<account>/<name>`."""
    return f"https://sqs.{region}.{dns_suffix}/{account_id}/{name}"


def worker_task_policy(
    *,
    queue_arn: str,
    cluster_name: str,
    region: str,
    account_id: str,
    partition: str = "aws",
    result_queue_arn: str | None = None,
) -> str:
    """The task role's policy: its own queue's consumer actions, task scale-in protection on
    tasks of its cluster (ECS authorises UpdateTaskProtection on the task ARN) and, with a
    result queue (`result_queue_arn`, default None), SendMessage to it only."""
    statements: list[dict[str, Any]] = [
        {
            "Sid": "ConsumeOwnQueue",
            "Effect": "Allow",
            "Action": list(QUEUE_ACTIONS),
            "Resource": queue_arn,
        },
        {
            "Sid": "ProtectOwnTasksWhileWorking",
            "Effect": "Allow",
            "Action": list(TASK_PROTECTION_ACTIONS),
            "Resource": f"arn:{partition}:ecs:{region}:{account_id}:task/{cluster_name}/*",
        },
    ]
    if result_queue_arn is not None:
        statements.append(
            {
                "Sid": "SendOwnResults",
                "Effect": "Allow",
                "Action": "sqs:SendMessage",
                "Resource": result_queue_arn,
            }
        )
    return json.dumps({"Version": "2012-10-17", "Statement": statements})


def tls_only_queue_policy(queue_arn: str) -> str:
    """Queue policy: deny every request that does not use TLS."""
    deny = deny_insecure_transport("DenyWithoutTls", "sqs:*", queue_arn)
    return json.dumps({"Version": "2012-10-17", "Statement": [deny]})


def worker_container_definitions(
    *,
    image: str,
    queue_url: str,
    gateway_url: str,
    worker: WorkerDecisions,
    log_group: str,
    region: str,
    result_queue_url: str | None = None,
) -> list[dict[str, Any]]:
    """The worker's one container: the user's image with the managed variables (the result
    queue's URL when there is one; default none), secrets by reference, non-blocking awslogs,
    Fargate's longest stop timeout, tini as PID 1."""
    managed = worker_environment(
        queue_url=queue_url,
        gateway_url=gateway_url,
        visibility_timeout_seconds=worker.visibility_timeout_seconds,
        concurrency=worker.input.concurrency,
        result_queue_url=result_queue_url,
    )
    return [
        container_definition(
            name=CONTAINER_NAME,
            image=image,
            environment=[{"name": k, "value": v} for k, v in managed.items()],
            extra_environment=worker.input.environment,
            region_variables=False,
            log_group_name=log_group,
            region=region,
            stream_prefix=worker.name,
            stop_timeout_seconds=WORKER_STOP_TIMEOUT_SECONDS,
            nofile_limit=False,
            secrets=worker.secret_refs,
            linux_parameters={"initProcessEnabled": True},
        )
    ]


# --------------------------------------------------------------------------------------------
# request-shaped values -> provider arguments
# --------------------------------------------------------------------------------------------


def _bound(value: float) -> str:
    # The provider takes step bounds as strings (Terraform's schema); whole numbers without ".0".
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def step_scaling_args(
    config: Mapping[str, Any],
) -> aws.appautoscaling.PolicyStepScalingPolicyConfigurationArgsDict:
    """`StepScalingPolicyConfiguration` (API shape) as provider arguments (`snake_case`, each
    step's bounds as strings)."""
    steps = [
        {k: _bound(v) if k.startswith("MetricInterval") else v for k, v in step.items()}
        for step in config["StepAdjustments"]
    ]
    return cast(
        "aws.appautoscaling.PolicyStepScalingPolicyConfigurationArgsDict",
        snake_case({**config, "StepAdjustments": steps}),
    )


class QueueWorker(FargateService):
    """One queue worker on Fargate; outputs as `EcsService` (no load balancer) and below."""

    queue_name: str
    """The work queue's fixed name (known at preview)."""
    dead_letter_queue_name: str
    """The dead-letter queue's fixed name."""
    queue_url: Output[str]
    """The work queue's URL (known at preview)."""
    queue: aws.sqs.Queue
    """The work queue."""
    dead_letter_queue: aws.sqs.Queue
    """Its dead-letter queue."""
    redrive_allow_policy: aws.sqs.RedriveAllowPolicy
    """Only the work queue may use the DLQ."""
    result_queue: aws.sqs.Queue | None
    """The result queue; None unless asked."""
    queue_policies: list[aws.sqs.QueuePolicy]
    """TLS-only policy per queue."""
    scaling: WorkerScaling
    """The scaling policies as API values, with the resources' names."""
    backlog_policy: aws.appautoscaling.Policy
    """Target tracking on backlog per task."""
    from_zero_policy: aws.appautoscaling.Policy
    """The step out of zero tasks."""
    from_zero_alarm: aws.cloudwatch.MetricAlarm
    """Its alarm (visible messages while no task runs)."""
    to_zero_policy: aws.appautoscaling.Policy | None
    """The step to zero; None when `min_count` > 0."""
    to_zero_alarm: aws.cloudwatch.MetricAlarm | None
    """Its alarm (nothing waiting or in flight); None when `min_count` > 0."""
    decided: WorkerDecisions
    """What it decided: visibility timeout, scaling target, secrets and the decision lines."""

    def __init__(
        self,
        name: str,
        input: WorkerConfig,
        wiring: WorkerWiring,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        project_stack = (pulumi.get_project(), pulumi.get_stack())
        # A stack file's checks, each problem at its config path (`platform.workers.<name>`).
        decided, found = worker_service(
            wiring.worker or name, input, gateway=wiring.gateway_keys, project_stack=project_stack
        )
        Issues(found).raise_if_any()
        assert decided is not None
        self.decided = worker = decided
        queue_name, dlq_name, results_name = queue_names(*project_stack, worker.name)
        super().__init__(TOKEN, name, opts)
        ledger.record_decisions(f"worker {worker.name}", worker.lines)
        ledger.record_fargate(f"worker {worker.name}", worker, None)
        self.queue_name, self.dead_letter_queue_name = queue_name, dlq_name
        self._queues(worker, queue_name, dlq_name, results_name)
        group = self._logs(worker.name, input.log_retention_days)
        self.queue_url = self._known_url(queue_name)
        self._containers(
            lambda a: worker_container_definitions(
                image=a[1],
                queue_url=a[3],
                gateway_url=a[2],
                worker=worker,
                log_group=group,
                region=a[0],
                result_queue_url=a[4] if input.result_queue else None,
            ),
            input.image,
            wiring.gateway_url,
            self.queue_url,
            self._known_url(results_name),
            secret_arns=wiring.stack_secret_arns,
        )
        cluster_name = Output.from_input(wiring.cluster_arn).apply(cluster_name_from_arn)
        self._fargate_task(
            service=worker.name,
            input=input,
            size=worker.size,
            task_role=TaskRole(
                f"Worker {worker.name}: its own queue and task protection only",
                {"task": self._task_policy(cluster_name)},
            ),
        )
        self._fargate_service(
            wiring,
            security_groups=[self._worker_security_group(worker.name, wiring).id],
            deployment=Deployment(
                desired_count=input.desired_count,
                # Tasks poll the queue as soon as they start.
                depends_on=[self.queue, *wiring.service_depends_on],
            ),
            service_connect=None
            if wiring.service_connect_namespace is None
            else aws.ecs.ServiceServiceConnectConfigurationArgs(
                enabled=True, namespace=wiring.service_connect_namespace.arn
            ),
        )
        self._scaling_policies(worker, wiring, queue_name, cluster_name)
        outputs: dict[str, Any] = {
            "queueUrl": self.queue.url,
            "deadLetterQueueUrl": self.dead_letter_queue.url,
            "serviceName": self.service.name,
        }
        if self.result_queue is not None:
            outputs["resultQueueUrl"] = self.result_queue.url
        self.register_outputs(outputs)

    def _queues(self, worker: WorkerDecisions, queue: str, dlq: str, results: str) -> None:
        """The dead-letter queue, the work queue redriving to it, the result queue when asked,
        and a TLS-only policy on each."""
        name, child, ctx, args = self._name, self._child, self._ctx, worker.input
        encryption: dict[str, Any] = {
            "sqs_managed_sse_enabled": args.kms_key_id is None,
            "kms_master_key_id": args.kms_key_id,
        }
        self.dead_letter_queue = aws.sqs.Queue(
            f"{name}-dlq",
            name=dlq,
            # A message's age counts from its first enqueue, so the DLQ keeps it longest.
            message_retention_seconds=SQS_RETENTION_MAX,
            opts=child,
            **encryption,
        )
        attrs = queue_attributes(
            visibility_timeout_seconds=worker.visibility_timeout_seconds,
            retention_seconds=args.retention_seconds,
            max_receive_count=args.max_receive_count,
            kms_key_id=args.kms_key_id,
        )
        self.queue = aws.sqs.Queue(
            f"{name}-queue",
            name=queue,
            visibility_timeout_seconds=int(attrs["VisibilityTimeout"]),
            message_retention_seconds=int(attrs["MessageRetentionPeriod"]),
            receive_wait_time_seconds=int(attrs["ReceiveMessageWaitTimeSeconds"]),
            redrive_policy=arn_of(self.dead_letter_queue, ctx).apply(
                lambda arn: json.dumps(
                    {"deadLetterTargetArn": arn, "maxReceiveCount": args.max_receive_count}
                )
            ),
            opts=child,
            **encryption,
        )
        self.redrive_allow_policy = aws.sqs.RedriveAllowPolicy(
            f"{name}-dlq-sources",
            queue_url=self._known_url(self.dead_letter_queue.name),
            redrive_allow_policy=arn_of(self.queue, ctx).apply(
                lambda arn: json.dumps({"redrivePermission": "byQueue", "sourceQueueArns": [arn]})
            ),
            opts=child,
        )
        self.result_queue = None
        if args.result_queue:
            self.result_queue = aws.sqs.Queue(
                f"{name}-results",
                name=results,
                # Results wait for their reader as long as the work waited for the worker.
                message_retention_seconds=int(attrs["MessageRetentionPeriod"]),
                opts=child,
                **encryption,
            )
        queues = [("queue", self.queue), ("dlq", self.dead_letter_queue)]
        if self.result_queue is not None:
            queues.append(("results", self.result_queue))
        self.queue_policies = [
            aws.sqs.QueuePolicy(
                f"{name}-{role}-tls",
                queue_url=self._known_url(q.name),
                policy=arn_of(q, ctx).apply(tls_only_queue_policy),
                opts=child,
            )
            for role, q in queues
        ]

    def _known_url(self, queue: Input[str]) -> Output[str]:
        """The URL of the queue named `queue` (what its `url` output gets, known at preview)."""
        ctx = self._ctx
        return Output.all(queue, ctx.region, ctx.account_id, ctx.dns_suffix).apply(
            lambda a: queue_url(a[0], region=a[1], account_id=a[2], dns_suffix=a[3])
        )

    def _task_policy(self, cluster_name: Output[str]) -> Output[str]:
        ctx = self._ctx
        return Output.all(
            queue_arn=arn_of(self.queue, ctx),
            cluster_name=cluster_name,
            region=ctx.region,
            account_id=ctx.account_id,
            partition=ctx.partition,
            result_queue_arn=None if self.result_queue is None else arn_of(self.result_queue, ctx),
        ).apply(lambda a: worker_task_policy(**a))

    def _worker_security_group(self, worker: str, args: WorkerWiring) -> aws.ec2.SecurityGroup:
        egress = [aws_api_rule("HTTPS to AWS APIs (SQS, ECR, logs; VPC endpoints or NAT)")]
        if args.gateway_security_group_id is not None:
            egress.append(
                PortRule(
                    args.gateway_port,
                    "The gateway (Service Connect)",
                    group=args.gateway_security_group_id,
                )
            )
        self.security_group = aws.ec2.SecurityGroup(
            f"{self._name}-tasks",
            description=f"Worker {worker}: no ingress; HTTPS and the gateway out",
            vpc_id=args.vpc_id,
            egress=[rule.inline_egress() for rule in egress],
            opts=self._child,
        )
        return self.security_group

    def _scaling_policies(
        self,
        worker: WorkerDecisions,
        wiring: WorkerWiring,
        queue_name: str,
        cluster_name: Output[str],
    ) -> None:
        """The scalable target, target tracking on backlog per task, the step out of zero and,
        when the worker may scale to zero, the step in to zero, each step with its alarm."""
        name = self._name
        self.scaling = scaling = WorkerScaling(
            queue_name=Output.from_input(queue_name),
            cluster_name=cluster_name,
            service_name=self.service.name,
            target=worker.backlog_target,
            worker=worker.input,
        )
        common = self._scalable(wiring.cluster_arn, worker.input.min_count, worker.input.max_count)
        after_target = pulumi.ResourceOptions(parent=self, depends_on=[self.scaling_target])

        def step(
            role: str, config: Mapping[str, Any], alarm: Mapping[str, Any]
        ) -> tuple[aws.appautoscaling.Policy, aws.cloudwatch.MetricAlarm]:
            policy = aws.appautoscaling.Policy(
                f"{name}-{role}",
                policy_type="StepScaling",
                step_scaling_policy_configuration=step_scaling_args(config),
                opts=after_target,
                **common,  # pyright: ignore[reportArgumentType]
            )
            # The provider names the alarm (AlarmName None) and its action is the policy's ARN;
            # everything else is the request-shaped value.
            request = {**alarm, "AlarmName": None, "AlarmActions": [policy.arn]}
            return policy, aws.cloudwatch.MetricAlarm(
                f"{name}-{role}",
                **metric_alarm_args(request),
                opts=pulumi.ResourceOptions(parent=self),
            )

        self.backlog_policy = aws.appautoscaling.Policy(
            f"{name}-backlog",
            policy_type="TargetTrackingScaling",
            target_tracking_scaling_policy_configuration=cast(
                "aws.appautoscaling.PolicyTargetTrackingScalingPolicyConfigurationArgsDict",
                snake_case(scaling.target_tracking_configuration()),
            ),
            opts=after_target,
            **common,  # pyright: ignore[reportArgumentType]
        )
        self.from_zero_policy, self.from_zero_alarm = step(
            "from-zero", scaling.from_zero_policy_configuration(), scaling.from_zero_alarm()
        )
        self.to_zero_policy = self.to_zero_alarm = None
        if scaling.scales_to_zero:
            self.to_zero_policy, self.to_zero_alarm = step(
                "to-zero", scaling.to_zero_policy_configuration(), scaling.to_zero_alarm()
            )
