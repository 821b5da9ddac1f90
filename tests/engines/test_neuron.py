"""The optimum-neuron engine (`components/engines/neuron.py`): launch → task environment → the
image's entrypoint → flags optimum-neuron 0.4.5 (and the vLLM 0.11.0 it forwards to) accept,
the devices and cores of the tp degree, and the artifact check on artifacts shaped like real
optimum-neuron exports. What it shares with vLLM is tested in test_vllm.py.
"""

from __future__ import annotations

import ast
import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

from ecs_inference.contracts import neuron as neuron_contract
from ecs_inference.engines import neuron as neuron_engine
from ecs_inference.engines.base import LaunchInputs
from ecs_inference.engines.neuron import NeuronLaunch
from tests.engines.checks import inputs_of, launch_of
from tests.images.engine_images import (
    IMAGES,
    printed_command,
    run_entrypoint,
    value_after,
)
from tools import engine_flags
from tools.sources import vllm as vllm_source

NEURON_ENTRYPOINT = IMAGES / "neuron" / "entrypoint.py"


def neuron_inputs(instance: str, batch: int, length: int, tp: int, **keys: Any) -> LaunchInputs:
    """The plan's inputs of a Neuron model compiled for `batch` x `length` at tp degree `tp`
    (its maxModelLen the compiled length) on `instance`."""
    compiled = {"batchSize": batch, "sequenceLength": length, "tpDegree": tp}
    return inputs_of("neuron", instance, maxModelLen=length, neuron=compiled, **keys)


NEURON_INPUTS = neuron_inputs("inf2.xlarge", 1, 1024, 2)
NEURON_CASES = [
    NeuronLaunch(
        neuron_inputs(
            "inf2.xlarge",
            4,
            4096,
            2,
            name="llama-3-8b-inf2",
            weightsUri="s3://models-bucket/neuron/llama-3-8b/",
            architecture="llama-3-8b",
        )
    ),
    NeuronLaunch(
        neuron_inputs(
            "inf2.48xlarge",
            8,
            8192,
            24,
            name="llama-3-70b-inf2",
            weightsUri="s3://models-bucket/neuron/llama-3-70b",
            architecture="llama-3-70b",
            idle=600,
            region="us-east-2",
        ),
        keepalive_seconds=30,
    ),
    NeuronLaunch(
        neuron_inputs(
            "trn1.2xlarge",
            1,
            2048,
            1,
            name="mistral-trn1",
            weightsUri="s3://models-bucket/neuron/mistral/",
            architecture="llama-3.2-3b",
            extraArgs=["--max-log-len", "200", "--disable-log-stats"],
        ),
        model_dir="/mnt/nvme/model",
        port=8080,
        upstream_port=18080,
    ),
]


@pytest.mark.parametrize("launch", NEURON_CASES, ids=lambda c: c.served_model_name)
def test_neuron_command_uses_only_flags_optimum_neuron_accepts(launch, neuron_flags):
    own, forwarded = neuron_flags
    argv = printed_command(NEURON_ENTRYPOINT, launch.container_environment())
    assert argv[:3] == ["optimum-cli", "neuron", "serve"]
    assert own.problems(argv[3:], fallback=forwarded) == []
    assert value_after(argv, "--model") == launch.model_dir
    compiled = launch.compiled
    assert value_after(argv, "--batch-size") == str(compiled.batch_size)
    assert value_after(argv, "--sequence-length") == str(compiled.sequence_length)
    assert value_after(argv, "--tensor-parallel-size") == str(compiled.tp_degree)
    # the engine listens on loopback behind the keep-alive proxy, which owns the service port
    assert value_after(argv, "--port") == str(launch.upstream_port) != str(launch.port)
    assert value_after(argv, "--host") == "127.0.0.1"
    # optimum-cli must never be allowed to compile a model that has no matching export
    assert "--allow-non-cached-model" not in argv and "--allow_non_cached_model" not in argv


