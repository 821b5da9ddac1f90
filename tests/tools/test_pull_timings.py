"""tools/pull_timings.py reads start-up phases from describe-tasks output (seed 003).

The responses below are shaped as ECS returns them and checked against botocore's DescribeTasks
output shape first, so the tool is exercised on what the API really sends.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

import pytest
from botocore.model import Shape, StructureShape

from tests.aws_shapes import check, named_shape, service_model
from tools import pull_timings as pt

ACCOUNT = "111122223333"
REGION = "us-east-1"
CLUSTER = f"arn:aws:ecs:{REGION}:{ACCOUNT}:cluster/inference-ecs-cluster-0a1b2c3"


def task(
    family: str,
    task_id: str,
    *,
    created: str | float,
    pull: tuple[str | float, str | float] | None,
    started: str | float | None,
    launch: str = "EC2",
    stopped_reason: str | None = None,
    container_reason: str | None = None,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "taskArn": f"arn:aws:ecs:{REGION}:{ACCOUNT}:task/inference-ecs-cluster/{task_id}",
        "taskDefinitionArn": f"arn:aws:ecs:{REGION}:{ACCOUNT}:task-definition/{family}:7",
        "clusterArn": CLUSTER,
        "group": f"service:{family.removeprefix('ecs-inference-dev-')}-svc-abc1234",
        "launchType": launch,
        "lastStatus": "STOPPED" if stopped_reason or container_reason else "RUNNING",
        "createdAt": created,
        "containers": [
            {"name": "engine", "lastStatus": "RUNNING", "reason": container_reason}
            if container_reason
            else {"name": "engine", "lastStatus": "RUNNING"}
        ],
    }
    if pull is not None:
        body["pullStartedAt"], body["pullStoppedAt"] = pull
    if started is not None:
        body["startedAt"] = started
    if stopped_reason:
        body["stopCode"] = "TaskFailedToStart"
        body["stoppedReason"] = stopped_reason
    return body


def response(*tasks: dict[str, Any]) -> dict[str, Any]:
    doc = {"tasks": list(tasks), "failures": []}
    shape = cast(Shape, service_model("ecs").operation_model("DescribeTasks").output_shape)
    check(doc, shape, "DescribeTasks response")
    return doc


LLAMA = "ecs-inference-dev-llama"
RERANK = "ecs-inference-dev-rerank"


def llama_tasks(*pulls: float) -> dict[str, Any]:
    """One llama task per pull duration, each waiting 20 s for capacity, 4 s to start."""
    base = 1_767_000_000.0
    return response(
        *(
            task(
                LLAMA,
                f"{i:032x}",
                created=base,
                pull=(base + 20, base + 20 + seconds),
                started=base + 24 + seconds,
            )
            for i, seconds in enumerate(pulls)
        )
    )


def test_phases_from_describe_tasks_output() -> None:
    doc = response(
        # the CLI's ISO 8601 output, with an offset
        task(
            LLAMA,
            "a" * 32,
            created="2026-11-30T10:00:00.000000+00:00",
            pull=("2026-11-30T10:00:30.000000+00:00", "2026-11-30T10:02:10.500000+00:00"),
            started="2026-11-30T10:02:14.500000+00:00",
        ),
        # epoch seconds (boto3 serialised as numbers), a slower cold pull
        task(
            LLAMA,
            "b" * 32,
            created=1_767_000_000.0,
            pull=(1_767_000_012.0, 1_767_000_252.0),
            started=1_767_000_255.0,
        ),
        # Fargate, "Z" suffix, still pulling: no pullStoppedAt or startedAt yet
        task(
            RERANK,
            "c" * 32,
            created="2026-11-30T10:00:00Z",
            pull=None,
            started=None,
            launch="FARGATE",
        ),
    )
    doc["tasks"][2]["pullStartedAt"] = "2026-11-30T10:00:41Z"
    phases = pt.phase_timings(doc)
    assert [(p.family, p.launch) for p in phases] == [
        (LLAMA, "EC2"),
        (LLAMA, "EC2"),
        (RERANK, "FARGATE"),
    ]
    assert [p.pull_seconds for p in phases] == [100.5, 240.0, None]
    assert [p.capacity_wait_seconds for p in phases] == [30.0, 12.0, 41.0]
    assert [p.start_seconds for p in phases] == [4.0, 3.0, None]
    assert all(p.problem is None for p in phases)

    llama, rerank = pt.summarise(phases)
    assert (llama.family, llama.tasks) == (LLAMA, 2)
    assert llama.pull == pt.PhaseSummary(2, 170.25, 240.0)
    assert rerank.pull is None and rerank.capacity_wait == pt.PhaseSummary(1, 41.0, 41.0)
    text = pt.render([llama, rerank], [])
    assert f"{LLAMA} (2 task(s), EC2): image pull median 170 s (max 240 s)" in text
    assert f"{RERANK} (1 task(s), FARGATE): image pull -; waiting for capacity median 41 s" in text


def test_measured_pull_is_compared_with_the_stack_estimate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # dev's llama: startup defaults, 10 GiB at 100 MiB/s -> an estimated 102 s pull.
    slow = pt.summarise(pt.phase_timings(llama_tasks(5.0, 240.0)))
    (comparison,) = pt.stack_comparisons(slow, "dev")
    assert comparison.config_path == "platform.models.llama"
    assert comparison.estimated_pull_seconds == pytest.approx(102.4)
    # the cold 240 s pull counts, not the cached 5 s one: 10240 MiB / 240 s = 42.7 -> 42
    assert (comparison.measured_pull_seconds, comparison.implied_mib_per_second) == (240.0, 42)
    assert "platform.models.llama.startup.imagePullMibPerSecond: 42" in comparison.advice
    assert "longer than estimated" in comparison.advice

    fast = pt.stack_comparisons(pt.summarise(pt.phase_timings(llama_tasks(30.0))), "dev")
    assert "faster than estimated" in fast[0].advice and "341" in fast[0].advice
    close = pt.stack_comparisons(pt.summarise(pt.phase_timings(llama_tasks(90.0))), "dev")
    assert close[0].advice == ""
    # families the stack does not have, or without a measured pull, are left out
    other = response(
        task("someone-else-app", "d" * 32, created=0.0, pull=(1.0, 2.0), started=3.0),
        task(RERANK, "e" * 32, created=0.0, pull=(1.0, 90.0), started=91.0, launch="FARGATE"),
    )
    assert pt.stack_comparisons(pt.summarise(pt.phase_timings(other)), "dev") == []

    path = tmp_path / "tasks.json"
    path.write_text(json.dumps(llama_tasks(5.0, 240.0)))
    assert pt.main([str(path), "--stack", "dev"]) == pt.EXIT_OK
    out = capsys.readouterr().out
    assert "platform.models.llama: slowest pull 240 s against the estimate's 102 s" in out
    assert "imagePullMibPerSecond: 42" in out
    assert pt.main([str(path), "--stack", "dev", "--json"]) == pt.EXIT_OK
    doc = json.loads(capsys.readouterr().out)
    assert doc["comparisons"][0]["implied_mib_per_second"] == 42
    assert doc["families"][0]["pull"]["max_seconds"] == 240.0


def test_every_field_read_is_a_member_of_the_ecs_task_shape() -> None:
    # botocore declares `members` a cached property, which type checkers cannot see through.
    task = cast("Mapping[str, Shape]", cast(StructureShape, named_shape("ecs", "Task")).members)
    container = cast(StructureShape, named_shape("ecs", "Container")).members
    assert set(pt.TASK_FIELDS) <= set(task)
    assert set(pt.CONTAINER_FIELDS) <= set(cast("Mapping[str, Shape]", container))
    for member in pt.TASK_TIMESTAMPS:
        assert task[member].type_name == "timestamp"


def test_cannot_pull_container_error_names_the_network_fix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = response(
        task(
            RERANK,
            "f" * 32,
            created="2026-11-30T10:00:00Z",
            pull=None,
            started=None,
            launch="FARGATE",
            stopped_reason=(
                "CannotPullContainerError: pull image manifest has been retried 7 time(s): "
                f"failed to resolve ref {ACCOUNT}.dkr.ecr.{REGION}.amazonaws.com/rerank:2.1.0: "
                "dial tcp 52.0.0.1:443: i/o timeout"
            ),
        ),
        task(
            RERANK,
            "0" * 32,
            created="2026-11-30T10:00:00Z",
            pull=None,
            started=None,
            launch="FARGATE",
            container_reason="ResourceInitializationError: unable to pull secrets or registry "
            "auth: execution resource retrieval failed",
        ),
        task(LLAMA, "1" * 32, created=0.0, pull=(1.0, 2.0), started=3.0),
    )
    phases = pt.phase_timings(doc)
    assert [p.problem is not None for p in phases] == [True, True, False]
    for phase in phases[:2]:
        assert phase.problem is not None
        assert (
            "NAT gateway" in phase.problem and "ECR api + dkr interface endpoints" in phase.problem
        )
        assert "network.natGateways" in phase.problem
    assert phases[0].problem is not None and phases[0].problem.startswith(
        "CannotPullContainerError"
    )

    path = tmp_path / "tasks.json"
    path.write_text(json.dumps(doc))
    assert pt.main([str(path)]) == pt.EXIT_OK
    out = capsys.readouterr().out
    assert out.count("    ! ") == 2 and "i/o timeout: from private subnets" in out


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("not json", "Expecting value"),
        (json.dumps({"taskArns": []}), "expected the output of `aws ecs describe-tasks`"),
        (json.dumps({"tasks": ["x"]}), "tasks[0] is not an object"),
        (
            json.dumps({"tasks": [{"taskArn": "t", "createdAt": "yesterday"}]}),
            "t: createdAt 'yesterday' is not an ISO 8601 timestamp",
        ),
        (json.dumps({"tasks": [{"createdAt": True}]}), "tasks[0]: createdAt is True"),
    ],
)
def test_bad_input_exits_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, expected: str
) -> None:
    path = tmp_path / "tasks.json"
    path.write_text(content)
    assert pt.main([str(path)]) == pt.EXIT_INPUT
    captured = capsys.readouterr()
    assert captured.out == ""
    assert expected in captured.err and captured.err.count("\n") == 1


def test_a_stack_that_cannot_be_planned_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tasks = tmp_path / "tasks.json"
    tasks.write_text(json.dumps(llama_tasks(60.0)))
    stack = tmp_path / "Pulumi.broken.yaml"
    stack.write_text("config:\n  ecs-inference:platform:\n    models: {}\n")
    code = pt.main([str(tasks), "--stack", "broken", "--stack-file", str(stack)])
    assert code == pt.EXIT_INPUT
    err = capsys.readouterr().err
    assert err.startswith("pull_timings: stack broken: ") and "endpoint" in err
    assert "Traceback" not in err
