"""The plan's predictions of an outage, as advisories: a stack that deploys, but whose decisions
say it will at some point serve nothing (or cut what it serves). Each names the config path to
change and how; the program prints them as warnings (`pulumi up` shows them) and the offline
preview counts them with the policy pack's advisory findings.

- a rolling deploy (and managed draining) that stops every running task at once, because the
  pool has no room to start a replacement first (`sizing.headroom.choose_deploy`);
- a Spot reclaim that takes a service below its minimum, or cuts generations longer than the
  two-minute notice (`pools.spot.spot_predictions`);
- in a stack marked for production (`protect`), a service with a single task: any failure of
  that task, its host or its zone serves nothing until a replacement has started.
"""

from __future__ import annotations

from collections.abc import Mapping

from ecs_inference.config.issues import Advisory
from ecs_inference.config.stack import StackConfig
from ecs_inference.gateway.decisions import GRACE_SECONDS, GatewayDecisions
from ecs_inference.models.decisions import ModelDecisions
from ecs_inference.plan.pools import PoolChoice
from ecs_inference.pools.decisions import AsgPoolDecisions
from ecs_inference.pools.spot import spot_predictions
from ecs_inference.rerankers.decisions import RerankerDecisions
from ecs_inference.sizing.headroom import DeployChoice


def deploy_advisories(
    choices: Mapping[str, PoolChoice],
    deploys: Mapping[str, Mapping[str, DeployChoice]],
) -> list[Advisory]:
    """A deploy that can leave a model service with no task, against its pool's maxSize."""
    return [
        Advisory(f"{choices[pool].path}.maxSize", f"model {model}: {deploy.outage}")
        for pool, by_model in deploys.items()
        for model, deploy in by_model.items()
        if deploy.outage is not None and pool in choices
    ]


def spot_advisories(
    cfg: StackConfig,
    choices: Mapping[str, PoolChoice],
    pools: Mapping[str, AsgPoolDecisions],
    models: Mapping[str, ModelDecisions],
) -> list[Advisory]:
    """What a Spot reclaim predicts for each model on a pool that buys Spot."""
    found: list[Advisory] = []
    for name, spec in models.items():
        pool_name = cfg.models[name].pool
        pool, choice = pools.get(pool_name), choices.get(pool_name)
        if pool is None or choice is None or not pool.input.mixed:
            continue
        for message in spot_predictions(
            pool.input,
            min_count=spec.min_count,
            tasks_per_instance=choice.types.tasks_per_instance(name),
            max_generation_seconds=cfg.models[name].max_generation_seconds,
        ):
            path = (
                f"{choice.path}.onDemandBaseCapacity"
                if "below its minimum" in message
                else f"platform.models.{name}.maxGenerationSeconds"
            )
            found.append(Advisory(path, f"model {name}: {message}"))
    return found


def single_task_advisories(
    cfg: StackConfig,
    models: Mapping[str, ModelDecisions],
    rerankers: Mapping[str, RerankerDecisions],
    gateway: GatewayDecisions | None,
) -> list[Advisory]:
    """In a production stack (`protect`), each service that may run a single task."""
    if not cfg.protect:
        return []
    services: list[tuple[str, int, int, int]] = [
        (f"platform.models.{n}", s.min_count, s.max_count, s.health_check_grace_period_seconds)
        for n, s in models.items()
    ]
    services += [
        (f"platform.rerankers.{n}", s.min_count, s.max_count, s.health_check_grace_period_seconds)
        for n, s in rerankers.items()
    ]
    if (gw := gateway) is not None:
        services.append(("platform.gateway", gw.input.min_count, gw.input.max_count, GRACE_SECONDS))
    return [
        Advisory(
            f"{path}.minCount",
            "a single task in one Availability Zone in a protected (production) stack: a "
            "failed task, host or zone, or a host replaced, serves nothing until a new task "
            f"has started (up to ~{grace} s, the health-check grace period); set minCount "
            f"and desiredCount to 2{' and maxCount to at least 2' if max_count < 2 else ''}"
            " so that one serves in another zone (the pool's maxSize must hold them)",
        )
        for path, min_count, max_count, grace in services
        if min_count == 1
    ]
