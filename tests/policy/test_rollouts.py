"""The native-rollout advisories (``policy/guardrails/rollouts.py``), judged in process.

Each shape (pulumi-aws, aws-native) starts from the rule tests' baseline made into a compliant
canary rollout: one 2-GPU task, a g6e.12xlarge (4 GPUs) launch template behind an ASG of
maxSize 1 (2 x 1 x 2 = 4 GPUs fit), and production / test listener rules that both validate the
same JWT. Each case changes one thing and lists exactly the (policy, resource) it expects.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from guardrails.rollouts import GPUS_PER_INSTANCE_TYPE

from ecs_inference.sizing import catalog
from tests.policy.policy_stacks import (
    N_RULE,
    RULE,
    UNKNOWN,
    VLLM,
    Stack,
    aws_baseline,
    container_json,
    forward,
    found,
    native_baseline,
)
from tests.policy.test_undecidable import _secret_everywhere, _speaks

CAPACITY = "gpu-rollout-capacity"
TEST_RULE = "rollout-test-rule-authenticates"
NOTES = "guardrail-notes"
HEADROOM = "gpu-deploy-headroom"

PROD_ARN = "arn:aws:elasticloadbalancing:us-east-1:123456789012:listener-rule/app/a/1/2/prod"
TEST_ARN = "arn:aws:elasticloadbalancing:us-east-1:123456789012:listener-rule/app/a/1/2/test"
ISSUER = "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_pool"
JWKS = f"{ISSUER}/.well-known/jwks.json"
POOL = "arn:aws:cognito-idp:us-east-1:123456789012:userpool/us-east-1_pool"


def _names(native: bool) -> dict[str, str]:
    p = "n-" if native else ""
    return {"svc": f"{p}llm", "asg": f"{p}gpu-asg", "td": f"{p}llm-td"}


def _jwt(native: bool, issuer: str = ISSUER, jwks: str = JWKS) -> dict[str, Any]:
    key = "jwtValidationConfig" if native else "jwtValidation"
    return {"type": "jwt-validation", "order": 1.0, key: {"issuer": issuer, "jwksEndpoint": jwks}}


def _cognito(native: bool, pool: str = POOL, on_unauth: str = "deny") -> dict[str, Any]:
    key = "authenticateCognitoConfig" if native else "authenticateCognito"
    block = {"userPoolArn": pool, "userPoolClientId": "c", "onUnauthenticatedRequest": on_unauth}
    return {"type": "authenticate-cognito", "order": 1.0, key: block}


def rollout(native: bool, strategy: str = "CANARY") -> Stack:
    """The baseline of ``native``'s shape as a compliant ``strategy`` rollout."""
    s = (native_baseline() if native else aws_baseline()).copy()
    n = _names(native)
    lt_type = "aws-native:ec2:LaunchTemplate" if native else "aws:ec2/launchTemplate:LaunchTemplate"
    lt = (
        {"launchTemplateData": {"instanceType": "g6e.12xlarge"}}
        if native
        else {"instanceType": "g6e.12xlarge"}
    )
    s.add(lt_type, "gpu-lt", lt)
    asg = dict(s[n["asg"]].inputs, launchTemplate={"launchTemplateId": UNKNOWN})
    s.set(n["asg"], **asg)
    s.replace(n["asg"], property_dependencies={"launchTemplate": (s["gpu-lt"].urn,)})
    _max_size(1)(s, native)
    _gpus_per_task(2)(s, native)
    s.set(n["svc"], desiredCount=1.0)
    rule = N_RULE if native else RULE
    for name, arn in (("prod-rule", PROD_ARN), ("test-rule", TEST_ARN)):
        s.add(rule, name, {"arn": arn, "priority": 5.0, "actions": [_jwt(native), forward()]})
    lb = {
        "targetGroupArn": UNKNOWN,
        "containerName": "vllm",
        "containerPort": 8000.0,
        "advancedConfiguration": {
            "alternateTargetGroupArn": UNKNOWN,
            "productionListenerRule": PROD_ARN,
            "testListenerRule": TEST_ARN,
            "roleArn": UNKNOWN,
        },
    }
    deploy = {"strategy": strategy, "bakeTimeInMinutes": "10"}
    if native:
        deploy = {
            **s[n["svc"]].inputs["deploymentConfiguration"],
            **deploy,
            "maximumPercent": 100.0,
        }
        s.set(n["svc"], deploymentConfiguration=deploy, loadBalancers=[lb])
    else:
        s.set(n["svc"], deploymentConfiguration=deploy, loadBalancers=[lb])
        s.set(n["svc"], deploymentMaximumPercent=100.0)
    return s


