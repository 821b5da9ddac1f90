"""Metrics sidecar: scrape a serving container's Prometheus `/metrics`, print CloudWatch EMF.

Runs next to the engine in the same ECS task (awsvpc: the engine is on 127.0.0.1) as a
non-essential container. Every `METRICS_INTERVAL_SECONDS` it scrapes `METRICS_TARGET_URL`,
derives the metrics listed in `METRICS_SPEC` (JSON written by `contracts.metrics.scrape_spec`)
and prints one embedded-metric-format JSON line to stdout; the awslogs driver ships it to the
service's log group and CloudWatch extracts the metrics (no PutMetricData, no IAM for it, no
agent).

Failure behaviour (the reason this is a separate, non-essential container):
- the engine not answering yet (loading weights) is not an outage: nothing is published until
  it answers once or `METRICS_STARTUP_GRACE_SECONDS` pass;
- after that, a failed scrape publishes `EngineUp` = 0 and no load figures, so a dead engine is
  visible as a value, never hidden behind a live sidecar;
- nothing the engine returns can stop the loop: malformed lines are skipped, NaN and infinities
  are not published, a counter that went down restarted (its new value is the increase), a
  metric missing from the text is left out of that line.

Stdlib only (Python 3.11); imports nothing from the repository (the image is built from this
directory alone), so the contract arrives as data in the environment.
"""

from __future__ import annotations

import json
import math
import os
import re
import signal
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

Labels = tuple[tuple[str, str], ...]

# Prometheus text exposition 0.0.4: `name{label="value",...} value [timestamp]`.
_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})?\s+(\S+)(?:\s+-?\d+)?\s*$")
_LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*(,|$)')
_UNESCAPE = {"\\\\": "\\", '\\"': '"', "\\n": "\n"}


@dataclass(frozen=True)
class Sample:
    name: str
    labels: Labels
    value: float


def _parse_labels(text: str) -> Labels | None:
    inner = text[1:-1].strip()
    labels: list[tuple[str, str]] = []
    pos = 0
    while pos < len(inner):
        match = _LABEL.match(inner, pos)
        if match is None:
            return None
        value = match.group(2)
        if "\\" in value:
            value = re.sub(r"\\[\\\"n]", lambda m: _UNESCAPE[m.group(0)], value)
        labels.append((match.group(1), value))
        pos = match.end()
    return tuple(sorted(labels))


def _parse_value(text: str) -> float | None:
    try:
        return float(text)  # accepts NaN, +Inf, -Inf as Prometheus writes them
    except ValueError:
        return None


def parse_exposition(text: str, wanted: frozenset[str] | None = None) -> list[Sample]:
    """The samples of a Prometheus text body; comments, blank and malformed lines are skipped,
    and so are samples whose name is not in `wanted` (default: keep all) before their labels
    are parsed (an engine exposes far more than is published)."""
    samples: list[Sample] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if wanted is not None and line.split("{", 1)[0].split(None, 1)[0] not in wanted:
            continue
        match = _SAMPLE.match(line)
        if match is None:
            continue
        labels = _parse_labels(match.group(2)) if match.group(2) else ()
        value = _parse_value(match.group(3))
        if labels is None or value is None:
            continue
        samples.append(Sample(match.group(1), labels, value))
    return samples


# ------------------------------------------------------------------------------------------------
# derivation
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MetricSpec:
    name: str
    source: str
    kind: str
    unit: str
    aggregate: str = "sum"
    scale: float = 1.0
    quantile: float | None = None
    labels: Labels = ()

    @staticmethod
    def from_json(doc: Mapping[str, Any]) -> MetricSpec:
        kind = doc["kind"]
        if kind not in ("gauge", "counter", "histogram_quantile", "histogram_mean"):
            raise ValueError(f"metric {doc.get('name')!r}: unknown kind {kind!r}")
        quantile = doc.get("quantile")
        if kind == "histogram_quantile" and not (
            isinstance(quantile, (int, float)) and 0 <= quantile <= 1
        ):
            raise ValueError(f"metric {doc['name']!r}: quantile must be within 0-1")
        if doc.get("aggregate", "sum") not in ("sum", "mean", "max"):
            raise ValueError(f"metric {doc['name']!r}: unknown aggregate {doc['aggregate']!r}")
        return MetricSpec(
            name=str(doc["name"]),
            source=str(doc["source"]),
            kind=kind,
            unit=str(doc["unit"]),
            aggregate=doc.get("aggregate", "sum"),
            scale=float(doc.get("scale", 1.0)),
            quantile=None if quantile is None else float(quantile),
            labels=tuple(sorted((str(k), str(v)) for k, v in doc.get("labels", ()))),
        )


