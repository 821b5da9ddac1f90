"""The project's Fargate services (re-rankers, the gateway, workers) and the table of what Fargate
refuses (`contracts.aws_limits.FARGATE_TASK_PARAMETERS`), entry by entry:

* no config key reaches the table: two configs, one of which sets every key of the Fargate
  sections (and of `cluster`, `images`, `operations`) to a value other than its default, the two
  together every value of every choice, are run through the whole program; every Fargate task
  definition they make satisfies the whole table, and no table value differs between them (what
  the components write there is their own constants). A later key that reaches the table fails
  one of these tests;
* a key a user writes in a Fargate section that names a table parameter is refused at its config
  path with the table's rule and sources (each entry's refused value), or named as no setting (an
  accepted value); a model's accelerator keys are refused with what they do on a model.
"""

from __future__ import annotations

import copy
import json
import typing
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from ecs_inference.config.base import Section
from ecs_inference.config.issues import ConfigError, ConfigIssue
from ecs_inference.config.load import load_stack_config
from ecs_inference.config.stack import StackConfig
from ecs_inference.contracts.aws_limits import FARGATE_TASK_PARAMETERS
from ecs_inference.gateway.input import GatewayConfig
from ecs_inference.models.service import model_container_definitions
from ecs_inference.rerankers.decisions import RerankerDecisions
from ecs_inference.services import fargate_table as fargate
from ecs_inference.services.fargate_keys import FARGATE_SECTIONS, MODEL_KEYS
from ecs_inference.workers.input import WorkerConfig
from tests.policy.corpus_fargate import VALUES
from tests.stack_config import mutate, plan_of, reference
from tools.aws_shapes import register_task_definition_request
from tools.preview import project_name, read_stack_file
from tools.recording import ACCOUNT_ID, Recording, run_program, stack_config_values

ROOT = Path(__file__).resolve().parents[2]
STACK = "agents"
TD = "aws:ecs/taskDefinition:TaskDefinition"
REGISTRY = f"{ACCOUNT_ID}.dkr.ecr.us-east-1.amazonaws.com"
KMS = f"arn:aws:kms:us-east-1:{ACCOUNT_ID}:key/0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b"
#: The component each Fargate task definition belongs to -> the spec type its plan section makes.
COMPONENTS: dict[str, type] = {
    "ecs-inference:serving:FargateReranker": RerankerDecisions,
    "ecs-inference:serving:LiteLLMGateway": GatewayConfig,
    "ecs-inference:workers:QueueWorker": WorkerConfig,
}
#: The stack sections besides the Fargate services' whose keys could change a Fargate task.
STACK_SECTIONS = ("cluster", "images", "operations")


def _secret(name: str) -> str:
    return f"arn:aws:secretsmanager:us-east-1:{ACCOUNT_ID}:secret:agents/{name}-AbCdEf"


# --------------------------------------------------------------------------------------------
# two configs that between them set every key and every choice
# --------------------------------------------------------------------------------------------


