"""`ecs_inference.services.fargate_table`: the table of what Fargate refuses, read on
RegisterTaskDefinition requests (container definitions as a list or as pulumi-aws's JSON
string), entry by entry with the policy corpus's refused and accepted values."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ecs_inference.contracts.aws_limits import FARGATE_TASK_PARAMETERS
from ecs_inference.services import fargate_table as fargate
from tests.policy.corpus_fargate import VALUES


def _request(parameter: str, value: Any, *, as_json: bool = False) -> dict[str, Any]:
    """An awsvpc request of one container `model` (one volume `data`) with `value` at the
    table path `parameter`."""
    request: dict[str, Any] = {
        "networkMode": "awsvpc",
        "containerDefinitions": [{"name": "model", "image": "i:1"}],
        "volumes": [{"name": "data"}],
    }
    node: Any = request
    steps = parameter.split(".")
    for step in steps[:-1]:
        key = step.removesuffix("[]")
        node = node[key][0] if step.endswith("[]") else node.setdefault(key, {})
    last = steps[-1]
    node[last.removesuffix("[]")] = [value] if last.endswith("[]") else value
    if as_json:
        request["containerDefinitions"] = json.dumps(request["containerDefinitions"])
    return request


@pytest.mark.parametrize("as_json", [False, True])
@pytest.mark.parametrize("parameter", list(FARGATE_TASK_PARAMETERS))
def test_each_entry_refuses_its_bad_value_and_accepts_its_good_one(
    parameter: str, as_json: bool
) -> None:
    bad, good = VALUES[parameter]
    [refusal] = fargate.task_refusals(_request(parameter, bad, as_json=as_json))
    assert refusal.parameter == parameter
    assert refusal.value == bad
    assert refusal.sources and fargate.cited(refusal.sources)
    if parameter.startswith(fargate.CONTAINERS):
        assert refusal.where.startswith("containerDefinitions['model']")
        assert refusal.steps[:2] == ("containerDefinitions", 0)
    if good is not None:
        assert fargate.task_refusals(_request(parameter, good, as_json=as_json)) == []
    assert fargate.accepts(parameter, good)


def test_an_unset_parameter_takes_ecs_default() -> None:
    [refusal] = fargate.task_refusals({"containerDefinitions": []})
    assert (refusal.parameter, refusal.value) == ("networkMode", None)
    assert refusal.shown() == "unset (ECS assumes bridge)"
    # the others are fine unset
    assert fargate.task_refusals({"networkMode": "awsvpc", "containerDefinitions": [{}]}) == []


@pytest.mark.parametrize(
    ("parameter", "value", "accepted"),
    [
        ("containerDefinitions[].linuxParameters.capabilities.add[]", "CAP_SYS_PTRACE", True),
        ("containerDefinitions[].linuxParameters.capabilities.add[]", "sys_ptrace", True),
        ("containerDefinitions[].linuxParameters.capabilities.add[]", "CAP_SYS_ADMIN", False),
        ("networkMode", "AWSVPC", True),
        ("containerDefinitions[].stopTimeout", 2, True),
        ("containerDefinitions[].stopTimeout", 1, False),
        ("containerDefinitions[].stopTimeout", 121, False),
        ("containerDefinitions[].stopTimeout", True, False),
        ("containerDefinitions[].privileged", False, True),
        ("containerDefinitions[].linuxParameters.sharedMemorySize", 0, False),
        ("containerDefinitions[].dnsServers", [], True),
    ],
)
def test_edges(parameter: str, value: Any, accepted: bool) -> None:
    assert fargate.accepts(parameter, value) is accepted


def test_every_item_of_a_list_is_judged_and_named() -> None:
    request = {
        "networkMode": "awsvpc",
        "containerDefinitions": [
            {
                "name": "a",
                "linuxParameters": {"capabilities": {"add": ["SYS_PTRACE", "NET_ADMIN"]}},
            },
            {"name": "b", "privileged": True},
        ],
    }
    found = [(r.where, r.steps) for r in fargate.task_refusals(request)]
    assert found == [
        ("containerDefinitions['b'].privileged", ("containerDefinitions", 1, "privileged")),
        (
            "containerDefinitions['a'].linuxParameters.capabilities.add[1]",
            ("containerDefinitions", 0, "linuxParameters", "capabilities", "add", 1),
        ),
    ]


def test_a_probe_puts_a_value_where_its_name_is() -> None:
    parameter = "containerDefinitions[].linuxParameters.capabilities.add[]"
    request, lead = fargate.probe(parameter, "linuxParameters", {"capabilities": {"add": ["X"]}})
    [refusal] = fargate.task_refusals(request, [parameter])
    assert refusal.steps[lead:] == ("capabilities", "add", 0)
    request, lead = fargate.probe("volumes[].host.sourcePath", "sourcePath", "/data")
    [refusal] = fargate.task_refusals(request, ["volumes[].host.sourcePath"])
    assert refusal.steps[lead:] == ()


def test_sources_read_as_a_reader_finds_them() -> None:
    assert fargate.cited(("guide", "botocore:LinuxParameters.tmpfs")) == (
        f"{fargate.GUIDE}; botocore's ECS model: LinuxParameters.tmpfs"
    )
