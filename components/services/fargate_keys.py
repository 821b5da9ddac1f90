"""Keys a Fargate service's section refuses because of Fargate, with the reason from the table of
what Fargate refuses (`contracts.aws_limits.FARGATE_TASK_PARAMETERS`) instead of a bare
"unknown key".

The re-rankers, the gateway and the workers run on Fargate, and their components write the task
definition themselves: no key of those sections sets a parameter of the table (a test records the
task definitions of configs that set every key and checks them against the whole table). Two
kinds of key a user may still write there get Fargate's reason:

* an ECS task-definition parameter of the table, by any name its path is made of
  (`sharedMemorySize`, `linuxParameters`, `privileged`, `networkMode`, `stopTimeout`, ...): its
  value is judged as that parameter, and each value Fargate refuses is reported at its own
  config path (`platform.rerankers.rr.linuxParameters.capabilities.add[0]`) with the table's
  rule and sources; a value Fargate would accept is still no setting (the component writes it);
* a model's key that gives a model's EC2 task such a parameter (`MODEL_KEYS`: a tensor parallel
  size means GPUs and a /dev/shm size), with what it does on a model and why Fargate refuses it.

Every other unknown key stays the schema's "unknown key". The keys found are taken out of the raw
config before the schema validates it, so each is reported once, beside every other problem.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel

from ecs_inference.config.base import ROOT
from ecs_inference.config.issues import ConfigIssue
from ecs_inference.gateway.input import GatewayConfig
from ecs_inference.rerankers.input import RerankerConfig
from ecs_inference.services import fargate_table as fargate
from ecs_inference.workers.input import WorkerConfig

#: The sections whose services run on Fargate: key under `platform` -> (schema, whether it is a
#: map of named services, what one of them is called in a message).
FARGATE_SECTIONS: Mapping[str, tuple[type[BaseModel], bool, str]] = {
    "rerankers": (RerankerConfig, True, "a re-ranker"),
    "gateway": (GatewayConfig, False, "the gateway"),
    "workers": (WorkerConfig, True, "a worker"),
}

_GPUS = "containerDefinitions[].resourceRequirements"
_SHM = "containerDefinitions[].linuxParameters.sharedMemorySize"
_DEVICES = "containerDefinitions[].linuxParameters.devices"
_CAPABILITIES = "containerDefinitions[].linuxParameters.capabilities.add[]"

#: Keys of a model (`platform.models.<name>`) that give the model's EC2 task parameters Fargate
#: refuses: key -> (what it does on a model, the table paths it sets). A test plans models with
#: each and finds those parameters in their container definitions.
MODEL_KEYS: Mapping[str, tuple[str, tuple[str, ...]]] = {
    "tensorParallelSize": (
        "gives the model's task one GPU per shard and a /dev/shm size that grows with them (the "
        "engine's processes exchange tensors through it)",
        (_GPUS, _SHM),
    ),
    "custom": (
        "gives a custom image's task GPUs and a /dev/shm size (`custom.gpus`) or Neuron devices "
        "with the IPC_LOCK capability (`custom.neuronDevices`)",
        (_GPUS, _SHM, _DEVICES, _CAPABILITIES),
    ),
    "neuron": (
        "maps the Neuron devices of its `tpDegree` into the model's task, with the IPC_LOCK "
        "capability",
        (_DEVICES, _CAPABILITIES),
    ),
}


def _rules(parameters: Sequence[str]) -> str:
    """What Fargate accepts at each of `parameters`, grouped by rule."""
    refused = [p for p in parameters if not fargate.PARAMETERS[p][0]]
    clauses = [f"does not support {', '.join(refused)}"] if refused else []
    clauses += [fargate.rule(p) for p in parameters if fargate.PARAMETERS[p][0]]
    return "; ".join(clauses)


def _sources(parameters: Iterable[str]) -> str:
    found = dict.fromkeys(s for p in parameters for s in fargate.PARAMETERS[p][1])
    return fargate.cited(found)


def _config_steps(steps: Iterable[fargate.Step]) -> str:
    return "".join(f"[{s}]" if isinstance(s, int) else f".{s}" for s in steps)


def _parameter_issues(path: str, noun: str, key: str, value: Any) -> list[ConfigIssue]:
    """The issues of `key` (a name of the table's paths) at `path`, with its `value`."""
    parameters = fargate.parameter_names()[key]
    issues: list[ConfigIssue] = []
    for parameter in parameters:
        request, lead = fargate.probe(parameter, key, value)
        for refusal in fargate.task_refusals(request, [parameter]):
            issues.append(
                ConfigIssue(
                    f"{path}.{key}{_config_steps(refusal.steps[lead:])}",
                    f"refused on Fargate: {noun} runs on Fargate, which "
                    f"{fargate.rule(parameter)}, got {refusal.shown()} "
                    f"({fargate.cited(refusal.sources)}); remove it: the component writes the "
                    "task definition",
                )
            )
    if issues:
        return issues
    return [
        ConfigIssue(
            f"{path}.{key}",
            f"not a setting of {noun}: its component writes the Fargate task definition, where "
            f"Fargate {_rules(parameters)} ({_sources(parameters)}); remove it",
        )
    ]


def _model_key_issue(path: str, noun: str, key: str) -> ConfigIssue:
    does, parameters = MODEL_KEYS[key]
    return ConfigIssue(
        f"{path}.{key}",
        f"refused on Fargate: `{key}` is a model setting (`{ROOT}.models.<name>.{key}`) that "
        f"{does}; {noun} runs on Fargate, which {_rules(parameters)} "
        f"({_sources(parameters)}); remove it (a service that needs accelerators is a "
        "`models` entry on a GPU or Neuron pool)",
    )


def _service_issues(
    path: str, schema: type[BaseModel], noun: str, section: dict[str, Any]
) -> tuple[dict[str, Any], list[ConfigIssue]]:
    """`section` without the keys refused because of Fargate, and their issues."""
    own = {k for name, f in schema.model_fields.items() for k in (name, f.alias) if k}
    names = fargate.parameter_names()
    issues: list[ConfigIssue] = []
    kept: dict[str, Any] = {}
    for key, value in section.items():
        if key in own or (key not in names and key not in MODEL_KEYS):
            kept[key] = value
        elif key in MODEL_KEYS:
            issues.append(_model_key_issue(path, noun, key))
        else:
            issues += _parameter_issues(path, noun, key, value)
    return kept, issues


def fargate_key_issues(raw: dict[str, Any]) -> tuple[dict[str, Any], list[ConfigIssue]]:
    """`raw` (the platform config) without the keys of its Fargate services' sections that are
    refused because of Fargate, and one issue per refused value (see the module docstring)."""
    out = dict(raw)
    issues: list[ConfigIssue] = []
    for section, (schema, named, noun) in FARGATE_SECTIONS.items():
        value = raw.get(section)
        if not isinstance(value, dict):
            continue
        items = value if named else {None: value}
        cleaned: dict[Any, Any] = {}
        for name, service in items.items():
            if not isinstance(service, dict):
                cleaned[name] = service
                continue
            path = f"{ROOT}.{section}" + (f".{name}" if named else "")
            cleaned[name], found = _service_issues(path, schema, noun, service)
            issues += found
        out[section] = cleaned if named else cleaned[None]
    return out, issues
