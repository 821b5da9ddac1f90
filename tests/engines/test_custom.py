"""The bring-your-own engine (`components/engines/custom.py`): the platform's contract in the
task environment, declared devices and cores, and bad settings failing at their config path.
"""

from __future__ import annotations

import pytest

from ecs_inference.contracts import custom as custom_contract
from ecs_inference.engines.base import PresetError
from ecs_inference.engines.custom import CustomLaunch

WHERE = "platform.models.chat"


IMAGE = "123456789012.dkr.ecr.us-east-1.amazonaws.com/triton:24.10"


SECRET = "arn:aws:secretsmanager:us-east-1:123456789012:secret:triton-key-AbCdEf"


def test_custom_launch_sets_the_platform_contract():
    launch = CustomLaunch(
        "platform.models.triton",
        IMAGE,
        "reranker-xl",
        command=("tritonserver", "--model-repository=/mnt/efs/repo", "--http-port=8080"),
        port=8080,
        health_path="/v2/health/ready",
        gpus=2,
        accelerator_memory_gib=30,
        weights_uri="/mnt/efs/repo",
        environment={"LOG_VERBOSE": "1"},
        secrets={"TRITON_API_KEY": SECRET},
        sse_keepalive_seconds=10,
        alb_idle_timeout_seconds=120,
    )
    env = {e["name"]: e["value"] for e in launch.container_environment("us-east-1")}
    assert env[custom_contract.ENV_PORT] == "8080"
    assert env[custom_contract.ENV_WEIGHTS_URI] == "/mnt/efs/repo"
    assert env["LOG_VERBOSE"] == "1"
    assert env["AWS_REGION"] == "us-east-1"
    assert "TRITON_API_KEY" not in env
    assert launch.container_secrets() == [{"name": "TRITON_API_KEY", "valueFrom": SECRET}]
    assert launch.container_command() == list(launch.command)
    assert launch.health_path == "/v2/health/ready"
    assert launch.gpus == 2
    assert launch.accelerator_fit(24.0, 4, "g6.12xlarge") == 15.0
    with pytest.raises(PresetError, match=r"^platform\.models\.triton\.acceleratorMemoryGiB"):
        launch.accelerator_fit(16.0, 4, "small")
    with pytest.raises(PresetError, match=r"^platform\.models\.triton\.gpus: 2 exceeds"):
        launch.accelerator_fit(80.0, 1, "one-gpu")


def test_custom_neuron_service_maps_devices_and_cores():
    launch = CustomLaunch(WHERE, IMAGE, "m", neuron_devices=3, alb_idle_timeout_seconds=300)
    env = {e["name"]: e["value"] for e in launch.container_environment()}
    assert env[custom_contract.ENV_NEURON_VISIBLE_CORES] == "0-5"
    assert [d["hostPath"] for d in launch.device_mappings()] == [
        "/dev/neuron0",
        "/dev/neuron1",
        "/dev/neuron2",
    ]
    assert launch.gpus == 0


@pytest.mark.parametrize(
    ("kwargs", "path", "fragment"),
    [
        ({"health_path": "health"}, "healthPath", "absolute path"),
        ({"health_path": "/h?x=1"}, "healthPath", "without query"),
        ({"gpus": 1, "neuron_devices": 1}, "gpus", "not both"),
        ({"accelerator_memory_gib": 10.0}, "acceleratorMemoryGiB", "only meaningful"),
        ({"environment": {"ENGINE_PORT": "1"}}, "environment.ENGINE_PORT", "reserved"),
        ({"environment": {"AWS_REGION": "x"}}, "environment.AWS_REGION", "reserved"),
        ({"environment": {"HF_TOKEN": "x"}}, "environment.HF_TOKEN", "credential"),
        ({"secrets": {"K": "plain"}}, "secrets.K", "Secrets Manager ARN"),
        (
            {"alb_idle_timeout_seconds": 60, "max_generation_seconds": 600},
            "sseKeepAliveSeconds",
            "longer than the ALB idle timeout",
        ),
        (
            {"sse_keepalive_seconds": 40, "alb_idle_timeout_seconds": 60},
            "sseKeepAliveSeconds",
            "at most half",
        ),
        ({"command": "serve --port 1"}, "command", "list of strings"),
    ],
)
def test_bad_custom_settings_fail_with_the_config_path(kwargs, path, fragment):
    base = {
        "where": WHERE,
        "image": IMAGE,
        "served_model_name": "m",
        "alb_idle_timeout_seconds": 300,
    }
    # Construction checks what the launch decides; its keys are the schema's to check.
    with pytest.raises(PresetError) as caught:
        CustomLaunch(**(base | kwargs))
    assert str(caught.value).startswith(f"{WHERE}.{path}:"), str(caught.value)
    assert fragment in str(caught.value)
