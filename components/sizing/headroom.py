"""The deployment percentages that let a service deploy at every count its pool allows, and
the room a blue/green, canary or linear deployment needs on it."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ecs_inference.sizing.memory import non_negative_int, positive_int


@dataclass(frozen=True)
class DeployStep:
    """A rolling deploy of one service at one task count, on the slots its pool leaves it."""

    tasks: int
    """The steady count when the deploy starts."""
    slots: int
    """Tasks of this service the pool can hold (its instances x tasks per instance)."""
    wanted: int
    """Tasks ECS starts towards: floor(tasks x maximumPercent / 100)."""
    stopped_at_once: int
    """Old tasks ECS may stop before replacements are healthy: tasks - ceil(tasks x min %)."""

    @property
    def running_peak(self) -> int:
        """The most tasks that can run at once during the deploy."""
        return min(self.wanted, self.slots)

    @property
    def provisioning(self) -> int:
        """New tasks ECS starts that find no instance and wait in PROVISIONING (managed scaling
        cannot grow the group beyond maxSize)."""
        return self.wanted - self.running_peak

    @property
    def progresses(self) -> bool:
        """A new task can start (a free slot) or an old one may stop first."""
        return self.slots > self.tasks or self.stopped_at_once > 0

    def summary(self) -> str:
        parts = [f"at {self.tasks} task(s): up to {self.running_peak} run at once"]
        if self.provisioning:
            parts.append(f"{self.provisioning} wait in PROVISIONING (pool full)")
        parts.append(
            f"{self.stopped_at_once} stopped before their replacements are healthy"
            if self.stopped_at_once
            else "none stopped early"
        )
        parts.append("progresses" if self.progresses else "STALLS")
        return ", ".join(parts)


def deploy_step(
    tasks: int, minimum_healthy_percent: int, maximum_percent: int, slots: int
) -> DeployStep:
    """What ECS does in a rolling deploy of `tasks` tasks with these percentages when the pool
    can hold `slots` tasks of the service (ECS keeps ceil(tasks x min / 100) running and starts
    up to floor(tasks x max / 100) in all)."""
    n = positive_int(tasks, "tasks")
    keep = math.ceil(n * minimum_healthy_percent / 100)
    wanted = max(math.floor(n * maximum_percent / 100), n)
    return DeployStep(n, non_negative_int(slots, "slots"), wanted, n - keep)


@dataclass(frozen=True)
class DeployChoice:
    """ECS deployment percentages chosen for the pool's headroom, and what they do at each
    count autoscaling can reach (`steps`)."""

    minimum_healthy_percent: int
    maximum_percent: int
    note: str
    steps: tuple[DeployStep, ...] = ()
    outage: str | None = None
    """The outage a deploy predicts (every running task stopped at once at some count), with
    what avoids it; None: a deploy always keeps a task serving."""


def choose_deploy(
    min_count: int,
    max_count: int,
    tasks_per_instance: int,
    capacity_instances: int,
    desired_count: int | None = None,
) -> DeployChoice:
    """Deployment percentages that let a rolling deploy (and managed draining, which follows the
    same percentages) progress at EVERY task count autoscaling may reach (min_count..max_count),
    stopping as few running tasks as possible.

    `capacity_instances` is how many of the pool's instances this service can have while every
    other service on the pool runs at its maxCount. Surge (min 100 %, max 200 %) when even at
    max_count one more task fits. Otherwise the highest minimum healthy percent with which
    every count still progresses (a free slot, or one old task stopped first), with max 200 %
    where lower counts have room to surge into and 100 % where none has. The note states, for
    the smallest, desired and largest count, how many tasks run at once, how many wait in
    PROVISIONING and how many stop early; it never promises more than the smallest count keeps.
    """
    slots = capacity_instances * tasks_per_instance
    low, high = max(min_count, 1), max(max_count, 1)
    counts = range(low, high + 1)
    if slots > high:
        minimum, maximum = 100, 200
    else:
        maximum = 200 if slots > low else 100
        minimum = next(
            p
            for p in range(99, -1, -1)
            if all(deploy_step(n, p, maximum, slots).progresses for n in counts)
        )
    steps = tuple(deploy_step(n, minimum, maximum, slots) for n in counts)
    shown = sorted({low, high, desired_count or low} & set(counts))
    how = (
        "surge"
        if minimum == 100
        else "replace in place"
        if maximum == 100
        else "surge where the pool has room, else replace in place"
    )
    note = (
        f"deploy and managed draining: {how} (min {minimum} %, max {maximum} %); the pool "
        f"holds {slots} task(s) of this service with the others at their maxCount; "
        + "; ".join(steps[n - low].summary() for n in shown)
    )
    outage = None
    dark = [step for step in steps if step.stopped_at_once >= step.tasks]
    if dark:
        # One more task's room at that count lets ECS start a replacement first.
        room = max(
            math.ceil((dark[0].tasks + 1) / max(tasks_per_instance, 1)) - capacity_instances, 1
        )
        outage = (
            f"a deploy (and managed draining) can leave no task serving, an outage: at "
            f"{', '.join(str(s.tasks) for s in dark)} task(s) it stops every task before a "
            f"replacement serves, because the pool holds only {slots} task(s) of this service "
            f"with the others at their maxCount; raise the pool's maxSize by at least {room} to "
            "deploy without one"
        )
    return DeployChoice(minimum, maximum, note, steps, outage)


# --------------------------------------------------------------------------------------------
# Blue/green, canary and linear: a second full revision
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RolloutRoom:
    """Whether a pool can hold a native deployment of one service at its largest count: ECS
    starts the green revision at the service's full count beside the blue one, whatever the
    strategy (a canary's percentage is of traffic, not of tasks)."""

    strategy: str
    max_count: int
    tasks_per_instance: int
    capacity_instances: int
    """Instances of the pool this service can have with the others at their maxCount."""

    @property
    def needed_tasks(self) -> int:
        return 2 * self.max_count

    @property
    def needed_instances(self) -> int:
        return math.ceil(self.needed_tasks / self.tasks_per_instance)

    @property
    def fits(self) -> bool:
        return self.capacity_instances * self.tasks_per_instance >= self.needed_tasks

    def summary(self) -> str:
        return (
            f"{self.strategy} at maxCount {self.max_count}: {self.max_count} green task(s) beside "
            f"{self.max_count} blue = {self.needed_tasks} task(s) on {self.needed_instances} "
            f"instance(s) at {self.tasks_per_instance} per instance; the pool leaves this "
            f"service {self.capacity_instances}"
        )

    def problem(self) -> str | None:
        if self.fits:
            return None
        return (
            f"{self.summary()}: the green revision would wait in PROVISIONING and the deployment "
            f"never shift; raise the pool's maxSize by "
            f"{self.needed_instances - self.capacity_instances}, lower maxCount, or use the "
            "rolling strategy"
        )
