"""The CloudWatch agent a pool's user data installs gets only names its release reads.

The table (`contracts/agent/amazon-cloudwatch-agent-<release>.json`, read from the agent's
source by `tools/agent_table.py`) lists the `nvidia_gpu` measurements the agent collects, the
keys its config schema allows under `logs.metrics_collected.prometheus`, and the options,
actions and modes of `amazon-cloudwatch-agent-ctl`. Every agent config file the user data
writes (under `/opt/aws/amazon-cloudwatch-agent/etc/`) and every `amazon-cloudwatch-agent-ctl`
command it runs is checked against it; a name the agent does not know is a finding.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterator, Mapping
from functools import cache
from pathlib import Path
from typing import Any

from tools.aws_requests import Resource
from tools.rehearsal.calls import Refusal
from tools.rehearsal.model import StackModel, known
from tools.rehearsal.tasks import launch_template_of
from tools.rehearsal.userdata import Boots

TABLE = (
    Path(__file__).resolve().parents[2]
    / "contracts"
    / "agent"
    / "amazon-cloudwatch-agent-1.300062.0.json"
)
CONFIG_DIR = "/opt/aws/amazon-cloudwatch-agent/etc/"
CTL = "amazon-cloudwatch-agent-ctl"


@cache
def table() -> dict[str, Any]:
    return json.loads(TABLE.read_text())


def config_problems(config: Mapping[str, Any]) -> Iterator[str]:
    """Names in an agent config the pinned release does not read."""
    t = table()
    gpu = ((config.get("metrics") or {}).get("metrics_collected") or {}).get("nvidia_gpu") or {}
    for name in gpu.get("measurement") or ():
        if name not in t["nvidia_gpu_measurements"]:
            yield f"nvidia_gpu measurement {name!r} is not one the agent collects"
    prometheus = ((config.get("logs") or {}).get("metrics_collected") or {}).get("prometheus")
    if isinstance(prometheus, Mapping):
        yield from _unknown(prometheus, t["prometheus"], "logs.metrics_collected.prometheus")
        emf = prometheus.get("emf_processor") or {}
        yield from _unknown(emf, t["emf_processor"], "emf_processor")
        for declaration in emf.get("metric_declaration") or ():
            yield from _unknown(declaration, t["metric_declaration"], "metric_declaration")


def _unknown(section: Mapping[str, Any], allowed: list[str], where: str) -> Iterator[str]:
    for key in section:
        if key not in allowed:
            yield f"{where} key {key!r} is not in the agent's config schema"


def command_problems(words: list[str]) -> Iterator[str]:
    """An `amazon-cloudwatch-agent-ctl` command line the pinned release would refuse."""
    t = table()["ctl"]
    args = words[1:]
    for i, word in enumerate(args):
        if not word.startswith("-"):
            continue
        if word not in t["options"]:
            yield f"{CTL} has no option {word}"
        elif word == "-a" and i + 1 < len(args) and args[i + 1] not in t["actions"]:
            yield f"{CTL} has no action {args[i + 1]!r}"
        elif word == "-m" and i + 1 < len(args) and args[i + 1] not in t["modes"]:
            yield f"{CTL} has no mode {args[i + 1]!r}"


def _commands(boots: Boots) -> Iterator[list[str]]:
    for script in boots.first + boots.later:
        for line in script.splitlines():
            try:
                words = shlex.split(line, comments=True)
            except ValueError:
                continue
            for i, word in enumerate(words):
                if word.endswith("/" + CTL) or word == CTL:
                    yield words[i:]


def agent_checks(model: StackModel) -> Iterator[Refusal]:
    for asg in model.of("aws:autoscaling/group:Group"):
        template = launch_template_of(model, asg)
        user_data = template.inputs.get("userData") if template is not None else None
        if not isinstance(user_data, str) or not known(user_data):
            continue
        yield from _template_checks(asg, Boots.of(user_data))


def _template_checks(asg: Resource, boots: Boots) -> Iterator[Refusal]:
    who = f"Auto Scaling group {asg.name} CloudWatch agent"
    for path, content in boots.files.items():
        if path.startswith(CONFIG_DIR) and path.endswith(".json"):
            try:
                config = json.loads(content)
            except json.JSONDecodeError:
                yield Refusal(asg, who, f"{path} is not JSON")
                continue
            for problem in config_problems(config):
                yield Refusal(asg, who, f"{path}: {problem}")
    for words in _commands(boots):
        for problem in command_problems(words):
            yield Refusal(asg, who, problem)
