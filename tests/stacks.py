"""The reference stacks: the project's own `Pulumi.<stack>.yaml` files, which the golden files,
the stack tests and the workflows' matrices cover. Any other stack file in a checkout (the
commented `Pulumi.example.yaml`, or one that `make new-stack` wrote) is a user's: no test reads
it, so adding one breaks nothing."""

from __future__ import annotations

import copy
import functools
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

if TYPE_CHECKING:
    from tools.recording import Recording

ROOT = Path(__file__).resolve().parents[1]
REFERENCE_STACKS: list[str] = ["agents", "dev", "engines", "prod"]


def stack_file(stack: str) -> Path:
    """The stack file of a reference stack."""
    return ROOT / f"Pulumi.{stack}.yaml"


BUILD = "build"
"""The dev stack with `images.build: true` (the stack builds and pushes its own images)."""


@functools.cache
def stack_config(stack: str) -> dict[str, str]:
    """The config values of a reference stack, or of `BUILD`."""
    from tools.preview import read_stack_file
    from tools.recording import stack_config_values

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
    from tools.recording import run_program

    return run_program(
        ROOT, project="ecs-inference", stack=stack, config=stack_config(stack), view=view
    )
