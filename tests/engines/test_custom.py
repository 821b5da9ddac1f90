"""The bring-your-own engine (`components/engines/custom.py`): the platform's contract in the
task environment, declared devices and cores, and bad settings failing at their config path.
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from ecs_inference import engines
from ecs_inference.contracts import custom as custom_contract
from ecs_inference.engines.base import LaunchInputs, PresetError
from ecs_inference.engines.custom import CustomLaunch
from ecs_inference.models.input import ModelConfig
from ecs_inference.sizing.instance_types import DeclaredFit

NAME = "chat"
WHERE = f"platform.models.{NAME}"


IMAGE = "123456789012.dkr.ecr.us-east-1.amazonaws.com/triton:24.10"


SECRET = "arn:aws:secretsmanager:us-east-1:123456789012:secret:triton-key-AbCdEf"


def custom_model(custom: dict[str, Any], **keys: Any) -> ModelConfig:
    """A custom service's input: `custom` its section, `keys` its other keys (camelCase)."""
    raw = {"engine": "custom", "pool": "gpus", "image": IMAGE, "servedModelName": "m"}
    section = {"acceleratorMemoryGiB": 10, **custom}
    return ModelConfig.model_validate({**raw, "custom": section, **keys})


def custom_launch(
    custom: dict[str, Any], idle: int = 300, weights_uri: str | None = None, **keys: Any
) -> CustomLaunch:
    """The launch of `custom_model(custom, **keys)` behind an endpoint of `idle` seconds."""
    model = custom_model(custom, **keys)
    kind = "gpus" if custom.get("gpus") else "neuronDevices"
    devices = custom.get("gpus") or custom.get("neuronDevices") or 1
    fit = DeclaredFit(NAME, "any", devices, devices, 10.0, 20.0, kind)
    inputs = LaunchInputs(NAME, model, fit, weights_uri, "g6", idle, None)
    launch = engines.get("custom").launch(inputs)
    assert isinstance(launch, CustomLaunch)
    return launch


def test_custom_launch_sets_the_platform_contract():
    launch = custom_launch(
        {
            "command": ["tritonserver", "--model-repository=/mnt/efs/repo", "--http-port=8080"],
            "port": 8080,
            "healthPath": "/v2/health/ready",
            "gpus": 2,
            "acceleratorMemoryGiB": 30,
            "sseKeepAliveSeconds": 10,
        },
        idle=120,
        weights_uri="/mnt/efs/repo",
        servedModelName="reranker-xl",
        environment={"LOG_VERBOSE": "1"},
        secrets={"TRITON_API_KEY": SECRET},
    )
    env = {e["name"]: e["value"] for e in launch.container_environment("us-east-1")}
    assert env[custom_contract.ENV_PORT] == "8080"
    assert env[custom_contract.ENV_SERVED_MODEL_NAME] == "reranker-xl"
    assert env[custom_contract.ENV_WEIGHTS_URI] == "/mnt/efs/repo"
    assert env["LOG_VERBOSE"] == "1"
    assert env["AWS_REGION"] == "us-east-1"
    assert "TRITON_API_KEY" not in env
    assert launch.container_command() == launch.own.command
    assert launch.health_path == "/v2/health/ready"
    assert launch.gpus == 2


def test_custom_neuron_service_maps_devices_and_cores():
    launch = custom_launch({"neuronDevices": 3})
    env = {e["name"]: e["value"] for e in launch.container_environment()}
    assert env[custom_contract.ENV_NEURON_VISIBLE_CORES] == "0-5"
    assert launch.neuron_device_count == 3
    assert launch.gpus == 0


@pytest.mark.parametrize(
    ("custom", "keys", "loc", "fragment"),
    [
        ({"healthPath": "health"}, {}, ("custom", "healthPath"), "absolute path"),
        ({"healthPath": "/h?x=1"}, {}, ("custom", "healthPath"), "without query"),
        ({"gpus": 1, "neuronDevices": 1}, {}, (), "exactly one of"),
        (
            {"gpus": 1},
            {"environment": {"ENGINE_PORT": "1"}},
            ("environment", "ENGINE_PORT"),
            "reserved",
        ),
        (
            {"gpus": 1},
            {"environment": {"AWS_DEFAULT_OUTPUT": "x"}},
            ("environment", "AWS_DEFAULT_OUTPUT"),
            "reserved",
        ),
        ({"gpus": 1}, {"environment": {"HF_TOKEN": "x"}}, ("environment",), "credential"),
        ({"gpus": 1}, {"secrets": {"K": "plain"}}, ("secrets", "K"), "Secrets Manager ARN"),
        ({"command": "serve --port 1", "gpus": 1}, {}, ("custom", "command"), "list"),
    ],
)
def test_bad_custom_settings_fail_at_their_key(custom, keys, loc, fragment):
    with pytest.raises(ValidationError) as caught:
        custom_model(custom, **keys)
    [error] = caught.value.errors()
    assert error["loc"][: len(loc)] == loc, error
    assert fragment in error["msg"]


@pytest.mark.parametrize(
    ("custom", "idle", "keys", "fragment"),
    [
        ({"gpus": 1}, 60, {"maxGenerationSeconds": 600}, "longer than the ALB idle timeout"),
        ({"gpus": 1, "sseKeepAliveSeconds": 40}, 60, {}, "at most half"),
    ],
)
def test_a_keepalive_the_endpoint_would_cut_fails_at_its_config_path(custom, idle, keys, fragment):
    with pytest.raises(PresetError) as caught:
        custom_launch(custom, idle, **keys)
    assert str(caught.value).startswith(f"{WHERE}.custom.sseKeepAliveSeconds:"), str(caught.value)
    assert fragment in str(caught.value)
