"""The reference stacks: the project's own `Pulumi.<stack>.yaml` files, which the golden files,
the stack tests and the workflows' matrices cover. Any other stack file in a checkout (the
commented `Pulumi.example.yaml`, or one that `make new-stack` wrote) is a user's: no test reads
it, so adding one breaks nothing."""

from __future__ import annotations

import copy
import functools
from pathlib import Path

import yaml

from ecs_inference.config.load import load_stack_config
from ecs_inference.network.discover import discover
from ecs_inference.network.facts import NetworkLookup
from ecs_inference.plan import Plan, build_plan
from tools.described import SETTING, World
from tools.recording import Recording, run_function, run_program, stack_config_values

ROOT = Path(__file__).resolve().parents[1]
REFERENCE_STACKS: list[str] = ["agents", "dev", "engines", "prod", "shared-vpc"]


def stack_file(stack: str) -> Path:
    """The stack file of a reference stack."""
    return ROOT / f"Pulumi.{stack}.yaml"


def network_lookup(stack: str) -> NetworkLookup | None:
    """What the program's lookups read about the stack's `network.existing` (None without one),
    answered from its `preview:lookups` as the offline preview answers them."""
    data = yaml.safe_load(stack_file(stack).read_text())["config"]
    existing = load_stack_config(data["ecs-inference:platform"], stack).network.existing
    if existing is None:
        return None
    region = str(data.get("aws:region") or "us-east-1")
    world = World.parse(data.get(SETTING), region, stack_file(stack).name)
    found: list[NetworkLookup] = []
    run_function(
        lambda: found.append(discover(existing)), config={"aws:region": region}, world=world
    )
    return found[0]


def reference_plan(stack: str, region: str | None = None) -> Plan:
    """The plan of a reference stack, as the program makes it (the existing VPC read first), in
    its own `aws:region` or in `region`."""
    data = yaml.safe_load(stack_file(stack).read_text())["config"]
    return build_plan(
        load_stack_config(data["ecs-inference:platform"], stack),
        stack,
        region=region or data.get("aws:region"),
        network_lookup=network_lookup(stack),
    )


BUILD = "build"
"""The dev stack with `images.build: true` (the stack builds and pushes its own images)."""


@functools.cache
def stack_config(stack: str) -> dict[str, str]:
    """The config values of a reference stack, or of `BUILD`."""
    from tools.preview import read_stack_file

    if stack != BUILD:
        return stack_config_values(read_stack_file(ROOT, stack))
    settings = copy.deepcopy(read_stack_file(ROOT, "dev"))
    settings["config"]["ecs-inference:platform"]["images"] = {"build": True}
    # Through YAML, as a stack file would be read.
    return stack_config_values(yaml.safe_load(yaml.safe_dump(settings)))


@functools.cache
def recorded(stack: str, view: str) -> Recording:
    """The program run of `stack` (a reference stack or `BUILD`) under the mocks of `view`,
    once per test process."""
    return run_program(
        ROOT, project="ecs-inference", stack=stack, config=stack_config(stack), view=view
    )


def agents_with_database(directory: Path) -> Path:
    """A copy of the agents stack file, in `directory`, whose gateway keeps its state in a
    database (the stack `agents-db`)."""
    stack = yaml.safe_load(stack_file("agents").read_text())
    stack["config"]["ecs-inference:platform"]["gateway"]["database"] = {
        "enabled": True,
        "saltKeySecretArn": "arn:aws:secretsmanager:us-east-1:123456789012:secret:agents/salt-AbCd",
    }
    path = directory / "Pulumi.agents-db.yaml"
    path.write_text(yaml.safe_dump(stack))
    return path
