"""The agents reference stack end to end through the config loader and the plan: the gateway's
routes, listener priority and ALB settings, the workers, and the bad configs of issue 17, each one
error naming its config path with nothing planned."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from ecs_inference.config.issues import ConfigError
from ecs_inference.config.load import load_stack_config
from ecs_inference.contracts import litellm
from ecs_inference.endpoint.decisions import idle_timeout
from ecs_inference.plan import build_plan
from tests.stack_config import DELETE, mutate, reference
from tools.preview import project_name, read_stack_file
from tools.recording import run_program, stack_config_values

ROOT = Path(__file__).resolve().parents[2]


def plan_of(raw: dict, stack: str = "agents"):
    return build_plan(load_stack_config(raw, stack), stack, region="us-east-1")


def issues_of(raw: dict) -> list[tuple[str, str]]:
    with pytest.raises(ConfigError) as info:
        plan_of(raw)
    return [(i.path, i.message) for i in info.value.issues]


def test_agents_routes_every_model_privately_and_gets_its_own_alb_path() -> None:
    plan = plan_of(reference("agents"))
    assert plan.gateway is not None
    routes = {r.model_name: r.target for r in plan.gateway.routes}
    adapters = {"llama-3.1-8b-sql", "llama-3.1-8b-support"}  # LoRA adapters of llama
    assert set(routes) == {"llama-3.1-8b", "qwen", "llama-neuron", *adapters}
    assert {routes[a].api_base for a in adapters} == {routes["llama-3.1-8b"].api_base}
    assert routes["qwen"].api_base == "http://qwen.inference-agents:8000/v1"
    assert [b.model_name for b in plan.gateway.bedrock] == ["claude-haiku"]
    # One priority pair after the services', and the ALB may reach the proxy port.
    service_priorities = {m.inputs.placement.priority for m in plan.models.values()}
    assert plan.gateway.placement.priority > max(service_priorities)
    assert litellm.PORT in plan.endpoint.ports
    # Bedrock's 600 s and qwen's 600 s generations are what the ALB must keep open.
    assert idle_timeout(plan.config.endpoint, plan.endpoint.longest_request_seconds).seconds >= 600
    longest = plan.gateway.longest_request_seconds
    assert plan.gateway.deregistration_delay_seconds >= longest
    assert plan.service_connect_namespace == "inference-agents"
    assert set(plan.workers) == {"summarise"}
    assert "gateway" in plan.decisions and "worker summarise" in plan.decisions


def test_stacks_without_gateway_have_no_private_routes() -> None:
    plan = plan_of(reference("dev"), "dev")
    assert plan.gateway is None and plan.service_connect_namespace is None
    assert litellm.PORT not in plan.endpoint.ports


def test_gateway_route_to_a_model_that_does_not_exist() -> None:
    raw = mutate(reference("agents"), "gateway.routes", {"big": "llama-70b", "chat": "llama"})
    assert issues_of(raw) == [
        (
            "platform.gateway.routes.big",
            "routes to service 'llama-70b', which does not exist (services: llama, "
            "llama-neuron, llama/llama-3.1-8b-sql, llama/llama-3.1-8b-support, qwen); name a "
            "key of platform.models or platform.rerankers",
        )
    ]


def test_worker_whose_job_exceeds_the_sqs_visibility_limit() -> None:
    raw = mutate(reference("agents"), "workers.summarise.maxJobSeconds", 50_000)
    (issue,) = issues_of(raw)
    assert issue[0] == "platform.workers.summarise.maxJobSeconds"
    assert "43200 s (12 h)" in issue[1]


def test_bedrock_models_without_a_region() -> None:
    raw = mutate(reference("agents"), "gateway.bedrock.region", DELETE)
    (issue,) = issues_of(raw)
    assert issue[0] == "platform.gateway.bedrock.region"


def test_workers_need_the_gateway() -> None:
    raw = mutate(reference("agents"), "gateway", DELETE)
    assert ("platform.workers.summarise", "a worker calls models through the gateway") in [
        (p, m.split(" (")[0]) for p, m in issues_of(raw)
    ]


def test_gateway_path_taken_by_a_service() -> None:
    raw = mutate(reference("agents"), "gateway.path", "qwen")
    assert [p for p, _ in issues_of(raw)] == ["platform.gateway.path"]


def test_plaintext_master_key_is_a_schema_error_with_its_path() -> None:
    raw = mutate(reference("agents"), "gateway.masterKeySecretArn", "sk-1234")
    assert [p for p, _ in issues_of(raw)] == ["platform.gateway.masterKeySecretArn"]


def test_agents_with_the_database_passes_the_provider_and_api_checks() -> None:
    """The optional Aurora database (off in the reference stack) previews clean too: every
    resource's request and name pass the fidelity checks (DESIGN §9)."""
    from tools.fidelity import check_resources
    from tools.preview import project_name
    from tools.recording import run_program, stack_config_values

    raw = mutate(
        reference("agents"),
        "gateway.database",
        {
            "enabled": True,
            "saltKeySecretArn": (
                "arn:aws:secretsmanager:us-east-1:123456789012:secret:agents/salt-AbCdEf"
            ),
        },
    )
    root = Path(__file__).resolve().parents[2]
    stack_file = yaml.safe_load((root / "Pulumi.agents.yaml").read_text())
    stack_file["config"]["ecs-inference:platform"] = raw
    rec = run_program(
        root,
        project=project_name(root),
        stack="agents",
        config=stack_config_values(stack_file),
    )
    types = {r.type for r in rec.resources}
    assert {"aws:rds/cluster:Cluster", "aws:rds/clusterInstance:ClusterInstance"} <= types
    assert check_resources(rec.resources) == []


