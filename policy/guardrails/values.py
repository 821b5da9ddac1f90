"""Values that are set but that the pack cannot read, and the proxy that says so.

A secret the engine cannot decrypt arrives as ``[secret]``; a document (container definitions,
a job's properties, a state machine definition, an OpenAPI body) may not parse. Either is
undecidable, never "unset" nor "empty": reading it raises :class:`UndecidableValueError`, an
``UnknownValueError``, so every rule treats it as a value unknown at preview (a note, a
violation under ``unknowns: fail-closed``).
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

import yaml
from pulumi_policy import proxy as proxy_module
from pulumi_policy.deserialize import (
    SPECIAL_SIG_KEY,
    _deserialize_property,  # pyright: ignore[reportPrivateUsage]
)
from pulumi_policy.proxy import (
    UNKNOWN_STRING_VALUE,
    UnknownValueError,
    _DictProxy,  # pyright: ignore[reportPrivateUsage]
    _ListProxy,  # pyright: ignore[reportPrivateUsage]
)

#: What the engine shows for a secret it cannot decrypt: ``pulumi policy analyze`` and a state
#: exported without ``--show-secrets`` hold every secret as this string, whatever its type.
REDACTED = "[secret]"


class UndecidableValueError(UnknownValueError):
    """A value that is set but that the pack cannot read: a secret shown as ``[secret]``, or a
    document (container definitions, a job's properties) that does not parse.

    It is an ``UnknownValueError``, so every rule treats it as it treats a value unknown at
    preview (a note, "cannot verify" under ``unknowns: fail-closed``), except that it is never
    read as "unset": :func:`stored` re-raises it even without a recorded dependency.
    """

    def __init__(self, props: Sequence[str], why: str) -> None:
        super().__init__(UNKNOWN_STRING_VALUE, [str(p) for p in props])
        self.message = f"value at .{'.'.join(str(p) for p in props)} {why}"


_SECRET_WHY = "is a secret the pack cannot read ([secret])"


#: pulumi_policy's unknown sentinels (one per type) and the redacted secret: what raises.
_UNREADABLE = frozenset(
    {
        proxy_module.UNKNOWN_BOOLEAN_VALUE,
        proxy_module.UNKNOWN_NUMBER_VALUE,
        proxy_module.UNKNOWN_STRING_VALUE,
        proxy_module.UNKNOWN_ARRAY_VALUE,
        proxy_module.UNKNOWN_ASSET_VALUE,
        proxy_module.UNKNOWN_ARCHIVE_VALUE,
        proxy_module.UNKNOWN_OBJECT_VALUE,
        REDACTED,
    }
)


def _checked(value: Any, path: list[str], key: Any) -> Any:
    if isinstance(value, str) and value in _UNREADABLE:
        if value == REDACTED:
            raise UndecidableValueError([*path, str(key)], _SECRET_WHY)
        raise UnknownValueError(value, [*path, str(key)])
    return value


class _Readable:
    """What the readable proxies add to pulumi_policy's (same errors, same ``__target``): a
    ``[secret]`` value raises :class:`UndecidableValueError`."""

    def __init__(self, target: Any, path: list[str]) -> None:
        super().__init__(target, path)  # pyright: ignore[reportCallIssue]
        self._target = target
        self._path = path

    def __getitem__(self, key: Any) -> Any:
        if key == "__target":
            return self._target
        return _checked(self._target[key], self._path, key)


class _ReadableDict(_Readable, _DictProxy):
    """A mapping of deserialised properties."""


class _ReadableList(_Readable, _ListProxy):
    """A list of deserialised properties."""


def readable_proxy(value: Any, path: tuple[str, ...] = ()) -> Any:
    """Deserialised properties as the rules read them: pulumi_policy's unknown-checking proxy
    (an unknown raises ``UnknownValueError``) that also raises on ``[secret]``."""
    if isinstance(value, list):
        items = [readable_proxy(v, (*path, str(i))) for i, v in enumerate(value)]
        return _ReadableList(items, list(path))
    if isinstance(value, dict):
        return _ReadableDict(
            {k: readable_proxy(v, (*path, str(k))) for k, v in value.items()}, list(path)
        )
    return value


def readable_struct(struct: Any, path: tuple[str, ...] = ()) -> Any:
    """A request's protobuf ``Struct`` read straight into the readable proxy: what
    ``readable_proxy(deserialize_properties(MessageToDict(struct)))`` builds (numbers as floats,
    a NaN or infinite number refused, secrets, assets and archives as pulumi_policy reads them),
    in one pass instead of three trees: decoding was most of the pack's own cost on a large
    stack."""
    fields = struct.fields
    if path and SPECIAL_SIG_KEY in fields:  # a secret, asset or archive: the SDK's reading
        plain = {key: _plain(value) for key, value in fields.items()}
        return readable_proxy(_deserialize_property(plain), path)
    return _ReadableDict(
        {key: _readable_value(value, (*path, key)) for key, value in fields.items()}, list(path)
    )


def _readable_value(value: Any, path: tuple[str, ...]) -> Any:
    kind = value.WhichOneof("kind")
    if kind == "string_value":
        return value.string_value
    if kind == "struct_value":
        return readable_struct(value.struct_value, path)
    if kind == "list_value":
        items = value.list_value.values
        return _ReadableList(
            [_readable_value(item, (*path, str(i))) for i, item in enumerate(items)], list(path)
        )
    return _scalar(value, kind)


def _plain(value: Any) -> Any:
    """A protobuf ``Value`` as ``MessageToDict`` reads it."""
    kind = value.WhichOneof("kind")
    if kind == "struct_value":
        return {key: _plain(item) for key, item in value.struct_value.fields.items()}
    if kind == "list_value":
        return [_plain(item) for item in value.list_value.values]
    return _scalar(value, kind)


def _scalar(value: Any, kind: str | None) -> Any:
    if kind == "string_value":
        return value.string_value
    if kind == "number_value":
        number = value.number_value
        if math.isinf(number) or math.isnan(number):
            raise ValueError(f"Fail to serialize {number} for Value.number_value")
        return number
    if kind == "bool_value":
        return value.bool_value
    return None  # null_value, or no kind set: MessageToDict reads both as null


@functools.lru_cache(maxsize=256)
def load_document(text: str) -> Mapping[str, Any] | None:
    """A document's text (a state machine definition, an OpenAPI body) as a mapping: JSON,
    else YAML; None when it is neither an object in JSON nor in YAML. Cached: every rule that
    reads a document reads it again, and YAML is slow to parse."""
    try:
        value = json.loads(text)
    except ValueError:
        try:
            value = yaml.safe_load(text)
        except yaml.YAMLError:
            return None
    return value if isinstance(value, Mapping) else None


def parse_document(value: Any, path: Sequence[str]) -> Any:
    """A JSON document given as a string (pulumi-aws container definitions, Batch properties)
    as its value; any other value as it is. A string that does not parse cannot be judged:
    it raises :class:`UndecidableValueError` naming ``path`` (never "nothing there")."""
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except ValueError:
        shown = value if len(value) <= 40 else value[:37] + "..."
        raise UndecidableValueError(path, f"is not JSON ({shown!r})") from None