@dataclass(frozen=True)
class Spec:
    namespace: str
    dimensions: tuple[tuple[str, ...], ...]
    metrics: tuple[MetricSpec, ...]

    @property
    def sample_names(self) -> frozenset[str]:
        """Every sample name a metric of this spec may read."""
        suffixes = ("", "_total", "_bucket", "_sum", "_count")
        return frozenset(m.source + s for m in self.metrics for s in suffixes)

    @staticmethod
    def from_json(text: str) -> Spec:
        doc = json.loads(text)
        metrics = tuple(MetricSpec.from_json(m) for m in doc["metrics"])
        if len(metrics) + 1 > 100:  # + EngineUp; EMF allows 100 metrics per directive
            raise ValueError(f"{len(metrics)} metrics: EMF allows at most 99 besides EngineUp")
        return Spec(
            namespace=str(doc["namespace"]),
            dimensions=tuple(tuple(str(d) for d in ds) for ds in doc["dimensions"]),
            metrics=metrics,
        )


def _matches(labels: Labels, wanted: Labels) -> bool:
    have = dict(labels)
    return all(have.get(k) == v for k, v in wanted)


def _finite(value: float) -> bool:
    return not (math.isnan(value) or math.isinf(value))


def _aggregate(values: list[float], how: str) -> float | None:
    if not values:
        return None
    if how == "mean":
        return sum(values) / len(values)
    if how == "max":
        return max(values)
    return sum(values)


def _increase(current: float, previous: float | None) -> float:
    """Increase of a counter series since the previous scrape; a counter that went down was
    restarted from zero, so everything it counts now is new."""
    if previous is None or current < previous:
        return current
    return current - previous


def bucket_quantile(q: float, buckets: list[tuple[float, float]]) -> float | None:
    """Prometheus' histogram_quantile on cumulative `(upper bound, count)` pairs sorted by bound,
    the last being +Inf: linear interpolation inside the bucket holding the rank; a rank in the
    +Inf bucket answers the highest finite bound. None without observations."""
    if not buckets or not math.isinf(buckets[-1][0]):
        return None
    total = buckets[-1][1]
    if total <= 0:
        return None
    rank = q * total
    lower_bound, lower_count = 0.0, 0.0
    for bound, count in buckets:
        if count >= rank:
            if math.isinf(bound):
                return lower_bound if len(buckets) > 1 else None
            if count == lower_count:
                return bound
            return lower_bound + (bound - lower_bound) * (rank - lower_count) / (
                count - lower_count
            )
        lower_bound, lower_count = bound, count
    return lower_bound


