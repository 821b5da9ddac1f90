"""The engine registry: engines by the name a model's `engine` setting gives.

Each engine module registers one `Engine` when it is imported; `components.engines` imports
every module of its package, so an engine is added by adding its module (and its image). A
program that brings its own engine registers it before it loads a stack config.
"""

from __future__ import annotations

from ecs_inference.engines.base import Engine

_ENGINES: dict[str, Engine] = {}


class UnknownEngineError(KeyError):
    """No engine is registered under the name; the message lists the known ones."""

    def __str__(self) -> str:
        return str(self.args[0])


def register(engine: Engine) -> Engine:
    """Add `engine` under `engine.name`; returns it. A second engine of the same name is an
    error (two modules would claim the same `engine` value)."""
    if engine.name in _ENGINES and _ENGINES[engine.name] is not engine:
        raise ValueError(f"an engine named {engine.name!r} is already registered")
    _ENGINES[engine.name] = engine
    return engine


def unregister(name: str) -> None:
    """Remove the engine `name` (a no-op when none is registered)."""
    _ENGINES.pop(name, None)


def get(name: str) -> Engine:
    """The engine registered as `name`; `UnknownEngineError` names the known ones."""
    try:
        return _ENGINES[name]
    except KeyError:
        raise UnknownEngineError(
            f"no engine {name!r}; known: {', '.join(names()) or 'none'}"
        ) from None


def names() -> tuple[str, ...]:
    """Registered engine names, sorted."""
    return tuple(sorted(_ENGINES))


def registered() -> tuple[Engine, ...]:
    """Registered engines, sorted by name."""
    return tuple(_ENGINES[n] for n in names())
