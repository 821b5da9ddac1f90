"""The environment variables a pinned third-party release reads, from its committed table.

Stdlib only. The tables under `contracts/env/` are extracted from the releases' sources by
`tools/env_tables.py` (a test re-extracts and compares them); each holds `reads`, every name the
release's code reads, and for LiteLLM `database_url_requires`, the names its CLI needs all of
before it builds DATABASE_URL.
"""

from __future__ import annotations

import json
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