class Deriver:
    """Turns successive scrapes into the values of one interval. Keeps, per counter or
    histogram series, the value of the previous successful scrape."""

    def __init__(self, spec: Spec) -> None:
        self.spec = spec
        self._previous: dict[tuple[str, Labels], float] | None = None

    def derive(self, samples: Iterable[Sample]) -> dict[str, float]:
        """Published name -> value for this scrape (missing inputs leave a name out)."""
        by_name: dict[str, list[Sample]] = {}
        for s in samples:
            by_name.setdefault(s.name, []).append(s)
        current = {(s.name, s.labels): s.value for group in by_name.values() for s in group}
        previous = self._previous
        out: dict[str, float] = {}
        for metric in self.spec.metrics:
            value = self._one(metric, by_name, previous)
            if value is not None and _finite(value):
                out[metric.name] = round(value * metric.scale, 6)
        self._previous = {k: v for k, v in current.items() if _finite(v)}
        return out

    def _series(self, by_name: Mapping[str, list[Sample]], name: str, wanted: Labels):
        return [s for s in by_name.get(name, ()) if _matches(s.labels, wanted) and _finite(s.value)]

    def _deltas(
        self,
        samples: list[Sample],
        previous: Mapping[tuple[str, Labels], float] | None,
    ) -> list[tuple[Sample, float]]:
        if previous is None:  # first scrape: a baseline, not an interval
            return []
        return [(s, _increase(s.value, previous.get((s.name, s.labels)))) for s in samples]

    def _one(
        self,
        m: MetricSpec,
        by_name: Mapping[str, list[Sample]],
        previous: Mapping[tuple[str, Labels], float] | None,
    ) -> float | None:
        if m.kind == "gauge":
            values = [s.value for s in self._series(by_name, m.source, m.labels)]
            return _aggregate(values, m.aggregate)
        if m.kind == "counter":
            name = f"{m.source}_total" if f"{m.source}_total" in by_name else m.source
            if name not in by_name or previous is None:
                return None
            # The family is there but no series has these labels yet (no 429 so far): none
            # happened, which is 0, not missing.
            series = self._series(by_name, name, m.labels)
            return sum(d for _, d in self._deltas(series, previous))
        if m.kind == "histogram_mean":
            sums = self._deltas(self._series(by_name, f"{m.source}_sum", m.labels), previous)
            counts = self._deltas(self._series(by_name, f"{m.source}_count", m.labels), previous)
            count = sum(d for _, d in counts)
            return sum(d for _, d in sums) / count if count > 0 else None
        # histogram_quantile: bucket increases per series, summed over series by bound
        buckets = self._series(by_name, f"{m.source}_bucket", m.labels)
        if not buckets or previous is None:
            return None
        restarted = self._restarted_series(buckets, previous)
        per_bound: dict[float, float] = {}
        for s in buckets:
            le = dict(s.labels).get("le")
            bound = _parse_value(le) if le is not None else None
            if bound is None or math.isnan(bound):
                continue
            before = (
                None if _without_le(s.labels) in restarted else previous.get((s.name, s.labels))
            )
            per_bound[bound] = per_bound.get(bound, 0.0) + _increase(s.value, before)
        cumulative = sorted(per_bound.items())
        assert m.quantile is not None
        return bucket_quantile(m.quantile, cumulative)

    @staticmethod
    def _restarted_series(
        buckets: list[Sample], previous: Mapping[tuple[str, Labels], float]
    ) -> set[Labels]:
        """Series (labels without `le`) of which any bucket went down: the engine restarted, so
        all their buckets count from zero (mixing old and new buckets would break monotony)."""
        out: set[Labels] = set()
        for s in buckets:
            before = previous.get((s.name, s.labels))
            if before is not None and s.value < before:
                out.add(_without_le(s.labels))
        return out


def _without_le(labels: Labels) -> Labels:
    return tuple(kv for kv in labels if kv[0] != "le")


# ------------------------------------------------------------------------------------------------
# EMF
# ------------------------------------------------------------------------------------------------

ENGINE_UP = "EngineUp"
DIMENSIONS = ("Stack", "Service", "Task")


def emf_document(
    spec: Spec,
    values: Mapping[str, float],
    dimensions: Mapping[str, str],
    timestamp_ms: int,
) -> dict[str, Any]:
    """One EMF event: the directive lists exactly the metrics present in `values`."""
    units = {m.name: m.unit for m in spec.metrics}
    units[ENGINE_UP] = "None"
    names = [n for n in units if n in values]
    doc: dict[str, Any] = {
        "_aws": {
            "Timestamp": timestamp_ms,
            "CloudWatchMetrics": [
                {
                    "Namespace": spec.namespace,
                    "Dimensions": [list(d) for d in spec.dimensions],
                    "Metrics": [{"Name": n, "Unit": units[n]} for n in names],
                }
            ],
        }
    }
    doc.update(dimensions)
    doc.update({n: values[n] for n in names})
    return doc


# ------------------------------------------------------------------------------------------------
# the loop
# ------------------------------------------------------------------------------------------------


class ScrapeError(Exception):
    pass


