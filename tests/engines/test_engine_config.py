"""SGLang, TGI and custom services and EFS weight stores in the stack config: plan decisions and
bad configs that fail with the config path to edit (the `engines` reference stack is the base)."""

from __future__ import annotations

import pytest

from ecs_inference import sizing
from ecs_inference.config.issues import ConfigError
from ecs_inference.config.load import load_stack_config
from ecs_inference.engines.custom import CustomLaunch
from ecs_inference.engines.sglang import SglangLaunch
from ecs_inference.engines.tgi import TgiLaunch
from ecs_inference.plan import build_plan
from ecs_inference.sizing.instance_types import DeclaredFit
from tests.stack_config import (
    DELETE,
    issues_of,
    mutate,
    plan_of,
    pool_choices,
    reference,
)

STACK = "engines"


def test_engines_stack_plans_every_engine() -> None:
    plan = plan_of(reference("engines"), STACK)
    fits = {
        m: f["g6e.12xlarge"].fit
        for m, f in pool_choices(reference("engines"), STACK)["l40s"].types.fits.items()
    }
    qwen, mistral, triton = (plan.models[n] for n in ("qwen", "mistral", "triton"))
    assert isinstance(qwen.launch, SglangLaunch)
    assert (qwen.efs_file_system, qwen.efs_path) == ("weights", "/models/qwen2.5-14b-instruct")
    assert qwen.launch.weights_uri == "/mnt/efs/qwen"
    assert qwen.weights.bucket is None
    assert any(line.startswith("weights: efs:") for line in plan.decisions["model qwen"])
    assert isinstance(fits["qwen"], sizing.GpuFit)
    assert qwen.gpu_count == qwen.launch.tensor_parallel_size == fits["qwen"].tp_size
    assert isinstance(mistral.launch, TgiLaunch)
    assert mistral.launch.weights_uri.startswith("s3://")
    assert mistral.launch.max_input_tokens == mistral.launch.context_length - 1
    assert isinstance(triton.launch, CustomLaunch) and isinstance(fits["triton"], DeclaredFit)
    assert triton.gpu_count == 1 and triton.launch.health_path == "/v2/health/ready"
    assert (triton.weights.bucket, triton.weights.prefix) == (
        "example-engines-models",
        "gemma-2-9b-trtllm",
    )
    # warm-up inputs differ per engine and reach the grace period
    assert any("warm-up 180 s" in line for line in plan.decisions["model qwen"])
    assert any("warm-up 150 s" in line for line in plan.decisions["model mistral"])


@pytest.mark.parametrize(
    ("key", "value", "path", "fragment"),
    [
        (
            "models.qwen.extraArgs",
            ["--no-such-flag", "1"],
            "platform.models.qwen.extraArgs",
            "sglang 0.5.23 has no flag --no-such-flag",
        ),
        (
            "models.mistral.extraArgs",
            ["--num-shard", "2"],
            "platform.models.mistral.extraArgs",
            "set by the platform",
        ),
        (
            "models.mistral.architecture",
            "llama-3.1-70b",
            "platform.models.mistral",
            "the tgi model does not fit",
        ),
        (
            "models.qwen.weightsUri",
            "efs:///models/qwen",
            "platform.models.qwen.weightsUri",
            "names no file system",
        ),
        (
            "models.qwen.weightsUri",
            "efs://archive/models/qwen",
            "platform.models.qwen.weightsUri",
            "neither an id (fs-...) nor one of this stack's weightStores (weights)",
        ),
        (
            "models.llama.weightsUri",
            "efs://weights/models/llama",
            "platform.models.llama",
            "engine vllm loads weights from S3 only",
        ),
        (
            "models.llama.extraArgs",
            ["--enforce-eagre"],
            "platform.models.llama.extraArgs",
            "vllm 0.33.0 has no flag --enforce-eagre",
        ),
        (
            "models.llama.extraArgs",
            ["--max-model-len", "4096"],
            "platform.models.llama.extraArgs",
            "set by the platform",
        ),
        (
            "models.triton.extraArgs",
            ["--verbose"],
            "platform.models.triton",
            "`extraArgs` does not apply to engine custom",
        ),
        ("models.triton.image", DELETE, "platform.models.triton", "engine custom needs `image`"),
        (
            "models.triton.custom.gpus",
            0,
            "platform.models.triton",
            "exactly one of custom.gpus, custom.neuronDevices",
        ),
        (
            "models.triton.custom.acceleratorMemoryGiB",
            80,
            "platform.models.triton.custom.acceleratorMemoryGiB",
            "usable GiB per device",
        ),
        (
            "models.triton.custom.healthPath",
            "ready",
            "platform.models.triton.custom.healthPath",
            "absolute path",
        ),
        (
            "models.triton.custom.sseKeepAliveSeconds",
            600,
            "platform.models.triton.custom.sseKeepAliveSeconds",
            "at most half the ALB idle timeout",
        ),
        (
            "models.triton.environment",
            {"TRITON_API_TOKEN": "x"},
            "platform.models.triton.environment",
            "looks like a credential",
        ),
        (
            "weightStores.weights.throughputMode",
            "provisioned",
            "platform.weightStores.weights",
            "provisionedMibPerSecond exactly when throughputMode is provisioned",
        ),
        (
            "models.mistral.maxInputTokens",
            8192,
            "platform.models.mistral.maxInputTokens",
            "must be below maxModelLen 8192",
        ),
    ],
)
def test_bad_engine_configs_name_the_path(key, value, path, fragment) -> None:
    issues = issues_of(mutate(reference("engines"), key, value), STACK)
    matching = [i for i in issues if i.path == path]
    assert matching, [(i.path, i.message) for i in issues]
    assert any(fragment in i.message for i in matching), [i.message for i in matching]


