"""A replacement of a resource the program names never collides with the old one.

For every resource of the reference stacks (and of dev with `images.build: true`) whose name
the program sets, the facts of tools/replacements.py (from terraform-provider-aws's schemas)
say which of its inputs force a replacement. Each one that is not part of the unique identity
must change the name, or the resource is replaced delete-first, or the input's changes are
ignored. The name is recomputed from the recorded inputs (`replacement_name`'s hash), then
each such input is changed in turn and the name must change with it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ecs_inference.contracts.aws_limits import fitted_name, name_rule, replacement_salt
from tests.stacks import BUILD, REFERENCE_STACKS, recorded
from tools.recording import RecordedResource
from tools.replacements import REPLACEMENTS, needs_new_name

FIXTURE = Path(__file__).parents[1] / "contracts" / "fixtures" / "terraform_aws_force_new.txt"
STACKS = [*REFERENCE_STACKS, BUILD]


def _researched() -> dict[str, set[str]]:
    """Terraform resource -> every input whose schema verdict the fixture holds."""
    found: dict[str, set[str]] = {}
    for line in FIXTURE.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            attribute, pulumi_name, *_ = (part.strip() for part in line.split("|"))
            found.setdefault(attribute.split(".", 1)[0], set()).add(pulumi_name)
    return found


RESEARCHED = _researched()


def named(stack: str) -> list[RecordedResource]:
    """The stack's resources whose physical name the program sets."""
    out = []
    for r in recorded(stack, "update").resources:
        rule = name_rule(r.type)
        if r.custom and rule is not None and rule.name_input in r.inputs:
            out.append(r)
    return out


def _changed(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value + 1
    if isinstance(value, str):
        return value + "-other"
    return [value, "other"]


def _name(r: RecordedResource, stack: str, forcing: dict[str, Any]) -> str | None:
    rule = name_rule(r.type)
    assert rule is not None
    return fitted_name(r.name, rule, scope=f"ecs-inference/{stack}", salt=replacement_salt(forcing))


@pytest.mark.parametrize("stack", STACKS)
def test_every_named_type_has_replacement_facts(stack: str) -> None:
    assert named(stack)
    assert sorted({r.type for r in named(stack)} - set(REPLACEMENTS)) == []


@pytest.mark.parametrize("stack", STACKS)
def test_a_replacement_gets_a_new_name_or_goes_delete_first(stack: str) -> None:
    checked = 0
    for r in named(stack):
        facts = REPLACEMENTS[r.type]
        if facts.unique is None or r.options.delete_before_replace:
            continue
        # Every input the program sets has a researched verdict: a forcing one the table
        # does not know of would otherwise pass unseen.
        unread = set(r.inputs) - {"__defaults"} - RESEARCHED[facts.terraform]
        assert unread == set(), f"{r.name}: read {facts.terraform}'s schema for {unread}"
        needed = needs_new_name(r.type, r.inputs, r.options.ignore_changes)
        if not needed:
            continue
        rule = name_rule(r.type)
        assert rule is not None
        forcing = {k: r.inputs[k] for k in needed}
        assert r.inputs[rule.name_input] == _name(r, stack, forcing), (
            f"{r.name}: its name is not the hash of {needed} (replacement_name)"
        )
        for key in needed:
            assert _name(r, stack, {**forcing, key: _changed(forcing[key])}) != _name(
                r, stack, forcing
            ), f"{r.name}: the name does not change with {key}"
        checked += 1
    # The stacks with long service names (a fitted target group name) have something to check.
    if stack in ("dev", "prod", "agents", BUILD):
        assert checked