def _set_rule(name: str, *actions: dict[str, Any]) -> Callable[[Stack, bool], None]:
    def change(s: Stack, native: bool) -> None:
        s.set(name, actions=[*actions, forward()])

    return change


def _advanced(**changes: Any) -> Callable[[Stack, bool], None]:
    def change(s: Stack, native: bool) -> None:
        svc = _names(native)["svc"]
        lb = dict(s[svc].inputs["loadBalancers"][0])
        advanced = dict(lb["advancedConfiguration"])
        for key, value in changes.items():
            if value is ...:
                advanced.pop(key)
            else:
                advanced[key] = value
        s.set(svc, loadBalancers=[{**lb, "advancedConfiguration": advanced}])

    return change


def _per_native(build: Callable[[bool], list[dict[str, Any]]]) -> Callable[[Stack, bool], None]:
    """Set the test rule's actions built for the shape being tested."""

    def change(s: Stack, native: bool) -> None:
        s.set("test-rule", actions=[*build(native), forward()])

    return change


def _gpus_per_task(count: int) -> Callable[[Stack, bool], None]:
    def change(s: Stack, native: bool) -> None:
        container = {**VLLM, "resourceRequirements": [{"type": "GPU", "value": str(count)}]}
        td = _names(native)["td"]
        s.set(td, containerDefinitions=[container] if native else container_json(container))

    return change


def _instance_type(name: str) -> Callable[[Stack, bool], None]:
    def change(s: Stack, native: bool) -> None:
        if native:
            s.set("gpu-lt", launchTemplateData={"instanceType": name})
        else:
            s.set("gpu-lt", instanceType=name)

    return change


def _max_size(value: float) -> Callable[[Stack, bool], None]:
    def change(s: Stack, native: bool) -> None:
        s.set(_names(native)["asg"], maxSize=str(int(value)) if native else value)

    return change


#: case -> (change, expected (policy, resource) with "svc" standing for the GPU service)
BAD: dict[str, tuple[Callable[[Stack, bool], None], set[tuple[str, str]]]] = {
    "three-gpus-per-task": (_gpus_per_task(3), {(CAPACITY, "svc")}),
    "smaller-instance-type": (_instance_type("g6e.2xlarge"), {(CAPACITY, "svc")}),
    "test-rule-missing": (_advanced(testListenerRule=...), {(TEST_RULE, "svc")}),
    "test-rule-without-auth": (_set_rule("test-rule"), {(TEST_RULE, "svc")}),
    "test-rule-other-issuer": (
        _per_native(lambda n: [_jwt(n, issuer="https://other-idp")]),
        {(TEST_RULE, "svc")},
    ),
    "test-rule-other-jwks": (
        _per_native(lambda n: [_jwt(n, jwks="https://other-idp/jwks.json")]),
        {(TEST_RULE, "svc")},
    ),
    "test-rule-cognito-instead-of-jwt": (
        _per_native(lambda n: [_cognito(n)]),
        {(TEST_RULE, "svc")},
    ),
    "test-rule-auth-after-forward": (
        _per_native(lambda n: [forward(0.5), _jwt(n)]),
        {(TEST_RULE, "svc")},
    ),
}


def _cognito_both(pool: str, on_unauth: str) -> Callable[[Stack, bool], None]:
    def change(s: Stack, native: bool) -> None:
        s.set("prod-rule", actions=[_cognito(native), forward()])
        s.set("test-rule", actions=[_cognito(native, pool, on_unauth), forward()])

    return change


BAD |= {
    "test-rule-other-user-pool": (
        _cognito_both(POOL.replace("_pool", "_other"), "deny"),
        {(TEST_RULE, "svc")},
    ),
    "test-rule-allows-anonymous": (_cognito_both(POOL, "allow"), {(TEST_RULE, "svc")}),
}