OTHER_KEY = "arn:aws:secretsmanager:us-east-1:123456789012:secret:agents/summarise-key-GhIjKl"


def test_a_worker_key_the_gateway_refuses_is_a_config_error() -> None:
    """Issue 24 item 6: without a database the gateway accepts only its master key, so any
    other GATEWAY_API_KEY gets 401 on every job."""
    raw = mutate(reference("agents"), "workers.summarise.secrets", {"GATEWAY_API_KEY": OTHER_KEY})
    (issue,) = issues_of(raw)
    assert issue[0] == "platform.workers.summarise.secrets.GATEWAY_API_KEY"
    assert "accepts no key but its master key" in issue[1]


def test_a_worker_gets_the_master_key_and_may_use_its_own_with_a_database() -> None:
    master = reference("agents")["gateway"]["masterKeySecretArn"]
    plan = plan_of(reference("agents"))
    assert plan.workers["summarise"].secret_refs["GATEWAY_API_KEY"] == master
    raw = mutate(reference("agents"), "workers.summarise.secrets", {"GATEWAY_API_KEY": OTHER_KEY})
    salt = "arn:aws:secretsmanager:us-east-1:123456789012:secret:agents/salt-AbCdEf"
    raw = mutate(raw, "gateway.database", {"enabled": True, "saltKeySecretArn": salt})
    assert plan_of(raw).workers["summarise"].secret_refs["GATEWAY_API_KEY"] == OTHER_KEY


def test_the_gateway_and_workers_execution_roles_decrypt_with_the_keys_of_their_secrets() -> None:
    """`kmsKeyArns.secrets` of the gateway and of a worker reach their execution roles' policies
    (the tasks could not read a secret under a customer-managed key otherwise)."""
    gateway_key = "arn:aws:kms:us-east-1:123456789012:key/0a1b2c3d-4e5f-6789-abcd-ef0123456789"
    worker_key = "arn:aws:kms:us-east-1:123456789012:key/9f8e7d6c-5b4a-3210-fedc-ba9876543210"
    settings = read_stack_file(ROOT, "agents")
    raw = mutate(reference("agents"), "gateway.kmsKeyArns", {"secrets": [gateway_key]})
    raw = mutate(raw, "workers.summarise.kmsKeyArns", {"secrets": [worker_key]})
    settings["config"]["ecs-inference:platform"] = raw
    rec = run_program(
        ROOT, project=project_name(ROOT), stack="agents", config=stack_config_values(settings)
    )
    for suffix, key in (("gateway-execution", gateway_key), ("summarise-execution", worker_key)):
        policy = json.loads(rec.one("aws:iam/rolePolicy:RolePolicy", suffix).inputs["policy"])
        (decrypt,) = [s for s in policy["Statement"] if s["Action"] == "kms:Decrypt"]
        assert decrypt["Resource"] == [key]
        assert decrypt["Condition"]["StringEquals"]["kms:ViaService"] == (
            "secretsmanager.us-east-1.amazonaws.com"
        )
