"""The SGLang engine (`components/engines/sglang.py`): plan values → task environment →
entrypoint argv → real flags, checked against the committed flag table and, afresh, against the
flags read from the pinned wheel (`tools/sources/sglang.py`), so the table, the launch and the
engine cannot drift apart; and what its image shares with the TGI image. Without the SGLang wheel
(no network, no bootstrap prefetch) the wheel tests error: they never skip.
"""

from __future__ import annotations

import json
import re
from typing import Any, get_args

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ecs_inference.contracts import flag_table
from ecs_inference.contracts import sglang as sglang_contract
from ecs_inference.contracts import tgi as tgi_contract
from ecs_inference.engines import Launch
from ecs_inference.engines.base import LaunchInputs
from ecs_inference.engines.custom import CustomLaunch
from ecs_inference.engines.sglang import SglangLaunch
from ecs_inference.models.input import ModelConfig
from tests.engines.checks import device_mappings, fails_at, inputs_of
from tests.engines.test_custom import IMAGE, SECRET, custom_launch
from tests.engines.test_tgi import TGI_CASES, TGI_ENTRYPOINT
from tests.images.engine_images import (
    IMAGES,
    REPO,
    entrypoint_reads,
    printed_command,
    run_entrypoint,
    value_after,
)
from tools import engine_flags
from tools.sources import sglang as sglang_source

SGLANG_ENTRYPOINT = IMAGES / "sglang" / "entrypoint.py"


def sglang_inputs(gpus: int = 1, **keys: Any) -> LaunchInputs:
    """The plan's inputs of the SGLang service `chat` on `gpus` GPUs (`keys`: its camelCase
    keys and `inputs_of`'s)."""
    return inputs_of("sglang", gpus=gpus, **{"name": "chat", **keys})


SGLANG_CASES = [
    SglangLaunch(
        sglang_inputs(
            servedModelName="qwen-7b", weightsUri="s3://models-bucket/qwen-7b/", maxModelLen=8192
        )
    ),
    SglangLaunch(
        sglang_inputs(
            8,
            name="big",
            servedModelName="llama-70b",
            weightsUri="s3://models-bucket/meta/llama-70b",
            maxModelLen=32768,
            gpuMemoryUtilization=0.92,
            memoryOverheadFraction=0.1,
            maxConcurrentSequences=64,
            dtype="fp8",
            kvCacheDtype="fp8",
            idle=900,
            extraArgs=["--enable-metrics", "--chunked-prefill-size", "4096"],
        ),
        port=9000,
    ),
    SglangLaunch(
        sglang_inputs(
            2,
            name="efs",
            servedModelName="mistral-efs",
            weights="/mnt/efs/weights/mistral-7b",
            extraArgs=["--cuda-graph-backend-decode=disabled", "--log-requests"],
        )
    ),
]


@pytest.mark.parametrize("launch", SGLANG_CASES, ids=lambda launch: launch.served_model_name)
def test_sglang_command_uses_only_flags_sglang_accepts(launch, sglang_wheel_flags):
    argv = printed_command(SGLANG_ENTRYPOINT, launch.container_environment())
    assert argv[:3] == list(sglang_contract.COMMAND)
    flags = argv[3:]
    assert sglang_wheel_flags.problems(flags) == []
    assert flag_table.load(sglang_contract.FLAG_TABLE).problems(flags) == []
    assert value_after(argv, "--tp-size") == str(launch.tensor_parallel_size)
    model = launch.model
    assert value_after(argv, "--context-length") == str(launch.context_length)
    assert value_after(argv, "--served-model-name") == launch.served_model_name
    assert value_after(argv, "--max-running-requests") == str(model.max_concurrent_sequences)
    fraction = float(value_after(argv, "--mem-fraction-static"))
    assert fraction == launch.mem_fraction_static
    assert fraction * (1 + model.memory_overhead_fraction) <= model.gpu_memory_utilization
    # the engine is reachable only through the keep-alive proxy
    assert value_after(argv, "--host") == "127.0.0.1"
    assert value_after(argv, "--port") == str(launch.upstream_port)
    if launch.weights_uri.startswith("s3://"):
        assert value_after(argv, "--load-format") == "runai_streamer"
        assert value_after(argv, "--model-path") == launch.weights_uri.rstrip("/") + "/"
    else:
        assert value_after(argv, "--load-format") == "auto"
        assert value_after(argv, "--model-path") == launch.weights_uri
    assert argv[len(argv) - len(launch.extra_args) :] == list(launch.extra_args)


