"""Image-pull and start-up durations, read from the phase timestamps ECS records on each task.

Seed 003: "Fargate also publishes per-phase timestamps on the task, so you can read image-pull
duration directly out of describe-tasks instead of inferring it — do that before optimising
anything". Tasks on EC2 and Managed Instances carry the same members, so the same reading tells a
GPU service whether its health-check grace period (image pull + weight load + warm-up, estimated
from `startup`) was sized on the right pull rate.

Usage::

    aws ecs describe-tasks --cluster C --tasks $(aws ecs list-tasks --cluster C \\
        --service-name S --desired-status STOPPED --query 'taskArns' --output text) > tasks.json
    python -m tools.pull_timings tasks.json                   # per task definition family
    python -m tools.pull_timings tasks.json --stack prod      # and against prod's estimates
    python -m tools.pull_timings tasks.json --json

Per task (members of the ECS `Task` shape): waiting for capacity = `pullStartedAt - createdAt`
(placement, ENI attachment), image pull = `pullStoppedAt - pullStartedAt`, container start =
`startedAt - pullStoppedAt`. Tasks are grouped by task definition family, which this program
names `<project>-<stack>-<service>`, so `--stack` matches each model service to its own
estimate and prints the `startup.imagePullMibPerSecond` its slowest (cold) pull implies. A
stopped task whose image or secrets could not be fetched is named with the network fix (the most
common first-deploy failure: private subnets with neither a NAT route nor the ECR endpoints).

Exit codes: 0 read (problems such as CannotPullContainerError are reported, not failed on);
2 the input is not describe-tasks output, or the stack cannot be planned (one line).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
EXIT_OK, EXIT_INPUT = 0, 2

# The members of the ECS `Task` (and `Container`) shapes this tool reads; a test checks each
# against botocore's model, so a renamed member fails there rather than reading as "no data".
TASK_TIMESTAMPS = ("createdAt", "pullStartedAt", "pullStoppedAt", "startedAt", "stoppedAt")
TASK_FIELDS = (
    *TASK_TIMESTAMPS,
    "taskArn",
    "taskDefinitionArn",
    "group",
    "launchType",
    "capacityProviderName",
    "lastStatus",
    "stopCode",
    "stoppedReason",
    "containers",
)
CONTAINER_FIELDS = ("name", "reason", "lastStatus")

# What ECS reports when a task cannot fetch its image or, before that, its registry
# authentication and secrets (ResourceInitializationError): both need a network path to ECR,
# S3 (image layers), Secrets Manager and CloudWatch Logs from the task's subnets.
PULL_FAILURES = ("CannotPullContainerError", "ResourceInitializationError")
NETWORK_FIX = (
    "from private subnets without a public IP the pull needs a NAT gateway route or the ECR "
    "api + dkr interface endpoints and the S3 gateway endpoint (secrets: Secrets Manager; logs: "
    "CloudWatch Logs); in this program: `network.natGateways` and `network.vpcEndpoints`, and "
    "check that the image reference exists and the execution role may pull it"
)


class InputError(ValueError):
    """The input is not what `aws ecs describe-tasks` prints."""


def _instant(value: Any, member: str, task: str) -> datetime | None:
    """A timestamp as the CLI prints it (ISO 8601) or as epoch seconds; None when absent."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise InputError(f"{task}: {member} is {value!r}, not a timestamp")
    if isinstance(value, (int, float)):
        return datetime.fromtimestamp(float(value), tz=UTC)
    if isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value)
        except ValueError:
            raise InputError(f"{task}: {member} {value!r} is not an ISO 8601 timestamp") from None
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    raise InputError(f"{task}: {member} is {type(value).__name__}, not a timestamp")


def _seconds(start: datetime | None, stop: datetime | None) -> float | None:
    if start is None or stop is None:
        return None
    return max(0.0, (stop - start).total_seconds())


def family_of(task_definition_arn: str) -> str:
    """`arn:...:task-definition/<family>:<revision>` -> `<family>`."""
    tail = task_definition_arn.rsplit("/", 1)[-1]
    return tail.rsplit(":", 1)[0] if ":" in tail else tail


@dataclass(frozen=True)
class TaskPhases:
    """One task's phase durations in seconds (None: the task never reached that phase)."""

    task: str
    family: str
    launch: str
    capacity_wait_seconds: float | None
    pull_seconds: float | None
    start_seconds: float | None
    problem: str | None = None


def diagnose(task: Mapping[str, Any]) -> str | None:
    """Why a stopped task never ran its image, with the fix, or None."""
    reasons = [str(task.get("stoppedReason") or "")]
    reasons += [
        str(c.get("reason") or "") for c in task.get("containers") or [] if isinstance(c, Mapping)
    ]
    for reason in reasons:
        if any(failure in reason for failure in PULL_FAILURES):
            return f"{reason.strip()}: {NETWORK_FIX}"
    return None


