"""The pack (`guardrails/fargate/parameters.py`) and the program
(`ecs_inference.services.fargate_table`) read the one table of what Fargate refuses with two
copies of the logic (the pack runs alone): on every corpus value of every entry, in both
providers' shapes, they refuse the same parameters at the same places."""

from __future__ import annotations

from typing import Any

import pytest
from guardrails.fargate import parameters as pack

from ecs_inference.contracts.aws_limits import FARGATE_TASK_PARAMETERS
from ecs_inference.services import fargate_table as fargate
from tests.policy.corpus_fargate import VALUES, task
from tools.aws_shapes import register_task_definition_request

TYPES = {False: "aws:ecs/taskDefinition:TaskDefinition", True: "aws-native:ecs:TaskDefinition"}


def _program(native: bool, body: dict[str, Any]) -> list[str]:
    request = body if native else register_task_definition_request(body)
    return [r.where for r in fargate.task_refusals(request)]


def _pack(native: bool, body: dict[str, Any]) -> list[str]:
    # the pack's messages start with where the value is, in the provider's own names
    return [m.split("=")[0].split(" unset")[0] for m in pack.task_refusals(body, TYPES[native])]


def _aws_name(where: str) -> str:
    return where.replace(".host.sourcePath", ".hostPath")


@pytest.mark.parametrize("native", [False, True], ids=["aws", "native"])
@pytest.mark.parametrize("parameter", list(FARGATE_TASK_PARAMETERS))
def test_both_readings_refuse_the_same(parameter: str, native: bool) -> None:
    if not native and parameter == "inferenceAccelerators":
        pytest.skip("pulumi-aws 7 has no inferenceAccelerators argument")
    for value in VALUES[parameter]:
        if value is None:
            continue
        body = task(native, fargate=True, family="td", **{parameter: value})
        ours = _program(native, body)
        theirs = _pack(native, body)
        assert len(ours) == len(theirs), (ours, theirs)
        if native:
            assert ours == theirs
        else:
            assert [_aws_name(w) for w in ours] == theirs
    unset = task(native, fargate=True, family="td")
    del unset["networkMode"]
    assert _program(native, unset) == _pack(native, unset) == ["networkMode"]
