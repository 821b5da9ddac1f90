"""Fixtures for the tools tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools.analyzer_client import PolicyPackProcess

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def pack_info() -> dict:
    """GetAnalyzerInfo of the real pack (started once per module)."""
    with PolicyPackProcess(ROOT / "policy") as pack:
        return pack.info()
