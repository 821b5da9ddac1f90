"""The paging alarms (pure): one table of rows (`ALARMS`: metric or metric math, statistic,
threshold, periods, dimensions, description, meaning and action), one builder (`build_alarms`)
that turns a subject's rows into PutMetricAlarm requests, and one function per kind of subject
(model or re-ranker service, GPU pool, gateway, queue worker) that names its rows and facts.
Thresholds come from the input (`AlarmsConfig`) or from the subject's own decisions; an alarm's
name is `<stack>-<subject>-<key>`, the row's key. The dimensions' values are known only at deploy
time (ARN suffixes, generated names): the requests hold placeholders for them, so names, count and
shapes are fixed at preview, and the Operations component swaps each for its Output.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from ecs_inference import engines
from ecs_inference.contracts import litellm
from ecs_inference.contracts import metrics as m
from ecs_inference.contracts.aws_limits import ALARM_EVALUATION_MAX_SECONDS, ALARM_NAME_MAX
from ecs_inference.operations import watch
from ecs_inference.operations.errors import ObservabilityError
from ecs_inference.operations.input import AlarmsConfig
from ecs_inference.operations.watch import WatchedService
from ecs_inference.specs.gateway import LiteLLMGatewaySpec

if TYPE_CHECKING:
    # Only a type here: the workers' decisions import `queue_age_threshold_seconds`.
    from ecs_inference.workers.decisions import WorkerDecisions


def alarm_name(stack: str, subject: str, key: str) -> str:
    """`<stack>-<subject>-<key>`, checked against CloudWatch's 255-character limit."""
    name = f"{stack}-{subject}-{key}"
    if len(name) > ALARM_NAME_MAX:
        raise ObservabilityError(f"alarm name {name[:40]}... exceeds {ALARM_NAME_MAX} characters")
    return name


@dataclass(frozen=True)
class Read:
    """One metric an alarm reads: `dimensions` names the subject's dimension set (`alb`: its
    load balancer and target group; `service`: Stack/Service of the metrics sidecar; `ecs`: its
    cluster and ECS service; `queue` / `dlq`: its work and dead-letter queue; `pool`:
    Stack/Pool of the CloudWatch agent); `stat` a statistic or a percentile (`p99`); `id` the
    metric-math query id (default "": a single-metric alarm)."""

    namespace: str
    metric: str
    dimensions: str
    stat: str
    id: str = ""
    unit: str | None = None


@dataclass(frozen=True)
class AlarmRow:
    """One alarm kind. Text is a `str.format` template over the subject's facts (`subject`,
    the thresholds, counts); `threshold`, `periods` and `datapoints` are a number or the name of
    a fact; `when` names a fact that must be true for the subject to get it (default: always).
    One `Read` is a single-metric alarm; several plus `expression` are metric math whose result
    is `result_id` (default `signal`), labelled `label`. Periods are one minute."""

    key: str
    description: str
    meaning: str
    action: str
    reads: tuple[Read, ...]
    threshold: float | str
    comparison: Literal[">", ">=", "<"]
    periods: int | str
    datapoints: int | str
    missing: str = "notBreaching"
    expression: str = ""
    label: str = ""
    result_id: str = "signal"
    when: str = ""


_COMPARISON = {
    ">": "GreaterThanThreshold",
    ">=": "GreaterThanOrEqualToThreshold",
    "<": "LessThanThreshold",
}
_ALB, _CI, _ECS, _SQS = "AWS/ApplicationELB", "ECS/ContainerInsights", "AWS/ECS", "AWS/SQS"
_RUNNING_AVERAGE = Read(_CI, "RunningTaskCount", "ecs", "Average", id="running")

