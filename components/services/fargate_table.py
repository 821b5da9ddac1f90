"""What Fargate refuses in a task definition, read from the table of AWS's own lists
(`contracts.aws_limits.FARGATE_TASK_PARAMETERS`): one reading for the refused keys of the Fargate
services' sections (`ecs_inference.services.fargate_keys`) and the tests.

A table entry names a parameter by its path in a RegisterTaskDefinition request (`[]`: every item
of a list) and says what Fargate accepts there: nothing (the parameter must be unset: absent,
null, false or empty), some values (case-insensitive; a capability may carry the `CAP_` prefix)
or an inclusive integer range. A parameter the request leaves unset takes ECS's default
(`FARGATE_TASK_PARAMETER_DEFAULTS`: an unset `networkMode` is `bridge`, which Fargate refuses).

The policy pack reads the same table with its own copy of this logic
(`policy/guardrails/fargate/parameters.py`: the pack runs alone); a test runs both on every corpus
value. Pure functions; no Pulumi import.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ecs_inference.contracts import aws_limits

PARAMETERS = aws_limits.FARGATE_TASK_PARAMETERS
DEFAULTS = aws_limits.FARGATE_TASK_PARAMETER_DEFAULTS
CONTAINERS = "containerDefinitions[]"
"""The first step of every container-level path."""
GUIDE = 'the ECS developer guide, "Amazon ECS task definition differences for Fargate"'
"""What the table's `guide` source names."""

Step = str | int
"""One step into a request: a key, or the index of a list item."""


def cited(sources: Iterable[str]) -> str:
    """The table's sources as a reader finds them: the guide page, botocore's members."""
    parts: list[str] = []
    members = []
    for source in sources:
        if source == "guide":
            parts.append(GUIDE)
        else:
            members.append(source.removeprefix("botocore:"))
    if members:
        parts.append(f"botocore's ECS model: {', '.join(members)}")
    return "; ".join(parts)


def rule(parameter: str, where: str | None = None) -> str:
    """What Fargate accepts at the table path `parameter` (named `where`, default the path), as
    a clause: `does not support <where>`, `accepts only awsvpc at <where>`."""
    accepted = PARAMETERS[parameter][0]
    where = where or parameter
    if not accepted:
        return f"does not support {where}"
    if isinstance(accepted[0], int):
        return f"accepts only {accepted[0]}-{accepted[1]} at {where}"
    return f"accepts only {' or '.join(str(a) for a in accepted)} at {where}"


def _is_set(value: Any) -> bool:
    """Set: anything but absent, null, false or empty (a number, 0 included, is set)."""
    if value is None or value is False:
        return False
    if isinstance(value, (str, Mapping, Sequence)):
        return len(value) > 0
    return True


def accepts(parameter: str, value: Any) -> bool:
    """Whether Fargate accepts `value` (None: unset) at the table path `parameter`."""
    accepted = PARAMETERS[parameter][0]
    if not accepted:
        return not _is_set(value)
    if value is None:
        default = DEFAULTS.get(parameter)
        return default is None or accepts(parameter, default)
    low, high = accepted[0], accepted[-1]
    if isinstance(low, int) and isinstance(high, int):
        number = value if isinstance(value, (int, float)) and not isinstance(value, bool) else None
        return number is not None and low <= number <= high
    text = str(value).upper().removeprefix("CAP_")
    return text in {str(a).upper() for a in accepted}


@dataclass(frozen=True)
class Refusal:
    """One value Fargate refuses: the table's `parameter`, the `steps` to it in the request
    (container and volume items by index), the `value` found (None: unset, ECS's default
    applies) and, for messages, the `where` with items by name."""

    parameter: str
    steps: tuple[Step, ...]
    where: str
    value: Any

    @property
    def sources(self) -> tuple[str, ...]:
        return PARAMETERS[self.parameter][1]

    def shown(self) -> str:
        """The value as JSON, or `unset (ECS assumes <default>)`."""
        if self.value is None:
            return f"unset (ECS assumes {DEFAULTS.get(self.parameter)})"
        return json.dumps(self.value, sort_keys=True, default=str)[:80]


def _parsed(value: Any) -> Any:
    """A JSON string (pulumi-aws passes container definitions as one) as its value."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return None
    return value


def _label(item: Any, index: int) -> str:
    name = item.get("name") if isinstance(item, Mapping) else None
    return repr(name) if isinstance(name, str) and name else str(index)


def values_at(
    node: Any, steps: Sequence[str], at: tuple[Step, ...] = (), where: str = ""
) -> Iterator[tuple[tuple[Step, ...], str, Any]]:
    """(steps, where, value) for each value at the table path `steps` under `node`; None where
    the last key is absent. A list (or a JSON string of one) met at `x[]` is walked item by
    item; a path through anything else ends there."""
    if not steps:
        yield at, where, node
        return
    head, rest = steps[0], steps[1:]
    if not isinstance(node, Mapping):
        return
    key = head.removesuffix("[]")
    here = f"{where}.{key}" if where else key
    value = node.get(key)
    if rest or head.endswith("[]"):
        value = _parsed(value)
    if not head.endswith("[]"):
        yield from values_at(value, rest, (*at, key), here)
        return
    if isinstance(value, (str, Mapping)) or not isinstance(value, Sequence):
        return
    for index, item in enumerate(value):
        yield from values_at(item, rest, (*at, key, index), f"{here}[{_label(item, index)}]")


def task_refusals(
    request: Mapping[str, Any], parameters: Iterable[str] | None = None
) -> list[Refusal]:
    """What Fargate refuses in `request` (RegisterTaskDefinition, camelCase; container
    definitions as a list or a JSON string), in table order; `parameters` (default: the whole
    table) limits the check to those table paths."""
    found: list[Refusal] = []
    for parameter in PARAMETERS if parameters is None else parameters:
        for steps, where, value in values_at(request, parameter.split(".")):
            if not accepts(parameter, value):
                found.append(Refusal(parameter, steps, where, value))
    return found


def parameter_names() -> dict[str, tuple[str, ...]]:
    """Each name a table path is made of -> the table paths through it: every step but the
    container list itself and a final list of plain values (`capabilities.add[]` is named by
    `capabilities`). What a config key that names an ECS parameter is matched against."""
    names: dict[str, list[str]] = {}
    for parameter in PARAMETERS:
        steps = parameter.split(".")
        if steps[0] == CONTAINERS:
            steps = steps[1:]
        if steps[-1].endswith("[]"):
            steps = steps[:-1]
        for step in steps:
            names.setdefault(step.removesuffix("[]"), []).append(parameter)
    return {name: tuple(paths) for name, paths in names.items()}


def probe(parameter: str, name: str, value: Any) -> tuple[dict[str, Any], int]:
    """A request with `value` at the step `name` of the table path `parameter` (each `[]` step
    before it a one-item list), and how many of a refusal's `steps` lead to `value` (the rest
    are inside it): how a config key's value is judged as the parameter it names."""
    steps = parameter.split(".")
    index = next(i for i, s in enumerate(steps) if s.removesuffix("[]") == name)
    node: dict[str, Any] = {name: value}
    for step in reversed(steps[:index]):
        key = step.removesuffix("[]")
        node = {key: [node] if step.endswith("[]") else node}
    return node, sum(2 if s.endswith("[]") else 1 for s in steps[:index]) + 1
