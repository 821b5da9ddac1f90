"""The stack's dashboard (pure): one CloudWatch dashboard body with a row per model, re-ranker,
gateway, worker and pool, and the endpoint's.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ecs_inference.contracts import metrics as m
from ecs_inference.contracts.aws_limits import DASHBOARD_MAX_WIDGETS
from ecs_inference.operations import watch
from ecs_inference.operations.alarms import queue_age_threshold_seconds
from ecs_inference.operations.errors import ObservabilityError
from ecs_inference.operations.watch import Watch, WatchedService
from ecs_inference.specs.gateway import LiteLLMGatewaySpec
from ecs_inference.specs.names import derived_name

if TYPE_CHECKING:
    from ecs_inference.workers.decisions import WorkerDecisions

# PutDashboard: name of letters, digits, '-' and '_' up to 255; body at most 1 MB (UTF-8); the
# widget limit is contracts.aws_limits'.
DASHBOARD_NAME = re.compile(r"^[A-Za-z0-9_-]{1,255}$")
DASHBOARD_BODY_MAX_BYTES = 1_000_000


def dashboard_name(stack: str) -> str:
    """`ecs-inference-<stack>`, valid for any stack name (a '.' is not; see `derived_name`)."""
    return derived_name(f"ecs-inference-{stack}", invalid="[^A-Za-z0-9_-]", max_length=255)


_ENGINE_GRAPHS = frozenset(
    {
        "Queue: waiting / running per task",
        "Time to first token p50 / p99 (ms)",
        "Tokens/s (prompt, generated)",
    }
)
"""Model graphs drawn only from the metrics sidecar's series."""


@dataclass(frozen=True)
class _Board:
    """What every row reads: the stack, the region, and each placeholder's value (deploy-time
    names and ARN suffixes: `components.operations.watch`)."""

    stack: str
    region: str
    values: Mapping[str, str]

    def graph(
        self, title: str, metrics: list[list[Any]], *, stat: str = "Average", **extra: Any
    ) -> dict[str, Any]:
        props: dict[str, Any] = {
            "title": title,
            "region": self.region,
            "metrics": metrics,
            "view": "timeSeries",
            "stat": stat,
            "period": 60,
        }
        props.update(extra)
        return {"type": "metric", "width": 8, "height": 6, "properties": props}

    def engine(self, name: str, service: str, **opts: Any) -> list[Any]:
        row: list[Any] = [m.NAMESPACE, name, m.DIM_STACK, self.stack, m.DIM_SERVICE, service]
        return [*row, opts] if opts else row

    def alb(self, key: str) -> list[str]:
        """A target group's dimensions (`key`: the service's placeholder subject)."""
        return ["TargetGroup", self.value(watch.target_group(key)), *self.load_balancer()]

    def value(self, placeholder: str) -> str:
        return self.values.get(placeholder, placeholder)

    def load_balancer(self) -> list[str]:
        return ["LoadBalancer", self.value(watch.LOAD_BALANCER)]

    def ecs(self, key: str) -> list[str]:
        svc = self.value(watch.ecs_service(key))
        return ["ClusterName", self.value(watch.CLUSTER), "ServiceName", svc]

    def tasks(self, key: str, title: str, names: Sequence[str]) -> dict[str, Any]:
        metrics = [[_CI, name, *self.ecs(key)] for name in names]
        return self.graph(title, metrics, stat="Maximum")


_ALB, _CI, _SQS = "AWS/ApplicationELB", "ECS/ContainerInsights", "AWS/SQS"


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
    board = _Board(stack, region, values or {})
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
    models = [s for s in watched.services if s.kind != "reranker"]
    for s in models:
        header(f"model {s.service} ({s.kind}, pool {s.pool or ''})")
        widgets += _model_row(board, s)
    for s in watched.services:
        if s.kind == "reranker":
            header(f"re-ranker {s.service}")
            widgets += _reranker_row(board, s.service)
    if watched.gateway is not None:
        header(f"gateway {watched.gateway.path} (LiteLLM)")
        widgets += _gateway_row(board, watched.gateway)
    for w in watched.workers:
        header(f"worker {w.name}")
        widgets += _worker_row(board, w)
    for pool in watched.pools_of("gpu"):
        header(f"GPU pool {pool}")
        widgets += _gpu_pool_row(board, pool)
    for pool in watched.pools_of("neuron"):
        header(f"Neuron pool {pool}")
        widgets += _neuron_pool_row(board, pool)
    header("endpoint")
    widgets += _endpoint_row(board)
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


