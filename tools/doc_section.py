"""A generated section of a doc: the block between two markers that a tool rewrites from the
code (`--write`), checks (`--check`, exit 1 when stale) or prints (no flag).

`tools.config_reference`, `tools.api_reference` and `tools.rehearsal.reference` each render
their block and hand it here, so the three agree on what stale means and how a doc is spliced.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class DocSection:
    """The block of `doc` from `begin` to `end` (markers included) that `module` generates."""

    doc: Path
    begin: str
    end: str
    module: str
    """The tool's module (`tools.config_reference`): named in the stale message."""

    def current(self) -> str | None:
        """The block as the doc has it, or None when a marker is missing."""
        text = self.doc.read_text(encoding="utf-8")
        start, end = text.find(self.begin), text.find(self.end)
        return text[start : end + len(self.end)] if start >= 0 and end >= 0 else None

    def write(self, block: str) -> None:
        """Replace the doc's block with `block` (the doc must have both markers)."""
        text = self.doc.read_text(encoding="utf-8")
        start, end = text.find(self.begin), text.find(self.end)
        self.doc.write_text(text[:start] + block + text[end + len(self.end) :], encoding="utf-8")

    def main(
        self, argv: Sequence[str] | None, block: str, description: str, shown: str | None = None
    ) -> int:
        """The tool's command line: print `shown` (default: `block`), or `--check` / `--write`
        the doc's copy of `block`."""
        parser = argparse.ArgumentParser(prog=f"python -m {self.module}", description=description)
        action = parser.add_mutually_exclusive_group()
        name = self.doc.relative_to(ROOT)
        action.add_argument(
            "--check", action="store_true", help="exit 1 if the docs' copy is stale"
        )
        action.add_argument("--write", action="store_true", help=f"rewrite {name}")
        args = parser.parse_args(argv)
        if not (args.check or args.write):
            print(block if shown is None else shown, end="" if shown else "\n")
            return 0
        current = self.current()
        if current is None:
            print(f"{name} has no {self.begin!r} / {self.end!r} markers", file=sys.stderr)
            return 1
        if args.write:
            self.write(block)
            return 0
        if current != block:
            print(f"{name} is stale: run `python -m {self.module} --write`", file=sys.stderr)
            return 1
        return 0
