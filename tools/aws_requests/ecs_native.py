"""CreateService checks of ECS's native deployment strategies that botocore's shapes cannot state.

Sources (read 2026-12-03): the ECS API reference (DeploymentConfiguration, CanaryConfiguration,
LinearConfiguration, DeploymentLifecycleHook, AdvancedConfiguration), the pulumi-aws 7.51.1
schema's argument docs ("Required when strategy is CANARY/LINEAR", "advancedConfiguration:
required when using BLUE_GREEN", "PAUSE hooks cannot use TEST_TRAFFIC_SHIFT or
PRODUCTION_TRAFFIC_SHIFT"), and the developer guide's "Required resources" pages (deployment
controller ECS; an alternate target group, a production listener rule and the infrastructure role).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ecs_inference.contracts.aws_limits import (
    ECS_BAKE_MINUTES_RANGE,
    ECS_CANARY_PERCENT_RANGE,
    ECS_DEPLOYMENT_STRATEGIES,
    ECS_LINEAR_STEP_PERCENT_RANGE,
    ECS_PERCENT_STEP,
)
from tools.aws_requests.registry import known, single

PAUSE_REFUSED_STAGES = ("TEST_TRAFFIC_SHIFT", "PRODUCTION_TRAFFIC_SHIFT")


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not known(value):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _range(label: str, value: Any, bounds: tuple[float, float]) -> Iterable[str]:
    number = _number(value)
    if number is not None and not bounds[0] <= number <= bounds[1]:
        yield f"{label} {number:g} is outside {bounds[0]:g}-{bounds[1]:g}"


def _percent(label: str, value: Any, bounds: tuple[float, float]) -> Iterable[str]:
    yield from _range(label, value, bounds)
    number = _number(value)
    if (
        number is not None
        and abs(round(number / ECS_PERCENT_STEP) * ECS_PERCENT_STEP - number) > 1e-9
    ):
        yield f"{label} {number:g} is not a multiple of {ECS_PERCENT_STEP:g}"


def _hooks(hooks: Any) -> Iterable[str]:
    for n, hook in enumerate(hooks if isinstance(hooks, list) else []):
        if not isinstance(hook, Mapping):
            continue
        kind = hook.get("targetType") or "AWS_LAMBDA"
        where = f"deploymentConfiguration.lifecycleHooks[{n}]"
        if kind == "AWS_LAMBDA":
            for key in ("hookTargetArn", "roleArn"):
                if hook.get(key) is None:
                    yield f"{where}: an AWS_LAMBDA hook needs {key}"
        stages = hook.get("lifecycleStages")
        if kind == "PAUSE" and isinstance(stages, list):
            for stage in sorted(set(stages) & set(PAUSE_REFUSED_STAGES)):
                yield f"{where}: a PAUSE hook cannot run at {stage}"


def _load_balancers(i: Mapping[str, Any], strategy: str) -> Iterable[str]:
    lbs = i.get("loadBalancers")
    for n, lb in enumerate(lbs if isinstance(lbs, list) else []):
        if not isinstance(lb, Mapping) or lb.get("targetGroupArn") is None:
            continue
        advanced = single(lb.get("advancedConfiguration"))
        if not isinstance(advanced, Mapping):
            yield (
                f"loadBalancers[{n}]: a {strategy} deployment needs advancedConfiguration (the "
                "alternate target group, the production listener rule and the role ECS shifts "
                "traffic with)"
            )
            continue
        for key in ("alternateTargetGroupArn", "productionListenerRule", "roleArn"):
            if advanced.get(key) is None:
                yield f"loadBalancers[{n}].advancedConfiguration needs {key}"
        alternate = advanced.get("alternateTargetGroupArn")
        if known(alternate) and alternate == lb.get("targetGroupArn"):
            yield f"loadBalancers[{n}]: the alternate target group must differ from the primary"


def native_deployment_problems(i: Mapping[str, Any]) -> Iterable[str]:
    """What CreateService refuses in a blue/green, canary or linear deployment's arguments."""
    dc = single(i.get("deploymentConfiguration"))
    if not isinstance(dc, Mapping):
        return
    strategy = dc.get("strategy") or "ROLLING"
    if not known(strategy):
        return
    if strategy not in ECS_DEPLOYMENT_STRATEGIES:
        yield f"strategy {strategy!r} is not one of {', '.join(ECS_DEPLOYMENT_STRATEGIES)}"
        return
    yield from _range("bakeTimeInMinutes", dc.get("bakeTimeInMinutes"), ECS_BAKE_MINUTES_RANGE)
    canary, linear = single(dc.get("canaryConfiguration")), single(dc.get("linearConfiguration"))
    if strategy == "CANARY" and not isinstance(canary, Mapping):
        yield "a CANARY deployment needs canaryConfiguration"
    if strategy == "LINEAR" and not isinstance(linear, Mapping):
        yield "a LINEAR deployment needs linearConfiguration"
    if isinstance(canary, Mapping):
        yield from _percent("canaryPercent", canary.get("canaryPercent"), ECS_CANARY_PERCENT_RANGE)
        yield from _range(
            "canaryBakeTimeInMinutes", canary.get("canaryBakeTimeInMinutes"), ECS_BAKE_MINUTES_RANGE
        )
    if isinstance(linear, Mapping):
        yield from _percent("stepPercent", linear.get("stepPercent"), ECS_LINEAR_STEP_PERCENT_RANGE)
        yield from _range(
            "stepBakeTimeInMinutes", linear.get("stepBakeTimeInMinutes"), ECS_BAKE_MINUTES_RANGE
        )
    yield from _hooks(dc.get("lifecycleHooks"))
    if strategy == "ROLLING":
        return
    controller = single(i.get("deploymentController"))
    kind = controller.get("type") if isinstance(controller, Mapping) else None
    if known(kind) and kind not in (None, "ECS"):
        yield f"a {strategy} deployment needs the ECS deployment controller, not {kind}"
    yield from _load_balancers(i, strategy)
