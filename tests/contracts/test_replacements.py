"""The replacement facts (tools/replacements.py) agree with terraform-provider-aws's schemas.

The fixture holds each researched attribute's schema verdict (ForceNew or updatable) with its
file and commit; its Pulumi input names are checked against the pinned Python SDK, so a name
mapped wrongly from Terraform's fails here.
"""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path

import pytest

from tools.replacements import REPLACEMENTS, needs_new_name

FIXTURE = Path(__file__).parent / "fixtures" / "terraform_aws_force_new.txt"


def _fixture() -> dict[str, dict[str, set[str]]]:
    """Terraform resource -> {"ForceNew": inputs, "updatable": inputs} (Pulumi names)."""
    found: dict[str, dict[str, set[str]]] = {}
    for line in FIXTURE.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        attribute, pulumi_name, kind, _source = (part.strip() for part in line.split("|"))
        assert kind in ("ForceNew", "updatable"), line
        resource = attribute.split(".", 1)[0]
        found.setdefault(resource, {"ForceNew": set(), "updatable": set()})[kind].add(pulumi_name)
    return found


FIXTURE_FACTS = _fixture()
NAMED = sorted(t for t, r in REPLACEMENTS.items() if r.unique is not None)


def sdk_inputs(type_: str) -> set[str]:
    """The input properties (camelCase) of a pulumi-aws resource type, from its Args class."""
    module, name = type_.split(":")[1].split("/")[0], type_.rsplit(":", 1)[1]
    args = getattr(importlib.import_module(f"pulumi_aws.{module}"), f"{name}Args")
    return {
        getattr(member.fget, "_pulumi_name", attr)
        for attr, member in inspect.getmembers(args)
        if isinstance(member, property)
    }


@pytest.mark.parametrize("type_", NAMED)
def test_forcing_inputs_are_the_schemas(type_: str) -> None:
    facts = REPLACEMENTS[type_]
    assert facts.terraform in FIXTURE_FACTS, f"no schema lines for {facts.terraform}"
    assert facts.forcing == FIXTURE_FACTS[facts.terraform]["ForceNew"]
    assert set(facts.unique or ()) <= facts.forcing | FIXTURE_FACTS[facts.terraform]["updatable"]


@pytest.mark.parametrize("type_", NAMED)
def test_the_fixture_names_real_inputs(type_: str) -> None:
    lines = FIXTURE_FACTS[REPLACEMENTS[type_].terraform]
    assert (lines["ForceNew"] | lines["updatable"]) - sdk_inputs(type_) == set()


def test_types_whose_names_repeat_need_nothing() -> None:
    task = "aws:ecs/taskDefinition:TaskDefinition"
    assert needs_new_name(task, {"family": "f", "cpu": "1024"}, ()) == []


def test_what_a_name_must_change_with() -> None:
    group = "aws:lb/targetGroup:TargetGroup"
    inputs = {"name": "n", "port": 1, "vpcId": "v", "healthCheck": {}, "tags": {}}
    assert needs_new_name(group, inputs, ()) == ["port", "vpcId"]
    assert needs_new_name(group, inputs, ("vpcId",)) == ["port"]
    # The unique identity itself changes the name by definition.
    rule = "aws:cloudwatch/eventRule:EventRule"
    assert needs_new_name(rule, {"name": "r", "eventBusName": "b"}, ()) == []
    with pytest.raises(KeyError):
        needs_new_name("aws:ec2/vpc:Vpc", {}, ())
