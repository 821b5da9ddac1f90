"""The committed tables read from upstream sources, one module per source.

A preview checks what the pinned third-party releases accept — engine flags
(`contracts/flags/`, read by `contracts/flag_table.py`) and the environment names a release
reads (`contracts/env/`, read by `contracts/env_table.py`) — without their sources on disk, so
those facts are extracted once from the releases' own code and committed as JSON. Each module
of this package covers one upstream source and declares `TABLES`, a tuple of
`common.Table`: the committed file, the releases it is read from and the function that builds
it. `common` holds what they share; the engines' wheels are fetched and cached by
`tools/engine_flags.py`.

Adding an engine's tables means adding its module here; this registry, the command line
(`python -m tools.sources`, see `__main__`) and the tests that re-extract every table and
compare it byte for byte with the committed one find it by itself.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Sequence
from functools import cache
from pathlib import Path
from types import ModuleType

from tools.engine_flags import EngineRelease
from tools.sources.common import Table

Check = Callable[[Sequence[str], Path], list[str]]
"""A command's checker: its arguments (after the command) and the wheel cache -> problems."""


@cache
def _modules() -> tuple[ModuleType, ...]:
    return tuple(
        importlib.import_module(f"{__name__}.{info.name}")
        for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name)
        if not info.name.startswith("_")
    )


@cache
def tables() -> tuple[Table, ...]:
    """Every source module's `TABLES`, in module order.

    Raises ValueError when two declare the same committed file.
    """
    found: dict[tuple[str, str], Table] = {}
    for module in _modules():
        for table in getattr(module, "TABLES", ()):
            key = (table.kind, table.stem)
            if key in found:
                raise ValueError(f"{module.__name__} declares {table.path} a second time")
            found[key] = table
    return tuple(found.values())


@cache
def commands() -> dict[tuple[str, ...], Check]:
    """Every source module's `COMMANDS`: engine commands checked against the wheels themselves.

    Raises ValueError when two declare the same command.
    """
    found: dict[tuple[str, ...], Check] = {}
    for module in _modules():
        for command, check in getattr(module, "COMMANDS", {}).items():
            if command in found:
                raise ValueError(f"{module.__name__} declares {' '.join(command)} a second time")
            found[command] = check
    return found


def releases() -> tuple[EngineRelease, ...]:
    """Every PyPI release a table is read from (each once, in table order)."""
    return tuple(dict.fromkeys(r for t in tables() for r in t.releases))
