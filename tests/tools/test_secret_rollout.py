"""The secrets a stack stores itself roll the tasks that read them, and are known on a new stack.

The dev stack with a secret value on a model (`models.llama.secrets.EXTRA_TOKEN`) and on a
re-ranker (`rerankers.rerank.secrets.API_KEY`), as `pulumi config set --secret --path` sets them:

- on a first preview (`new`) every container definition is known, and the policy pack runs
  every rule on it (none says it cannot run during preview): the containers name each secret by
  its SSM parameter's ARN, which AWS forms from the parameter's name;
- a changed value changes the task definition of exactly the containers that read it (so ECS
  rolls exactly those services) and no other resource but its own parameter.
"""

from __future__ import annotations

import copy
import functools
import json
from typing import Any

from tests.stacks import ROOT
from tools.aws_shapes import contains_unknown
from tools.preview import read_stack_file
from tools.recording import Recording, run_program, stack_config_values
from tools.views import run_pack

TASK_DEFINITION = "aws:ecs/taskDefinition:TaskDefinition"
PARAMETER = "aws:ssm/parameter:Parameter"
MODEL_SECRET = ("models", "llama", "EXTRA_TOKEN")
RERANKER_SECRET = ("rerankers", "rerank", "API_KEY")


def _config(values: tuple[tuple[tuple[str, str, str], str], ...]) -> dict[str, str]:
    settings = copy.deepcopy(read_stack_file(ROOT, "dev"))
    platform = settings["config"]["ecs-inference:platform"]
    for (section, service, env), value in values:
        platform[section][service].setdefault("secrets", {})[env] = value
    return stack_config_values(settings)


@functools.cache
def _run(view: str, model_value: str, reranker_value: str) -> Recording:
    config = _config(((MODEL_SECRET, model_value), (RERANKER_SECRET, reranker_value)))
    # As the CLI hands a config set with `--secret` to the program: the key marked secret.
    return run_program(
        ROOT,
        project="ecs-inference",
        stack="dev",
        config=config,
        view=view,
        secret_keys=("ecs-inference:platform",),
    )


def _inputs(recording: Recording) -> dict[str, Any]:
    return {
        f"{r.type} {r.name}": json.dumps(r.inputs, sort_keys=True, default=str)
        for r in recording.resources
        if r.custom
    }


def _changed(before: Recording, after: Recording) -> set[str]:
    old, new = _inputs(before), _inputs(after)
    assert old.keys() == new.keys()
    return {key for key in old if old[key] != new[key]}


def test_with_service_secrets_a_first_preview_knows_every_container_definition() -> None:
    new = _run("new", "model-key-1", "reranker-key-1")
    tasks = new.by_type(TASK_DEFINITION)
    assert [t.name for t in tasks if contains_unknown(t.inputs["containerDefinitions"])] == []
    config = _config(((MODEL_SECRET, "model-key-1"), (RERANKER_SECRET, "reranker-key-1")))
    violations = run_pack(new, "new", stack="dev", config=config)
    assert [v.policy_name for v in violations if "during preview" in v.message] == []


def test_each_secret_is_read_from_its_parameter_by_arn_and_labelled_with_its_revision() -> None:
    update = _run("update", "model-key-1", "reranker-key-1")
    arns = {p.inputs["name"]: p.outputs["arn"] for p in update.by_type(PARAMETER)}
    assert set(arns) == {
        "/ecs-inference/dev/models/llama/secrets/EXTRA_TOKEN",
        "/ecs-inference/dev/rerankers/rerank/secrets/API_KEY",
    }
    read = {
        (entry["name"], entry["valueFrom"])
        for task in update.by_type(TASK_DEFINITION)
        for container in json.loads(task.inputs["containerDefinitions"])
        for entry in container.get("secrets") or ()
    }
    assert read == {("EXTRA_TOKEN", arns[n]) for n in arns if n.endswith("EXTRA_TOKEN")} | {
        ("API_KEY", arns[n]) for n in arns if n.endswith("API_KEY")
    }


def test_a_changed_secret_changes_exactly_the_task_definitions_that_read_it() -> None:
    before = _run("update", "model-key-1", "reranker-key-1")
    model_changed = _changed(before, _run("update", "model-key-2", "reranker-key-1"))
    assert model_changed == {
        f"{TASK_DEFINITION} inference-llama-task",
        f"{PARAMETER} inference-secrets-models-llama-secrets-EXTRA_TOKEN",
    }
    reranker_changed = _changed(before, _run("update", "model-key-1", "reranker-key-2"))
    assert reranker_changed == {
        f"{TASK_DEFINITION} inference-rerank-task",
        f"{PARAMETER} inference-secrets-rerankers-rerank-secrets-API_KEY",
    }
