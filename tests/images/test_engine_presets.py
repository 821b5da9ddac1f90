"""SGLang, TGI and custom presets: plan values → task environment → entrypoint argv → real flags.

The entrypoints run as subprocesses on exactly the environment `components/engine_presets.py`
produces; the argv they print is checked against the committed flag tables and, for SGLang,
against the flags read afresh from the pinned wheel (`tools/engine_tables.py`), so the table, the
presets and the engine cannot drift apart. Without the SGLang wheel (no network, no bootstrap
prefetch) the wheel tests error: they never skip.
"""

from __future__ import annotations

import json
import os
import re
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ecs_inference.contracts import custom as custom_contract
from ecs_inference.contracts import flag_table
from ecs_inference.contracts import sglang as sglang_contract
from ecs_inference.contracts import tgi as tgi_contract
from ecs_inference.engines import Launch
from ecs_inference.engines import neuron as neuron_engine
from ecs_inference.engines import vllm as vllm_engine
from ecs_inference.engines.base import PresetError, engine_fit
from ecs_inference.engines.custom import CustomLaunch
from ecs_inference.engines.sglang import SglangLaunch
from ecs_inference.engines.tgi import TgiLaunch
from tests.images.engine_images import (
    IMAGES,
    REPO,
    printed_command,
    run_entrypoint,
    value_after,
)
from tools import engine_flags, engine_tables

SGLANG_ENTRYPOINT = IMAGES / "sglang" / "entrypoint.py"
TGI_ENTRYPOINT = IMAGES / "tgi" / "entrypoint.py"
WHERE = "platform.models.chat"


@pytest.fixture(scope="module")
def sglang_wheel_flags() -> engine_flags.FlagSet:
    return engine_tables.sglang_serve_flags(engine_flags.source_root(engine_flags.SGLANG))


SGLANG_CASES = [
    SglangLaunch(WHERE, "qwen-7b", "s3://models-bucket/qwen-7b/", context_length=8192),
    SglangLaunch(
        "platform.models.big",
        "llama-70b",
        "s3://models-bucket/meta/llama-70b",
        context_length=32768,
        tensor_parallel_size=8,
        gpu_memory_utilization=0.92,
        overhead_fraction=0.1,
        max_running_requests=64,
        dtype="bfloat16",
        kv_cache_dtype="fp8_e5m2",
        quantization="fp8",
        keepalive_seconds=20,
        alb_idle_timeout_seconds=900,
        port=9000,
        extra_args=("--enable-metrics", "--chunked-prefill-size", "4096"),
    ),
    SglangLaunch(
        "platform.models.efs",
        "mistral-efs",
        "/mnt/efs/weights/mistral-7b",
        context_length=4096,
        tensor_parallel_size=2,
        extra_args=("--cuda-graph-backend-decode=disabled", "--log-requests"),
    ),
]

TGI_CASES = [
    TgiLaunch(WHERE, "llama-8b", "s3://models-bucket/llama-8b/", max_total_tokens=8192),
    TgiLaunch.from_plan(
        "platform.models.tgi",
        "mixtral",
        "s3://models-bucket/mixtral/",
        context_length=16384,
        tensor_parallel_size=4,
        gpu_memory_utilization=0.93,
        max_concurrent_sequences=48,
        dtype="awq",
        kv_cache_dtype="fp8",
        alb_idle_timeout_seconds=600,
        max_input_tokens=12000,
        extra_args=["--max-batch-prefill-tokens", "16384", "--disable-grammar-support"],
    ),
    TgiLaunch.from_plan(
        "platform.models.tgiefs",
        "gemma",
        "/mnt/efs/gemma-9b",
        context_length=4096,
        tensor_parallel_size=1,
        gpu_memory_utilization=0.9,
        max_concurrent_sequences=8,
        dtype="bf16",
        kv_cache_dtype="auto",
        alb_idle_timeout_seconds=60,
    ),
]


# --- SGLang ------------------------------------------------------------------------------------


