"""Each Auto Scaling group's instance life cycle, and who completes its lifecycle hooks.

EC2 Auto Scaling pauses an instance at every transition a lifecycle hook of the group covers
("Amazon EC2 Auto Scaling lifecycle hooks", "Warm pools": a launch hook pauses both
`Warmed:Pending:Wait` and `Pending:Wait`) until `CompleteLifecycleAction` or the heartbeat
timeout. The rehearsal walks every transition the group can take:

| transition | pauses in | boot |
|---|---|---|
| fresh launch into service | `Pending:Wait` | first |
| first boot into the warm pool | `Warmed:Pending:Wait` | first |
| stop in the pool (pool state Stopped) | (no hook) | |
| start on scale-out from a Stopped pool | `Pending:Wait` | a later boot |
| leave a Running or Hibernated pool | `Pending:Wait` | none: only what still runs acts (a
daemon, or a script that waits for the target lifecycle state) |

and asks the user data (`userdata.Boots`) whether a script that runs in that boot calls
`aws autoscaling complete-lifecycle-action` for the hook. A hook that sends notifications
(`notificationTargetArn`) is completed by whatever consumes them, which the preview cannot see:
a note, not a finding.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from tools.aws_requests import Resource
from tools.rehearsal.calls import Refusal, Unverified
from tools.rehearsal.model import StackModel, known, listify
from tools.rehearsal.tasks import launch_template_of
from tools.rehearsal.userdata import Boots

ASG = "aws:autoscaling/group:Group"
LIFECYCLE_HOOK = "aws:autoscaling/lifecycleHook:LifecycleHook"
LAUNCHING = "autoscaling:EC2_INSTANCE_LAUNCHING"
_COMPLETE = re.compile(r"complete-lifecycle-action\b(?P<args>[^\n]*)")
_LOOP = re.compile(r"^\s*(?:until|while)\b(?P<test>[^\n]*)", re.M)
_FUNCTION = re.compile(r"(?P<name>[A-Za-z_]\w*)\s*\(\)\s*\{(?P<body>[^}]*)\}")
TARGET_STATE = "target-lifecycle-state"
_HOOK_NAME = re.compile(r"--lifecycle-hook-name[ =](?P<name>'[^']*'|\"[^\"]*\"|\S+)")


@dataclass(frozen=True)
class Hook:
    name: str
    transition: str
    heartbeat_seconds: float
    notifies: bool


@dataclass(frozen=True)
class Transition:
    what: str
    pauses_in: str
    boot: str
    """"first", "later" or "none"."""


def hooks(model: StackModel, asg: Resource) -> list[Hook]:
    """The group's hooks: `initialLifecycleHooks` and LifecycleHook resources naming it."""
    specs = [h for h in listify(asg.inputs.get("initialLifecycleHooks")) if isinstance(h, Mapping)]
    name = model.output(asg, "name")
    specs += [
        h.inputs
        for h in model.of(LIFECYCLE_HOOK)
        if known(name) and h.inputs.get("autoscalingGroupName") == name
    ]
    return [
        Hook(
            str(h.get("name")),
            str(h.get("lifecycleTransition")),
            float(h.get("heartbeatTimeout") or 3600),
            bool(h.get("notificationTargetArn")),
        )
        for h in specs
    ]


def transitions(asg: Resource) -> list[Transition]:
    """The launch transitions the group's instances go through."""
    out = [Transition("a fresh launch into service", "Pending:Wait", "first")]
    pool = asg.inputs.get("warmPool")
    if isinstance(pool, Mapping):
        state = pool.get("poolState") or "Stopped"
        out.append(Transition("the first boot into the warm pool", "Warmed:Pending:Wait", "first"))
        later = "later" if state == "Stopped" else "none"
        out.append(
            Transition(f"a start from the {state} warm pool on scale-out", "Pending:Wait", later)
        )
    return out


def completed_hooks(scripts: list[str]) -> set[str]:
    """Names of the hooks these scripts complete ("*" for a name given as a variable)."""
    names: set[str] = set()
    for script in scripts:
        for call in _COMPLETE.finditer(script):
            found = _HOOK_NAME.search(call.group("args"))
            if found is None:
                continue
            name = found.group("name").strip("'\"")
            names.add("*" if "$" in name else name)
    return names


def watchers(scripts: list[str]) -> list[str]:
    """The scripts still running when a Running warm-pool instance leaves the pool: those that
    loop on the instance's target lifecycle state (read from IMDS directly or through one of
    the script's functions): AWS's documented pattern for acting on Warmed:Running -> InService."""
    out = []
    for script in scripts:
        readers = {
            m.group("name") for m in _FUNCTION.finditer(script) if TARGET_STATE in m.group("body")
        }
        for loop in _LOOP.finditer(script):
            test = loop.group("test")
            if TARGET_STATE in test or any(f"$({r})" in test or f"`{r}`" in test for r in readers):
                out.append(script)
                break
    return out


def lifecycle_checks(model: StackModel) -> Iterator[Refusal | Unverified]:
    """Every launch hook of every group completed on every transition that pauses."""
    for asg in model.of(ASG):
        launch_hooks = [h for h in hooks(model, asg) if h.transition == LAUNCHING]
        if not launch_hooks:
            continue
        template = launch_template_of(model, asg)
        user_data = template.inputs.get("userData") if template is not None else None
        if not isinstance(user_data, str) or not known(user_data):
            yield Unverified(asg, f"Auto Scaling group {asg.name}", "user data unknown at preview")
            continue
        boots = Boots.of(user_data)
        scripts: dict[str, list[str]] = {
            "first": boots.first,
            "later": boots.later + boots.daemons,
            "none": boots.daemons + watchers(boots.first),
        }
        for transition in transitions(asg):
            done = completed_hooks(scripts[transition.boot])
            yield from _unfinished(asg, launch_hooks, transition, done)


def _unfinished(
    asg: Resource, launch_hooks: list[Hook], transition: Transition, done: set[str]
) -> Iterator[Refusal | Unverified]:
    who = f"Auto Scaling group {asg.name}"
    for hook in launch_hooks:
        if hook.name in done or "*" in done:
            continue
        if hook.notifies:
            yield Unverified(asg, who, f"hook {hook.name} is completed by its notification target")
            continue
        boot = {"first": "the first boot", "later": "that boot", "none": "a running daemon"}
        yield Refusal(
            asg,
            who,
            f"lifecycle hook {hook.name} pauses the instance in {transition.pauses_in} on "
            f"{transition.what}, and nothing that runs on {boot[transition.boot]} completes it: "
            f"the instance waits out the {hook.heartbeat_seconds:g} s heartbeat",
        )


__all__: list[Any] = ["lifecycle_checks"]
