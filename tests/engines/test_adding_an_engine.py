"""Adding an engine is one module, its image and its tests: the synthetic engine of
`tests/engines/synthetic.py`, registered here and nowhere else, reaches the config, the plan, the
model service's task definition, operations and cost."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from ecs_inference import cost, engines, sizing
from ecs_inference.config.issues import ConfigError, Issues
from ecs_inference.config.load import load_stack_config
from ecs_inference.models.decisions import demands
from ecs_inference.plan import PLATFORM_NAME
from ecs_inference.sizing.instance_types import GpuDemand
from tests.engines import synthetic
from tests.stack_config import issues_of, mutate, plan_of, reference
from tools.preview import project_name, read_stack_file
from tools.recording import Recording, run_program, stack_config_values

ROOT = Path(__file__).resolve().parents[2]
STACK = "engines"
SERVICE = "toy"
IMAGE = "123456789012.dkr.ecr.us-east-1.amazonaws.com/team/synth-server:1.0.0"


@pytest.fixture
def synth() -> Iterator[synthetic.Synth]:
    with synthetic.registered() as engine:
        yield engine


def synth_raw() -> dict:
    """The engines reference stack plus one service on the synthetic engine."""
    raw = mutate(reference(STACK), f"images.{synthetic.NAME}", IMAGE)
    raw = mutate(raw, "gpuPools.l40s.maxSize", 8)
    return mutate(
        raw,
        f"models.{SERVICE}",
        {
            "engine": synthetic.NAME,
            "pool": "l40s",
            "architecture": "llama-3.1-8b",
            "weightsUri": "s3://example-engines-models/toy/",
            "maxModelLen": 4096,
            synthetic.NAME: {"greeting": "hi"},
        },
    )


def test_no_file_outside_its_module_names_it() -> None:
    word = re.compile(rf"\b{synthetic.NAME}\b")
    for folder in ("components", "contracts", "tools", "images", "policy"):
        for path in (ROOT / folder).rglob("*"):
            if path.suffix in (".py", ".json", ".yaml", ".yml", ".md", ".txt") and path.is_file():
                assert not word.search(path.read_text(errors="ignore")), path


def test_unregistered_it_is_an_unknown_engine() -> None:
    with pytest.raises(ConfigError) as info:
        load_stack_config(synth_raw(), STACK)
    issues = {i.path: i.message for i in info.value.issues}
    assert set(issues) == {
        f"platform.models.{SERVICE}.engine",
        f"platform.models.{SERVICE}.{synthetic.NAME}",
        f"platform.images.{synthetic.NAME}",
    }
    assert issues[f"platform.images.{synthetic.NAME}"].startswith("unknown key")


def test_config_takes_its_section_and_image_and_refuses_them_elsewhere(synth) -> None:
    cfg = load_stack_config(synth_raw(), STACK)
    settings = cfg.models[SERVICE].engine_settings
    assert isinstance(settings, synthetic.SynthSettings) and settings.greeting == "hi"
    assert cfg.images.for_engine(synthetic.NAME) == IMAGE
    assert cfg.models[SERVICE].on_gpu
    assert synthetic.NAME in engines.names()

    on_vllm = mutate(synth_raw(), f"models.llama.{synthetic.NAME}", {"greeting": "hi"})
    where = f"platform.models.llama.{synthetic.NAME}"
    (issue,) = [i for i in issues_of(on_vllm, STACK) if i.path == where]
    assert issue.message == (
        f"`{synthetic.NAME}` settings only apply to engine {synthetic.NAME}, not vllm"
    )
    bad = mutate(synth_raw(), f"models.{SERVICE}.{synthetic.NAME}.greeting", "")
    paths = {i.path for i in issues_of(bad, STACK)}
    assert paths == {f"platform.models.{SERVICE}.{synthetic.NAME}.greeting"}


def test_the_plan_builds_its_launch_and_sizes_it(synth) -> None:
    plan = plan_of(synth_raw(), STACK)
    m = plan.models[SERVICE]
    assert isinstance(m.launch, synthetic.SynthLaunch) and m.launch.greeting == "hi"
    assert m.inputs.image == IMAGE
    demand = demands(plan.config.models, Issues())[SERVICE]
    assert isinstance(demand, GpuDemand)
    fit = sizing.choose_tensor_parallel(demand.need, plan.gpu_pools["l40s"].input.types[0])
    assert m.gpu_count == m.launch.gpus == fit.tp_size  # type: ignore[union-attr]
    assert m.neuron_devices == () and not m.one_task_per_instance
    lines = plan.decisions[f"model {SERVICE}"]
    assert any(f"warm-up {synthetic.WARMUP_SECONDS:.0f} s" in line for line in lines), lines
    # it declares a scrape family: the sidecar runs and it scales on its load
    load = m.scaling_configuration["CustomizedMetricSpecification"]["Metrics"][-1]  # type: ignore[index]
    assert m.metrics_sidecar and load["Label"] == "requests waiting + running per task"


@pytest.fixture
def recorded(synth) -> Recording:
    settings = read_stack_file(ROOT, STACK)
    settings["config"]["ecs-inference:platform"] = synth_raw()
    return run_program(
        ROOT, project=project_name(ROOT), stack=STACK, config=stack_config_values(settings)
    )


def test_its_task_definition_is_what_its_launch_says(recorded) -> None:
    component = f"{PLATFORM_NAME}-{SERVICE}"
    children = [r for r in recorded.resources if r.parent and r.parent.endswith(f"::{component}")]
    (task,) = [r for r in children if r.type == "aws:ecs/taskDefinition:TaskDefinition"]
    (group,) = [r for r in children if r.type == "aws:lb/targetGroup:TargetGroup"]
    containers = {c["name"]: c for c in json.loads(task.inputs["containerDefinitions"])}
    engine = containers["engine"]
    env = {e["name"]: e["value"] for e in engine["environment"]}
    assert env[synthetic.ENV_GREETING] == "hi"
    assert env[synthetic.ENV_PORT] == str(synthetic.PORT)
    assert env["AWS_REGION"] == "us-east-1"
    assert engine["image"] == IMAGE
    assert engine["command"] == list(synthetic.COMMAND)
    assert engine["portMappings"][0]["containerPort"] == synthetic.PORT
    assert engine["resourceRequirements"] == [{"type": "GPU", "value": env[synthetic.ENV_GPUS]}]
    assert group.inputs["healthCheck"]["path"] == synthetic.HEALTH_PATH
    assert group.inputs["port"] == synthetic.PORT
    assert len(containers) == 2  # the metrics sidecar scrapes it


def test_operations_and_cost_count_it(synth) -> None:
    plan = plan_of(synth_raw(), STACK)
    alarms = {a.key for a in plan.alarm_specs() if f"-{SERVICE}-" in a.request["AlarmName"]}
    assert {"ttft-p99", "engine-down", "target-5xx"} <= alarms
    without = plan_of(reference(STACK), STACK)
    metrics = {
        name: cost.estimate(p).point("steady") for name, p in (("with", plan), ("without", without))
    }
    series = {
        name: next(li.quantity for li in point.lines if li.category == "monitoring")
        for name, point in metrics.items()
    }
    assert series["with"] > series["without"]
    assert metrics["with"].usd_per_hour > metrics["without"].usd_per_hour
