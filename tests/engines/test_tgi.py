"""The TGI engine (`components/engines/tgi.py`): plan values → task environment → entrypoint
argv → the flags `text-generation-launcher` defines (the committed table read from the pinned
tag's `launcher/src/main.rs`), its fixed keep-alive against the idle timeout, and its sizing.
"""

from __future__ import annotations

import json
import os
import sys

import pytest

from ecs_inference.contracts import flag_table
from ecs_inference.contracts import sglang as sglang_contract
from ecs_inference.contracts import tgi as tgi_contract
from ecs_inference.engines.base import PresetError, engine_fit
from ecs_inference.engines.tgi import TgiLaunch
from tests.engines.checks import fails_at
from tests.images.engine_images import (
    IMAGES,
    REPO,
    printed_command,
    run_entrypoint,
    value_after,
)
from tests.sizing.needs import memory_need
from tools.sources import tgi as tgi_source

TGI_ENTRYPOINT = IMAGES / "tgi" / "entrypoint.py"


WHERE = "platform.models.chat"


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
    rows = {tuple(r["options"]): r for r in tgi_source.tgi_launcher_flags(TGI_SOURCE)}
    assert rows[("--model-id",)]["takes_value"] and rows[("--model-id",)]["env"] == "MODEL_ID"
    assert rows[("--mode",)]["choices"] == ["fast", "very-slow", "x_y"]
    assert rows[("--flag-switch",)]["takes_value"] is False
    assert rows[("--maybe",)]["choices"] == ["true", "false"]
    assert rows[("--port", "-p")]["takes_value"]
    assert rows[("--renamed-thing",)]["env"] == "OTHER_VAR"
    assert not any("--not-a-flag" in options for options in rows)
    with pytest.raises(LookupError, match="struct Args"):
        tgi_source.tgi_launcher_flags("fn main() {}")


def test_tgi_keepalive_is_fixed_so_the_idle_timeout_must_hold_two():
    with pytest.raises(
        PresetError,
        match=r"^platform\.models\.chat\.engine: TGI sends SSE keep-alives every 15 s",
    ):
        TgiLaunch(WHERE, "m", "s3://bkt/m/", 4096, alb_idle_timeout_seconds=29)
    TgiLaunch(WHERE, "m", "s3://bkt/m/", 4096, alb_idle_timeout_seconds=30)


@pytest.mark.parametrize(
    ("factory", "path", "fragment"),
    [
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
    fails_at(factory, path, fragment)


def test_a_tgi_model_that_does_not_fit_names_its_service_and_the_numbers():

    need = memory_need(
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