def every_key() -> dict[str, Any]:
    """The agents stack with every key of the Fargate sections, `cluster`, `images` and
    `operations` set to a value other than its default (exclusive keys in two services)."""
    raw = copy.deepcopy(reference(STACK))
    raw["cluster"] = {
        "containerInsights": "disabled",
        "executeCommand": True,
        "executeCommandLogging": False,
    }
    # the models' engine (vllm) is built; without the metrics sidecar they scale on ALB requests
    raw["images"] = {
        **{k: v for k, v in raw["images"].items() if k != "vllm"},
        "build": True,
        "reranker": f"{REGISTRY}/team/reranker:2.0.0",
        "metrics": f"{REGISTRY}/team/metrics:2.0.0",
    }
    raw["operations"] = {
        "metricsSidecar": False,
        "hostTelemetry": False,
        "dashboard": False,
        "alarms": {
            "target5XxPercent": 2.5,
            "ttftP99Seconds": 4.0,
            "pendingMinutes": 20,
            "gpuMemoryPercent": 90.0,
            "gatewayMemoryPercent": 85.0,
        },
        "alarmSubscriptions": [
            {"protocol": "email", "endpoint": "oncall@example.com"},
            {"protocol": "email-json", "endpoint": "robot@example.com"},
            {"protocol": "https", "endpoint": "https://hooks.example.com/alarms"},
            {"protocol": "sms", "endpoint": "+15555550100"},
        ],
    }
    for model in raw["models"].values():
        model["autoscaling"] = {"metric": "albRequests"}
    # A gateway or worker has no weights: only a re-ranker's (or model's) keys name them.
    common = {"logRetentionDays": 14, "kmsKeyArns": {"secrets": [KMS]}}
    raw["rerankers"] = {
        "rr-exact": {
            **common,
            "kmsKeyArns": {"weights": KMS, "secrets": [KMS]},
            "image": f"{REGISTRY}/team/reranker:2.1.0",
            "desiredCount": 3,
            "minCount": 2,
            "maxCount": 6,
            "environment": {"MODEL_VARIANT": "int8"},
            "secrets": {"API_TOKEN": _secret("rerank-token")},
            "modelUri": "s3://example-agents-models/bge-reranker-large-onnx/",
            # XLM-RoBERTa large's config.json
            "model": {
                "name": "bge-reranker-large",
                "modelType": "xlm-roberta",
                "numHiddenLayers": 24,
                "hiddenSize": 1024,
                "numAttentionHeads": 16,
                "intermediateSize": 4096,
                "vocabSize": 250002,
            },
            "cpu": 4096,
            "memoryMib": 8192,
            "cpuArchitecture": "X86_64",
            "platformVersion": "1.4.0",
            "scalingMetric": "cpu",
            "scalingTarget": 70.0,
            "maxRequestSeconds": 45,
            "rollout": {
                "strategy": "linear",
                "canaryPercent": 20,
                "canaryWaitMinutes": 3,
                "linearStepPercent": 50,
                "linearIntervalMinutes": 2,
                "bakeMinutes": 7,
                "smoke": {
                    "query": "Which document is about refunds?",
                    "documents": ["Refunds are paid within 14 days.", "Our office opens at 9."],
                    "maxFirstTokenSeconds": 3,
                },
            },
        },
        "rr-need": {
            "rollout": {"strategy": "canary"},
            "modelUri": "s3://example-agents-models/bge-reranker-base-onnx/",
            "model": {
                "name": "bge-reranker-base",
                "modelType": "xlm-roberta",
                "numHiddenLayers": 12,
                "hiddenSize": 768,
                "numAttentionHeads": 12,
                "intermediateSize": 3072,
                "vocabSize": 250002,
                # prepared with --max-length 256
                "maxLength": 256,
            },
            "needMemoryMib": 3072,
            "needVcpu": 2.0,
        },
    }
    raw["gateway"] = {
        **raw["gateway"],
        **common,
        "image": "ghcr.io/berriai/litellm:main-v1.108.6",
        "desiredCount": 3,
        "minCount": 3,
        "maxCount": 6,
        "environment": {"LITELLM_LOG": "INFO"},
        "secrets": {"SLACK_WEBHOOK_URL": _secret("slack-webhook")},
        "path": "llm",
        "routes": {"llama-3.1-8b": "llama", "qwen": "qwen"},
        "database": {
            "enabled": True,
            "minCapacityAcu": 0,
            "maxCapacityAcu": 8,
            "saltKeySecretArn": _secret("litellm-salt"),
        },
        "cpu": 2048,
        "memoryMib": 4096,
        "cpuArchitecture": "X86_64",
        "targetCpuPercent": 50.0,
    }
    raw["workers"]["summarise"] = {
        **raw["workers"]["summarise"],
        **common,
        "desiredCount": 1,
        "minCount": 1,
        "maxCount": 5,
        "secrets": {"WORKER_TOKEN_SECRET": _secret("worker-token")},
        "concurrency": 4,
        "cpu": 512,
        "memoryMib": 1024,
        "cpuArchitecture": "X86_64",
        "maxReceiveCount": 5,
        "retentionSeconds": 86_400,
        "idleMinutes": 30,
        "kmsKeyId": KMS,
        "resultQueue": True,
    }
    return raw


def defaults() -> dict[str, Any]:
    """The agents stack with a re-ranker and a worker of required keys only, Container Insights
    at the level neither the default nor `every_key` takes: every value of every choice is in
    one of the two configs or is the default. The gateway's keys are given as the values
    themselves (set with `--secret`), which exclude the ARNs `every_key` gives."""
    raw = copy.deepcopy(reference(STACK))
    gateway = raw["gateway"]
    del gateway["masterKeySecretArn"]
    gateway["masterKey"] = "sk-agents-master-key"
    gateway["database"] = {"enabled": True, "saltKey": "sk-agents-salt-key"}
    raw["cluster"] = {"containerInsights": "enabled"}
    raw["rerankers"] = {
        "rr": {
            "modelUri": "s3://example-agents-models/ms-marco-minilm-l6-onnx/",
            "rollout": {"strategy": "blueGreen"},
        }
    }
    worker = raw["workers"]["summarise"]
    raw["workers"]["plain"] = {
        k: worker[k] for k in ("image", "maxJobSeconds", "jobSeconds", "acceptableLatencySeconds")
    }
    return raw


