"""What every upstream source module of `tools.sources` shares: the table declaration, its
committed file and formatting, the JSON rows of a flag set, and the reader of environment
variable names in a package's Python source.

What counts as an environment read (`package_reads`): `os.getenv("X")`, `os.environ.get("X")`,
`os.environ["X"]`, `"X" in os.environ`, `get_secret*("X")` helpers, pydantic
`Field(validation_alias="X")` and `AliasChoices("X", ...)`, click `envvar="X"`; a module-level
string constant stands for its value. Nothing is imported: the sources are read with `ast`.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from tools.engine_flags import EngineRelease, Flag, FlagSet

REPO_ROOT = Path(__file__).resolve().parents[2]
CONTRACTS = REPO_ROOT / "contracts"
"""The committed tables live under `contracts/<kind>/<stem>.json`."""


@dataclass(frozen=True)
class Table:
    """One committed table and how it is rebuilt from its upstream source."""

    kind: Literal["flags", "env"]
    """`flags` (`contracts/flag_table.py` reads it) or `env` (`contracts/env_table.py`)."""
    stem: str
    """File stem, `<project>-<version>`."""
    build: Callable[[Path], dict[str, object]]
    """Builds the table's content from the wheel cache (`engine_flags.CACHE_DIR`), or, for a
    table with a `checkout`, from the root of that checkout."""
    releases: tuple[EngineRelease, ...] = ()
    """The PyPI releases `build` reads (prefetched by `tools/engine_flags.py --prefetch`)."""
    checkout: str | None = None
    """Set when the source is not on PyPI: what to check out (`github.com/o/r tag vX`). Such a
    table is rebuilt only from a checkout given on the command line, so the tests cannot
    re-extract it and check its reader on a sample instead."""

    @property
    def path(self) -> Path:
        """The committed file."""
        return CONTRACTS / self.kind / f"{self.stem}.json"

    def render(self, root: Path) -> str:
        """The file's text as built from `root` (stable formatting for reviews)."""
        return json.dumps(self.build(root), indent=1) + "\n"

    def write(self, root: Path) -> Path:
        """Rebuild the committed file from `root`; returns its path."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text(self.render(root), encoding="utf-8")
        return self.path


def flag_rows(flag_set: FlagSet) -> list[dict[str, object]]:
    """One JSON row per distinct flag (aliases together), sorted by first option."""
    seen: dict[tuple[str, ...], Flag] = {}
    for flag in flag_set.flags.values():
        seen.setdefault(flag.options, flag)
    rows = []
    for flag in sorted(seen.values(), key=lambda f: f.options[0]):
        rows.append(
            {
                "options": list(flag.options),
                "takes_value": flag.takes_value,
                "optional_value": flag.optional_value,
                "many": flag.many,
                "negatable": flag.negatable,
                "choices": list(flag.choices) if flag.choices is not None else None,
                "known_values": (
                    list(flag.known_values) if flag.known_values is not None else None
                ),
            }
        )
    return rows


def env_table(release: EngineRelease, reads: frozenset[str], **extra: object) -> dict[str, object]:
    """An environment table: the release, every name it reads (sorted), then `extra` fields."""
    head = {"project": release.project, "version": release.version}
    return {**head, "reads": sorted(reads), **extra}


_MARKERS = ("environ", "getenv", "get_secret", "validation_alias", "AliasChoices", "envvar")
"""Text a module must contain to read the environment in one of the ways above."""
_GETTERS = {"getenv", "get_secret", "get_secret_str", "get_secret_bool", "get_secret_float"}


def literal(node: ast.AST | None) -> str | None:
    """The value of a string literal, else None."""
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _is_environ(node: ast.AST) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == "environ") or (
        isinstance(node, ast.Name) and node.id == "environ"
    )


def _constants(tree: ast.Module) -> dict[str, str]:
    """Module-level `NAME = "text"` (or `NAME: Final = "text"`) constants."""
    out: dict[str, str] = {}
    for node in tree.body:
        target = node.target if isinstance(node, ast.AnnAssign) else None
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
        value = literal(getattr(node, "value", None))
        if isinstance(target, ast.Name) and value is not None:
            out[target.id] = value
    return out


def _reads(tree: ast.Module) -> Iterator[str]:
    constants = _constants(tree)

    def _string(node: ast.AST | None) -> str | None:
        if isinstance(node, ast.Name):
            return constants.get(node.id)
        return literal(node)

    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            first = _string(node.args[0]) if node.args else None
            if (
                name in _GETTERS
                or (name == "get" and isinstance(func, ast.Attribute) and _is_environ(func.value))
            ) and first:
                yield first
            if name == "AliasChoices":
                yield from (s for a in node.args if (s := _string(a)))
            for keyword in node.keywords:
                if keyword.arg in ("validation_alias", "envvar") and (s := _string(keyword.value)):
                    yield s
        elif isinstance(node, ast.Subscript) and _is_environ(node.value):
            yield from [s] if (s := _string(node.slice)) else []
        elif isinstance(node, ast.Compare) and any(_is_environ(c) for c in node.comparators):
            yield from [s] if (s := _string(node.left)) else []


def package_reads(root: Path, package: str) -> frozenset[str]:
    """Every environment variable name `package` (under `root`) reads, as listed above."""
    names: set[str] = set()
    for path in sorted((root / package).rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if not any(marker in text for marker in _MARKERS):
            continue
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        names.update(n for n in _reads(tree) if n and n.replace("_", "").isalnum())
    return frozenset(names)
