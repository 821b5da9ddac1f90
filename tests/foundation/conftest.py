"""Helpers the foundation tests share: the reference stacks' config and edits of it."""

from __future__ import annotations

import copy
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def reference(stack: str) -> dict:
    data = yaml.safe_load((ROOT / f"Pulumi.{stack}.yaml").read_text())
    return data["config"]["ecs-inference:platform"]


def mutate(raw: dict, path: str, value: object) -> dict:
    """Set (or with value=DELETE, remove) `a.b.c` in a deep copy of raw."""
    out = copy.deepcopy(raw)
    node = out
    *parents, leaf = path.split(".")
    for key in parents:
        node = node.setdefault(key, {})
    if value is DELETE:
        del node[leaf]
    else:
        node[leaf] = value
    return out


DELETE = object()
