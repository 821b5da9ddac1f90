"""docs/operations.md (its runbook and its sections on how each part works) says what the code
does."""

from __future__ import annotations

from pathlib import Path

from ecs_inference.contracts import metrics as m
from ecs_inference.operations.alarms import ALARMS
from ecs_inference.operations.rollback import deployment_rollback_rule
from ecs_inference.operations.telemetry import CLOUDWATCH_AGENT_VERSION

ROOT = Path(__file__).resolve().parents[2]
OPERATIONS = (ROOT / "docs" / "operations.md").read_text()


def _section(text: str, title: str) -> str:
    start = text.index(f"## {title}")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else None]


def test_the_runbook_explains_every_alarm_the_stack_can_raise():
    section = _section(OPERATIONS, "Runbook")
    keys = set(ALARMS)
    rule = deployment_rollback_rule("s", "arn:aws:ecs:us-east-1:123456789012:cluster/c")
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
    assert CLOUDWATCH_AGENT_VERSION in OPERATIONS
    assert m.NAMESPACE in OPERATIONS and m.HOST_NAMESPACE in OPERATIONS
