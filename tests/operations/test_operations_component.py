"""The Operations component under the recording mock runtime: what it registers, mapped back to
the AWS requests the provider would send and validated against botocore."""

from __future__ import annotations

import json
from typing import Any

import pulumi
import pytest

from ecs_inference.config.issues import ConfigError
from ecs_inference.contracts import metrics as m
from ecs_inference.operations.alarms import service_alarms
from ecs_inference.operations.component import (
    Operations,
    OperationsWiring,
    ServiceOutputs,
    metric_alarm_args,
)
from ecs_inference.operations.decisions import operations_alarms
from ecs_inference.operations.input import OperationsConfig, SubscriptionConfig
from ecs_inference.operations.scaling import engine_scaling_policy, snake_case
from ecs_inference.operations.watch import Watch, WatchedService
from tests.aws_shapes import validate_shape
from tools.recording import ACCOUNT_ID, Recording, run_function

CLUSTER_ARN = f"arn:aws:ecs:us-east-1:{ACCOUNT_ID}:cluster/inference-cluster-0a1b2c3"
LB = "app/inference-edge-alb/0123456789abcdef"

ALARM = "aws:cloudwatch/metricAlarm:MetricAlarm"
RULE = "aws:cloudwatch/eventRule:EventRule"
TARGET = "aws:cloudwatch/eventTarget:EventTarget"
DASHBOARD = "aws:cloudwatch/dashboard:Dashboard"
TOPIC = "aws:sns/topic:Topic"
TOPIC_POLICY = "aws:sns/topicPolicy:TopicPolicy"
SUBSCRIPTION = "aws:sns/topicSubscription:TopicSubscription"
KEY = "aws:kms/key:Key"


INPUT = OperationsConfig(
    alarm_subscriptions=[
        SubscriptionConfig(protocol="email", endpoint="oncall@example.com"),
        SubscriptionConfig(protocol="https", endpoint="https://hooks.example.com/alarms"),
    ]
)


def _wiring(*entries: tuple[str, str, int, str, str, str | None]) -> OperationsWiring:
    """The wiring of services from (name, kind, min count, target group suffix, ECS service
    name, pool) each, with a GPU and a Neuron pool."""
    return OperationsWiring(
        watch=Watch(
            services=tuple(
                WatchedService(name, kind, min_count, pool)
                for name, kind, min_count, _, _, pool in entries
            ),
            pools={"l40s": "gpu", "inf2": "neuron"},
        ),
        cluster_name="inference-cluster-0a1b2c3",
        cluster_arn=CLUSTER_ARN,
        load_balancer_arn_suffix=LB,
        service_outputs={name: ServiceOutputs(tg, svc) for name, _, _, tg, svc, _ in entries},
    )


WIRING = _wiring(
    ("llama", "vllm", 1, "targetgroup/llama-tg/0123456789abcdef", "llama-1a2b3c4", "l40s"),
    ("llama-neuron", "neuron", 0, "targetgroup/ln-tg/0123456789abcdef", "ln-1a2b3c4", "inf2"),
    ("rerank", "reranker", 1, "targetgroup/rr-tg/0123456789abcdef", "rerank-1a2b3c4", None),
)


def _run(input: OperationsConfig, wiring: OperationsWiring) -> Recording:
    def program() -> None:
        ops = Operations("ops", input, wiring)
        pulumi.export("topic", ops.topic.arn)

    return run_function(program, stack="prod")


@pytest.fixture(scope="module")
def rec() -> Recording:
    return _run(INPUT, WIRING)


def _dims(d: dict[str, str] | None) -> list[dict[str, str]] | None:
    return [{"Name": k, "Value": v} for k, v in d.items()] if d else None


