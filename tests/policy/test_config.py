"""Policy pack config: levels and thresholds through Configure, and the config file format.

Each pack here (judged in process, ``pack_harness``) gets its own ``--policy-pack-config``-style
config, reconciled the way the CLI does (schema defaults, then ``all``, then per-policy entries)
before the pack's own ``Configure``. The same config over gRPC: ``test_protocol.py``.
"""

from __future__ import annotations

import re

import pytest

from tests.policy.pack_harness import InProcessPack
from tests.policy.policy_stacks import RERANKER, SG, UNKNOWN, aws_baseline, container_json, found
from tools.analyzer_client import (
    PolicyConfigError,
    load_policy_config,
    reconcile_config,
    validate_schema,
)

CONFIG = {
    "alb-idle-timeout-for-streaming": {
        "enforcementLevel": "mandatory",
        "minIdleTimeoutSeconds": 1000,
    },
    "no-reachable-public-ip": "advisory",
    "no-internet-ingress-to-unauthenticated-target": {"exemptResources": ["task-sg"]},
    "health-check-grace-period": {"minGracePeriodSeconds": 300},
}


@pytest.fixture(scope="module")
def configured():
    with InProcessPack(config=CONFIG) as process:
        yield process


def test_raised_threshold_and_level(configured):
    violations = configured.analyze(aws_baseline())
    # idle 900 s < 1000 s is now mandatory; rerank's 120 s grace is now below 300 s.
    assert found(violations, level="mandatory") == {("alb-idle-timeout-for-streaming", "alb")}
    assert found(violations, level="advisory") == {("health-check-grace-period", "rerank")}


def _open_task_sg(stack, public_ip: bool):
    """Attach a security group open to the internet on every port to the re-ranker."""
    stack.add(
        SG,
        "task-sg",
        {
            "ingress": [
                {"protocol": "-1", "fromPort": 0.0, "toPort": 0.0, "cidrBlocks": ["0.0.0.0/0"]}
            ]
        },
    )
    stack.set(
        "rerank",
        networkConfiguration={
            "subnets": ["a"],
            "assignPublicIp": public_ip,
            "securityGroups": [UNKNOWN],
        },
    )
    deps = {
        **stack["rerank"].property_dependencies,
        "networkConfiguration": (stack["task-sg"].urn,),
    }
    stack.replace("rerank", property_dependencies=deps)
    return stack


def test_lowered_level_and_exemption(configured):
    violations = configured.analyze(_open_task_sg(aws_baseline().copy(), public_ip=True))
    assert ("no-reachable-public-ip", "rerank") in found(violations, level="advisory")
    policy = "no-internet-ingress-to-unauthenticated-target"
    assert not any(v.policy_name == policy for v in violations)
    # The exemption is reported, so it stays visible.
    notes = [v for v in violations if v.policy_name == "guardrail-notes"]
    assert any(policy in v.message and "task-sg" in v.message for v in notes)


def test_bare_name_exemption_does_not_leak_to_other_types():
    # "rerank" names a service; the security group rule judges security groups only.
    config = {"no-internet-ingress-to-unauthenticated-target": {"exemptResources": ["rerank"]}}
    with InProcessPack(config=config) as process:
        violations = process.analyze(_open_task_sg(aws_baseline().copy(), public_ip=False))
    assert found(violations, level="mandatory") == {
        ("no-internet-ingress-to-unauthenticated-target", "task-sg")
    }


def test_scope_model_serving_turns_other_routes_into_notes():
    # A public ALB forwarding without authentication to a plain web app (no accelerator, no
    # serving image or port) is mandatory under scope all and a note under model-serving.
    stack = aws_baseline().copy().set("alb", internal=False)
    stack.set(
        "rerank-route", actions=[{"type": "forward", "order": 1.0, "targetGroupArn": UNKNOWN}]
    )
    stack.set("rerank-tg", port=3001.0)
    web = {
        **RERANKER,
        "image": "public.ecr.aws/nginx/nginx:1.27",
        "portMappings": [{"containerPort": 3001.0}],
    }
    stack.set("rerank-td", containerDefinitions=container_json(web))
    path = "no-unauthenticated-internet-path"
    config = {path: {"scope": "model-serving"}}
    with InProcessPack(config=config) as process:
        violations = process.analyze(stack)
    assert found(violations, level="mandatory") == set()
    assert any(
        v.policy_name == "guardrail-notes" and "outside scope model-serving" in v.message
        for v in violations
    )
    with InProcessPack() as process:  # model-serving is the default
        assert found(process.analyze(stack), level="mandatory") == set()
    with InProcessPack(config={path: {"scope": "all"}}) as process:
        assert found(process.analyze(stack), level="mandatory") == {(path, "rerank-route")}
    # The model route stays mandatory under model-serving.
    stack.set("llm-api", actions=[{"type": "forward", "order": 1.0, "targetGroupArn": UNKNOWN}])
    with InProcessPack(config=config) as process:
        assert found(process.analyze(stack), level="mandatory") == {(path, "llm-api")}


