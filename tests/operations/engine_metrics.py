"""The Prometheus families a pinned vLLM release really defines, read from its source, and a
`/metrics` body produced from them by the real prometheus_client.

`vllm/v1/metrics/loggers.py` creates every family as
`self._gauge_cls(name="vllm:...", labelnames=..., buckets=...)` (also `_counter_cls`,
`_histogram_cls`). They are read with `ast` (vLLM cannot be imported without its CUDA stack):
name, kind, extra label names (`labelnames + ["reason"]`) and buckets, resolved from a literal,
or from `histogram_buckets("<family>")` to `vllm/v1/metrics/buckets.py`'s
`<FAMILY>_BUCKETS` constant (0.33), else prometheus_client's defaults.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from tools import engine_flags

_KINDS = {"_gauge_cls": "gauge", "_counter_cls": "counter", "_histogram_cls": "histogram"}
BASE_LABELS = ("model_name", "engine")


@dataclass(frozen=True)
class Family:
    name: str
    kind: str  # gauge | counter | histogram
    extra_labels: tuple[str, ...]
    buckets: tuple[float, ...] | None


def _bucket_constants(root: Path) -> dict[str, tuple[float, ...]]:
    path = root / "vllm" / "v1" / "metrics" / "buckets.py"
    if not path.is_file():
        return {}
    out: dict[str, tuple[float, ...]] = {}
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            try:
                out[node.target.id] = tuple(float(v) for v in ast.literal_eval(node.value))  # type: ignore[arg-type]
            except (ValueError, TypeError, SyntaxError):
                continue
    return out


@functools.cache
def families(release: engine_flags.EngineRelease) -> dict[str, Family]:
    """Every `vllm:*` family `PrometheusStatLogger` of `release` defines, by name."""
    root = engine_flags.source_root(release)
    tree = ast.parse((root / "vllm" / "v1" / "metrics" / "loggers.py").read_text())
    constants = _bucket_constants(root)
    assigned: dict[str, tuple[float, ...]] = {}
    for node in ast.walk(tree):
        # `x_buckets = [0.3, 0.5, ...]` (0.11)
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, (ast.List, ast.Tuple))
        ):
            with contextlib.suppress(ValueError, TypeError):
                assigned[node.targets[0].id] = tuple(float(v) for v in ast.literal_eval(node.value))
        # `x_buckets = histogram_buckets("family", ...)` (0.33)
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Name)
            and node.value.func.id == "histogram_buckets"
            and node.value.args
            and isinstance(node.value.args[0], ast.Constant)
        ):
            key = f"{str(node.value.args[0].value).upper()}_BUCKETS"
            if key in constants:
                assigned[node.targets[0].id] = constants[key]
    found: dict[str, Family] = {}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        kind = _KINDS.get(node.func.attr)
        kwargs = {k.arg: k.value for k in node.keywords if k.arg}
        name = kwargs.get("name")
        if (
            kind is None
            or not isinstance(name, ast.Constant)
            or not str(name.value).startswith("vllm:")
        ):
            continue
        extra: tuple[str, ...] = ()
        labels = kwargs.get("labelnames")
        if isinstance(labels, ast.BinOp) and isinstance(labels.right, ast.List):
            extra = tuple(str(ast.literal_eval(e)) for e in labels.right.elts)
        buckets: tuple[float, ...] | None = None
        value = kwargs.get("buckets")
        if isinstance(value, (ast.List, ast.Tuple)):
            try:
                buckets = tuple(float(v) for v in ast.literal_eval(value))
            except ValueError:
                buckets = None
        elif isinstance(value, ast.Name):
            buckets = assigned.get(value.id)
        found[str(name.value)] = Family(str(name.value), kind, extra, buckets)
    return found


@dataclass
class FakeEngine:
    """A registry holding every family of a release, for `engines` data-parallel engines,
    driven like the engine drives it, rendered by prometheus_client itself."""

    release: engine_flags.EngineRelease
    engines: int = 1
    model: str = "llama"

    def __post_init__(self) -> None:
        self.registry = CollectorRegistry()
        self.metrics: dict[str, Gauge | Counter | Histogram] = {}
        for fam in families(self.release).values():
            labelnames = [*BASE_LABELS, *fam.extra_labels]
            if fam.kind == "gauge":
                self.metrics[fam.name] = Gauge(
                    fam.name, fam.name, labelnames, registry=self.registry
                )
            elif fam.kind == "counter":
                self.metrics[fam.name] = Counter(
                    fam.name, fam.name, labelnames, registry=self.registry
                )
            else:
                buckets = fam.buckets or Histogram.DEFAULT_BUCKETS
                self.metrics[fam.name] = Histogram(
                    fam.name, fam.name, labelnames, buckets=buckets, registry=self.registry
                )
        # Label every family for every engine, as vLLM's create_metric_per_engine does, so
        # all series exist (with zero values) from the first scrape.
        for fam in families(self.release).values():
            for engine in range(self.engines):
                self._child(fam.name, engine)

    def _child(self, name: str, engine: int) -> Any:
        fam = families(self.release)[name]
        extra = ["capacity" if label == "reason" else "x" for label in fam.extra_labels]
        return self.metrics[name].labels(self.model, str(engine), *extra)

    def set(self, name: str, value: float, engine: int = 0) -> None:
        self._child(name, engine).set(value)

    def inc(self, name: str, amount: float, engine: int = 0) -> None:
        self._child(name, engine).inc(amount)

    def observe(self, name: str, values: Iterable[float], engine: int = 0) -> None:
        child = self._child(name, engine)
        for v in values:
            child.observe(v)

    def text(self) -> str:
        return generate_latest(self.registry).decode()


def bucket_bounds(buckets: tuple[float, ...], value: float) -> tuple[float, float]:
    """The (lower, upper] bucket of `value` among `buckets` (+Inf appended)."""
    lower = 0.0
    for upper in (*sorted(buckets), math.inf):
        if value <= upper:
            return lower, upper
        lower = upper
    raise AssertionError("unreachable")
