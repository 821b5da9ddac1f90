"""A queue worker's decisions (pure): its visibility timeout, backlog scaling target and Fargate
size from its input, checked against SQS's and Fargate's limits, with the gateway key it calls
with; `QueueWorker` and the stack's plan both call `worker_service`.

The target: with `acceptable latency / time per job` (x jobs a task works on at once) messages
waiting per task, the last one starts within the acceptable latency (AWS's "scaling based on
Amazon SQS"; `components.workers.scaling` has the policies).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from ecs_inference import sizing
from ecs_inference.config.issues import ConfigIssue, Issues
from ecs_inference.config.stack import StackConfig
from ecs_inference.contracts.aws_limits import SQS_VISIBILITY_TIMEOUT_MAX
from ecs_inference.contracts.worker import ENV_API_KEY
from ecs_inference.operations.alarms import queue_age_threshold_seconds
from ecs_inference.secrets.refs import secret_ref, secret_refs
from ecs_inference.services.decisions import FargateDecisions
from ecs_inference.workers.input import WorkerConfig
from ecs_inference.workers.queues import MANAGED_ENV, queue_name_problems
from ecs_inference.workers.scaling import from_zero_steps


class WorkerScalingError(ValueError):
    """A worker setting AWS would refuse or that cannot work; `.issue` names the config path."""

    def __init__(self, issue: ConfigIssue) -> None:
        self.issue = issue
        super().__init__(str(issue))


@dataclass(frozen=True)
class VisibilityTimeout:
    """The queue's visibility timeout: `seconds` = longest job + margin."""

    seconds: int
    job_seconds: int
    margin_seconds: int

    def summary(self) -> str:
        return (
            f"visibility timeout {self.seconds} s (longest job {self.job_seconds} s + "
            f"{self.margin_seconds} s for receive, delete and retries of those calls)"
        )


def visibility_timeout(max_job_seconds: int, *, path: str) -> VisibilityTimeout:
    """Visibility timeout for a worker whose longest job takes `max_job_seconds`.

    A message becomes visible again (and another task starts the same job) when the timeout
    ends before the delete, so it covers the longest job plus max(30 s, 10 %) for the receive,
    the delete and their retries. Raises `WorkerScalingError` at `path` when that exceeds SQS's
    12 h maximum or the job time is not positive.
    """
    if max_job_seconds < 1:
        raise WorkerScalingError(
            ConfigIssue(path, f"the longest job must take at least 1 s, got {max_job_seconds}")
        )
    margin = max(30, math.ceil(max_job_seconds * 0.10))
    total = max_job_seconds + margin
    if total > SQS_VISIBILITY_TIMEOUT_MAX:
        raise WorkerScalingError(
            ConfigIssue(
                path,
                f"a job of {max_job_seconds} s needs a visibility timeout of {total} s "
                f"({max_job_seconds} s + {margin} s margin), above SQS's maximum of "
                f"{SQS_VISIBILITY_TIMEOUT_MAX} s (12 h); no message can stay hidden longer, so "
                "split the job into steps that each finish within "
                f"{_longest_job_within(SQS_VISIBILITY_TIMEOUT_MAX)} s",
            )
        )
    return VisibilityTimeout(total, max_job_seconds, margin)


def _longest_job_within(limit: int) -> int:
    """The longest job whose visibility timeout (job + margin) still fits `limit`."""
    job = math.floor(limit / 1.10)
    while job + max(30, math.ceil(job * 0.10)) > limit:
        job -= 1
    return job


def backlog_target(
    acceptable_latency_seconds: float,
    job_seconds: float,
    concurrency: int = 1,
    *,
    path: str,
) -> float:
    """Target backlog per task: messages a task may have waiting so that the last starts within
    `acceptable_latency_seconds`, given `job_seconds` per job and `concurrency` jobs per task
    (default 1). Raises `WorkerScalingError` at `path` for non-positive inputs."""
    if job_seconds <= 0 or acceptable_latency_seconds <= 0 or concurrency < 1:
        raise WorkerScalingError(
            ConfigIssue(
                path,
                "acceptable latency and job time must be positive and concurrency at least 1 "
                f"(got {acceptable_latency_seconds}, {job_seconds}, {concurrency})",
            )
        )
    return acceptable_latency_seconds / job_seconds * concurrency


@dataclass(frozen=True)
class GatewayKeys:
    """The keys the gateway accepts: its master key, and with a `database` the virtual keys
    stored there as well (without one, LiteLLM knows no key but the master key)."""

    master_key_ref: str
    """What a container's `secrets` names for the master key (an ARN or the stack's secret)."""
    master_key_path: str = "platform.gateway.masterKeySecretArn"
    """Where the config sets it."""
    master_key_given: str = field(default="", repr=False)
    """The config's value there (the secret's ARN, or the key itself)."""
    database: bool = False


@dataclass(frozen=True, kw_only=True)
class WorkerDecisions(FargateDecisions[WorkerConfig, GatewayKeys]):
    """What a worker decides from its input (`input`, read from there) and the keys of the
    gateway it calls (`placement`): the values derived from them, each a pure function."""

    name: str
    """The worker's name: its queues, log group and task family."""
    visibility_timeout_seconds: int
    """The queue's visibility timeout: the longest job plus a margin (`visibility_timeout`)."""
    backlog_target: float
    """Messages waiting per running task at which target tracking holds the count."""
    secret_refs: Mapping[str, str]
    """The input's `secrets` as references (ARNs or the stack's own), with the gateway's
    master key as `GATEWAY_API_KEY` unless the input names its own."""