def test_neuron_devices_and_cores_follow_tp_degree():
    launch = NeuronLaunch(neuron_inputs("inf2.24xlarge", 1, 2048, 6))
    assert launch.neuron_device_count == 3
    env = {i["name"]: i["value"] for i in launch.container_environment()}
    assert env[neuron_contract.ENV_NEURON_RT_VISIBLE_CORES] == "0-5"
    single = NeuronLaunch(neuron_inputs("inf2.xlarge", 1, 2048, 1, architecture="llama-3.2-1b"))
    assert {"name": "NEURON_RT_VISIBLE_CORES", "value": "0"} in single.container_environment()
    assert launch.port_mappings() == [{"containerPort": 8000, "protocol": "tcp", "name": "http"}]
    assert launch.container_command() == []
    assert launch_of("vllm", tensorParallelSize=4).gpus == 4


@pytest.fixture(scope="module")
def optimum_source() -> Path:
    return engine_flags.source_root(vllm_source.OPTIMUM_NEURON)


def _class_constant(path: Path, class_name: str | None, name: str) -> str:
    tree = ast.parse(path.read_text())
    body = tree.body
    if class_name is not None:
        body = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == class_name)
        body = body.body
    for node in body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == name:
            return node.value.value
    raise AssertionError(f"{name} not in {path}")


def test_artifact_layout_constants_match_optimum_neuron(optimum_source):
    spec = importlib.util.spec_from_file_location("neuron_entrypoint", NEURON_ENTRYPOINT)
    assert spec is not None and spec.loader is not None
    neuron_entrypoint = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(neuron_entrypoint)
    pkg = optimum_source / "optimum" / "neuron"
    assert (
        _class_constant(pkg / "configuration_utils.py", None, "NEURON_CONFIG_NAME")
        == neuron_entrypoint.NEURON_CONFIG_FILE
    )
    pretrained = pkg / "models" / "inference" / "backend" / "pretrained_model.py"
    assert (
        _class_constant(pretrained, "NxDPreTrainedModel", "COMPILED_MODEL_FILE_NAME")
        == neuron_entrypoint.COMPILED_MODEL_FILE
    )
    assert (
        _class_constant(pretrained, "NxDPreTrainedModel", "CHECKPOINT_DIR")
        == neuron_entrypoint.CHECKPOINT_DIR
    )
    version = _class_constant(pkg / "version.py", None, "__version__")
    assert version == neuron_engine.OPTIMUM_NEURON_VERSION


def _nxd_config_attributes(optimum_source: Path) -> list[str]:
    """Attributes `NxDNeuronConfig.__init__` sets: the keys its JSON serialisation holds."""
    path = optimum_source / "optimum/neuron/models/inference/backend/config.py"
    cls = next(
        n
        for n in ast.parse(path.read_text()).body
        if isinstance(n, ast.ClassDef) and n.name == "NxDNeuronConfig"
    )
    init = next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__")
    return [
        t.attr
        for node in ast.walk(init)
        if isinstance(node, ast.Assign)
        for t in node.targets
        if isinstance(t, ast.Attribute) and getattr(t.value, "id", "") == "self"
    ]


def make_artifact(root: Path, optimum_source: Path, **compiled: object) -> Path:
    """A directory laid out like `optimum-cli export neuron` output (graphs are dummies)."""
    attributes = _nxd_config_attributes(optimum_source)
    assert {"batch_size", "sequence_length", "tp_degree", "target"} <= set(attributes)
    config: dict[str, object] = dict.fromkeys(attributes)
    config |= {
        "checkpoint_id": "meta-llama/Llama-3.1-8B-Instruct",
        "batch_size": 4,
        "sequence_length": 4096,
        "tp_degree": 2,
        "torch_dtype": "bfloat16",
        "continuous_batching": True,
        "target": "trn1",  # what an export on inf2 records (INSTANCE_VALUE_MAP)
        "_serialized_key": "NxDNeuronConfig",
        "optimum_neuron_version": neuron_engine.OPTIMUM_NEURON_VERSION,
        "neuronxcc_version": "2.21.33363.0",
    }
    config |= compiled
    root.mkdir(parents=True, exist_ok=True)
    (root / "neuron_config.json").write_text(json.dumps(config, indent=2))
    (root / "config.json").write_text(json.dumps({"model_type": "llama"}))
    (root / "model.pt").write_bytes(b"\0")
    (root / "checkpoint").mkdir(exist_ok=True)
    (root / "checkpoint" / "tp0_sharded_checkpoint.safetensors").write_bytes(b"\0")
    return root