def test_check_command_front_door_covers_sglang_and_tgi():
    sglang_argv = printed_command(SGLANG_ENTRYPOINT, SGLANG_CASES[1].container_environment())
    assert engine_flags.check_command(sglang_argv) == []
    assert engine_flags.check_command([*sglang_argv, "--no-such"]) != []
    tgi_argv = printed_command(TGI_ENTRYPOINT, TGI_CASES[1].container_environment())
    assert engine_flags.check_command(tgi_argv) == []
    assert engine_flags.check_command([*tgi_argv, "--served-model-name", "x"]) != []


def test_the_sglang_tables_are_read_from_the_contracts_release():
    # tests/tools/test_sources.py re-extracts every table from its wheel and compares
    committed = json.loads(
        (REPO / "contracts" / "flags" / f"{sglang_contract.FLAG_TABLE}.json").read_text()
    )
    assert committed["version"] == sglang_contract.SGLANG_VERSION == sglang_source.SGLANG.version
    assert {(t.kind, t.stem) for t in sglang_source.TABLES} == {
        ("flags", sglang_contract.FLAG_TABLE),
        ("env", sglang_contract.ENVIRONMENT_TABLE),
    }


def test_sglang_reader_sees_the_parsers_real_size(sglang_wheel_flags):
    # ~540 distinct options in 0.5.23; a reader that lost the dataclass fields would see ~10.
    assert len(sglang_wheel_flags.flags) > 400
    wheel = sglang_wheel_flags
    assert wheel.lookup("--tensor-parallel-size") is wheel.lookup("--tp-size")
    assert wheel.lookup("--model") is wheel.lookup("--model-path")
    trust = wheel.lookup("--trust-remote-code")
    assert trust is not None and not trust.takes_value
    load_format = wheel.lookup("--load-format")
    assert load_format is not None and "runai_streamer" in (load_format.choices or ())
    deprecated = wheel.lookup("--disable-cuda-graph")  # DeprecatedStoreTrueAction, nargs=0
    assert deprecated is not None and not deprecated.takes_value
    lora = wheel.lookup("--lora-paths")  # custom action with nargs="*"
    assert lora is not None and lora.many


def test_sglang_health_route_and_runai_loader_exist_in_the_wheel():
    root = engine_flags.source_root(sglang_source.SGLANG)
    server = (root / "sglang/srt/entrypoints/http_server.py").read_text()
    assert f'@app.get("{sglang_contract.HEALTH_PATH}")' in server
    runai = (root / "sglang/srt/utils/runai_utils.py").read_text()
    assert '"s3://"' in runai
    environ = (root / "sglang/srt/environ.py").read_text()
    assert f"{sglang_contract.ENV_TIMEOUT_KEEP_ALIVE} = EnvInt(" in environ


def test_sglang_streams_have_no_keepalive_of_their_own_so_the_proxy_is_needed():
    root = engine_flags.source_root(sglang_source.SGLANG)
    entrypoints = "\n".join(
        p.read_text() for p in sorted((root / "sglang/srt/entrypoints").rglob("*.py"))
    )
    assert "text/event-stream" in entrypoints
    assert ": keep-alive" not in entrypoints and "keep_alive(" not in entrypoints


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    tp=st.sampled_from([1, 2, 4, 8]),
    context=st.integers(1, 1_048_576),
    util=st.floats(0.31, 0.98),
    overhead=st.floats(0.05, 0.5),
    seqs=st.integers(1, 4096),
    idle=st.integers(2, 4000),
)
def test_any_valid_sglang_plan_yields_flags_the_table_accepts(
    tp, context, util, overhead, seqs, idle
):
    launch = SglangLaunch(
        sglang_inputs(
            tp,
            maxModelLen=context,
            gpuMemoryUtilization=util,
            memoryOverheadFraction=overhead,
            maxConcurrentSequences=seqs,
            idle=idle,
        )
    )
    assert 0 < launch.mem_fraction_static < 1
    # the static pool never exceeds what the sizing reserved for weights + KV cache
    assert launch.mem_fraction_static * (1 + overhead) <= util + 1e-9
    env = {e["name"]: e["value"] for e in launch.container_environment()}
    argv = [
        "--tp-size",
        env[sglang_contract.ENV_TENSOR_PARALLEL_SIZE],
        "--context-length",
        env[sglang_contract.ENV_CONTEXT_LENGTH],
        "--mem-fraction-static",
        env[sglang_contract.ENV_MEM_FRACTION_STATIC],
        "--max-running-requests",
        env[sglang_contract.ENV_MAX_RUNNING_REQUESTS],
    ]
    assert flag_table.load(sglang_contract.FLAG_TABLE).problems(argv) == []


