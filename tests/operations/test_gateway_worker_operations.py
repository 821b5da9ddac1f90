"""Day-2 operations of the AI gateway and the queue workers: their alarms are valid PutMetricAlarm
requests (botocore) whose thresholds come from config, their dashboard rows are valid and draw the
same thresholds, the Operations component registers them with the real dimension values, and the
cost estimate counts their Fargate tasks."""

from __future__ import annotations

import dataclasses
import json
import math
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ecs_inference import cost
from ecs_inference.config.load import load_stack_config
from ecs_inference.contracts import litellm
from ecs_inference.operations import alarms as obs
from ecs_inference.operations import watch
from ecs_inference.operations.component import (
    Operations,
    OperationsWiring,
    ServiceOutputs,
    WorkerOutputs,
)
from ecs_inference.operations.dashboard import dashboard_body
from ecs_inference.operations.input import AlarmsConfig
from ecs_inference.operations.watch import Watch
from ecs_inference.plan import Plan, build_plan
from tests.aws_shapes import validate_named_shape, validate_shape
from tests.operations.test_operations_component import put_metric_alarm_request
from tests.stack_config import issues_of, mutate, reference
from tools.recording import ACCOUNT_ID, run_function

ROOT = Path(__file__).resolve().parents[2]
TOPIC = "arn:aws:sns:us-east-1:123456789012:agents-alarms"
LB = "app/inference-edge-alb/0123456789abcdef"
TG = "targetgroup/inference-gateway-tg/0123456789abcdef"
CLUSTER = "inference-ecs-cluster-5005fce"
CLUSTER_ARN = f"arn:aws:ecs:us-east-1:{ACCOUNT_ID}:cluster/{CLUSTER}"


def _plan(raw: dict[str, Any] | None = None) -> Plan:
    return build_plan(load_stack_config(raw or reference("agents"), "agents"), "agents",
                      region="us-east-1")  # fmt: skip


_AGENTS = _plan()


def _gateway_alarms(
    settings: AlarmsConfig = AlarmsConfig(), longest: int | None = None, **changes: Any
) -> list[obs.AlarmSpec]:
    """The agents stack's gateway's alarms, its input changed by `changes` and the longest
    route's timeout set to `longest` (through its first route's timeout)."""
    gateway = _AGENTS.gateway
    assert gateway is not None
    routes = gateway.routes
    if longest is not None:
        first = dataclasses.replace(routes[0].target, timeout_seconds=longest)
        routes = (dataclasses.replace(routes[0], target=first), *routes[1:])
    changed = dataclasses.replace(
        gateway, input=gateway.input.model_copy(update=changes), routes=routes
    )
    return obs.gateway_alarms("agents", changed, settings)


def _worker_alarms(backlog_target: float = 10.0, **changes: Any) -> list[obs.AlarmSpec]:
    """The agents stack's `summarise` worker's alarms, its input changed by `changes`."""
    (worker,) = _AGENTS.operations.workers
    worker = dataclasses.replace(
        worker, input=worker.input.model_copy(update=changes), backlog_target=backlog_target
    )
    return obs.worker_alarms("agents", worker)


def _valid(alarm: obs.AlarmSpec) -> dict[str, Any]:
    request = validate_shape("cloudwatch", "PutMetricAlarm", alarm.with_actions(TOPIC))
    assert alarm.meaning and alarm.action
    assert request["DatapointsToAlarm"] <= request["EvaluationPeriods"]
    metrics = request.get("Metrics")
    if metrics:
        assert "MetricName" not in request
        returned = [q for q in metrics if q.get("ReturnData")]
        assert len(returned) == 1
        ids = {q["Id"] for q in metrics if "MetricStat" in q}
        used = set(re.findall(r"\b[a-z]\w*\b", returned[0]["Expression"])) - {"FILL", "IF"}
        assert used == ids, returned[0]["Expression"]
    return request


# ------------------------------------------------------------------------------------------------
# alarms
# ------------------------------------------------------------------------------------------------


