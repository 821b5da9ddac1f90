"""The engine presets with capacity's and the gateway's features (the merge of issues 16-18):
SGLang, TGI and custom services on Managed Instances and on pools whose types come from sizing,
behind the LiteLLM gateway. Each combination either plans (and its requests validate against
botocore) or fails with one issue naming the config path."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from ecs_inference.gateway.litellm_config import litellm_config
from ecs_inference.pools import managed_instances
from ecs_inference.sizing.instance_types import DeclaredFit
from tests.aws_shapes import register_task_definition_request, validate_shape
from tests.stack_config import DELETE, issues_of, mutate, plan_of, pool_choices, reference
from tools.preview import project_name, read_stack_file
from tools.recording import Recording, run_program, stack_config_values

STACK = "engines"

ROOT = Path(__file__).resolve().parents[2]
TD = "aws:ecs/taskDefinition:TaskDefinition"
MASTER_KEY = "arn:aws:secretsmanager:us-east-1:123456789012:secret:engines/litellm-master-AbCdEf"


def combined() -> dict:
    """The engines stack with a Managed Instances pool (types from sizing) serving the one-GPU
    TGI and custom services, and the gateway in front of every model."""
    raw = mutate(reference("engines"), "managedInstancePools", {"mi": {"storageGib": 200}})
    raw = mutate(raw, "models.mistral.pool", "mi")
    raw = mutate(raw, "models.triton.pool", "mi")
    return mutate(raw, "gateway", {"masterKeySecretArn": MASTER_KEY})


def test_one_gpu_presets_run_on_managed_instances() -> None:
    plan = plan_of(combined(), STACK)
    pool = plan.managed_instance_pools["mi"]
    types = pool_choices(combined(), STACK)["mi"].types
    assert types.source == "sizing" and pool.requirements.allowed_instance_types == types.chosen
    for name in ("mistral", "triton"):
        m = plan.models[name]
        assert plan.config.models[name].pool == "mi" and m.compatibility == "MANAGED_INSTANCES"
        assert m.shm_size_mib == 0 and m.gpu_count == 1
    # the declared-memory service is fitted on the pool's cheapest chosen type
    fit = types.fits["triton"][types.chosen[0]].fit
    assert isinstance(fit, DeclaredFit)
    assert fit.instance_name == types.chosen[0]
    assert fit.summary() in plan.decisions["model triton"]
    # instanceRequirements cover the declared memory of the custom service
    need = pool.requirements.accelerator_total_memory_mib_min
    assert need is not None and need >= 36 * 1024 * 0.99


def test_tensor_parallel_preset_on_managed_instances_names_the_pool() -> None:
    raw = mutate(combined(), "models.qwen.pool", "mi")
    issues = issues_of(raw, STACK)
    assert any(
        i.path == "platform.models.qwen.pool" and "Managed Instances" in i.message for i in issues
    ), issues


def test_a_declared_service_that_fits_no_single_type_names_its_setting() -> None:
    raw = mutate(reference("engines"), "models.triton.custom.acceleratorMemoryGiB", 60)
    issues = issues_of(raw, STACK)
    assert any(i.path == "platform.models.triton.custom.acceleratorMemoryGiB" for i in issues), (
        issues
    )
    # more GPUs than the type has: the device count is the setting to change
    raw = mutate(reference("engines"), "models.triton.custom.gpus", 8)
    issues = issues_of(raw, STACK)
    assert any(i.path == "platform.models.triton.custom.gpus" for i in issues), issues


def test_presets_take_their_types_from_sizing() -> None:
    raw = mutate(reference("engines"), "gpuPools.l40s.instanceType", DELETE)
    raw = mutate(raw, "gpuPools.l40s.instanceTypes", ["g6e.12xlarge", "g6e.24xlarge"])
    plan = plan_of(raw, STACK)
    layouts = pool_choices(raw, STACK)["l40s"].types.layouts
    assert layouts["qwen"].devices_per_task == 4 and layouts["triton"].devices_per_task == 1
    assert plan.models["qwen"].launch.tensor_parallel_size == 4  # type: ignore[union-attr]


def test_gateway_routes_openai_compatible_engines_and_custom_only_when_named() -> None:
    plan = plan_of(combined(), STACK)
    assert plan.gateway is not None
    routes = {r.target.service: r for r in plan.gateway.routes}
    # a custom image's API is its own: not routed by default
    assert set(routes) == {"llama", "qwen", "mistral"}
    entries = {
        e["model_info"]["id"]: e["litellm_params"]["model"]
        for e in litellm_config(plan.gateway.routes)["model_list"]
        if "model_info" in e
    }
    assert entries["ecs-llama"].startswith("hosted_vllm/")
    assert entries["ecs-qwen"].startswith("openai/") and entries["ecs-mistral"] == (
        "openai/mistral"
    )
    # naming it under gateway.routes asserts its image serves OpenAI's /v1 API
    named = mutate(combined(), "gateway.routes", {"gemma-9b": "triton", "qwen": "qwen"})
    plan = plan_of(named, STACK)
    assert plan.gateway is not None
    targets = {r.model_name: r.target for r in plan.gateway.routes}
    assert targets["gemma-9b"].api_base == "http://triton.inference-engines:8000/v1"


@cache
def recorded() -> Recording:
    settings = read_stack_file(ROOT, "engines")
    settings["config"]["ecs-inference:platform"] = combined()
    return run_program(
        ROOT, project=project_name(ROOT), stack="engines", config=stack_config_values(settings)
    )


def test_combined_stack_task_definitions_are_valid_requests() -> None:
    rec = recorded()
    managed = 0
    for task in rec.by_type(TD):
        request = register_task_definition_request(task.inputs)
        validate_shape("ecs", "RegisterTaskDefinition", request)
        if task.inputs.get("requiresCompatibilities") == ["MANAGED_INSTANCES"]:
            managed += 1
            assert managed_instances.task_definition_problems(request) == [], task.name
    assert managed == 2
