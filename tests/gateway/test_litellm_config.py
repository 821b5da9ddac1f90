"""The gateway's LiteLLM config: routes from the plan, Bedrock, secrets by reference, IAM scope.

The last tests load the generated YAML with the pinned LiteLLM's own parser (its venv is created
on demand, see tests/litellm/venv.py), with the network blocked.
"""

from __future__ import annotations

import json
import re

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ecs_inference.contracts.bedrock import PROFILE_GEOGRAPHIES
from ecs_inference.contracts.litellm import (
    ENV_CONFIG_YAML,
    ENV_DATABASE_USERNAME,
    ENV_MASTER_KEY,
    ENV_SALT_KEY,
    KEY_HEADER,
)
from ecs_inference.contracts.litellm import VERSION as LITELLM_VERSION
from ecs_inference.gateway.decisions import (
    GatewayPlacement,
    bedrock_routes,
    gateway_service,
    resolve_routes,
)
from ecs_inference.gateway.input import GatewayConfig
from ecs_inference.gateway.litellm_config import (
    BEDROCK_INVOKE_ACTIONS,
    BedrockRoute,
    ServiceTarget,
    bedrock_invoke_policy,
    bedrock_model_arns,
    container_environment,
    litellm_config,
    longest_request_seconds,
    render_litellm_config,
)
from tests.aws_shapes import validate_shape

MASTER_ARN = "arn:aws:secretsmanager:eu-west-1:111122223333:secret:gateway/master-AbCdEf"
DB_HOST = "gw.cluster-abc.eu-west-1.rds.amazonaws.com"
SALT_ARN = "arn:aws:secretsmanager:eu-west-1:111122223333:secret:gateway/salt-GhIjKl"


def target(service: str, served: str | None = None, port: int = 8000, timeout: int = 300):
    return ServiceTarget(
        service=service,
        served_model_name=served or service,
        host=f"{service}.inference.internal",
        port=port,
        timeout_seconds=timeout,
    )


SERVICES = {
    "llama": target("llama", "llama-3.1-8b", timeout=300),
    "mixtral": target("mixtral", "mixtral-8x7b", timeout=900),
    "neuron-llama": target("neuron-llama", "llama-3-8b-neuron", port=8080, timeout=600),
}


def spec_for(services=SERVICES, bedrock=None, region="eu-west-1", database=False) -> dict:
    """`litellm_config`'s arguments for `services` and `bedrock` (model name -> id)."""
    routes, issues = resolve_routes(services)
    assert not issues
    bed, issues = bedrock_routes(bedrock or {}, region, taken=[r.model_name for r in routes])
    assert not issues
    return {"routes": routes, "bedrock": bed, "database": database}


# --------------------------------------------------------------------------------------------
# routes
# --------------------------------------------------------------------------------------------


def test_every_model_service_is_a_hosted_vllm_route_at_its_private_address():
    config = litellm_config(**spec_for())
    by_name = {m["model_name"]: m["litellm_params"] for m in config["model_list"]}
    assert set(by_name) == {"llama-3.1-8b", "mixtral-8x7b", "llama-3-8b-neuron"}
    assert by_name["mixtral-8x7b"] == {
        "model": "hosted_vllm/mixtral-8x7b",
        "api_base": "http://mixtral.inference.internal:8000/v1",
        "api_key": "none",
        "timeout": 900,
        "stream_timeout": 900,
    }
    assert (
        by_name["llama-3-8b-neuron"]["api_base"] == "http://neuron-llama.inference.internal:8080/v1"
    )


def test_explicit_routes_alias_services_and_may_share_one():
    routes, issues = resolve_routes(SERVICES, {"chat": "llama", "chat-large": "mixtral"})
    assert not issues
    assert [(r.model_name, r.target.service) for r in routes] == [
        ("chat", "llama"),
        ("chat-large", "mixtral"),
    ]
    # The request's model name is the alias; the engine is still called with its served name.
    entry = litellm_config(routes)["model_list"][0]
    assert entry["model_name"] == "chat"
    assert entry["litellm_params"]["model"] == "hosted_vllm/llama-3.1-8b"


def test_route_to_a_model_that_does_not_exist_names_the_config_path():
    _, issues = resolve_routes(SERVICES, {"chat": "llama", "big": "llama-70b"})
    assert [i.path for i in issues] == ["platform.gateway.routes.big"]
    assert "'llama-70b', which does not exist" in issues[0].message
    assert "llama, mixtral, neuron-llama" in issues[0].message