def _model_row(b: _Board, s: WatchedService) -> list[dict[str, Any]]:
    svc, tg = s.service, b.alb(s.service)
    panels = [
        b.graph(
            "Requests (per minute) and 5xx",
            [
                [_ALB, "RequestCount", *tg, {"stat": "Sum"}],
                [_ALB, "HTTPCode_Target_5XX_Count", *tg, {"stat": "Sum"}],
            ],
        ),
        b.graph(
            "Queue: waiting / running per task",
            [
                b.engine(m.REQUESTS_WAITING, svc),
                b.engine(m.REQUESTS_RUNNING, svc),
                b.engine(m.KV_CACHE_USAGE, svc, yAxis="right"),
            ],
        ),
        b.graph(
            "Time to first token p50 / p99 (ms)",
            [b.engine(m.TTFT_P50, svc), b.engine(m.TTFT_P99, svc, stat="Maximum")],
        ),
        b.graph(
            "Tokens/s (prompt, generated)",
            [
                b.engine(m.PROMPT_TOKENS, svc, id="p", visible=False),
                b.engine(m.GENERATION_TOKENS, svc, id="g", visible=False),
                [{"expression": "p / PERIOD(p)", "label": "prompt tokens/s"}],
                [{"expression": "g / PERIOD(g)", "label": "generated tokens/s"}],
            ],
            stat="Sum",
        ),
        b.graph(
            "Healthy targets, engines up",
            [
                [_ALB, "HealthyHostCount", *tg, {"stat": "Minimum"}],
                [_ALB, "UnHealthyHostCount", *tg, {"stat": "Maximum"}],
                b.engine(m.ENGINE_UP, svc, stat="SampleCount", label="samples"),
            ],
        ),
        b.tasks(
            svc,
            "Tasks: running / desired / pending",
            ("RunningTaskCount", "DesiredTaskCount", "PendingTaskCount"),
        ),
    ]
    if not s.engine_metrics:
        # No sidecar (engines whose metrics it cannot scrape): ALB and ECS graphs only.
        panels = [p for p in panels if p["properties"]["title"] not in _ENGINE_GRAPHS]
    return panels


def _reranker_row(b: _Board, svc: str) -> list[dict[str, Any]]:
    return [
        b.graph(
            "Latency p50 / p99 (ms)",
            [
                b.engine(m.RERANKER_LATENCY_P50, svc),
                b.engine(m.RERANKER_LATENCY_P99, svc, stat="Maximum"),
            ],
        ),
        b.graph(
            "Requests, 429s (queue full), queue",
            [
                b.engine(m.RERANKER_REQUESTS, svc, stat="Sum"),
                b.engine(m.RERANKER_THROTTLED, svc, stat="Sum"),
                b.engine(m.RERANKER_QUEUE_WORK_TOKENS, svc, yAxis="right"),
            ],
        ),
        b.graph(
            "CPU (%)",
            [
                ["AWS/ECS", "CPUUtilization", *b.ecs(svc)],
                [_ALB, "HealthyHostCount", *b.alb(svc), {"stat": "Minimum", "yAxis": "right"}],
            ],
        ),
    ]


def _host(b: _Board, pool: str, *names: str, **opts: Any) -> list[Any]:
    row: list[Any] = [m.HOST_NAMESPACE, *names[:1], m.DIM_STACK, b.stack, m.DIM_POOL, pool]
    return [*row, *names[1:], opts] if opts else [*row, *names[1:]]


def _gpu_pool_row(b: _Board, pool: str) -> list[dict[str, Any]]:
    return [
        b.graph("GPU utilisation (%)", [_host(b, pool, m.NVIDIA_UTILIZATION)], stat="Maximum"),
        b.graph(
            "GPU memory used / total (MiB)",
            [_host(b, pool, m.NVIDIA_MEMORY_USED), _host(b, pool, m.NVIDIA_MEMORY_TOTAL)],
            stat="Maximum",
        ),
        b.graph(
            "Temperature (C), power (W)",
            [
                _host(b, pool, m.NVIDIA_TEMPERATURE),
                _host(b, pool, m.NVIDIA_POWER, yAxis="right"),
            ],
            stat="Maximum",
        ),
    ]


def _neuron_pool_row(b: _Board, pool: str) -> list[dict[str, Any]]:
    return [
        b.graph(
            "NeuronCore utilisation (ratio)",
            [_host(b, pool, m.NEURON_CORE_UTILIZATION)],
            stat="Maximum",
        ),
        b.graph(
            "Neuron device memory used (bytes)",
            [
                _host(
                    b, pool, m.NEURON_DEVICE_MEMORY_USED, m.NEURON_MEMORY_LOCATION, "neuron_device"
                )
            ],
            stat="Maximum",
        ),
        b.graph("Neuron execution errors", [_host(b, pool, m.NEURON_EXECUTION_ERRORS)], stat="Sum"),
    ]


