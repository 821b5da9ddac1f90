"""A resource's properties as the engine holds them in each view: checked inputs and outputs.

- `checked_inputs`: what pulumi-terraform-bridge's `Check` returns (`pkg/tfbridge/provider.go`
  `Check`: "re-generate the inputs WITH the TF defaults"): the program's inputs, the autoname,
  the non-falsy Terraform defaults, and in the resource and each nested object the `__defaults`
  list of the keys that were defaulted.
- `planned_outputs`: what the provider answers. In `new` (the plan of a create) every attribute
  the provider always holds a value for (`provider_schema`) and the program did not set is
  unknown; in `update` and `state` the provider stores a value: the identity the mocks answer
  (ids, ARNs, names, DNS names), `tagsAll`, and the Optional+Computed values `tf_facts` holds.

Views are named by `VIEWS`.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from typing import Any

from pulumi.runtime.rpc import UNKNOWN

from ecs_inference.contracts.aws_limits import name_rule
from tools.views.provider_schema import TypeSchema, schema_of
from tools.views.tf_facts import SAME_AS_ID, Fact, facts_of, stored_applies

VIEWS = ("new", "update", "state")
"""`new`: the first preview of a new stack; `update`: a preview of the deployed stack;
`state`: the deployed stack as `pulumi stack export` holds it."""
DEFAULTS_KEY = "__defaults"


def _objects_at(root: Any, path: tuple[str, ...]) -> Iterator[dict[str, Any]]:
    """The dicts at `path` below `root`, through lists (each element) and nested objects."""
    if isinstance(root, list):
        for item in root:
            yield from _objects_at(item, path)
        return
    if not isinstance(root, dict):
        return
    if not path:
        yield root
        return
    yield from _objects_at(root.get(path[0]), path[1:])


def _parents(root: dict[str, Any], path: str) -> Iterator[tuple[dict[str, Any], str]]:
    """(object, key) pairs for every place `path` addresses in `root` whose parent exists."""
    *parent, key = path.split(".")
    for obj in _objects_at(root, tuple(parent)):
        yield obj, key


def _falsy(value: Any) -> bool:
    return value is False or value == 0 or value == ""


def autoname(type_: str, name: str, inputs: Mapping[str, Any]) -> tuple[str, str] | None:
    """(input key, name) the provider's autonaming adds, or None (given, prefixed, or a type
    that is not autonamed)."""
    from tools.fidelity import simulate_name

    rule = name_rule(type_)
    if rule is None or rule.name_input in inputs or rule.autoname_max is None:
        return None
    if rule.prefix_input and rule.prefix_input in inputs:
        return None
    outcome = simulate_name(type_, name, inputs)
    return (rule.name_input, outcome.name) if isinstance(outcome.name, str) else None


def checked_inputs(type_: str, name: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
    """The inputs as the provider's `Check` returns them (see the module docstring)."""
    result = copy.deepcopy(dict(inputs))
    schema = schema_of(type_)
    if schema is None:
        return result
    defaulted: dict[int, list[str]] = {}
    named = autoname(type_, name, inputs)
    if named is not None:
        result[named[0]] = named[1]
        defaulted.setdefault(id(result), []).append(named[0])
    for fact in facts_of(type_):
        if not fact.has_default or _falsy(fact.default):
            continue
        for obj, key in _parents(result, fact.path):
            if key not in obj:
                obj[key] = fact.default
                defaulted.setdefault(id(obj), []).append(key)
    for obj in (result, *_nested_objects(result, schema)):
        obj[DEFAULTS_KEY] = sorted(defaulted.get(id(obj), []))
    return result


def _nested_objects(result: dict[str, Any], schema: TypeSchema) -> Iterator[dict[str, Any]]:
    for path in sorted(schema.objects):
        yield from _objects_at(result, tuple(path.split(".")))


def strip_defaults(value: Any) -> Any:
    """`value` without the bridge's `__defaults` lists (outputs carry none)."""
    if isinstance(value, dict):
        return {k: strip_defaults(v) for k, v in value.items() if k != DEFAULTS_KEY}
    if isinstance(value, list):
        return [strip_defaults(v) for v in value]
    return value


def _tags_all(outputs: dict[str, Any], default_tags: Mapping[str, str], view: str) -> Any:
    tags = outputs.get("tags") or {}
    if tags == UNKNOWN or any(v == UNKNOWN for v in dict(tags).values()):
        return UNKNOWN
    merged = {**default_tags, **tags}
    if merged or view != "new":
        return merged
    return UNKNOWN


def planned_outputs(
    view: str,
    type_: str,
    checked: Mapping[str, Any],
    identity: Mapping[str, Any],
    *,
    default_tags: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The outputs of a resource with `checked` inputs in `view` (see the module docstring).

    `identity` is what the mocks answer once the resource exists (`id`, `arn`, names, DNS
    names); it is used in `update` and `state` only. `default_tags` are the provider's
    `defaultTags.tags` (default none).
    """
    if view not in VIEWS:
        raise ValueError(f"unknown view {view!r}; one of {', '.join(VIEWS)}")
    outputs: dict[str, Any] = strip_defaults(dict(checked))
    schema = schema_of(type_)
    if schema is None:
        return outputs if view == "new" else {**identity, **outputs}
    facts = facts_of(type_)
    _apply_defaults(outputs, facts)
    if "tagsAll" in schema.present:
        outputs["tagsAll"] = _tags_all(outputs, default_tags or {}, view)
    if view == "new":
        outputs["id"] = UNKNOWN
        for path in sorted(schema.present, key=lambda p: p.count(".")):
            for obj, key in _parents(outputs, path):
                obj.setdefault(key, UNKNOWN)
        return outputs
    for key, value in identity.items():
        outputs.setdefault(key, value)
    for fact in facts:
        if stored_applies(fact, checked) and "." not in fact.path:
            stored = identity.get("id") if fact.stored == SAME_AS_ID else fact.stored
            outputs.setdefault(fact.path, copy.deepcopy(stored))
    return outputs


def _apply_defaults(outputs: dict[str, Any], facts: tuple[Fact, ...]) -> None:
    for fact in facts:
        if fact.has_default:
            for obj, key in _parents(outputs, fact.path):
                obj.setdefault(key, fact.default)
