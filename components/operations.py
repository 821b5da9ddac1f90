"""Operations: the stack's alarm topic, paging alarms, deployment-rollback rule and dashboard.

Creates, from the specs in `components.specs.operations` (where every threshold, name and shape is
decided and tested against botocore):
- a KMS key (rotation on) and an SNS topic encrypted with it, whose key policy and topic policy
  let only CloudWatch alarms of this stack and the rollback rule publish (an AWS-managed
  `alias/aws/sns` key cannot be used: its key policy does not admit the CloudWatch and
  EventBridge service principals, so every alarm notification would fail);
- one subscription per configured endpoint;
- the alarms of every service, GPU pool, the gateway and every queue worker, with the topic as
  alarm and OK action;
- the EventBridge rule for circuit-breaker rollbacks of this stack's cluster, targeting the topic;
- the stack's dashboard.

The specs are built once with placeholder values for what is known only at deploy time (ARN
suffixes, generated names); `_resolve` swaps the placeholders for the Outputs, so alarm names and
shapes are fixed at preview and only dimension values wait for the cloud.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_aws as aws
from pulumi import Input, Output

from ecs_inference.arns import arn_of, aws_context, known_arn
from ecs_inference.specs import operations as obs
from ecs_inference.specs.gateway import LiteLLMGatewaySpec
from ecs_inference.specs.worker import QueueWorkerSpec

TOKEN = "ecs-inference:operations:Operations"
ALARM = "aws:cloudwatch/metricAlarm:MetricAlarm"


@dataclass(frozen=True)
class ServiceWatch:
    """One load-balanced service to watch. `target_group_arn_suffix` and `ecs_service_name` are
    Outputs of the service component; `pool` is None for Fargate re-rankers."""

    service: str
    kind: str
    """The model's engine (its registry name) or `reranker`."""
    min_count: int
    target_group_arn_suffix: Input[str]
    ecs_service_name: Input[str]
    pool: str | None = None
    engine_metrics: bool = True
    """The task runs the metrics sidecar (the engine alarms read its series)."""


@dataclass(frozen=True)
class GatewayWatch:
    """The AI gateway to watch: its spec (thresholds) and the service component's Outputs."""

    spec: LiteLLMGatewaySpec
    target_group_arn_suffix: Input[str]
    ecs_service_name: Input[str]


@dataclass(frozen=True)
class WorkerWatch:
    """A queue worker to watch: its spec (thresholds), its queues' fixed names, the ECS service
    name (an Output), and the job timings the queue-age alarm judges against."""

    spec: QueueWorkerSpec
    queue_name: str
    dead_letter_queue_name: str
    ecs_service_name: Input[str]
    acceptable_latency_seconds: float
    """How long a job may wait before it starts."""
    max_job_seconds: int
    """The longest job."""


@dataclass(frozen=True)
class OperationsArgs:
    """Inputs of `Operations`: what to watch (with its components' Outputs) and where alarms go."""

    cluster_name: Input[str]
    """The ECS cluster (alarm dimensions)."""
    cluster_arn: Input[str]
    """The ECS cluster (the rollback rule's event pattern)."""
    load_balancer_arn_suffix: Input[str]
    """The ALB (alarm and dashboard dimensions)."""
    services: Sequence[ServiceWatch] = ()
    """Model and re-ranker services to watch."""
    gpu_pools: Sequence[str] = ()
    """GPU pools running host telemetry (their panels and GPU memory alarm)."""
    neuron_pools: Sequence[str] = ()
    """Neuron pools running host telemetry (their panels)."""
    gateway: GatewayWatch | None = None
    """The AI gateway to watch; None: none."""
    workers: Sequence[WorkerWatch] = ()
    """Queue workers to watch."""
    alarm_settings: obs.AlarmSettings = field(default_factory=obs.AlarmSettings)
    """Alarm thresholds."""
    subscriptions: Sequence[obs.Subscription] = ()
    """Alarm topic subscriptions (none: the topic exists, subscribe later)."""
    dashboard: bool = True
    """Create the stack's dashboard."""


# Placeholders that stand for deploy-time values inside the specs (never reach AWS).
_LB = "app/placeholder-lb/0000000000000000"
_CLUSTER = "placeholder-cluster"
_CLUSTER_ARN = "arn:aws:ecs:us-east-1:000000000000:cluster/placeholder-cluster"


_GATEWAY = "gateway"


def _tg(i: int | str) -> str:
    return f"targetgroup/placeholder-{i}/0000000000000000"


def _svc(i: int | str) -> str:
    return f"placeholder-service-{i}"


def _worker_svc(i: int) -> str:
    return _svc(f"worker-{i}")


