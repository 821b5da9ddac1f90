"""Plaintext secrets in container environments.

A literal value in a container's ``environment`` is stored in the task definition, visible to
anyone with ``ecs:DescribeTaskDefinition`` and in the Pulumi state. Hub tokens and API keys
belong in ``secrets`` (Secrets Manager / SSM ``valueFrom``), which ECS injects at start.

Names are matched by *segments* (split on ``_``, ``-`` and ``.``) so that ``HF_TOKEN`` and
``OPENAI_API_KEY`` match while ``MAX_NUM_BATCHED_TOKENS`` and ``TOKENIZERS_PARALLELISM`` (common
in model servers and not secrets) do not.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from pulumi_policy import EnforcementLevel, ResourceValidationArgs

from .resources import EXEMPT_SCHEMA, TASK_DEFINITION, as_list, container_definitions, get
from .rules import Config, Report, resource_rule

DEFAULT_MARKERS = [
    "KEY",
    "APIKEY",
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "CREDENTIAL",
    "CREDENTIALS",
    "PASSPHRASE",
]

_SCHEMA = {
    "secretNameMarkers": {
        "type": "array",
        "items": {"type": "string"},
        "default": DEFAULT_MARKERS,
        "description": "Name segments (case-insensitive) that mark a variable as a secret.",
    },
    "allowedVariables": {
        "type": "array",
        "items": {"type": "string"},
        "default": [],
        "description": "Variable names that look secret but are not (e.g. CACHE_KEY_PREFIX).",
    },
    "exemptResources": EXEMPT_SCHEMA,
}

_SEGMENT = re.compile(r"[^A-Za-z0-9]+")


def looks_secret(name: str, markers: Iterable[str]) -> bool:
    """True when one of ``name``'s segments is a secret marker.

    >>> looks_secret("HF_TOKEN", DEFAULT_MARKERS)
    True
    >>> looks_secret("MAX_NUM_BATCHED_TOKENS", DEFAULT_MARKERS)
    False
    """
    wanted = {m.upper() for m in markers}
    return any(segment in wanted for segment in _SEGMENT.split(name.upper()) if segment)


def _check(args: ResourceValidationArgs, config: Config, report: Report) -> None:
    markers = config["secretNameMarkers"]
    allowed = set(config["allowedVariables"])
    for container in container_definitions(args.props):
        for variable in as_list(get(container, "environment")):
            name = str(get(variable, "name", ""))
            if name in allowed or not looks_secret(name, markers):
                continue
            # Read the value only for secret-looking names: an unknown value elsewhere must not
            # stop the check.
            value = get(variable, "value")
            if isinstance(value, str) and value:
                report(
                    f"container {get(container, 'name', '?')!r} sets {name} to a literal value "
                    "in environment; move it to secrets (valueFrom)."
                )


no_plaintext_secrets = resource_rule(
    name="no-plaintext-secrets-in-environment",
    description=(
        "Container environment variables whose names mark them as secrets (KEY, TOKEN, SECRET, "
        "PASSWORD, ...) must not hold literal values. Fix: store the value in Secrets Manager or "
        "SSM Parameter Store and reference it from the container's secrets (valueFrom)."
    ),
    level=EnforcementLevel.ADVISORY,
    types=TASK_DEFINITION,
    schema=_SCHEMA,
    check=_check,
)

POLICIES = [no_plaintext_secrets]
