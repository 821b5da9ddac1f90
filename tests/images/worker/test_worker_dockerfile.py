"""The example worker image: hadolint-clean, pinned base and dependencies, non-root, and the
program it runs imports nothing the image does not install."""

from __future__ import annotations

import re
import sys
from importlib import metadata
from pathlib import Path

from tests.images.engine_images import assert_hadolint_clean

IMAGE_DIR = Path(__file__).resolve().parents[3] / "images" / "worker"
DOCKERFILE = IMAGE_DIR / "Dockerfile"
REQUIREMENTS = IMAGE_DIR / "requirements.txt"


def test_dockerfile_passes_hadolint():
    assert_hadolint_clean(DOCKERFILE)


def test_pinned_base_non_root_and_the_worker_as_entry_point():
    text = DOCKERFILE.read_text()
    assert re.search(r"^ARG PYTHON_IMAGE=python:\d+\.\d+\.\d+-slim-\w+$", text, re.M)
    users = re.findall(r"^USER (\S+)$", text, re.M)
    assert users and all(not u.startswith(("0", "root")) for u in users)
    assert users[-1].split(":")[0] != "0"
    assert 'ENTRYPOINT ["python", "/srv/worker.py"]' in text
    assert "STOPSIGNAL SIGTERM" in text


def test_dependencies_are_pinned_to_what_the_tests_run():
    pins = dict(
        line.split("==")
        for line in REQUIREMENTS.read_text().splitlines()
        if line and not line.startswith("#")
    )
    assert pins, "no pins"
    for name, version in pins.items():
        # The image installs exactly what the worker's tests exercised.
        assert metadata.version(name) == version, name
    imports = set(
        re.findall(r"^\s*(?:from|import) (\w+)", (IMAGE_DIR / "worker.py").read_text(), re.M)
    )
    third_party = imports - set(sys.stdlib_module_names) - {"__future__"}
    assert third_party == {"botocore"}
    assert "botocore" in pins