def _placeholder_outputs(args: OperationsArgs) -> dict[str, Input[str]]:
    """Placeholder -> the Output it stands for."""
    outputs: dict[str, Input[str]] = {
        _LB: args.load_balancer_arn_suffix,
        _CLUSTER: args.cluster_name,
    }
    for i, s in enumerate(args.services):
        outputs[_tg(i)] = s.target_group_arn_suffix
        outputs[_svc(i)] = s.ecs_service_name
    if args.gateway is not None:
        outputs[_tg(_GATEWAY)] = args.gateway.target_group_arn_suffix
        outputs[_svc(_GATEWAY)] = args.gateway.ecs_service_name
    for i, w in enumerate(args.workers):
        outputs[_worker_svc(i)] = w.ecs_service_name
    return outputs


def _resolve(value: Any, outputs: Mapping[str, Input[str]]) -> Any:
    """`value` with every placeholder string replaced by its Output (recursively)."""
    if isinstance(value, str):
        return outputs.get(value, value)
    if isinstance(value, Mapping):
        return {k: _resolve(v, outputs) for k, v in value.items()}
    if isinstance(value, list):
        return [_resolve(v, outputs) for v in value]
    return value


def _dimensions(dims: Sequence[Mapping[str, Any]] | None) -> dict[str, Any] | None:
    return {d["Name"]: d["Value"] for d in dims} if dims else None


def metric_alarm_args(request: Mapping[str, Any]) -> dict[str, Any]:
    """A PutMetricAlarm request (PascalCase, as the specs build it) as `aws.cloudwatch.MetricAlarm`
    keyword arguments."""
    out: dict[str, Any] = {
        "name": request["AlarmName"],
        "alarm_description": request.get("AlarmDescription"),
        "actions_enabled": request.get("ActionsEnabled", True),
        "evaluation_periods": request["EvaluationPeriods"],
        "datapoints_to_alarm": request.get("DatapointsToAlarm"),
        "threshold": request["Threshold"],
        "comparison_operator": request["ComparisonOperator"],
        "treat_missing_data": request.get("TreatMissingData"),
    }
    if "MetricName" in request:
        out.update(
            metric_name=request["MetricName"],
            namespace=request["Namespace"],
            statistic=request.get("Statistic"),
            extended_statistic=request.get("ExtendedStatistic"),
            period=request["Period"],
            dimensions=_dimensions(request.get("Dimensions")),
            unit=request.get("Unit"),
        )
    if "Metrics" in request:
        queries = []
        for q in request["Metrics"]:
            query: dict[str, Any] = {"id": q["Id"], "return_data": q.get("ReturnData", False)}
            if "Expression" in q:
                query["expression"] = q["Expression"]
            if "Label" in q:
                query["label"] = q["Label"]
            if "MetricStat" in q:
                stat = q["MetricStat"]
                metric = stat["Metric"]
                query["metric"] = {
                    "metric_name": metric["MetricName"],
                    "namespace": metric["Namespace"],
                    "dimensions": _dimensions(metric.get("Dimensions")),
                    "period": stat["Period"],
                    "stat": stat["Stat"],
                }
            queries.append(query)
        out["metric_queries"] = queries
    return {k: v for k, v in out.items() if v is not None}


def key_policy(partition: str, account: str) -> str:
    """The alarm topic's KMS key policy: the account administers it; CloudWatch and EventBridge
    of this account may encrypt messages for the topic."""
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Sid": "AccountAdministers",
                    "Effect": "Allow",
                    "Principal": {"AWS": f"arn:{partition}:iam::{account}:root"},
                    "Action": "kms:*",
                    "Resource": "*",
                },
                {
                    "Sid": "AlarmsAndRulesPublish",
                    "Effect": "Allow",
                    "Principal": {"Service": ["cloudwatch.amazonaws.com", "events.amazonaws.com"]},
                    "Action": ["kms:Decrypt", "kms:GenerateDataKey*"],
                    "Resource": "*",
                    "Condition": {"StringEquals": {"aws:SourceAccount": account}},
                },
            ],
        },
        sort_keys=True,
    )


