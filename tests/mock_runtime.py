"""What the component tests share about the mock runtime: a component given bad arguments must
refuse them with one error before it registers anything (nothing half-created)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from tools.recording import Recording, run_function

E = TypeVar("E", bound=BaseException)


def refused_before_registering(build: Callable[[], object], error: type[E]) -> tuple[E, Recording]:
    """Run `build` (a component's constructor call) under the recording mocks; it must raise
    `error`, and nothing may be registered. Returns the error and the (empty) recording."""
    caught: list[E] = []

    def program() -> None:
        try:
            build()
        except error as exc:
            caught.append(exc)

    rec = run_function(program)
    assert caught, f"{error.__name__} was not raised"
    assert rec.resources == [], [r.name for r in rec.resources]
    return caught[0], rec
