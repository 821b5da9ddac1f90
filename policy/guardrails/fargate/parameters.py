"""What in a task or job definition Fargate refuses, read from the table of AWS's own lists.

The table (``aws_limits.FARGATE_TASK_PARAMETERS``, ``BATCH_FARGATE_JOB_PARAMETERS``) names each
parameter by its path in the RegisterTaskDefinition / RegisterJobDefinition request and says what
Fargate accepts there. Both providers take the request's camelCase names; where pulumi-aws
differs (a volume's ``hostPath``) the path is translated, and a JSON string met on the way
(pulumi-aws container definitions, Batch container and ECS properties) is parsed. Values are read
lazily: a value unknown at preview raises ``UnknownValueError`` from the read that needs it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pulumi_policy.proxy import UnknownValueError

from .. import aws_limits
from ..resources import get, is_native, stored
from ..values import UndecidableValueError, parse_document

#: pulumi-aws names that differ from the request's: path prefix -> pulumi-aws path prefix.
_AWS_PATHS = {"volumes[].host.sourcePath": "volumes[].hostPath"}
#: Which item a message names for each list it walks through (container and volume names).
_ITEM_NAME = ("name",)


def _steps(path: str, resource_type: str) -> list[str]:
    if not is_native(resource_type):
        path = _AWS_PATHS.get(path, path)
    return path.split(".")


_Reads = dict[tuple[int, str], tuple[Any, Any]]
"""Reads already made while one definition is checked: (id(node), what) -> (node, value)."""


def _read(reads: _Reads, node: Any, what: str, compute: Callable[[], Any]) -> Any:
    """``compute()``, once per node and ``what`` in one check: the table's paths share their
    first steps (19 start at ``containerDefinitions``), so a definition's containers are read,
    and their JSON parsed, once rather than once a path. The node is kept beside its value, so
    its id cannot be reused while the check runs; a read that raises is not kept, so it raises
    again, at the same path as before."""
    entry = reads.get((id(node), what))
    if entry is not None and entry[0] is node:
        return entry[1]
    value = compute()
    reads[(id(node), what)] = (node, value)
    return value


def _walk(
    node: Any,
    steps: Sequence[str],
    where: str,
    resource: Any,
    reads: _Reads,
    out: list[tuple[str, Any]],
) -> None:
    """Append to ``out`` (where, value) for each value at ``steps`` under ``node`` (None where
    absent). With ``resource`` (a stack rule reading outputs), the top-level read is
    ``stored``: an Optional+Computed attribute the program did not set (``networkMode``) is
    unset."""
    if not steps:
        out.append((where, node))
        return
    head, rest = steps[0], steps[1:]
    if not isinstance(node, Mapping):
        return
    key = head.removesuffix("[]")
    listed = head.endswith("[]")
    parse = bool(rest) or listed

    def read() -> Any:
        value = stored(node, key, None, resource) if resource is not None else get(node, key)
        return parse_document(value, [where, key] if where else [key]) if parse else value

    value = _read(reads, node, f"{key}|{parse}", read)
    if not listed:
        _walk(value, rest, f"{where}.{key}" if where else key, None, reads, out)
        return
    if value is None:
        return
    if isinstance(value, (str, Mapping)) or not isinstance(value, Sequence):
        # ECS rejects it, and what it holds cannot be told: never "nothing refused".
        raise UndecidableValueError([where, key] if where else [key], "is not a list")
    # Iterated each time, as before (an unknown item raises where it did); a proxied list
    # holds its item proxies, so the reads below them are shared between paths.
    for index, item in enumerate(value):
        label = _read(reads, item, "label", lambda: _label(item, index))  # noqa: B023
        child = f"{where}.{key}[{label}]" if where else f"{key}[{label}]"
        _walk(item, rest, child, None, reads, out)


def _label(item: Any, index: int) -> str:
    if isinstance(item, Mapping):
        for key in _ITEM_NAME:
            name = get(item, key)
            if isinstance(name, str) and name:
                return repr(name)
    return str(index)


def _is_set(value: Any) -> bool:
    """Set: anything but absent, null, false or empty (a number, 0 included, is set)."""
    if value is None or value is False:
        return False
    if isinstance(value, (str, Mapping, Sequence)) and not isinstance(value, bool):
        return len(value) > 0
    return True


def _plain(value: Any) -> Any:
    """A proxied value as plain JSON-able data (for messages)."""
    if isinstance(value, Mapping):
        return {str(k): _plain(value[k]) for k in value}
    if isinstance(value, Sequence) and not isinstance(value, str):
        return [_plain(v) for v in value]
    return value


def _shown(value: Any) -> str:
    """A parameter's value in a message: ``GPU=1`` for resource requirements, else JSON."""
    plain = _plain(value)
    if (
        isinstance(plain, list)
        and plain
        and all(isinstance(v, dict) and "type" in v for v in plain)
    ):
        return ", ".join(f"{v['type']}={v.get('value')}" for v in plain)[:80]
    if isinstance(plain, (dict, list)):
        return json.dumps(plain, sort_keys=True, default=str)[:80]
    return str(plain)


