"""Third-party environment contracts: the committed tables are what the pinned releases' sources
read, the contracts name the pinned releases, and a misspelt variable fails the preview."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from ecs_inference.contracts import env_table, litellm, neuron, sglang, vllm
from tools import engine_flags, env_tables
from tools.env_tables import LITELLM, TABLE_DIR, tables
from tools.preview import run_preview
from tools.recording import ACCOUNT_ID
from tools.rehearsal import rehearse


@pytest.fixture(scope="module")
def extracted() -> dict[str, dict[str, object]]:
    return tables()


def test_committed_tables_match_the_pinned_sources(extracted: dict[str, dict[str, object]]) -> None:
    committed = {p.stem: json.loads(p.read_text()) for p in TABLE_DIR.glob("*.json")}
    assert committed == extracted, "rerun `python -m tools.env_tables`"


def test_contracts_name_the_pinned_releases() -> None:
    assert f"vllm-{engine_flags.VLLM_GPU.version}" == vllm.ENVIRONMENT_TABLE
    assert f"vllm-{engine_flags.VLLM_NEURON.version}" == neuron.ENVIRONMENT_TABLE
    assert f"sglang-{env_tables.SGLANG.version}" == sglang.ENVIRONMENT_TABLE
    assert (
        f"litellm-{LITELLM.version}" == litellm.ENVIRONMENT_TABLE
        and LITELLM.version == litellm.VERSION
    )


def test_the_names_the_stacks_set_are_read() -> None:
    assert {"LITELLM_MASTER_KEY", "LITELLM_SALT_KEY", "PORT", "DATABASE_USERNAME"} <= (
        env_table.reads(litellm.ENVIRONMENT_TABLE)
    )
    for stem in (vllm.ENVIRONMENT_TABLE, neuron.ENVIRONMENT_TABLE):
        assert {vllm.ENV_HTTP_KEEPALIVE, vllm.ENV_NO_USAGE_STATS} <= env_table.reads(stem)
    assert env_table.table(litellm.ENVIRONMENT_TABLE)["database_url_requires"] == [
        "DATABASE_HOST",
        "DATABASE_USERNAME",
        "DATABASE_NAME",
    ]


def _with_environment(container: str, name: str, value: str) -> Any:
    result = run_preview("dev", policy_pack=None)
    resources = []
    for r in result.resources:
        if r.type == "aws:ecs/taskDefinition:TaskDefinition" and r.name == "inference-llama-task":
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
