"""Serving engines, one module each, asked by name.

    from ecs_inference import engines
    engines.get("vllm")        # the Engine a model's `engine: vllm` names
    engines.names()            # every registered name
    engines.registered()       # every registered Engine

Each module of this package (besides `base` and `registry`) defines its launch dataclass and
registers its `Engine` on import; this package imports them all, so adding an engine means
adding its module, its image and its tests. Pure code: no Pulumi import.
"""

from __future__ import annotations

import importlib
import pkgutil

from ecs_inference.engines.base import Engine, Launch, MetricsTarget
from ecs_inference.engines.registry import (
    UnknownEngineError,
    get,
    names,
    register,
    registered,
    unregister,
)

__all__ = [
    "Engine",
    "Launch",
    "MetricsTarget",
    "UnknownEngineError",
    "get",
    "names",
    "register",
    "registered",
    "unregister",
]

_INFRASTRUCTURE = frozenset({"base", "registry"})

for _module in pkgutil.iter_modules(__path__):
    if _module.name not in _INFRASTRUCTURE and not _module.name.startswith("_"):
        importlib.import_module(f"{__name__}.{_module.name}")
