"""Each input is declared once: no dataclass or pydantic model in the components declares 3 or
more fields that another one (neither its base nor its subclass) declares under the same names.

What is allowed below says why. The test fails on a new repetition and on an allowed pair that
no longer repeats, so the list only shrinks."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import pkgutil
from itertools import combinations

from pydantic import BaseModel

import ecs_inference

LIMIT = 3
"""Fields two classes may both declare under the same names before it is a repetition."""

ALLOWED = frozenset(
    {
        # The plan's decisions, one field per section of the stack file (a model's decisions
        # under `models`, a pool's under `gpuPools`): the same names by design, other values.
        "config.stack.StackConfig ~ plan.stack.Plan",
    }
)


def declaring_classes() -> dict[str, tuple[type, frozenset[str]]]:
    """Every dataclass and pydantic model of the components (the contracts are the images'
    own), by `module.Class`, with the fields it declares itself."""
    found: dict[str, tuple[type, frozenset[str]]] = {}
    for info in pkgutil.walk_packages(ecs_inference.__path__, "ecs_inference."):
        if info.name.startswith("ecs_inference.contracts"):
            continue
        module = importlib.import_module(info.name)
        for cls in vars(module).values():
            if not inspect.isclass(cls) or cls.__module__ != module.__name__:
                continue
            own = set(inspect.get_annotations(cls))
            if dataclasses.is_dataclass(cls):
                fields = {f.name for f in dataclasses.fields(cls)}
            elif issubclass(cls, BaseModel):
                fields = set(cls.model_fields)
            else:
                continue
            short = f"{module.__name__.removeprefix('ecs_inference.')}.{cls.__qualname__}"
            found[short] = (cls, frozenset(own & fields))
    return found


def repeated(classes: dict[str, tuple[type, frozenset[str]]]) -> dict[str, list[str]]:
    """`a ~ b` -> the field names both declare, for every unrelated pair sharing `LIMIT`+."""
    out: dict[str, list[str]] = {}
    for (a, (ca, fa)), (b, (cb, fb)) in combinations(sorted(classes.items()), 2):
        if issubclass(ca, cb) or issubclass(cb, ca):
            continue
        if len(shared := fa & fb) >= LIMIT:
            out[f"{a} ~ {b}"] = sorted(shared)
    return out


def test_no_input_is_declared_twice() -> None:
    found = repeated(declaring_classes())
    new = {pair: names for pair, names in found.items() if pair not in ALLOWED}
    assert not new, (
        "classes declaring the same fields again (declare them once, in the feature's input, "
        f"and read them from there): {new}"
    )


def test_the_allowed_list_only_shrinks() -> None:
    stale = sorted(ALLOWED - set(repeated(declaring_classes())))
    assert not stale, f"no longer repeated: remove from ALLOWED: {stale}"


def test_a_repetition_is_found() -> None:
    """The check itself: two unrelated classes with three fields of the same names."""

    @dataclasses.dataclass
    class Input:
        cpu: int
        memory_mib: int
        image: str

    @dataclasses.dataclass
    class Spec:
        cpu: int
        memory_mib: int
        image: str
        family: str

    classes = {"a.Input": (Input, frozenset({"cpu", "memory_mib", "image"}))}
    classes["b.Spec"] = (Spec, frozenset({"cpu", "memory_mib", "image", "family"}))
    assert repeated(classes) == {"a.Input ~ b.Spec": ["cpu", "image", "memory_mib"]}
    del classes["b.Spec"]
    assert repeated(classes) == {}
