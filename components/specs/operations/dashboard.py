"""The stack's dashboard (pure): one CloudWatch dashboard body with a row per model, re-ranker,
gateway, worker and pool, and the endpoint's.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ecs_inference.contracts import metrics as m
from ecs_inference.contracts.aws_limits import DASHBOARD_MAX_WIDGETS
from ecs_inference.specs.names import derived_name
from ecs_inference.specs.operations.errors import ObservabilityError

# PutDashboard: name of letters, digits, '-' and '_' up to 255; body at most 1 MB (UTF-8); the
# widget limit is contracts.aws_limits'.
DASHBOARD_NAME = re.compile(r"^[A-Za-z0-9_-]{1,255}$")
DASHBOARD_BODY_MAX_BYTES = 1_000_000
DASHBOARD_WIDGETS_MAX = DASHBOARD_MAX_WIDGETS


@dataclass(frozen=True)
class ModelPanel:
    service: str
    kind: str
    """The model's engine (its registry name)."""
    pool: str
    target_group: str
    ecs_service_name: str
    engine_metrics: bool = True
    """The task runs the metrics sidecar; without it the engine-series graphs are left out."""


@dataclass(frozen=True)
class RerankerPanel:
    service: str
    target_group: str
    ecs_service_name: str


@dataclass(frozen=True)
class GatewayPanel:
    """The AI gateway's row: `service` is its path; `longest_request_seconds` and
    `target_cpu_percent` are drawn as the alarm and scaling lines."""

    service: str
    target_group: str
    ecs_service_name: str
    longest_request_seconds: int
    target_cpu_percent: float


@dataclass(frozen=True)
class WorkerPanel:
    """A queue worker's row; `queue_age_seconds` and `backlog_target` are drawn as lines."""

    worker: str
    queue_name: str
    dead_letter_queue_name: str
    ecs_service_name: str
    queue_age_seconds: float
    backlog_target: float


@dataclass(frozen=True)
class DashboardInputs:
    """What the dashboard shows. ARN suffixes for the ALB and target groups, names for the
    cluster and services (known only at deploy time: the component applies over Outputs)."""

    stack: str
    region: str
    cluster_name: str
    load_balancer: str
    models: Sequence[ModelPanel] = ()
    rerankers: Sequence[RerankerPanel] = ()
    gateway: GatewayPanel | None = None
    workers: Sequence[WorkerPanel] = ()
    gpu_pools: Sequence[str] = ()
    neuron_pools: Sequence[str] = ()
    alarm_arns: Sequence[str] = field(default_factory=tuple)


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


def _graph(
    title: str, metrics: list[list[Any]], region: str, *, stat: str = "Average", **extra: Any
) -> dict[str, Any]:
    props: dict[str, Any] = {
        "title": title,
        "region": region,
        "metrics": metrics,
        "view": "timeSeries",
        "stat": stat,
        "period": 60,
    }
    props.update(extra)
    return {"type": "metric", "width": 8, "height": 6, "properties": props}


def _engine(name: str, stack: str, service: str, **opts: Any) -> list[Any]:
    row: list[Any] = [m.NAMESPACE, name, m.DIM_STACK, stack, m.DIM_SERVICE, service]
    return [*row, opts] if opts else row


def dashboard_body(inputs: DashboardInputs) -> str:
    """The PutDashboard body (JSON): a row of widgets per model, per re-ranker, the gateway, per
    worker, per pool, and the endpoint's; an alarm status widget on top when alarms are given."""
    widgets: list[dict[str, Any]] = []

    def header(text: str) -> None:
        widgets.append(
            {"type": "text", "width": 24, "height": 1, "properties": {"markdown": f"## {text}"}}
        )

    if inputs.alarm_arns:
        widgets.append(
            {
                "type": "alarm",
                "width": 24,
                "height": 3,
                "properties": {"title": "Alarms", "alarms": list(inputs.alarm_arns)},
            }
        )
    for mp in inputs.models:
        header(f"model {mp.service} ({mp.kind}, pool {mp.pool})")
        widgets += _model_row(inputs, mp)
    for rp in inputs.rerankers:
        header(f"re-ranker {rp.service}")
        widgets += _reranker_row(inputs, rp)
    if inputs.gateway is not None:
        widgets += _gateway_row(inputs, inputs.gateway, header)
    for wp in inputs.workers:
        widgets += _worker_row(inputs, wp, header)
    for pool in inputs.gpu_pools:
        header(f"GPU pool {pool}")
        widgets += _gpu_pool_row(inputs, pool)
    for pool in inputs.neuron_pools:
        header(f"Neuron pool {pool}")
        widgets += _neuron_pool_row(inputs, pool)
    header("endpoint")
    widgets += _endpoint_row(inputs)
    if len(widgets) > DASHBOARD_WIDGETS_MAX:
        raise ObservabilityError(
            f"the dashboard needs {len(widgets)} widgets; CloudWatch allows "
            f"{DASHBOARD_WIDGETS_MAX} per dashboard (split the stack)"
        )
    body = json.dumps({"start": "-PT6H", "periodOverride": "inherit", "widgets": widgets})
    if len(body.encode()) > DASHBOARD_BODY_MAX_BYTES:
        raise ObservabilityError(
            f"the dashboard body is {len(body.encode())} bytes; CloudWatch allows "
            f"{DASHBOARD_BODY_MAX_BYTES}"
        )
    return body