def neuron_env(length: int = 4096) -> list[dict[str, str]]:
    """The environment of a model compiled for 4 x `length` at tp degree 2, on inf2."""
    uri = "s3://models/llama-neuron/"
    inputs = neuron_inputs("inf2.xlarge", 4, length, 2, name="llama", weightsUri=uri)
    return NeuronLaunch(inputs).container_environment()


def test_matching_artifact_passes(tmp_path, optimum_source):
    artifact = make_artifact(tmp_path / "a", optimum_source)
    proc = run_entrypoint(NEURON_ENTRYPOINT, neuron_env(), "--check-artifact", str(artifact))
    assert proc.returncode == 0, proc.stderr
    assert "matches the configured compilation" in proc.stderr


@pytest.mark.parametrize(
    ("compiled", "configured", "expected"),
    [
        (
            {"batch_size": 8},
            {},
            "compiled for batch_size=8, sequence_length=4096, tp_degree=2 but the service is "
            "configured for batch_size=4, sequence_length=4096, tp_degree=2",
        ),
        ({}, {"length": 8192}, "configured for batch_size=4, sequence_length=8192"),
        ({"tp_degree": 8}, {}, "compiled for batch_size=4, sequence_length=4096, tp_degree=8"),
        ({"target": "trn2"}, {}, "compiled for target 'trn2'"),
        ({"_serialized_key": "TrainingNeuronConfig"}, {}, "serves NxDNeuronConfig"),
    ],
)
def test_mismatched_artifact_refuses_to_start(
    tmp_path, optimum_source, compiled, configured, expected
):
    artifact = make_artifact(tmp_path / "a", optimum_source, **compiled)
    proc = run_entrypoint(
        NEURON_ENTRYPOINT, neuron_env(**configured), "--check-artifact", str(artifact)
    )
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("entrypoint: artifact s3://models/")
    assert expected in lines[0]


def test_incomplete_artifacts_refuse_to_start(tmp_path, optimum_source):
    no_config = make_artifact(tmp_path / "a", optimum_source)
    (no_config / "neuron_config.json").unlink()
    no_graph = make_artifact(tmp_path / "b", optimum_source)
    (no_graph / "model.pt").unlink()
    no_weights = make_artifact(tmp_path / "c", optimum_source)
    (no_weights / "checkpoint" / "tp0_sharded_checkpoint.safetensors").unlink()
    (no_weights / "checkpoint").rmdir()
    for artifact, expected in (
        (no_config, "would be compiled on this instance"),
        (no_graph, "no compiled graph model.pt"),
        (no_weights, "downloaded from the hub ('meta-llama/Llama-3.1-8B-Instruct')"),
    ):
        proc = run_entrypoint(NEURON_ENTRYPOINT, neuron_env(), "--check-artifact", str(artifact))
        assert proc.returncode == 1, artifact
        assert expected in proc.stderr


def test_neuron_targets_follow_optimum_neuron_normalisation(optimum_source):
    path = optimum_source / "optimum/neuron/utils/instance.py"
    tree = ast.parse(path.read_text())
    mapping = next(
        ast.literal_eval(node.value)
        for node in tree.body
        if isinstance(node, ast.Assign)
        and getattr(node.targets[0], "id", "") == "INSTANCE_VALUE_MAP"
    )
    assert {family: mapping[family] for family in neuron_engine.TARGETS} == neuron_engine.TARGETS
    for instance in ("inf2.xlarge", "trn1.2xlarge"):
        launch = NeuronLaunch(neuron_inputs(instance, 1, 128, 2))
        env = {i["name"]: i["value"] for i in launch.container_environment()}
        assert env[neuron_contract.ENV_NEURON_TARGET] == mapping[instance.split(".")[0]]
