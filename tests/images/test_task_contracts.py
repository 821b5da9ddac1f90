"""What each ECS task definition runs is what its image expects, for every reference stack.

The real program (`__main__.py`) runs under the recording mocks with each `Pulumi.<stack>.yaml`,
as the offline preview does; every recorded `aws:ecs/taskDefinition:TaskDefinition` is then
checked against the image it runs, from the image's side:
- vLLM / Neuron: the Dockerfile's ENTRYPOINT is the entrypoint script and the task overrides
  neither it nor the command; the entrypoint, run with exactly the task's environment
  (`--print-command`), accepts it and builds the command the stack config asked for; every
  `ENGINE_*` name is one the entrypoint reads and every other name one the engine release reads;
  the port the entrypoint serves on is the container port, the service's load-balancer port and
  the target group's port; the target group health-checks the engine's health path.
- re-ranker: the same against `contracts/reranker.py` and the service's own settings parser
  (`app/settings.py`), plus the Fargate CPU architecture the image is built for.
A stack with no task definition at all fails, as does a model or re-ranker in the stack config
without exactly one task definition, service and target group.

Needs the pinned engine wheels in `.cache/engines` (`make test` fetches them) for the names vLLM
reads; no network, AWS or Pulumi CLI.
"""

from __future__ import annotations

import functools
import json
import math
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from ecs_inference.contracts import engine as engine_contract
from ecs_inference.contracts import neuron as neuron_contract
from ecs_inference.contracts import vllm as vllm_contract
from ecs_inference.contracts.engine import ENV_REGION_VARIABLES
from ecs_inference.images.platforms import EXAMPLE_IMAGES
from ecs_inference.plan import PLATFORM_NAME
from tests.images.engine_images import load_script, printed_command, value_after
from tests.stacks import REFERENCE_STACKS
from tools import engine_flags
from tools.preview import project_name, read_stack_file
from tools.recording import RecordedResource, Recording, run_program, stack_config_values
from tools.sources import vllm as vllm_source

REPO = Path(__file__).resolve().parents[2]
IMAGES = REPO / "images"
RERANKER_DIR = IMAGES / "reranker"
CONFIG_KEY = "ecs-inference:platform"
TASK_DEFINITION = "aws:ecs/taskDefinition:TaskDefinition"
SERVICE = "aws:ecs/service:Service"
TARGET_GROUP = "aws:lb/targetGroup:TargetGroup"
LOAD_BALANCER = "aws:lb/loadBalancer:LoadBalancer"
STACKS = REFERENCE_STACKS

# Variables read by software other than the entrypoint and vLLM itself.
HUB_VARIABLES = frozenset({"HF_HUB_OFFLINE"})  # huggingface_hub
NEURON_RUNTIME_VARIABLES = frozenset({"NEURON_RT_VISIBLE_CORES"})  # Neuron runtime
# The stack's region, set in every container for the AWS SDKs (boto3, the Run:ai streamer).
SDK_VARIABLES = frozenset(ENV_REGION_VARIABLES)


reranker_contract = load_script("reranker_contract_under_test", REPO / "contracts" / "reranker.py")
neuron_entrypoint = load_script("neuron_entrypoint_under_test", IMAGES / "neuron" / "entrypoint.py")


def _entrypoint_module(script: Path) -> Any:
    """The entrypoint script, imported as the image runs it (it reads contracts/)."""
    return load_script(f"{script.parent.name}_entrypoint_under_test", script)


def dockerfile_entrypoint(image: str) -> list[str]:
    """The exec-form ENTRYPOINT of images/<image>/Dockerfile (the last one wins, as in Docker)."""
    found = [
        json.loads(line.split(None, 1)[1])
        for line in (IMAGES / image / "Dockerfile").read_text().splitlines()
        if line.startswith("ENTRYPOINT ")
    ]
    assert found, f"images/{image}/Dockerfile has no ENTRYPOINT"
    return found[-1]


def dockerfile_copy_destination(image: str, source: str) -> str:
    """Where images/<image>/Dockerfile COPYs `source` from the build context."""
    for line in (IMAGES / image / "Dockerfile").read_text().splitlines():
        words = [w for w in line.split() if not w.startswith("--")]
        if words[:1] == ["COPY"] and source in words[1:-1]:
            dest = words[-1]
            return dest + source if dest.endswith("/") else dest
    raise AssertionError(f"images/{image}/Dockerfile does not COPY {source}")