def phase_timings(response: Any) -> list[TaskPhases]:
    """Phase durations of every task in a DescribeTasks response (`{"tasks": [...]}`)."""
    if not isinstance(response, Mapping) or not isinstance(response.get("tasks"), list):
        raise InputError(
            'expected the output of `aws ecs describe-tasks` (a JSON object with "tasks")'
        )
    phases: list[TaskPhases] = []
    for i, task in enumerate(response["tasks"]):
        if not isinstance(task, Mapping):
            raise InputError(f"tasks[{i}] is not an object")
        name = str(task.get("taskArn") or f"tasks[{i}]")
        at = {m: _instant(task.get(m), m, name) for m in TASK_TIMESTAMPS}
        phases.append(
            TaskPhases(
                task=name.rsplit("/", 1)[-1],
                family=family_of(str(task.get("taskDefinitionArn") or "?")),
                launch=str(task.get("launchType") or task.get("capacityProviderName") or "?"),
                capacity_wait_seconds=_seconds(at["createdAt"], at["pullStartedAt"]),
                pull_seconds=_seconds(at["pullStartedAt"], at["pullStoppedAt"]),
                start_seconds=_seconds(at["pullStoppedAt"], at["startedAt"]),
                problem=diagnose(task),
            )
        )
    return phases


@dataclass(frozen=True)
class PhaseSummary:
    """Median and maximum of one phase over a family's tasks that reached it."""

    tasks: int
    median_seconds: float
    max_seconds: float

    @staticmethod
    def of(values: Sequence[float | None]) -> PhaseSummary | None:
        seen = [v for v in values if v is not None]
        if not seen:
            return None
        return PhaseSummary(len(seen), statistics.median(seen), max(seen))


@dataclass(frozen=True)
class FamilySummary:
    family: str
    tasks: int
    launches: tuple[str, ...]
    capacity_wait: PhaseSummary | None
    pull: PhaseSummary | None
    start: PhaseSummary | None
    problems: tuple[str, ...] = ()


def summarise(phases: Sequence[TaskPhases]) -> list[FamilySummary]:
    """Per task definition family, in first-seen order."""
    families: dict[str, list[TaskPhases]] = {}
    for phase in phases:
        families.setdefault(phase.family, []).append(phase)
    return [
        FamilySummary(
            family=family,
            tasks=len(members),
            launches=tuple(sorted({m.launch for m in members})),
            capacity_wait=PhaseSummary.of([m.capacity_wait_seconds for m in members]),
            pull=PhaseSummary.of([m.pull_seconds for m in members]),
            start=PhaseSummary.of([m.start_seconds for m in members]),
            problems=tuple(f"{m.task}: {m.problem}" for m in members if m.problem),
        )
        for family, members in families.items()
    ]


@dataclass(frozen=True)
class Comparison:
    """A model service's measured pull against the pull its grace period was estimated with."""

    service: str
    config_path: str
    image_gib: float
    estimated_pull_seconds: float
    measured_pull_seconds: float
    implied_mib_per_second: float | None
    """None when the pull took no measurable time (the image was cached on the host)."""
    configured_mib_per_second: float
    grace_period_seconds: int
    advice: str = field(default="")


def compare_with_estimate(
    service: str,
    config_path: str,
    measured: PhaseSummary,
    *,
    image_gib: float,
    configured_mib_per_second: float,
    estimated_pull_seconds: float,
    grace_period_seconds: int,
) -> Comparison:
    """Set the slowest measured pull beside the estimate, and advise when it is slower, or when
    it is under 75 % of the estimate.

    The slowest pull is the one that counts: the grace period must cover a task that starts on
    a cold instance, while tasks on hosts that cached the image (prefer-cached, warm pools) pull
    in seconds and would pull a median down. The implied rate is `image_gib` over that pull,
    rounded down to a whole MiB/s (never below 1), so a grace period re-estimated with it covers
    the slowest task seen.
    """
    measured_s = measured.max_seconds
    implied = max(1.0, math.floor(image_gib * 1024 / measured_s)) if measured_s > 0 else None
    advice = ""
    startup = f"{config_path}.startup"
    if implied is not None and measured_s > estimated_pull_seconds:
        advice = (
            f"pulls take longer than estimated: set {startup}.imagePullMibPerSecond: {implied:g}"
            f" (or {startup}.imageGib to the real compressed size) so the grace period covers "
            "them; ECS otherwise stops tasks that are still loading"
        )
    elif implied is not None and measured_s < estimated_pull_seconds * 0.75:
        advice = (
            f"pulls are faster than estimated: {startup}.imagePullMibPerSecond: {implied:g} "
            "would shorten the grace period (a failing task is then replaced sooner)"
        )
    return Comparison(
        service=service,
        config_path=config_path,
        image_gib=image_gib,
        estimated_pull_seconds=estimated_pull_seconds,
        measured_pull_seconds=measured_s,
        implied_mib_per_second=implied,
        configured_mib_per_second=configured_mib_per_second,
        grace_period_seconds=grace_period_seconds,
        advice=advice,
    )