ALARMS: dict[str, AlarmRow] = {
    row.key: row
    for row in (
        AlarmRow(
            "no-healthy-targets",
            "{subject}: no healthy target behind the load balancer for 3 minutes; every "
            "request gets a 503.",
            "no task of the service passes the target group's health check: clients get 503",
            "check the service's events and stopped tasks (`aws ecs describe-services`); "
            "tasks pending means no capacity (see tasks-pending), tasks stopping means the "
            "engine fails to start (read the engine's log stream)",
            (Read(_ALB, "HealthyHostCount", "alb", "Minimum"),),
            threshold=1,
            comparison="<",
            periods=3,
            datapoints=3,
            # No datapoint at all means no target registered either.
            missing="breaching",
            # Left out for a service whose minimum is 0: no targets is then legitimate.
            when="serving_floor",
        ),
        AlarmRow(
            "target-5xx",
            "{subject}: more than {target_5xx_percent:g} % of requests answered 5xx by the "
            "targets in 3 of 5 minutes.",
            "more than {target_5xx_percent:g} % of the requests the engine answered were 5xx",
            "read the engine's log stream for the errors; a rollout in progress may be the "
            "cause (the circuit breaker rolls a failing one back)",
            (
                Read(_ALB, "HTTPCode_Target_5XX_Count", "alb", "Sum", id="errors"),
                Read(_ALB, "RequestCount", "alb", "Sum", id="requests"),
            ),
            threshold="target_5xx_percent",
            comparison=">",
            periods=5,
            datapoints=3,
            expression="100 * FILL(errors, 0) / requests",
            label="target 5xx (% of requests)",
            result_id="rate",
        ),
        AlarmRow(
            "ttft-p99",
            "{subject}: the slowest task's p99 time to first token above "
            "{ttft_p99_seconds:g} s in 3 of 5 minutes.",
            "users wait more than {ttft_p99_seconds:g} s for the first token",
            "look at requests waiting and KV-cache usage on the dashboard: queueing means "
            "too few tasks (is scaling at maxCount, or tasks pending?); a full KV cache "
            "with few requests means long prompts (raise maxModelLen capacity or use "
            "kvCache scaling)",
            # Each task publishes its own p99; the worst one pages.
            (Read(m.NAMESPACE, m.TTFT_P99, "service", "Maximum", unit="Milliseconds"),),
            threshold="ttft_p99_ms",
            comparison=">",
            periods=5,
            datapoints=3,
            when="engine_metrics",
        ),
        AlarmRow(
            "engine-down",
            "{subject}: a task's engine stopped answering its /metrics (the metrics "
            "sidecar publishes EngineUp = 0) for 3 minutes.",
            "an engine process inside a running task stopped answering",
            "the task's engine log stream says why; ECS replaces the task once the target "
            "group marks it unhealthy",
            (Read(m.NAMESPACE, m.ENGINE_UP, "service", "Minimum"),),
            threshold=1,
            comparison="<",
            periods=3,
            datapoints=3,
            when="engine_metrics",
        ),
        AlarmRow(
            "tasks-pending",
            "{subject}: tasks pending for {pending_minutes} minutes: no capacity to place them.",
            "a task has waited {pending_minutes} minutes for capacity",
            "the pool cannot grow: at maxSize (raise it), or EC2 has no capacity for the "
            "instance type in these AZs (check the ASG's activity), or an instance cannot "
            "join the cluster",
            # Container Insights' PendingTaskCount (needs `cluster.containerInsights` on).
            (Read(_CI, "PendingTaskCount", "ecs", "Maximum"),),
            threshold=0,
            comparison=">",
            periods="pending_minutes",
            datapoints="pending_minutes",
        ),
        AlarmRow(
            "gpu-memory",
            "pool {subject}: a GPU's memory above {gpu_memory_percent:g} % for 5 minutes.",
            "a GPU is more than {gpu_memory_percent:g} % full (vLLM reserves "
            "gpuMemoryUtilization of it up front, so this means something beyond the "
            "engine's own reservation)",
            "look for a second process on the GPU (nvidia-smi via ECS Exec) or lower "
            "gpuMemoryUtilization; an out-of-memory engine restarts its task",
            (
                Read(m.HOST_NAMESPACE, m.NVIDIA_MEMORY_USED, "pool", "Maximum", id="used"),
                Read(m.HOST_NAMESPACE, m.NVIDIA_MEMORY_TOTAL, "pool", "Maximum", id="total"),
            ),
            threshold="gpu_memory_percent",
            comparison=">",
            periods=5,
            datapoints=5,
            expression="100 * used / total",
            label="GPU memory used (%)",
            result_id="pct",
        ),
        AlarmRow(
            "unhealthy-targets",
            "{subject}: a task has failed LiteLLM's liveness route "
            f"({litellm.HEALTH_PATH}) for 5 minutes.",
            "a gateway task has failed LiteLLM's liveness route for 5 minutes (the others "
            "carry its share)",
            "read the task's log stream (config load errors, the database unreachable, out "
            "of memory); ECS replaces a task the target group marks unhealthy, so a "
            "repeating alarm means every new task fails the same way",
            (Read(_ALB, "UnHealthyHostCount", "alb", "Maximum"),),
            threshold=1,
            comparison=">=",
            periods=5,
            datapoints=5,
        ),
        AlarmRow(
            "response-time-p99",
            "{subject}: p99 time to response at {longest_request_seconds} s (the longest "
            "route's timeout) in 3 of 5 minutes.",
            "the slowest 1 % of gateway requests reach the longest route's timeout before "
            "LiteLLM answers (the first token of a stream, the whole answer otherwise): "
            "requests are being cut",
            "look at the model rows: requests waiting (too few tasks, or at maxCount) or a "
            "model that stopped answering; Bedrock throttling shows in the gateway's log "
            "stream",
            (Read(_ALB, "TargetResponseTime", "alb", "p99", unit="Seconds"),),
            threshold="longest_request_seconds",
            comparison=">=",
            periods=5,
            datapoints=3,
        ),
        AlarmRow(
            "cpu-at-max",
            "{subject}: average CPU above the {target_cpu_percent:g} % scaling target for 10 "
            "minutes with all {max_count} tasks running.",
            "the gateway is above its CPU scaling target at maxCount: scaling has nothing "
            "left to add and latency grows",
            "raise `gateway.maxCount` (or its cpu); a sudden rise with flat traffic points "
            "at retries (a failing model) in the log stream",
            (Read(_ECS, "CPUUtilization", "ecs", "Average", id="cpu"), _RUNNING_AVERAGE),
            threshold="target_cpu_percent",
            comparison=">",
            periods=10,
            datapoints=10,
            expression="IF(FILL(running, 0) >= {max_count}, cpu, 0)",
            label="CPU (%) while at the maximum task count",
        ),
        AlarmRow(
            "memory-high",
            "{subject}: memory above {gateway_memory_percent:g} % of the task size for 5 minutes.",
            "the gateway's tasks use more than {gateway_memory_percent:g} % of their memory: "
            "a task that runs out is killed with every stream on it",
            "raise `gateway.memoryMib` (on the Fargate grid); steady growth with flat "
            "traffic is a leak: a deploy restarts the tasks",
            (Read(_ECS, "MemoryUtilization", "ecs", "Maximum"),),
            threshold="gateway_memory_percent",
            comparison=">",
            periods=5,
            datapoints=5,
        ),
        AlarmRow(
            "tasks-below-desired",
            "{subject}: fewer tasks running than desired for {pending_minutes} minutes.",
            "a Fargate service has run fewer tasks than desired for {pending_minutes} minutes: "
            "its tasks fail to start or stop soon after",
            "read the service's events and its stopped tasks' reason (`aws ecs "
            "describe-tasks`): image pull (tag, ECR endpoint), a secret the execution role "
            "cannot read, Fargate capacity or ENI limits in the subnets, or the container "
            "exiting",
            (
                Read(_CI, "DesiredTaskCount", "ecs", "Minimum", id="desired"),
                Read(_CI, "RunningTaskCount", "ecs", "Maximum", id="running"),
            ),
            threshold=0,
            comparison=">",
            periods="pending_minutes",
            datapoints="pending_minutes",
            expression="desired - FILL(running, 0)",
            label="tasks short of the desired count",
        ),
        AlarmRow(
            "queue-age",
            "{subject}: the oldest message is older than {age} s (acceptable latency "
            "{acceptable_latency_seconds:g} s + longest job {max_job_seconds} s) for 3 "
            "minutes.",
            "the oldest job has waited longer than the acceptable latency plus the longest "
            "job: work is late",
            "look at the worker's row: tasks at maxCount (see backlog-at-max), tasks short of "
            "desired (they fail to start), or jobs that keep failing and return to the queue "
            "(the worker's log stream)",
            (Read(_SQS, "ApproximateAgeOfOldestMessage", "queue", "Maximum"),),
            threshold="age",
            comparison=">",
            periods=3,
            datapoints=3,
        ),
        AlarmRow(
            "dlq-depth",
            "{subject}: a message reached the dead-letter queue (its job failed "
            "{max_receive_count} times).",
            "a job failed maxReceiveCount times and was moved to the dead-letter queue; it "
            "will not be retried by itself",
            "read the worker's log stream for the failure; fix it, then redrive the DLQ "
            "(`aws sqs start-message-move-task --source-arn <dlq arn>`) or delete the "
            "messages",
            (Read(_SQS, "ApproximateNumberOfMessagesVisible", "dlq", "Maximum"),),
            threshold=1,
            comparison=">=",
            periods=1,
            datapoints=1,
        ),
        AlarmRow(
            "backlog-at-max",
            "{subject}: more than {backlog_target:g} messages per task with all {max_count} "
            "tasks running for {sustained} minutes.",
            "the backlog per task stays above the scaling target with every task running: "
            "work arrives faster than maxCount tasks finish it",
            "raise `maxCount` or `concurrency`, or make jobs shorter; check that the gateway "
            "and the models behind it keep up (their rows)",
            (
                Read(_SQS, "ApproximateNumberOfMessagesVisible", "queue", "Maximum", id="visible"),
                _RUNNING_AVERAGE,
            ),
            threshold="backlog_target",
            comparison=">",
            periods="sustained",
            datapoints="sustained",
            expression="IF(FILL(running, 0) >= {max_count}, visible / FILL(running, 1), 0)",
            label="messages waiting per task while at the maximum task count",
        ),
    )
}
"""Every alarm kind of the stack, by key (its name's last part: keep keys stable, deployment
alarms and runbooks refer to them by name)."""


