"""Images pulled across regions (components/images/regions.py): an ECR reference in another
region's registry is found with the config path that sets it, its cost and its fix; the same
region, ECR Public and other registries are not."""

from __future__ import annotations

import copy

import pytest
import yaml

from ecs_inference import cost
from ecs_inference.config.load import load_stack_config
from ecs_inference.images import regions as image_regions
from tests.stacks import stack_file

US = "123456789012.dkr.ecr.us-east-1.amazonaws.com/ecs-inference"
EU = "123456789012.dkr.ecr.eu-west-1.amazonaws.com/ecs-inference"


def _raw(stack: str) -> dict:
    return yaml.safe_load(stack_file(stack).read_text())["config"]["ecs-inference:platform"]


def _found(raw: dict, region: str | None, stack: str = "shared-vpc"):
    cfg = load_stack_config(raw, stack)
    return {c.path: c for c in image_regions.cross_region_images(cfg, region)}


def test_the_eu_west_1_reference_stack_pulls_from_its_own_region():
    # stack-up.yml points a stack in another region at its region's replicas; the reference
    # stack names them, so nothing crosses regions.
    assert _found(_raw("shared-vpc"), "eu-west-1") == {}


def test_an_eu_west_1_stack_with_us_east_1_images_is_told_the_cost_and_the_fix():
    raw = copy.deepcopy(_raw("shared-vpc"))
    raw["images"]["vllm"] = f"{US}/vllm:v0.33.0"
    raw["images"]["metrics"] = f"{US}/metrics:0.1.0"
    found = _found(raw, "eu-west-1")
    assert set(found) == {"platform.images.vllm", "platform.images.metrics"}
    vllm = found["platform.images.vllm"]
    assert vllm.registry_region == "us-east-1" and vllm.users == ("model llama",)
    assert vllm.image_gib == 10.0  # the model's startup.imageGib default
    message = vllm.message("eu-west-1")
    per_pull = 10.0 * 1.073741824 * cost.PRICES.internet_transfer_out_gb
    assert f"~${per_pull:.2f} per pull of this 10 GiB image" in message
    assert "~$0.97 per pull" in message
    assert "ECR replication rule" in message and "pull-through cache" in message
    assert f"reference {EU}/vllm:v0.33.0" in message
    metrics = found["platform.images.metrics"]
    assert set(metrics.users) == {"the metrics sidecar"}
    assert metrics.image_gib is None
    assert "$0.09 per GB pulled" in metrics.message("eu-west-1")


def test_a_services_own_image_is_named_at_its_own_path():
    raw = copy.deepcopy(_raw("shared-vpc"))
    raw["rerankers"]["rerank"]["image"] = f"{US}/reranker:0.1.0"
    raw["models"]["llama"]["image"] = f"{US}/vllm:v0.33.0"
    raw["models"]["llama"]["startup"] = {"imageGib": 20}
    found = _found(raw, "eu-west-1")
    assert set(found) == {"platform.rerankers.rerank.image", "platform.models.llama.image"}
    assert found["platform.models.llama.image"].image_gib == 20
    assert "~$1.93 per pull of this 20 GiB image" in found["platform.models.llama.image"].message(
        "eu-west-1"
    )


@pytest.mark.parametrize(
    "image",
    [
        "public.ecr.aws/docker/library/python:3.12",  # ECR Public: not a regional registry
        "ghcr.io/berriai/litellm:main-v1.80.0",
        "docker.io/vllm/vllm-openai:v0.33.0",
        f"{EU}/vllm:v0.33.0",  # the stack's own region
    ],
)
def test_other_registries_and_the_same_region_are_not_cross_region_ecr(image):
    raw = copy.deepcopy(_raw("shared-vpc"))
    raw["images"]["vllm"] = image
    assert _found(raw, "eu-west-1") == {}


def test_images_no_service_runs_and_an_unknown_region_are_not_reported():
    raw = copy.deepcopy(_raw("shared-vpc"))
    raw["images"]["sglang"] = f"{US}/sglang:v0.5.23"  # no sglang model
    assert _found(raw, "eu-west-1") == {}
    raw["images"]["vllm"] = f"{US}/vllm:v0.33.0"
    assert _found(raw, None) == {}  # region left to the provider: nothing to compare


def test_the_us_east_1_stacks_reference_their_own_region():
    for stack in ("dev", "prod"):
        assert _found(_raw(stack), "us-east-1", stack) == {}
        assert set(_found(_raw(stack), "eu-west-1", stack))  # the same files from eu-west-1
