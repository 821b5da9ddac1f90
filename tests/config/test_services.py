"""Seed 000: "Never pull weights from Hugging Face at every task start — stage in S3/ECR first".

Weights come from `weightsUri` (S3 or EFS) and every built-in engine runs with
`HF_HUB_OFFLINE=1`; what is left is a service's own `environment` and `secrets`, which could hand
a container a hub token or switch the hub back on. For a service that loads a model at start
(models, re-rankers) both are configuration errors naming the path; services that load no model
(the gateway, queue workers) are unaffected.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from ecs_inference.config.issues import ConfigError
from ecs_inference.config.load import load_stack_config
from ecs_inference.contracts.engine import HUB_OFFLINE_VARIABLES, HUB_TOKEN_VARIABLES

ROOT = Path(__file__).resolve().parents[2]
SECRET = "arn:aws:secretsmanager:us-east-1:123456789012:secret:hub-token-AbCdEf"


def platform(stack: str) -> dict[str, Any]:
    data = yaml.safe_load((ROOT / f"Pulumi.{stack}.yaml").read_text())
    return copy.deepcopy(data["config"]["ecs-inference:platform"])


SERVING = [("models", "llama"), ("models", "llama-neuron"), ("rerankers", "rerank")]


@pytest.mark.parametrize(("section", "service"), SERVING)
@pytest.mark.parametrize("token", HUB_TOKEN_VARIABLES)
@pytest.mark.parametrize("where", ["secrets", "environment"])
def test_a_hub_token_on_a_serving_service_is_a_config_error(
    section: str, service: str, token: str, where: str
) -> None:
    config = platform("dev")
    config[section][service][where] = {token: SECRET if where == "secrets" else "hf_abc"}
    with pytest.raises(ConfigError) as err:
        load_stack_config(config, "dev")
    [issue] = err.value.issues
    assert issue.path == f"platform.{section}.{service}.{where}"
    assert f"{token} is a Hugging Face Hub credential" in issue.message
    assert "every task start" in issue.message and "S3 or EFS" in issue.message


@pytest.mark.parametrize(("section", "service"), SERVING)
@pytest.mark.parametrize("switch", HUB_OFFLINE_VARIABLES)
@pytest.mark.parametrize("value", ["0", "false", ""])
def test_turning_the_hub_back_on_is_a_config_error(
    section: str, service: str, switch: str, value: str
) -> None:
    config = platform("dev")
    config[section][service]["environment"] = {switch: value}
    with pytest.raises(ConfigError) as err:
        load_stack_config(config, "dev")
    [issue] = err.value.issues
    assert issue.path == f"platform.{section}.{service}.environment"
    assert issue.message.startswith(f"{switch}={value!r} would let the container download")


def test_offline_switches_set_to_1_and_services_without_a_model_are_accepted() -> None:
    config = platform("dev")
    config["models"]["llama"]["environment"] = dict.fromkeys(HUB_OFFLINE_VARIABLES, "1")
    load_stack_config(config, "dev")
    agents = platform("agents")
    worker = next(iter(agents["workers"].values()))
    worker.setdefault("secrets", {})["HF_TOKEN"] = SECRET
    load_stack_config(agents, "agents")
