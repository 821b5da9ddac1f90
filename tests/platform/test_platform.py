"""Both reference stacks run whole under the mock runtime: the settings that decide whether
streaming, auth and deploys work end up on the resources, and every request shape is valid."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pytest

from ecs_inference.config.load import load_stack_config
from ecs_inference.endpoint.decisions import idle_timeout
from ecs_inference.plan import build_plan
from tests.aws_shapes import (
    create_listener_request,
    create_rule_request,
    register_task_definition_request,
    validate_shape,
)
from tools.preview import project_name, read_stack_file
from tools.recording import Recording, run_program, stack_config_values

ROOT = Path(__file__).resolve().parents[2]
STACKS = ["dev", "prod"]


@cache
def recorded(stack: str) -> Recording:
    settings = read_stack_file(ROOT, stack)
    return run_program(
        ROOT, project=project_name(ROOT), stack=stack, config=stack_config_values(settings)
    )


@cache
def planned(stack: str):
    settings = read_stack_file(ROOT, stack)
    return build_plan(
        load_stack_config(settings["config"]["ecs-inference:platform"], stack), stack, "us-east-1"
    )


def by_name(rec: Recording, type_: str) -> dict[str, dict]:
    return {r.name: r.inputs for r in rec.by_type(type_)}


@pytest.mark.parametrize("stack", STACKS)
def test_every_listener_rule_authenticates_before_it_forwards(stack: str) -> None:
    rec = recorded(stack)
    rules = rec.by_type("aws:lb/listenerRule:ListenerRule")
    services = planned(stack).config.service_names()
    assert len(rules) == 2 * len(services)
    for rule in rules:
        actions = sorted(rule.inputs["actions"], key=lambda a: a["order"])
        kinds = [a["type"] for a in actions]
        assert kinds[-1] == "forward" and len(kinds) == 2, (rule.name, kinds)
        bearer = any(
            c.get("httpHeader", {}).get("httpHeaderName") == "Authorization"
            for c in rule.inputs["conditions"]
        )
        assert kinds[0] == ("jwt-validation" if bearer else "authenticate-cognito"), rule.name
        validate_shape("elbv2", "CreateRule", create_rule_request(rule.inputs))
    for listener in rec.by_type("aws:lb/listener:Listener"):
        kinds = [a["type"] for a in listener.inputs["defaultActions"]]
        assert "forward" not in kinds, listener.name  # defaults never reach a model
        validate_shape("elbv2", "CreateListener", create_listener_request(listener.inputs))


@pytest.mark.parametrize("stack", STACKS)
def test_alb_is_internal_with_the_derived_idle_timeout(stack: str) -> None:
    plan = planned(stack)
    (alb,) = by_name(recorded(stack), "aws:lb/loadBalancer:LoadBalancer").values()
    assert alb["internal"] is True
    assert (
        alb["idleTimeout"]
        == idle_timeout(plan.config.endpoint, plan.endpoint.longest_request_seconds).seconds
    )
    longest = max(m.max_generation_seconds for m in plan.config.models.values())
    assert alb["idleTimeout"] > longest


@pytest.mark.parametrize("stack", STACKS)
def test_timeouts_derive_from_service_settings_and_keepalive_is_inside_idle(stack: str) -> None:
    plan = planned(stack)
    rec = recorded(stack)
    tgs = by_name(rec, "aws:lb/targetGroup:TargetGroup")
    services = by_name(rec, "aws:ecs/service:Service")
    idle = idle_timeout(plan.config.endpoint, plan.endpoint.longest_request_seconds).seconds
    for name, m in plan.models.items():
        model = plan.config.models[name]
        tg = tgs[f"inference-{name}-tg"]
        assert tg["targetType"] == "ip" and tg["healthCheck"]["path"] == "/health"
        assert tg["deregistrationDelay"] >= model.max_generation_seconds
        service = services[f"inference-{name}-service"]
        grace = m.health_check_grace_period_seconds
        assert service["healthCheckGracePeriodSeconds"] == grace
        startup = model.startup
        assert grace >= startup.warmup_seconds + startup.image_gib * 1024 / (
            startup.image_pull_mib_per_second
        )
        assert service["deploymentCircuitBreaker"] == {"enable": True, "rollback": True}
        low, high = m.deploy.minimum_healthy_percent, m.deploy.maximum_percent
        assert service["deploymentMinimumHealthyPercent"] == low
        assert service["deploymentMaximumPercent"] == high
        assert service["networkConfiguration"]["assignPublicIp"] is False
        # the engine sends SSE keep-alives well inside the idle timeout
        assert 0 < m.launch.keepalive_seconds <= idle / 2


@pytest.mark.parametrize("stack", STACKS)
def test_task_definitions_carry_sizing_and_validate_against_ecs(stack: str) -> None:
    plan = planned(stack)
    tasks = by_name(recorded(stack), "aws:ecs/taskDefinition:TaskDefinition")
    for name, m in plan.models.items():
        task = tasks[f"inference-{name}-task"]
        request = register_task_definition_request(task)
        validate_shape("ecs", "RegisterTaskDefinition", request)
        container, *others = request["containerDefinitions"]
        # The engine first; the only other container is the non-essential metrics sidecar.
        assert [c["name"] for c in others] == (["metrics"] if m.metrics_sidecar else [])
        assert all(c["essential"] is False for c in others)
        assert "FARGATE" not in task["requiresCompatibilities"]
        assert task["networkMode"] == "awsvpc"
        gpus = [r for r in container.get("resourceRequirements", []) if r["type"] == "GPU"]
        devices = container.get("linuxParameters", {}).get("devices", [])
        if plan.config.models[name].engine == "vllm":
            assert gpus == [{"type": "GPU", "value": str(m.launch.tensor_parallel_size)}]
            # Managed Instances refuses sharedMemorySize: shm_size_mib is 0 there.
            linux = container.get("linuxParameters", {})
            assert linux.get("sharedMemorySize", 0) == m.shm_size_mib
            assert not devices
        else:
            assert not gpus
            assert [d["hostPath"] for d in devices] == list(m.neuron_devices)
        env = {e["name"]: e["value"] for e in container.get("environment", [])}
        assert not any(k in env for k in ("AWS_SECRET_ACCESS_KEY", "HF_TOKEN", "VLLM_API_KEY"))
    for name, r in plan.rerankers.items():
        task = tasks[f"inference-{name}-task"]
        validate_shape("ecs", "RegisterTaskDefinition", register_task_definition_request(task))
        assert task["requiresCompatibilities"] == ["FARGATE"]
        assert (int(task["cpu"]), int(task["memory"])) == (r.cpu, r.memory_mib)
        assert task["runtimePlatform"]["cpuArchitecture"] == r.cpu_architecture
        assert r.cpu_architecture == plan.config.rerankers[name].cpu_architecture


@pytest.mark.parametrize("stack", STACKS)
def test_scaling_out_is_faster_than_in(stack: str) -> None:
    for policy in recorded(stack).by_type("aws:appautoscaling/policy:Policy"):
        cfg = policy.inputs["targetTrackingScalingPolicyConfiguration"]
        assert cfg["scaleOutCooldown"] < cfg["scaleInCooldown"], policy.name


@pytest.mark.parametrize("stack", STACKS)
def test_services_run_on_their_pool_and_wait_for_the_association(stack: str) -> None:
    rec = recorded(stack)
    plan = planned(stack)
    association = rec.one("aws:ecs/clusterCapacityProviders:ClusterCapacityProviders")
    providers = {r.name: r for r in rec.by_type("aws:ecs/capacityProvider:CapacityProvider")}
    pools = [*plan.gpu_pools, *plan.neuron_pools, *plan.managed_instance_pools]
    assert len(providers) == len(pools)
    for name in plan.models:
        service = rec.one("aws:ecs/service:Service", f"inference-{name}-service")
        (strategy,) = service.inputs["capacityProviderStrategies"]
        pool = plan.config.models[name].pool
        assert pool == plan.config.models[name].pool
        assert strategy["capacityProvider"].startswith(f"inference-{pool}-capacity")
        assert association.urn in service.dependencies
    for name in plan.rerankers:
        service = rec.one("aws:ecs/service:Service", f"inference-{name}-service")
        kinds = {s["capacityProvider"] for s in service.inputs["capacityProviderStrategies"]}
        assert kinds <= {"FARGATE", "FARGATE_SPOT"}


@pytest.mark.parametrize("stack", STACKS)
def test_exports_give_callers_what_they_need(stack: str) -> None:
    outputs = recorded(stack).outputs
    plan = planned(stack)
    assert set(outputs["serviceUrls"]) == set(plan.config.service_names())
    domain = plan.config.endpoint.domain_name
    assert all(url == f"https://{domain}/{svc}/" for svc, url in outputs["serviceUrls"].items())
    assert outputs["oauthTokenUrl"].endswith("/oauth2/token")
    assert outputs["apiClientId"]
    assert json.dumps(outputs["decisions"])  # plain, serialisable


@pytest.mark.parametrize("stack", STACKS)
def test_dns_alias_only_when_a_zone_is_given(stack: str) -> None:
    rec = recorded(stack)
    zone = planned(stack).config.endpoint.hosted_zone_id
    records = rec.by_type("aws:route53/record:Record")
    if zone is None:
        assert records == []
        return
    (record,) = records
    assert record.inputs["zoneId"] == zone
    assert record.inputs["name"] == planned(stack).config.endpoint.domain_name
    assert record.inputs["type"] == "A"
    (alias,) = record.inputs["aliases"]
    alb = rec.one("aws:lb/loadBalancer:LoadBalancer")
    assert alias["evaluateTargetHealth"] is True
    assert alb.urn in record.dependencies