def test_efs_weights_from_an_existing_file_system_by_id() -> None:
    raw = mutate(
        reference("engines"), "models.qwen.weightsUri", "efs://fs-0123456789abcdef0/models/qwen"
    )
    qwen = plan_of(raw, STACK).models["qwen"]
    assert (qwen.efs_file_system, qwen.efs_path) == ("fs-0123456789abcdef0", "/models/qwen")


def test_a_custom_neuron_service_maps_its_devices_and_takes_its_instance() -> None:
    raw = mutate(
        reference("engines"),
        "neuronPools",
        {"inf2": {"instanceType": "inf2.24xlarge", "minSize": 0, "maxSize": 2}},
    )
    raw = mutate(
        raw,
        "models.custom-nrn",
        {
            "engine": "custom",
            "pool": "inf2",
            "image": "123456789012.dkr.ecr.us-east-1.amazonaws.com/team/neuron-server:1.2",
            "custom": {"neuronDevices": 2, "acceleratorMemoryGiB": 40, "sseKeepAliveSeconds": 10},
        },
    )
    plan = plan_of(raw, STACK)
    m = plan.models["custom-nrn"]
    assert isinstance(m.launch, CustomLaunch) and m.launch.neuron_device_count == 2
    assert m.neuron_devices == ("/dev/neuron0", "/dev/neuron1")
    assert m.gpu_count == 0 and m.one_task_per_instance
    fit = pool_choices(raw, STACK)["inf2"].types.fits["custom-nrn"]["inf2.24xlarge"].fit
    assert isinstance(fit, DeclaredFit) and fit.tasks_per_instance == 1
    # a GPU pool is the wrong kind for it
    wrong = mutate(raw, "models.custom-nrn.pool", "l40s")
    issues = issues_of(wrong, STACK)
    assert any(
        i.path == "platform.models.custom-nrn.pool" and "neuronPools" in i.message for i in issues
    ), [(i.path, i.message) for i in issues]


def test_valid_extra_args_reach_vllm_and_neuron_launches() -> None:
    raw = mutate(reference("engines"), "models.llama.extraArgs", ["--enforce-eager", "--seed=7"])
    plan = plan_of(raw, STACK)
    assert plan.models["llama"].launch.extra_args == ("--enforce-eager", "--seed=7")
    dev = mutate(reference("dev"), "models.llama-neuron.extraArgs", ["--no-such-neuron-flag"])
    with pytest.raises(ConfigError) as info:
        build_plan(load_stack_config(dev, "dev"), "dev", region="us-east-1")
    (issue,) = info.value.issues
    assert issue.path == "platform.models.llama-neuron.extraArgs"
    assert "optimum-neuron 0.4.5 has no flag --no-such-neuron-flag" in issue.message