@pytest.mark.parametrize("launch", SGLANG_CASES, ids=lambda launch: launch.served_model_name)
def test_sglang_command_uses_only_flags_sglang_accepts(launch, sglang_wheel_flags):
    argv = printed_command(SGLANG_ENTRYPOINT, launch.container_environment())
    assert argv[:3] == list(sglang_contract.COMMAND)
    flags = argv[3:]
    assert sglang_wheel_flags.problems(flags) == []
    assert flag_table.load(sglang_contract.FLAG_TABLE).problems(flags) == []
    assert value_after(argv, "--tp-size") == str(launch.tensor_parallel_size)
    assert value_after(argv, "--context-length") == str(launch.context_length)
    assert value_after(argv, "--served-model-name") == launch.served_model_name
    assert value_after(argv, "--max-running-requests") == str(launch.max_running_requests)
    fraction = float(value_after(argv, "--mem-fraction-static"))
    assert fraction == launch.mem_fraction_static
    assert fraction * (1 + launch.overhead_fraction) <= launch.gpu_memory_utilization
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


def test_committed_sglang_table_is_what_the_wheel_defines():
    committed = json.loads(
        (REPO / "contracts" / "flags" / f"{sglang_contract.FLAG_TABLE}.json").read_text()
    )
    assert committed == engine_tables.sglang_table()
    assert committed["version"] == sglang_contract.SGLANG_VERSION == engine_flags.SGLANG.version


@pytest.mark.parametrize(
    ("name", "extract"),
    [
        (vllm_engine.FLAG_TABLE, engine_tables.vllm_table),
        (neuron_engine.FLAG_TABLE, engine_tables.neuron_table),
    ],
)
def test_committed_vllm_and_neuron_tables_are_what_the_wheels_define(name, extract):
    committed = json.loads((REPO / "contracts" / "flags" / f"{name}.json").read_text())
    assert committed == extract()
    table = flag_table.load(name)
    # vLLM's parser normalises underscores, and Literal-typed values are enforced
    assert table.lookup("--max_model_len") is table.lookup("--max-model-len") is not None
    assert table.problems(["--kv-cache-dtype", "fp7"]) != []


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
    root = engine_flags.source_root(engine_flags.SGLANG)
    server = (root / "sglang/srt/entrypoints/http_server.py").read_text()
    assert f'@app.get("{sglang_contract.HEALTH_PATH}")' in server
    runai = (root / "sglang/srt/utils/runai_utils.py").read_text()
    assert '"s3://"' in runai
    environ = (root / "sglang/srt/environ.py").read_text()
    assert f"{sglang_contract.ENV_TIMEOUT_KEEP_ALIVE} = EnvInt(" in environ