# --- the deployment, as the program registers it -----------------------------------------------


@dataclass(frozen=True)
class Deployed:
    """One model or re-ranker: its stack config and the resources its component registered."""

    stack: str
    service: str
    kind: str  # "vllm" | "neuron" | "reranker"
    config: dict[str, Any]
    image: str
    task_definition: RecordedResource
    ecs_service: RecordedResource
    target_group: RecordedResource
    alb_idle_timeout: float

    @property
    def containers(self) -> list[dict[str, Any]]:
        # The provider takes containerDefinitions as a JSON string.
        return json.loads(self.task_definition.inputs["containerDefinitions"])

    @property
    def load_balancer(self) -> dict[str, Any]:
        entries = self.ecs_service.inputs["loadBalancers"]
        assert len(entries) == 1, entries
        return entries[0]

    @property
    def container(self) -> dict[str, Any]:
        """The container the service puts behind the target group."""
        name = self.load_balancer["containerName"]
        matching = [c for c in self.containers if c["name"] == name]
        assert len(matching) == 1, f"{self.service}: no single container named {name!r}"
        return matching[0]

    @property
    def environment(self) -> dict[str, str]:
        items = self.container.get("environment", [])
        names = [item["name"] for item in items]
        assert len(names) == len(set(names)), f"{self.service}: duplicate names {names}"
        return {item["name"]: item["value"] for item in items}

    @property
    def variable_names(self) -> set[str]:
        """Every variable the container gets: plain environment and Secrets Manager injections."""
        return set(self.environment) | {s["name"] for s in self.container.get("secrets", [])}

    @property
    def container_port(self) -> int:
        mappings = self.container["portMappings"]
        assert len(mappings) == 1, mappings
        return int(mappings[0]["containerPort"])


def stack_platform_config(stack: str) -> dict[str, Any]:
    return read_stack_file(REPO, stack)["config"][CONFIG_KEY]


def services_of(stack: str) -> list[tuple[str, str]]:
    """(kind, service) for every model and re-ranker the stack file declares."""
    cfg = stack_platform_config(stack)
    models = [(m["engine"], name) for name, m in (cfg.get("models") or {}).items()]
    rerankers = [("reranker", name) for name in cfg.get("rerankers") or {}]
    return sorted(models + rerankers)


@functools.cache
def recording(stack: str) -> Recording:
    return run_program(
        REPO,
        project=project_name(REPO),
        stack=stack,
        config=stack_config_values(read_stack_file(REPO, stack)),
    )


def deployed(stack: str, service: str) -> Deployed:
    rec = recording(stack)
    cfg = stack_platform_config(stack)
    kind, settings = (
        (cfg["models"][service]["engine"], cfg["models"][service])
        if service in (cfg.get("models") or {})
        else ("reranker", cfg["rerankers"][service])
    )
    component = f"{PLATFORM_NAME}-{service}"
    children = [r for r in rec.resources if r.parent and r.parent.endswith(f"::{component}")]

    def only(type_: str) -> RecordedResource:
        found = [r for r in children if r.type == type_]
        assert len(found) == 1, f"{stack}/{service}: expected one {type_}, got {len(found)}"
        return found[0]

    task_definition, ecs_service = only(TASK_DEFINITION), only(SERVICE)
    # A blue/green, canary or linear service also has its alternate group (`-tg-alt`), of the
    # same health check: the primary is the one its logical name ends the component's with.
    (target_group,) = [
        r for r in children if r.type == TARGET_GROUP and r.name == f"{component}-tg"
    ]
    # The service runs this task definition behind this target group (the engine's own links).
    assert ecs_service.property_dependencies["taskDefinition"] == (task_definition.urn,)
    assert target_group.urn in ecs_service.property_dependencies["loadBalancers"]
    (alb,) = rec.by_type(LOAD_BALANCER)
    return Deployed(
        stack=stack,
        service=service,
        kind=kind,
        config=settings,
        image=settings.get("image") or cfg["images"][kind],
        task_definition=task_definition,
        ecs_service=ecs_service,
        target_group=target_group,
        alb_idle_timeout=float(alb.inputs["idleTimeout"]),
    )


