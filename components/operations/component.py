"""Operations: the stack's alarm topic, paging alarms, deployment-rollback rule and dashboard.

`Operations(name, input, wiring)`: `input` is the stack file's `operations` section
(`OperationsConfig`), `wiring` what the stack decides it watches (`Watch`) and the watched
components' Outputs. It decides its alarms itself (`components.operations.decisions`, where every
threshold, name and shape is decided and tested against botocore), with the errors a stack file
gets, and creates:
- a KMS key (rotation on) and an SNS topic encrypted with it, whose key policy and topic policy
  let only CloudWatch alarms of this stack and the rollback rule publish (an AWS-managed
  `alias/aws/sns` key cannot be used: its key policy does not admit the CloudWatch and
  EventBridge service principals, so every alarm notification would fail);
- one subscription per configured endpoint;
- the alarms of every service, GPU pool, the gateway and every queue worker, with the topic as
  alarm and OK action;
- the EventBridge rule for circuit-breaker rollbacks of this stack's cluster, targeting the topic;
- the stack's dashboard.

The alarms are built once with placeholder values for what is known only at deploy time (ARN
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

from ecs_inference import ledger
from ecs_inference.arns import arn_of, aws_context, known_arn
from ecs_inference.operations import watch
from ecs_inference.operations.alarms import alarm_metric_count
from ecs_inference.operations.dashboard import dashboard_body, dashboard_name
from ecs_inference.operations.decisions import operations_alarms
from ecs_inference.operations.input import OperationsConfig
from ecs_inference.operations.rollback import deployment_rollback_rule
from ecs_inference.operations.scaling import snake_case
from ecs_inference.operations.watch import Watch

TOKEN = "ecs-inference:operations:Operations"
ALARM = "aws:cloudwatch/metricAlarm:MetricAlarm"


@dataclass(frozen=True)
class ServiceOutputs:
    """What a watched service's component gives the alarms and dashboard (Outputs)."""

    target_group_arn_suffix: Input[str]
    ecs_service_name: Input[str]


@dataclass(frozen=True)
class WorkerOutputs:
    """What a watched queue worker's component gives the alarms and dashboard."""

    queue_name: Input[str]
    dead_letter_queue_name: Input[str]
    ecs_service_name: Input[str]


@dataclass(frozen=True, kw_only=True)
class OperationsWiring:
    """What `Operations` takes from around it: what it watches and the watched components'
    Outputs."""

    watch: Watch
    """The services, pools, gateway and workers the alarms and the dashboard cover."""
    cluster_name: Input[str]
    """The ECS cluster (alarm dimensions)."""
    cluster_arn: Input[str]
    """The ECS cluster (the rollback rule's event pattern)."""
    load_balancer_arn_suffix: Input[str]
    """The ALB (alarm and dashboard dimensions)."""
    service_outputs: Mapping[str, ServiceOutputs] = field(default_factory=dict)
    """Each watched service's Outputs, by service name."""
    gateway_outputs: ServiceOutputs | None = None
    """The gateway's Outputs (with a watched gateway)."""
    worker_outputs: Mapping[str, WorkerOutputs] = field(default_factory=dict)
    """Each watched worker's Outputs, by worker name."""


def _placeholder_outputs(args: OperationsWiring) -> dict[str, Input[str]]:
    """Placeholder (`components.operations.watch`) -> the Output it stands for."""
    outputs: dict[str, Input[str]] = {
        watch.LOAD_BALANCER: args.load_balancer_arn_suffix,
        watch.CLUSTER: args.cluster_name,
    }
    subjects = [(s.service, args.service_outputs[s.service]) for s in args.watch.services]
    if args.watch.gateway is not None:
        assert args.gateway_outputs is not None, "a watched gateway needs its outputs"
        subjects.append((watch.GATEWAY_KEY, args.gateway_outputs))
    for key, out in subjects:
        outputs[watch.target_group(key)] = out.target_group_arn_suffix
        outputs[watch.ecs_service(key)] = out.ecs_service_name
    for w in args.watch.workers:
        name = w.name
        out = args.worker_outputs[name]
        outputs[watch.queue(name)] = out.queue_name
        outputs[watch.dead_letter_queue(name)] = out.dead_letter_queue_name
        outputs[watch.ecs_service(watch.worker_key(name))] = out.ecs_service_name
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


def metric_alarm_args(request: Mapping[str, Any]) -> dict[str, Any]:
    """A PutMetricAlarm request (PascalCase, as the specs build it) as `aws.cloudwatch.MetricAlarm`
    keyword arguments: each member in snake case, but for the name, the dimensions (a map) and
    the metric math (`metric_queries`, each metric with its period and statistic)."""

    def dimensions(dims: Sequence[Mapping[str, str]]) -> dict[str, str]:
        return {d["Name"]: d["Value"] for d in dims}

    special = ("AlarmName", "Dimensions", "Metrics")
    out = snake_case({k: v for k, v in request.items() if k not in special})
    out["name"] = request["AlarmName"]
    if "Dimensions" in request:
        out["dimensions"] = dimensions(request["Dimensions"])
    queries = []
    for q in request.get("Metrics", ()):
        query = snake_case({k: v for k, v in q.items() if k != "MetricStat"})
        if "MetricStat" in q:
            stat, metric = q["MetricStat"], q["MetricStat"]["Metric"]
            query["metric"] = {
                "metric_name": metric["MetricName"],
                "namespace": metric["Namespace"],
                "dimensions": dimensions(metric["Dimensions"]),
                "period": stat["Period"],
                "stat": stat["Stat"],
            }
        queries.append(query)
    if queries:
        out["metric_queries"] = queries
    return out


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
        self,
        name: str,
        input: OperationsConfig,
        wiring: OperationsWiring,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        stack = pulumi.get_stack()
        # Names and shapes are fixed now, with placeholders for deploy-time values; what
        # CloudWatch would refuse of them raises here, as for a stack file.
        specs = operations_alarms(input, wiring.watch, stack)
        super().__init__(TOKEN, name, None, opts)
        ledger.record_operations(
            alarm_metric_count([spec for _, spec in specs]), dashboard=input.dashboard
        )
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
            for i, sub in enumerate(input.alarm_subscriptions)
        ]

        outputs = _placeholder_outputs(wiring)
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

        rule = deployment_rollback_rule(stack, watch.CLUSTER_ARN)
        pattern = Output.from_input(wiring.cluster_arn).apply(
            lambda arn: deployment_rollback_rule(stack, arn)["EventPattern"]
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
        if input.dashboard:
            names = list(self.alarms)
            alarm_arns = Output.all(*[known_arn(ALARM, n, ctx) for n in names])
            keys = list(outputs)
            body = Output.all(region, alarm_arns, *[outputs[k] for k in keys]).apply(
                lambda v: dashboard_body(
                    wiring.watch,
                    stack=stack,
                    region=v[0],
                    alarm_arns=v[1],
                    values=dict(zip(keys, v[2:], strict=True)),
                )
            )
            self.dashboard = aws.cloudwatch.Dashboard(
                f"{name}-dashboard",
                dashboard_name=dashboard_name(stack),
                dashboard_body=body,
                opts=child,
            )
        self.register_outputs({"topicArn": topic_arn})
