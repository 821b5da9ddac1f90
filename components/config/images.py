"""`platform.images`: the default image per engine, or the stack's own build of them."""

from __future__ import annotations

from ecs_inference.config.base import Image, Section


class ImagesConfig(Section):
    """Default container images per engine; a service may override with its own `image`.

    Pin by tag or digest (CI feeds digests from the image build). With `build: true` the stack
    builds and pushes the images its services need instead (see `build`)."""

    build: bool = False
    """Build the images from this repository's `images/<engine>/` and push them to ECR
    repositories the stack owns (needs Docker with buildx where `pulumi up` runs); false: CI
    builds and feeds digests. An explicit reference still wins: a service's own `image`, then
    `images.vllm`/`neuron`/`reranker`; only images no service gets that way are built."""

    vllm: Image | None = None
    """Image for `engine: vllm` services (built from images/vllm)."""
    neuron: Image | None = None
    """Image for `engine: neuron` services (built from images/neuron)."""
    reranker: Image | None = None
    """Image for re-rankers (built from images/reranker)."""
    sglang: Image | None = None
    """Image for `engine: sglang` services (built from images/sglang)."""
    tgi: Image | None = None
    """Image for `engine: tgi` services (built from images/tgi)."""
    metrics: Image | None = None
    """Metrics sidecar image, run next to every model and re-ranker (built from images/metrics,
    for x86_64 and ARM64). Needed unless `operations.metricsSidecar` is false."""
