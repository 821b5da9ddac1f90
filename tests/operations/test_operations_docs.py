"""docs/operations.md (its runbook and its sections on how each part works) says what the code
does."""

from __future__ import annotations

from pathlib import Path

from ecs_inference.contracts import metrics as m
from ecs_inference.specs import operations as obs

ROOT = Path(__file__).resolve().parents[2]
OPERATIONS = (ROOT / "docs" / "operations.md").read_text()


def _section(text: str, title: str) -> str:
    start = text.index(f"## {title}")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else None]


def test_the_runbook_explains_every_alarm_the_stack_can_raise():
    section = _section(OPERATIONS, "Runbook")
    keys: set[str] = set()
    for kind in ("vllm", "neuron", "reranker"):
        alarms = obs.service_alarms(
            stack="s",
            service="x",
            kind=kind,
            load_balancer="app/a/1",
            target_group="targetgroup/t/1",
            cluster_name="c",
            ecs_service_name="x",
            min_count=1,
        )
        keys |= {a.key for a in alarms}
    gpu = obs.pool_alarms(stack="s", pool="p", kind="gpu", settings=obs.AlarmSettings())
    keys |= {a.key for a in gpu}
    gateway = obs.gateway_alarms(
        stack="s",
        service="g",
        load_balancer="app/a/1",
        target_group="targetgroup/g/1",
        cluster_name="c",
        ecs_service_name="g",
        min_count=1,
        max_count=2,
        target_cpu_percent=60,
        longest_request_seconds=300,
    )
    worker = obs.worker_alarms(
        stack="s",
        worker="w",
        queue_name="q",
        dead_letter_queue_name="q-dlq",
        cluster_name="c",
        ecs_service_name="w",
        acceptable_latency_seconds=60,
        max_job_seconds=30,
        backlog_target=2,
        max_count=4,
        max_receive_count=3,
    )
    keys |= {a.key for a in [*gateway, *worker]}
    rule = obs.deployment_rollback_rule("s", "arn:aws:ecs:us-east-1:123456789012:cluster/c")
    keys.add(rule["Name"].removeprefix("s-"))
    rows = {line.split("|")[1].strip().split("`")[1] for line in section.splitlines()
            if line.startswith("| `")}  # fmt: skip
    assert rows == keys


def test_operations_doc_names_every_published_metric_and_the_pins():
    for kind in m.METRICS_BY_KIND:
        for name in m.published_names(kind):
            assert name.removesuffix("P50").removesuffix("P99").removesuffix("Mean") in OPERATIONS
    for metric in m.VLLM_METRICS + m.RERANKER_METRICS:
        assert metric.source in OPERATIONS, metric.source
    assert obs.CLOUDWATCH_AGENT_VERSION in OPERATIONS
    assert m.NAMESPACE in OPERATIONS and m.HOST_NAMESPACE in OPERATIONS
