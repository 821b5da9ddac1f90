"""The stack's dashboard (pure): one CloudWatch dashboard body with a row per model, re-ranker,
gateway, worker and pool, and the endpoint's.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ecs_inference.contracts import metrics as m
from ecs_inference.contracts.aws_limits import DASHBOARD_MAX_WIDGETS
from ecs_inference.names import derived_name
from ecs_inference.operations import watch
from ecs_inference.operations.alarms import queue_age_threshold_seconds
from ecs_inference.operations.errors import ObservabilityError
from ecs_inference.operations.watch import Watch

# PutDashboard: name of letters, digits, '-' and '_' up to 255; body at most 1 MB (UTF-8); the
# widget limit is contracts.aws_limits'.
DASHBOARD_NAME = re.compile(r"^[A-Za-z0-9_-]{1,255}$")
DASHBOARD_BODY_MAX_BYTES = 1_000_000


def dashboard_name(stack: str) -> str:
    """`ecs-inference-<stack>`, valid for any stack name (a '.' is not; see `derived_name`)."""
    return derived_name(f"ecs-inference-{stack}", invalid="[^A-Za-z0-9_-]", max_length=255)


@dataclass(frozen=True)
class Series:
    """One line of a graph: `metric` of `namespace` over the subject's dimension set `dims`
    (`alb`: target group and load balancer; `ecs`: cluster and ECS service; `service` /
    `pool`: Stack/Service of the metrics sidecar, Stack/Pool of the CloudWatch agent; `lb`: the
    load balancer; `queue` / `dlq`: a worker's queues), then the `extra` dimension pairs and
    the widget's options for it (`stat`, `yAxis`, `id`, `visible`, `label`)."""

    namespace: str
    metric: str
    dims: str
    extra: tuple[str, ...] = ()
    options: Mapping[str, Any] = field(default_factory=dict[str, Any])


@dataclass(frozen=True)
class Graph:
    """One graph of a row: its series (or metric-math expressions), the default statistic, a
    horizontal line at one of the subject's facts (`line`: label, fact), and whether it is drawn
    only from the metrics sidecar's series (`engine`: left out of a service without it)."""

    title: str
    series: tuple[Series | dict[str, str], ...]
    stat: str = "Average"
    line: tuple[str, str] | None = None
    engine: bool = False


_ALB, _CI, _ECS, _SQS = "AWS/ApplicationELB", "ECS/ContainerInsights", "AWS/ECS", "AWS/SQS"


def _alb(metric: str, **options: Any) -> Series:
    return Series(_ALB, metric, "alb", options=options)


def _engine(metric: str, **options: Any) -> Series:
    return Series(m.NAMESPACE, metric, "service", options=options)


def _host(metric: str, *extra: str) -> Series:
    return Series(m.HOST_NAMESPACE, metric, "pool", extra)


def _tasks(title: str, *names: str) -> Graph:
    return Graph(title, tuple(Series(_CI, n, "ecs") for n in names), stat="Maximum")


def _sum(title: str, dims: str, *metrics: str) -> Graph:
    return Graph(title, tuple(Series(_ALB, n, dims) for n in metrics), stat="Sum")


MODEL = (
    Graph(
        "Requests (per minute) and 5xx",
        (_alb("RequestCount", stat="Sum"), _alb("HTTPCode_Target_5XX_Count", stat="Sum")),
    ),
    Graph(
        "Queue: waiting / running per task",
        (
            _engine(m.REQUESTS_WAITING),
            _engine(m.REQUESTS_RUNNING),
            _engine(m.KV_CACHE_USAGE, yAxis="right"),
        ),
        engine=True,
    ),
    Graph(
        "Time to first token p50 / p99 (ms)",
        (_engine(m.TTFT_P50), _engine(m.TTFT_P99, stat="Maximum")),
        engine=True,
    ),
    Graph(
        "Tokens/s (prompt, generated)",
        (
            _engine(m.PROMPT_TOKENS, id="p", visible=False),
            _engine(m.GENERATION_TOKENS, id="g", visible=False),
            {"expression": "p / PERIOD(p)", "label": "prompt tokens/s"},
            {"expression": "g / PERIOD(g)", "label": "generated tokens/s"},
        ),
        stat="Sum",
        engine=True,
    ),
    Graph(
        "Healthy targets, engines up",
        (
            _alb("HealthyHostCount", stat="Minimum"),
            _alb("UnHealthyHostCount", stat="Maximum"),
            _engine(m.ENGINE_UP, stat="SampleCount", label="samples"),
        ),
    ),
    _tasks(
        "Tasks: running / desired / pending",
        "RunningTaskCount",
        "DesiredTaskCount",
        "PendingTaskCount",
    ),
)
RERANKER = (
    Graph(
        "Latency p50 / p99 (ms)",
        (_engine(m.RERANKER_LATENCY_P50), _engine(m.RERANKER_LATENCY_P99, stat="Maximum")),
    ),
    Graph(
        "Requests, 429s (queue full), queue",
        (
            _engine(m.RERANKER_REQUESTS, stat="Sum"),
            _engine(m.RERANKER_THROTTLED, stat="Sum"),
            _engine(m.RERANKER_QUEUE_WORK_TOKENS, yAxis="right"),
        ),
    ),
    Graph(
        "CPU (%)",
        (
            Series(_ECS, "CPUUtilization", "ecs"),
            _alb("HealthyHostCount", stat="Minimum", yAxis="right"),
        ),
    ),
)
GATEWAY = (
    Graph(
        "Requests (per minute) and 5xx",
        tuple(
            _alb(code, stat="Sum")
            for code in ("RequestCount", "HTTPCode_Target_5XX_Count", "HTTPCode_Target_4XX_Count")
        ),
    ),
    Graph(
        "Response time p50 / p99 (s)",
        (_alb("TargetResponseTime", stat="p50"), _alb("TargetResponseTime", stat="p99")),
        line=("longest route timeout", "longest_request_seconds"),
    ),
    Graph(
        "Healthy / unhealthy targets (LiteLLM liveness)",
        (_alb("HealthyHostCount", stat="Minimum"), _alb("UnHealthyHostCount", stat="Maximum")),
    ),
    Graph(
        "CPU / memory (%)",
        (
            Series(_ECS, "CPUUtilization", "ecs"),
            Series(_ECS, "MemoryUtilization", "ecs", options={"stat": "Maximum"}),
        ),
        line=("CPU scaling target", "target_cpu_percent"),
    ),
    _tasks("Tasks: running / desired", "RunningTaskCount", "DesiredTaskCount"),
)
_VISIBLE = "ApproximateNumberOfMessagesVisible"
WORKER = (
    Graph(
        "Queue: visible / in flight",
        (
            Series(_SQS, _VISIBLE, "queue"),
            Series(_SQS, "ApproximateNumberOfMessagesNotVisible", "queue"),
        ),
        stat="Maximum",
    ),
    Graph(
        "Age of the oldest message (s)",
        (Series(_SQS, "ApproximateAgeOfOldestMessage", "queue"),),
        stat="Maximum",
        line=("queue-age alarm", "queue_age_seconds"),
    ),
    Graph(
        "Backlog per task",
        (
            Series(
                _SQS,
                _VISIBLE,
                "queue",
                options={"id": "visible", "visible": False, "stat": "Maximum"},
            ),
            Series(
                _CI,
                "RunningTaskCount",
                "ecs",
                options={"id": "running", "visible": False, "stat": "Average"},
            ),
            {"expression": "visible / running", "label": "messages per task"},
        ),
        line=("scaling target", "backlog_target"),
    ),
    Graph("Dead-letter queue (messages)", (Series(_SQS, _VISIBLE, "dlq"),), stat="Maximum"),
    _tasks("Tasks: running / desired", "RunningTaskCount", "DesiredTaskCount"),
)
GPU_POOL = (
    Graph("GPU utilisation (%)", (_host(m.NVIDIA_UTILIZATION),), stat="Maximum"),
    Graph(
        "GPU memory used / total (MiB)",
        (_host(m.NVIDIA_MEMORY_USED), _host(m.NVIDIA_MEMORY_TOTAL)),
        stat="Maximum",
    ),
    Graph(
        "Temperature (C), power (W)",
        (
            _host(m.NVIDIA_TEMPERATURE),
            Series(m.HOST_NAMESPACE, m.NVIDIA_POWER, "pool", options={"yAxis": "right"}),
        ),
        stat="Maximum",
    ),
)
NEURON_POOL = (
    Graph("NeuronCore utilisation (ratio)", (_host(m.NEURON_CORE_UTILIZATION),), stat="Maximum"),
    Graph(
        "Neuron device memory used (bytes)",
        (_host(m.NEURON_DEVICE_MEMORY_USED, m.NEURON_MEMORY_LOCATION, "neuron_device"),),
        stat="Maximum",
    ),
    Graph("Neuron execution errors", (_host(m.NEURON_EXECUTION_ERRORS),), stat="Sum"),
)
ENDPOINT = (
    _sum(
        "4xx / 5xx from the load balancer", "lb", "HTTPCode_ELB_4XX_Count", "HTTPCode_ELB_5XX_Count"
    ),
    # jwt-validation and authenticate-cognito refusals (401s are ELB 4xx above); the ELB counts
    # failed IdP exchanges separately.
    _sum("Authentication failures", "lb", "ELBAuthFailure", "ELBAuthError"),
    _sum("Active / new connections", "lb", "ActiveConnectionCount", "NewConnectionCount"),
)
"""Each row's graphs, by subject kind: one table, drawn by `_row`."""


@dataclass(frozen=True)
class _Board:
    """What every row reads: the stack, the region, and each placeholder's value (deploy-time
    names and ARN suffixes: `components.operations.watch`)."""

    stack: str
    region: str
    values: Mapping[str, str]

    def value(self, placeholder: str) -> str:
        return self.values.get(placeholder, placeholder)

    def dims(self, key: str) -> dict[str, list[str]]:
        """A load-balanced service's dimension sets (`key`: its placeholder subject)."""
        return {
            "alb": ["TargetGroup", self.value(watch.target_group(key)), *self.lb()],
            "ecs": self.ecs(key),
            "service": [m.DIM_STACK, self.stack, m.DIM_SERVICE, key],
        }

    def lb(self) -> list[str]:
        return ["LoadBalancer", self.value(watch.LOAD_BALANCER)]

    def ecs(self, key: str) -> list[str]:
        svc = self.value(watch.ecs_service(key))
        return ["ClusterName", self.value(watch.CLUSTER), "ServiceName", svc]

    def row(
        self,
        graphs: Sequence[Graph],
        dims: Mapping[str, list[str]],
        facts: Mapping[str, float] | None = None,
    ) -> list[dict[str, Any]]:
        """The widgets of `graphs` for one subject: its dimension sets and facts."""
        out = []
        for g in graphs:
            metrics = [
                [s]
                if isinstance(s, dict)
                else [s.namespace, s.metric, *dims[s.dims], *s.extra]
                + ([dict(s.options)] if s.options else [])
                for s in g.series
            ]
            props: dict[str, Any] = {
                "title": g.title,
                "region": self.region,
                "metrics": metrics,
                "view": "timeSeries",
                "stat": g.stat,
                "period": 60,
            }
            if g.line is not None:
                label, fact = g.line
                value = float((facts or {})[fact])
                props["annotations"] = {"horizontal": [{"label": label, "value": value}]}
            out.append({"type": "metric", "width": 8, "height": 6, "properties": props})
        return out


def dashboard_body(
    watched: Watch,
    *,
    stack: str,
    region: str,
    values: Mapping[str, str] | None = None,
    alarm_arns: Sequence[str] = (),
) -> str:
    """The PutDashboard body (JSON): a row of widgets per model, per re-ranker, the gateway, per
    worker, per pool, and the endpoint's; an alarm status widget on top when alarms are given.
    `values` maps each placeholder to what it stands for (default: none, the placeholders stand
    for themselves, to check the limits before deploy time)."""
    b = _Board(stack, region, values or {})
    widgets: list[dict[str, Any]] = []

    def header(text: str) -> None:
        widgets.append(
            {"type": "text", "width": 24, "height": 1, "properties": {"markdown": f"## {text}"}}
        )

    if alarm_arns:
        widgets.append(
            {
                "type": "alarm",
                "width": 24,
                "height": 3,
                "properties": {"title": "Alarms", "alarms": list(alarm_arns)},
            }
        )
    for s in watched.services:
        if s.kind != "reranker":
            header(f"model {s.service} ({s.kind}, pool {s.pool or ''})")
            # No sidecar (engines whose metrics it cannot scrape): ALB and ECS graphs only.
            graphs = [g for g in MODEL if s.engine_metrics or not g.engine]
            widgets += b.row(graphs, b.dims(s.service))
    for s in watched.services:
        if s.kind == "reranker":
            header(f"re-ranker {s.service}")
            widgets += b.row(RERANKER, b.dims(s.service))
    if (gw := watched.gateway) is not None:
        header(f"gateway {gw.input.path} (LiteLLM)")
        facts = {
            "longest_request_seconds": gw.longest_request_seconds,
            "target_cpu_percent": gw.input.target_cpu_percent,
        }
        widgets += b.row(GATEWAY, b.dims(watch.GATEWAY_KEY), facts)
    for w in watched.workers:
        header(f"worker {w.name}")
        dims = {
            "queue": ["QueueName", b.value(watch.queue(w.name))],
            "dlq": ["QueueName", b.value(watch.dead_letter_queue(w.name))],
            "ecs": b.ecs(watch.worker_key(w.name)),
        }
        age = queue_age_threshold_seconds(
            w.input.acceptable_latency_seconds, w.input.max_job_seconds
        )
        facts = {"queue_age_seconds": age, "backlog_target": w.backlog_target}
        widgets += b.row(WORKER, dims, facts)
    for kind, title, graphs in (("gpu", "GPU", GPU_POOL), ("neuron", "Neuron", NEURON_POOL)):
        for pool in watched.pools_of(kind):
            header(f"{title} pool {pool}")
            widgets += b.row(graphs, {"pool": [m.DIM_STACK, stack, m.DIM_POOL, pool]})
    header("endpoint")
    widgets += b.row(ENDPOINT, {"lb": b.lb()})
    if len(widgets) > DASHBOARD_MAX_WIDGETS:
        raise ObservabilityError(
            f"the dashboard needs {len(widgets)} widgets; CloudWatch allows "
            f"{DASHBOARD_MAX_WIDGETS} per dashboard (split the stack)"
        )
    body = json.dumps({"start": "-PT6H", "periodOverride": "inherit", "widgets": widgets})
    if len(body.encode()) > DASHBOARD_BODY_MAX_BYTES:
        raise ObservabilityError(
            f"the dashboard body is {len(body.encode())} bytes; CloudWatch allows "
            f"{DASHBOARD_BODY_MAX_BYTES}"
        )
    return body