def _mixed_overrides(s: Stack, native: bool) -> None:
    """A group of maxSize 1 that may launch g6e.xlarge (1 GPU) or g6e.12xlarge (4): the
    larger type gives 1 x 4 = 4 = 2 x 1 x 2 GPUs."""
    overrides = [{"instanceType": "g6e.xlarge"}, {"instanceType": "g6e.12xlarge"}]
    spec = {"launchTemplateSpecification": {"launchTemplateId": UNKNOWN}, "overrides": overrides}
    asg = _names(native)["asg"]
    s.set(asg, launchTemplate=..., mixedInstancesPolicy={"launchTemplate": spec})
    s.replace(asg, property_dependencies={"mixedInstancesPolicy": (s["gpu-lt"].urn,)})


GOOD: dict[str, Callable[[Stack, bool], None]] = {
    "mixed-overrides-largest-type-fits": _mixed_overrides,
    "canary": lambda s, n: None,
    # Two instances hold blue and green whatever they are: no type is read.
    "group-of-twice-desired-any-type": lambda s, n: (
        _max_size(2)(s, n),
        _instance_type("x9.huge")(s, n),
    ),
    "cognito-same-pool": _cognito_both(POOL, "authenticate"),
    "test-rule-adds-a-second-auth": _per_native(lambda n: [_jwt(n), _cognito(n)]),
}


def _expected(expect: set[tuple[str, str]], native: bool) -> set[tuple[str, str]]:
    return {(p, _names(native)[r] if r in ("svc", "asg", "td") else r) for p, r in expect}


@pytest.mark.parametrize("native", [False, True], ids=["aws", "native"])
@pytest.mark.parametrize("strategy", ["CANARY", "BLUE_GREEN", "LINEAR"])
def test_compliant_rollout_is_clean(local_pack, native, strategy):
    assert found(local_pack.analyze(rollout(native, strategy))) == set()


@pytest.mark.parametrize("native", [False, True], ids=["aws", "native"])
@pytest.mark.parametrize("case", sorted(BAD))
def test_one_defect_one_advisory(local_pack, native, case):
    change, expect = BAD[case]
    stack = rollout(native)
    change(stack, native)
    violations = local_pack.analyze(stack)
    assert found(violations) == _expected(expect, native), [v.message for v in violations]
    assert {v.enforcement_level for v in violations} == {"advisory"}


@pytest.mark.parametrize("native", [False, True], ids=["aws", "native"])
@pytest.mark.parametrize("case", sorted(GOOD))
def test_compliant_variants_stay_clean(local_pack, native, case):
    stack = rollout(native)
    GOOD[case](stack, native)
    violations = local_pack.analyze(stack)
    assert found(violations) == set(), [v.message for v in violations]


@pytest.mark.parametrize("native", [False, True], ids=["aws", "native"])
def test_rolling_is_left_to_gpu_deploy_headroom(local_pack, native):
    # A too-small pool with ROLLING: only today's headroom rule speaks (maximumPercent 200: 2
    # instances at the peak, maxSize 1), never the rollout rule.
    stack = rollout(native, "ROLLING")
    _gpus_per_task(3)(stack, native)
    if native:
        deploy = dict(stack["n-llm"].inputs["deploymentConfiguration"], maximumPercent=200.0)
        stack.set("n-llm", deploymentConfiguration=deploy)
    else:
        stack.set("llm", deploymentMaximumPercent=200.0)
    assert found(local_pack.analyze(stack)) == _expected({(HEADROOM, "svc")}, native)


def test_capacity_message_names_the_numbers(local_pack):
    stack = rollout(False)
    _gpus_per_task(3)(stack, False)
    (violation,) = local_pack.analyze(stack)
    assert "2 x 1 task(s) x 3 GPU(s) = 6 GPUs" in violation.message
    assert "1 x 4 = 4 GPUs" in violation.message


def test_unknown_instance_type_cannot_be_verified(local_pack):
    stack = rollout(False).set("gpu-lt", instanceType="x9.huge")
    violations = local_pack.analyze(stack)
    assert found(violations) == {(NOTES, "llm")}
    assert "cannot verify" in violations[0].message and "x9.huge" in violations[0].message