CONFIGS = {"every-key": every_key, "defaults": defaults}


@cache
def recorded(which: str) -> Recording:
    settings = read_stack_file(ROOT, STACK)
    settings["config"]["ecs-inference:platform"] = CONFIGS[which]()
    return run_program(
        ROOT,
        project=project_name(ROOT),
        stack=STACK,
        config=stack_config_values(settings),
        # As the CLI marks the key when its values were set with `--secret`.
        secret_keys=["ecs-inference:platform"],
    )


def _sections(cfg: StackConfig) -> dict[str, list[BaseModel]]:
    """The validated instances of each covered section (a map's entries, or the one)."""
    gateway = [cfg.gateway] if cfg.gateway is not None else []
    return {
        "rerankers": list(cfg.rerankers.values()),
        "gateway": list(gateway),
        "workers": list(cfg.workers.values()),
        **{name: [getattr(cfg, name)] for name in STACK_SECTIONS},
    }


def _schemas() -> dict[str, type[BaseModel]]:
    fields = StackConfig.model_fields
    out = {name: schema for name, (schema, _, _) in FARGATE_SECTIONS.items()}
    for name in STACK_SECTIONS:
        annotation = fields[name].annotation
        assert isinstance(annotation, type) and issubclass(annotation, Section)
        out[name] = annotation
    return out


def _section_type(annotation: Any) -> type[BaseModel] | None:
    """The section a field holds (itself, in a list, or optional), else None."""
    for candidate in (annotation, *typing.get_args(annotation)):
        if isinstance(candidate, type) and issubclass(candidate, Section):
            return candidate
        inner = typing.get_args(candidate)
        if typing.get_origin(candidate) is list and inner and issubclass(inner[0], Section):
            return inner[0]
    return None


def _choices(annotation: Any) -> set[Any] | None:
    """Every value a bool or Literal field (optional or not) can take, else None."""
    if annotation is bool:
        return {True, False}
    if typing.get_origin(annotation) is typing.Literal:
        return set(typing.get_args(annotation))
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    return _choices(args[0]) if len(args) == 1 else None


def _leaves(
    schema: type[BaseModel], instances: list[Any], prefix: str = ""
) -> Iterator[tuple[str, FieldInfo, list[Any]]]:
    """(dotted key, field, each instance's value) for every leaf field, through sub-sections."""
    for name, info in schema.model_fields.items():
        key = f"{prefix}{info.alias or name}"
        values = [getattr(i, name) for i in instances]
        inner = _section_type(info.annotation)
        if inner is None:
            yield key, info, values
            continue
        items = [v for value in values for v in (value if isinstance(value, list) else [value])]
        yield from _leaves(inner, [v for v in items if v is not None], f"{key}.")


def test_the_two_configs_set_every_key_and_every_choice() -> None:
    loaded = {
        which: _sections(load_stack_config(make(), STACK, key_secret=True))
        for which, make in CONFIGS.items()
    }
    unset, unchosen = [], []
    for section, schema in _schemas().items():
        every = dict(
            (key, (info, values))
            for key, info, values in _leaves(schema, loaded["every-key"][section])
        )
        both = {key: values for key, _, values in _leaves(schema, loaded["defaults"][section])}
        for key, (info, values) in every.items():
            if not info.is_required():
                default = info.get_default(call_default_factory=True)
                if all(v == default for v in [*values, *both.get(key, [])]):
                    unset.append(f"{section}.{key}")
            choices = _choices(info.annotation)
            if choices is None:
                continue
            # the default is what every service that leaves the key out takes
            taken = {*values, *both.get(key, []), info.get_default(call_default_factory=True)}
            if not choices <= taken:
                unchosen.append(f"{section}.{key}: {choices - taken}")
    assert not unset, f"every_key() leaves these at their default: {unset}"
    assert not unchosen, f"neither config takes: {unchosen}"


def _fargate_tasks(rec: Recording) -> list[tuple[type, str, dict[str, Any]]]:
    """(spec type, task resource name, RegisterTaskDefinition request) of each Fargate task."""
    out = []
    for task in rec.by_type(TD):
        if "FARGATE" not in (task.inputs.get("requiresCompatibilities") or []):
            continue
        assert task.parent is not None
        component = task.parent.split("::")[-2].split("$")[-1]
        out.append(
            (COMPONENTS[component], task.name, register_task_definition_request(task.inputs))
        )
    return out


