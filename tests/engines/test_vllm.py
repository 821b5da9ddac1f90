"""The vLLM engine (`components/engines/vllm.py`): launch → task environment → the image's
entrypoint → flags vLLM 0.33.0 accepts; and what every vLLM-served launch shares (the Neuron
image serves vLLM 0.11.0), checked on both.

The entrypoints run as subprocesses on exactly the environment the launches produce; the argv
they print is checked against the argparse definitions read from the pinned wheels
(`tools/engine_flags.py`). Without the wheels (no network and no bootstrap prefetch) these
tests error: they never skip.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import sys

import pytest

from ecs_inference.contracts import engine as engine_contract
from ecs_inference.contracts import flag_table
from ecs_inference.contracts import neuron as neuron_contract
from ecs_inference.contracts import vllm as vllm_contract
from ecs_inference.engines import neuron as neuron_engine
from ecs_inference.engines import vllm as vllm_engine
from ecs_inference.engines.base import EngineLaunchError
from ecs_inference.engines.neuron import NeuronLaunch
from ecs_inference.engines.vllm import VllmLaunch
from tests.engines.checks import device_mappings, inputs_of, launch_of
from tests.engines.test_neuron import NEURON_CASES, NEURON_ENTRYPOINT, NEURON_INPUTS
from tests.images.engine_images import (
    IMAGES,
    REPO,
    entrypoint_reads,
    printed_command,
    run_entrypoint,
    value_after,
)
from tools import engine_flags
from tools.sources import vllm as vllm_source

VLLM_ENTRYPOINT = IMAGES / "vllm" / "entrypoint.py"


VLLM_CASES = [
    VllmLaunch(
        inputs_of(
            "vllm",
            name="llama-3-8b",
            weightsUri="s3://models-bucket/llama-3-8b/",
            architecture="llama-3-8b",
            maxModelLen=8192,
        )
    ),
    VllmLaunch(
        inputs_of(
            "vllm",
            name="llama-3-70b",
            weightsUri="s3://models-bucket/meta/llama-3-70b",
            architecture="llama-3.1-70b",
            maxModelLen=32768,
            tensorParallelSize=8,
            gpuMemoryUtilization=0.92,
            maxConcurrentSequences=8,
            dtype="bf16",
            kvCacheDtype="fp8",
            idle=900,
            region="eu-west-1",
        ),
        keepalive_seconds=20,
    ),
    VllmLaunch(
        inputs_of(
            "vllm",
            name="qwen-awq",
            weightsUri="s3://models-bucket/qwen/awq/",
            architecture="qwen2.5-7b",
            tensorParallelSize=2,
            dtype="awq",
            extraArgs=["--enable-prefix-caching", "--max-num-batched-tokens", "8192"],
        ),
        port=9000,
    ),
    VllmLaunch(
        inputs_of(
            "vllm",
            name="mistral",
            weightsUri="s3://models-bucket/mistral/",
            architecture="mistral-7b",
            maxModelLen=16384,
            dtype="gptq",
            extraArgs=["--no-enable-prefix-caching", "--enforce-eager"],
        )
    ),
]


@pytest.mark.parametrize("launch", VLLM_CASES, ids=lambda c: c.served_model_name)
def test_vllm_command_uses_only_flags_vllm_0_33_accepts(launch, vllm_gpu_flags):
    argv = printed_command(VLLM_ENTRYPOINT, launch.container_environment())
    assert argv[:2] == ["vllm", "serve"]
    assert vllm_gpu_flags.problems(argv[2:]) == []
    # the values the task asked for are the values the engine gets
    assert value_after(argv, "--model") == launch.weights_uri.rstrip("/") + "/"
    assert value_after(argv, "--load-format") == "runai_streamer"
    assert value_after(argv, "--tensor-parallel-size") == str(launch.tensor_parallel_size)
    assert value_after(argv, "--max-model-len") == str(launch.context_length)
    utilization = launch.model.gpu_memory_utilization
    assert float(value_after(argv, "--gpu-memory-utilization")) == utilization
    assert value_after(argv, "--max-num-seqs") == str(launch.max_num_seqs)
    assert value_after(argv, "--dtype") == launch.dtype
    assert value_after(argv, "--kv-cache-dtype") == launch.model.kv_cache_dtype
    assert value_after(argv, "--sse-keep-alive-interval") == str(launch.keepalive_seconds)
    assert value_after(argv, "--port") == str(launch.port)
    assert ("--quantization" in argv) == (launch.quantization is not None)
    assert argv[len(argv) - len(launch.extra_args) :] == list(launch.extra_args)


def test_check_command_front_door_covers_both_engines():
    vllm_argv = printed_command(VLLM_ENTRYPOINT, VLLM_CASES[1].container_environment())
    neuron_argv = printed_command(NEURON_ENTRYPOINT, NEURON_CASES[1].container_environment())
    assert engine_flags.check_command(vllm_argv) == []
    assert engine_flags.check_command(neuron_argv) == []
    assert engine_flags.check_command(["tgi", "serve"]) != []


def test_flag_checker_rejects_what_the_engines_would_reject(vllm_gpu_flags, neuron_flags):
    own, forwarded = neuron_flags
    assert vllm_gpu_flags.problems(["--sse-keepalive", "5"]) == [
        "vllm serve: unknown flag --sse-keepalive"
    ]
    assert "not in" in vllm_gpu_flags.problems(["--dtype", "fp7"])[0]
    assert "not among" in vllm_gpu_flags.problems(["--kv-cache-dtype", "fp9"])[0]
    assert "not among" in vllm_gpu_flags.problems(["--load-format", "s3"])[0]
    assert "needs a value" in vllm_gpu_flags.problems(["--max-model-len"])[0]
    assert "takes no value" in vllm_gpu_flags.problems(["--enforce-eager=1"])[0]
    assert "positional" in vllm_gpu_flags.problems(["llama"])[0]
    # FlexibleArgumentParser accepts underscores; optimum-cli's plain argparse aliases are explicit
    assert vllm_gpu_flags.problems(["--max_model_len", "4096"]) == []
    # vLLM 0.11.0 (behind optimum-neuron 0.4.5) has no SSE keep-alive: why the proxy exists
    assert "--sse-keep-alive-interval" in vllm_gpu_flags
    assert own.problems(["--sse-keep-alive-interval", "15"], fallback=forwarded) == [
        "optimum-cli neuron serve: unknown flag --sse-keep-alive-interval"
    ]


def test_flag_reader_sees_the_parsers_real_size(vllm_gpu_flags, neuron_flags):
    own, forwarded = neuron_flags
    # dataclass-driven registration (FrontendArgs loop, **kwargs["field"]) was followed
    assert len(vllm_gpu_flags.flags) > 300
    assert len(forwarded.flags) > 150
    for option in ("--api-key", "--root-path", "--middleware", "--enable-log-requests"):
        assert option in vllm_gpu_flags
    assert set(own.flags) >= {
        "--model",
        "--batch-size",
        "--sequence-length",
        "--tensor-parallel-size",
        "--served-model-name",
        "--port",
    }


@pytest.mark.parametrize("name", [vllm_engine.FLAG_TABLE, neuron_engine.FLAG_TABLE])
def test_committed_vllm_and_neuron_tables_enforce_what_the_parsers_do(name):
    # tests/tools/test_sources.py re-extracts every table from its wheels and compares
    assert ("flags", name) in {(t.kind, t.stem) for t in vllm_source.TABLES}
    table = flag_table.load(name)
    # vLLM's parser normalises underscores, and Literal-typed values are enforced
    assert table.lookup("--max_model_len") is table.lookup("--max-model-len") is not None
    assert table.problems(["--kv-cache-dtype", "fp7"]) != []


def test_environment_names_are_exactly_what_the_entrypoints_read():
    vllm_reads = entrypoint_reads(VLLM_ENTRYPOINT, vllm_contract)
    neuron_reads = entrypoint_reads(NEURON_ENTRYPOINT, neuron_contract)
    adapter = {"name": "m-sql", "source": "s3://bkt/adapters/sql/", "baseModel": "s3://bkt/p/"}
    full_vllm = launch_of(
        "vllm",
        weightsUri="s3://bkt/p/",
        dtype="awq",
        extraArgs=["--seed", "1"],
        adapters=[{**adapter, "rank": 8}],
    )
    full_neuron = launch_of(
        "neuron",
        "inf2.xlarge",
        weightsUri="s3://bkt/p/",
        maxModelLen=1024,
        neuron={"batchSize": 1, "sequenceLength": 1024, "tpDegree": 2},
        extraArgs=["--seed", "1"],
    )
    for launch, reads in ((full_vllm, vllm_reads), (full_neuron, neuron_reads)):
        names = [item["name"] for item in launch.container_environment()]
        assert len(names) == len(set(names))
        assert {n for n in names if n.startswith("ENGINE_")} == reads
    # optional settings are omitted, never sent empty
    minimal = launch_of("vllm").container_environment()
    assert all(item["value"] != "" for item in minimal)
    lora = {
        vllm_contract.ENV_LORA_ADAPTERS,
        vllm_contract.ENV_MAX_LORAS,
        vllm_contract.ENV_MAX_LORA_RANK,
        vllm_contract.ENV_MAX_CPU_LORAS,
    }
    optional = {"ENGINE_QUANTIZATION", "ENGINE_EXTRA_ARGS", *lora}
    assert {i["name"] for i in minimal} >= vllm_reads - optional
    assert not {i["name"] for i in minimal} & lora  # LoRA off without adapters
    # every variable the two contracts name is one some consumer reads
    declared = {
        v
        for contract in (engine_contract, vllm_contract, neuron_contract)
        for k, v in vars(contract).items()
        if k.startswith("ENV_") and isinstance(v, str)
    }
    engine_read = {n for n in declared if not n.startswith("ENGINE_")}
    assert {n for n in declared if n.startswith("ENGINE_")} == vllm_reads | neuron_reads
    assert engine_read == {
        "HF_HUB_OFFLINE",
        "VLLM_HTTP_TIMEOUT_KEEP_ALIVE",
        "VLLM_NO_USAGE_STATS",
        "VLLM_API_KEY",
        "NEURON_RT_VISIBLE_CORES",
    }


@pytest.mark.parametrize(
    "release", [vllm_source.VLLM_GPU, vllm_source.VLLM_NEURON], ids=lambda r: r.version
)
def test_vllm_variables_exist_in_the_pinned_releases(release):
    known = vllm_source.vllm_env_vars(engine_flags.source_root(release))
    produced = {
        item["name"]
        for launch in (*VLLM_CASES, *NEURON_CASES)
        for item in launch.container_environment()
        if item["name"].startswith("VLLM_")
    }
    assert produced | {vllm_contract.ENV_API_KEY} <= known


def test_keepalives_fit_inside_the_alb_idle_timeout():
    for launch in (*VLLM_CASES, *NEURON_CASES):
        env = {i["name"]: i["value"] for i in launch.container_environment()}
        idle = launch.alb_idle_timeout_seconds
        assert 2 * int(env[engine_contract.ENV_SSE_KEEPALIVE_SECONDS]) <= idle
        assert int(env[vllm_contract.ENV_HTTP_KEEPALIVE]) > idle
        assert env[engine_contract.ENV_HF_HUB_OFFLINE] == "1"


@pytest.mark.parametrize(
    ("factory", "fragment"),
    [
        (lambda: VllmLaunch(inputs_of("vllm"), keepalive_seconds=40), "half the ALB"),
        (lambda: VllmLaunch(inputs_of("vllm"), port=80), "unprivileged"),
        (lambda: NeuronLaunch(NEURON_INPUTS, upstream_port=8000), "upstream"),
        (lambda: NeuronLaunch(NEURON_INPUTS, model_dir="models"), "absolute"),
    ],
)
def test_invalid_launch_settings_name_the_field(factory, fragment):
    # Construction checks what the launch decides; its keys are the schema's to check.
    with pytest.raises(EngineLaunchError, match=re.escape(fragment)):
        factory()


@pytest.mark.parametrize(
    ("script", "env", "message"),
    [
        (VLLM_ENTRYPOINT, [], "ENGINE_WEIGHTS_URI is required"),
        (
            VLLM_ENTRYPOINT,
            [
                {"name": "ENGINE_WEIGHTS_URI", "value": "s3://bkt/p/"},
                {"name": "ENGINE_SERVED_MODEL_NAME", "value": "m"},
                {"name": "ENGINE_MAX_MODEL_LEN", "value": "lots"},
            ],
            "ENGINE_MAX_MODEL_LEN must be a positive integer",
        ),
        (
            NEURON_ENTRYPOINT,
            [
                {"name": "ENGINE_SERVED_MODEL_NAME", "value": "m"},
                {"name": "ENGINE_ARTIFACT_URI", "value": "s3://bkt/p/"},
                {"name": "ENGINE_BATCH_SIZE", "value": "1"},
                {"name": "ENGINE_SEQUENCE_LENGTH", "value": "1"},
            ],
            "ENGINE_TP_DEGREE must be a positive integer",
        ),
    ],
)
def test_entrypoints_reject_a_bad_environment_in_one_line(script, env, message):
    proc = run_entrypoint(script, env, "--print-command")
    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("entrypoint: ")
    assert message in lines[0]


@pytest.mark.parametrize(
    ("image", "base", "version"),
    [
        ("vllm", f"FROM {vllm_engine.BASE_IMAGE}", vllm_engine.VERSION),
        (
            "neuron",
            "huggingface-vllm-inference-neuronx:"
            f"{neuron_engine.VLLM_VERSION}-optimum{neuron_engine.OPTIMUM_NEURON_VERSION}-",
            neuron_engine.OPTIMUM_NEURON_VERSION,
        ),
    ],
)
def test_dockerfile_pins_the_checked_engine_release(image, base, version):
    text = (REPO / "images" / image / "Dockerfile").read_text()
    assert base in text
    assert f'ai.ecs-inference.engine-version="{version}"' in text
    assert ":latest" not in text
    healthchecks = re.findall(r"^HEALTHCHECK\b.*$", text, flags=re.MULTILINE)
    assert healthchecks == ["HEALTHCHECK NONE"]
    users = re.findall(r"^USER\s+(\S+)", text, flags=re.MULTILINE)
    assert users and users[-1] not in ("root", "0")
    assert 'ENTRYPOINT ["python3", "/opt/ecs-inference/entrypoint.py"]' in text
    assert f"EXPOSE {engine_contract.DEFAULT_PORT}" in text


def test_pinned_releases_agree_between_contract_and_flag_tool():
    assert vllm_source.VLLM_GPU.version == vllm_engine.VERSION
    assert vllm_source.OPTIMUM_NEURON.version == neuron_engine.OPTIMUM_NEURON_VERSION
    assert vllm_source.VLLM_NEURON.version == neuron_engine.VLLM_VERSION
    metadata = (
        engine_flags.source_root(vllm_source.OPTIMUM_NEURON)
        / f"optimum_neuron-{neuron_engine.OPTIMUM_NEURON_VERSION}.dist-info"
        / "METADATA"
    ).read_text()
    assert f'Requires-Dist: vllm=={neuron_engine.VLLM_VERSION}; extra == "vllm"' in metadata


def test_missing_engine_wheel_fails_loudly(tmp_path, monkeypatch):
    # No index: what an offline machine without the bootstrap prefetch sees.
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(tmp_path))
    missing = engine_flags.EngineRelease("vllm", "0.0.1")
    with pytest.raises(engine_flags.EngineSourceUnavailableError, match=r"vllm==0\.0\.1"):
        engine_flags.source_root(missing, tmp_path / "cache")


@pytest.mark.parametrize(
    "release", [vllm_source.VLLM_GPU, vllm_source.VLLM_NEURON], ids=lambda r: r.version
)
def test_health_and_openai_paths_exist_in_both_engines(release):
    routes = vllm_source.vllm_http_routes(engine_flags.source_root(release))
    assert ("GET", engine_contract.HEALTH_PATH) in routes
    assert {("POST", "/v1/completions"), ("POST", "/v1/chat/completions")} <= routes
    assert ("GET", "/v1/models") in routes


def test_container_definition_parts_validate_against_the_ecs_api_shape():
    import botocore.session
    from botocore.validate import ParamValidator

    model = botocore.session.get_session().get_service_model("ecs")
    shape = model.operation_model("RegisterTaskDefinition").input_shape
    for launch in (*VLLM_CASES, *NEURON_CASES):
        container = {
            "name": "model",
            "image": "123456789012.dkr.ecr.us-east-1.amazonaws.com/m:1",
            "environment": launch.container_environment(),
            "portMappings": launch.port_mappings(),
            "command": launch.container_command(),
        }
        if isinstance(launch, NeuronLaunch):
            container["linuxParameters"] = {"devices": device_mappings(launch)}
        request = {"family": "f", "containerDefinitions": [container]}
        report = ParamValidator().validate(request, shape)
        assert not report.has_errors(), report.generate_report()
    permissions = model.shape_for("DeviceCgroupPermission").enum
    assert {"read", "write"} <= set(permissions)


def test_vllm_entrypoint_execs_exactly_the_printed_command(tmp_path):
    """Run mode: preflight, then exec `vllm` (a stand-in on PATH that echoes its argv)."""
    bin_dir, modules = tmp_path / "bin", tmp_path / "modules"
    bin_dir.mkdir()
    fake_vllm = bin_dir / "vllm"
    fake_vllm.write_text(f"#!{sys.executable}\nimport json, sys\nprint(json.dumps(sys.argv[1:]))\n")
    fake_vllm.chmod(0o755)
    env = VLLM_CASES[2].container_environment()
    printed = printed_command(VLLM_ENTRYPOINT, env)
    env = [*env, {"name": "PATH", "value": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}]

    if importlib.util.find_spec("runai_model_streamer") is None:  # true in the project venv
        missing = run_entrypoint(VLLM_ENTRYPOINT, env)
        assert missing.returncode == 2
        assert "runai_model_streamer is not installed" in missing.stderr

    (modules / "runai_model_streamer").mkdir(parents=True)
    (modules / "runai_model_streamer" / "__init__.py").write_text("")
    ran = run_entrypoint(VLLM_ENTRYPOINT, [*env, {"name": "PYTHONPATH", "value": str(modules)}])
    assert ran.returncode == 0, ran.stderr
    assert ["vllm", *json.loads(ran.stdout)] == printed


def test_list_fields_take_every_value_after_one_flag(vllm_gpu_flags):
    """vLLM registers a list-typed config field with `nargs="+"` (`collection_to_kwargs`), and
    its `--lora-modules` action keeps only the last occurrence's list: every adapter follows
    one flag. The extracted table must say so, or two adapters read as a stray positional."""
    argv = ["--lora-modules", "a=/home/vllm/adapters/0", "b=/home/vllm/adapters/1"]
    assert vllm_gpu_flags.problems(argv) == []
    committed = flag_table.load(vllm_engine.FLAG_TABLE)
    assert committed.problems(argv) == []
    single = ["--max-loras", "2", "3"]
    assert vllm_gpu_flags.problems(single) != []  # a scalar flag still takes one value
