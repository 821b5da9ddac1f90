"""What every config section shares: camelCase keys, unknown keys refused, frozen values, and the
value types several sections use (short names, S3 URIs, pinned images, secret ARNs).

Field docstrings document each key; tools/config_reference.py reads them from the sections'
source into the README. (pydantic's use_attribute_docstrings would do the same at import, parsing
the sources on every `pulumi up`; the reference is built offline instead.) A key's default is
written once: on its field, or, for a key the service sections share, in the section's own
`DEFAULTS` (`services/input.py::ServiceConfig`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Annotated, Any, TypeVar, cast

from pydantic import AfterValidator, BaseModel, ConfigDict, ValidationError
from pydantic.alias_generators import to_camel
from pydantic_core import ErrorDetails, InitErrorDetails

from ecs_inference.contracts import aws_limits
from ecs_inference.names import NAME_PATTERN

S = TypeVar("S")
T = TypeVar("T")

ROOT = "platform"
"""The structured stack setting `ecs-inference:platform`: the first part of every config path."""

S3_URI_PATTERN = aws_limits.S3_URI
SECRET_ARN_PATTERN = aws_limits.SECRETS_MANAGER_ARN
IMAGE_PATTERN = re.compile(r"^[a-z0-9][a-z0-9._/:-]*(@sha256:[a-f0-9]{64})?$")


def _name(value: str) -> str:
    if not NAME_PATTERN.match(value):
        raise ValueError(
            "must be 2-21 characters of lowercase letters, digits and '-', starting with a "
            "letter (it becomes part of resource names and the URL path)"
        )
    return value


def _s3_uri(value: str) -> str:
    if not S3_URI_PATTERN.match(value):
        raise ValueError("must be an S3 URI like s3://my-bucket/models/llama-3.1-8b/")
    return value


_IMAGE_EXAMPLE = "123456789012.dkr.ecr.us-east-1.amazonaws.com/vllm:v0.33.0"


def _image(value: str) -> str:
    """A pinned image reference; each refusal says what is wrong with the value given."""
    if not IMAGE_PATTERN.match(value):
        raise ValueError(
            f"{value!r} is not an image reference: lowercase registry/repository with a tag or "
            f"digest, like {_IMAGE_EXAMPLE}"
        )
    name = value.split("@", 1)[0].rsplit("/", 1)[-1]
    if "@" not in value and name.endswith(":latest"):
        raise ValueError(
            f"{value!r} is tagged 'latest', which names a different image after each push: pin "
            f"a version tag or a digest, like {_IMAGE_EXAMPLE}"
        )
    if "@" not in value and ":" not in name:
        raise ValueError(
            f"{value!r} has no tag or digest, so it pulls 'latest': pin a version tag or a "
            f"digest, like {_IMAGE_EXAMPLE}"
        )
    return value


def secret_arn(value: str | None) -> str | None:
    """`value` if it is a Secrets Manager secret ARN (or None); else the reason, raised."""
    if value is not None and not SECRET_ARN_PATTERN.match(value):
        raise ValueError(f"must be a Secrets Manager secret ARN, got {value!r}")
    return value


def secret_value(value: str | None) -> str | None:
    """`value` if it can be a secret's value (or None); else the reason, raised. A secret value
    may not look like an ARN: one that does is a mistyped reference."""
    if value is None:
        return None
    if value.startswith("arn:"):
        raise ValueError(
            "looks like an ARN but is not a Secrets Manager secret ARN "
            "(arn:aws:secretsmanager:<region>:<account>:secret:<name>)"
        )
    if not value:
        raise ValueError("is empty")
    if len(value) > aws_limits.SECRETS_MANAGER_SECRET_STRING_MAX:
        raise ValueError(
            f"is {len(value)} characters; a Secrets Manager secret holds at most "
            f"{aws_limits.SECRETS_MANAGER_SECRET_STRING_MAX}"
        )
    return value


Name = Annotated[str, AfterValidator(_name)]
S3Uri = Annotated[str, AfterValidator(_s3_uri)]
Image = Annotated[str, AfterValidator(_image)]


class Section(BaseModel):
    """Base of every config section: camelCase keys, unknown keys rejected, immutable."""

    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        alias_generator=to_camel,
        populate_by_name=True,
        str_strip_whitespace=True,
    )

    @classmethod
    def registered_keys(cls) -> dict[str, type[BaseModel] | None]:
        """Keys the section takes besides its fields, from what is registered at validation
        time (an engine's settings): key -> its schema when it is a section, else None."""
        return {}


def error_details(error: ErrorDetails, prefix: tuple[str | int, ...] = ()) -> InitErrorDetails:
    """A validation error of a nested schema, re-raised at `prefix` within its section (for
    sections that validate some keys with a schema of their own)."""
    details: InitErrorDetails = {
        "type": error["type"],
        "loc": (*prefix, *error["loc"]),
        "input": error["input"],
    }
    if "ctx" in error:
        details["ctx"] = error["ctx"]
    return details


def value_error(message: str) -> InitErrorDetails:
    """A `ValueError`-style validation error (`message`) at the section itself."""
    return {"type": "value_error", "loc": (), "input": None, "ctx": {"error": ValueError(message)}}


def raise_problems(
    title: str, problems: Sequence[tuple[tuple[str | int, ...], str | None]]
) -> None:
    """Raise every problem a model validator found inside its model at once, each at the deepest
    path holding the bad value: `(loc, message)` with `loc` below the model (camelCase keys,
    list indices); a None message is no problem. Nothing is raised without one."""
    errors: list[InitErrorDetails] = [
        {**value_error(message), "loc": loc} for loc, message in problems if message is not None
    ]
    if errors:
        raise ValidationError.from_exception_data(title, errors)


def validate_taking(
    title: str,
    data: Any,
    handler: Callable[[Any], S],
    take: Callable[[dict[str, Any]], tuple[T, list[InitErrorDetails]]],
) -> tuple[S, T | None]:
    """Run a wrap validator's `handler` on `data` without the keys `take` removes and validates
    itself (registered keys a section cannot declare as fields); every error of both, at its
    config path, is raised together. Returns the section and what `take` made of its keys
    (None when `data` is not a mapping)."""
    if not isinstance(data, Mapping):
        return handler(data), None
    rest = dict(cast("Mapping[str, Any]", data))
    taken, errors = take(rest)
    try:
        section = handler(rest)
    except ValidationError as exc:
        errors = [*errors, *(error_details(e) for e in exc.errors())]
        raise ValidationError.from_exception_data(title, errors) from None
    if errors:
        raise ValidationError.from_exception_data(title, errors)
    return section, taken
