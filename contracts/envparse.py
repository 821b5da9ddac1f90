"""Reading a task environment in the image entrypoints: one error type, one line per problem.

The engine entrypoints validate their environment with these before building the engine's
command line; an invalid variable exits 2 with one `entrypoint:` line (`log`) naming it. Python 3.10
compatible (the Neuron image's interpreter).
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Mapping
from typing import cast


class ConfigError(ValueError):
    """Invalid task environment; the message names the variable."""


def required(env: Mapping[str, str], name: str) -> str:
    """The stripped value of `name`; ConfigError when unset or blank."""
    value = env.get(name, "").strip()
    if not value:
        raise ConfigError(f"{name} is required")
    return value


def positive_int(env: Mapping[str, str], name: str, default: int | None = None) -> int:
    """`name` as a positive integer; `default` when unset (required when default is None)."""
    raw = env.get(name, "").strip()
    if not raw and default is not None:
        return default
    if not re.fullmatch(r"[0-9]+", raw) or int(raw) < 1:
        raise ConfigError(f"{name} must be a positive integer, got {raw!r}")
    return int(raw)


def json_list(env: Mapping[str, str], name: str) -> list[object]:
    """`name` as a JSON list; [] when unset."""
    raw = env.get(name, "").strip()
    if not raw:
        return []
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{name} is not a JSON list: {exc}") from None
    if not isinstance(value, list):
        raise ConfigError(f"{name} must be a JSON list")
    return cast("list[object]", value)


def string_list(env: Mapping[str, str], name: str) -> list[str]:
    """`name` as a JSON list of strings; [] when unset."""
    value = json_list(env, name)
    if not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{name} must be a JSON list of strings")
    return cast("list[str]", value)


def log(message: str) -> None:
    """One `entrypoint: <message>` line on stderr (CloudWatch via awslogs)."""
    print(f"entrypoint: {message}", file=sys.stderr, flush=True)