def api_key_issue(name: str, cfg: WorkerConfig, keys: GatewayKeys) -> ConfigIssue | None:
    """A worker key the gateway would refuse: without a database, any but the master key."""
    given = cfg.secrets.get(ENV_API_KEY)
    if keys.database or given is None or given == (keys.master_key_given or keys.master_key_ref):
        return None
    shown = given if given.startswith("arn:") else "a key set with --secret"
    return ConfigIssue(
        f"platform.workers.{name}.secrets.{ENV_API_KEY}",
        f"the gateway has no database, so it accepts no key but its master key "
        f"({keys.master_key_path}); {shown} would get 401 on every job: leave "
        f"{ENV_API_KEY} unset (the platform passes the master key) or enable "
        "platform.gateway.database and issue the worker a virtual key",
    )


def name_issues(
    name: str, cfg: WorkerConfig, project_stack: tuple[str, str] | None
) -> list[ConfigIssue]:
    """Variables the component sets itself (`MANAGED_ENV`), and, once the project and stack
    are known, queue names SQS would refuse."""
    base = f"platform.workers.{name}"
    found = WorkerDecisions.managed_name_issues(
        cfg, base, MANAGED_ENV, "the worker's component (its queues, gateway and timings)"
    )
    if project_stack is not None:
        found += [ConfigIssue(base, p) for p in queue_name_problems(*project_stack, name)]
    return found


def worker_service(
    name: str,
    cfg: WorkerConfig,
    *,
    gateway: GatewayKeys | None,
    project_stack: tuple[str, str] | None = None,
) -> tuple[WorkerDecisions | None, list[ConfigIssue]]:
    """The worker's decisions, or None and every problem found. A worker calls models through
    the gateway (None: the stack has none, so it cannot run); one without its own
    `GATEWAY_API_KEY` gets the gateway's master key. `project_stack`: the Pulumi project and
    stack its queues are named after (default None: names not checked)."""
    base = f"platform.workers.{name}"
    found = name_issues(name, cfg, project_stack)
    if gateway is not None and (key := api_key_issue(name, cfg, gateway)):
        found.append(key)
    if gateway is None:
        found.append(
            ConfigIssue(
                base,
                "a worker calls models through the gateway (GATEWAY_URL): configure "
                "platform.gateway",
            )
        )
    if cfg.job_seconds > cfg.max_job_seconds:
        found.append(
            ConfigIssue(
                f"{base}.jobSeconds",
                f"the typical job ({cfg.job_seconds:g} s) is longer than maxJobSeconds "
                f"({cfg.max_job_seconds} s)",
            )
        )
    visibility = target = None
    try:
        visibility = visibility_timeout(cfg.max_job_seconds, path=f"{base}.maxJobSeconds")
        target = backlog_target(
            cfg.acceptable_latency_seconds,
            cfg.job_seconds,
            cfg.concurrency,
            path=f"{base}.acceptableLatencySeconds",
        )
    except WorkerScalingError as exc:
        found.append(exc.issue)
    size = WorkerDecisions.exact_size(cfg, base, found)
    if found or gateway is None or visibility is None or target is None or size is None:
        return None, found
    secrets = secret_refs(base, cfg.secrets)
    secrets.setdefault(ENV_API_KEY, gateway.master_key_ref)
    decided = WorkerDecisions(
        name=name,
        input=cfg,
        placement=gateway,
        size=size,
        visibility_timeout_seconds=visibility.seconds,
        backlog_target=target,
        secret_refs=secrets,
        lines=tuple(_decisions(cfg, target, visibility, size)),
    )
    return decided, []


def _decisions(
    cfg: WorkerConfig, target: float, visibility: VisibilityTimeout, size: sizing.FargateSize
) -> list[str]:
    steps = from_zero_steps(target, cfg.max_count)
    queue_age = queue_age_threshold_seconds(cfg.acceptable_latency_seconds, cfg.max_job_seconds)
    return [
        size.summary(),
        visibility.summary(),
        f"scale on backlog per task (visible / running) at {target:g} messages "
        f"({cfg.acceptable_latency_seconds:g} s acceptable latency / "
        f"{cfg.job_seconds:g} s per job x {cfg.concurrency}), "
        f"{cfg.min_count}-{cfg.max_count} tasks; out of zero in {len(steps)} step(s); "
        + (
            f"to zero after {cfg.idle_minutes} min with nothing waiting or in flight"
            if cfg.min_count == 0
            else f"never below {cfg.min_count}"
        ),
        f"alarms: oldest message older than {queue_age} s "
        f"({cfg.acceptable_latency_seconds:g} s acceptable latency + "
        f"{cfg.max_job_seconds} s longest job); a message in the dead-letter queue "
        f"(a job failed {cfg.max_receive_count} times); backlog per task above "
        f"{target:g} at maxCount {cfg.max_count}; tasks below desired; "
        "dashboard row: queue, oldest message, backlog per task, DLQ, tasks",
    ]


def stack_gateway_keys(cfg: StackConfig) -> GatewayKeys | None:
    """The keys the stack's gateway accepts; None without a gateway."""
    gw = cfg.gateway
    if gw is None:
        return None
    given = gw.master_key or gw.master_key_secret_arn or ""
    return GatewayKeys(
        secret_ref(gw.master_key_path, given), gw.master_key_path, given, gw.database.enabled
    )


def plan_workers(
    cfg: StackConfig, issues: Issues, project_stack: tuple[str, str] | None = None
) -> dict[str, WorkerDecisions]:
    """Every worker's decisions (`project_stack`: see `worker_service`)."""
    keys = stack_gateway_keys(cfg)
    decided: dict[str, WorkerDecisions] = {}
    for name, worker in cfg.workers.items():
        worker_decisions, found = worker_service(
            name, worker, gateway=keys, project_stack=project_stack
        )
        issues.extend(found)
        if worker_decisions is not None:
            decided[name] = worker_decisions
    return decided
