"""The offline preview's config: the CLI's merge order, `--config` and `--config-file` standing in
for ESC environments, placeholders for values it cannot decrypt, and what it says about both."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ecs_inference.config.stack_file import StackFileError
from tools.preview import EXIT_CONFIG, EXIT_OK, render_text, run_preview
from tools.stack_config import apply_override, merged, preview_config

ROOT = Path(__file__).resolve().parents[2]
MASTER = (
    "      masterKeySecretArn: arn:aws:secretsmanager:us-east-1:123456789012:secret:"
    "agents/litellm-master-AbCdEf\n"
)


def _agents(tmp_path: Path, *, environment: bool, master: str = "") -> Path:
    text = (ROOT / "Pulumi.agents.yaml").read_text().replace(MASTER, master)
    if environment:
        text = text.replace("config:\n", "environment:\n  - acme/agents-secrets\nconfig:\n", 1)
    path = tmp_path / "Pulumi.agents.yaml"
    path.write_text(text)
    return path


def test_overrides_set_paths_as_config_set_path_does() -> None:
    config: dict = {"ecs-inference:platform": {"gateway": {"cpu": 1024}}}
    assert apply_override(config, "ecs-inference:platform.gateway.masterKey=sk-1") == (
        "ecs-inference:platform"
    )
    apply_override(config, "ecs-inference:platform.operations.alarmSubscriptions[1].endpoint=a@b.c")
    apply_override(config, "aws:region=eu-west-1")
    apply_override(config, "ecs-inference:platform.gateway.desiredCount=3")
    assert config == {
        "ecs-inference:platform": {
            "gateway": {"cpu": 1024, "masterKey": "sk-1", "desiredCount": 3},
            "operations": {"alarmSubscriptions": [None, {"endpoint": "a@b.c"}]},
        },
        "aws:region": "eu-west-1",
    }
    with pytest.raises(ValueError, match="<namespace>:<key>"):
        apply_override(config, "masterKey=sk-1")


def test_an_environment_merges_under_the_stack_files_objects() -> None:
    assert merged({"a": {"b": 1, "c": 2}, "x": 1}, {"a": {"c": 3}}) == {
        "a": {"b": 1, "c": 3},
        "x": 1,
    }


def test_secure_values_are_placeholders_and_their_keys_secret(tmp_path: Path) -> None:
    secure = "      masterKey:\n        secure: v1:AAAA:c2VjcmV0\n"
    settings = preview_config(
        ROOT, "agents", stack_file=_agents(tmp_path, environment=False, master=secure)
    )
    platform = json.loads(settings.values["ecs-inference:platform"])
    assert platform["gateway"]["masterKey"].startswith("sk-")
    assert settings.secret_keys == ["ecs-inference:platform"]
    [note] = settings.notes
    assert "platform.gateway.masterKey" in note and "placeholders" in note


def test_a_missing_stack_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(StackFileError, match="no such stack file"):
        preview_config(ROOT, "nope")


def test_an_esc_import_is_named_with_what_it_lacks_and_how_to_pass_it(tmp_path: Path) -> None:
    path = _agents(tmp_path, environment=True)
    result = run_preview("agents", stack_file=path, policy_pack=None)
    assert result.exit_code == EXIT_CONFIG
    [note] = result.stack_notes
    # The agents file opens with five comment lines.
    assert note.startswith("Pulumi.agents.yaml:6: imports ESC environment(s) acme/agents-secrets")
    assert "platform.gateway (LiteLLM's master key is required but missing)" in note
    assert "--config 'ecs-inference:platform.<path>=<value>'" in note and "--config-file" in note
    text = render_text(result)
    assert "Stack config resolved offline:" in text and note in text
    # Following the note: the value passed on the command line counts as secret.
    result = run_preview(
        "agents",
        stack_file=path,
        policy_pack=None,
        overrides=["ecs-inference:platform.gateway.masterKey=sk-from-the-command-line"],
    )
    assert result.exit_code == EXIT_OK, result.error
    assert "standing in for them: 1 --config value(s)" in result.stack_notes[0]
    env = tmp_path / "env.yaml"
    env.write_text("config:\n  ecs-inference:platform:\n    gateway:\n      masterKey: sk-esc\n")
    result = run_preview("agents", stack_file=path, policy_pack=None, config_file=env)
    assert result.exit_code == EXIT_OK, result.error
    parameters = [r for r in result.resources if r.type == "aws:ssm/parameter:Parameter"]
    assert [p.inputs["value"] for p in parameters] == ["sk-esc"]
