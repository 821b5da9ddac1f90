"""prod's canary (llama-70b) and blue/green (qwen-32b) services as the preview records them, and
the checks around them: each passes on the reference stack and fails when its defect is put
back."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from ecs_inference.endpoint import routes
from ecs_inference.rollouts import smoke
from tests.tools.test_rehearsal_services import POLICY, drop_statements, edited
from tools.aws_requests.ecs_native import native_deployment_problems
from tools.preview import PreviewResult, run_preview
from tools.recording import ACCOUNT_ID, RecordedResource
from tools.rehearsal import rehearse

SERVICE = "aws:ecs/service:Service"
RULE = "aws:lb/listenerRule:ListenerRule"
ALARM = "aws:cloudwatch/metricAlarm:MetricAlarm"
NATIVE = {"llama-70b": "CANARY", "qwen-32b": "BLUE_GREEN"}


@pytest.fixture(scope="module")
def prod() -> PreviewResult:
    result = run_preview("prod", policy_pack=None)
    assert result.ok, result.error
    return result


def one(result: PreviewResult, type_: str, name: str) -> RecordedResource:
    (found,) = [r for r in result.resources if r.type == type_ and r.name == name]
    return found


def arn(result: PreviewResult, r: RecordedResource) -> str:
    return (r.outputs or {}).get("arn") or r.inputs.get("arn")


@pytest.mark.parametrize(("service", "strategy"), NATIVE.items())
def test_the_service_deploys_natively_with_its_rules_groups_hook_and_alarms(
    prod: PreviewResult, service: str, strategy: str
) -> None:
    ecs = one(prod, SERVICE, f"inference-{service}-service").inputs
    dc = ecs["deploymentConfiguration"]
    assert dc["strategy"] == strategy
    assert ecs["deploymentController"] == {"type": "ECS"}
    (lb,) = ecs["loadBalancers"]
    advanced = lb["advancedConfiguration"]
    test = one(prod, RULE, f"inference-edge-{service}-test")
    production = one(prod, RULE, f"inference-edge-{service}-bearer")
    assert advanced["testListenerRule"] == arn(prod, test)
    assert advanced["productionListenerRule"] == arn(prod, production)
    groups = {lb["targetGroupArn"], advanced["alternateTargetGroupArn"]}
    assert len(groups) == 2
    for rule in (test, production):
        forward = rule.inputs["actions"][1]["forward"]["targetGroups"]
        assert {g["arn"] for g in forward} == groups
        assert sorted(g["weight"] for g in forward) == [0, 100]
    (hook,) = dc["lifecycleHooks"]
    assert hook["lifecycleStages"] == ["POST_TEST_TRAFFIC_SHIFT"]
    details = json.loads(hook["hookDetails"])
    assert details["url"].endswith(f"/{service}/v1/chat/completions")
    smoke.SmokeSettings.from_details(details)  # the hook reads what the stack writes
    assert list(native_deployment_problems(ecs)) == []


@pytest.mark.parametrize("service", NATIVE)
def test_no_rule_goes_stale_and_authentication_is_never_lost(
    prod: PreviewResult, service: str
) -> None:
    """ECS manages exactly the test and production rules: no browser rule forwards to a group
    ECS may have swapped, and both rules authenticate like a rolling service's bearer rule."""
    names = {r.name for r in prod.resources if r.type == RULE and f"-{service}-" in r.name}
    assert names == {f"inference-edge-{service}-test", f"inference-edge-{service}-bearer"}
    rolling = one(prod, RULE, "inference-edge-llama-8b-bearer").inputs["actions"][0]
    for name in names:
        rule = one(prod, RULE, name).inputs
        assert rule["actions"][0] == rolling
        assert rule["actions"][0]["type"] == "jwt-validation"
    test = one(prod, RULE, f"inference-edge-{service}-test").inputs
    production = one(prod, RULE, f"inference-edge-{service}-bearer").inputs
    assert test["priority"] < production["priority"]
    headers = [c["httpHeader"] for c in test["conditions"] if c.get("httpHeader")]
    assert {"httpHeaderName": smoke.TEST_HEADER, "values": [smoke.TEST_HEADER_VALUE]} in headers


def test_pulumi_leaves_only_the_forward_weights_to_ecs() -> None:
    """Pulumi's ignoreChanges paths: the forward action (index 1) only, never the
    authenticate action (index 0)."""
    assert routes.WEIGHTED_FORWARD_PATHS == ["actions[1].forward", "actions[1].targetGroupArn"]
    assert not any(p.startswith("actions[0]") for p in routes.WEIGHTED_FORWARD_PATHS)


@pytest.mark.parametrize("service", NATIVE)
def test_deployment_alarms_are_alarms_the_stack_creates(prod: PreviewResult, service: str) -> None:
    """A drift between the names ECS watches and the alarms operations creates fails here."""
    alarms = one(prod, SERVICE, f"inference-{service}-service").inputs["alarms"]
    created = {r.inputs["name"] for r in prod.resources if r.type == ALARM}
    assert alarms["rollback"] and alarms["enable"]
    assert set(alarms["alarmNames"]) <= created
    assert {n.rsplit(f"{service}-", 1)[1] for n in alarms["alarmNames"]} == {
        "target-5xx",
        "ttft-p99",
        "engine-down",
    }


