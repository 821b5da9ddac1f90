"""`platform.images`: the default image per engine, or the stack's own build of them."""

from __future__ import annotations

from typing import Any

from pydantic import (
    BaseModel,
    ModelWrapValidatorHandler,
    PrivateAttr,
    TypeAdapter,
    ValidationError,
    model_validator,
)
from pydantic_core import InitErrorDetails

from ecs_inference import engines
from ecs_inference.config.base import Image, Section, error_details, validate_taking

_IMAGE = TypeAdapter(Image)


def engine_image_keys() -> tuple[str, ...]:
    """The `images.<engine>` keys: every registered engine with a default image."""
    return tuple(e.name for e in engines.registered() if e.default_image)


def _take_engine_images(rest: dict[str, Any]) -> tuple[dict[str, str], list[InitErrorDetails]]:
    """The `images.<engine>` keys out of `rest`, validated."""
    found: dict[str, str] = {}
    errors: list[InitErrorDetails] = []
    for key in engine_image_keys():
        value = rest.pop(key, None)
        if value is None:
            continue
        try:
            found[key] = _IMAGE.validate_python(value)
        except ValidationError as exc:
            errors += [error_details(e, (key,)) for e in exc.errors()]
    return found, errors


class ImagesConfig(Section):
    """Default container images per engine; a service may override with its own `image`.

    Pin by tag or digest (CI feeds digests from the image build). With `build: true` the stack
    builds and pushes the images its services need instead (see `build`). Each engine with an
    image under `images/<engine>` has its key here (`images.<engine>`, built from that
    directory)."""

    build: bool = False
    """Build the images from this repository's `images/<engine>/` and push them to ECR
    repositories the stack owns (needs Docker with buildx where `pulumi up` runs); false: CI
    builds and feeds digests. An explicit reference still wins: a service's own `image`, then
    `images.<engine>`/`reranker`; only images no service gets that way are built."""

    reranker: Image | None = None
    """Image for re-rankers (built from images/reranker)."""
    metrics: Image | None = None
    """Metrics sidecar image, run next to every model and re-ranker (built from images/metrics,
    for x86_64 and ARM64). Needed unless `operations.metricsSidecar` is false."""

    _engine_images: dict[str, str] = PrivateAttr(default_factory=dict)

    @model_validator(mode="wrap")
    @classmethod
    def _engine_keys(cls, data: Any, handler: ModelWrapValidatorHandler[ImagesConfig]) -> Any:
        """`images.<engine>` keys, each a pinned image."""
        images, found = validate_taking(cls.__name__, data, handler, _take_engine_images)
        images._engine_images = found or {}
        return images

    @classmethod
    def registered_keys(cls) -> dict[str, type[BaseModel] | None]:
        """`images.<engine>` of every registered engine with a default image."""
        return dict.fromkeys(engine_image_keys())

    def for_engine(self, engine: str) -> str | None:
        """`images.<engine>`: the default image of the engine's services; None: unset."""
        return self._engine_images.get(engine)
