"""The workers' section of the plan: names the component sets itself, queue names SQS would
refuse, and the keys of the worker's secrets, each reported once at its config path."""

from __future__ import annotations

import pytest

from ecs_inference.config.issues import ConfigError
from ecs_inference.config.load import load_stack_config
from ecs_inference.plan import build_plan
from ecs_inference.workers.queues import MANAGED_ENV
from tests.stack_config import issues_of, mutate, plan_of, reference

STACK = "agents"
KEY = "arn:aws:kms:us-east-1:123456789012:key/0a1b2c3d-4e5f-6789-abcd-ef0123456789"


@pytest.mark.parametrize("section", ["environment", "secrets"])
@pytest.mark.parametrize("name", MANAGED_ENV)
def test_a_variable_the_component_sets_is_refused_at_its_path(section: str, name: str) -> None:
    value = "arn:aws:secretsmanager:us-east-1:123456789012:secret:x-AbCdEf"
    raw = mutate(reference(STACK), f"workers.summarise.{section}", {name: value})
    (issue,) = issues_of(raw, STACK)
    assert issue.path == f"platform.workers.summarise.{section}.{name}"
    assert "set by the worker's component" in issue.message


def test_queue_names_sqs_would_refuse_are_a_config_error() -> None:
    cfg = load_stack_config(reference(STACK), STACK)
    with pytest.raises(ConfigError) as info:
        build_plan(cfg, "s" * 40, region="us-east-1", project="p" * 30)
    paths = {i.path for i in info.value.issues}
    assert paths == {"platform.workers.summarise"}
    assert "shorten the project, stack or worker name" in str(info.value)
    # The names fit with the reference stack's project.
    build_plan(cfg, STACK, region="us-east-1", project="ecs-inference")


def test_the_keys_of_its_secrets_reach_its_spec() -> None:
    raw = mutate(reference(STACK), "workers.summarise.kmsKeyArns", {"secrets": [KEY]})
    assert plan_of(raw, STACK).workers["summarise"].input.kms_key_arns.secrets == [KEY]


def test_a_worker_has_no_weights_key() -> None:
    raw = mutate(reference(STACK), "workers.summarise.kmsKeyArns", {"weights": KEY})
    with pytest.raises(ConfigError) as info:
        load_stack_config(raw, STACK)
    assert [i.path for i in info.value.issues] == ["platform.workers.summarise.kmsKeyArns.weights"]
