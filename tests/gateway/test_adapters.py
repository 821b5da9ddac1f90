"""The gateway routes each LoRA adapter of a vLLM service under the adapter's name, to the same
service, asking the engine for the adapter (issue 35): in the plan, in the generated LiteLLM
config, and through the pinned LiteLLM's own router to a stand-in engine on loopback."""

from __future__ import annotations

import socket

import yaml

from ecs_inference.contracts.litellm import ENV_MASTER_KEY
from ecs_inference.gateway.decisions import adapter_targets, resolve_routes
from ecs_inference.gateway.litellm_config import (
    ServiceTarget,
    litellm_config,
    render_litellm_config,
)
from tests.stack_config import issues_of, mutate, plan_of, reference

STACK = "agents"
ADAPTERS = ("llama-3.1-8b-sql", "llama-3.1-8b-support")


def _entries(raw: dict) -> dict[str, dict]:
    plan = plan_of(raw, STACK)
    assert plan.gateway is not None
    return {e["model_name"]: e for e in yaml.safe_load(plan.gateway.config_yaml)["model_list"]}


def test_every_adapter_is_a_route_to_its_service_asking_for_the_adapter() -> None:
    entries = _entries(reference(STACK))
    base = entries["llama-3.1-8b"]
    for name in ADAPTERS:
        params = entries[name]["litellm_params"]
        assert params["model"] == f"hosted_vllm/{name}"
        assert params["api_base"] == base["litellm_params"]["api_base"]
        assert params["timeout"] == base["litellm_params"]["timeout"]
    ids = [e["model_info"]["id"] for e in entries.values()]
    assert len(ids) == len(set(ids))  # one LiteLLM deployment each
    assert base["model_info"]["id"] == "ecs-llama"


def test_explicit_routes_name_an_adapter_as_service_slash_adapter() -> None:
    raw = mutate(reference(STACK), "gateway.routes", {"sql": "llama/llama-3.1-8b-sql"})
    raw = mutate(raw, "workers.summarise.environment.WORKER_MODEL", "sql")
    entries = _entries(raw)
    assert entries["sql"]["litellm_params"]["model"] == "hosted_vllm/llama-3.1-8b-sql"
    assert "llama-3.1-8b-support" not in entries
    bad = mutate(raw, "gateway.routes", {"sql": "llama/llama-3.1-8b-nope"})
    (issue,) = [i for i in issues_of(bad, STACK) if i.path == "platform.gateway.routes.sql"]
    assert "llama/llama-3.1-8b-nope" in issue.message and "llama/llama-3.1-8b-sql" in issue.message


def test_an_adapter_named_like_another_service_is_refused() -> None:
    raw = reference(STACK)
    adapters = raw["models"]["llama"]["adapters"]
    raw = mutate(raw, "models.llama.adapters", [{**adapters[0], "name": "qwen"}, adapters[1]])
    (issue,) = [i for i in issues_of(raw, STACK) if i.path == "platform.gateway.routes"]
    assert "llama/qwen, qwen all serve the model name 'qwen'" in issue.message


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_a_request_for_an_adapter_reaches_the_engine_as_that_model() -> None:
    from tests.litellm.venv import run_probe

    port = _free_port()
    base = ServiceTarget("llama", "llama-3.1-8b", "127.0.0.1", port, 30)
    targets = {"llama": base} | adapter_targets({"llama": base}, {"llama": ADAPTERS})
    routes, issues = resolve_routes(targets)
    assert issues == []
    asked = ["llama-3.1-8b", *ADAPTERS]
    (report,) = run_probe(
        [
            {
                "yaml": render_litellm_config(litellm_config(routes)),
                "env": {ENV_MASTER_KEY: "sk-test"},
                "requests": asked,
                "standin_port": port,
            }
        ]
    )
    assert "error" not in report, report.get("error")
    answered = {a["name"]: a["received"] for a in report["answered"]}
    for name in asked:
        assert answered[name] == {"path": "/v1/chat/completions", "model": name}