def _model_row(inputs: DashboardInputs, mp: ModelPanel) -> list[dict[str, Any]]:
    s, r = inputs.stack, inputs.region
    tg = ["TargetGroup", mp.target_group, "LoadBalancer", inputs.load_balancer]
    panels = [
        _graph(
            "Requests (per minute) and 5xx",
            [
                ["AWS/ApplicationELB", "RequestCount", *tg, {"stat": "Sum"}],
                ["AWS/ApplicationELB", "HTTPCode_Target_5XX_Count", *tg, {"stat": "Sum"}],
            ],
            r,
        ),
        _graph(
            "Queue: waiting / running per task",
            [
                _engine(m.REQUESTS_WAITING, s, mp.service),
                _engine(m.REQUESTS_RUNNING, s, mp.service),
                _engine(m.KV_CACHE_USAGE, s, mp.service, yAxis="right"),
            ],
            r,
        ),
        _graph(
            "Time to first token p50 / p99 (ms)",
            [
                _engine(m.TTFT_P50, s, mp.service),
                _engine(m.TTFT_P99, s, mp.service, stat="Maximum"),
            ],
            r,
        ),
        _graph(
            "Tokens/s (prompt, generated)",
            [
                _engine(m.PROMPT_TOKENS, s, mp.service, id="p", visible=False),
                _engine(m.GENERATION_TOKENS, s, mp.service, id="g", visible=False),
                [{"expression": "p / PERIOD(p)", "label": "prompt tokens/s"}],
                [{"expression": "g / PERIOD(g)", "label": "generated tokens/s"}],
            ],
            r,
            stat="Sum",
        ),
        _graph(
            "Healthy targets, engines up",
            [
                ["AWS/ApplicationELB", "HealthyHostCount", *tg, {"stat": "Minimum"}],
                ["AWS/ApplicationELB", "UnHealthyHostCount", *tg, {"stat": "Maximum"}],
                _engine(m.ENGINE_UP, s, mp.service, stat="SampleCount", label="samples"),
            ],
            r,
        ),
        _graph(
            "Tasks: running / desired / pending",
            [
                [
                    "ECS/ContainerInsights",
                    name,
                    "ClusterName",
                    inputs.cluster_name,
                    "ServiceName",
                    mp.ecs_service_name,
                ]
                for name in ("RunningTaskCount", "DesiredTaskCount", "PendingTaskCount")
            ],
            r,
            stat="Maximum",
        ),
    ]
    if not mp.engine_metrics:
        # No sidecar (engines whose metrics it cannot scrape): ALB and ECS graphs only.
        panels = [p for p in panels if p["properties"]["title"] not in _ENGINE_GRAPHS]
    return panels


