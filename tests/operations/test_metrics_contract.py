"""The re-ranker service exposes the families `contracts.metrics` publishes from it.

The service (`images/reranker/app/server.py`) is owned separately; this reads its source with
`ast` so that a renamed or retyped family fails here, not silently in CloudWatch.
"""

from __future__ import annotations

import ast
from pathlib import Path

from ecs_inference.contracts import metrics as contract

SERVER = Path(__file__).resolve().parents[2] / "images" / "reranker" / "app" / "server.py"
_KINDS = {"Counter": "counter", "Gauge": "gauge", "Histogram": "histogram"}


def _reranker_families() -> dict[str, tuple[str, tuple[str, ...]]]:
    """name -> (kind, label names) of every prometheus_client metric the server creates."""
    out: dict[str, tuple[str, tuple[str, ...]]] = {}
    for node in ast.walk(ast.parse(SERVER.read_text())):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
            continue
        kind = _KINDS.get(node.func.id)
        if kind is None or not node.args or not isinstance(node.args[0], ast.Constant):
            continue
        name = str(node.args[0].value)
        labels: tuple[str, ...] = ()
        if len(node.args) >= 3 and isinstance(node.args[2], (ast.List, ast.Tuple)):
            labels = tuple(str(ast.literal_eval(e)) for e in node.args[2].elts)
        for kw in node.keywords:
            if kw.arg == "labelnames":
                labels = tuple(str(v) for v in ast.literal_eval(kw.value))
        # prometheus_client drops a Counter's `_total` suffix from the family name
        if kind == "counter" and name.endswith("_total"):
            name = name[: -len("_total")]
        out[name] = (kind, labels)
    return out


def test_reranker_exposes_every_family_the_contract_publishes():
    found = _reranker_families()
    assert found, f"no prometheus_client metrics found in {SERVER}"
    for m in contract.RERANKER_METRICS:
        assert m.source in found, f"{m.source} is not exposed by the re-ranker"
        kind, labels = found[m.source]
        assert kind == {"histogram_quantile": "histogram", "histogram_mean": "histogram"}.get(
            m.kind, m.kind
        ), m
        for label, _ in m.labels:
            assert label in labels, f"{m.source} has no label {label!r} (labels: {labels})"