def test_a_rolling_service_keeps_its_two_rules_and_no_deployment_configuration(
    prod: PreviewResult,
) -> None:
    ecs = one(prod, SERVICE, "inference-llama-8b-service").inputs
    assert "deploymentConfiguration" not in ecs and "alarms" not in ecs
    one(prod, RULE, "inference-edge-llama-8b-browser")


def without_sid(sid: str) -> Callable[[dict[str, Any]], None]:
    return drop_statements("policy", lambda s: s.get("Sid") != sid)


MUTATIONS = [
    ("shift role without ModifyRule", "inference-qwen-32b-deploy",
     without_sid("ShiftTrafficOnTheServiceRules"), "elasticloadbalancing:ModifyRule on"),
    ("shift role without the target groups", "inference-llama-70b-deploy",
     without_sid("RegisterTasksInBothTargetGroups"), "elasticloadbalancing:RegisterTargets on"),
    ("shift role without the hook", "inference-qwen-32b-deploy",
     without_sid("InvokeTheSmokeHook"), "lambda:InvokeFunction on"),
    ("hook role without its secret", "inference-edge-hook-role",
     without_sid("ReadTheHookClientSecret"), "secretsmanager:GetSecretValue on"),
    ("hook role without its interfaces", "inference-edge-hook-role",
     without_sid("NetworkInterfacesInTheVpc"), "ec2:CreateNetworkInterface on"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("name", "edit", "expected"), [m[1:] for m in MUTATIONS], ids=[m[0] for m in MUTATIONS]
)
def test_the_rehearsal_names_a_missing_deployment_grant(
    prod: PreviewResult, name: str, edit: Callable[[dict[str, Any]], None], expected: str
) -> None:
    assert not rehearse(prod.resources, "us-east-1", ACCOUNT_ID).findings
    findings = rehearse(edited(prod, POLICY, name, edit), "us-east-1", ACCOUNT_ID).findings
    assert findings and any(expected in f.message for f in findings), [f.message for f in findings]


def test_the_shift_role_trusts_ecs(prod: PreviewResult) -> None:
    def trust_ec2(inputs: dict[str, Any]) -> None:
        inputs["assumeRolePolicy"] = inputs["assumeRolePolicy"].replace(
            "ecs.amazonaws.com", "ec2.amazonaws.com"
        )

    resources = edited(prod, "aws:iam/role:Role", "inference-qwen-32b-deploy", trust_ec2)
    messages = [f.message for f in rehearse(resources, "us-east-1", ACCOUNT_ID).findings]
    assert any("sts:AssumeRole" in m and "inference-qwen-32b-deploy" in m for m in messages)


BAD = [
    ("no advanced configuration", lambda dc, lb: lb.pop("advancedConfiguration"),
     "needs advancedConfiguration"),
    ("a CodeDeploy controller", lambda dc, lb: None, "needs the ECS deployment controller"),
    ("a bake beyond a day", lambda dc, lb: dc.update(bakeTimeInMinutes="1441"),
     "bakeTimeInMinutes 1441 is outside 0-1440"),
    ("a canary percent off the 0.1 grid", lambda dc, lb: dc["canaryConfiguration"].update(
        canaryPercent=10.05), "not a multiple of 0.1"),
    ("a canary without its configuration", lambda dc, lb: dc.pop("canaryConfiguration"),
     "a CANARY deployment needs canaryConfiguration"),
    ("a hook without its role", lambda dc, lb: dc["lifecycleHooks"][0].pop("roleArn"),
     "an AWS_LAMBDA hook needs roleArn"),
    ("a pause hook at the traffic shift", lambda dc, lb: dc["lifecycleHooks"][0].update(
        targetType="PAUSE", lifecycleStages=["TEST_TRAFFIC_SHIFT"]),
     "a PAUSE hook cannot run at TEST_TRAFFIC_SHIFT"),
    ("the alternate group is the primary", lambda dc, lb: lb["advancedConfiguration"].update(
        alternateTargetGroupArn=lb["targetGroupArn"]), "must differ from the primary"),
]  # fmt: skip


@pytest.mark.parametrize(("edit", "expected"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_create_service_refuses_a_broken_native_deployment(
    prod: PreviewResult, edit: Callable[[dict[str, Any], dict[str, Any]], None], expected: str
) -> None:
    ecs = json.loads(json.dumps(one(prod, SERVICE, "inference-llama-70b-service").inputs))
    assert list(native_deployment_problems(ecs)) == []
    if expected.startswith("needs the ECS"):
        ecs["deploymentController"] = {"type": "CODE_DEPLOY"}
    edit(ecs["deploymentConfiguration"], ecs["loadBalancers"][0])
    problems = list(native_deployment_problems(ecs))
    assert any(expected in p for p in problems), problems