def test_sglang_streams_have_no_keepalive_of_their_own_so_the_proxy_is_needed():
    root = engine_flags.source_root(engine_flags.SGLANG)
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
        WHERE,
        "m",
        "s3://bucket/m/",
        context_length=context,
        tensor_parallel_size=tp,
        gpu_memory_utilization=util,
        overhead_fraction=overhead,
        max_running_requests=seqs,
        keepalive_seconds=max(1, idle // 2),
        alb_idle_timeout_seconds=idle,
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


# --- TGI -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("launch", TGI_CASES, ids=lambda launch: launch.served_model_name)
def test_tgi_command_uses_only_flags_the_launcher_defines(launch):
    argv = printed_command(TGI_ENTRYPOINT, launch.container_environment())
    assert argv[0] == tgi_contract.COMMAND[0]
    assert flag_table.load(tgi_contract.FLAG_TABLE).problems(argv[1:]) == []
    assert value_after(argv, "--num-shard") == str(launch.num_shard)
    assert value_after(argv, "--max-total-tokens") == str(launch.max_total_tokens)
    assert int(value_after(argv, "--max-input-tokens")) < launch.max_total_tokens
    assert float(value_after(argv, "--cuda-memory-fraction")) == launch.cuda_memory_fraction
    assert value_after(argv, "--hostname") == "0.0.0.0"
    assert value_after(argv, "--port") == str(launch.port)
    assert value_after(argv, "--usage-stats") == "off"
    if launch.weights_uri.startswith("s3://"):
        assert value_after(argv, "--model-id") == f"/models/{launch.served_model_name}"
    else:
        assert value_after(argv, "--model-id") == launch.weights_uri
    assert argv[len(argv) - len(launch.extra_args) :] == list(launch.extra_args)


def test_tgi_table_records_its_source_tag_and_commit():
    table = json.loads(
        (REPO / "contracts" / "flags" / f"{tgi_contract.FLAG_TABLE}.json").read_text()
    )
    assert table["version"] == tgi_contract.TGI_VERSION
    assert f"v{tgi_contract.TGI_VERSION}" in table["source"]
    assert tgi_contract.TGI_TAG_COMMIT in table["source"]
    assert "launcher/src/main.rs" in table["source"]
    # every managed flag the contract names exists in the launcher (a rename would show here)
    loaded = flag_table.load(tgi_contract.FLAG_TABLE)
    assert all(loaded.lookup(f) is not None for f in tgi_contract.MANAGED_FLAGS)
    assert all(
        flag_table.load(sglang_contract.FLAG_TABLE).lookup(f) is not None
        for f in sglang_contract.MANAGED_FLAGS
    )


def test_task_environment_cannot_be_read_as_a_tgi_launcher_flag():
    """The launcher reads every flag from an upper-case variable (`PORT`, `MODEL_ID`)."""
    table = json.loads(
        (REPO / "contracts" / "flags" / f"{tgi_contract.FLAG_TABLE}.json").read_text()
    )
    launcher_vars = {row["env"] for row in table["flags"] if row["env"]}
    assert {"MODEL_ID", "PORT", "HOSTNAME", "API_KEY"} <= launcher_vars
    for launch in TGI_CASES:
        names = {e["name"] for e in launch.container_environment()}
        assert not names & launcher_vars
    # the API key is the one launcher variable the task sets on purpose, from `secrets`
    assert tgi_contract.ENV_API_KEY in launcher_vars


TGI_SOURCE = """
#[derive(Clone, Copy, Debug, ValueEnum)]
enum Mode {
    Fast,
    VerySlow,
    #[clap(name = "x_y")]
    XY,
}

#[derive(Parser, Debug)]
struct Args {
    /// docs
    #[clap(default_value = "m", long, env)]
    model_id: String,
    #[clap(long, env, value_enum)]
    mode: Option<Mode>,
    // commented_out: u32,
    #[clap(long, env)]
    flag_switch: bool,
    #[clap(long, env)]
    maybe: Option<bool>,
    #[clap(default_value = "3000", long, short, env)]
    port: u16,
    #[clap(long = "renamed-thing", env = "OTHER_VAR")]
    thing: Vec<String>,
    not_a_flag: usize,
}
"""


def test_tgi_reader_follows_clap_derive_rules():
    rows = {tuple(r["options"]): r for r in engine_tables.tgi_launcher_flags(TGI_SOURCE)}
    assert rows[("--model-id",)]["takes_value"] and rows[("--model-id",)]["env"] == "MODEL_ID"
    assert rows[("--mode",)]["choices"] == ["fast", "very-slow", "x_y"]
    assert rows[("--flag-switch",)]["takes_value"] is False
    assert rows[("--maybe",)]["choices"] == ["true", "false"]
    assert rows[("--port", "-p")]["takes_value"]
    assert rows[("--renamed-thing",)]["env"] == "OTHER_VAR"
    assert not any("--not-a-flag" in options for options in rows)
    with pytest.raises(LookupError, match="struct Args"):
        engine_tables.tgi_launcher_flags("fn main() {}")


def test_tgi_keepalive_is_fixed_so_the_idle_timeout_must_hold_two():
    with pytest.raises(
        PresetError,
        match=r"^platform\.models\.chat\.engine: TGI sends SSE keep-alives every 15 s",
    ):
        TgiLaunch(WHERE, "m", "s3://bkt/m/", 4096, alb_idle_timeout_seconds=29)
    TgiLaunch(WHERE, "m", "s3://bkt/m/", 4096, alb_idle_timeout_seconds=30)


# --- what a bad config gets ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("factory", "path", "fragment"),
    [
        (
            lambda: SglangLaunch(
                WHERE, "m", "s3://bkt/m/", 4096, extra_args=("--no-such-flag", "1")
            ),
            "platform.models.chat.extraArgs",
            "sglang 0.5.23 has no flag --no-such-flag",
        ),
        (
            lambda: SglangLaunch(
                WHERE, "m", "s3://bkt/m/", 4096, extra_args=("--tensor-parallel-size", "2")
            ),
            "platform.models.chat.extraArgs",
            "set by the platform",
        ),
        (
            lambda: SglangLaunch(
                WHERE, "m", "s3://bkt/m/", 4096, extra_args=("--load-format", "tensorizer")
            ),
            "platform.models.chat.extraArgs",
            "set by the platform",
        ),
        (
            lambda: SglangLaunch(
                WHERE, "m", "s3://bkt/m/", 4096, extra_args=("--cuda-graph-backend-decode", "x")
            ),
            "platform.models.chat.extraArgs",
            "not one of",
        ),
        (
            lambda: SglangLaunch(
                WHERE, "m", "s3://bkt/m/", 4096, extra_args=("--enable-metrics=yes",)
            ),
            "platform.models.chat.extraArgs",
            "switch and takes no value",
        ),
        (
            lambda: SglangLaunch(WHERE, "m", "s3://bkt/m/", 4096, extra_args=("fast",)),
            "platform.models.chat.extraArgs",
            "must start with a --flag",
        ),
        (
            lambda: SglangLaunch(WHERE, "m", "s3://bkt/m/", 4096, tensor_parallel_size=3),
            "platform.models.chat.tensorParallelSize",
            "power of two",
        ),
        (
            lambda: SglangLaunch(WHERE, "m", "s3://bkt/m/", 4096, kv_cache_dtype="int3"),
            "platform.models.chat.kvCacheDtype",
            "not an SGLang --kv-cache-dtype value",
        ),
        (
            lambda: SglangLaunch(WHERE, "m", "efs://fs/models", 4096),
            "platform.models.chat.weightsUri",
            "s3://bucket/prefix/ or efs://",
        ),
        (
            lambda: TgiLaunch(
                WHERE, "m", "s3://bkt/m/", 4096, extra_args=("--served-model-name", "x")
            ),
            "platform.models.chat.extraArgs",
            "text-generation-inference 3.3.7 has no flag --served-model-name",
        ),
        (
            lambda: TgiLaunch(WHERE, "m", "s3://bkt/m/", 4096, extra_args=("-p", "80")),
            "platform.models.chat.extraArgs",
            "must start with a --flag",
        ),
        (
            lambda: TgiLaunch(WHERE, "m", "s3://bkt/m/", 4096, max_input_tokens=4096),
            "platform.models.chat.maxInputTokens",
            "must be below maxModelLen 4096",
        ),
        (
            lambda: TgiLaunch(WHERE, "m", "s3://bkt/m/", 4096, num_shard=2, quantize="exl2"),
            "platform.models.chat.quantization",
            "cannot shard exl2",
        ),
        (
            lambda: TgiLaunch.from_plan(
                WHERE,
                "m",
                "s3://bkt/m/",
                context_length=4096,
                tensor_parallel_size=1,
                gpu_memory_utilization=0.9,
                max_concurrent_sequences=4,
                dtype="int4",
                kv_cache_dtype="auto",
                alb_idle_timeout_seconds=60,
            ),
            "platform.models.chat.dtype",
            "no TGI equivalent",
        ),
        (
            lambda: TgiLaunch(WHERE, "org/model", "s3://bkt/m/", 4096),
            "platform.models.chat.servedModelName",
            "one path component",
        ),
    ],
)
def test_bad_settings_fail_with_the_config_path(factory, path, fragment):
    with pytest.raises(PresetError) as caught:
        factory()
    message = str(caught.value)
    assert message.startswith(path + ":"), message
    assert fragment in message
    assert "\n" not in message