def stack_comparisons(
    summaries: Sequence[FamilySummary], stack: str, stack_file: Path | None = None
) -> list[Comparison]:
    """Compare each model service of `stack` that has measured pulls with its own estimate."""
    from ecs_inference.config.load import load_stack_config
    from ecs_inference.plan import build_plan
    from ecs_inference.sizing.timeouts import image_pull_seconds

    path = stack_file or ROOT / f"Pulumi.{stack}.yaml"
    project = str(yaml.safe_load((ROOT / "Pulumi.yaml").read_text())["name"])
    settings = (yaml.safe_load(path.read_text()) or {}).get("config") or {}
    region = str(settings.get("aws:region", "us-east-1"))
    plan = build_plan(load_stack_config(settings.get(f"{project}:platform"), stack), stack, region)
    measured = {s.family: s.pull for s in summaries if s.pull is not None}
    found: list[Comparison] = []
    for name, spec in plan.models.items():
        pull = measured.get(f"{project}-{stack}-{name}")
        model = plan.config.models[name]
        if pull is None or model.health_check_grace_period_seconds is not None:
            continue
        startup = model.startup
        found.append(
            compare_with_estimate(
                name,
                f"platform.models.{name}",
                pull,
                image_gib=startup.image_gib,
                configured_mib_per_second=startup.image_pull_mib_per_second,
                estimated_pull_seconds=image_pull_seconds(
                    startup.image_gib, startup.image_pull_mib_per_second
                ),
                grace_period_seconds=spec.health_check_grace_period_seconds,
            )
        )
    return found


def _phase(label: str, phase: PhaseSummary | None) -> str:
    if phase is None:
        return f"{label} -"
    return f"{label} median {phase.median_seconds:.0f} s (max {phase.max_seconds:.0f} s)"


def render(summaries: Sequence[FamilySummary], comparisons: Sequence[Comparison]) -> str:
    total = sum(s.tasks for s in summaries)
    lines = [f"Task start-up phases ({total} task(s), from describe-tasks timestamps):"]
    for s in summaries:
        lines.append(
            f"  {s.family} ({s.tasks} task(s), {', '.join(s.launches)}): "
            + "; ".join(
                (
                    _phase("image pull", s.pull),
                    _phase("waiting for capacity", s.capacity_wait),
                    _phase("container start", s.start),
                )
            )
        )
        lines += [f"    ! {p}" for p in s.problems]
    for c in comparisons:
        lines.append(
            f"  {c.config_path}: slowest pull {c.measured_pull_seconds:.0f} s against the "
            f"estimate's {c.estimated_pull_seconds:.0f} s ({c.image_gib:g} GiB at "
            f"{c.configured_mib_per_second:g} MiB/s; grace period {c.grace_period_seconds} s)"
        )
        if c.advice:
            lines.append(f"    -> {c.advice}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.pull_timings", description=__doc__)
    parser.add_argument("tasks", help="describe-tasks JSON output (a file, or - for stdin)")
    parser.add_argument("--stack", help="compare model services with this stack's estimates")
    parser.add_argument("--stack-file", type=Path, help="stack config (Pulumi.<stack>.yaml)")
    parser.add_argument("--json", action="store_true", help="one JSON document")
    args = parser.parse_args(argv)
    try:
        text = sys.stdin.read() if args.tasks == "-" else Path(args.tasks).read_text()
        summaries = summarise(phase_timings(json.loads(text)))
    except (OSError, json.JSONDecodeError, InputError) as exc:
        print(f"pull_timings: {args.tasks}: {exc}", file=sys.stderr)
        return EXIT_INPUT
    comparisons: list[Comparison] = []
    if args.stack:
        try:
            comparisons = stack_comparisons(summaries, args.stack, args.stack_file)
        except Exception as exc:  # a config error or an unreadable file: one line, no traceback
            print(f"pull_timings: stack {args.stack}: {exc}", file=sys.stderr)
            return EXIT_INPUT
    if args.json:
        doc = {
            "families": [asdict(s) for s in summaries],
            "comparisons": [asdict(c) for c in comparisons],
        }
        print(json.dumps(doc, indent=2, default=str))
    else:
        print(render(summaries, comparisons))
    return EXIT_OK


if __name__ == "__main__":
    raise SystemExit(main())
