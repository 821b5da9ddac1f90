"""docs/api.md is generated from the components, and every part of their API is documented."""

from __future__ import annotations

import dataclasses
import importlib
import typing

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
    """Pulumi reads a resource class's annotations (`typing.get_type_hints`) when it registers
    one: a name imported only for type checking fails the program."""
    entry = ENTRIES[name]
    typing.get_type_hints(getattr(importlib.import_module(entry.module), entry.component))