def test_two_services_with_one_served_name_are_refused_by_default():
    services = {"a": target("a", "same"), "b": target("b", "same")}
    _, issues = resolve_routes(services)
    assert len(issues) == 1
    assert issues[0].path == "platform.gateway.routes"
    assert "a, b" in issues[0].message and "'same'" in issues[0].message


@pytest.mark.parametrize("name", ["", "-lead", "has space", "x" * 129, "quote'd"])
def test_model_names_litellm_would_misread_are_refused(name):
    _, issues = resolve_routes(SERVICES, {name: "llama"})
    assert [i.path for i in issues] == [f"platform.gateway.routes.{name}"]


service_keys = st.from_regex(r"[a-z][a-z0-9-]{0,20}", fullmatch=True)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.dictionaries(service_keys, st.integers(1, 65535), min_size=1, max_size=12),
    st.integers(1, 4000),
)
def test_any_set_of_services_yields_one_route_each_and_no_secret(ports, timeout):
    services = {k: target(k, f"{k}-served", port=p, timeout=timeout) for k, p in ports.items()}
    spec = spec_for(services)
    text = render_litellm_config(litellm_config(**spec))
    config = yaml.safe_load(text)
    entries = config["model_list"]
    assert sorted(e["model_name"] for e in entries) == sorted(f"{k}-served" for k in services)
    for e in entries:
        service = e["model_info"]["id"].removeprefix("ecs-")
        assert e["litellm_params"]["api_base"] == (
            f"http://{service}.inference.internal:{ports[service]}/v1"
        )
    # The master key is a reference LiteLLM resolves at start-up, never a value.
    assert config["general_settings"]["master_key"] == f"os.environ/{ENV_MASTER_KEY}"
    assert "secretsmanager" not in text
    assert longest_request_seconds(spec["routes"], spec["bedrock"]) == timeout


# --------------------------------------------------------------------------------------------
# Bedrock
# --------------------------------------------------------------------------------------------


def test_bedrock_models_without_a_region_name_the_region_path():
    routes, issues = bedrock_routes({"claude": "amazon.nova-lite-v1:0"}, None)
    assert routes == ()
    assert [i.path for i in issues] == ["platform.gateway.bedrock.region"]
    assert "no region" in issues[0].message


def test_no_bedrock_models_need_no_region():
    assert bedrock_routes({}, None) == ((), [])


@pytest.mark.parametrize(
    ("model_id", "ok"),
    [
        ("amazon.nova-lite-v1:0", True),
        ("us.anthropic.claude-haiku-4-5-20251001-v1:0", True),
        ("amazon.titan-text-express-v1", True),
        ("meta.llama3-1-70b-instruct-v1:0", True),
        ("claude", False),
        ("Anthropic.Claude", False),
        ("arn:aws:bedrock:us-east-1::foundation-model/anthropic.claude-v2", False),
    ],
)
def test_bedrock_model_ids(model_id, ok):
    _, issues = bedrock_routes({"m": model_id}, "us-east-1")
    assert (not issues) is ok
    if ok:
        # What the gateway sends as modelId is a request bedrock-runtime accepts.
        validate_shape("bedrock-runtime", "InvokeModel", {"modelId": model_id, "body": b"{}"})
    else:
        assert issues[0].path == "platform.gateway.bedrock.models.m"


def test_bedrock_names_may_not_shadow_a_route_and_regions_are_checked():
    _, issues = bedrock_routes(
        {"llama-3.1-8b": "meta.llama3-1-8b-instruct-v1:0"}, "mars-1", taken=["llama-3.1-8b"]
    )
    assert sorted(i.path for i in issues) == [
        "platform.gateway.bedrock.models.llama-3.1-8b",
        "platform.gateway.bedrock.region",
    ]


def test_bedrock_route_entry_uses_the_task_role_and_its_region():
    spec = spec_for(bedrock={"haiku": "amazon.nova-lite-v1:0"})
    entry = litellm_config(**spec)["model_list"][-1]
    assert entry["model_name"] == "haiku"
    assert entry["litellm_params"]["model"] == "bedrock/amazon.nova-lite-v1:0"
    assert entry["litellm_params"]["aws_region_name"] == "eu-west-1"
    assert not {"aws_access_key_id", "aws_secret_access_key"} & set(entry["litellm_params"])