def put_metric_alarm_request(inputs: dict[str, Any]) -> dict[str, Any]:
    """The PutMetricAlarm request pulumi-aws sends for a recorded MetricAlarm."""
    request: dict[str, Any] = {
        "AlarmName": inputs["name"],
        "AlarmDescription": inputs.get("alarmDescription"),
        "ActionsEnabled": inputs.get("actionsEnabled"),
        "AlarmActions": inputs.get("alarmActions"),
        "OKActions": inputs.get("okActions"),
        "EvaluationPeriods": inputs["evaluationPeriods"],
        "DatapointsToAlarm": inputs.get("datapointsToAlarm"),
        "Threshold": inputs["threshold"],
        "ComparisonOperator": inputs["comparisonOperator"],
        "TreatMissingData": inputs.get("treatMissingData"),
        "MetricName": inputs.get("metricName"),
        "Namespace": inputs.get("namespace"),
        "Statistic": inputs.get("statistic"),
        "Period": inputs.get("period"),
        "Unit": inputs.get("unit"),
        "Dimensions": _dims(inputs.get("dimensions")),
    }
    if inputs.get("metricQueries"):
        metrics = []
        for q in inputs["metricQueries"]:
            item: dict[str, Any] = {"Id": q["id"], "ReturnData": q.get("returnData")}
            for key, api in (("expression", "Expression"), ("label", "Label")):
                if key in q:
                    item[api] = q[key]
            if "metric" in q:
                metric = q["metric"]
                item["MetricStat"] = {
                    "Metric": {
                        "Namespace": metric["namespace"],
                        "MetricName": metric["metricName"],
                        "Dimensions": _dims(metric.get("dimensions")) or [],
                    },
                    "Period": metric["period"],
                    "Stat": metric["stat"],
                }
            metrics.append(item)
        request["Metrics"] = metrics
    return {k: v for k, v in request.items() if v is not None}


def test_every_alarm_is_a_valid_request_with_real_dimensions(rec):
    alarms = rec.by_type(ALARM)
    expected = {spec.name for _, spec in operations_alarms(INPUT, WIRING.watch, "prod")}
    assert {a.inputs["name"] for a in alarms} == expected
    text = json.dumps([a.inputs for a in alarms])
    assert "placeholder" not in text  # every deploy-time value was swapped in
    topic = rec.one(TOPIC)
    for alarm in alarms:
        request = validate_shape(
            "cloudwatch", "PutMetricAlarm", put_metric_alarm_request(alarm.inputs)
        )
        assert len(request["AlarmActions"]) == 1
    by_name = {a.inputs["name"]: a.inputs for a in alarms}
    healthy = by_name["prod-llama-no-healthy-targets"]
    assert healthy["dimensions"] == {
        "LoadBalancer": LB,
        "TargetGroup": "targetgroup/llama-tg/0123456789abcdef",
    }
    assert "prod-llama-neuron-no-healthy-targets" not in by_name  # minCount 0
    pending = by_name["prod-rerank-tasks-pending"]
    assert pending["dimensions"] == {
        "ClusterName": "inference-cluster-0a1b2c3",
        "ServiceName": "rerank-1a2b3c4",
    }
    assert "prod-l40s-gpu-memory" in by_name and "prod-inf2-gpu-memory" not in by_name
    assert topic.inputs["kmsMasterKeyId"]  # the topic is encrypted


def test_rollback_rule_targets_the_topic_with_the_cluster_s_pattern(rec):
    rule = rec.one(RULE)
    request = validate_shape(
        "events",
        "PutRule",
        {k: rule.inputs[k] for k in ("name", "description", "eventPattern", "state")},
    )
    pattern = json.loads(request["EventPattern"])
    assert pattern["resources"] == [
        {"prefix": f"arn:aws:ecs:us-east-1:{ACCOUNT_ID}:service/inference-cluster-0a1b2c3/"}
    ]
    assert rec.one(TARGET).inputs["rule"] == rule.inputs["name"]


def test_topic_and_key_policies_admit_only_this_stack_s_publishers(rec):
    policy = json.loads(rec.one(TOPIC_POLICY).inputs["policy"])
    by_sid = {s["Sid"]: s for s in policy["Statement"]}
    alarms = by_sid["StackAlarmsPublish"]
    assert alarms["Principal"] == {"Service": "cloudwatch.amazonaws.com"}
    assert alarms["Condition"]["ArnLike"]["aws:SourceArn"].endswith(":alarm:prod-*")
    assert by_sid["RollbackRulePublishes"]["Condition"]["ArnEquals"]["aws:SourceArn"]
    key = json.loads(rec.one(KEY).inputs["policy"])
    publish = next(s for s in key["Statement"] if s["Sid"] == "AlarmsAndRulesPublish")
    assert publish["Condition"] == {"StringEquals": {"aws:SourceAccount": ACCOUNT_ID}}
    assert rec.one(KEY).inputs["enableKeyRotation"] is True