def topic_policy(
    topic_arn: str, rule_arn: str, partition: str, region: str, account: str, stack: str
) -> str:
    """Who may publish to the alarm topic: this stack's alarms and its rollback rule only (the
    account keeps managing it)."""
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Sid": "AccountManages",
                    "Effect": "Allow",
                    "Principal": {"AWS": f"arn:{partition}:iam::{account}:root"},
                    "Action": [
                        "sns:GetTopicAttributes",
                        "sns:SetTopicAttributes",
                        "sns:Subscribe",
                        "sns:ListSubscriptionsByTopic",
                        "sns:Publish",
                    ],
                    "Resource": topic_arn,
                },
                {
                    "Sid": "StackAlarmsPublish",
                    "Effect": "Allow",
                    "Principal": {"Service": "cloudwatch.amazonaws.com"},
                    "Action": "sns:Publish",
                    "Resource": topic_arn,
                    "Condition": {
                        "ArnLike": {
                            "aws:SourceArn": f"arn:{partition}:cloudwatch:{region}:{account}:"
                            f"alarm:{stack}-*"
                        },
                        "StringEquals": {"aws:SourceAccount": account},
                    },
                },
                {
                    "Sid": "RollbackRulePublishes",
                    "Effect": "Allow",
                    "Principal": {"Service": "events.amazonaws.com"},
                    "Action": "sns:Publish",
                    "Resource": topic_arn,
                    "Condition": {"ArnEquals": {"aws:SourceArn": rule_arn}},
                },
            ],
        },
        sort_keys=True,
    )


def alarm_specs(args: OperationsArgs, stack: str) -> list[tuple[str, obs.AlarmSpec]]:
    """Every alarm of the stack with the label of its subject (`obs.stack_alarms`), with
    placeholders for deploy-time values, so its names, count and shapes are known at preview."""
    gateway = args.gateway
    return obs.stack_alarms(
        stack=stack,
        settings=args.alarm_settings,
        load_balancer=_LB,
        cluster_name=_CLUSTER,
        services=[
            obs.ServiceSubject(
                s.service, s.kind, s.min_count, _tg(i), _svc(i), engine_metrics=s.engine_metrics
            )
            for i, s in enumerate(args.services)
        ],
        gpu_pools=args.gpu_pools,
        gateway=None
        if gateway is None
        else obs.GatewaySubject(gateway.spec.path, gateway.spec, _tg(_GATEWAY), _svc(_GATEWAY)),
        workers=[
            obs.WorkerSubject(
                f"worker-{w.spec.worker}",
                w.spec,
                w.acceptable_latency_seconds,
                w.max_job_seconds,
                w.queue_name,
                w.dead_letter_queue_name,
                _worker_svc(i),
            )
            for i, w in enumerate(args.workers)
        ],
    )