def test_gateway_alarms_are_valid_and_cover_what_the_issue_asks():
    alarms = {a.key: _valid(a) for a in _gateway_alarms()}
    assert set(alarms) == {
        "no-healthy-targets", "target-5xx", "unhealthy-targets", "response-time-p99",
        "cpu-at-max", "memory-high", "tasks-below-desired",
    }  # fmt: skip
    latency = alarms["response-time-p99"]
    assert latency["MetricName"] == "TargetResponseTime"
    assert latency["ExtendedStatistic"] == "p99" and "Statistic" not in latency
    assert latency["Threshold"] == 600.0
    dims = {d["Name"]: d["Value"] for d in latency["Dimensions"]}
    # Placeholders until deploy time: the component swaps them for the Outputs (below).
    assert dims == {
        "LoadBalancer": watch.LOAD_BALANCER,
        "TargetGroup": watch.target_group(watch.GATEWAY_KEY),
    }
    unhealthy = alarms["unhealthy-targets"]
    assert unhealthy["MetricName"] == "UnHealthyHostCount"
    assert litellm.HEALTH_PATH in unhealthy["AlarmDescription"]
    cpu = alarms["cpu-at-max"]
    assert cpu["Threshold"] == 60.0
    expression = next(q["Expression"] for q in cpu["Metrics"] if q.get("ReturnData"))
    assert ">= 4" in expression
    assert alarms["memory-high"]["Threshold"] == 90.0


def test_gateway_thresholds_follow_its_settings():
    alarms = {
        a.key: a.request
        for a in _gateway_alarms(
            max_count=9,
            target_cpu_percent=45,
            longest=1200,
            min_count=0,
            settings=AlarmsConfig(gateway_memory_percent=75, pending_minutes=7),
        )
    }
    assert "no-healthy-targets" not in alarms  # min 0: no targets is legitimate
    assert alarms["response-time-p99"]["Threshold"] == 1200.0
    assert alarms["cpu-at-max"]["Threshold"] == 45.0
    assert ">= 9" in json.dumps(alarms["cpu-at-max"]["Metrics"])
    assert alarms["memory-high"]["Threshold"] == 75.0
    assert alarms["tasks-below-desired"]["EvaluationPeriods"] == 7


@pytest.mark.parametrize(
    ("key", "value"),
    [("gateway.maxCount", 0), ("gateway.targetCpuPercent", 0)],
)
def test_bad_gateway_settings_are_refused_at_their_key(key, value):
    raw = mutate(reference("agents"), key, value)
    assert f"platform.{key}" in [i.path for i in issues_of(raw, "agents")]


