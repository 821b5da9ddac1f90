"""The preview's command line run in process (so a test may patch a component first), and the
reasons it prints for a stack it refuses."""

from __future__ import annotations

import pytest

from tools.preview import main

HEADERS = ("the runtime rehearsal found", "the provider or AWS would reject")
"""How each block of refusals begins (tools/preview.py `_rehearsal_failed`, `_rejected`)."""


def reasons(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[str]]:
    """`python -m tools.preview *argv --no-policy`: its exit code and the reasons it prints,
    checked to be one line each (every line of the block is a `  - ` item, no continuation)."""
    code = main([*argv, "--no-policy"])
    lines = capsys.readouterr().err.splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith(HEADERS)]
    if not starts:
        return code, []
    (start,) = starts
    block = lines[start + 1 : lines.index("", start)]
    assert block and all(line.startswith("  - ") for line in block), block
    return code, [line.removeprefix("  - ") for line in block]


def only(lines: list[str], *needles: str) -> str:
    """The one reason that contains every needle."""
    found = [line for line in lines if all(n in line for n in needles)]
    assert len(found) == 1, (needles, lines)
    return found[0]