def test_all_disabled_then_one_enabled():
    config = {"all": "disabled", "fargate-task-size-on-grid": "mandatory"}
    stack = aws_baseline().copy().set("rerank-td", memory="3000")
    stack.set(
        "rerank-td",
        containerDefinitions=container_json(
            {**RERANKER, "resourceRequirements": [{"type": "GPU", "value": "1"}]}
        ),
    )
    with InProcessPack(config=config) as process:
        assert found(process.analyze(stack)) == {("fargate-task-size-on-grid", "rerank-td")}


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (
            {"alb-idle-timeout-for-streaming": {"minIdleTimeoutSeconds": "long"}},
            "alb-idle-timeout-for-streaming: minIdleTimeoutSeconds: invalid type",
        ),
        (
            {"alb-idle-timeout-for-streaming": {"minIdleTimeoutSeconds": 5000}},
            "less than or equal to 4000",
        ),
        (
            {"no-internet-ingress-to-unauthenticated-target": {"modelPorts": ["http"]}},
            "modelPorts.0",
        ),
        # What names nothing of the pack: the pack refuses it in Configure (the CLI itself
        # lets an unknown policy or key through), so the CLI and the preview stop alike.
        (
            {"no-unauthenticated-internet-listener": "mandatory"},
            "no-unauthenticated-internet-listener: no such policy in this pack",
        ),
        (
            {"alb-idle-timeout-for-streaming": {"minIdleTimeout": 900}},
            "alb-idle-timeout-for-streaming: Additional property minIdleTimeout is not allowed",
        ),
        (
            {"all": {"enforcementLevel": "mandatory", "unknowns": "fail-closed"}},
            "all: unknowns: 'all' sets only enforcementLevel",
        ),
    ],
)
def test_config_outside_the_schema_is_rejected_before_analysis(config, message):
    with pytest.raises(PolicyConfigError, match=re.escape(message)):
        InProcessPack(config=config).start()


def test_a_valid_config_naming_every_policy_is_accepted():
    with InProcessPack() as process:
        names = [p["name"] for p in process.info()["policies"]]
    config = {"all": "advisory", **{name: {"enforcementLevel": "mandatory"} for name in names}}
    with InProcessPack(config=config) as process:
        assert {p["enforcementLevel"] for p in process.info()["policies"]} == {"mandatory"}


# --- the config file -------------------------------------------------------------------------


def test_load_policy_config_accepts_the_cli_format(tmp_path):
    path = tmp_path / "cfg.json"
    path.write_text(
        '{"all": "advisory", "a": "disabled", "b": {"enforcementLevel": "mandatory", "x": 1}}'
    )
    assert load_policy_config(path) == {
        "all": "advisory",
        "a": "disabled",
        "b": {"enforcementLevel": "mandatory", "x": 1},
    }
    (tmp_path / "empty.json").write_text("  \n")
    assert load_policy_config(tmp_path / "empty.json") == {}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"a": "mandatory",}', r"invalid JSON at line 1 column 19"),
        ("[1, 2]", "must be a JSON object"),
        ('{"a": "strict"}', "'strict' is not a valid enforcement level"),
        ('{"a": {"enforcementLevel": 3}}', "must be a string"),
        ('{"a": {"enforcementLevel": "block"}}', "'block' is not a valid enforcement level"),
        ('{"a": 7}', "a: 7 is not a valid value; must be a string or object"),
    ],
)
def test_load_policy_config_errors_name_the_file_and_problem(tmp_path, text, message):
    path = tmp_path / "cfg.json"
    path.write_text(text)
    with pytest.raises(PolicyConfigError, match=message) as error:
        load_policy_config(path)
    assert str(path) in str(error.value)


def test_load_policy_config_missing_file(tmp_path):
    with pytest.raises(PolicyConfigError, match="cannot read policy pack config"):
        load_policy_config(tmp_path / "nope.json")


def test_reconcile_applies_defaults_all_then_policy_entries():
    policies = [
        {
            "name": "p1",
            "enforcementLevel": "mandatory",
            "configSchema": {"properties": {"n": {"type": "integer", "default": 5}}},
        },
        {"name": "p2", "enforcementLevel": "advisory", "configSchema": {}},
    ]
    result = reconcile_config(
        policies, None, {"all": "disabled", "p2": {"enforcementLevel": "mandatory"}, "p1": {"n": 7}}
    )
    assert result["p1"] == {"enforcementLevel": "disabled", "properties": {"n": 7}}
    assert result["p2"] == {"enforcementLevel": "mandatory", "properties": {}}
    assert reconcile_config(policies, None, None)["p1"]["properties"] == {"n": 5}


def test_validate_schema_subset():
    schema = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 1}}}
    assert validate_schema(schema, {"n": 2}) == []
    assert validate_schema(schema, {"n": 2.5}) == ["n: invalid type; expected integer, got 2.5"]
    assert validate_schema(schema, {"n": True}) == ["n: invalid type; expected integer, got true"]
    assert validate_schema(schema, {"n": 0}) == ["n: must be greater than or equal to 1"]
    assert validate_schema({"required": ["k"]}, {}) == ["k is required"]


def test_every_problem_of_a_policy_config_is_reported_at_once(tmp_path):
    """An unknown policy (with the near miss it names), an unknown key of a known policy and a
    key under `all` are one error, not three runs."""
    config = {
        "all": {"unknowns": "fail-closed"},
        "no-plaintext-secrets-in-enviroment": "advisory",
        "alb-idle-timeout-for-streaming": {"minIdleTimeout": 900},
    }
    with pytest.raises(PolicyConfigError) as error:
        InProcessPack(config=config).start()
    message = str(error.value)
    for part in (
        "all: unknowns: 'all' sets only enforcementLevel",
        "no-plaintext-secrets-in-enviroment: no such policy in this pack; did you mean "
        "no-plaintext-secrets-in-environment?",
        "alb-idle-timeout-for-streaming: Additional property minIdleTimeout is not allowed",
    ):
        assert part in message, message
    path = tmp_path / "cfg.json"
    path.write_text('{"a": "strict", "b": 7}')
    with pytest.raises(PolicyConfigError) as error:
        load_policy_config(path)
    assert "2 problems" in str(error.value)
    assert "'strict' is not a valid enforcement level" in str(error.value)
    assert "b: 7 is not a valid value" in str(error.value)
