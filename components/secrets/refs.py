"""Secrets the stack stores itself: a value of the stack config set with `pulumi config set
--secret` (`gateway.masterKey`, a service's `secrets.<NAME>`) is kept in an SSM Parameter
Store SecureString parameter the stack creates, and the containers get it through the task
definition's `secrets`, never as plain environment.

Specs are plain values made before any resource exists, so a container's `secrets` entry names
such a secret by a reference (`stack-secret:<config path>@<revision>`); the service component
replaces it with the parameter's ARN when it renders the task definition (`resolve`), and
labels the container with the revision of every stack secret it reads.

Why a revision: ECS reads `secrets` only when a task starts, and accepts no version in an SSM
`valueFrom` (a name or an ARN; a `:<version>` suffix is refused as an invalid name), so a
changed value would reach only the tasks started after it. The revision changes with the
value, so the task definitions of exactly the containers that read it change, and their
services roll. It is a salted, slow fingerprint (`REVISION_ROUNDS` rounds of PBKDF2-HMAC-SHA256
over the value, salted with the config path, `REVISION_HEX` hex digits): it tells a reader of
the task definition nothing a guess of the value could not test at that cost, and it is known
at preview, so the task definition of a new stack is known too.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ecs_inference.config.base import SECRET_ARN_PATTERN

REFERENCE_PREFIX = "stack-secret:"
REVISION_LABEL = "ecs-inference.secret-revisions"
"""The docker label of a container that reads stack secrets: `<ENV>=<revision>` for each,
comma-separated, sorted by name."""
REVISION_ROUNDS = 100_000
REVISION_HEX = 12


@dataclass(frozen=True)
class StackSecret:
    """A secret value of the stack config, and where it was set."""

    path: str
    """Its config path (`platform.gateway.masterKey`)."""
    value: str = field(repr=False)
    """The plaintext: only ever handed to Pulumi as `Output.secret`, never printed."""

    @property
    def reference(self) -> str:
        """How specs name it (`stack-secret:<path>@<revision>`)."""
        return f"{REFERENCE_PREFIX}{self.path}@{revision(self.path, self.value)}"


def revision(path: str, value: str) -> str:
    """The value's fingerprint (module docstring): changes with `value`, salted with `path`."""
    digest = hashlib.pbkdf2_hmac(
        "sha256", value.encode(), f"ecs-inference:{path}".encode(), REVISION_ROUNDS
    )
    return digest.hex()[:REVISION_HEX]


def is_reference(value_from: str) -> bool:
    return value_from.startswith(REFERENCE_PREFIX)


def resolve(containers: list[dict[str, Any]], arns: Mapping[str, str]) -> list[dict[str, Any]]:
    """`containers` with each `secrets[].valueFrom` that is a reference replaced by the ARN
    the stack's secret got (`arns`: reference -> ARN), and each container that reads one
    labelled with their revisions (`REVISION_LABEL`). Raises KeyError naming a reference the
    stack made no secret for (a wiring bug, never a config problem)."""
    for container in containers:
        revisions: dict[str, str] = {}
        for entry in container.get("secrets") or ():
            value_from = entry["valueFrom"]
            if is_reference(value_from):
                if value_from not in arns:
                    raise KeyError(f"no secret was created for {value_from}")
                entry["valueFrom"] = arns[value_from]
                revisions[entry["name"]] = value_from.rsplit("@", 1)[-1]
        if revisions:
            labels = container.setdefault("dockerLabels", {})
            labels[REVISION_LABEL] = ",".join(f"{k}={v}" for k, v in sorted(revisions.items()))
    return containers


def secret_ref(path: str, value: str) -> str:
    """What a container's `secrets` entry names for the value at config `path`: the value if
    it is a Secrets Manager ARN, else the reference of the secret the stack creates for it."""
    return value if SECRET_ARN_PATTERN.match(value) else StackSecret(path, value).reference


def secret_refs(base: str, secrets: Mapping[str, str]) -> dict[str, str]:
    """A service's `secrets` (env name -> ARN or value) as references; `base` is the
    service's config path."""
    return {name: secret_ref(f"{base}.secrets.{name}", v) for name, v in secrets.items()}
