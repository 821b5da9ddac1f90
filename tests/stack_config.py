"""Helpers the config, plan and platform tests share: the reference stacks' config, edits of it,
and the plan (or the config issues) of an edited config."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from ecs_inference.config.issues import ConfigError, ConfigIssue, Issues
from ecs_inference.config.load import load_stack_config
from ecs_inference.models.decisions import demands
from ecs_inference.plan import PLATFORM_NAME, Plan, build_plan, pools

ROOT = Path(__file__).resolve().parents[1]


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


def plan_of(raw: dict, stack: str, *, key_secret: bool = False) -> Plan:
    """The plan of the platform config `raw` as stack `stack`, in us-east-1 (`key_secret`:
    the CLI marked the key secret, as when a value in it was set with `--secret`)."""
    return build_plan(
        load_stack_config(raw, stack, key_secret=key_secret), stack, region="us-east-1"
    )


def issues_of(raw: dict, stack: str, *, key_secret: bool = False) -> list[ConfigIssue]:
    """The issues planning `raw` as stack `stack` reports; fails if it plans."""
    with pytest.raises(ConfigError) as info:
        plan_of(raw, stack, key_secret=key_secret)
    return info.value.issues


def pool_choices(raw: dict, stack: str) -> dict[str, pools.PoolChoice]:
    """The instance types the plan's pools section chooses for `raw` (which must plan)."""
    cfg = load_stack_config(raw, stack)
    issues = Issues()
    found = pools.choose_pools(cfg, PLATFORM_NAME, demands(cfg.models, issues), issues)
    assert not list(issues), list(issues)
    return found
