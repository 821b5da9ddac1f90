"""The policy pack processes a preview needs, started early and shared by the views.

The engine configures a pack once per run (ConfigureStack with the stack, project, config and
dry-run flag), so the views of one dry run (`new`, `update`) share a process; the audit of
stored state (`state`) gets its own, unconfigured, as `pulumi policy analyze` loads it. A pack
takes about as long to start as a small program takes to run, so `PackPool` starts them in the
background as soon as the stack's config is known, while the program runs.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from tools.views.engine import EngineStack


class PolicyRunError(Exception):
    """The policy config breaks a rule's schema, or the pack does not start: a configuration
    error of the run."""


class PackPool:
    """One started pack per dry-run flag the `views` need; use as a context manager."""

    def __init__(
        self,
        pack_dir: Path,
        policy_config: Mapping[str, Any] | None,
        *,
        views: Iterable[str],
        project: str,
        stack: str,
        config: Mapping[str, str],
    ) -> None:
        from tools.analyzer_client import PolicyPackProcess

        self._packs: dict[bool, Any] = {}
        self._errors: dict[bool, BaseException] = {}
        self._threads: list[threading.Thread] = []
        for dry_run in sorted({view != "state" for view in views}, reverse=True):
            self._packs[dry_run] = PolicyPackProcess(
                pack_dir,
                config=dict(policy_config) if policy_config else None,
                stack=stack,
                project=project,
                dry_run=dry_run,
                stack_config=config,
                configure_stack=dry_run,
            )
            thread = threading.Thread(target=self._start, args=(dry_run,), daemon=True)
            thread.start()
            self._threads.append(thread)

    def _start(self, dry_run: bool) -> None:
        try:
            self._packs[dry_run].start()
        except BaseException as exc:  # reported to the caller by analyze()
            self._errors[dry_run] = exc

    def __enter__(self) -> PackPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for thread in self._threads:
            thread.join()
        for pack in self._packs.values():
            pack.close()

    def analyze(self, stacks: Sequence[EngineStack]) -> list[Any]:
        """Every violation in each stack view, in the order of `stacks`. Raises
        `PolicyRunError` when a pack did not start or its config is invalid."""
        from tools.analyzer_client import PolicyConfigError, PolicyPackError

        for thread in self._threads:
            thread.join()
        violations: list[Any] = []
        for engine_stack in stacks:
            error = self._errors.get(engine_stack.dry_run)
            if isinstance(error, (PolicyConfigError, PolicyPackError)):
                raise PolicyRunError(f"policy pack: {error}") from None
            if error is not None:
                raise error
            try:
                violations += self._packs[engine_stack.dry_run].analyze_view(engine_stack)
            except (PolicyConfigError, PolicyPackError) as exc:
                raise PolicyRunError(f"policy pack: {exc}") from None
        return violations