@functools.cache
def vllm_variables(release: engine_flags.EngineRelease) -> frozenset[str]:
    return frozenset(vllm_source.vllm_env_vars(engine_flags.source_root(release)))


_GET_ROUTE = re.compile(r"""@(?:router|app)\.get\(\s*["']([^"']+)["']""")


@functools.cache
def engine_get_routes(release: engine_flags.EngineRelease) -> frozenset[str]:
    """GET paths the release's HTTP servers declare (FastAPI decorators under vllm/entrypoints)."""
    root = engine_flags.source_root(release) / "vllm" / "entrypoints"
    return frozenset(
        path for source in root.rglob("*.py") for path in _GET_ROUTE.findall(source.read_text())
    )


MODEL_CASES = [
    pytest.param(stack, service, id=f"{stack}-{service}")
    for stack in STACKS
    for kind, service in services_of(stack)
    if kind in ("vllm", "neuron")
]
RERANKER_CASES = [
    pytest.param(stack, service, id=f"{stack}-{service}")
    for stack in STACKS
    for kind, service in services_of(stack)
    if kind == "reranker"
]


# --- every service has its task definition ------------------------------------------------------


def test_reference_stacks_exist():
    assert {"dev", "prod"} <= set(STACKS)
    assert MODEL_CASES and RERANKER_CASES


@pytest.mark.parametrize("stack", STACKS)
def test_every_configured_service_has_exactly_one_task_definition(stack):
    task_definitions = recording(stack).by_type(TASK_DEFINITION)
    assert task_definitions, f"{stack}: the program registered no task definition at all"
    expected = {f"{PLATFORM_NAME}-{service}" for _, service in services_of(stack)}
    # The AI gateway and the queue workers run images of their own (LiteLLM's, the user's).
    cfg = stack_platform_config(stack)
    expected |= {f"{PLATFORM_NAME}-gateway"} if cfg.get("gateway") else set()
    expected |= {f"{PLATFORM_NAME}-{worker}" for worker in cfg.get("workers") or {}}
    owners = [td.parent.rsplit("::", 1)[-1] for td in task_definitions]
    assert sorted(owners) == sorted(expected)


# --- vLLM and Neuron ------------------------------------------------------------------------------


def _check_engine_image_runs_the_entrypoint(d: Deployed) -> Path:
    """The image's ENTRYPOINT is the entrypoint script; the task overrides neither part."""
    installed = dockerfile_copy_destination(d.kind, "entrypoint.py")
    assert dockerfile_entrypoint(d.kind) == ["python3", installed]
    assert "entryPoint" not in d.container
    assert not d.container.get("command"), "a command would be appended to the entrypoint argv"
    return IMAGES / d.kind / "entrypoint.py"


def _check_names_are_read(d: Deployed, entrypoint: Path, vllm_release: engine_flags.EngineRelease):
    contract = vllm_contract if d.kind == "vllm" else neuron_contract
    reads = set(contract.READS)
    module = _entrypoint_module(entrypoint)
    assert {getattr(module, n) for n in dir(module) if n.startswith("ENV_")} == reads
    names = d.variable_names
    engine_names = {n for n in names if n.startswith("ENGINE_")}
    assert engine_names <= reads, f"not read by the entrypoint: {sorted(engine_names - reads)}"
    others = names - engine_names
    known = vllm_variables(vllm_release) | HUB_VARIABLES | SDK_VARIABLES
    if d.kind == "neuron":
        known |= NEURON_RUNTIME_VARIABLES
    assert others <= known, f"read by neither the entrypoint nor the engine: {others - known}"
    assert all(value != "" for value in d.environment.values()), "empty values are never sent"


def _check_port_and_health(d: Deployed, serving_port: int, health_path: str):
    assert serving_port == d.container_port
    assert int(d.load_balancer["containerPort"]) == d.container_port
    assert int(d.target_group.inputs["port"]) == d.container_port
    health = d.target_group.inputs["healthCheck"]
    assert health["path"] == health_path
    assert health.get("port", "traffic-port") == "traffic-port"
    assert health.get("protocol", "HTTP") == "HTTP" == d.target_group.inputs["protocol"]


