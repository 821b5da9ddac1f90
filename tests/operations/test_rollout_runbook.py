"""The rollout runbook's AWS CLI commands are real: each `aws ecs <command>` names an ECS
operation of botocore's model (the CLI is generated from it) and only parameters it takes, with
enum values it accepts. No credentials: the commands are checked, not sent."""

from __future__ import annotations

import shlex
from pathlib import Path

import botocore.session

ROOT = Path(__file__).resolve().parents[2]
OPERATIONS = (ROOT / "docs" / "operations.md").read_text()


def _section() -> str:
    start = OPERATIONS.index("## Rollouts")
    return OPERATIONS[start : OPERATIONS.index("\n## ", start + 1)]


def _camel(option: str) -> str:
    head, *rest = option.removeprefix("--").split("-")
    return head + "".join(w.capitalize() for w in rest)


def _operation_name(command: str) -> str:
    return "".join(w.capitalize() for w in command.split("-"))


def commands() -> list[list[str]]:
    return [shlex.split(line) for line in _section().splitlines() if line.startswith("aws ecs ")]


def problems(words: list[str]) -> list[str]:
    model = botocore.session.get_session().get_service_model("ecs")
    name = _operation_name(words[2])
    if name not in model.operation_names:
        return [f"no ECS operation {name}"]
    members = model.operation_model(name).input_shape.members
    out = []
    for i, word in enumerate(words[3:], start=3):
        if not word.startswith("--"):
            continue
        member = members.get(_camel(word))
        if member is None:
            out.append(f"{name} takes no {word}")
            continue
        value = words[i + 1]
        enum = getattr(member, "enum", None) or []
        if enum and not value.startswith("<") and value not in enum:
            out.append(f"{name} {word} {value}: not one of {enum}")
    return out


def test_the_runbook_shows_the_deployment_commands() -> None:
    shown = {words[2] for words in commands()}
    assert {
        "list-service-deployments",
        "describe-service-deployments",
        "stop-service-deployment",
    } <= shown


def test_every_runbook_command_is_a_real_call() -> None:
    for words in commands():
        assert problems(words) == [], words


def test_the_check_catches_a_wrong_command() -> None:
    assert problems(shlex.split("aws ecs stop-service-deployment --stop-type UNDO")) != []
    assert problems(shlex.split("aws ecs abort-deployment --service x")) != []
    assert problems(shlex.split("aws ecs list-service-deployments --revision x")) != []