@dataclass(frozen=True)
class AlarmSpec:
    """One alarm of one subject: its row of `ALARMS`, `request` (PutMetricAlarm without the
    actions; `with_actions` adds them) and the subject's `facts` the row's text reads; `meaning`
    and `action` are what the README's operating section prints."""

    row: AlarmRow
    request: dict[str, Any]
    facts: dict[str, Any]

    @property
    def key(self) -> str:
        return self.row.key

    @property
    def meaning(self) -> str:
        return self.row.meaning.format(**self.facts)

    @property
    def action(self) -> str:
        return self.row.action.format(**self.facts)

    @property
    def name(self) -> str:
        return self.request["AlarmName"]

    def with_actions(self, topic_arn: str) -> dict[str, Any]:
        return {**self.request, "AlarmActions": [topic_arn], "OKActions": [topic_arn]}


def _dims(**values: str) -> list[dict[str, str]]:
    return [{"Name": k, "Value": v} for k, v in values.items()]


def _metric(read: Read, dimensions: dict[str, list[dict[str, str]]]) -> dict[str, Any]:
    return {
        "Namespace": read.namespace,
        "MetricName": read.metric,
        "Dimensions": dimensions[read.dimensions],
    }


def _request(row: AlarmRow, facts: dict[str, Any], dimensions: dict[str, Any]) -> dict[str, Any]:
    """The row's PutMetricAlarm request (without actions) for one subject."""

    def number(value: float | str) -> Any:
        return facts[value] if isinstance(value, str) else value

    name = alarm_name(facts["stack"], facts["subject"], row.key)
    periods, period = number(row.periods), 60
    if periods * period > ALARM_EVALUATION_MAX_SECONDS:
        raise ObservabilityError(
            f"{name}: {periods} periods of {period} s exceed one day, the most CloudWatch evaluates"
        )
    request: dict[str, Any] = {
        "AlarmName": name,
        "AlarmDescription": row.description.format(**facts)[:1024],
        "ActionsEnabled": True,
        "EvaluationPeriods": periods,
        "DatapointsToAlarm": number(row.datapoints),
        "Threshold": float(number(row.threshold)),
        "ComparisonOperator": _COMPARISON[row.comparison],
        "TreatMissingData": row.missing,
    }
    if not row.expression:
        [read] = row.reads
        request.update(_metric(read, dimensions))
        stat_key = "ExtendedStatistic" if read.stat.startswith("p") else "Statistic"
        request[stat_key] = read.stat
        if read.unit is not None:
            request["Unit"] = read.unit
        request["Period"] = period
        return request
    request["Metrics"] = [
        {
            "Id": read.id,
            "MetricStat": {
                "Metric": _metric(read, dimensions),
                "Period": period,
                "Stat": read.stat,
            },
            "ReturnData": False,
        }
        for read in row.reads
    ] + [
        {
            "Id": row.result_id,
            "Expression": row.expression.format(**facts),
            "Label": row.label,
            "ReturnData": True,
        }
    ]
    return request


