"""The TGI engine (`components/engines/tgi.py`): plan values → task environment → entrypoint
argv → the flags `text-generation-launcher` defines (the committed table read from the pinned
tag's `launcher/src/main.rs`), its fixed keep-alive against the idle timeout, and its sizing.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import pytest

from ecs_inference import sizing
from ecs_inference.contracts import flag_table
from ecs_inference.contracts import sglang as sglang_contract
from ecs_inference.contracts import tgi as tgi_contract
from ecs_inference.engines.base import LaunchInputs, PresetError
from ecs_inference.engines.tgi import TgiLaunch
from tests.engines.checks import fails_at, inputs_of
from tests.images.engine_images import (
    IMAGES,
    REPO,
    printed_command,
    run_entrypoint,
    value_after,
)
from tools.sources import tgi as tgi_source

TGI_ENTRYPOINT = IMAGES / "tgi" / "entrypoint.py"


WHERE = "platform.models.chat"


def tgi_inputs(gpus: int = 1, **keys: Any) -> LaunchInputs:
    """The plan's inputs of the TGI service `chat` on `gpus` GPUs (`keys`: its camelCase keys
    and `inputs_of`'s)."""
    return inputs_of("tgi", gpus=gpus, **{"name": "chat", **keys})


TGI_CASES = [
    TgiLaunch(
        tgi_inputs(
            servedModelName="llama-8b", weightsUri="s3://models-bucket/llama-8b/", maxModelLen=8192
        )
    ),
    TgiLaunch(
        tgi_inputs(
            4,
            name="tgi",
            servedModelName="mixtral",
            weightsUri="s3://models-bucket/mixtral/",
            maxModelLen=16384,
            gpuMemoryUtilization=0.93,
            maxConcurrentSequences=48,
            dtype="awq",
            kvCacheDtype="fp8",
            idle=600,
            maxInputTokens=12000,
            extraArgs=["--max-batch-prefill-tokens", "16384", "--disable-grammar-support"],
        )
    ),
    TgiLaunch(
        tgi_inputs(
            name="tgiefs",
            servedModelName="gemma",
            weights="/mnt/efs/gemma-9b",
            maxConcurrentSequences=8,
        )
    ),
]


@pytest.mark.parametrize("launch", TGI_CASES, ids=lambda launch: launch.served_model_name)
def test_tgi_command_uses_only_flags_the_launcher_defines(launch):
    argv = printed_command(TGI_ENTRYPOINT, launch.container_environment())
    assert argv[0] == tgi_contract.COMMAND[0]
    assert flag_table.load(tgi_contract.FLAG_TABLE).problems(argv[1:]) == []
    assert value_after(argv, "--num-shard") == str(launch.num_shard)
    assert value_after(argv, "--max-total-tokens") == str(launch.context_length)
    assert int(value_after(argv, "--max-input-tokens")) < launch.context_length
    utilization = launch.model.gpu_memory_utilization
    assert float(value_after(argv, "--cuda-memory-fraction")) == utilization
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
        TgiLaunch(tgi_inputs(idle=29))
    TgiLaunch(tgi_inputs(idle=30))


@pytest.mark.parametrize(
    ("factory", "path", "fragment"),
    [
        (
            lambda: TgiLaunch(tgi_inputs(extraArgs=["--served-model-name", "x"])),
            "platform.models.chat.extraArgs",
            "text-generation-inference 3.3.7 has no flag --served-model-name",
        ),
        (
            lambda: TgiLaunch(tgi_inputs(extraArgs=["-p", "80"])),
            "platform.models.chat.extraArgs",
            "must start with a --flag",
        ),
        (
            lambda: TgiLaunch(tgi_inputs(maxInputTokens=4096)),
            "platform.models.chat.maxInputTokens",
            "must be below maxModelLen 4096",
        ),
        (
            lambda: TgiLaunch(tgi_inputs(dtype="int4")),
            "platform.models.chat.dtype",
            "no TGI equivalent",
        ),
        (
            lambda: TgiLaunch(tgi_inputs(servedModelName="org/model")),
            "platform.models.chat.servedModelName",
            "one path component",
        ),
    ],
)
def test_bad_settings_fail_with_the_config_path(factory, path, fragment):
    fails_at(factory, path, fragment)


def test_a_tgi_model_shards_over_the_gpus_its_fit_chose():
    # that the plan names the service of a model that fits nowhere is test_engine_config's
    big = {"architecture": "llama-3.1-70b", "maxModelLen": 8192}
    with pytest.raises(sizing.SizingError, match=r"g6e\.xlarge"):
        inputs_of("tgi", "g6e.xlarge", **big)
    launch = TgiLaunch(inputs_of("tgi", "g6e.48xlarge", **big))
    assert launch.gpus == launch.num_shard >= 4


def test_tgi_entrypoint_execs_the_printed_command_on_an_efs_directory(tmp_path):
    """Run mode on an EFS-style directory: check it, then exec a launcher stand-in."""
    model = tmp_path / "efs" / "gemma"
    model.mkdir(parents=True)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    launcher = bin_dir / "text-generation-launcher"
    launcher.write_text(f"#!{sys.executable}\nimport json, sys\nprint(json.dumps(sys.argv[1:]))\n")
    launcher.chmod(0o755)
    launch = TgiLaunch(tgi_inputs(servedModelName="gemma", weights=str(model)))
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