def _endpoint_row(b: _Board) -> list[dict[str, Any]]:
    lb = b.load_balancer()

    def pair(title: str, first: str, second: str) -> dict[str, Any]:
        return b.graph(title, [[_ALB, first, *lb], [_ALB, second, *lb]], stat="Sum")

    return [
        pair(
            "4xx / 5xx from the load balancer", "HTTPCode_ELB_4XX_Count", "HTTPCode_ELB_5XX_Count"
        ),
        # jwt-validation and authenticate-cognito refusals (401s are ELB 4xx above); the ELB
        # counts failed IdP exchanges separately.
        pair("Authentication failures", "ELBAuthFailure", "ELBAuthError"),
        pair("Active / new connections", "ActiveConnectionCount", "NewConnectionCount"),
    ]


def _line(label: str, value: float) -> dict[str, Any]:
    return {"annotations": {"horizontal": [{"label": label, "value": float(value)}]}}


_RUNNING_DESIRED = ("RunningTaskCount", "DesiredTaskCount")


def _gateway_row(b: _Board, gw: LiteLLMGatewaySpec) -> list[dict[str, Any]]:
    """Requests and 5xx, response time against the longest route's timeout, targets (LiteLLM's
    liveness), CPU and memory against the scaling target, tasks."""
    tg, ecs = b.alb(watch.GATEWAY_KEY), b.ecs(watch.GATEWAY_KEY)
    return [
        b.graph(
            "Requests (per minute) and 5xx",
            [
                [_ALB, code, *tg, {"stat": "Sum"}]
                for code in (
                    "RequestCount",
                    "HTTPCode_Target_5XX_Count",
                    "HTTPCode_Target_4XX_Count",
                )
            ],
        ),
        b.graph(
            "Response time p50 / p99 (s)",
            [[_ALB, "TargetResponseTime", *tg, {"stat": p}] for p in ("p50", "p99")],
            **_line("longest route timeout", gw.litellm.longest_request_seconds),
        ),
        b.graph(
            "Healthy / unhealthy targets (LiteLLM liveness)",
            [
                [_ALB, "HealthyHostCount", *tg, {"stat": "Minimum"}],
                [_ALB, "UnHealthyHostCount", *tg, {"stat": "Maximum"}],
            ],
        ),
        b.graph(
            "CPU / memory (%)",
            [
                ["AWS/ECS", "CPUUtilization", *ecs],
                ["AWS/ECS", "MemoryUtilization", *ecs, {"stat": "Maximum"}],
            ],
            **_line("CPU scaling target", gw.target_cpu_percent),
        ),
        b.tasks(watch.GATEWAY_KEY, "Tasks: running / desired", _RUNNING_DESIRED),
    ]


def _worker_row(b: _Board, w: WorkerDecisions) -> list[dict[str, Any]]:
    """Queue depth, age of the oldest message against its alarm, backlog per task against the
    scaling target, the dead-letter queue, tasks."""
    key = watch.worker_key(w.name)
    queue = ["QueueName", b.value(watch.queue(w.name))]
    age = queue_age_threshold_seconds(w.input.acceptable_latency_seconds, w.input.max_job_seconds)
    return [
        b.graph(
            "Queue: visible / in flight",
            [
                [_SQS, "ApproximateNumberOfMessagesVisible", *queue],
                [_SQS, "ApproximateNumberOfMessagesNotVisible", *queue],
            ],
            stat="Maximum",
        ),
        b.graph(
            "Age of the oldest message (s)",
            [[_SQS, "ApproximateAgeOfOldestMessage", *queue]],
            stat="Maximum",
            **_line("queue-age alarm", age),
        ),
        b.graph(
            "Backlog per task",
            [
                [
                    _SQS,
                    "ApproximateNumberOfMessagesVisible",
                    *queue,
                    {"id": "visible", "visible": False, "stat": "Maximum"},
                ],
                [
                    _CI,
                    "RunningTaskCount",
                    *b.ecs(key),
                    {"id": "running", "visible": False, "stat": "Average"},
                ],
                [{"expression": "visible / running", "label": "messages per task"}],
            ],
            **_line("scaling target", w.backlog_target),
        ),
        b.graph(
            "Dead-letter queue (messages)",
            [
                [
                    _SQS,
                    "ApproximateNumberOfMessagesVisible",
                    "QueueName",
                    b.value(watch.dead_letter_queue(w.name)),
                ]
            ],
            stat="Maximum",
        ),
        b.tasks(key, "Tasks: running / desired", _RUNNING_DESIRED),
    ]
