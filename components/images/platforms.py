"""Image build specs: which serving images a stack builds itself, and for which platforms.

The plan decides `Plan.builds` (image -> Docker platforms) from `images.build` and the services
that use each image; the component (`components.images.ImageBuilds`) builds and pushes them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from ecs_inference import engines
from ecs_inference.contracts import reranker as reranker_contract

# Build contexts, relative to the Pulumi project directory (the program's working directory), so
# the recorded inputs do not depend on where the repository is checked out.
IMAGES_DIR = "images"
# Named build contexts every image gets (`COPY --from=<name>` in a Dockerfile): the stdlib-only
# contracts the images share with the program, read from the repository, never copied by hand.
NAMED_CONTEXTS: Mapping[str, str] = {"contracts": "contracts"}
EXAMPLE_IMAGES: tuple[str, ...] = ("worker",)
"""Images under `images/` that are examples for users to copy, not platform images: no
`images.<name>` config key, not built by `images.build` or by CI, no digest fed to the stacks
(a queue worker's image is the user's own, `workers.<name>.image`; `images/worker` is where it
starts). Linted and tested like the others."""


# The metrics sidecar runs next to the engines (x86_64 hosts) and next to re-rankers on Fargate
# ARM64 or X86_64: one multi-platform index serves both.
_OWN_PLATFORMS: Mapping[str, tuple[str, ...]] = {"metrics": ("linux/amd64", "linux/arm64")}


def image_platforms() -> dict[str, tuple[str, ...]]:
    """Image -> Docker platforms, for every image the stack may build besides the re-ranker:
    each registered engine's that ships one (`Engine.image_platforms`), and the metrics
    sidecar's."""
    return {
        **{e.name: e.image_platforms for e in engines.registered() if e.default_image},
        **_OWN_PLATFORMS,
    }


# The re-ranker image is plain Python: it is built for each Fargate cpuArchitecture its services
# use (a multi-platform index when both are used). The default is contract.CPU_ARCHITECTURE.
RERANKER_PLATFORMS: Mapping[str, str] = {"ARM64": "linux/arm64", "X86_64": "linux/amd64"}
DEFAULT_RERANKER_PLATFORM = RERANKER_PLATFORMS[reranker_contract.CPU_ARCHITECTURE]


class ImageBuildError(ValueError):
    """An image build request the component cannot honour (unknown image, bad platform)."""


def reranker_platforms(architectures: Sequence[str]) -> tuple[str, ...]:
    """Docker platforms for the re-ranker services' Fargate `cpuArchitecture`s, sorted and
    de-duplicated; an empty list means the contract's default architecture."""
    archs = set(architectures) or {reranker_contract.CPU_ARCHITECTURE}
    unknown = archs - set(RERANKER_PLATFORMS)
    if unknown:
        raise ImageBuildError(f"no Docker platform for cpuArchitecture {sorted(unknown)}")
    return tuple(sorted(RERANKER_PLATFORMS[a] for a in archs))


_DIGEST_REFERENCE = re.compile(r"@sha256:[0-9a-f]{64}$")


def is_digest_reference(image: str) -> bool:
    """Whether `image` names one immutable manifest (`repo@sha256:<64 hex>`) rather than a tag."""
    return _DIGEST_REFERENCE.search(image) is not None