def _reranker_row(inputs: DashboardInputs, rp: RerankerPanel) -> list[dict[str, Any]]:
    s, r = inputs.stack, inputs.region
    tg = ["TargetGroup", rp.target_group, "LoadBalancer", inputs.load_balancer]
    return [
        _graph(
            "Latency p50 / p99 (ms)",
            [
                _engine(m.RERANKER_LATENCY_P50, s, rp.service),
                _engine(m.RERANKER_LATENCY_P99, s, rp.service, stat="Maximum"),
            ],
            r,
        ),
        _graph(
            "Requests, 429s (queue full), queue",
            [
                _engine(m.RERANKER_REQUESTS, s, rp.service, stat="Sum"),
                _engine(m.RERANKER_THROTTLED, s, rp.service, stat="Sum"),
                _engine(m.RERANKER_QUEUE_WORK_TOKENS, s, rp.service, yAxis="right"),
            ],
            r,
        ),
        _graph(
            "CPU (%)",
            [
                [
                    "AWS/ECS",
                    "CPUUtilization",
                    "ClusterName",
                    inputs.cluster_name,
                    "ServiceName",
                    rp.ecs_service_name,
                ],
                [
                    "AWS/ApplicationELB",
                    "HealthyHostCount",
                    *tg,
                    {"stat": "Minimum", "yAxis": "right"},
                ],
            ],
            r,
        ),
    ]


def _gpu_pool_row(inputs: DashboardInputs, pool: str) -> list[dict[str, Any]]:
    r, dims = inputs.region, [m.DIM_STACK, inputs.stack, m.DIM_POOL, pool]
    return [
        _graph(
            "GPU utilisation (%)",
            [[m.HOST_NAMESPACE, m.NVIDIA_UTILIZATION, *dims]],
            r,
            stat="Maximum",
        ),
        _graph(
            "GPU memory used / total (MiB)",
            [
                [m.HOST_NAMESPACE, m.NVIDIA_MEMORY_USED, *dims],
                [m.HOST_NAMESPACE, m.NVIDIA_MEMORY_TOTAL, *dims],
            ],
            r,
            stat="Maximum",
        ),
        _graph(
            "Temperature (C), power (W)",
            [
                [m.HOST_NAMESPACE, m.NVIDIA_TEMPERATURE, *dims],
                [m.HOST_NAMESPACE, m.NVIDIA_POWER, *dims, {"yAxis": "right"}],
            ],
            r,
            stat="Maximum",
        ),
    ]


def _neuron_pool_row(inputs: DashboardInputs, pool: str) -> list[dict[str, Any]]:
    r, dims = inputs.region, [m.DIM_STACK, inputs.stack, m.DIM_POOL, pool]
    return [
        _graph(
            "NeuronCore utilisation (ratio)",
            [[m.HOST_NAMESPACE, m.NEURON_CORE_UTILIZATION, *dims]],
            r,
            stat="Maximum",
        ),
        _graph(
            "Neuron device memory used (bytes)",
            [
                [
                    m.HOST_NAMESPACE,
                    m.NEURON_DEVICE_MEMORY_USED,
                    *dims,
                    m.NEURON_MEMORY_LOCATION,
                    "neuron_device",
                ]
            ],
            r,
            stat="Maximum",
        ),
        _graph(
            "Neuron execution errors",
            [[m.HOST_NAMESPACE, m.NEURON_EXECUTION_ERRORS, *dims]],
            r,
            stat="Sum",
        ),
    ]


def _endpoint_row(inputs: DashboardInputs) -> list[dict[str, Any]]:
    r, lb = inputs.region, inputs.load_balancer
    return [
        _graph(
            "4xx / 5xx from the load balancer",
            [
                ["AWS/ApplicationELB", "HTTPCode_ELB_4XX_Count", "LoadBalancer", lb],
                ["AWS/ApplicationELB", "HTTPCode_ELB_5XX_Count", "LoadBalancer", lb],
            ],
            r,
            stat="Sum",
        ),
        _graph(
            "Authentication failures",
            [
                # jwt-validation and authenticate-cognito refusals (401s are ELB 4xx above);
                # the ELB counts failed IdP exchanges separately.
                ["AWS/ApplicationELB", "ELBAuthFailure", "LoadBalancer", lb],
                ["AWS/ApplicationELB", "ELBAuthError", "LoadBalancer", lb],
            ],
            r,
            stat="Sum",
        ),
        _graph(
            "Active / new connections",
            [
                ["AWS/ApplicationELB", "ActiveConnectionCount", "LoadBalancer", lb],
                ["AWS/ApplicationELB", "NewConnectionCount", "LoadBalancer", lb],
            ],
            r,
            stat="Sum",
        ),
    ]


def _line(label: str, value: float) -> dict[str, Any]:
    return {"annotations": {"horizontal": [{"label": label, "value": float(value)}]}}


