"""Third-party environment contracts: the contracts name the pinned releases (whose sources the
committed tables are re-extracted from by tests/tools/test_sources.py), each engine contract
claims its own names, and a misspelt variable fails the preview."""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ecs_inference.contracts import env_table, litellm, neuron, sglang, vllm
from tools.preview import run_preview
from tools.recording import ACCOUNT_ID
from tools.rehearsal import rehearse
from tools.sources import litellm as litellm_source
from tools.sources import sglang as sglang_source
from tools.sources import vllm as vllm_source


def test_contracts_name_the_pinned_releases() -> None:
    assert f"vllm-{vllm_source.VLLM_GPU.version}" == vllm.ENVIRONMENT_TABLE
    assert f"vllm-{vllm_source.VLLM_NEURON.version}" == neuron.ENVIRONMENT_TABLE
    assert f"sglang-{sglang_source.SGLANG.version}" == sglang.ENVIRONMENT_TABLE
    assert f"litellm-{litellm_source.LITELLM.version}" == litellm.ENVIRONMENT_TABLE


def test_the_names_the_stacks_set_are_read() -> None:
    assert {"LITELLM_MASTER_KEY", "LITELLM_SALT_KEY", "PORT", "DATABASE_USERNAME"} <= (
        env_table.reads(litellm.ENVIRONMENT_TABLE)
    )
    for stem in (vllm.ENVIRONMENT_TABLE, neuron.ENVIRONMENT_TABLE):
        assert {vllm.ENV_HTTP_KEEPALIVE, vllm.ENV_NO_USAGE_STATS} <= env_table.reads(stem)
    # Read through the releases' own helpers (`get_env_int`, `get_int_env_var`), not os.getenv.
    assert "DEFAULT_NUM_WORKERS_LITELLM_PROXY" in env_table.reads(litellm.ENVIRONMENT_TABLE)
    assert "SGLANG_TRACE_LEVEL" in env_table.reads(sglang.ENVIRONMENT_TABLE)
    assert env_table.table(litellm.ENVIRONMENT_TABLE)["database_url_requires"] == [
        "DATABASE_HOST",
        "DATABASE_USERNAME",
        "DATABASE_NAME",
    ]


def _with_environment(
    container: str, name: str, value: str, stack: str = "dev", task: str = "inference-llama-task"
) -> Any:
    result = run_preview(stack, policy_pack=None)
    resources = []
    for r in result.resources:
        if r.type == "aws:ecs/taskDefinition:TaskDefinition" and r.name == task:
            containers = json.loads(r.inputs["containerDefinitions"])
            for c in containers:
                if c["name"] == container:
                    c["environment"].append({"name": name, "value": value})
            r = dataclasses.replace(
                r, inputs={**r.inputs, "containerDefinitions": json.dumps(containers)}
            )
        resources.append(r)
    return rehearse(resources, "us-east-1", ACCOUNT_ID)


def test_a_misspelt_engine_variable_fails_the_preview() -> None:
    out = _with_environment("engine", "VLLM_HTTP_TIMEOUT_KEEPALIVE", "335")
    (finding,) = out.findings
    assert "container engine: vllm-0.33.0 reads no VLLM_HTTP_TIMEOUT_KEEPALIVE" in finding.message


def _sglang_findings(name: str) -> list[str]:
    """The rehearsal's findings on the engines stack's SGLang task given `name=1`."""
    out = _with_environment("engine", name, "1", "engines", "inference-qwen-task")
    return [f.message for f in out.findings]


SGLANG_TABLE = env_table.table(sglang.ENVIRONMENT_TABLE)


def test_sglang_reads_every_legacy_sgl_name_as_its_sglang_name() -> None:
    # SGLang's environ.py rewrites SGL_X to SGLANG_X at import: the table records the rule, not
    # a second copy of every name.
    assert SGLANG_TABLE["prefix_aliases"] == {"SGL_": "SGLANG_"}
    assert "SGL_ENABLE_JIT_DEEPGEMM" not in env_table.reads(sglang.ENVIRONMENT_TABLE)
    assert "SGLANG_ENABLE_JIT_DEEPGEMM" in env_table.reads(sglang.ENVIRONMENT_TABLE)
    assert (
        env_table.read_as(sglang.ENVIRONMENT_TABLE, "SGL_ENABLE_JIT_DEEPGEMM")
        == "SGLANG_ENABLE_JIT_DEEPGEMM"
    )
    assert _sglang_findings("SGL_ENABLE_JIT_DEEPGEMM") == []


