"""Which output attributes a provider always holds a value for, per resource type.

pulumi-terraform-bridge's schema generator marks an output property optional only when the
Terraform attribute is Optional and not Computed and has no Pulumi default
(`pkg/tfgen/generate.go` `isOptional`: "If we're checking a property used in an output
position, it isn't optional if it's computed"); every other output is in the schema's
`required` list, for the resource and for each nested object type. The generated Python SDK
renders that list as the getter's type: `pulumi.Output[str]` (required) against
`pulumi.Output[Optional[str]]`. So the paths in `provider_outputs.json` are the attributes that
always have a value after the provider plans or stores a resource: those the program sets
(required inputs, defaults) and those the provider computes (`arn`, `launchType` when the
program leaves it out, ...).

The table is generated from the pinned SDKs (`python -m tools.views.provider_schema --write`)
and `tests/tools/test_views_schema.py` compares it with them. Paths are camelCase, nested
attributes joined with `.` through objects, lists and maps alike.
"""

from __future__ import annotations

import argparse
import collections.abc
import functools
import importlib
import importlib.util
import inspect
import json
import pkgutil
import re
import sys
import threading
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

TABLE = Path(__file__).with_name("provider_outputs.json")
# Pulumi packages the table covers: (type-token package, Python SDK module).
PACKAGES: tuple[tuple[str, str], ...] = (
    ("aws", "pulumi_aws"),
    ("tls", "pulumi_tls"),
    ("random", "pulumi_random"),
    ("docker-build", "pulumi_docker_build"),
    ("command", "pulumi_command"),
)
_TOKEN = re.compile(r"super\(\w+, __self__\).__init__\(\s*'([^']+)'")
_SKIP_MODULES = ("_inputs", "outputs", "_enums", "_utilities", "config")


def _unwrap(hint: Any) -> tuple[bool, Any]:
    """(optional, inner type) of an `Output[...]` getter hint."""
    import pulumi

    if typing.get_origin(hint) is pulumi.Output:
        hint = typing.get_args(hint)[0]
    if typing.get_origin(hint) is typing.Union and type(None) in typing.get_args(hint):
        return True, next(a for a in typing.get_args(hint) if a is not type(None))
    return False, hint


def _element(hint: Any) -> Any:
    """The object type inside lists and maps (`Sequence['outputs.X']` -> X)."""
    while True:
        origin = typing.get_origin(hint)
        if origin in (list, collections.abc.Sequence):
            hint = _unwrap(typing.get_args(hint)[0])[1]
        elif origin in (dict, collections.abc.Mapping):
            hint = _unwrap(typing.get_args(hint)[1])[1]
        else:
            return hint


def _object_paths(cls: type, prefix: str, seen: frozenset[type], objects: list[str]) -> list[str]:
    """Required (always present) attribute paths of an output class and its nested types;
    the paths whose values are objects (or lists and maps of objects) go to `objects`."""
    module = sys.modules[cls.__module__]
    paths: list[str] = []
    for prop in vars(cls).values():
        getter = getattr(prop, "fget", None)
        name = getattr(getter, "_pulumi_name", None)
        if not isinstance(prop, property) or name is None:
            continue
        hint = typing.get_type_hints(getter, vars(module)).get("return")
        optional, inner = _unwrap(hint)
        path = prefix + name
        if not optional:
            paths.append(path)
        nested = _element(inner)
        if inspect.isclass(nested) and nested.__module__.endswith(".outputs"):
            objects.append(path)
            if nested not in seen:
                paths += _object_paths(nested, path + ".", seen | {nested}, objects)
    return paths


def derive(module_name: str) -> dict[str, dict[str, list[str]]]:
    """{type token: {"present": always-present paths, "objects": object-valued paths}} for
    every custom resource of an SDK package."""
    import pulumi

    root = importlib.import_module(module_name)
    table: dict[str, dict[str, list[str]]] = {}
    for info in pkgutil.walk_packages(root.__path__, root.__name__ + "."):
        if any(part.startswith(_SKIP_MODULES) for part in info.name.split(".")[1:]):
            continue
        module = importlib.import_module(info.name)
        for cls in vars(module).values():
            if not (
                inspect.isclass(cls)
                and issubclass(cls, pulumi.CustomResource)
                and cls.__module__ == module.__name__
            ):
                continue
            token = _TOKEN.search(inspect.getsource(cls))
            if token is not None:
                objects: list[str] = []
                present = _object_paths(cls, "", frozenset(), objects)
                table[token.group(1)] = {"present": sorted(present), "objects": sorted(objects)}
    return table


def derive_all() -> dict[str, Any]:
    """The whole table with its provenance (the SDK versions it was read from)."""
    from importlib.metadata import version

    sources = {
        module: version(module.replace("_", "-"))
        for _, module in PACKAGES
        if importlib.util.find_spec(module)
    }
    types: dict[str, dict[str, list[str]]] = {}
    for module in sources:
        types.update(derive(module))
    return {"sources": sources, "types": dict(sorted(types.items()))}


def write(path: Path = TABLE) -> None:
    """Write the table, one type per line so a provider upgrade diffs by type."""
    table = derive_all()
    lines = ["{", f'"sources": {json.dumps(table["sources"], sort_keys=True)},', '"types": {']
    items = list(table["types"].items())
    for n, (token, entry) in enumerate(items):
        comma = "," if n < len(items) - 1 else ""
        lines.append(f"{json.dumps(token)}: {json.dumps(entry, sort_keys=True)}{comma}")
    lines += ["}", "}"]
    path.write_text("\n".join(lines) + "\n")


@dataclass(frozen=True)
class TypeSchema:
    """What the table holds for one resource type."""

    present: frozenset[str]
    """Attribute paths the provider always holds a value for."""
    objects: frozenset[str]
    """Attribute paths whose values are objects (or lists and maps of them): the bridge keeps
    a `__defaults` list in each."""


_lock = threading.Lock()
_entries: dict[str, TypeSchema | None] = {}


@functools.cache
def _lines() -> dict[str, str]:
    """{type token: its entry's JSON text}. `write()` puts one type on a line, so a preview
    parses only the entries of the few dozen types it registers, not all 1,700 (the whole
    document is 1.2 MB: 0.2 s when the mock runtime's threads parsed it at once)."""
    out: dict[str, str] = {}
    body = TABLE.read_text().split('\n"types": {\n', 1)[1]
    for line in body.splitlines():
        token, sep, entry = line.partition('": {')
        if sep:
            out[token[1:]] = "{" + entry.removesuffix(",")
    return out


def schema_of(type_: str) -> TypeSchema | None:
    """The table's entry for `type_`, or None for a type it does not know (components,
    providers outside `PACKAGES`). Thread-safe: the mock runtime shapes resources on its
    worker threads."""
    with _lock:
        if type_ not in _entries:
            entry = _lines().get(type_)
            data = json.loads(entry) if entry is not None else None
            _entries[type_] = (
                TypeSchema(frozenset(data["present"]), frozenset(data["objects"]))
                if data is not None
                else None
            )
        return _entries[type_]


def sources() -> dict[str, str]:
    """{SDK module: version} the committed table was generated from."""
    return json.loads(TABLE.read_text())["sources"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.views.provider_schema")
    parser.add_argument("--write", action="store_true", help=f"regenerate {TABLE.name}")
    args = parser.parse_args(argv)
    if args.write:
        write()
    else:
        print(json.dumps(derive_all()["sources"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
