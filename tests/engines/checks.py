"""Assertions the engine tests share."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from ecs_inference import engines
from ecs_inference.engines.base import Launch, LaunchInputs, PresetError
from ecs_inference.models.input import ModelConfig
from ecs_inference.sizing import catalog, instance_types


def fails_at(factory: Callable[[], object], path: str, fragment: str) -> None:
    """Building the launch fails with one line that starts with the config path `path` and
    says `fragment`."""
    with pytest.raises(PresetError) as caught:
        factory()
    message = str(caught.value)
    assert message.startswith(path + ":"), message
    assert fragment in message
    assert "\n" not in message


def inputs_of(
    engine: str,
    instance: str = "g6e.48xlarge",
    *,
    idle: int = 60,
    region: str | None = None,
    weights: str | None = None,
    name: str = "m",
    gpus: int | None = None,
    **keys: Any,
) -> LaunchInputs:
    """What the plan gives `engine`'s launch for a model of `keys` (camelCase; default a
    llama-3.1-8b at 4096 tokens from `s3://bkt/m/`) on `instance` behind an endpoint of `idle`
    seconds: its fit sized as the plan sizes it, or `gpus` declared (for shapes no instance
    holds). `weights`: the resolved weights (default the model's `weightsUri`)."""
    raw = {"engine": engine, "pool": "pool", "architecture": "llama-3.1-8b"}
    raw |= {"weightsUri": "s3://bkt/m/", "maxModelLen": 4096, **keys}
    model = ModelConfig.model_validate(raw)
    if gpus is None:
        demand = engines.get(engine).demand(name, model)
        fit = instance_types.fit_on(demand, catalog.instance(instance)).fit
    else:
        fit = instance_types.DeclaredFit(name, instance, gpus, 8, 40.0, 40.0, "gpus")
    family = instance.split(".")[0]
    return LaunchInputs(name, model, fit, weights or model.weights_uri, family, idle, region)


def launch_of(engine: str, instance: str = "g6e.48xlarge", **keys: Any) -> Launch:
    """`engine`'s launch of `inputs_of(engine, instance, **keys)`."""
    return engines.get(engine).launch(inputs_of(engine, instance, **keys))


def device_mappings(launch: Launch) -> list[dict[str, object]]:
    """`linuxParameters.devices` of a task definition mapping the launch's Neuron devices."""
    paths = [f"/dev/neuron{i}" for i in range(launch.neuron_device_count)]
    return [{"hostPath": p, "containerPath": p, "permissions": ["read", "write"]} for p in paths]
