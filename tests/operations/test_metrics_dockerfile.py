"""The metrics sidecar image: hadolint-clean, stdlib only, non-root as the task definition says."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from ecs_inference.operations import sidecar as obs
from tests.images.engine_images import assert_hadolint_clean

IMAGE_DIR = Path(__file__).resolve().parents[2] / "images" / "metrics"
DOCKERFILE = IMAGE_DIR / "Dockerfile"


def test_dockerfile_passes_hadolint():
    assert_hadolint_clean(DOCKERFILE)


def test_image_runs_the_stdlib_sidecar_as_the_task_definition_s_user():
    text = DOCKERFILE.read_text()
    assert re.search(r"^ARG PYTHON_IMAGE=python:[\d.]+-slim-\w+$", text, re.M)  # pinned tag
    assert not re.search(r"pip install|requirements", text.split("FROM", 1)[1])  # stdlib only
    (user,) = re.findall(r"^USER (\S+)$", text, re.M)
    assert user == obs.SIDECAR_USER
    assert 'ENTRYPOINT ["python", "/srv/emf_sidecar.py"]' in text
    assert {p.name for p in IMAGE_DIR.iterdir()} == {
        "Dockerfile",
        ".dockerignore",
        "emf_sidecar.py",
    }
    imports = set(
        re.findall(r"^(?:from|import) (\w+)", (IMAGE_DIR / "emf_sidecar.py").read_text(), re.M)
    )
    assert imports <= set(sys.stdlib_module_names) | {"__future__"}, imports
