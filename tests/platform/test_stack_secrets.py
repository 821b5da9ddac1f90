"""Secret values as Pulumi users write them: a stack file with `secure:` values (the gateway's
master and salt keys, a model's, the gateway's and a worker's `secrets`) previews offline with
placeholders, and each value stays secret end to end: one SSM SecureString parameter the stack
creates, its `value` an `Output.secret`, the containers' `secrets` naming that parameter's ARN,
the execution role allowed to read exactly it, and the value in no other input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tools.fidelity import check_resources
from tools.recording import Recording, run_program
from tools.stack_config import preview_config, project_name

ROOT = Path(__file__).resolve().parents[2]
MASTER = (
    "      masterKeySecretArn: arn:aws:secretsmanager:us-east-1:123456789012:secret:"
    "agents/litellm-master-AbCdEf\n"
)


def _secure(name: str) -> str:
    return f"{name}:\n  secure: v1:{name}AAAA==:Y2lwaGVydGV4dA==\n"


def _indent(text: str, spaces: int) -> str:
    return "".join(" " * spaces + line + "\n" for line in text.splitlines())


def secure_agents_file(tmp_path: Path) -> Path:
    """Pulumi.agents.yaml with its master key, a salt key, a model's, the gateway's and the
    worker's secrets and an alarm webhook set with `pulumi config set --secret`."""
    text = (ROOT / "Pulumi.agents.yaml").read_text()
    assert MASTER in text
    text = text.replace(
        MASTER,
        _indent(_secure("masterKey"), 6)
        + _indent("database:\n  enabled: true\n" + _indent(_secure("saltKey"), 2), 6)
        + _indent("secrets:\n" + _indent(_secure("OPENAI_API_KEY"), 2), 6),
    )
    worker_env = "        environment:\n          WORKER_MODEL: llama-3.1-8b\n"
    assert worker_env in text
    text = text.replace(
        worker_env, _indent("secrets:\n" + _indent(_secure("THIRD_PARTY_TOKEN"), 2), 8) + worker_env
    )
    model = "      llama:\n        engine: vllm\n"
    assert model in text
    text = text.replace(model, model + _indent("secrets:\n" + _indent(_secure("API_TOKEN"), 2), 8))
    text += _indent(
        "operations:\n  alarmSubscriptions:\n    - protocol: https\n"
        + _indent(_secure("endpoint"), 6),
        4,
    )
    path = tmp_path / "Pulumi.agents.yaml"
    path.write_text(text)
    return path


@pytest.fixture(scope="module")
def recording(tmp_path_factory) -> Recording:
    path = secure_agents_file(tmp_path_factory.mktemp("secure"))
    settings = preview_config(ROOT, "agents", stack_file=path)
    assert settings.secret_keys == ["ecs-inference:platform"]
    assert "placeholders of their kind" in settings.notes[0]
    return run_program(
        ROOT,
        project=project_name(ROOT),
        stack="agents",
        config=settings.values,
        secret_keys=settings.secret_keys,
        stack_file=path,
    )


PATHS = {
    "platform.gateway.masterKey",
    "platform.gateway.database.saltKey",
    "platform.gateway.secrets.OPENAI_API_KEY",
    "platform.models.llama.secrets.API_TOKEN",
    "platform.workers.summarise.secrets.THIRD_PARTY_TOKEN",
}


def _containers(rec: Recording, name: str) -> list[dict]:
    task = rec.one("aws:ecs/taskDefinition:TaskDefinition", f"{name}-task")
    return json.loads(task.inputs["containerDefinitions"])


PARAMETER = "aws:ssm/parameter:Parameter"


def test_each_value_is_one_securestring_parameter_holding_it_as_a_secret(recording) -> None:
    parameters = recording.by_type(PARAMETER)
    assert {p.inputs["description"].split(" ")[0] for p in parameters} == PATHS
    for parameter in parameters:
        assert parameter.inputs["type"] == "SecureString"
        assert parameter.secret_inputs == ("value",), parameter.name
        # The offline placeholder of the slot's kind: LiteLLM keys start with sk-.
        value = parameter.inputs["value"]
        assert value.startswith("sk-") == ("Key" in parameter.name), parameter.name


def test_the_containers_name_the_created_parameters_and_the_role_may_read_them(recording) -> None:
    arns = {
        p.inputs["description"].split(" ")[0]: p.outputs["arn"]
        for p in recording.by_type(PARAMETER)
    }
    proxy = next(c for c in _containers(recording, "inference-gateway") if c["name"] == "litellm")
    by_name = {s["name"]: s["valueFrom"] for s in proxy["secrets"]}
    assert by_name["LITELLM_MASTER_KEY"] == arns["platform.gateway.masterKey"]
    assert by_name["LITELLM_SALT_KEY"] == arns["platform.gateway.database.saltKey"]
    assert by_name["OPENAI_API_KEY"] == arns["platform.gateway.secrets.OPENAI_API_KEY"]
    worker = _containers(recording, "inference-summarise")[0]
    assert {s["name"]: s["valueFrom"] for s in worker["secrets"]} == {
        # Without a key of its own the worker presents the gateway's master key.
        "GATEWAY_API_KEY": arns["platform.gateway.masterKey"],
        "THIRD_PARTY_TOKEN": arns["platform.workers.summarise.secrets.THIRD_PARTY_TOKEN"],
    }
    engine = _containers(recording, "inference-llama")[0]
    assert engine["secrets"] == [
        {"name": "API_TOKEN", "valueFrom": arns["platform.models.llama.secrets.API_TOKEN"]}
    ]
    policy = recording.one("aws:iam/rolePolicy:RolePolicy", "inference-gateway-execution")
    document = json.loads(policy.inputs["policy"])
    read = next(s for s in document["Statement"] if s["Action"] == "ssm:GetParameters")
    assert sorted(read["Resource"]) == sorted(
        arns[p]
        for p in (
            "platform.gateway.masterKey",
            "platform.gateway.database.saltKey",
            "platform.gateway.secrets.OPENAI_API_KEY",
        )
    )


def test_a_task_definition_waits_for_the_values_it_reads(recording) -> None:
    parameters = {p.name: p.urn for p in recording.by_type(PARAMETER)}
    task = recording.one("aws:ecs/taskDefinition:TaskDefinition", "inference-llama-task")
    assert parameters["inference-secrets-models-llama-secrets-API_TOKEN"] in task.dependencies


def test_no_value_reaches_any_other_input_and_the_requests_pass(recording) -> None:
    placeholders = {p.inputs["value"] for p in recording.by_type(PARAMETER)}
    for resource in recording.resources:
        if resource.type == PARAMETER:
            continue
        text = json.dumps(resource.inputs)
        assert not any(p in text for p in placeholders), resource.name
    assert check_resources(recording.resources) == []


def test_an_alarm_webhook_set_with_secret_stays_secret(recording) -> None:
    [subscription] = recording.by_type("aws:sns/topicSubscription:TopicSubscription")
    assert subscription.secret_inputs == ("endpoint",)
    # The offline placeholder of the protocol's kind.
    assert subscription.inputs["endpoint"].startswith("https://")
