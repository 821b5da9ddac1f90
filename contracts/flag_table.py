"""An engine's command-line flags as committed under `contracts/flags/`, and what it rejects.

The tables are extracted from the engines' real argument definitions by `python -m tools.sources`
(a PyPI wheel, or a launcher's source at the pinned tag) and read here with the
standard library, so a preview can reject a flag the pinned engine does not know without the
engine's sources on disk. Standard library only.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

TABLE_DIR = Path(__file__).resolve().parent / "flags"


@dataclass(frozen=True)
class TableFlag:
    """One option as the engine's parser accepts it."""

    options: tuple[str, ...]
    takes_value: bool
    optional_value: bool = False
    many: bool = False
    negatable: bool = False
    choices: tuple[str, ...] | None = None
    known_values: tuple[str, ...] | None = None
    """Values the engine accepts at parse time but rejects at start (vLLM's `Literal` fields)."""


@dataclass(frozen=True)
class FlagTable:
    """The flags of one pinned engine release."""

    engine: str
    version: str
    source: str
    flags: dict[str, TableFlag]
    normalise_underscores: bool = False
    """The parser rewrites `--a_b` to `--a-b` (vLLM's FlexibleArgumentParser)."""

    def lookup(self, option: str) -> TableFlag | None:
        """The flag for `option` (`--no-x` for negatable switches), or None."""
        if self.normalise_underscores and option.startswith("--"):
            option = "--" + option[2:].replace("_", "-")
        if option in self.flags:
            return self.flags[option]
        if option.startswith("--no-"):
            base = self.flags.get("--" + option[5:])
            if base is not None and base.negatable:
                return TableFlag((option,), takes_value=False)
        return None

    def problems(self, argv: Sequence[str]) -> list[str]:
        """What the engine's parser would reject in `argv` (empty: accepted).

        Only long options are accepted: short ones are ambiguous in some releases (TGI 3.3.7
        derives `-p` for both `--port` and `--prometheus-port`).
        """
        found: list[str] = []
        i = 0
        name = f"{self.engine} {self.version}"
        while i < len(argv):
            token = argv[i]
            i += 1
            if not token.startswith("--"):
                found.append(f"{name}: {token!r} is not a --flag (values follow their flag)")
                continue
            option, has_inline, inline = token.partition("=")
            flag = self.lookup(option)
            if flag is None:
                found.append(f"{name} has no flag {option}")
                if not has_inline and i < len(argv) and not argv[i].startswith("-"):
                    i += 1
                continue
            if not flag.takes_value:
                if has_inline:
                    found.append(f"{name}: {option} is a switch and takes no value")
                continue
            values: list[str] = []
            if has_inline:
                values.append(inline)
            elif i < len(argv) and not argv[i].startswith("--"):
                values.append(argv[i])
                i += 1
            elif not flag.optional_value:
                found.append(f"{name}: {option} needs a value")
                continue
            while flag.many and i < len(argv) and not argv[i].startswith("-"):
                values.append(argv[i])
                i += 1
            for value in values:
                allowed = flag.choices if flag.choices is not None else flag.known_values
                if allowed is not None and value not in allowed:
                    found.append(f"{name}: {option} {value!r} not one of {list(allowed)}")
        return found


@cache
def load(engine_file: str) -> FlagTable:
    """Load `contracts/flags/<engine_file>.json` (e.g. `vllm-0.33.0`)."""
    raw = json.loads((TABLE_DIR / f"{engine_file}.json").read_text(encoding="utf-8"))
    flags: dict[str, TableFlag] = {}
    for row in raw["flags"]:
        choices = row.get("choices")
        known = row.get("known_values")
        flag = TableFlag(
            options=tuple(row["options"]),
            takes_value=bool(row["takes_value"]),
            optional_value=bool(row.get("optional_value", False)),
            many=bool(row.get("many", False)),
            negatable=bool(row.get("negatable", False)),
            choices=tuple(choices) if choices is not None else None,
            known_values=tuple(known) if known is not None else None,
        )
        for option in flag.options:
            flags[option] = flag
    return FlagTable(
        raw["engine"],
        raw["version"],
        raw["source"],
        flags,
        bool(raw.get("normalise_underscores", False)),
    )
