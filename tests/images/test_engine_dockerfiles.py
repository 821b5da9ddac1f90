"""The engine images' Dockerfiles: hadolint-clean, and each copies its entrypoint and exactly the
contracts that entrypoint imports.
"""

from __future__ import annotations

import pytest

from tests.images.engine_images import (
    ENGINE_IMAGES,
    IMAGES,
    assert_hadolint_clean,
    contracts_imported,
    dockerfile_copies,
)


@pytest.mark.parametrize("image", ENGINE_IMAGES)
def test_dockerfile_passes_hadolint(image):
    assert_hadolint_clean(IMAGES / image / "Dockerfile")


@pytest.mark.parametrize("image", ENGINE_IMAGES)
def test_dockerfile_copies_the_entrypoint_and_exactly_the_contracts_it_imports(image):
    """The entrypoint comes from the image's own context; what it imports from `contracts/`
    (the keep-alive proxy and the weight staging included, transitively) comes from the one
    `contracts` named context, so no image carries a copy of shared code."""
    local, shared = dockerfile_copies(image)
    assert local == {"entrypoint.py"}
    assert sorted(p.name for p in (IMAGES / image).glob("*.py")) == ["entrypoint.py"]
    assert shared == contracts_imported(IMAGES / image / "entrypoint.py")