def test_subscriptions_and_dashboard(rec):
    subs = rec.by_type(SUBSCRIPTION)
    assert sorted(s.inputs["protocol"] for s in subs) == ["email", "https"]
    for s in subs:
        validate_shape(
            "sns",
            "Subscribe",
            {"TopicArn": f"arn:aws:sns:us-east-1:{ACCOUNT_ID}:t", "Protocol": s.inputs["protocol"],
             "Endpoint": s.inputs["endpoint"]},
        )  # fmt: skip
    dashboard = rec.one(DASHBOARD)
    validate_shape(
        "cloudwatch",
        "PutDashboard",
        {"DashboardName": dashboard.inputs["dashboardName"],
         "DashboardBody": dashboard.inputs["dashboardBody"]},
    )  # fmt: skip
    body = json.loads(dashboard.inputs["dashboardBody"])
    alarm_widget = next(w for w in body["widgets"] if w["type"] == "alarm")
    assert len(alarm_widget["properties"]["alarms"]) == len(rec.by_type(ALARM))
    assert "placeholder" not in dashboard.inputs["dashboardBody"]


def test_a_dashboard_over_its_widget_limit_is_named_before_anything_is_registered():
    many = _wiring(*[(f"s{i}", "vllm", 1, "tg", "svc", None) for i in range(80)])
    with pytest.raises(ConfigError) as refused:
        _run(INPUT, many)
    [issue] = refused.value.issues
    assert issue.path == "platform.operations.dashboard" and "widgets" in issue.message
    assert operations_alarms(INPUT, WIRING.watch, "prod")


def test_snake_case_maps_every_member_of_a_scaling_policy():
    spec = engine_scaling_policy(
        stack="prod", service="llama", engine="vllm", max_concurrency=16, grace_seconds=600
    )
    args = snake_case(spec.configuration)
    assert args["target_value"] == pytest.approx(12.8)
    assert (args["scale_out_cooldown"], args["scale_in_cooldown"]) == (600, 1200)
    metrics = args["customized_metric_specification"]["metrics"]
    assert [q["id"] for q in metrics] == ["waiting", "running", "load"]
    assert metrics[0]["metric_stat"]["metric"]["namespace"] == m.NAMESPACE
    assert metrics[0]["metric_stat"]["metric"]["dimensions"] == [
        {"name": m.DIM_STACK, "value": "prod"},
        {"name": m.DIM_SERVICE, "value": "llama"},
    ]
    assert metrics[2] == {
        "id": "load",
        "return_data": True,
        "expression": "waiting + running",
        "label": "requests waiting + running per task",
    }
    alb = engine_scaling_policy(
        stack="prod", service="llama", engine="vllm", max_concurrency=16, grace_seconds=600,
        metric="albRequests", alb_resource_label=f"{LB}/targetgroup/t/1",
    )  # fmt: skip
    assert snake_case(alb.configuration)["predefined_metric_specification"] == {
        "predefined_metric_type": "ALBRequestCountPerTarget",
        "resource_label": f"{LB}/targetgroup/t/1",
    }


def test_metric_alarm_args_keeps_single_metric_and_math_apart():
    single, math_ = None, None
    for spec in service_alarms("p", WatchedService("s", "vllm", 1)):
        if spec.key == "ttft-p99":
            single = metric_alarm_args(spec.request)
        if spec.key == "target-5xx":
            math_ = metric_alarm_args(spec.request)
    assert single is not None and math_ is not None
    assert "metric_queries" not in single and single["unit"] == "Milliseconds"
    assert "metric_name" not in math_ and len(math_["metric_queries"]) == 3
