"""Loading `ecs-inference:platform`: the raw stack setting validated into a `StackConfig`, every
pydantic error turned into a `ConfigIssue` whose path is the config path the user edits
(`platform.models.llama.maxModelLen`), all of them raised as one `ConfigError` before any resource
is registered. Checks that need the instance catalog or the sizing method (does the model fit its
pool?) run in the plan, also before any resource.
"""

from __future__ import annotations

import typing
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic.alias_generators import to_camel

from ecs_inference.config.base import ROOT, Section
from ecs_inference.config.fargate import fargate_key_issues
from ecs_inference.config.issues import ConfigError, ConfigIssue, Issues
from ecs_inference.config.pools import managed_instance_option_issues
from ecs_inference.config.stack import StackConfig, check_references


def _path(loc: tuple[Any, ...]) -> str:
    parts = [ROOT]
    for item in loc:
        if isinstance(item, int):
            parts[-1] += f"[{item}]"
        elif item in ("[key]",):
            continue
        else:
            parts.append(str(item))
    return ".".join(parts)


def _allowed_keys(loc: tuple[Any, ...]) -> list[str]:
    """Keys valid at the parent of `loc`, by walking the schema (for 'unknown key' hints)."""
    model: Any = StackConfig
    keyed = False  # the last step was a map: this item is one of its keys
    for item in loc[:-1]:
        if keyed:
            keyed = False
            continue
        if not (isinstance(model, type) and issubclass(model, Section)):
            return []
        field = next((f for n, f in model.model_fields.items() if item in (n, f.alias)), None)
        model = field.annotation if field is not None else model.registered_keys().get(str(item))
        keyed = typing.get_origin(model) is dict
        # unwrap dict[Name, X] / X | None to X
        args = typing.get_args(model)
        if args:
            model = next(
                (a for a in reversed(args) if isinstance(a, type) and issubclass(a, BaseModel)),
                model,
            )
    if isinstance(model, type) and issubclass(model, BaseModel):
        keys = {f.alias or n for n, f in model.model_fields.items()}
        if issubclass(model, Section):
            keys |= {k for k in model.registered_keys() if k == to_camel(k)}
        return sorted(keys)
    return []


_MSG_WORDS = (
    ("Input should be", "must be"),
    ("greater than or equal to", ">="),
    ("less than or equal to", "<="),
    ("greater than", ">"),
    ("less than", "<"),
)


def _message(err: Mapping[str, Any]) -> str:
    kind = err["type"]
    if kind == "missing":
        return "is required but missing; add it (see the configuration reference in README.md)"
    if kind == "extra_forbidden":
        allowed = _allowed_keys(err["loc"])
        hint = f"; valid keys here: {', '.join(allowed)}" if allowed else ""
        return f"unknown key{hint}"
    msg = err["msg"]
    if msg.startswith("Value error, "):
        return msg[len("Value error, ") :]
    if msg.startswith("Assertion failed, "):
        return msg[len("Assertion failed, ") :]
    for long, short in _MSG_WORDS:
        msg = msg.replace(long, short)
    got = err.get("input")
    if isinstance(got, (str, int, float, bool)) or got is None:
        return f"{msg[0].lower()}{msg[1:]} (got {got!r})"
    return f"{msg[0].lower()}{msg[1:]}"


def issues_from_validation_error(exc: ValidationError) -> list[ConfigIssue]:
    """One `ConfigIssue` per pydantic error, with camelCase config paths."""
    return [ConfigIssue(_path(tuple(e["loc"])), _message(e)) for e in exc.errors()]


def load_stack_config(raw: object, stack: str | None = None) -> StackConfig:
    """Validate the raw `ecs-inference:platform` value; raise one `ConfigError` listing all issues.

    `raw` is what `pulumi.Config("ecs-inference").get_object("platform")` returns (a dict),
    or None when the key is absent.
    """
    if raw is None:
        raise ConfigError(
            ConfigIssue(
                ROOT,
                "missing: set the structured key `ecs-inference:platform` in "
                f"Pulumi.{stack or '<stack>'}.yaml (see Pulumi.dev.yaml for a complete example)",
            ),
            stack,
        )
    if not isinstance(raw, dict):
        raise ConfigError(
            ConfigIssue(ROOT, f"must be a mapping of sections, got {type(raw).__name__}"), stack
        )
    raw, unsupported = managed_instance_option_issues(raw)
    raw, refused = fargate_key_issues(raw)
    issues = Issues([*unsupported, *refused])
    try:
        cfg = StackConfig.model_validate(raw)
    except ValidationError as exc:
        issues.extend(issues_from_validation_error(exc))
        raise ConfigError(issues, stack) from None
    check_references(cfg, issues)
    issues.raise_if_any(stack)
    return cfg
