"""The user data of a pool's instances (`pools.user_data`): ECS agent settings and the script
that writes them."""

from __future__ import annotations

import base64

import pytest

from ecs_inference.pools.user_data import ecs_agent_settings, ecs_user_data, encode_user_data
from tests.pools.conftest import ecs_config


def test_gpu_agent_settings() -> None:
    settings = ecs_agent_settings("prod-ecs", accelerator="nvidia", warm_pool=False)
    assert settings == {
        "ECS_CLUSTER": "prod-ecs",
        "ECS_ENABLE_GPU_SUPPORT": "true",
        "ECS_IMAGE_PULL_BEHAVIOR": "prefer-cached",
        "ECS_IMAGE_MINIMUM_CLEANUP_AGE": "24h",
        "ECS_IMAGE_CLEANUP_INTERVAL": "1h",
        "ECS_CONTAINER_STOP_TIMEOUT": "120s",
        "ECS_ENABLE_TASK_IAM_ROLE": "true",
        "ECS_AWSVPC_BLOCK_IMDS": "true",
        "ECS_AVAILABLE_LOGGING_DRIVERS": '["json-file","awslogs"]',
        "ECS_ENABLE_UNTRACKED_IMAGE_CLEANUP": "false",
    }


def test_neuron_settings_have_no_gpu_flag_and_warm_pool_adds_check() -> None:
    settings = ecs_agent_settings(
        "c",
        accelerator="neuron",
        warm_pool=True,
        container_stop_timeout_seconds=300,
        image_minimum_cleanup_age_hours=72,
    )
    assert "ECS_ENABLE_GPU_SUPPORT" not in settings
    assert settings["ECS_WARM_POOLS_CHECK"] == "true"
    assert settings["ECS_CONTAINER_STOP_TIMEOUT"] == "300s"
    assert settings["ECS_IMAGE_MINIMUM_CLEANUP_AGE"] == "72h"
    assert "ECS_WARM_POOLS_CHECK" not in ecs_agent_settings(
        "c", accelerator="neuron", warm_pool=False
    )


def test_user_data_is_a_script_writing_ecs_config() -> None:
    script = ecs_user_data(ecs_agent_settings("prod-ecs", accelerator="nvidia", warm_pool=True))
    assert script.startswith("#!/bin/bash\nset -euo pipefail\n")
    # quoted heredoc: nothing in the values is expanded by the shell
    assert "cat <<'EOF' >> /etc/ecs/ecs.config\n" in script
    assert ecs_config(script) == ecs_agent_settings(
        "prod-ecs", accelerator="nvidia", warm_pool=True
    )
    assert base64.b64decode(encode_user_data(script)).decode() == script


@pytest.mark.parametrize("bad", ["", "a b", "c\n", "x\nEOF\nrm -rf /", "c$(id)", "n" * 256])
def test_cluster_name_is_validated(bad: str) -> None:
    with pytest.raises(ValueError, match="ECS cluster name"):
        ecs_agent_settings(bad, accelerator="nvidia", warm_pool=False)
