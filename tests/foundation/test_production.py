"""Issue 12: production defects that the preview alone never showed. Each test fails without its
fix; they run the reference stacks under the mock runtime (`tests/foundation/test_platform.py`)
or the plan on configs built for the purpose."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from tests.foundation.test_platform import ROOT, recorded

STACKS = ["dev", "prod"]


def _stack_file(stack: str) -> tuple[str, dict]:
    text = (ROOT / f"Pulumi.{stack}.yaml").read_text()
    return text, yaml.safe_load(text)


# -- item 14: the docs describe what the stack really does -----------------------------------


def test_stack_headers_say_an_existing_cognito_pool_only_when_the_config_names_one() -> None:
    for stack in STACKS:
        text, data = _stack_file(stack)
        header = "".join(line for line in text.splitlines(True) if line.startswith("#"))
        auth = data["config"]["ecs-inference:platform"]["endpoint"].get("auth", {})
        claims_existing = re.search(r"existing[\w\s]*Cognito", header, re.I) is not None
        assert claims_existing == ("existingUserPoolId" in auth), (stack, header)


def test_neuron_entrypoint_docstring_claims_no_host_volume_the_task_lacks() -> None:
    doc = (ROOT / "images/neuron/entrypoint.py").read_text().split('"""')[1]
    task_defs = recorded("dev").by_type("aws:ecs/taskDefinition:TaskDefinition")
    neuron = [t for t in task_defs if "neuron" in t.name]
    assert neuron
    for t in neuron:
        assert not t.inputs.get("volumes")
    assert not re.search(r"on a host volume|host-volume cache", doc), doc
