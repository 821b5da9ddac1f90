"""The stack file as the CLI reads it: the line of each config path, duplicate keys (refused,
naming both lines), values set with `--secret`, ESC imports, YAML errors with file and line."""

from __future__ import annotations

from pathlib import Path

import pytest

from ecs_inference.config.stack_file import (
    MISSING,
    STACK_FILE_ENV,
    Secure,
    StackFileError,
    parse_stack_file,
    program_stack_file,
    read_stack_file,
)

ROOT = Path(__file__).resolve().parents[2]

TEXT = """\
environment:
  - acme/prod-secrets
config:
  aws:region: us-east-1
  ecs-inference:platform:
    endpoint:
      domainName: models.example.internal
      allowedCidrs:
        - 10.0.0.0/8
        - 192.168.0.0/16
    models:
      llama:
        engine: vllm
        secrets:
          API_TOKEN:
            secure: v1:AAAA:bWFzdGVy
      llama:
        engine: vlm
        pool: l40s
    gateway:
      masterKey:
        secure: v1:BBBB:a2V5
"""


def test_every_config_path_has_its_line_and_a_missing_key_its_parents() -> None:
    sf = parse_stack_file(TEXT, "Pulumi.t.yaml")
    assert sf.where("aws:region") == "Pulumi.t.yaml:4"
    assert sf.where("platform.endpoint.domainName") == "Pulumi.t.yaml:7"
    assert sf.where("platform.endpoint.allowedCidrs[1]") == "Pulumi.t.yaml:10"
    # Not in the file: where it would go.
    assert sf.where("platform.endpoint.certificateArn") == "Pulumi.t.yaml:6"
    assert sf.where("platform.gateway.masterKey") == "Pulumi.t.yaml:21"
    assert sf.line_of("nothing:here") is None


def test_a_duplicate_key_names_both_lines_and_the_last_copy_is_read() -> None:
    sf = parse_stack_file(TEXT, "Pulumi.t.yaml")
    [issue] = sf.issues
    assert issue.path == "platform.models.llama"
    assert issue.where == "Pulumi.t.yaml:17"
    assert "line 12" in issue.message and "line 17" in issue.message
    assert sf.config["ecs-inference:platform"]["models"]["llama"] == {
        "engine": "vlm",
        "pool": "l40s",
    }
    # What only the dropped copy set has no line and is not a secret path any more.
    assert sf.line_of("platform.models.llama.secrets.API_TOKEN") == 17
    assert "platform.models.llama.secrets.API_TOKEN" not in sf.secure
    assert sf.where("platform.models.llama.pool") == "Pulumi.t.yaml:19"


def test_top_level_duplicates_are_refused_too() -> None:
    sf = parse_stack_file("config:\n  a:b: 1\nconfig:\n  a:b: 2\n", "Pulumi.x.yaml")
    [issue] = sf.issues
    assert (issue.path, issue.where) == ("config", "Pulumi.x.yaml:3")
    assert "line 1" in issue.message


def test_secure_values_environments_and_values_at_paths() -> None:
    sf = parse_stack_file(TEXT, "Pulumi.t.yaml")
    assert sf.secure == {"platform.gateway.masterKey"}
    assert sf.environments == ("acme/prod-secrets",)
    assert sf.environment_line == 1
    assert sf.value_at("platform.gateway.masterKey") == Secure("v1:BBBB:a2V5")
    assert sf.value_at("platform.endpoint.allowedCidrs[0]") == "10.0.0.0/8"
    assert sf.value_at("platform.endpoint.nothing") is MISSING


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("config:\n  a: [1,\n  b: 2\n", "Pulumi.bad.yaml:4:1"),
        ("config:\n  a: 1\n b: 2\n", "Pulumi.bad.yaml:3:2"),
        ("config:\n  a: 'unterminated\n", "Pulumi.bad.yaml:3:1"),
    ],
)
def test_yaml_errors_name_the_file_line_and_column(text: str, where: str) -> None:
    with pytest.raises(StackFileError) as error:
        parse_stack_file(text, "Pulumi.bad.yaml")
    message = str(error.value)
    assert message.startswith(f"{where}: not valid YAML: ")
    assert "<unicode string>" not in message


def test_the_reference_stacks_parse_without_issues() -> None:
    for path in sorted(ROOT.glob("Pulumi.*.yaml")):
        sf = read_stack_file(path)
        assert not sf.issues, path.name
        assert sf.lines, path.name


def test_the_program_reads_the_named_stack_file(tmp_path: Path, monkeypatch) -> None:
    other = tmp_path / "other.yaml"
    other.write_text("config:\n  aws:region: eu-west-1\n")
    monkeypatch.chdir(ROOT)
    monkeypatch.delenv(STACK_FILE_ENV, raising=False)
    dev = program_stack_file("dev")
    assert dev is not None and dev.name == "Pulumi.dev.yaml"
    assert program_stack_file("no-such-stack") is None
    monkeypatch.setenv(STACK_FILE_ENV, str(other))
    named = program_stack_file("dev")
    assert named is not None and named.config == {"aws:region": "eu-west-1"}
