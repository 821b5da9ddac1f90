"""Hunting cases whose verdict depends on what the route reaches, under ``scope:
model-serving``: the reachability model must find the model behind the front door in both
the preview and the literal shape (a classic ELB names its ECS service only by ``elbName``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.policy.corpus import PATH, PIP, SG, build, cases
from tests.policy.pack_harness import InProcessPack
from tests.policy.policy_stacks import found

SCOPED = {name: {"scope": "model-serving"} for name in (PATH, SG, PIP)}
CASES = {c.title: c for c in cases()}


@pytest.fixture(scope="module")
def scoped_pack() -> Iterator[InProcessPack]:
    with InProcessPack(config=SCOPED) as process:
        yield process


@pytest.mark.parametrize("literal", [False, True], ids=["preview", "literal"])
@pytest.mark.parametrize(
    "title",
    [
        "aws-hunt-classic-elb-to-ecs-service",
        "aws-hunt-nlb-80-to-8000-weighted-forward",
        "native-hunt-cloudfront-function-viewer-response-only",
        "aws-hunt-http-api-lambda-none",
    ],
)
def test_model_serving_scope_keeps_model_routes(scoped_pack, title, literal):
    case = CASES[title]
    violations = scoped_pack.analyze(build(case, literal=literal))
    expected = case.expect if "lambda" not in title else set()  # a Lambda is no model
    assert found(violations, level="mandatory") == expected
