"""The ECS tasks a Step Functions state machine runs, read from its Amazon States Language.

A ``Task`` state whose ``Resource`` is the ECS integration (``arn:<partition>:states:::ecs:runTask``
with or without ``.sync`` / ``.waitForTaskToken``, or the SDK integration
``...:aws-sdk:ecs:runTask``) calls RunTask with its ``Parameters`` (JSONPath states) or
``Arguments`` (JSONata states). States nest in ``Parallel`` branches and ``Map`` processors
(``ItemProcessor``, or the older ``Iterator``). A field is a run-time value when JSONPath names it
``<Field>.$`` or JSONata writes it as ``{% ... %}``: the pack then cannot tell the launch and says
so, naming the state and the field. Definitions arrive as a JSON string (pulumi-aws
``definition``, aws-native ``definitionString``), a YAML string, or an object (aws-native
``definition``); ``${name}`` placeholders are filled from aws-native ``definitionSubstitutions``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from pulumi_policy.proxy import UnknownValueError

from .resources import present
from .values import UndecidableValueError, load_document

_ECS_RUN_TASK = re.compile(
    r"^arn:[a-z-]+:states:::(?:aws-sdk:)?ecs:runTask(?:\.sync|\.waitForTaskToken)?$"
)
_BATCH_SUBMIT_JOB = re.compile(
    r"^arn:[a-z-]+:states:::(?:aws-sdk:)?batch:submitJob(?:\.sync|\.waitForTaskToken)?$"
)
_SUBSTITUTION = re.compile(r"\$\{([A-Za-z0-9_.-]+)\}")


@dataclass(frozen=True)
class EcsState:
    """One state that runs an ECS task: its name, its RunTask parameters (plain values), and
    whether they are written in JSONata."""

    name: str
    parameters: Mapping[str, Any] | None
    jsonata: bool
    whole: str | None = None  # the run-time expression when all of the parameters are one

    def field(self, key: str) -> tuple[Any, str | None]:
        """(the field's value, None) or (None, how it is set at run time)."""
        if self.whole is not None:
            return None, f"Arguments = {self.whole}"
        params = self.parameters or {}
        if f"{key}.$" in params:
            return None, f"{key}.$ = {params[f'{key}.$']}"
        value = params.get(key)
        if self.jsonata and isinstance(value, str) and value.strip().startswith("{%"):
            return None, f"{key} = {value}"
        return value, None


def parse(
    definition: Any, substitutions: Mapping[str, Any] | None = None, key: str = "definition"
) -> Mapping[str, Any]:
    """A definition (the input ``key``) as a mapping ({} when it is no object; text that is
    neither a JSON nor a YAML object raises ``UndecidableValueError``), with
    ``${name}`` replaced from ``substitutions`` in the text, or in every string of an object
    (CloudFormation substitutes the ``Definition`` object's strings as it does the text)."""
    if isinstance(definition, Mapping) and substitutions:
        return _substituted(definition, substitutions)
    if isinstance(definition, str):
        text = definition
        if substitutions:
            text = _SUBSTITUTION.sub(lambda m: str(substitutions.get(m.group(1), m.group(0))), text)
        value = load_document(text)
        if value is None:
            raise UndecidableValueError([key], "is neither a JSON nor a YAML object")
        return value
    return definition if isinstance(definition, Mapping) else {}


class Unread:
    """A substituted value unknown at preview (or secret): raises its error when read."""

    def __init__(self, error: UnknownValueError) -> None:
        self.error = error


def read(value: Any) -> Any:
    """A field's value; an :class:`Unread` one raises the error that made it unreadable."""
    if isinstance(value, Unread):
        raise value.error
    return value


def _substituted(value: Any, substitutions: Mapping[str, Any]) -> Any:
    if isinstance(value, str):
        whole = _SUBSTITUTION.fullmatch(value)
        if whole and present(substitutions, whole.group(1)):
            try:  # the value itself: an ARN unknown at preview stays unknown, not a string
                return substitutions[whole.group(1)]
            except UnknownValueError as error:
                return Unread(error)
        return _SUBSTITUTION.sub(lambda m: str(substitutions.get(m.group(1), m.group(0))), value)
    if isinstance(value, Mapping):
        return {k: _substituted(value[k], substitutions) for k in value}
    if isinstance(value, (list, tuple)):
        return [_substituted(v, substitutions) for v in value]
    return value


def ecs_states(definition: Mapping[str, Any]) -> Iterator[EcsState]:
    """Every state of the definition (nested ones included) that runs an ECS task."""
    top = str(definition.get("QueryLanguage", "JSONPath")).upper() == "JSONATA"
    yield from _walk(definition.get("States"), top, _ECS_RUN_TASK)


def batch_states(definition: Mapping[str, Any]) -> Iterator[EcsState]:
    """Every state of the definition (nested ones included) that submits an AWS Batch job
    (``batch:submitJob``, ``.sync`` or not, or the SDK integration): its ``JobDefinition`` and
    ``JobQueue`` are fields as a RunTask state's are."""
    top = str(definition.get("QueryLanguage", "JSONPath")).upper() == "JSONATA"
    yield from _walk(definition.get("States"), top, _BATCH_SUBMIT_JOB)


def _walk(states: Any, jsonata: bool, resource: re.Pattern[str]) -> Iterator[EcsState]:
    if not isinstance(states, Mapping):
        return
    for name, state in states.items():
        if not isinstance(state, Mapping):
            continue
        language = state.get("QueryLanguage")
        here = jsonata if language is None else str(language).upper() == "JSONATA"
        for branch in state.get("Branches") or ():
            if isinstance(branch, Mapping):
                yield from _walk(branch.get("States"), here, resource)
        for key in ("ItemProcessor", "Iterator"):
            inner = state.get(key)
            if isinstance(inner, Mapping):
                yield from _walk(inner.get("States"), here, resource)
        if state.get("Type") != "Task" or not resource.match(str(state.get("Resource", ""))):
            continue
        params = state.get("Arguments" if here else "Parameters")
        if isinstance(params, str):
            yield EcsState(str(name), None, here, whole=params)
        else:
            yield EcsState(str(name), params if isinstance(params, Mapping) else {}, here)