def build_alarms(
    keys: Sequence[str], facts: dict[str, Any], **dimensions: list[dict[str, str]]
) -> list[AlarmSpec]:
    """The alarms of `keys` (rows of `ALARMS`, in that order) for one subject: `facts` holds
    `stack`, `subject` and every fact the rows name; `dimensions` the subject's dimension sets
    by the name its rows' reads give (`Read.dimensions`)."""
    stack, subject = facts["stack"], facts["subject"]
    dimensions = {
        "service": _dims(**{m.DIM_STACK: stack, m.DIM_SERVICE: subject}),
        "pool": _dims(**{m.DIM_STACK: stack, m.DIM_POOL: subject}),
        **dimensions,
    }
    out: list[AlarmSpec] = []
    for key in keys:
        row = ALARMS[key]
        if row.when and not facts[row.when]:
            continue
        out.append(AlarmSpec(row, _request(row, facts, dimensions), facts))
    return out


def _settings_facts(stack: str, subject: str, settings: AlarmsConfig) -> dict[str, Any]:
    return {"stack": stack, "subject": subject, **settings.model_dump()}


def _alb_and_ecs(key: str) -> dict[str, list[dict[str, str]]]:
    """A load-balanced service's dimension sets (placeholders: `components.operations.watch`)."""
    return {
        "alb": _dims(LoadBalancer=watch.LOAD_BALANCER, TargetGroup=watch.target_group(key)),
        "ecs": _dims(ClusterName=watch.CLUSTER, ServiceName=watch.ecs_service(key)),
    }


