"""The keys the service sections share: declared once (`ServiceConfig`, `FargateServiceConfig`),
each section's own defaults taken from its `DEFAULTS` into validation and the schema alike."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest
from pydantic import ValidationError

from ecs_inference.contracts import litellm
from ecs_inference.gateway.input import GatewayConfig
from ecs_inference.models.input import ModelConfig
from ecs_inference.rerankers.input import RerankerConfig
from ecs_inference.services.input import FargateServiceConfig
from ecs_inference.workers.input import WorkerConfig

IMAGE = "123456789012.dkr.ecr.us-east-1.amazonaws.com/worker:1.0"
MASTER = "arn:aws:secretsmanager:us-east-1:123456789012:secret:gateway-master-AbCdEf"
SHARED = ("image", "cpu", "memory_mib", "desired_count", "min_count", "max_count")

SECTIONS: list[tuple[Any, dict[str, Any], tuple[object, ...]]] = [
    (GatewayConfig, {"master_key_secret_arn": MASTER}, (litellm.IMAGE, 1024, 2048, 2, 2, 4)),
    (
        WorkerConfig,
        {"image": IMAGE, "max_job_seconds": 60, "job_seconds": 5, "acceptable_latency_seconds": 60},
        (IMAGE, 256, 512, 0, 0, 10),
    ),
    (RerankerConfig, {"model_uri": "s3://models/rr/"}, (None, None, None, 2, 1, 4)),
]


@pytest.mark.parametrize(("section", "given", "expected"), SECTIONS)
def test_each_section_has_its_own_defaults_in_values_and_schema(section, given, expected):
    built = section(**given)
    assert tuple(getattr(built, key, None) for key in SHARED) == expected
    schema = section.model_json_schema(by_alias=True)["properties"]
    for key, value in zip(SHARED[1:], expected[1:], strict=True):
        field = section.model_fields.get(key)
        if field is not None:
            assert schema[field.alias or key].get("default") == value, key


def test_a_model_keeps_the_base_defaults():
    fields = ModelConfig.model_fields
    assert [fields[k].default for k in SHARED if k in fields] == [None, 1, 1, 2]


def test_the_size_type_is_the_section_own():
    """The gateway and the workers always have a size; a re-ranker's unset size is chosen."""
    with pytest.raises(ValidationError, match="valid integer"):
        GatewayConfig(master_key_secret_arn=MASTER, cpu=None)
    with pytest.raises(ValidationError, match="cpu and memoryMib must be given together"):
        RerankerConfig(model_uri="s3://models/rr/", cpu=1024)


def test_a_default_of_a_key_the_section_lacks_is_refused_at_import():
    with pytest.raises(KeyError):

        class Typo(FargateServiceConfig[int]):  # pyright: ignore[reportUnusedClass]
            DEFAULTS: ClassVar[dict[str, object]] = {"cpus": 512}
