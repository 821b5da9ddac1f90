"""The reference stacks: the project's own `Pulumi.<stack>.yaml` files, which the golden files,
the stack tests and the workflows' matrices cover. Any other stack file in a checkout (the
commented `Pulumi.example.yaml`, or one that `make new-stack` wrote) is a user's: no test reads
it, so adding one breaks nothing."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REFERENCE_STACKS: list[str] = ["agents", "dev", "engines", "prod"]


def stack_file(stack: str) -> Path:
    """The stack file of a reference stack."""
    return ROOT / f"Pulumi.{stack}.yaml"