def _check_keepalives(d: Deployed):
    # An SSE comment resets the ALB idle timer; the target must outlive the ALB's reuse of a
    # kept-alive connection.
    env = d.environment
    assert 2 * int(env[engine_contract.ENV_SSE_KEEPALIVE_SECONDS]) <= d.alb_idle_timeout
    assert int(env[vllm_contract.ENV_HTTP_KEEPALIVE]) > d.alb_idle_timeout


@pytest.mark.parametrize(("stack", "service"), MODEL_CASES)
def test_model_task_runs_what_its_image_entrypoint_expects(stack, service):
    d = deployed(stack, service)
    assert d.container["image"] == d.image
    entrypoint = _check_engine_image_runs_the_entrypoint(d)
    argv = printed_command(entrypoint, d.container["environment"])
    assert value_after(argv, "--served-model-name") == d.config.get("servedModelName", service)
    _check_keepalives(d)

    if d.kind == "vllm":
        _check_names_are_read(d, entrypoint, vllm_source.VLLM_GPU)
        assert argv[:2] == ["vllm", "serve"]
        assert engine_flags.check_command(argv) == []
        assert value_after(argv, "--model") == d.config["weightsUri"].rstrip("/") + "/"
        if "maxModelLen" in d.config:
            assert int(value_after(argv, "--max-model-len")) == d.config["maxModelLen"]
        # vLLM shards over every GPU the task reserves, and only those.
        (gpus,) = [r for r in d.container["resourceRequirements"] if r["type"] == "GPU"]
        assert value_after(argv, "--tensor-parallel-size") == gpus["value"]
        health = _entrypoint_module(entrypoint).HEALTH_PATH
        assert health in engine_get_routes(vllm_source.VLLM_GPU)
        _check_port_and_health(d, int(value_after(argv, "--port")), health)
    else:
        _check_names_are_read(d, entrypoint, vllm_source.VLLM_NEURON)
        assert argv[:3] == ["optimum-cli", "neuron", "serve"]
        assert engine_flags.check_command(argv) == []
        neuron = d.config["neuron"]
        assert int(value_after(argv, "--batch-size")) == neuron["batchSize"]
        assert int(value_after(argv, "--sequence-length")) == neuron["sequenceLength"]
        assert int(value_after(argv, "--tensor-parallel-size")) == neuron["tpDegree"]
        devices = d.container["linuxParameters"]["devices"]
        assert len(devices) == math.ceil(neuron["tpDegree"] / 2)  # 2 NeuronCores per device
        # The keep-alive proxy owns the container port; the engine listens on loopback behind it.
        settings = neuron_entrypoint.Settings(d.environment)
        assert value_after(argv, "--host") == "127.0.0.1"
        assert int(value_after(argv, "--port")) == settings.upstream_port != settings.port
        # The proxy forwards every path unchanged, so the health path is the engine's own.
        health = engine_contract.HEALTH_PATH
        assert health in engine_get_routes(vllm_source.VLLM_NEURON)
        _check_port_and_health(d, settings.port, health)


# --- re-ranker ------------------------------------------------------------------------------------

_SETTINGS_PROBE = """
import json, sys
sys.path.insert(0, ".")
from app.settings import Settings
s = Settings.from_env()
print(json.dumps({"port": s.port, "model_s3_uri": s.model_s3_uri, "keep_alive_s": s.keep_alive_s,
                  "drain_timeout_s": s.drain_timeout_s, "model_name": s.model_name}))
"""