def test_an_sgl_name_sglang_does_not_read_under_either_prefix_is_refused() -> None:
    assert env_table.read_as(sglang.ENVIRONMENT_TABLE, "SGL_NOT_A_VARIABLE") is None
    (message,) = _sglang_findings("SGL_NOT_A_VARIABLE")
    assert "sglang-0.5.23 reads no SGL_NOT_A_VARIABLE (a misspelt variable?)" in message


def test_a_deprecated_name_sglang_still_falls_back_to_passes() -> None:
    old = "SGLANG_OPT_SWA_RELEASE_LEAF_LOCK_AFTER_WINDOW"
    assert SGLANG_TABLE["deprecated"][old] == "SGLANG_OPT_RELEASE_PREFILL_SWA"
    assert old in env_table.reads(sglang.ENVIRONMENT_TABLE)
    assert _sglang_findings(old) == []


def test_a_deprecated_name_sglang_only_warns_about_is_refused_with_its_note() -> None:
    name = "SGLANG_ENABLE_CP_V2"
    assert env_table.read_as(sglang.ENVIRONMENT_TABLE, name) is None
    (message,) = _sglang_findings(name)
    assert (
        f"sglang-0.5.23 only warns that {name} is deprecated and ignores it: "
        "Strategy-based prefill context parallelism is now the only generic implementation."
    ) in message


def test_each_engine_contract_claims_its_own_names() -> None:
    claims = {o.contract: (o.table, o.prefixes, o.selected_by) for o in env_table.owners()}
    assert claims["vllm"] == (vllm.ENVIRONMENT_TABLE, ("VLLM_",), None)
    assert claims["neuron"] == (neuron.ENVIRONMENT_TABLE, ("VLLM_",), neuron.ENV_ARTIFACT_URI)
    assert claims["sglang"] == (sglang.ENVIRONMENT_TABLE, ("SGLANG_", "SGL_"), None)
    assert "litellm" not in claims  # the gateway's whole environment is judged, not a prefix


@pytest.mark.parametrize(
    ("name", "others", "stem"),
    [
        ("VLLM_NO_USAGE_STATS", (), vllm.ENVIRONMENT_TABLE),
        ("VLLM_NO_USAGE_STATS", (neuron.ENV_ARTIFACT_URI,), neuron.ENVIRONMENT_TABLE),
        ("SGL_ENABLE_JIT_DEEPGEMM", (), sglang.ENVIRONMENT_TABLE),
        ("SGLANG_TIMEOUT_KEEP_ALIVE", (neuron.ENV_ARTIFACT_URI,), sglang.ENVIRONMENT_TABLE),
        ("HF_TOKEN", (), None),
    ],
)
def test_the_claiming_contract_judges_a_name(name: str, others: tuple[str, ...], stem: str) -> None:
    assert env_table.judging_table(name, {name, *others}) == stem


def _package(tmp_path: Path, contracts: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run `owners()` of a copy of env_table.py in a top-level package `contracts` beside the
    given contract modules, as an image lays the package out."""
    package = tmp_path / "contracts"
    package.mkdir()
    (package / "__init__.py").write_text("")
    shutil.copy(env_table.__file__, package / "env_table.py")
    for name, text in contracts.items():
        (package / f"{name}.py").write_text(text)
    script = "from contracts import env_table; print(*env_table.owners(), sep='\\n')"
    return subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, check=False
    )


def test_claims_are_found_in_a_top_level_package(tmp_path: Path) -> None:
    done = _package(tmp_path, {"alpha": 'ENVIRONMENT_TABLE = "alpha-1"\nENV_PREFIXES = ("A_",)\n'})
    assert done.returncode == 0, done.stderr
    assert "Owner(contract='alpha', table='alpha-1', prefixes=('A_',)" in done.stdout


def test_two_unselected_claims_on_one_prefix_are_refused(tmp_path: Path) -> None:
    claim = 'ENVIRONMENT_TABLE = "{0}-1"\nENV_PREFIXES = ("{1}",)\n'
    done = _package(tmp_path, {"one": claim.format("one", "X_"), "two": claim.format("two", "X_Y")})
    assert done.returncode != 0
    assert "contracts one and two both claim 'X_'/'X_Y' names" in done.stderr
