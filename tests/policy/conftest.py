"""Fixtures for the policy pack tests: the pack judged in this process (``local_pack``, what
rule tests use) and the real pack started once and driven over gRPC (``pack``, for the
protocol, the corpus and the engine views)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
POLICY_DIR = ROOT / "policy"
# The repo root for `tools`, the pack directory for unit tests of `guardrails` helpers (the
# pack itself runs with its own directory first on sys.path, as the CLI starts it).
for entry in (str(ROOT), str(POLICY_DIR)):
    if entry not in sys.path:
        sys.path.insert(0, entry)

from tools.analyzer_client import PolicyPackProcess  # noqa: E402


@pytest.fixture(scope="session")
def pack() -> Iterator[PolicyPackProcess]:
    """The real policy pack with its default config, started once for the session."""
    with PolicyPackProcess(POLICY_DIR) as process:
        yield process


@pytest.fixture(scope="session")
def local_pack() -> Iterator[PolicyPackProcess]:
    """The same pack judged in this process (``pack_harness``): what rule tests use."""
    from tests.policy.pack_harness import InProcessPack

    with InProcessPack() as harness:
        yield harness