def _publishes_llm_latency(kind: str) -> bool:
    """Whether a service of `kind` (an engine name, or `reranker`) publishes time to first token
    through the metrics sidecar (its engine's scrape family has it)."""
    if kind not in engines.names():
        return False
    family = engines.get(kind).metrics_kind
    return family is not None and m.TTFT_P99 in m.published_names(family)


def service_alarms(
    stack: str, service: WatchedService, settings: AlarmsConfig = AlarmsConfig()
) -> list[AlarmSpec]:
    """The paging alarms of one load-balanced model or re-ranker service (the deployment
    alarms of its rollouts are some of them, by the same names).

    No-healthy-targets is left out for a service whose `min_count` is 0 (no targets is then a
    legitimate state). Pending tasks read Container Insights' PendingTaskCount (needs
    `cluster.containerInsights` on). The engine alarms (TTFT, engine down) read the metrics
    sidecar's series: left out without `engine_metrics`.
    """
    facts = _settings_facts(stack, service.service, settings)
    facts["serving_floor"] = service.min_count >= 1
    facts["engine_metrics"] = service.engine_metrics and _publishes_llm_latency(service.kind)
    facts["ttft_p99_ms"] = settings.ttft_p99_seconds * 1000
    keys = ("no-healthy-targets", "target-5xx", "ttft-p99", "engine-down", "tasks-pending")
    return build_alarms(keys, facts, **_alb_and_ecs(service.service))


def pool_alarms(stack: str, pool: str, settings: AlarmsConfig) -> list[AlarmSpec]:
    """GPU memory above `gpu_memory_percent` on any GPU of a GPU pool for 5 minutes (from the
    CloudWatch agent's nvidia_smi metrics, rolled up per Stack/Pool)."""
    return build_alarms(("gpu-memory",), _settings_facts(stack, pool, settings))


