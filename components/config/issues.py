"""Errors that reach the user as one readable line each, never as a traceback.

`ConfigError` carries every problem found in a stack's configuration at once, each problem as
`ConfigIssue(path, message)` where `path` is the config path the user must edit
(`platform.models.llama.maxModelLen`). `Issues` collects them: loading the config and each plan
section add to one, and it raises them together, so a run reports every problem it can see.
`__main__.py` turns the error into `pulumi.RunError` (which the Pulumi CLI prints without a stack
trace) and the offline preview prints it and exits 2.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass


@dataclass(frozen=True)
class ConfigIssue:
    """One problem in the stack configuration: where it is and what to do about it."""

    path: str
    message: str
    where: str = ""
    """The stack file and line that sets `path` (`Pulumi.dev.yaml:42`; its nearest ancestor's
    when the key is missing), when known."""

    def __str__(self) -> str:
        at = f"{self.where}: " if self.where else ""
        return f"{at}{self.path}: {self.message}"


@dataclass(frozen=True)
class Advisory(ConfigIssue):
    """A decision the stack deploys with but that predicts an outage: where to change it and
    how. Never stops a run; the program prints it as a warning."""


ADVISORY_PREFIX = "advisory: "
"""How the program's warning of an advisory starts (the offline preview counts them)."""


class ConfigError(Exception):
    """The stack configuration is invalid; no resource has been (or will be) registered."""

    def __init__(
        self,
        issues: Iterable[ConfigIssue] | ConfigIssue,
        stack: str | None = None,
        not_checked: Iterable[str] = (),
    ):
        self.issues = [issues] if isinstance(issues, ConfigIssue) else list(issues)
        self.stack = stack
        self.not_checked = list(not_checked)
        """Entries whose further checks wait for the problems above (their findings could
        come from the parts set aside, not from what the file says)."""
        super().__init__(self.render())

    def render(self) -> str:
        where = f" of stack '{self.stack}'" if self.stack else ""
        noun = "problem" if len(self.issues) == 1 else "problems"
        lines = [f"invalid configuration{where} ({len(self.issues)} {noun}):"]
        lines += [f"  - {issue}" for issue in self.issues]
        if self.not_checked:
            lines.append(
                "  Not checked further until the problems above are fixed: "
                + ", ".join(self.not_checked)
            )
        return "\n".join(lines)


class Issues:
    """The problems one run has found so far, in the order found."""

    def __init__(self, found: Iterable[ConfigIssue] = ()) -> None:
        self._found: list[ConfigIssue] = list(found)

    def add(self, path: str, message: str) -> None:
        self._found.append(ConfigIssue(path, message))

    def extend(self, issues: Iterable[ConfigIssue]) -> None:
        self._found.extend(issues)

    def __iter__(self) -> Iterator[ConfigIssue]:
        return iter(self._found)

    def __len__(self) -> int:
        return len(self._found)

    def raise_if_any(self, stack: str | None = None) -> None:
        """Raise one `ConfigError` with every problem found; return when there is none."""
        if self._found:
            raise ConfigError(self._found, stack)