def test_worker_alarms_are_valid_and_cover_what_the_issue_asks():
    alarms = {a.key: _valid(a) for a in _worker_alarms()}
    assert set(alarms) == {"queue-age", "dlq-depth", "backlog-at-max", "tasks-below-desired"}
    age = alarms["queue-age"]
    assert age["MetricName"] == "ApproximateAgeOfOldestMessage"
    assert age["Threshold"] == 1500.0  # 600 s acceptable + 900 s longest job
    assert age["Dimensions"] == [{"Name": "QueueName", "Value": watch.queue("summarise")}]
    dlq = alarms["dlq-depth"]
    assert dlq["Dimensions"][0]["Value"] == watch.dead_letter_queue("summarise")
    assert dlq["Threshold"] == 1.0 and dlq["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
    assert dlq["EvaluationPeriods"] == 1 and "3 times" in dlq["AlarmDescription"]
    below = alarms["tasks-below-desired"]
    names = {q["MetricStat"]["Metric"]["MetricName"] for q in below["Metrics"] if "MetricStat" in q}
    assert names == {"DesiredTaskCount", "RunningTaskCount"}


@settings(max_examples=60, deadline=None)
@given(
    latency=st.floats(min_value=1, max_value=86_400, allow_nan=False),
    job=st.integers(min_value=1, max_value=39_272),
    target=st.floats(min_value=0.01, max_value=10_000, allow_nan=False),
    max_count=st.integers(min_value=1, max_value=1000),
    receives=st.integers(min_value=1, max_value=1000),
)
def test_worker_thresholds_derive_from_config(latency, job, target, max_count, receives):
    alarms = {
        a.key: a
        for a in _worker_alarms(
            acceptable_latency_seconds=latency,
            max_job_seconds=job,
            backlog_target=target,
            max_count=max_count,
            max_receive_count=receives,
        )
    }
    for alarm in alarms.values():
        _valid(alarm)
    assert alarms["queue-age"].request["Threshold"] == math.ceil(latency + job)
    backlog = alarms["backlog-at-max"].request
    assert backlog["Threshold"] == pytest.approx(target)
    assert f">= {max_count}," in json.dumps(backlog["Metrics"])
    # Sustained for the acceptable latency, at least 3 minutes, never beyond a day.
    assert backlog["EvaluationPeriods"] == min(max(3, math.ceil(latency / 60)), 1440)
    assert backlog["EvaluationPeriods"] * 60 <= 86_400
    assert f"{receives} times" in alarms["dlq-depth"].request["AlarmDescription"]


@pytest.mark.parametrize(
    ("key", "value"),
    [("workers.summarise.maxCount", 0), ("workers.summarise.maxReceiveCount", 0)],
)
def test_bad_worker_settings_are_refused_at_their_key(key, value):
    raw = mutate(reference("agents"), key, value)
    assert f"platform.{key}" in [i.path for i in issues_of(raw, "agents")]


# ------------------------------------------------------------------------------------------------
# dashboard
# ------------------------------------------------------------------------------------------------


def _dashboard() -> dict[str, Any]:
    gateway = _AGENTS.gateway
    (summarise,) = _AGENTS.operations.workers
    embed = dataclasses.replace(
        summarise,
        name="embed",
        input=summarise.input.model_copy(
            update={"acceptable_latency_seconds": 30.0, "max_job_seconds": 60}
        ),
        backlog_target=2.5,
    )
    values = {
        watch.CLUSTER: CLUSTER,
        watch.LOAD_BALANCER: LB,
        watch.target_group(watch.GATEWAY_KEY): TG,
        watch.ecs_service(watch.GATEWAY_KEY): "gateway-1a2b3c4",
    }
    for name in ("summarise", "embed"):
        values[watch.queue(name)] = f"q-{name}"
        values[watch.dead_letter_queue(name)] = f"q-{name}-dlq"
        values[watch.ecs_service(watch.worker_key(name))] = f"svc-{name}"
    body = dashboard_body(
        Watch(gateway=gateway, workers=(summarise, embed)),
        stack="agents",
        region="us-east-1",
        values=values,
    )
    validate_shape("cloudwatch", "PutDashboard", {"DashboardName": "d", "DashboardBody": body})
    return json.loads(body)


def test_dashboard_rows_for_the_gateway_and_each_worker():
    body = _dashboard()
    headers = [w["properties"]["markdown"] for w in body["widgets"] if w["type"] == "text"]
    assert headers[:3] == ["## gateway gateway (LiteLLM)", "## worker summarise", "## worker embed"]
    metrics = [w for w in body["widgets"] if w["type"] == "metric"]
    for widget in metrics:
        for row in widget["properties"]["metrics"]:
            if len(row) == 1:
                assert "expression" in row[0]
                continue
            parts = row[:-1] if isinstance(row[-1], dict) else row
            namespace, name, *dims = parts
            pairs = [{"Name": dims[i], "Value": dims[i + 1]} for i in range(0, len(dims), 2)]
            validate_named_shape(
                "cloudwatch", "Metric", {"Namespace": namespace, "MetricName": name,
                                         "Dimensions": pairs}
            )  # fmt: skip
    text = json.dumps(body)
    for wanted in (
        "TargetResponseTime", "UnHealthyHostCount", "MemoryUtilization", "CPUUtilization",
        "ApproximateAgeOfOldestMessage", "ApproximateNumberOfMessagesNotVisible",
        "q-summarise-dlq", "q-embed-dlq", "DesiredTaskCount",
    ):  # fmt: skip
        assert wanted in text, wanted
    lines = {
        (w["properties"]["title"], h["label"], h["value"])
        for w in metrics
        for h in w["properties"].get("annotations", {}).get("horizontal", [])
    }
    assert ("Response time p50 / p99 (s)", "longest route timeout", 600.0) in lines
    assert ("CPU / memory (%)", "CPU scaling target", 60.0) in lines
    assert ("Age of the oldest message (s)", "queue-age alarm", 1500.0) in lines
    assert ("Backlog per task", "scaling target", 2.5) in lines


# ------------------------------------------------------------------------------------------------
# the component and the plan
# ------------------------------------------------------------------------------------------------


def test_operations_component_registers_gateway_and_worker_alarms_with_real_dimensions():
    plan = _AGENTS
    assert plan.gateway is not None
    ops = plan.operations

    def program() -> None:
        Operations(
            "ops",
            plan.config.operations,
            OperationsWiring(
                watch=Watch(gateway=ops.gateway, workers=ops.workers),
                cluster_name=CLUSTER,
                cluster_arn=CLUSTER_ARN,
                load_balancer_arn_suffix=LB,
                gateway_outputs=ServiceOutputs(TG, "gateway-svc-1a2b3c4"),
                worker_outputs={
                    "summarise": WorkerOutputs("q-summarise", "q-summarise-dlq", "summarise-svc")
                },
            ),
        )

    rec = run_function(program, stack="agents")
    alarms = {
        r.inputs["name"]: r.inputs for r in rec.by_type("aws:cloudwatch/metricAlarm:MetricAlarm")
    }
    subjects = ("agents-gateway-", "agents-summarise-")
    expected = {a.name for a in plan.alarm_specs("agents") if a.name.startswith(subjects)}
    assert set(alarms) == expected
    dumped = json.dumps(alarms)
    assert "placeholder" not in dumped
    for name, inputs in alarms.items():
        request = put_metric_alarm_request(inputs)
        if "extendedStatistic" in inputs:
            request["ExtendedStatistic"] = inputs["extendedStatistic"]
        validate_shape("cloudwatch", "PutMetricAlarm", request)
        assert inputs["alarmActions"] and inputs["okActions"], name
    assert alarms["agents-gateway-response-time-p99"]["extendedStatistic"] == "p99"
    assert alarms["agents-summarise-dlq-depth"]["dimensions"] == {"QueueName": "q-summarise-dlq"}
    assert "gateway-svc-1a2b3c4" in json.dumps(alarms["agents-gateway-cpu-at-max"])
    assert "summarise-svc" in json.dumps(alarms["agents-summarise-backlog-at-max"])
    (board,) = rec.by_type("aws:cloudwatch/dashboard:Dashboard")
    body = board.inputs["dashboardBody"]
    assert "q-summarise-dlq" in body and TG in body and "placeholder" not in body


def test_plan_states_the_derived_thresholds_and_counts_the_fargate_tasks():
    raw = mutate(reference("agents"), "workers.summarise.acceptableLatencySeconds", 120)
    plan = _plan(raw)
    decisions = plan.decisions
    worker_text = " ".join(decisions["worker summarise"])
    assert "older than 1020 s (120 s acceptable latency + 900 s longest job)" in worker_text
    assert "backlog per task above 2 at maxCount 8" in worker_text
    assert "p99 response time at 600 s" in " ".join(decisions["gateway"])
    keys = {a.key for a in plan.alarm_specs()}
    for key in ("queue-age", "dlq-depth", "backlog-at-max", "response-time-p99", "cpu-at-max"):
        assert key in keys
    estimate = cost.estimate(plan)
    items = {
        p.point: {line.item: line.quantity for line in p.lines if line.category == "Fargate tasks"}
        for p in estimate.points
    }
    gateway = next(k for k in items["steady"] if k.startswith("gateway "))
    worker = next(k for k in items["steady"] if k.startswith("worker summarise"))
    assert (items["minimum"][gateway], items["steady"][gateway], items["maximum"][gateway]) == (
        2, 2, 4)  # fmt: skip
    # A worker scales to zero: nothing at minimum, maxCount at maximum.
    assert (items["minimum"][worker], items["maximum"][worker]) == (0, 8)


def test_fargate_services_without_the_sidecar_publish_no_engine_series():
    net = cost.NetworkInput(nat_gateways=1, availability_zones=2, interface_endpoints=0)

    def monitoring(kind: str | None) -> float:
        stack = cost.StackInput(
            pools=[],
            fargate=[
                cost.FargateInput(
                    "w", cost.Counts(0, 1, 4), kind, cpu=256, memory_mib=512, architecture="ARM64"
                )
            ],
            network=net,
        )
        point = cost.estimate_inputs(stack).point("maximum")
        return next(line.quantity for line in point.lines if line.category == "monitoring")

    assert monitoring(None) == 0
    assert monitoring("reranker") > 0


def test_every_stack_alarm_name_is_unique():
    plan = _AGENTS
    names = [a.name for a in plan.alarm_specs("agents")]
    assert len(names) == len(set(names))


def test_the_mermaid_diagram_shows_the_alarms_and_the_dashboard_watching_gateway_and_worker():
    from tools.preview import run_preview
    from tools.preview_report import render_mermaid

    result = run_preview("agents", program_dir=ROOT, policy_pack=None)
    assert result.ok, result.error
    diagram = render_mermaid(result.resources)
    node = {r.urn: r for r in result.resources}
    ids = {r.urn: f"n{i}" for i, r in enumerate(sorted(result.resources, key=lambda r: r.urn))}

    def node_of(type_: str, suffix: str) -> str:
        (urn,) = [u for u, r in node.items() if r.type == type_ and r.name.endswith(suffix)]
        return ids[urn]

    ops = node_of("ecs-inference:operations:Operations", "-ops")
    dashboard = node_of("aws:cloudwatch/dashboard:Dashboard", "-dashboard")
    gateway = node_of("aws:ecs/service:Service", "gateway-service")
    worker = node_of("aws:ecs/service:Service", "summarise-service")
    alarms = sum(
        1
        for r in result.resources
        if r.type == "aws:cloudwatch/metricAlarm:MetricAlarm" and r.parent.endswith("-ops")
    )
    assert f'{ops}_alarms["{alarms} MetricAlarms"]' in diagram
    for service in (gateway, worker):
        assert f"{service} --> {dashboard}" in diagram
        assert f"{ops}_alarms -.-> {service}" in diagram
