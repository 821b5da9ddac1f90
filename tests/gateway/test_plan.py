"""The gateway's section of the plan: variables the gateway sets itself, its own secrets and
their keys, and the database's capacity, each reported once at its config path."""

from __future__ import annotations

import pytest

from ecs_inference.config.issues import ConfigError
from ecs_inference.config.load import load_stack_config
from ecs_inference.contracts import litellm
from tests.stack_config import issues_of, mutate, plan_of, reference

STACK = "agents"
KEY = "arn:aws:kms:us-east-1:123456789012:key/0a1b2c3d-4e5f-6789-abcd-ef0123456789"
SECRET = "arn:aws:secretsmanager:us-east-1:123456789012:secret:langfuse-AbCdEf"
SALT = "arn:aws:secretsmanager:us-east-1:123456789012:secret:gateway/salt-GhIjKl"


def with_database(raw: dict) -> dict:
    return mutate(raw, "gateway.database", {"enabled": True, "saltKeySecretArn": SALT})


@pytest.mark.parametrize(
    ("database", "section", "name"),
    [
        (False, "environment", "PORT"),
        (False, "environment", litellm.ENV_CONFIG_YAML),
        (False, "secrets", litellm.ENV_MASTER_KEY),
        (True, "environment", litellm.ENV_DATABASE_HOST),
        (True, "secrets", litellm.ENV_SALT_KEY),
    ],
)
def test_a_variable_the_gateway_sets_is_refused_at_its_path(
    database: bool, section: str, name: str
) -> None:
    raw = reference(STACK)
    raw = with_database(raw) if database else raw
    value = SECRET if section == "secrets" else "x"
    (issue,) = issues_of(mutate(raw, f"gateway.{section}", {name: value}), STACK)
    assert issue.path == f"platform.gateway.{section}.{name}"
    assert "set by the gateway itself" in issue.message


def test_its_own_secrets_and_their_keys_reach_its_spec() -> None:
    raw = mutate(reference(STACK), "gateway.secrets", {"LANGFUSE_SECRET_KEY": SECRET})
    raw = mutate(raw, "gateway.kmsKeyArns", {"secrets": [KEY]})
    gateway = plan_of(raw, STACK).gateway
    assert gateway is not None
    assert gateway.secret_refs["LANGFUSE_SECRET_KEY"] == SECRET
    assert gateway.input.kms_key_arns.secrets == [KEY]


@pytest.mark.parametrize(
    ("database", "path"),
    [
        ({"minCapacityAcu": 8, "maxCapacityAcu": 4}, "platform.gateway.database"),
        ({"maxCapacityAcu": 512}, "platform.gateway.database.maxCapacityAcu"),
    ],
)
def test_database_capacity_outside_aurora_serverless_is_refused(database, path) -> None:
    settings = {"enabled": True, "saltKeySecretArn": SALT, **database}
    raw = mutate(reference(STACK), "gateway.database", settings)
    with pytest.raises(ConfigError) as info:
        load_stack_config(raw, STACK)
    assert [i.path for i in info.value.issues] == [path]
