"""Day-2 operations wired into the stack: config -> plan -> resources, on the reference stacks
and on variants of them (other names, settings and shapes than the reference files)."""

from __future__ import annotations

import base64
import copy
import functools
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from ecs_inference.config.issues import ConfigError
from ecs_inference.config.load import load_stack_config
from ecs_inference.contracts import metrics as m
from ecs_inference.plan import build_plan
from tools.preview import run_preview
from tools.recording import RecordedResource

ROOT = Path(__file__).resolve().parents[2]
KEY = "ecs-inference:platform"


def stack_file(stack: str) -> dict[str, Any]:
    return yaml.safe_load((ROOT / f"Pulumi.{stack}.yaml").read_text())


def plan_of(raw: dict[str, Any], stack: str = "qa"):
    return build_plan(load_stack_config(raw, stack), stack)


def config_error(raw: dict[str, Any]) -> str:
    with pytest.raises(ConfigError) as info:
        plan_of(raw)
    return str(info.value)


@functools.cache
def recorded(stack: str) -> tuple[RecordedResource, ...]:
    result = run_preview(stack, policy_pack=None)
    assert result.ok, result.error
    return tuple(result.resources)


def of_type(stack: str, type_: str) -> list[RecordedResource]:
    return [r for r in recorded(stack) if r.type == type_]


# ------------------------------------------------------------------------------------------------
# config and plan
# ------------------------------------------------------------------------------------------------


def test_scaling_target_follows_the_engine_batch_and_settings():
    raw = copy.deepcopy(stack_file("dev")["config"][KEY])
    model = raw["models"]["llama"]
    model["maxConcurrentSequences"] = 12
    model["autoscaling"] = {"targetUtilization": 0.5, "scaleInCooldownSeconds": 3000}
    plan = plan_of(raw)
    spec = plan.models["llama"]
    assert spec.scaling_configuration is not None
    assert spec.scaling_configuration["TargetValue"] == 6.0
    grace = spec.health_check_grace_period_seconds
    assert (spec.scale_out_cooldown, spec.scale_in_cooldown) == (grace, 3000)
    assert spec.scaling_configuration["ScaleOutCooldown"] == grace
    assert spec.scaling_configuration["ScaleInCooldown"] == 3000
    # Neuron: the artifact's batch size is the engine's concurrency
    neuron = plan.models["llama-neuron"].scaling_configuration
    batch = raw["models"]["llama-neuron"]["neuron"]["batchSize"]
    assert neuron is not None and neuron["TargetValue"] == pytest.approx(0.8 * batch)
    assert any(
        line.startswith("scaling: requests waiting") for line in plan.decisions["model llama"]
    )


def test_kv_cache_and_alb_request_options():
    raw = copy.deepcopy(stack_file("dev")["config"][KEY])
    raw["models"]["llama"]["autoscaling"] = {"metric": "kvCache", "targetUtilization": 0.7}
    raw["models"]["llama-neuron"]["autoscaling"] = {
        "metric": "albRequests",
        "targetRequestsPerTarget": 12,
        "scaleOutCooldownSeconds": 90,
    }
    plan = plan_of(raw)
    kv = plan.models["llama"].scaling_configuration
    assert kv is not None and kv["TargetValue"] == 70.0
    alb = plan.models["llama-neuron"]
    assert alb.scaling_configuration is None  # the component's predefined ALB metric
    assert alb.model.autoscaling.target_requests_per_target == 12
    assert (alb.scale_out_cooldown, alb.scale_in_cooldown) == (90, 300)


def test_engine_scaling_without_the_sidecar_is_a_config_error_with_its_path():
    raw = copy.deepcopy(stack_file("dev")["config"][KEY])
    raw["operations"] = {"metricsSidecar": False}
    message = config_error(raw)
    assert "platform.models.llama.autoscaling.metric" in message
    for model in raw["models"].values():
        model["autoscaling"] = {"metric": "albRequests"}
    plan = plan_of(raw)
    assert not any(m.metrics_sidecar for m in plan.models.values())
    assert "metrics:" not in json.dumps(plan.decisions)


def test_missing_sidecar_image_and_bad_subscriptions_name_their_paths():
    raw = copy.deepcopy(stack_file("prod")["config"][KEY])
    no_image = copy.deepcopy(raw)
    del no_image["images"]["metrics"]
    assert "platform.images.metrics" in config_error(no_image)
    raw["operations"]["alarmSubscriptions"] = [
        {"protocol": "sms", "endpoint": "555-0100"},
        {"protocol": "https", "endpoint": "http://hooks.example.com"},
    ]
    message = config_error(raw)
    assert "platform.operations.alarmSubscriptions[0].endpoint" in message
    assert "platform.operations.alarmSubscriptions[1].endpoint" in message
    raw["operations"]["alarmSubscriptions"] = [{"protocol": "pigeon", "endpoint": "x"}]
    assert "platform.operations.alarmSubscriptions[0].protocol" in config_error(raw)


# ------------------------------------------------------------------------------------------------
# what the stacks register
# ------------------------------------------------------------------------------------------------

STACKS = ("dev", "prod")