def test_bedrock_policy_allows_invoke_on_exactly_the_configured_models():
    routes = (
        BedrockRoute("haiku", "amazon.nova-lite-v1:0", "eu-west-1"),
        BedrockRoute("sonnet", "eu.anthropic.claude-3-7-sonnet-20250219-v1:0", "eu-west-1"),
    )
    doc = json.loads(bedrock_invoke_policy(routes, account_id="111122223333"))
    (statement,) = doc["Statement"]
    assert statement["Action"] == list(BEDROCK_INVOKE_ACTIONS)
    sonnet = "anthropic.claude-3-7-sonnet-20250219-v1:0"
    # The profile, and the model in every Region the EU profile routes to, no other Region.
    assert statement["Resource"] == [
        "arn:aws:bedrock:eu-west-1::foundation-model/amazon.nova-lite-v1:0",
        f"arn:aws:bedrock:eu-west-1:111122223333:inference-profile/eu.{sonnet}",
        *(f"arn:aws:bedrock:{r}::foundation-model/{sonnet}" for r in PROFILE_GEOGRAPHIES["eu"]),
    ]
    assert not any(":bedrock:*:" in arn for arn in statement["Resource"])
    assert "*" not in statement["Action"] and all(":*" not in a for a in statement["Action"])
    with pytest.raises(ValueError, match="account id"):
        bedrock_model_arns(routes[1])
    with pytest.raises(ValueError, match="no Bedrock routes"):
        bedrock_invoke_policy(())


# --------------------------------------------------------------------------------------------
# container environment
# --------------------------------------------------------------------------------------------


def gateway(**extra) -> GatewayConfig:
    return GatewayConfig.model_validate({"masterKeySecretArn": MASTER_ARN, **extra})


def test_secrets_travel_by_reference_and_the_config_by_environment():
    cfg = gateway(database={"enabled": True, "saltKeySecretArn": SALT_ARN})
    decided, issues = gateway_service(cfg, GatewayPlacement(SERVICES))
    assert not issues and decided is not None
    env = container_environment(decided.config_yaml, DB_HOST)
    # No database password reaches the task: LiteLLM logs in with IAM tokens it renews, so
    # nothing goes stale when RDS rotates the master secret (issue 24 item 5).
    assert decided.secret_refs == {ENV_MASTER_KEY: MASTER_ARN, ENV_SALT_KEY: SALT_ARN}
    assert env[ENV_DATABASE_USERNAME] == "litellm"
    assert env["IAM_TOKEN_DB_AUTH"] == "true"
    assert env["DATABASE_SSLMODE"] == "require"
    # Nothing of the master user reaches the serving container (issue 33 item 4).
    assert not any("rds!" in v or ":cluster:" in v for v in env.values())
    assert not set(decided.secret_refs) & set(env)
    assert all("secretsmanager" not in v for v in env.values())
    config = litellm_config(**spec_for(database=True))
    assert yaml.safe_load(env[ENV_CONFIG_YAML]) == config
    # With the database on, spend logs are kept.
    assert "disable_spend_logs" not in config["general_settings"]


def test_a_config_too_large_for_the_task_definition_is_refused():
    services = {f"m{i:03d}": target(f"m{i:03d}", f"model-{i:03d}") for i in range(150)}
    _, issues = gateway_service(gateway(), GatewayPlacement(services))
    (issue,) = issues
    assert issue.path == "platform.gateway" and "150 routes" in issue.message
    small = {k: services[k] for k in list(services)[:50]}
    decided, issues = gateway_service(gateway(), GatewayPlacement(small))
    assert not issues and decided is not None and decided.config_yaml


# --------------------------------------------------------------------------------------------
# LiteLLM's own parser (pinned release, own venv, no network)
# --------------------------------------------------------------------------------------------


def test_lock_file_pins_the_release_the_generator_targets():
    from tests.litellm.venv import LOCK_FILE

    pins = dict(line.split("==", 1) for line in LOCK_FILE.read_text().splitlines() if "==" in line)
    assert pins["litellm"] == LITELLM_VERSION


