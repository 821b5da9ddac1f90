"""The registry every service module adds to, and the run over it.

`MAPPERS[token](inputs, physical_name)` returns the `ApiRequest`s the provider sends for a
resource; `RULES[token]` are the per-resource AWS rules botocore cannot express; `STACK_RULES`
need several resources. The helpers here turn recorded inputs into request members.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from tools.aws_shapes import (
    UNKNOWN,
    ShapeError,
    contains_unknown,
    validate_named_shape,
    validate_shape,
)

Inputs = Mapping[str, Any]


@dataclass(frozen=True)
class ApiRequest:
    """One call the provider makes: `service`/`operation` (botocore names) with `params`, or,
    with `shape=True`, a value checked against the named shape `operation` of `service`."""

    service: str
    operation: str
    params: Any
    shape: bool = False


class Resource(Protocol):
    """What the checks read of a recorded registration (tools.recording.RecordedResource)."""

    @property
    def type(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def urn(self) -> str: ...
    @property
    def inputs(self) -> dict[str, Any]: ...
    @property
    def outputs(self) -> dict[str, Any]: ...


@dataclass(frozen=True)
class Finding:
    """One thing the provider or AWS would refuse, on one resource."""

    type: str
    name: str
    check: str
    message: str
    config_paths: tuple[str, ...] = field(default=())

    def __str__(self) -> str:
        where = f" (config: {', '.join(self.config_paths)})" if self.config_paths else ""
        return f"{self.type} '{self.name}': {self.check}: {self.message}{where}"


Mapper = Callable[[Inputs, "str | None"], list[ApiRequest]]


ResourceRule = Callable[[Inputs, "str | None"], Iterable[str]]


# Adjustable AWS quotas a stack rule checks against, by name, when the account's differ from
# the defaults (e.g. {"rules_per_alb": 200}).
Quotas = Mapping[str, int]


StackRule = Callable[[Sequence[Resource], Quotas], Iterable[tuple[Resource, str]]]


MAPPERS: dict[str, Mapper] = {}


RULES: dict[str, list[ResourceRule]] = defaultdict(list)


STACK_RULES: list[StackRule] = []


def maps(*tokens: str) -> Callable[[Mapper], Mapper]:
    """Register the request mapper of one or more type tokens."""

    def register(fn: Mapper) -> Mapper:
        for token in tokens:
            MAPPERS[token] = fn
        return fn

    return register


def rule(*tokens: str) -> Callable[[ResourceRule], ResourceRule]:
    """Register an AWS rule (beyond botocore) for one or more type tokens."""

    def register(fn: ResourceRule) -> ResourceRule:
        for token in tokens:
            RULES[token].append(fn)
        return fn

    return register


def stack_rule(fn: StackRule) -> StackRule:
    """Register an AWS rule that spans several resources."""
    STACK_RULES.append(fn)
    return fn


def known(value: Any) -> bool:
    return value is not None and value != UNKNOWN


def drop_none(d: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if v is not None}


def single(block: Any) -> Any:
    """A Terraform single-nested block: an object in Pulumi, sometimes a one-item list."""
    if isinstance(block, list):
        return block[0] if block else None
    return block


def tags(value: Any, key: str = "Key", val: str = "Value") -> Any:
    if value == UNKNOWN:
        return UNKNOWN
    return [{key: k, val: v} for k, v in value.items()] if value else None


def as_int(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def attributes(pairs: Mapping[str, Any]) -> list[dict[str, str]] | None:
    """ELBv2 attribute list (`Key`/`Value` strings) from known values."""
    out = []
    for key, value in pairs.items():
        if not known(value):
            continue
        text = ("true" if value else "false") if isinstance(value, bool) else str(as_int(value))
        out.append({"Key": key, "Value": text})
    return out or None


def problems_of(request: ApiRequest) -> list[str]:
    """botocore's findings for one request (empty when AWS would accept its shape)."""
    try:
        if request.shape:
            validate_named_shape(
                request.service, request.operation, request.params, skip_unknown=True
            )
        else:
            validate_shape(request.service, request.operation, request.params, skip_unknown=True)
    except ShapeError as exc:
        return [f"{exc.where}: {line}" for line in exc.report.splitlines() if line.strip()]
    return []


def _string_attributes(pairs: Mapping[str, Any]) -> dict[str, Any] | None:
    """SNS/SQS `Attributes`: a map of strings (numbers and booleans as their text)."""
    out: dict[str, Any] = {}
    for key, value in pairs.items():
        if value is None:
            continue
        if isinstance(value, bool):
            out[key] = "true" if value else "false"
        elif isinstance(value, (int, float)):
            out[key] = str(as_int(value))
        else:
            out[key] = value
    return out or None


def resource_problems(type_: str, inputs: Inputs, physical_name: str | None) -> list[str]:
    """Every request and rule problem AWS would report for one resource (empty: accepted)."""
    found: list[str] = []
    mapper = MAPPERS.get(type_)
    if mapper is not None:
        try:
            requests = mapper(inputs, physical_name)
        except ShapeError as exc:
            return [f"{exc.where}: {exc.report}"]
        except (AttributeError, TypeError, KeyError):
            # A block still unknown at preview time cannot be mapped; it is checked when known.
            if not contains_unknown(inputs):
                raise
            requests = []
        for request in requests:
            found += problems_of(request)
    for check in RULES.get(type_, ()):
        found += list(check(inputs, physical_name))
    return found


def stack_problems(
    resources: Sequence[Resource], quotas: Quotas | None = None
) -> list[tuple[Resource, str]]:
    """Problems that span several resources (priorities, quotas, totals)."""
    return [item for check in STACK_RULES for item in check(resources, quotas or {})]


def covered_types() -> set[str]:
    """Type tokens with a request mapper."""
    return set(MAPPERS)