def test_valid_extra_args_reach_the_engine_unchanged():
    table = flag_table.load(sglang_contract.FLAG_TABLE)
    negatable = sorted(o for o, f in table.flags.items() if f.negatable and o.startswith("--"))
    assert negatable, "SGLang 0.5.23 has BooleanOptionalAction flags"
    extra = ("--lora-paths", "a=/p/a", "b=/p/b", "--enable-lora", "--no-" + negatable[0][2:])
    launch = SglangLaunch(WHERE, "m", "s3://bkt/m/", 4096, extra_args=extra)
    env = {e["name"]: e["value"] for e in launch.container_environment()}
    assert json.loads(env[sglang_contract.ENV_EXTRA_ARGS]) == list(extra)


def test_a_tgi_model_that_does_not_fit_names_its_service_and_the_numbers():
    from ecs_inference import sizing

    need = sizing.gpu_memory_need(
        "llama-3.1-70b", dtype="bf16", max_model_len=8192, max_concurrent_sequences=16
    )
    with pytest.raises(PresetError) as caught:
        engine_fit(WHERE, "tgi", need, "g6e.xlarge", 0.9)
    message = str(caught.value)
    assert message.startswith(f"{WHERE}: the tgi model does not fit: ")
    assert "GiB" in message and "g6e.xlarge" in message
    fit = engine_fit(WHERE, "tgi", need, "g6e.48xlarge", 0.9)
    launch = TgiLaunch.from_plan(
        WHERE,
        "llama-70b",
        "s3://bkt/llama-70b/",
        context_length=8192,
        tensor_parallel_size=fit.tp_size,
        gpu_memory_utilization=0.9,
        max_concurrent_sequences=16,
        dtype="bf16",
        kv_cache_dtype="auto",
        alb_idle_timeout_seconds=300,
    )
    assert launch.gpus == fit.tp_size >= 4


