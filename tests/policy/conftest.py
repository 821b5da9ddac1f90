"""Fixtures for the policy pack tests: the real pack over gRPC, and resource builders.

Resources are built as plain ``Res`` records with the attributes the offline preview's recorder
produces (type, name, urn, custom, inputs, parent, dependencies, provider,
property_dependencies); inputs use pulumi-aws / aws-native camelCase keys and floats for
numbers, as the SDK registers them. ``UNKNOWN`` is the engine's unknown sentinel.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from pulumi.runtime.rpc import UNKNOWN

ROOT = Path(__file__).resolve().parents[2]
POLICY_DIR = ROOT / "policy"
for entry in (str(ROOT), str(POLICY_DIR)):
    if entry not in sys.path:
        sys.path.insert(0, entry)

from tools.analyzer_client import PolicyPackProcess, PolicyViolation  # noqa: E402

__all__ = ["UNKNOWN", "Res", "Stack", "container_json", "found"]


@dataclass(frozen=True)
class Res:
    """A recorded resource registration (duck-types tools.recording.RecordedResource)."""

    type: str
    name: str
    urn: str
    custom: bool
    inputs: dict
    parent: str | None = None
    dependencies: tuple[str, ...] = ()
    provider: str | None = None
    property_dependencies: dict[str, tuple[str, ...]] = field(default_factory=dict)


def urn_of(type_: str, name: str) -> str:
    """URN of a top-level resource in stack ``dev`` of project ``ecs-inference``."""
    return f"urn:pulumi:dev::ecs-inference::{type_}::{name}"


class Stack:
    """An ordered set of resources that tests copy and change one thing at a time."""

    def __init__(self, resources: Iterable[Res] = ()) -> None:
        self._items: dict[str, Res] = {r.name: r for r in resources}

    def add(
        self, type_: str, name: str, inputs: dict[str, Any], *, refs: dict[str, Any] | None = None
    ) -> Res:
        """Register a custom resource; ``refs`` maps an input key to the resource name(s) it
        refers to (recorded as property dependencies and dependencies, value left unknown
        unless ``inputs`` sets it)."""
        prop_deps: dict[str, tuple[str, ...]] = {}
        for key, targets in (refs or {}).items():
            names = [targets] if isinstance(targets, str) else list(targets)
            prop_deps[key] = tuple(self._items[n].urn for n in names)
        deps = tuple(dict.fromkeys(u for urns in prop_deps.values() for u in urns))
        res = Res(
            type=type_,
            name=name,
            urn=urn_of(type_, name),
            custom=True,
            inputs=inputs,
            dependencies=deps,
            property_dependencies=prop_deps,
        )
        self._items[name] = res
        return res

    def __getitem__(self, name: str) -> Res:
        return self._items[name]

    def __iter__(self) -> Iterator[Res]:
        return iter(self._items.values())

    def copy(self) -> Stack:
        """A copy whose resources can be replaced without touching this one."""
        return Stack(
            dataclasses.replace(r, inputs=json.loads(json.dumps(r.inputs))) for r in self
        )

    def set(self, name: str, **changes: Any) -> Stack:
        """Replace top-level inputs of ``name`` (a value of ``...`` deletes the key)."""
        res = self._items[name]
        inputs = dict(res.inputs)
        for key, value in changes.items():
            if value is ...:
                inputs.pop(key, None)
            else:
                inputs[key] = value
        self._items[name] = dataclasses.replace(res, inputs=inputs)
        return self

    def replace(self, name: str, **fields: Any) -> Stack:
        """Replace record fields of ``name`` (e.g. property_dependencies)."""
        self._items[name] = dataclasses.replace(self._items[name], **fields)
        return self


def container_json(*containers: dict[str, Any]) -> str:
    """pulumi-aws containerDefinitions: a JSON string in the RegisterTaskDefinition shape."""
    return json.dumps(list(containers))


def found(violations: Iterable[PolicyViolation], *, level: str | None = None) -> set:
    """{(policy, resource name)} for the violations (the name is the URN's last segment)."""
    return {
        (v.policy_name, v.urn.rsplit("::", 1)[-1] if v.urn else None)
        for v in violations
        if level is None or v.enforcement_level == level
    }


@pytest.fixture(scope="session")
def pack() -> Iterator[PolicyPackProcess]:
    """The real policy pack with its default config, started once for the session."""
    with PolicyPackProcess(POLICY_DIR) as process:
        yield process