@pytest.mark.parametrize("which", sorted(CONFIGS))
def test_every_fargate_task_definition_satisfies_the_whole_table(which: str) -> None:
    raw = CONFIGS[which]()
    tasks = _fargate_tasks(recorded(which))
    assert len(tasks) == len(raw["rerankers"]) + 1 + len(raw["workers"])
    for _, name, request in tasks:
        assert fargate.task_refusals(request) == [], name


def _table_values(request: dict[str, Any]) -> Iterator[tuple[str, str, str]]:
    """(container name or "" for the task, table path, the value there as JSON)."""
    for parameter in FARGATE_TASK_PARAMETERS:
        steps = parameter.split(".")
        if steps[0] != fargate.CONTAINERS:
            found = [v for _, _, v in fargate.values_at(request, steps)]
            yield "", parameter, json.dumps(found or [None], sort_keys=True)
            continue
        for container in request["containerDefinitions"]:
            one = {"containerDefinitions": [container]}
            found = [v for _, _, v in fargate.values_at(one, steps)]
            yield container["name"], parameter, json.dumps(found or [None], sort_keys=True)


def test_no_table_value_varies_with_the_config() -> None:
    seen: dict[tuple[type, str, str], set[str]] = {}
    for which in CONFIGS:
        for kind, _, request in _fargate_tasks(recorded(which)):
            for container, parameter, value in _table_values(request):
                seen.setdefault((kind, container, parameter), set()).add(value)
    assert {kind for kind, _, _ in seen} == set(COMPONENTS.values())
    varying = {(k, p) for (k, _, p), values in seen.items() if len(values) > 1}
    assert not varying, f"table values the config changes: {varying}"


# --------------------------------------------------------------------------------------------
# keys that name a table parameter, and a model's accelerator keys
# --------------------------------------------------------------------------------------------


def _base() -> dict[str, Any]:
    raw = defaults()
    raw["rerankers"]["rr"]["cpu"], raw["rerankers"]["rr"]["memoryMib"] = 2048, 4096
    return raw


def _service_path(section: str) -> str:
    """The dotted path of the one service of `section` in `_base()`."""
    return {"rerankers": "rerankers.rr", "workers": "workers.plain"}.get(section, section)


def _issues(raw: dict[str, Any]) -> list[ConfigIssue]:
    with pytest.raises(ConfigError) as info:
        load_stack_config(raw, STACK, key_secret=True)
    return info.value.issues


def _forms(parameter: str, value: Any) -> list[tuple[str, Any, str]]:
    """(config key, its value, the config path of `value`) for `value` at `parameter`, written
    as the first name of its path (nested as the request nests it) and as its last name."""
    steps = parameter.split(".")
    steps = steps[1:] if steps[0] == fargate.CONTAINERS else steps
    last = len(steps) - (2 if steps[-1].endswith("[]") else 1)
    forms = []
    for index in sorted({0, last}):
        node: Any = value
        suffix = ""
        for step in reversed(steps[index + 1 :]):
            key = step.removesuffix("[]")
            node = {key: [node] if step.endswith("[]") else node}
            suffix = f".{key}" + ("[0]" if step.endswith("[]") else "") + suffix
        name = steps[index]
        if name.endswith("[]"):
            node, suffix = [node], "[0]" + suffix
        forms.append((name.removesuffix("[]"), node, suffix))
    return forms


@pytest.mark.parametrize("section", sorted(FARGATE_SECTIONS))
@pytest.mark.parametrize("parameter", list(FARGATE_TASK_PARAMETERS))
def test_each_table_entry_written_in_a_fargate_section(section: str, parameter: str) -> None:
    """Bad: Fargate's refused value, reported at its config path with the table's rule and
    sources. Good: a value Fargate accepts, still no setting (the component writes it)."""
    bad, good = VALUES[parameter]
    cited = fargate.cited(FARGATE_TASK_PARAMETERS[parameter][1])
    base = f"platform.{_service_path(section)}"
    for key, value, suffix in _forms(parameter, bad):
        issues = _issues(mutate(_base(), f"{_service_path(section)}.{key}", value))
        at = [i for i in issues if i.path.startswith(f"{base}.{key}")]
        assert [i.path for i in at] == [f"{base}.{key}{suffix}"], issues
        assert at[0].message.startswith("refused on Fargate: "), at[0]
        assert parameter in at[0].message and cited in at[0].message, at[0]
    if good is None:
        return  # Fargate takes no value there: the components' own tasks leave it unset
    for key, value, _ in _forms(parameter, good):
        issues = _issues(mutate(_base(), f"{_service_path(section)}.{key}", value))
        assert [i.path for i in issues] == [f"{base}.{key}"], issues
        assert issues[0].message.startswith("not a setting of "), issues[0]
        assert parameter in issues[0].message, issues[0]