@pytest.mark.parametrize(
    ("factory", "path", "fragment"),
    [
        (
            lambda: SglangLaunch(sglang_inputs(extraArgs=["--no-such-flag", "1"])),
            "platform.models.chat.extraArgs",
            "sglang 0.5.23 has no flag --no-such-flag",
        ),
        (
            lambda: SglangLaunch(sglang_inputs(extraArgs=["--tensor-parallel-size", "2"])),
            "platform.models.chat.extraArgs",
            "set by the platform",
        ),
        (
            lambda: SglangLaunch(sglang_inputs(extraArgs=["--load-format", "tensorizer"])),
            "platform.models.chat.extraArgs",
            "set by the platform",
        ),
        (
            lambda: SglangLaunch(sglang_inputs(extraArgs=["--cuda-graph-backend-decode", "x"])),
            "platform.models.chat.extraArgs",
            "not one of",
        ),
        (
            lambda: SglangLaunch(sglang_inputs(extraArgs=["--enable-metrics=yes"])),
            "platform.models.chat.extraArgs",
            "switch and takes no value",
        ),
        (
            lambda: SglangLaunch(sglang_inputs(extraArgs=["fast"])),
            "platform.models.chat.extraArgs",
            "must start with a --flag",
        ),
    ],
)
def test_bad_settings_fail_with_the_config_path(factory, path, fragment):
    fails_at(factory, path, fragment)


@pytest.mark.parametrize("dtype", get_args(ModelConfig.model_fields["dtype"].annotation))
@pytest.mark.parametrize("kv", get_args(ModelConfig.model_fields["kv_cache_dtype"].annotation))
def test_every_config_dtype_is_an_sglang_value(dtype, kv):
    # the launch checks the values it maps the config's to against SGLang's choices
    launch = SglangLaunch(sglang_inputs(dtype=dtype, kvCacheDtype=kv))
    assert launch.kv_cache_dtype in ("auto", "bfloat16", "fp8_e4m3")


def test_valid_extra_args_reach_the_engine_unchanged():
    table = flag_table.load(sglang_contract.FLAG_TABLE)
    negatable = sorted(o for o, f in table.flags.items() if f.negatable and o.startswith("--"))
    assert negatable, "SGLang 0.5.23 has BooleanOptionalAction flags"
    extra = ("--lora-paths", "a=/p/a", "b=/p/b", "--enable-lora", "--no-" + negatable[0][2:])
    launch = SglangLaunch(sglang_inputs(extraArgs=list(extra)))
    env = {e["name"]: e["value"] for e in launch.container_environment()}
    assert json.loads(env[sglang_contract.ENV_EXTRA_ARGS]) == list(extra)


def test_environment_names_are_exactly_what_the_entrypoints_read():
    """Each entrypoint imports its names from its contract (the image copies contracts/), and
    the task environment the presets write sets exactly those ENGINE_* names."""

    for script, contract, launches in (
        (SGLANG_ENTRYPOINT, sglang_contract, SGLANG_CASES),
        (TGI_ENTRYPOINT, tgi_contract, TGI_CASES),
    ):
        reads = entrypoint_reads(script, contract)
        for launch in launches:
            names = [e["name"] for e in launch.container_environment()]
            assert len(names) == len(set(names))
            engine_names = {n for n in names if n.startswith("ENGINE_")}
            assert engine_names <= reads
        full = {
            n for launch in launches for n in (e["name"] for e in launch.container_environment())
        }
        # everything the entrypoint reads is written by some launch, except what only the
        # operator sets (the API key comes from `secrets`; the staging root has a default)
        optional = {"ENGINE_API_KEY", "ENGINE_MODEL_ROOT"}
        assert reads - optional <= full, reads - optional - full


