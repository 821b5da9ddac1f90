"""Rebuild committed tables from their upstream sources.

`python -m tools.sources` rebuilds every table read from PyPI wheels (fetched into the cache of
`tools/engine_flags.py`); `python -m tools.sources STEM ...` only those (a stem,
`<project>-<version>`, names its flag and its environment table alike). A table whose source is
not on PyPI needs a checkout of it: `python -m tools.sources STEM --checkout DIR`. `--list`
prints every table and where it is read from.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from tools.engine_flags import CACHE_DIR
from tools.sources import tables
from tools.sources.common import REPO_ROOT


def main(argv: Sequence[str] | None = None) -> int:
    """CLI (see the module docstring); 2 on an unknown stem or a missing checkout."""
    parser = argparse.ArgumentParser(
        prog="python -m tools.sources", description=(__doc__ or "").splitlines()[0]
    )
    parser.add_argument("stems", nargs="*", help="tables to rebuild (default: every PyPI one)")
    parser.add_argument("--checkout", type=Path, help="checkout of a non-PyPI table's source")
    parser.add_argument("--list", action="store_true", help="list the tables and their sources")
    ns = parser.parse_args(argv)
    every = tables()
    if ns.list:
        for table in every:
            origin = table.checkout or ", ".join(
                f"PyPI {r.project}=={r.version}" for r in table.releases
            )
            print(f"{table.path.relative_to(REPO_ROOT)}\t{origin}")
        return 0
    unknown = sorted(set(ns.stems) - {t.stem for t in every})
    if unknown:
        parser.error(f"no table {', '.join(unknown)} (see --list)")
    chosen = (
        [t for t in every if t.stem in ns.stems]
        if ns.stems
        else [t for t in every if t.checkout is None]
    )
    needs = [t for t in chosen if t.checkout is not None]
    if needs and ns.checkout is None:
        parser.error(
            "; ".join(
                f"{t.stem} is read from a checkout of {t.checkout}: pass --checkout DIR"
                for t in needs
            )
        )
    for table in chosen:
        root = ns.checkout if table.checkout is not None else CACHE_DIR
        print(table.write(root).relative_to(REPO_ROOT))
    return 0


if __name__ == "__main__":
    sys.exit(main())