def reranker_settings(environment: dict[str, str]) -> dict[str, Any]:
    """The re-ranker service's own settings parser, run on exactly the task's environment."""
    proc = subprocess.run(
        [sys.executable, "-c", _SETTINGS_PROBE],
        cwd=RERANKER_DIR,
        # the image has /srv/contracts beside /srv/app; here contracts/ is at the repository root
        env={
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "PYTHONPATH": str(REPO),
            **environment,
        },
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert proc.returncode == 0, f"the re-ranker rejected the task's environment: {proc.stderr}"
    return json.loads(proc.stdout)


@pytest.mark.parametrize(("stack", "service"), RERANKER_CASES)
def test_reranker_task_matches_the_image_contract(stack, service):
    d = deployed(stack, service)
    c = reranker_contract
    assert d.container["image"] == d.image
    assert dockerfile_entrypoint("reranker") == ["python", "-m", "app"]
    assert "entryPoint" not in d.container and not d.container.get("command")

    unknown = d.variable_names - set(c.ENV_DEFAULTS) - SDK_VARIABLES
    assert not unknown, f"not in the image contract: {sorted(unknown)}"
    settings = reranker_settings(d.environment)
    assert settings["model_s3_uri"] == d.config["modelUri"]
    assert settings["port"] == c.PORT
    _check_port_and_health(d, settings["port"], c.HEALTH_PATH)

    # The drain budget fits the stop timeout; connections outlive the ALB's reuse of them.
    assert int(d.container["stopTimeout"]) == c.STOP_TIMEOUT_SECONDS
    assert settings["drain_timeout_s"] < c.STOP_TIMEOUT_SECONDS
    assert settings["keep_alive_s"] > d.alb_idle_timeout
    assert d.ecs_service.inputs["healthCheckGracePeriodSeconds"] >= c.STARTUP_GRACE_SECONDS
    assert int(d.task_definition.inputs["memory"]) >= c.MIN_MEMORY_MIB
    platform = d.task_definition.inputs["runtimePlatform"]
    assert platform["cpuArchitecture"] == c.CPU_ARCHITECTURE


# --- the images CI builds run on the tasks' architecture ------------------------------------------

_DOCKER_PLATFORM = {"X86_64": "linux/amd64", "ARM64": "linux/arm64"}


def deploy_platforms() -> dict[str, str]:
    """image -> platform of the image build matrix in the deploy workflow."""
    workflow = yaml.safe_load((REPO / ".github" / "workflows" / "deploy.yml").read_text())
    matrix = workflow["jobs"]["images"]["strategy"]["matrix"]["include"]
    return {entry["image"]: entry["platform"] for entry in matrix}


@pytest.mark.parametrize("stack", STACKS)
def test_images_are_built_for_the_architecture_their_tasks_run_on(stack):
    platforms = deploy_platforms()
    assert set(platforms) == {
        p.name
        for p in IMAGES.iterdir()
        if (p / "Dockerfile").is_file() and p.name not in EXAMPLE_IMAGES
    }
    # An EC2 task without runtimePlatform runs on its instance's architecture. In EC2 type names
    # a `g` right after the generation digit means Graviton (g5g, c7g): none of the pools' types
    # may be one, so their tasks are x86_64.
    rec = recording(stack)
    types = [
        t.inputs["instanceType"]
        for t in rec.by_type("aws:ec2/launchTemplate:LaunchTemplate")
        if "instanceType" in t.inputs
    ]
    # several types: the group's mixed instances overrides, Managed Instances' allowed types
    for group in rec.by_type("aws:autoscaling/group:Group"):
        policy = group.inputs.get("mixedInstancesPolicy") or {}
        types += [o["instanceType"] for o in policy.get("launchTemplate", {}).get("overrides", [])]
    for provider in rec.by_type("aws:ecs/capacityProvider:CapacityProvider"):
        template = (provider.inputs.get("managedInstancesProvider") or {}).get(
            "instanceLaunchTemplate", {}
        )
        types += template.get("instanceRequirements", {}).get("allowedInstanceTypes", [])
    assert types
    for instance_type in types:
        family = instance_type.split(".")[0]
        assert not re.fullmatch(r"[a-z]+\d+[a-z]*g[a-z]*", family), family
    for kind, service in services_of(stack):
        if kind == "custom":
            continue  # the user's own image: CI does not build it
        d = deployed(stack, service)
        arch = (d.task_definition.inputs.get("runtimePlatform") or {}).get(
            "cpuArchitecture", "X86_64"
        )
        assert platforms[kind] == _DOCKER_PLATFORM[arch], f"{stack}/{service}"
        # The metrics sidecar runs in every task: its build covers each task's architecture.
        if any(c["name"] == "metrics" for c in d.containers):
            assert _DOCKER_PLATFORM[arch] in platforms["metrics"].split(","), f"{stack}/{service}"