def _tasks_graph(inputs: DashboardInputs, ecs_service_name: str) -> dict[str, Any]:
    return _graph(
        "Tasks: running / desired",
        [
            [
                "ECS/ContainerInsights",
                name,
                "ClusterName",
                inputs.cluster_name,
                "ServiceName",
                ecs_service_name,
            ]
            for name in ("RunningTaskCount", "DesiredTaskCount")
        ],
        inputs.region,
        stat="Maximum",
    )


def _gateway_row(
    inputs: DashboardInputs, gp: GatewayPanel, header: Callable[[str], None]
) -> list[dict[str, Any]]:
    """Requests and 5xx, response time against the longest route's timeout, targets (LiteLLM's
    liveness), CPU and memory against the scaling target, tasks."""
    r, lb = inputs.region, inputs.load_balancer
    tg = ["TargetGroup", gp.target_group, "LoadBalancer", lb]
    ecs = ["ClusterName", inputs.cluster_name, "ServiceName", gp.ecs_service_name]
    header(f"gateway {gp.service} (LiteLLM)")
    return [
        _graph(
            "Requests (per minute) and 5xx",
            [
                ["AWS/ApplicationELB", "RequestCount", *tg, {"stat": "Sum"}],
                ["AWS/ApplicationELB", "HTTPCode_Target_5XX_Count", *tg, {"stat": "Sum"}],
                ["AWS/ApplicationELB", "HTTPCode_Target_4XX_Count", *tg, {"stat": "Sum"}],
            ],
            r,
        ),
        _graph(
            "Response time p50 / p99 (s)",
            [
                ["AWS/ApplicationELB", "TargetResponseTime", *tg, {"stat": "p50"}],
                ["AWS/ApplicationELB", "TargetResponseTime", *tg, {"stat": "p99"}],
            ],
            r,
            **_line("longest route timeout", gp.longest_request_seconds),
        ),
        _graph(
            "Healthy / unhealthy targets (LiteLLM liveness)",
            [
                ["AWS/ApplicationELB", "HealthyHostCount", *tg, {"stat": "Minimum"}],
                ["AWS/ApplicationELB", "UnHealthyHostCount", *tg, {"stat": "Maximum"}],
            ],
            r,
        ),
        _graph(
            "CPU / memory (%)",
            [
                ["AWS/ECS", "CPUUtilization", *ecs],
                ["AWS/ECS", "MemoryUtilization", *ecs, {"stat": "Maximum"}],
            ],
            r,
            **_line("CPU scaling target", gp.target_cpu_percent),
        ),
        _tasks_graph(inputs, gp.ecs_service_name),
    ]


def _worker_row(
    inputs: DashboardInputs, wp: WorkerPanel, header: Callable[[str], None]
) -> list[dict[str, Any]]:
    """Queue depth, age of the oldest message against its alarm, backlog per task against the
    scaling target, the dead-letter queue, tasks."""
    r = inputs.region
    queue = ["QueueName", wp.queue_name]
    running = [
        "ECS/ContainerInsights",
        "RunningTaskCount",
        "ClusterName",
        inputs.cluster_name,
        "ServiceName",
        wp.ecs_service_name,
    ]
    header(f"worker {wp.worker}")
    return [
        _graph(
            "Queue: visible / in flight",
            [
                ["AWS/SQS", "ApproximateNumberOfMessagesVisible", *queue],
                ["AWS/SQS", "ApproximateNumberOfMessagesNotVisible", *queue],
            ],
            r,
            stat="Maximum",
        ),
        _graph(
            "Age of the oldest message (s)",
            [["AWS/SQS", "ApproximateAgeOfOldestMessage", *queue]],
            r,
            stat="Maximum",
            **_line("queue-age alarm", wp.queue_age_seconds),
        ),
        _graph(
            "Backlog per task",
            [
                [
                    "AWS/SQS",
                    "ApproximateNumberOfMessagesVisible",
                    *queue,
                    {"id": "visible", "visible": False, "stat": "Maximum"},
                ],
                [*running, {"id": "running", "visible": False, "stat": "Average"}],
                [{"expression": "visible / running", "label": "messages per task"}],
            ],
            r,
            **_line("scaling target", wp.backlog_target),
        ),
        _graph(
            "Dead-letter queue (messages)",
            [
                [
                    "AWS/SQS",
                    "ApproximateNumberOfMessagesVisible",
                    "QueueName",
                    wp.dead_letter_queue_name,
                ]
            ],
            r,
            stat="Maximum",
        ),
        _tasks_graph(inputs, wp.ecs_service_name),
    ]