# --- custom --------------------------------------------------------------------------------------

IMAGE = "123456789012.dkr.ecr.us-east-1.amazonaws.com/triton:24.10"
SECRET = "arn:aws:secretsmanager:us-east-1:123456789012:secret:triton-key-AbCdEf"


def test_custom_launch_sets_the_platform_contract():
    launch = CustomLaunch(
        "platform.models.triton",
        IMAGE,
        "reranker-xl",
        command=("tritonserver", "--model-repository=/mnt/efs/repo", "--http-port=8080"),
        port=8080,
        health_path="/v2/health/ready",
        gpus=2,
        accelerator_memory_gib=30,
        weights_uri="/mnt/efs/repo",
        environment={"LOG_VERBOSE": "1"},
        secrets={"TRITON_API_KEY": SECRET},
        sse_keepalive_seconds=10,
        alb_idle_timeout_seconds=120,
    )
    env = {e["name"]: e["value"] for e in launch.container_environment("us-east-1")}
    assert env[custom_contract.ENV_PORT] == "8080"
    assert env[custom_contract.ENV_WEIGHTS_URI] == "/mnt/efs/repo"
    assert env["LOG_VERBOSE"] == "1"
    assert env["AWS_REGION"] == "us-east-1"
    assert "TRITON_API_KEY" not in env
    assert launch.container_secrets() == [{"name": "TRITON_API_KEY", "valueFrom": SECRET}]
    assert launch.container_command() == list(launch.command)
    assert launch.health_path == "/v2/health/ready"
    assert launch.gpus == 2
    assert launch.accelerator_fit(24.0, 4, "g6.12xlarge") == 15.0
    with pytest.raises(PresetError, match=r"^platform\.models\.triton\.acceleratorMemoryGiB"):
        launch.accelerator_fit(16.0, 4, "small")
    with pytest.raises(PresetError, match=r"^platform\.models\.triton\.gpus: 2 exceeds"):
        launch.accelerator_fit(80.0, 1, "one-gpu")


def test_custom_neuron_service_maps_devices_and_cores():
    launch = CustomLaunch(WHERE, IMAGE, "m", neuron_devices=3, alb_idle_timeout_seconds=300)
    env = {e["name"]: e["value"] for e in launch.container_environment()}
    assert env[custom_contract.ENV_NEURON_VISIBLE_CORES] == "0-5"
    assert [d["hostPath"] for d in launch.device_mappings()] == [
        "/dev/neuron0",
        "/dev/neuron1",
        "/dev/neuron2",
    ]
    assert launch.gpus == 0


