"""The pinned LiteLLM in its own virtualenv, for tests that load generated gateway configs.

LiteLLM's dependency ranges (boto3/botocore newer than this project's botocore pin) conflict with
`.venv`, so it lives in `.cache/litellm-venv`, made from the lock file beside this module
(`requirements.txt`) and reused while the lock is unchanged (a stamp holds its hash). `make test`
makes it (`python tests/litellm/venv.py`) while it installs `.venv`, so the suite does not wait a
minute for it; a test run without make makes it on first use. Creation needs the package index
once; when that fails the calling test is skipped with the reason, never failed or silently passed.

`run_probe(cases)` runs `probe.py` with that interpreter: every case's YAML goes through
LiteLLM's own parser with the network blocked, and the probe reports what LiteLLM understood.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parent.parent
LOCK_FILE = HERE / "requirements.txt"
PROBE = HERE / "probe.py"
VENV = REPO_ROOT / ".cache" / "litellm-venv"
PYTHON = VENV / "bin" / "python"
STAMP = VENV / ".installed"
INSTALL_TIMEOUT_SECONDS = 900
PROBE_TIMEOUT_SECONDS = 300


@contextlib.contextmanager
def _locked() -> Iterator[None]:
    """Serialise creation between pytest-xdist workers and parallel runs."""
    VENV.parent.mkdir(parents=True, exist_ok=True)
    with open(VENV.parent / ".litellm-venv.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _lock_hash() -> str:
    return hashlib.sha256(LOCK_FILE.read_bytes()).hexdigest()


def create() -> str | None:
    """Make or refresh the venv when the lock changed; the reason it cannot be made, or None."""
    wanted = _lock_hash()
    if STAMP.exists() and STAMP.read_text().strip() == wanted and PYTHON.exists():
        return None
    with _locked():
        if STAMP.exists() and STAMP.read_text().strip() == wanted and PYTHON.exists():
            return None
        steps = [] if PYTHON.exists() else [[sys.executable, "-m", "venv", str(VENV)]]
        pip = [str(PYTHON), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
        steps.append([*pip, "-r", str(LOCK_FILE)])
        for cmd in steps:
            try:
                done = subprocess.run(
                    cmd, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_SECONDS
                )
            except (OSError, subprocess.TimeoutExpired) as exc:
                return f"cannot create {VENV} for the pinned LiteLLM: {exc}"
            if done.returncode != 0:
                tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-5:])
                return f"cannot create {VENV} for the pinned LiteLLM (offline?):\n{tail}"
        STAMP.write_text(wanted)
    return None


def ensure_venv() -> Path:
    """The venv's interpreter (see `create`); skips the calling test when it cannot be made."""
    import pytest

    if (problem := create()) is not None:
        pytest.skip(problem)
    return PYTHON


def run_probe(cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Run `probe.py` on `cases` (see its docstring) and return its per-case reports."""
    python = ensure_venv()
    done = subprocess.run(
        [str(python), str(PROBE)],
        input=json.dumps(cases),
        capture_output=True,
        text=True,
        timeout=PROBE_TIMEOUT_SECONDS,
        cwd=REPO_ROOT,
    )
    if done.returncode != 0:
        raise AssertionError(f"LiteLLM probe failed ({done.returncode}):\n{done.stderr[-4000:]}")
    # LiteLLM prints its own banners on stdout; the report is the last line.
    return json.loads(done.stdout.strip().splitlines()[-1])


if __name__ == "__main__":
    # A venv that cannot be made is not make's failure: the tests needing it skip with the reason.
    if (reason := create()) is not None:
        print(f"note: {reason}", file=sys.stderr)
