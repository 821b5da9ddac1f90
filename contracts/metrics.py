"""The metrics contract: which Prometheus series each serving container exposes, what the
metrics sidecar publishes to CloudWatch from them, and under which names and dimensions.

Stdlib only. Three parties read it and nothing else:
- the metrics sidecar (`images/metrics/emf_sidecar.py`) gets `scrape_spec(kind)` as JSON in its
  environment (`ENV_SPEC`), so the image knows no engine and needs no rebuild when a name moves;
- the Pulumi side (scaling policies, alarms, the dashboard) refers to the published names below;
- the re-ranker service (`images/reranker`, owned separately) must keep exposing the
  `reranker_*` families named here; `tests/operations/test_metrics_contract.py` reads its source.

Where the names come from (checked against the pinned sources in `.cache/engines`, see
`tools/engine_flags.py`; the tests parse them again, so a rename in a new pin fails a test):
- vLLM 0.33.0 (GPU image): `vllm/v1/metrics/loggers.py`, `PrometheusStatLogger`;
- vLLM 0.11.0 under optimum-neuron 0.4.5 (Neuron image): the same file of that release. Every
  family published here exists in both; 0.11 still has the deprecated
  `vllm:time_per_output_token_seconds`, which is not used. On Neuron the platform sets the KV
  block size to `max_model_len` (optimum-neuron `vllm/platform.py`), so KV-cache usage moves in
  steps of one whole sequence: it reads as running / batch size.
- prometheus_client renders a Counter `x` as `x_total` and a Histogram `x` as `x_bucket`,
  `x_sum`, `x_count`; the sidecar matches on the family name.

Every vLLM series carries the labels `model_name` and `engine` (one per data-parallel engine);
the sidecar sums (or averages, see `aggregate`) over them, so a task publishes one value.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Final, Literal

from .aws_calls import AwsCall

NAMESPACE: Final[str] = "ECSInference"
"""CloudWatch namespace of everything the sidecar publishes (custom namespaces may not start
with `AWS/`)."""

DIM_STACK: Final[str] = "Stack"
DIM_SERVICE: Final[str] = "Service"
DIM_TASK: Final[str] = "Task"
SERVICE_DIMENSIONS: Final[tuple[str, ...]] = (DIM_STACK, DIM_SERVICE)
"""Per-service aggregate: what scaling, alarms and the dashboard read."""
TASK_DIMENSIONS: Final[tuple[str, ...]] = (DIM_STACK, DIM_SERVICE, DIM_TASK)
"""Per-task series: for finding the one bad task. Each task id is a new CloudWatch metric."""
DIMENSION_SETS: Final[tuple[tuple[str, ...], ...]] = (SERVICE_DIMENSIONS, TASK_DIMENSIONS)

# --- the sidecar container ----------------------------------------------------------------------
SIDECAR_CONTAINER_NAME: Final[str] = "metrics"
ENV_TARGET_URL: Final[str] = "METRICS_TARGET_URL"
"""URL the sidecar scrapes, e.g. `http://127.0.0.1:8000/metrics` (awsvpc: same network
namespace as the serving container)."""
ENV_SPEC: Final[str] = "METRICS_SPEC"
"""JSON from `scrape_spec(kind)`."""
ENV_STACK: Final[str] = "METRICS_STACK"
ENV_SERVICE: Final[str] = "METRICS_SERVICE"
ENV_INTERVAL_SECONDS: Final[str] = "METRICS_INTERVAL_SECONDS"
ENV_STARTUP_GRACE_SECONDS: Final[str] = "METRICS_STARTUP_GRACE_SECONDS"
"""Seconds after sidecar start during which a failed scrape means "still loading", not "down"
(the service's health-check grace period)."""
ENV_METADATA_URI: Final[str] = "ECS_CONTAINER_METADATA_URI_V4"
"""Set by the ECS agent in every container; `<uri>/task` gives the task ARN (the Task dimension)."""
DEFAULT_INTERVAL_SECONDS: Final[int] = 15
"""Scrape period. Four samples a minute: target tracking evaluates 1-minute periods and its
scale-out alarm needs 3 of them, so a 15 s sample rate keeps every period populated even when
one scrape is lost."""
SCRAPE_TIMEOUT_SECONDS: Final[float] = 3.0
MAX_SCRAPE_BYTES: Final[int] = 8 * 1024 * 1024
"""A /metrics body larger than this is refused (a runaway label set must not eat the sidecar's
memory reservation)."""
SIDECAR_MEMORY_RESERVATION_MIB: Final[int] = 32
"""Soft memory reservation of the sidecar (measured: 23 MiB peak RSS scraping a vLLM 0.33 body
every second; no hard limit, so a spike borrows from the task instead of killing the sidecar)."""

EMF_MAX_METRICS_PER_DOCUMENT: Final[int] = 100
"""CloudWatch embedded metric format: at most 100 metrics per MetricDirective."""

# --- published metric names ---------------------------------------------------------------------
ENGINE_UP: Final[str] = "EngineUp"
"""1 when the scrape succeeded, 0 when the engine stopped answering after it had answered once
or after the startup grace. Published every interval, so a dead engine behind a live sidecar
shows as 0, never as silence."""
REQUESTS_WAITING: Final[str] = "RequestsWaiting"
REQUESTS_RUNNING: Final[str] = "RequestsRunning"
KV_CACHE_USAGE: Final[str] = "KvCacheUsage"
TTFT_P50: Final[str] = "TimeToFirstTokenP50"
TTFT_P99: Final[str] = "TimeToFirstTokenP99"
ITL_P50: Final[str] = "InterTokenLatencyP50"
ITL_P99: Final[str] = "InterTokenLatencyP99"
E2E_P50: Final[str] = "RequestLatencyP50"
E2E_P99: Final[str] = "RequestLatencyP99"
PROMPT_TOKENS: Final[str] = "PromptTokens"
GENERATION_TOKENS: Final[str] = "GenerationTokens"
REQUESTS_FINISHED: Final[str] = "RequestsFinished"
PREEMPTIONS: Final[str] = "Preemptions"
RERANKER_QUEUE_WORK_TOKENS: Final[str] = "RerankerQueueWorkTokens"
RERANKER_IN_FLIGHT: Final[str] = "RerankerInFlight"
RERANKER_REQUESTS: Final[str] = "RerankerRequests"
RERANKER_THROTTLED: Final[str] = "RerankerThrottled"
RERANKER_LATENCY_P50: Final[str] = "RerankerLatencyP50"
RERANKER_LATENCY_P99: Final[str] = "RerankerLatencyP99"
RERANKER_BATCH_PAIRS: Final[str] = "RerankerBatchPairsMean"

Kind = Literal["gauge", "counter", "histogram_quantile", "histogram_mean"]
Aggregate = Literal["sum", "mean", "max"]
# CloudWatch StandardUnit values used here (EMF rejects anything else).
Unit = Literal["Count", "Percent", "Milliseconds", "Seconds", "None"]


@dataclass(frozen=True)
class PublishedMetric:
    """One CloudWatch metric the sidecar derives from one Prometheus family.

    `kind`: `gauge` (last value), `counter` (increase since the previous scrape; a counter that
    went down restarted, so its new value is the increase), `histogram_quantile` (the `quantile`
    of the observations since the previous scrape, interpolated in the buckets as Prometheus'
    histogram_quantile does), `histogram_mean` (sum/count of those observations).
    `aggregate` over the family's series (engines): `sum` (default), `mean` or `max`.
    `scale` multiplies the value (seconds to milliseconds, fraction to percent). `labels`: only
    series with exactly these label values count (e.g. status="429").
    """

    name: str
    source: str
    kind: Kind
    unit: Unit
    aggregate: Aggregate = "sum"
    scale: float = 1.0
    quantile: float | None = None
    labels: tuple[tuple[str, str], ...] = field(default=())


def _vllm_metrics() -> tuple[PublishedMetric, ...]:
    ms = 1000.0
    return (
        PublishedMetric(REQUESTS_WAITING, "vllm:num_requests_waiting", "gauge", "Count"),
        PublishedMetric(REQUESTS_RUNNING, "vllm:num_requests_running", "gauge", "Count"),
        # A fraction (1 = full) per engine; averaged over data-parallel engines, in percent.
        PublishedMetric(
            KV_CACHE_USAGE, "vllm:kv_cache_usage_perc", "gauge", "Percent", "mean", 100.0
        ),
        PublishedMetric(
            TTFT_P50, "vllm:time_to_first_token_seconds", "histogram_quantile",
            "Milliseconds", scale=ms, quantile=0.5,
        ),
        PublishedMetric(
            TTFT_P99, "vllm:time_to_first_token_seconds", "histogram_quantile",
            "Milliseconds", scale=ms, quantile=0.99,
        ),
        PublishedMetric(
            ITL_P50, "vllm:inter_token_latency_seconds", "histogram_quantile",
            "Milliseconds", scale=ms, quantile=0.5,
        ),
        PublishedMetric(
            ITL_P99, "vllm:inter_token_latency_seconds", "histogram_quantile",
            "Milliseconds", scale=ms, quantile=0.99,
        ),
        PublishedMetric(
            E2E_P50, "vllm:e2e_request_latency_seconds", "histogram_quantile",
            "Seconds", quantile=0.5,
        ),
        PublishedMetric(
            E2E_P99, "vllm:e2e_request_latency_seconds", "histogram_quantile",
            "Seconds", quantile=0.99,
        ),
        PublishedMetric(PROMPT_TOKENS, "vllm:prompt_tokens", "counter", "Count"),
        PublishedMetric(GENERATION_TOKENS, "vllm:generation_tokens", "counter", "Count"),
        PublishedMetric(REQUESTS_FINISHED, "vllm:request_success", "counter", "Count"),
        PublishedMetric(PREEMPTIONS, "vllm:num_preemptions", "counter", "Count"),
    )  # fmt: skip


VLLM_METRICS: Final[tuple[PublishedMetric, ...]] = _vllm_metrics()
"""GPU image, vLLM 0.33.0."""
NEURON_METRICS: Final[tuple[PublishedMetric, ...]] = _vllm_metrics()
"""Neuron image, vLLM 0.11.0 under optimum-neuron 0.4.5: the same families exist there (tested);
kept separate so a future pin that drops one changes only its engine's list."""

RERANKER_METRICS: Final[tuple[PublishedMetric, ...]] = (
    PublishedMetric(RERANKER_QUEUE_WORK_TOKENS, "reranker_queue_work_tokens", "gauge", "Count"),
    PublishedMetric(RERANKER_IN_FLIGHT, "reranker_in_flight_requests", "gauge", "Count"),
    PublishedMetric(RERANKER_REQUESTS, "reranker_requests", "counter", "Count"),
    PublishedMetric(
        RERANKER_THROTTLED, "reranker_requests", "counter", "Count", labels=(("status", "429"),)
    ),
    PublishedMetric(
        RERANKER_LATENCY_P50, "reranker_request_seconds", "histogram_quantile",
        "Milliseconds", scale=1000.0, quantile=0.5,
    ),
    PublishedMetric(
        RERANKER_LATENCY_P99, "reranker_request_seconds", "histogram_quantile",
        "Milliseconds", scale=1000.0, quantile=0.99,
    ),
    PublishedMetric(RERANKER_BATCH_PAIRS, "reranker_batch_pairs", "histogram_mean", "Count"),
)  # fmt: skip
"""The re-ranker service's own families (`images/reranker/app/server.py`, class `Metrics`)."""

ServiceKind = Literal["vllm", "neuron", "reranker"]
METRICS_BY_KIND: Final[dict[str, tuple[PublishedMetric, ...]]] = {
    "vllm": VLLM_METRICS,
    "neuron": NEURON_METRICS,
    "reranker": RERANKER_METRICS,
}


def published_names(kind: str) -> tuple[str, ...]:
    """Every CloudWatch metric name a `kind` service's sidecar publishes, `ENGINE_UP` first."""
    return (ENGINE_UP, *(m.name for m in METRICS_BY_KIND[kind]))


def scrape_spec(kind: str) -> str:
    """The sidecar's `ENV_SPEC` value for a `kind` service: compact, key-sorted JSON (stable
    task definition diffs)."""
    metrics = METRICS_BY_KIND[kind]
    doc = {
        "namespace": NAMESPACE,
        "dimensions": [list(d) for d in DIMENSION_SETS],
        "metrics": [asdict(m) for m in metrics],
    }
    return json.dumps(doc, sort_keys=True, separators=(",", ":"))


# --- accelerator hosts (the CloudWatch agent on the instances; operations/telemetry.py) ---
HOST_NAMESPACE: Final[str] = "ECSInference/Hosts"
"""Namespace of the host telemetry; the instance role may PutMetricData into this one only."""
DIM_POOL: Final[str] = "Pool"
HOST_DIMENSIONS: Final[tuple[str, ...]] = (DIM_STACK, DIM_POOL)
"""The agent's rollup: per stack and pool (per-GPU series keep the agent's own host/index)."""

NVIDIA_MEASUREMENTS: Final[tuple[str, ...]] = (
    "utilization_gpu",
    "utilization_memory",
    "memory_total",
    "memory_used",
    "memory_free",
    "temperature_gpu",
    "power_draw",
)
"""The agent's `nvidia_gpu` measurements (nvidia-smi fields); published as `nvidia_smi_<name>`."""
NVIDIA_UTILIZATION: Final[str] = "nvidia_smi_utilization_gpu"
NVIDIA_MEMORY_USED: Final[str] = "nvidia_smi_memory_used"
NVIDIA_MEMORY_TOTAL: Final[str] = "nvidia_smi_memory_total"
NVIDIA_TEMPERATURE: Final[str] = "nvidia_smi_temperature_gpu"
NVIDIA_POWER: Final[str] = "nvidia_smi_power_draw"

# neuron-monitor-prometheus.py (aws-neuronx-tools) families the agent keeps.
NEURON_CORE_UTILIZATION: Final[str] = "neuroncore_utilization_ratio"
NEURON_DEVICE_MEMORY_USED: Final[str] = "neuron_runtime_memory_used_bytes"
"""Labelled `memory_location` = `neuron_device` | `host`; kept as a dimension."""
NEURON_MEMORY_LOCATION: Final[str] = "memory_location"
NEURON_EXECUTION_ERRORS: Final[str] = "execution_errors_total"
NEURON_MONITOR_FAMILIES: Final[tuple[str, ...]] = (
    NEURON_CORE_UTILIZATION,
    NEURON_DEVICE_MEMORY_USED,
    NEURON_EXECUTION_ERRORS,
)


def aws_calls(environment: Mapping[str, str]) -> tuple[AwsCall, ...]:
    """The sidecar makes no AWS call: it prints EMF lines to stdout, the awslogs driver ships
    them with the execution role (checked with the task's log configuration) and CloudWatch
    extracts the metrics. No PutMetricData, so its task role needs nothing for it."""
    del environment
    return ()