def scrape(url: str, timeout: float, max_bytes: int) -> str:
    """The body of `url`; ScrapeError on any failure (refused, timeout, HTTP error, too large)."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            body = response.read(max_bytes + 1)
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise ScrapeError(f"{url}: {exc}") from None
    if len(body) > max_bytes:
        raise ScrapeError(f"{url}: body larger than {max_bytes} bytes")
    return body.decode("utf-8", errors="replace")


def task_id(metadata_uri: str | None, timeout: float = 2.0) -> str | None:
    """The task id (last part of the task ARN) from the ECS task metadata endpoint v4."""
    if not metadata_uri:
        return None
    try:
        with urllib.request.urlopen(f"{metadata_uri}/task", timeout=timeout) as response:
            arn = json.loads(response.read(1_000_000)).get("TaskARN", "")
    except (urllib.error.URLError, OSError, ValueError, AttributeError):
        return None
    return arn.rsplit("/", 1)[-1] or None


@dataclass
class Sidecar:
    """One scrape-and-print step per `step()`; `run()` loops until `stop` is set."""

    spec: Spec
    url: str
    stack: str
    service: str
    interval: float
    startup_grace: float
    metadata_uri: str | None = None
    timeout: float = 3.0
    max_bytes: int = 8 * 1024 * 1024
    out: Callable[[str], None] = field(default=lambda line: print(line, flush=True))
    err: Callable[[str], None] = field(
        default=lambda line: print(line, file=sys.stderr, flush=True)
    )
    clock: Callable[[], float] = time.monotonic
    wall_ms: Callable[[], int] = field(default=lambda: int(time.time() * 1000))
    stop: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        self.deriver = Deriver(self.spec)
        self._wanted = self.spec.sample_names
        self.started = self.clock()
        self.seen_up = False
        self._task: str | None = None
        self._down_reported = False

    def _task_id(self) -> str:
        if self._task is None:
            self._task = task_id(self.metadata_uri)
        return self._task or "unknown"

    def step(self) -> dict[str, Any] | None:
        """Scrape once; print and return the EMF document (None when nothing is published)."""
        try:
            body = scrape(self.url, self.timeout, self.max_bytes)
        except ScrapeError as exc:
            if not self.seen_up and self.clock() - self.started < self.startup_grace:
                return None  # still loading: no verdict yet
            if not self._down_reported:
                self.err(f"metrics sidecar: engine not answering ({exc}); publishing EngineUp=0")
                self._down_reported = True
            values: dict[str, float] = {ENGINE_UP: 0.0}
        else:
            self.seen_up = True
            self._down_reported = False
            samples = parse_exposition(body, self._wanted)
            values = {ENGINE_UP: 1.0, **self.deriver.derive(samples)}
        dims: dict[str, str] = dict(
            zip(DIMENSIONS, (self.stack, self.service, self._task_id()), strict=True)
        )
        doc = emf_document(self.spec, values, dims, self.wall_ms())
        self.out(json.dumps(doc, separators=(",", ":")))
        return doc

    def run(self) -> None:
        while not self.stop.is_set():
            began = self.clock()
            try:
                self.step()
            except Exception as exc:  # the loop must outlive any one bad scrape
                self.err(f"metrics sidecar: scrape step failed: {exc!r}")
            self.stop.wait(max(0.0, self.interval - (self.clock() - began)))


def _number(env: Mapping[str, str], name: str, default: float) -> float:
    raw = env.get(name, "")
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not value >= 0 or math.isinf(value):
        raise ValueError(f"{name} must be a non-negative number, got {raw!r}")
    return value


def from_environment(env: Mapping[str, str]) -> Sidecar:
    """The sidecar the task definition configured; ValueError naming the variable otherwise."""
    missing = [
        n for n in ("METRICS_TARGET_URL", "METRICS_SPEC", "METRICS_STACK", "METRICS_SERVICE")
        if not env.get(n)
    ]  # fmt: skip
    if missing:
        raise ValueError(f"missing environment variable(s): {', '.join(missing)}")
    try:
        spec = Spec.from_json(env["METRICS_SPEC"])
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"METRICS_SPEC is not a valid metrics spec: {exc}") from None
    interval = _number(env, "METRICS_INTERVAL_SECONDS", 15.0)
    if interval < 1:
        raise ValueError("METRICS_INTERVAL_SECONDS must be at least 1")
    return Sidecar(
        spec=spec,
        url=env["METRICS_TARGET_URL"],
        stack=env["METRICS_STACK"],
        service=env["METRICS_SERVICE"],
        interval=interval,
        startup_grace=_number(env, "METRICS_STARTUP_GRACE_SECONDS", 600.0),
        metadata_uri=env.get("ECS_CONTAINER_METADATA_URI_V4"),
    )


def main() -> int:
    try:
        sidecar = from_environment(os.environ)
    except ValueError as exc:
        print(f"metrics sidecar: {exc}", file=sys.stderr, flush=True)
        return 2
    # ECS stops the task with SIGTERM; finish the current step and exit 0.
    signal.signal(signal.SIGTERM, lambda *_: sidecar.stop.set())
    signal.signal(signal.SIGINT, lambda *_: sidecar.stop.set())
    sidecar.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
