"""Day-2 operations for the SGLang, TGI and custom engines (engines x operations merge).

The metrics sidecar's scrape spec (`contracts.metrics`) knows the vLLM, Neuron and re-ranker
families only: the other engines run without it, scale on ALBRequestCountPerTarget, need no
metrics image, and still get the region variables and their pools' warm-pool pre-pull.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from ecs_inference.config.load import load_stack_config
from ecs_inference.config.stack import images_to_build
from ecs_inference.contracts.engine import ENV_REGION_VARIABLES
from ecs_inference.contracts.metrics import METRICS_BY_KIND
from tests.operations.test_wiring import KEY, config_error, plan_of, stack_file

PRESET_ENGINES = ("sglang", "tgi", "custom")


def engines_raw() -> dict[str, Any]:
    return copy.deepcopy(stack_file("engines")["config"][KEY])


def test_sidecar_and_scaling_follow_what_the_sidecar_can_scrape():
    plan = plan_of(engines_raw())
    engines = {name: plan.config.models[name].engine for name in plan.models}
    assert set(PRESET_ENGINES) <= set(engines.values())  # the stack exercises every preset engine
    for name, m in plan.models.items():
        scraped = engines[name] in METRICS_BY_KIND
        assert m.metrics_sidecar is scraped, name
        if not scraped:
            assert m.scaling_configuration is None  # the component's ALB policy
            (scaling,) = [s for s in plan.decisions[f"model {name}"] if s.startswith("scaling:")]
            assert scaling.startswith("scaling: ALBRequestCountPerTarget")
            assert f"engine {engines[name]}: no metrics sidecar" in scaling


@pytest.mark.parametrize("metric", ["engineLoad", "kvCache"])
def test_explicit_engine_metric_scaling_on_a_preset_engine_names_the_path(metric):
    raw = engines_raw()
    name = next(n for n, m in raw["models"].items() if m["engine"] == "sglang")
    raw["models"][name]["autoscaling"] = {"metric": metric}
    message = config_error(raw)
    assert f"platform.models.{name}.autoscaling.metric" in message
    assert "albRequests" in message


def test_no_metrics_image_needed_when_no_service_can_run_the_sidecar():
    raw = engines_raw()
    raw["models"] = {n: m for n, m in raw["models"].items() if m["engine"] in PRESET_ENGINES}
    raw.pop("rerankers", None)
    raw.get("images", {}).pop("metrics", None)
    cfg = load_stack_config(raw, "qa")
    assert cfg.metrics_sidecar_services() == []
    plan_of(raw)  # no `images.metrics` issue
    raw["images"]["build"] = True
    raw["images"].pop("sglang")  # built by the stack: the build then has something to do
    assert set(images_to_build(load_stack_config(raw, "qa"))) == {"sglang"}


def test_preset_containers_get_the_stack_region():
    plan = plan_of(engines_raw())
    for name, m in plan.models.items():
        if plan.config.models[name].engine in PRESET_ENGINES:
            env = {e["name"]: e["value"] for e in m.launch.container_environment("eu-west-3")}
            assert {v: env.get(v) for v in ENV_REGION_VARIABLES} == {
                v: "eu-west-3" for v in ENV_REGION_VARIABLES
            }


def test_warm_pool_pre_pulls_the_preset_engines_images():
    raw = engines_raw()
    pool = next(iter(raw["gpuPools"]))
    raw["gpuPools"][pool]["warmPool"] = {"minSize": 1, "state": "Stopped"}
    plan = plan_of(raw)
    on_pool = [n for n in plan.models if plan.config.models[n].pool == pool]
    images = {n: plan.models[n].inputs.image for n in on_pool}
    expected = {image for image in images.values() if image is not None}
    engines = {plan.config.models[n].engine for n, image in images.items() if image is not None}
    assert engines & set(PRESET_ENGINES)
    assert set(plan.gpu_pools[pool].prepull_images) == expected