def _accepted(value: Any, accepted: tuple[Any, ...]) -> bool:
    if isinstance(accepted[0], int):
        number = value if isinstance(value, (int, float)) and not isinstance(value, bool) else None
        return number is not None and accepted[0] <= number <= accepted[1]
    text = str(value).upper().removeprefix("CAP_")
    return text in {str(a).upper() for a in accepted}


def _check(where: str, value: Any, accepted: tuple[Any, ...], default: str | None) -> str | None:
    if not accepted:
        return f"{where}={_shown(value)} (Fargate: not supported)" if _is_set(value) else None
    if value is None:
        if default is None or _accepted(default, accepted):
            return None
        return f"{where} unset (ECS assumes {default}; Fargate accepts {', '.join(accepted)})"
    if _accepted(value, accepted):
        return None
    if isinstance(accepted[0], int):
        return f"{where}={value} (Fargate accepts {accepted[0]}-{accepted[1]})"
    return f"{where}={value} (Fargate accepts {', '.join(str(a) for a in accepted)})"


def _refusals(
    props: Mapping[str, Any],
    resource_type: str,
    table: Mapping[str, tuple[tuple[Any, ...], tuple[str, ...]]],
    defaults: Mapping[str, str],
    resource: Any = None,
) -> list[str]:
    """Every refusal among the values that can be read; when there is none and some value the
    table names could not be read (unknown, ``[secret]``, not JSON), the first such error is
    raised: what is known is judged, and what is not is never passed as clean."""
    found: list[str] = []
    reads: _Reads = {}
    unreadable: UnknownValueError | None = None
    for path, (accepted, _) in table.items():
        values: list[tuple[str, Any]] = []
        try:
            _walk(props, _steps(path, resource_type), "", resource, reads, values)
        except UnknownValueError as error:
            unreadable = unreadable or error
        for where, value in values:
            problem = _check(where, value, accepted, defaults.get(path))
            if problem:
                found.append(problem)
    if unreadable is not None and not found:
        raise unreadable
    return found


def task_refusals(props: Mapping[str, Any], resource_type: str, resource: Any = None) -> list[str]:
    """What Fargate refuses in an ECS task definition (empty: nothing). ``resource``: the
    task definition as a stack rule sees it (outputs; see ``_walk``)."""
    return _refusals(
        props,
        resource_type,
        aws_limits.FARGATE_TASK_PARAMETERS,
        aws_limits.FARGATE_TASK_PARAMETER_DEFAULTS,
        resource,
    )


def job_refusals(props: Mapping[str, Any], resource_type: str) -> list[str]:
    """What Fargate refuses in an AWS Batch job definition (empty: nothing)."""
    return _refusals(props, resource_type, aws_limits.BATCH_FARGATE_JOB_PARAMETERS, {})
