"""docs/api.md is generated from the components, and every part of their API is documented."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import sys
import typing

import pulumi
import pytest

from tools import api_reference as ref

ENTRIES = {e.component: e for e in ref.COMPONENTS}


def test_the_reference_is_current() -> None:
    assert ref.main(["--check"]) == 0, "docs/api.md is stale: python -m tools.api_reference --write"


@pytest.mark.parametrize("name", sorted(ENTRIES))
def test_every_args_field_has_a_docstring(name: str) -> None:
    entry = ENTRIES[name]
    if entry.args is None:
        pytest.skip("takes a Plan")
    args = getattr(importlib.import_module(entry.module), entry.args)
    missing = [n for n, _, _, _, doc in ref.args_rows(args) if not doc]
    assert not missing, f"{entry.args}: no docstring for {missing}"
    assert dataclasses.is_dataclass(args)


@pytest.mark.parametrize("name", sorted(ENTRIES))
def test_every_output_is_a_typed_documented_attribute(name: str) -> None:
    entry = ENTRIES[name]
    component = getattr(importlib.import_module(entry.module), entry.component)
    outputs = {n: doc for n, _, doc in ref.output_rows(component)}
    unannotated = ref.assigned_attributes(component) - set(outputs)
    assert not unannotated, f"{name} sets attributes it does not declare: {sorted(unannotated)}"
    undocumented = sorted(n for n, doc in outputs.items() if not doc)
    assert not undocumented, f"{name}: no docstring for {undocumented}"


def test_tokens_follow_the_convention() -> None:
    for entry in ref.COMPONENTS:
        module = importlib.import_module(entry.module)
        token = ref.token(module, getattr(module, entry.component))
        assert token.startswith("ecs-inference:") and token.count(":") == 2, token


@pytest.mark.parametrize("name", sorted(ENTRIES))
def test_output_annotations_resolve_at_run_time(name: str) -> None:
    """Pulumi resolves a resource class's own annotations in its module's globals when it
    registers one (`pulumi._types.resource_types`): a name imported only for type checking
    would fail the program."""
    entry = ENTRIES[name]
    component = getattr(importlib.import_module(entry.module), entry.component)
    for klass in component.__mro__:
        if klass.__module__.startswith("ecs_inference"):
            own = type(klass.__name__, (), {"__annotations__": inspect.get_annotations(klass)})
            typing.get_type_hints(
                own,
                globalns=vars(sys.modules[klass.__module__]),
                localns={"Output": pulumi.Output, "T": type(None)},
            )