@pytest.mark.parametrize(
    ("script", "env", "status", "message"),
    [
        (SGLANG_ENTRYPOINT, {"ENGINE_SERVED_MODEL_NAME": "m"}, 2, "ENGINE_WEIGHTS_URI is required"),
        (
            SGLANG_ENTRYPOINT,
            {
                "ENGINE_SERVED_MODEL_NAME": "m",
                "ENGINE_WEIGHTS_URI": "hf://org/model",
                "ENGINE_CONTEXT_LENGTH": "8",
            },
            2,
            "must be s3://bucket/prefix/ or an absolute EFS directory",
        ),
        (
            SGLANG_ENTRYPOINT,
            {
                "ENGINE_SERVED_MODEL_NAME": "m",
                "ENGINE_WEIGHTS_URI": "/nonexistent/efs/model",
                "ENGINE_CONTEXT_LENGTH": "8",
            },
            1,
            "the EFS volume is not mounted there",
        ),
        (
            TGI_ENTRYPOINT,
            {
                "ENGINE_SERVED_MODEL_NAME": "m",
                "ENGINE_WEIGHTS_URI": "s3://bkt/m/",
                "ENGINE_MAX_TOTAL_TOKENS": "10",
                "ENGINE_MAX_INPUT_TOKENS": "10",
            },
            2,
            "must be below ENGINE_MAX_TOTAL_TOKENS",
        ),
        (
            TGI_ENTRYPOINT,
            {
                "ENGINE_SERVED_MODEL_NAME": "m",
                "ENGINE_WEIGHTS_URI": "/nonexistent/efs/model",
                "ENGINE_MAX_TOTAL_TOKENS": "10",
            },
            1,
            "the EFS volume is not mounted there",
        ),
    ],
)
def test_entrypoints_reject_a_bad_environment_in_one_line(script, env, status, message):
    proc = run_entrypoint(script, [{"name": k, "value": v} for k, v in env.items()])
    assert proc.returncode == status, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("entrypoint: ") and message in lines[0]


def test_sglang_api_key_is_passed_but_never_printed():
    launch = SGLANG_CASES[0]
    env = [*launch.container_environment(), {"name": "ENGINE_API_KEY", "value": "s3cr3t"}]
    proc = run_entrypoint(SGLANG_ENTRYPOINT, env, "--print-command")
    assert proc.returncode == 0
    assert "s3cr3t" not in proc.stdout
    assert value_after(json.loads(proc.stdout), "--api-key") == "***"


def test_container_definition_parts_validate_against_the_ecs_api_shape():
    from tests.aws_shapes import validate_named_shape

    cases: list[Launch] = [
        *SGLANG_CASES,
        *TGI_CASES,
        custom_launch({"gpus": 1}, secrets={"K": SECRET}),
        custom_launch({"neuronDevices": 2}),
    ]
    for launch in cases:
        container: dict[str, object] = {
            "name": "model",
            "image": IMAGE,
            "environment": launch.container_environment("eu-west-1"),
            "portMappings": launch.port_mappings(),
            "command": launch.container_command(),
            "resourceRequirements": (
                [{"type": "GPU", "value": str(launch.gpus)}] if launch.gpus else []
            ),
        }
        if isinstance(launch, CustomLaunch):
            secrets = launch.inputs.model.secrets
            container["secrets"] = [{"name": k, "valueFrom": v} for k, v in sorted(secrets.items())]
            if launch.neuron_device_count:
                container["linuxParameters"] = {"devices": device_mappings(launch)}
        validate_named_shape("ecs", "ContainerDefinition", container)


@pytest.mark.parametrize(
    ("image", "contract", "version"),
    [
        ("sglang", sglang_contract, sglang_contract.SGLANG_VERSION),
        ("tgi", tgi_contract, tgi_contract.TGI_VERSION),
    ],
)
def test_dockerfile_pins_the_checked_engine_release(image, contract, version):
    text = (REPO / "images" / image / "Dockerfile").read_text()
    assert f"FROM {contract.BASE_IMAGE}\n" in text
    assert f'ai.ecs-inference.engine-version="{version}"' in text
    assert ":latest" not in text
    assert re.findall(r"^HEALTHCHECK\b.*$", text, flags=re.MULTILINE) == ["HEALTHCHECK NONE"]
    users = re.findall(r"^USER\s+(\S+)", text, flags=re.MULTILINE)
    assert users and users[-1] not in ("root", "0")
    assert f"EXPOSE {contract.DEFAULT_PORT}" in text
    assert "HF_HUB_OFFLINE=1" in text