def test_every_refused_key_is_reported_in_one_run_beside_schema_errors() -> None:
    raw = mutate(_base(), "rerankers.rr.sharedMemorySize", 2048)
    raw = mutate(raw, "rerankers.rr.tensorParallelSize", 2)
    raw = mutate(
        raw, "gateway.linuxParameters", {"capabilities": {"add": ["SYS_ADMIN", "NET_ADMIN"]}}
    )
    raw = mutate(raw, "workers.plain.networkMode", "host")
    raw = mutate(raw, "workers.plain.concurrency", 0)
    paths = [i.path for i in _issues(raw)]
    assert paths == [
        "platform.rerankers.rr.sharedMemorySize",
        "platform.rerankers.rr.tensorParallelSize",
        "platform.gateway.linuxParameters.capabilities.add[0]",
        "platform.gateway.linuxParameters.capabilities.add[1]",
        "platform.workers.plain.networkMode",
        "platform.workers.plain.concurrency",
    ]


def test_no_key_of_a_fargate_section_is_taken_for_a_table_parameter() -> None:
    names = set(fargate.parameter_names()) | set(MODEL_KEYS)
    for schema, _, _ in FARGATE_SECTIONS.values():
        own = {k for n, f in schema.model_fields.items() for k in (n, f.alias) if k}
        assert not own & names, (schema.__name__, own & names)
    # and every table path has a name it is matched by
    assert {p for paths in fargate.parameter_names().values() for p in paths} == set(
        FARGATE_TASK_PARAMETERS
    )


@pytest.mark.parametrize("section", sorted(FARGATE_SECTIONS))
@pytest.mark.parametrize("key", sorted(MODEL_KEYS))
def test_a_model_accelerator_key_in_a_fargate_section_says_why(section: str, key: str) -> None:
    issues = _issues(mutate(_base(), f"{_service_path(section)}.{key}", 2))
    base = f"platform.{_service_path(section)}"
    assert [i.path for i in issues] == [f"{base}.{key}"], issues
    message = issues[0].message
    assert message.startswith(f"refused on Fargate: `{key}` is a model setting"), message
    for parameter in MODEL_KEYS[key][1]:
        assert parameter in message
        for source in FARGATE_TASK_PARAMETERS[parameter][1]:
            assert source.removeprefix("botocore:") in message or source == "guide"
    assert fargate.GUIDE in message


def _model_refusals(raw: dict[str, Any], stack: str, name: str) -> set[str]:
    """The table paths Fargate would refuse in model `name`'s planned container."""
    decided = plan_of(raw, stack).models[name]
    containers = model_container_definitions(
        image=f"{REGISTRY}/m:1",
        launch=decided.launch,
        fit=decided.fit,
        log_group_name="/ecs/m",
        region="us-east-1",
        stream_prefix=name,
        neuron_devices=decided.neuron_devices,
        shm_size_mib=decided.shm_size_mib,
    )
    request = {"networkMode": "awsvpc", "containerDefinitions": containers}
    return {r.parameter for r in fargate.task_refusals(request)}


def _custom_on_neuron() -> dict[str, Any]:
    return mutate(
        reference("agents"),
        "models.nc",
        {
            "engine": "custom",
            "pool": "inf2",
            "image": f"{REGISTRY}/team/neuron-server:1.0",
            "servedModelName": "nc",
            "custom": {"neuronDevices": 1, "acceleratorMemoryGiB": 10},
            "maxCount": 1,
        },
    )


def test_the_model_keys_give_a_model_what_they_say() -> None:
    """What `MODEL_KEYS` says each key does on a model is in the model's planned container."""
    engines = reference("engines")
    found = {
        "tensorParallelSize": _model_refusals(
            mutate(engines, "models.llama.tensorParallelSize", 2), "engines", "llama"
        ),
        "custom": _model_refusals(
            mutate(engines, "models.triton.custom.gpus", 2), "engines", "triton"
        )
        | _model_refusals(_custom_on_neuron(), "agents", "nc"),
        "neuron": _model_refusals(reference("agents"), "agents", "llama-neuron"),
    }
    assert found == {key: set(paths) for key, (_, paths) in MODEL_KEYS.items()}
    # the /dev/shm size grows with the tensor parallel size
    one, two = (
        plan_of(mutate(engines, "models.llama.tensorParallelSize", tp), "engines").models["llama"]
        for tp in (1, 2)
    )
    assert 0 < one.shm_size_mib < two.shm_size_mib
