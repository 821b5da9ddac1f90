"""Secrets the stack stores itself: a value of the stack config set with `pulumi config set
--secret` (`gateway.masterKey`, a service's `secrets.<NAME>`) is kept in a Secrets Manager
secret the stack creates, and the containers get it through the task definition's `secrets`,
never as plain environment.

Specs are plain values made before any resource exists, so a container's `secrets` entry names
such a secret by a reference (`stack-secret:<config path>`); the service component replaces
it with the created secret's ARN when it renders the task definition (`resolve`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ecs_inference.config.base import SECRET_ARN_PATTERN

REFERENCE_PREFIX = "stack-secret:"


@dataclass(frozen=True)
class StackSecret:
    """A secret value of the stack config, and where it was set."""

    path: str
    """Its config path (`platform.gateway.masterKey`)."""
    value: str = field(repr=False)
    """The plaintext: only ever handed to Pulumi as `Output.secret`, never printed."""

    @property
    def reference(self) -> str:
        """How specs name it (`stack-secret:<path>`)."""
        return reference(self.path)


def reference(path: str) -> str:
    """The reference of the stack's secret for the value at config `path`."""
    return f"{REFERENCE_PREFIX}{path}"


def is_reference(value_from: str) -> bool:
    return value_from.startswith(REFERENCE_PREFIX)


def resolve(containers: list[dict[str, Any]], arns: Mapping[str, str]) -> list[dict[str, Any]]:
    """`containers` with each `secrets[].valueFrom` that is a reference replaced by the ARN
    the stack's secret got (`arns`: reference -> ARN). Raises KeyError naming a reference the
    stack made no secret for (a wiring bug, never a config problem)."""
    for container in containers:
        for entry in container.get("secrets") or ():
            value_from = entry["valueFrom"]
            if is_reference(value_from):
                if value_from not in arns:
                    raise KeyError(f"no secret was created for {value_from}")
                entry["valueFrom"] = arns[value_from]
    return containers


def secret_ref(path: str, value: str) -> str:
    """What a container's `secrets` entry names for the value at config `path`: the value if
    it is a Secrets Manager ARN, else the reference of the secret the stack creates for it."""
    return value if SECRET_ARN_PATTERN.match(value) else reference(path)


def secret_refs(base: str, secrets: Mapping[str, str]) -> dict[str, str]:
    """A service's `secrets` (env name -> ARN or value) as references; `base` is the
    service's config path."""
    return {name: secret_ref(f"{base}.secrets.{name}", v) for name, v in secrets.items()}
