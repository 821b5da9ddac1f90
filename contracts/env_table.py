"""The environment variables a pinned third-party release reads, from its committed table.

Stdlib only. The tables under `contracts/env/` are extracted from the releases' sources by
`python -m tools.sources` (a test re-extracts and compares them); each holds `source`, where and
how the names were read, and `reads`, every name the release's code reads (a deprecated name it
still falls back to included). Optionally:
- `prefix_aliases`, `{"OLD_": "NEW_"}`: the release rewrites every `OLD_X` it finds to `NEW_X`
  (a legacy prefix), so `OLD_X` is honoured when `NEW_X` is read;
- `deprecated`, `{old: new}`: the deprecated names in `reads` and the name each is read as;
- `ignored`, `{name: note}`: deprecated names the release only warns about;
- for LiteLLM `database_url_requires`, the names its CLI needs all of before it builds
  DATABASE_URL.

Which table judges a variable is declared by the contract modules of this package, not here, so
adding an engine means adding its contract only. A module takes part when it declares
- `ENVIRONMENT_TABLE`, the stem of its release's table (`<project>-<version>`), and
- `ENV_PREFIXES`, the name prefixes that release owns; optionally
- `ENV_SELECTED_BY`, a variable only its containers set: the module's table then judges its
  prefixes only in a container that sets that variable, and wins there over a module without
  one (an image that runs an older release of another engine's library claims that library's
  prefix for its own containers only).
"""

from __future__ import annotations

import importlib
import json
import pkgutil
import sys
from collections.abc import Collection
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

TABLE_DIR = Path(__file__).resolve().parent / "env"


@cache
def table(stem: str) -> dict[str, Any]:
    """The table `contracts/env/<stem>.json` (`litellm-1.108.7`)."""
    return json.loads((TABLE_DIR / f"{stem}.json").read_text())


def reads(stem: str) -> frozenset[str]:
    """Every environment variable name the release reads."""
    return frozenset(table(stem)["reads"])


def read_as(stem: str, name: str) -> str | None:
    """The name the release reads a variable `name` as: `name` itself when it reads it, else
    the name a prefix alias rewrites it to when it reads that one; None when it reads neither."""
    known = reads(stem)
    if name in known:
        return name
    if name in table(stem).get("ignored", {}):
        return None
    for old, new in table(stem).get("prefix_aliases", {}).items():
        if name.startswith(old) and (alias := new + name[len(old) :]) in known:
            return alias
    return None


def ignored(stem: str, name: str) -> str | None:
    """The release's note on a deprecated variable it looks at only to warn that it ignores it
    ("" when it gives none), or None when `name` is no such variable."""
    note = table(stem).get("ignored", {}).get(name)
    return None if note is None else str(note)


@dataclass(frozen=True)
class Owner:
    """A contract module's claim on environment names (see the module docstring)."""

    contract: str
    """The declaring module's name within this package."""
    table: str
    prefixes: tuple[str, ...]
    selected_by: str | None = None


@cache
def owners() -> tuple[Owner, ...]:
    """Every contract module's claim, by module name; discovered through this package's own
    `__path__`, so it works both as `ecs_inference.contracts` and as an image's `contracts`.

    Raises ValueError when two modules without `ENV_SELECTED_BY` claim overlapping prefixes
    (or two with the same selector do): a name would then have no one table.
    """
    package = sys.modules[__name__.rpartition(".")[0]]
    found: list[Owner] = []
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda i: i.name):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        stem, prefixes = (
            getattr(module, "ENVIRONMENT_TABLE", None),
            getattr(module, "ENV_PREFIXES", None),
        )
        if isinstance(stem, str) and isinstance(prefixes, tuple):
            selector = getattr(module, "ENV_SELECTED_BY", None)
            found.append(Owner(info.name, stem, tuple(map(str, prefixes)), selector))
    for i, one in enumerate(found):
        for other in found[i + 1 :]:
            overlap = [
                (a, b)
                for a in one.prefixes
                for b in other.prefixes
                if a.startswith(b) or b.startswith(a)
            ]
            if overlap and one.selected_by == other.selected_by:
                raise ValueError(
                    f"contracts {one.contract} and {other.contract} both claim "
                    f"{overlap[0][0]!r}/{overlap[0][1]!r} names: give one an ENV_SELECTED_BY"
                )
    return tuple(found)


def judging_table(name: str, names: Collection[str]) -> str | None:
    """The stem of the table that judges `name` in a container setting `names` (None: no
    contract claims its prefix). A selected claim whose selector is in `names` beats an
    unselected one (of two such, the module first by name wins: `owners` cannot tell statically
    whether two selectors ever meet in one container); a selected claim whose selector is absent
    does not apply."""
    best: Owner | None = None
    for owner in owners():
        if not name.startswith(owner.prefixes):
            continue
        if owner.selected_by is not None:
            if owner.selected_by in names:
                return owner.table
        elif best is None:
            best = owner
    return best.table if best is not None else None