def _by_reference(stack: Stack, test_actions: list[dict[str, Any]]) -> Stack:
    """Rule ARNs unknown at preview: both rules recorded under the service's loadBalancers."""
    stack.set("prod-rule", arn=...).set("test-rule", arn=..., actions=test_actions)
    _advanced(productionListenerRule=UNKNOWN, testListenerRule=UNKNOWN)(stack, False)
    deps = dict(stack["llm"].property_dependencies)
    deps["loadBalancers"] = (*deps["loadBalancers"], stack["prod-rule"].urn, stack["test-rule"].urn)
    return stack.replace("llm", property_dependencies=deps)


def test_rules_by_reference_that_authenticate_alike_pass(local_pack):
    stack = _by_reference(rollout(False), [_jwt(False), forward()])
    assert found(local_pack.analyze(stack)) == set()


def test_rules_by_reference_that_differ_cannot_be_verified(local_pack):
    stack = _by_reference(rollout(False), [forward()])
    assert found(local_pack.analyze(stack)) == {(NOTES, "llm")}


def test_gpu_table_matches_the_program_catalog():
    nvidia = {
        name: t.accelerator_count
        for name, t in catalog.INSTANCE_TYPES.items()
        if t.accelerator == "nvidia"
    }
    assert nvidia == GPUS_PER_INSTANCE_TYPE


#: Each part of a rollout a verdict reads, every property ``[secret]``: the rule says so.
SECRET_SUBJECTS = {
    "svc": {CAPACITY, TEST_RULE},
    "prod-rule": {TEST_RULE},
    "test-rule": {TEST_RULE},
    "gpu-lt": {CAPACITY},
    "asg": {CAPACITY},
    "td": {CAPACITY},
}


@pytest.mark.parametrize("native", [False, True], ids=["aws", "native"])
@pytest.mark.parametrize("part", sorted(SECRET_SUBJECTS))
def test_a_secret_part_of_a_rollout_is_never_passed_in_silence(local_pack, native, part):
    name = _names(native).get(part, part)
    violations = local_pack.analyze(_secret_everywhere(rollout(native), name))
    for policy in sorted(SECRET_SUBJECTS[part]):
        assert _speaks(violations, policy), (policy, [v.message for v in violations])


@pytest.mark.parametrize("native", [False, True], ids=["aws", "native"])
def test_an_unset_deployment_configuration_unknown_at_preview_is_rolling(local_pack, native):
    # A first preview shows the unset Optional+Computed block unknown: ROLLING, not undecided.
    stack = (native_baseline() if native else aws_baseline()).copy()
    stack.set(_names(native)["svc"], deploymentConfiguration=UNKNOWN)
    violations = local_pack.analyze(stack)
    assert not [v for v in violations if v.policy_name in (CAPACITY, TEST_RULE)], [
        v.message for v in violations
    ]


def test_instance_types_unknown_at_preview_cannot_be_verified(local_pack):
    # A first preview: the group's mixed-instances block is set from the template's output.
    stack = rollout(False).set("gpu-asg", launchTemplate=..., mixedInstancesPolicy=UNKNOWN)
    stack.replace("gpu-asg", property_dependencies={"mixedInstancesPolicy": (stack["gpu-lt"].urn,)})
    violations = local_pack.analyze(stack)
    assert found(violations) == {(NOTES, "llm")}
    assert "unknown at preview" in violations[0].message


def _issuer_from(stack: Stack, rule: str, pool: str) -> None:
    """``rule``'s issuer and JWKS endpoint unknown at preview, outputs of user pool ``pool``."""
    stack.set(rule, actions=[_jwt(False, UNKNOWN, UNKNOWN), forward()])
    stack.replace(rule, property_dependencies={"actions": (stack[pool].urn, stack["llm-tg"].urn)})


@pytest.mark.parametrize(
    ("test_pool", "expect"), [("pool", set()), ("other", {(TEST_RULE, "llm")})]
)
def test_an_issuer_unknown_at_preview_compares_by_its_source(local_pack, test_pool, expect):
    stack = rollout(False)
    for name in ("pool", "other"):
        stack.add("aws:cognito/userPool:UserPool", name, {"name": name})
    _issuer_from(stack, "prod-rule", "pool")
    _issuer_from(stack, "test-rule", test_pool)
    violations = local_pack.analyze(stack)
    assert found(violations) == expect, [v.message for v in violations]