@pytest.mark.parametrize("stack", STACKS)
def test_sidecar_and_scaling_policy_name_the_same_series(stack):
    """The dimensions target tracking reads are the ones the sidecar publishes under."""
    policies = {p.name: p for p in of_type(stack, "aws:appautoscaling/policy:Policy")}
    tasks = {t.name: t for t in of_type(stack, "aws:ecs/taskDefinition:TaskDefinition")}
    raw = stack_file(stack)["config"][KEY]
    checked = 0
    for service in [*raw.get("models", {}), *raw.get("rerankers", {})]:
        containers = json.loads(tasks[f"inference-{service}-task"].inputs["containerDefinitions"])
        (sidecar,) = [c for c in containers if c["name"] == m.SIDECAR_CONTAINER_NAME]
        env = {e["name"]: e["value"] for e in sidecar["environment"]}
        assert (env[m.ENV_STACK], env[m.ENV_SERVICE]) == (stack, service)
        config = policies[f"inference-{service}-scaling"].inputs[
            "targetTrackingScalingPolicyConfiguration"
        ]
        custom = config.get("customizedMetricSpecification")
        if service in raw.get("models", {}) and custom:
            for query in custom["metrics"]:
                if "metricStat" in query:
                    metric = query["metricStat"]["metric"]
                    dims = {d["name"]: d["value"] for d in metric["dimensions"]}
                    assert dims == {m.DIM_STACK: stack, m.DIM_SERVICE: service}
                    assert metric["metricName"] in m.published_names(
                        raw["models"][service]["engine"]
                    )
                    checked += 1
            assert config["scaleOutCooldown"] < config["scaleInCooldown"]
    assert checked


@pytest.mark.parametrize("stack", STACKS)
def test_pools_run_the_agent_with_a_scoped_grant(stack):
    templates = of_type(stack, "aws:ec2/launchTemplate:LaunchTemplate")
    assert templates
    policies = {p.name: json.loads(p.inputs["policy"]) for p in of_type(
        stack, "aws:iam/rolePolicy:RolePolicy") if p.name.endswith("-telemetry")}  # fmt: skip
    groups = {g.inputs.get("name") for g in of_type(stack, "aws:cloudwatch/logGroup:LogGroup")}
    for template in templates:
        pool = template.name.removeprefix("inference-").removesuffix("-lt")
        script = base64.b64decode(template.inputs["userData"]).decode()
        assert script.index("/etc/ecs/ecs.config") < script.index("install_telemetry")
        assert f'"{m.DIM_POOL}": "{pool}"' in script
        (statement,) = policies[f"inference-{pool}-telemetry"]["Statement"]
        if "neuron-monitor" in script:
            assert f"/ecs-inference/{stack}/hosts/{pool}" in groups
            assert f'"log_group_name": "/ecs-inference/{stack}/hosts/{pool}"' in script
            assert statement["Action"][0].startswith("logs:")
        else:
            assert "nvidia_gpu" in script
            assert statement["Condition"]["StringEquals"]["cloudwatch:namespace"] == (
                m.HOST_NAMESPACE
            )


def test_prod_alarms_follow_its_settings_and_subscriptions():
    recorded_alarms = of_type("prod", "aws:cloudwatch/metricAlarm:MetricAlarm")
    alarms = {a.inputs["name"]: a.inputs for a in recorded_alarms}
    ttft = [a for n, a in alarms.items() if n.endswith("-ttft-p99")]
    assert ttft and all(a["threshold"] == 5000.0 for a in ttft)  # ttftP99Seconds: 5
    (sub,) = of_type("prod", "aws:sns/topicSubscription:TopicSubscription")
    assert sub.inputs["endpoint"] == "inference-oncall@example.com"
    (dashboard,) = of_type("prod", "aws:cloudwatch/dashboard:Dashboard")
    assert dashboard.inputs["dashboardName"] == "ecs-inference-prod"


def test_without_sidecar_or_agent_no_alarm_watches_a_series_nobody_publishes(tmp_path):
    data = stack_file("dev")
    raw = data["config"][KEY]
    raw["operations"] = {"metricsSidecar": False, "hostTelemetry": False, "dashboard": False}
    for model in raw["models"].values():
        model["autoscaling"] = {"metric": "albRequests"}
    path = tmp_path / "Pulumi.qa.yaml"
    path.write_text(yaml.safe_dump(data))
    result = run_preview("qa", policy_pack=None, stack_file=path)
    assert result.ok, result.error
    types = [r.type for r in result.resources]
    assert "aws:cloudwatch/dashboard:Dashboard" not in types
    assert not [r for r in result.resources if r.name.endswith("-telemetry")]
    namespaces = json.dumps(
        [r.inputs for r in result.resources if r.type == "aws:cloudwatch/metricAlarm:MetricAlarm"]
    )
    assert m.NAMESPACE not in namespaces and m.HOST_NAMESPACE not in namespaces
    for task in (r for r in result.resources if r.type == "aws:ecs/taskDefinition:TaskDefinition"):
        assert len(json.loads(task.inputs["containerDefinitions"])) == 1
