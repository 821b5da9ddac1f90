"""StackConfig validation: every bad input gives one clear issue naming its config path."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from ecs_inference.config.issues import ConfigError
from ecs_inference.config.load import load_stack_config
from ecs_inference.config.stack import StackConfig
from ecs_inference.engines.neuron import NeuronCompileConfig
from tests.stack_config import DELETE, mutate, reference

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_reference_stacks_are_valid(stack: str) -> None:
    cfg = load_stack_config(reference(stack), stack)
    assert isinstance(cfg, StackConfig)
    assert cfg.models and cfg.rerankers and (cfg.gpu_pools or cfg.neuron_pools)


BAD = [
    # (what, path to change, value, expected issue path, words the message must contain)
    (
        "wrong type",
        "models.llama.maxModelLen",
        "long",
        "platform.models.llama.maxModelLen",
        "integer",
    ),
    (
        "unknown key",
        "endpoint.idleTimeout",
        600,
        "platform.endpoint.idleTimeout",
        "idleTimeoutSeconds",
    ),
    ("missing required", "endpoint.domainName", DELETE, "platform.endpoint.domainName", "required"),
    (
        "impossible value",
        "models.llama.maxModelLen",
        0,
        "platform.models.llama.maxModelLen",
        "must be > 0",
    ),
    (
        "idle timeout beyond ALB max",
        "endpoint.idleTimeoutSeconds",
        5000,
        "platform.endpoint.idleTimeoutSeconds",
        "<= 4000",
    ),
    ("bad cidr", "network.cidrBlock", "10.40.0.0/33", "platform.network.cidrBlock", "CIDR"),
    ("one AZ", "network.availabilityZones", 1, "platform.network.availabilityZones", ">= 2"),
    ("bad nat", "network.natGateways", "many", "platform.network.natGateways", "single"),
    ("min above max", "gpuPools.l40s.minSize", 5, "platform.gpuPools.l40s", "minSize"),
    ("unpinned image", "images.vllm", "vllm/vllm-openai:latest", "platform.images.vllm", "pin"),
    (
        "not an s3 uri",
        "models.llama.weightsUri",
        "https://hf.co/x",
        "platform.models.llama.weightsUri",
        "S3 URI",
    ),
    (
        "plaintext credential",
        "models.llama.environment",
        {"DB_PASSWORD": "hunter2"},
        "platform.models.llama.environment",
        "Secrets Manager",
    ),
    (
        "secret in plain text",
        "models.llama.secrets",
        {"API_KEY": "plain"},
        "platform.models.llama.secrets.API_KEY",
        "pulumi config set --secret --path 'ecs-inference:platform.models.llama.secrets.API_KEY'",
    ),
    (
        "mistyped secret ARN",
        "models.llama.secrets",
        {"API_KEY": "arn:aws:secretsmanager:us-east-1:123456789012:sekret:x"},
        "platform.models.llama.secrets",
        "API_KEY: looks like an ARN but is not a Secrets Manager secret ARN",
    ),
    (
        "neuron without compile shape",
        "models.llama-neuron.neuron",
        DELETE,
        "platform.models.llama-neuron",
        "batchSize",
    ),
    (
        "scale in faster than out",
        "models.llama.autoscaling",
        {"scaleOutCooldownSeconds": 300, "scaleInCooldownSeconds": 60},
        "platform.models.llama.autoscaling",
        "scale in slow",
    ),
    (
        "bad service name",
        "rerankers.Rerank_1",
        {"modelUri": "s3://bucket-x/m/"},
        "platform.rerankers.Rerank_1",
        "lowercase",
    ),
    (
        "both cert sources",
        "endpoint.certificateArn",
        "arn:aws:acm:us-east-1:123456789012:certificate/abc-123",
        "platform.endpoint",
        "exactly one",
    ),
    (
        "internal endpoint open to the world",
        "endpoint.allowedCidrs",
        ["0.0.0.0/0"],
        "platform.endpoint.allowedCidrs[0]",
        "0.0.0.0/0",
    ),
    (
        "reranker size and need",
        "rerankers.rerank.needVcpu",
        1,
        "platform.rerankers.rerank",
        "not both",
    ),
    ("unknown pool", "models.llama.pool", "nope", "platform.models.llama.pool", "l40s"),
    (
        "engine/pool kind mismatch",
        "models.llama.pool",
        "inf2",
        "platform.models.llama.pool",
        "gpuPools",
    ),
]


@pytest.mark.parametrize(
    ("what", "path", "value", "issue_path", "words"), BAD, ids=[b[0] for b in BAD]
)
def test_bad_config_gives_one_clear_issue(what, path, value, issue_path, words) -> None:
    with pytest.raises(ConfigError) as info:
        load_stack_config(mutate(reference("dev"), path, value), "dev")
    issues = info.value.issues
    assert len(issues) == 1, f"{what}: expected one issue, got {issues}"
    assert issues[0].path == issue_path
    assert words in issues[0].message
    text = str(info.value)
    assert "Traceback" not in text and issue_path in text


def test_all_problems_are_reported_at_once() -> None:
    raw = mutate(reference("dev"), "models.llama.maxModelLen", -1)
    raw = mutate(raw, "endpoint.colour", "blue")
    with pytest.raises(ConfigError) as info:
        load_stack_config(raw, "dev")
    assert {i.path for i in info.value.issues} == {
        "platform.models.llama.maxModelLen",
        "platform.endpoint.colour",
    }


@pytest.mark.parametrize("raw", [None, [], "text"])
def test_absent_or_non_mapping_platform(raw) -> None:
    with pytest.raises(ConfigError) as info:
        load_stack_config(raw, "dev")
    assert info.value.issues[0].path == "platform"


def test_config_is_frozen() -> None:
    cfg = load_stack_config(reference("dev"), "dev")
    with pytest.raises(ValidationError):
        cfg.network.cidr_block = "10.0.0.0/16"  # type: ignore[misc]


def test_neuron_model_len_defaults_to_compiled_sequence_length() -> None:
    cfg = load_stack_config(reference("dev"), "dev")
    model = cfg.models["llama-neuron"]
    assert model.max_model_len is None
    compiled = model.engine_settings
    assert isinstance(compiled, NeuronCompileConfig)
    assert model.context_length == compiled.sequence_length