def gateway_alarms(
    stack: str, gateway: LiteLLMGatewaySpec, settings: AlarmsConfig = AlarmsConfig()
) -> list[AlarmSpec]:
    """The AI gateway's paging alarms (its subject is its path).

    As every load-balanced service: no healthy target (when its minimum count is >= 1) and
    target 5xx share. Its own: a task failing LiteLLM's liveness route (`UnHealthyHostCount` >= 1
    for 5 minutes); p99 `TargetResponseTime` at the longest route's timeout (what LiteLLM waits
    for a model before it gives up: requests are being cut); CPU above the scaling target for
    10 minutes while at the maximum task count (scaling has nothing left to add); memory above
    `settings.gateway_memory_percent` for 5 minutes (a Fargate task that runs out is killed with
    every stream on it); tasks below the desired count for `settings.pending_minutes`.
    """
    facts = _settings_facts(stack, gateway.path, settings)
    facts.update(
        serving_floor=gateway.min_count >= 1,
        max_count=gateway.max_count,
        target_cpu_percent=gateway.target_cpu_percent,
        longest_request_seconds=gateway.litellm.longest_request_seconds,
    )
    keys = (
        "no-healthy-targets",
        "target-5xx",
        "unhealthy-targets",
        "response-time-p99",
        "cpu-at-max",
        "memory-high",
        "tasks-below-desired",
    )
    return build_alarms(keys, facts, **_alb_and_ecs(watch.GATEWAY_KEY))


def queue_age_threshold_seconds(acceptable_latency_seconds: float, max_job_seconds: int) -> int:
    """How old a worker's oldest message may get: SQS ages a message from its enqueue until
    its delete, so a job that waited the acceptable latency and then ran the longest job is
    this old; beyond it, work is late."""
    return math.ceil(acceptable_latency_seconds + max_job_seconds)


def worker_alarms(
    stack: str, worker: WorkerDecisions, settings: AlarmsConfig = AlarmsConfig()
) -> list[AlarmSpec]:
    """A queue worker's paging alarms.

    - `queue-age`: the oldest message older than the acceptable latency + the longest job for 3
      minutes (`queue_age_threshold_seconds`);
    - `dlq-depth`: a message in the dead-letter queue (a job failed `maxReceiveCount` times);
    - `backlog-at-max`: backlog per task above the backlog target while all `maxCount` tasks
      run, for as long as the acceptable latency (at least 3 minutes): work arrives faster
      than the maximum can do it;
    - `tasks-below-desired`: fewer tasks running than desired for `settings.pending_minutes`.
    """
    cfg, name = worker.input, worker.name
    facts = _settings_facts(stack, name, settings)
    facts.update(
        acceptable_latency_seconds=cfg.acceptable_latency_seconds,
        max_job_seconds=cfg.max_job_seconds,
        backlog_target=worker.backlog_target,
        max_count=cfg.max_count,
        max_receive_count=cfg.max_receive_count,
        age=queue_age_threshold_seconds(cfg.acceptable_latency_seconds, cfg.max_job_seconds),
        sustained=min(max(3, math.ceil(cfg.acceptable_latency_seconds / 60)), 1440),
    )
    return build_alarms(
        ("queue-age", "dlq-depth", "backlog-at-max", "tasks-below-desired"),
        facts,
        ecs=_dims(ClusterName=watch.CLUSTER, ServiceName=watch.ecs_service(watch.worker_key(name))),
        queue=_dims(QueueName=watch.queue(name)),
        dlq=_dims(QueueName=watch.dead_letter_queue(name)),
    )


def stack_alarms(
    stack: str, watched: watch.Watch, settings: AlarmsConfig
) -> list[tuple[str, AlarmSpec]]:
    """Every alarm of a stack with the label of the subject it watches (its resource name's
    part), with placeholders for the deploy-time dimensions."""
    out = [(s.service, a) for s in watched.services for a in service_alarms(stack, s, settings)]
    out += [(p, a) for p in watched.pools_of("gpu") for a in pool_alarms(stack, p, settings)]
    if watched.gateway is not None:
        out += [(watched.gateway.path, a) for a in gateway_alarms(stack, watched.gateway, settings)]
    for w in watched.workers:
        out += [(watch.worker_label(w.name), a) for a in worker_alarms(stack, w, settings)]
    return out


def alarm_metric_count(alarms: Sequence[AlarmSpec]) -> int:
    """Metrics the alarms evaluate, as CloudWatch bills them (a metric-math alarm pays for each
    metric it reads, not for the expression)."""
    total = 0
    for alarm in alarms:
        queries = alarm.request.get("Metrics")
        total += sum(1 for q in queries if "MetricStat" in q) if queries else 1
    return total
