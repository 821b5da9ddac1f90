"""The model services' part of the stack's plan: every model's demand (for its pool's types), the
models placed on each pool, and the facts a service takes from the stack's settings. Each
service's own decisions are its feature's (`ecs_inference.models.decisions`)."""

from __future__ import annotations

from collections.abc import Mapping

from ecs_inference import engines, sizing
from ecs_inference.config.issues import Issues
from ecs_inference.config.stack import StackConfig
from ecs_inference.engines.base import PresetError
from ecs_inference.models import decisions
from ecs_inference.models.decisions import StackFacts
from ecs_inference.models.input import ModelConfig
from ecs_inference.plan.pools import Placed, PoolChoice
from ecs_inference.sizing.instance_types import Demand

# --------------------------------------------------------------------------------------------
# what a model needs from an instance type
# --------------------------------------------------------------------------------------------


def demands(cfg: StackConfig, issues: Issues) -> dict[str, Demand]:
    """Every model's demand on an instance type; a model that cannot be sized is an issue."""
    found: dict[str, Demand] = {}
    for name, model in cfg.models.items():
        try:
            found[name] = decisions.demand(name, model)
        except sizing.SizingError as exc:
            issues.add(f"platform.models.{name}", str(exc))
        except PresetError as exc:
            path, _, message = str(exc).partition(": ")
            issues.add(path, message)
    return found


def configured_image(cfg: StackConfig, model: ModelConfig) -> str | None:
    """The model's image reference: its own, else its engine's in `images`; None: the stack's
    own build (images.build)."""
    if model.image is not None or not engines.get(model.engine).default_image:
        return model.image
    return cfg.images.for_engine(model.engine)


def placed(cfg: StackConfig, pools: Mapping[str, PoolChoice]) -> dict[str, list[Placed]]:
    """Pool name -> the models that fit it (a model its pool could not take is already an
    issue), in config order."""
    out: dict[str, list[Placed]] = {name: [] for name in pools}
    for name, model in cfg.models.items():
        pool = pools.get(model.pool)
        if pool is None or name not in pool.types.fits:
            continue
        out[pool.name].append(
            Placed(
                name,
                model,
                pool.types.tasks_per_instance(name),
                pool.types.layouts[name].devices_per_task,
                configured_image(cfg, model),
            )
        )
    return out


def stack_facts(cfg: StackConfig, region: str | None, stack: str) -> StackFacts:
    """What model service `model` takes from the stack's settings."""
    return StackFacts(
        weight_stores=dict(cfg.weight_stores),
        metrics_sidecar=cfg.operations.metrics_sidecar,
        metrics_image=cfg.images.metrics,
        execute_command=cfg.cluster.execute_command,
        execute_command_logging=cfg.cluster.execute_command_logging,
        region=region,
        stack=stack,
        alarm_settings=cfg.operations.alarms,
    )