class Operations(pulumi.ComponentResource):
    """The stack's alarm topic, paging alarms, rollback rule and dashboard."""

    key: aws.kms.Key
    """Encrypts the alarm topic (CloudWatch and EventBridge may use it)."""
    topic: aws.sns.Topic
    """The alarm topic."""
    topic_policy: aws.sns.TopicPolicy
    """Only this stack's alarms and rollback rule publish."""
    subscriptions: list[aws.sns.TopicSubscription]
    """One per configured subscription."""
    alarms: dict[str, aws.cloudwatch.MetricAlarm]
    """The paging alarms by name."""
    rollback_rule: aws.cloudwatch.EventRule
    """Circuit-breaker rollbacks of this stack's cluster."""
    rollback_target: aws.cloudwatch.EventTarget
    """The rule's target: the topic."""
    dashboard: aws.cloudwatch.Dashboard | None
    """The stack's dashboard; None when off."""

    def __init__(
        self, name: str, args: OperationsArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        problems = obs.check_subscriptions(args.subscriptions)
        if problems:
            raise obs.ObservabilityError("; ".join(f"{p}: {m}" for p, m in problems))
        stack = pulumi.get_stack()
        # Everything that can be refused is decided now, with placeholders, before anything is
        # registered: alarm names and thresholds, the rule name, the dashboard's limits.
        specs = alarm_specs(args, stack)
        obs.deployment_rollback_rule(stack, _CLUSTER_ARN)
        if args.dashboard:
            placeholders = {k: k for k in _placeholder_outputs(args)}
            obs.dashboard_body(
                _dashboard_inputs(
                    args, stack, "us-east-1", [s.name for _, s in specs], placeholders
                )
            )
        super().__init__(TOKEN, name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        ctx = aws_context(self)
        partition, account, region = ctx.partition, ctx.account_id, ctx.region

        self.key = aws.kms.Key(
            f"{name}-alarms",
            description=f"{stack}: encrypts the alarm topic",
            enable_key_rotation=True,
            deletion_window_in_days=30,
            policy=Output.all(partition, account).apply(lambda v: key_policy(v[0], v[1])),
            opts=child,
        )
        self.topic = aws.sns.Topic(
            f"{name}-alarms",
            display_name=f"{stack} alarms"[:100],
            kms_master_key_id=self.key.arn,
            opts=child,
        )
        # The topic's ARN from its name: known at preview, so the alarms' actions and the topic
        # policy are too (the key's ARN carries an id AWS assigns, so the topic's key is not).
        topic_arn = arn_of(self.topic, ctx)
        self.subscriptions = [
            aws.sns.TopicSubscription(
                f"{name}-alarms-{i}",
                topic=topic_arn,
                protocol=sub.protocol,
                # An https recipient may carry a token in its URL, and any recipient may be set
                # with `pulumi config set --secret`: the state keeps it encrypted.
                endpoint=pulumi.Output.secret(sub.endpoint),
                opts=child,
            )
            for i, sub in enumerate(args.subscriptions)
        ]

        outputs = _placeholder_outputs(args)
        self.alarms = {}
        for label, spec in specs:
            alarm_args = _resolve(metric_alarm_args(spec.request), outputs)
            self.alarms[spec.name] = aws.cloudwatch.MetricAlarm(
                f"{name}-{label}-{spec.key}",
                alarm_actions=[topic_arn],
                ok_actions=[topic_arn],
                opts=child,
                **alarm_args,
            )

        rule = obs.deployment_rollback_rule(stack, _CLUSTER_ARN)
        pattern = Output.from_input(args.cluster_arn).apply(
            lambda arn: obs.deployment_rollback_rule(stack, arn)["EventPattern"]
        )
        self.rollback_rule = aws.cloudwatch.EventRule(
            f"{name}-rollback",
            name=rule["Name"],
            description=rule["Description"],
            event_pattern=pattern,
            state=rule["State"],
            opts=child,
        )
        self.rollback_target = aws.cloudwatch.EventTarget(
            f"{name}-rollback",
            # The name is fixed (known at preview); the dependency keeps the order.
            rule=rule["Name"],
            arn=topic_arn,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.rollback_rule]),
        )
        self.topic_policy = aws.sns.TopicPolicy(
            f"{name}-alarms",
            arn=topic_arn,
            policy=Output.all(
                topic_arn, arn_of(self.rollback_rule, ctx), partition, region, account
            ).apply(lambda v: topic_policy(v[0], v[1], v[2], v[3], v[4], stack)),
            opts=child,
        )

        self.dashboard = None
        if args.dashboard:
            names = list(self.alarms)
            alarm_arns = Output.all(*[known_arn(ALARM, n, ctx) for n in names])
            keys = list(outputs)
            body = Output.all(region, alarm_arns, *[outputs[k] for k in keys]).apply(
                lambda v: obs.dashboard_body(
                    _dashboard_inputs(args, stack, v[0], v[1], dict(zip(keys, v[2:], strict=True)))
                )
            )
            self.dashboard = aws.cloudwatch.Dashboard(
                f"{name}-dashboard",
                dashboard_name=obs.dashboard_name(stack),
                dashboard_body=body,
                opts=child,
            )
        self.register_outputs({"topicArn": topic_arn})


def _dashboard_inputs(
    args: OperationsArgs,
    stack: str,
    region: str,
    alarm_arns: Sequence[str],
    values: Mapping[str, str],
) -> obs.DashboardInputs:
    models: list[obs.ModelPanel] = []
    rerankers: list[obs.RerankerPanel] = []
    for i, s in enumerate(args.services):
        if s.kind == "reranker":
            rerankers.append(obs.RerankerPanel(s.service, values[_tg(i)], values[_svc(i)]))
        else:
            models.append(
                obs.ModelPanel(
                    s.service,
                    s.kind,
                    s.pool or "",
                    values[_tg(i)],
                    values[_svc(i)],
                    engine_metrics=s.engine_metrics,
                )
            )
    gateway = None
    if args.gateway is not None:
        gw = args.gateway.spec
        gateway = obs.GatewayPanel(
            gw.path,
            values[_tg(_GATEWAY)],
            values[_svc(_GATEWAY)],
            longest_request_seconds=gw.litellm.longest_request_seconds,
            target_cpu_percent=gw.target_cpu_percent,
        )
    workers = [
        obs.WorkerPanel(
            w.spec.worker,
            w.queue_name,
            w.dead_letter_queue_name,
            values[_worker_svc(i)],
            queue_age_seconds=obs.queue_age_threshold_seconds(
                w.acceptable_latency_seconds, w.max_job_seconds
            ),
            backlog_target=w.spec.backlog_target,
        )
        for i, w in enumerate(args.workers)
    ]
    return obs.DashboardInputs(
        stack=stack,
        region=region,
        cluster_name=values[_CLUSTER],
        load_balancer=values[_LB],
        models=models,
        rerankers=rerankers,
        gateway=gateway,
        workers=workers,
        gpu_pools=list(args.gpu_pools),
        neuron_pools=list(args.neuron_pools),
        alarm_arns=list(alarm_arns),
    )
