"""The re-ranker Dockerfile: hadolint-clean and consistent with the container contract."""

from __future__ import annotations

import re
from pathlib import Path

from contracts import reranker as contract
from tests.images.engine_images import assert_hadolint_clean

IMAGE_DIR = Path(__file__).resolve().parents[3] / "images" / "reranker"
DOCKERFILE = IMAGE_DIR / "Dockerfile"


def test_dockerfile_passes_hadolint():
    assert_hadolint_clean(DOCKERFILE)


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
