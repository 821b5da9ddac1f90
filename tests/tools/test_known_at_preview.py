"""What the pack must judge is known on a first preview (DESIGN §12).

Each reference stack, and the dev stack with `images.build: true`, runs under the mocks of the
`new` view (nothing exists yet: ids, ARNs and digests unknown) and of `update`:

- every container definition is known in `new`, with or without the stack's own builds;
- a policy document may be unknown in `new` only when it names something whose identity AWS
  assigns (an ARN or id of a resource type not in components/arns.py `ARN_FORMATS`, e.g. an EFS
  file system or access point); one built only from names, account, region and partition must
  be known;
- the resources with unknown inputs in `new` stay at most as many as measured
  (`UNKNOWN_INPUTS_AT_MOST`, recorded in docs/fidelity.md): a change that makes more of them
  unknown fails here and must say why;
- with `images.build: true` the pack runs every rule in `new`: none says it cannot run during
  preview (the Fargate host-features, secrets and hub-weights rules read the containers).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from ecs_inference.arns import ARN_FORMATS
from tests.stacks import BUILD, REFERENCE_STACKS, recorded, stack_config
from tools.aws_shapes import contains_unknown
from tools.recording import RecordedResource, Recording
from tools.views import run_pack

STACKS = [*REFERENCE_STACKS, BUILD]
UNKNOWN_INPUTS_AT_MOST = {
    "agents": 87,
    "dev": 69,
    "engines": 84,
    "prod": 116,
    "shared-vpc": 27,
    BUILD: 69,
}
"""Custom resources with an unknown input in `new`, as measured (docs/fidelity.md)."""
POLICY_INPUTS = ("policy", "assumeRolePolicy")
TASK_DEFINITION = "aws:ecs/taskDefinition:TaskDefinition"


def _assigned_identities(update: Recording) -> dict[str, str]:
    """ARN or id -> resource, for the stack's resources whose ARN AWS does not form from the
    name alone (their type is not in `ARN_FORMATS`)."""
    found: dict[str, str] = {}
    for r in update.resources:
        if not r.custom or r.type in ARN_FORMATS:
            continue
        for key in ("arn", "id"):
            value = r.outputs.get(key)
            # Short ids ("1", a zone letter) would match anywhere in a document; an output that
            # echoes an input (a topic policy's `arn`) is that other resource's identity.
            if isinstance(value, str) and len(value) >= 8 and value not in r.inputs.values():
                found[value] = f"{r.type} {r.name}"
    return found


@pytest.mark.parametrize("stack", STACKS)
def test_every_container_definition_is_known_on_a_first_preview(stack: str) -> None:
    tasks = recorded(stack, "new").by_type(TASK_DEFINITION)
    assert tasks
    unknown = [t.name for t in tasks if contains_unknown(t.inputs["containerDefinitions"])]
    assert unknown == []


@pytest.mark.parametrize("stack", STACKS)
def test_a_policy_document_is_unknown_only_when_it_names_what_aws_assigns(stack: str) -> None:
    new, update = recorded(stack, "new"), recorded(stack, "update")
    deployed = {r.urn: r for r in update.resources}
    assigned = _assigned_identities(update)
    documents = 0
    wrong = []
    for r in new.resources:
        for key in POLICY_INPUTS:
            if key not in r.inputs:
                continue
            documents += 1
            if not contains_unknown(r.inputs[key]):
                continue
            text = _text(deployed[r.urn].inputs[key])
            if not any(identity in text for identity in assigned):
                wrong.append(f"{r.type} {r.name}.{key}")
    assert documents
    assert wrong == [], (
        "unknown on a first preview although every ARN in them is formed from a name "
        "(compute it with ecs_inference.arns.arn_of)"
    )


def _text(document: Any) -> str:
    return document if isinstance(document, str) else json.dumps(document)


@pytest.mark.parametrize("stack", STACKS)
def test_no_more_resources_have_unknown_inputs_than_measured(stack: str) -> None:
    custom = [r for r in recorded(stack, "new").resources if r.custom]
    unknown = sorted(f"{r.type} {r.name}" for r in custom if contains_unknown(r.inputs))
    assert len(unknown) <= UNKNOWN_INPUTS_AT_MOST[stack], "\n".join(unknown)


@pytest.mark.parametrize("stack", STACKS)
def test_names_behind_computed_arns_use_the_formats_defaults(stack: str) -> None:
    """An ARN computed from a name assumes the inputs its format leaves out (an IAM path, a
    custom event bus) are unset."""

    def breaks(r: RecordedResource) -> list[str]:
        return [k for k in ARN_FORMATS[r.type].unset if r.inputs.get(k) not in (None, "", "/")]

    assert [
        (r.name, breaks(r))
        for r in recorded(stack, "update").resources
        if r.type in ARN_FORMATS and breaks(r)
    ] == []


def test_with_its_own_builds_the_pack_runs_every_rule_on_a_first_preview() -> None:
    violations = run_pack(recorded(BUILD, "new"), "new", stack=BUILD, config=stack_config(BUILD))
    cannot = [v.policy_name for v in violations if "during preview" in v.message]
    assert cannot == []