def test_generated_configs_load_in_the_pinned_litellm():
    from tests.litellm.venv import run_probe

    plain = spec_for(bedrock={"haiku": "us.anthropic.claude-haiku-4-5-20251001-v1:0"})
    db_env = container_environment(
        render_litellm_config(litellm_config(**spec_for(database=True))), DB_HOST
    )
    broken = litellm_config(**plain)
    broken["model_list"][0]["litellm_params"] = "hosted_vllm/x"  # a string, not a mapping
    reports = run_probe(
        [
            {
                "yaml": render_litellm_config(litellm_config(**plain)),
                "env": {ENV_MASTER_KEY: "sk-plain"},
            },
            {
                "yaml": db_env[ENV_CONFIG_YAML],
                "env": {
                    ENV_MASTER_KEY: "sk-db",
                    **{k: v for k, v in db_env.items() if k != ENV_CONFIG_YAML},
                    # Set in the proxy container (gateway_container_definitions).
                    "AWS_REGION": "eu-west-1",
                    # The task role's credentials; the token is signed locally, no call made.
                    "AWS_ACCESS_KEY_ID": "AKIAIOSFODNN7EXAMPLE",
                    "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                },
            },
            {"yaml": yaml.safe_dump(broken), "env": {ENV_MASTER_KEY: "sk-x"}},
        ]
    )
    first, second, third = reports
    assert "error" not in first, first.get("error")
    names = [r.model_name for r in plain["routes"]] + [b.model_name for b in plain["bedrock"]]
    assert first["model_names"] == sorted(names)
    assert first["master_key"] == "sk-plain"
    assert first["key_header"] == KEY_HEADER
    assert first["routing_strategy"] == "simple-shuffle" and first["num_retries"] == 2
    by_name = {d["model_name"]: d for d in first["deployments"]}
    for route in plain["routes"]:
        assert by_name[route.model_name]["provider"] == "hosted_vllm"
        assert by_name[route.model_name]["url"] == (
            f"http://{route.target.host}:{route.target.port}/v1/chat/completions"
        )
    assert by_name["haiku"]["provider"] == "bedrock"
    loaded = {m["model_name"]: m for m in first["loaded"]}
    assert loaded["haiku"]["aws_region_name"] == "eu-west-1"
    assert loaded["mixtral-8x7b"]["timeout"] == 900

    assert "error" not in second, second.get("error")
    assert second["master_key"] == "sk-db"
    url = second["database_url"]
    # LiteLLM's IAM path: the user, a freshly minted RDS token as the password, host and port.
    assert url.startswith("postgresql://litellm:")
    assert "X-Amz-Signature" in url and "Action%3Dconnect" in url
    assert re.search(r"@gw\.cluster-abc\.eu-west-1\.rds\.amazonaws\.com:5432/litellm\b", url)
    assert "sslmode=require" in url

    # The probe is able to fail: a malformed deployment is rejected by LiteLLM's schema.
    assert "error" in third


@pytest.mark.parametrize(
    ("model_id", "region", "expected"),
    [
        ("anthropic.claude-haiku-4-5-20251001-v1:0", "us-east-1", "us.anthropic.claude-haiku-4-5"),
        ("anthropic.claude-sonnet-4-5-20250929-v1:0", "eu-west-1", "eu.anthropic.claude-sonnet-4"),
        ("anthropic.claude-3-5-sonnet-20241022-v2:0", "ap-northeast-1", "jp.anthropic.claude-3-5"),
        ("anthropic.claude-3-5-haiku-20241022-v1:0", "us-east-1", "end of life on 2026-06-19"),
        ("us.anthropic.claude-3-5-haiku-20241022-v1:0", "us-east-1", "end of life"),
    ],
)
def test_bedrock_models_invoked_only_through_a_profile_or_retired_are_refused(
    model_id: str, region: str, expected: str
) -> None:
    """Issue 24 item 7: Bedrock refuses these on demand ("Invocation of model ID ... with
    on-demand throughput isn't supported"); the error names the profile to use."""
    _, issues = bedrock_routes({"m": model_id}, region)
    (issue,) = issues
    assert issue.path == "platform.gateway.bedrock.models.m"
    assert expected in issue.message
    profile = "us.anthropic.claude-haiku-4-5-20251001-v1:0"
    assert bedrock_routes({"m": profile}, "us-east-1")[1] == []