@pytest.mark.parametrize(
    ("kwargs", "path", "fragment"),
    [
        ({"image": "triton:latest"}, "image", "pinned"),
        ({"image": "triton"}, "image", "pinned"),
        ({"health_path": "health"}, "healthPath", "absolute path"),
        ({"health_path": "/h?x=1"}, "healthPath", "without query"),
        ({"port": 80}, "port", "unprivileged"),
        ({"gpus": 1, "neuron_devices": 1}, "gpus", "not both"),
        ({"accelerator_memory_gib": 10.0}, "acceleratorMemoryGiB", "only meaningful"),
        ({"environment": {"ENGINE_PORT": "1"}}, "environment.ENGINE_PORT", "reserved"),
        ({"environment": {"AWS_REGION": "x"}}, "environment.AWS_REGION", "reserved"),
        ({"environment": {"HF_TOKEN": "x"}}, "environment.HF_TOKEN", "credential"),
        ({"secrets": {"K": "plain"}}, "secrets.K", "Secrets Manager ARN"),
        (
            {"alb_idle_timeout_seconds": 60, "max_generation_seconds": 600},
            "sseKeepAliveSeconds",
            "longer than the ALB idle timeout",
        ),
        (
            {"sse_keepalive_seconds": 40, "alb_idle_timeout_seconds": 60},
            "sseKeepAliveSeconds",
            "at most half",
        ),
        ({"command": "serve --port 1"}, "command", "list of strings"),
    ],
)
def test_bad_custom_settings_fail_with_the_config_path(kwargs, path, fragment):
    base = {
        "where": WHERE,
        "image": IMAGE,
        "served_model_name": "m",
        "alb_idle_timeout_seconds": 300,
    }
    with pytest.raises(PresetError) as caught:
        CustomLaunch(**(base | kwargs))
    assert str(caught.value).startswith(f"{WHERE}.{path}:"), str(caught.value)
    assert fragment in str(caught.value)


# --- entrypoints ---------------------------------------------------------------------------------


def test_environment_names_are_exactly_what_the_entrypoints_read():
    """Each entrypoint imports its names from its contract (the image copies contracts/), and
    the task environment the presets write sets exactly those ENGINE_* names."""
    from tests.images.test_engines import _reads

    for script, contract, launches in (
        (SGLANG_ENTRYPOINT, sglang_contract, SGLANG_CASES),
        (TGI_ENTRYPOINT, tgi_contract, TGI_CASES),
    ):
        reads = _reads(script, contract)
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


def test_tgi_entrypoint_execs_the_printed_command_on_an_efs_directory(tmp_path):
    """Run mode on an EFS-style directory: check it, then exec a launcher stand-in."""
    model = tmp_path / "efs" / "gemma"
    model.mkdir(parents=True)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    launcher = bin_dir / "text-generation-launcher"
    launcher.write_text(f"#!{sys.executable}\nimport json, sys\nprint(json.dumps(sys.argv[1:]))\n")
    launcher.chmod(0o755)
    launch = TgiLaunch(WHERE, "gemma", str(model), 4096)
    env = [
        *launch.container_environment(),
        {"name": "PATH", "value": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"},
    ]
    empty = run_entrypoint(TGI_ENTRYPOINT, env)
    assert empty.returncode == 1 and "has no config.json" in empty.stderr
    (model / "config.json").write_text("{}")
    no_weights = run_entrypoint(TGI_ENTRYPOINT, env)
    assert no_weights.returncode == 1 and "no *.safetensors" in no_weights.stderr
    (model / "model.safetensors").write_bytes(b"\0" * 8)
    ran = run_entrypoint(TGI_ENTRYPOINT, env)
    assert ran.returncode == 0, ran.stderr
    execed = ["text-generation-launcher", *json.loads(ran.stdout)]
    assert execed == printed_command(TGI_ENTRYPOINT, env)


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
        CustomLaunch(
            WHERE, IMAGE, "m", gpus=1, secrets={"K": SECRET}, alb_idle_timeout_seconds=300
        ),
        CustomLaunch(WHERE, IMAGE, "m", neuron_devices=2, alb_idle_timeout_seconds=300),
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
            container["secrets"] = launch.container_secrets()
            if launch.neuron_devices:
                container["linuxParameters"] = {"devices": launch.device_mappings()}
        validate_named_shape("ecs", "ContainerDefinition", container)


# --- Dockerfiles ----------------------------------------------------------------------------------


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
