"""Every rule of the pack, judged in process (``pack_harness``), with pulumi-aws shapes.

The baseline stack is compliant; each variant changes one thing and must produce exactly the
listed violations (policy name, resource name) and nothing else.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from tests.policy.policy_stacks import (
    HUB_OFFLINE,
    LB,
    LISTENER,
    RERANKER,
    SG,
    SG_RULE,
    UNKNOWN,
    VLLM,
    Stack,
    aws_baseline,
    container_json,
    forward,
    found,
)


def test_baseline_is_compliant(local_pack):
    assert local_pack.analyze(aws_baseline()) == []


def _rerank_container(**changes) -> Callable[[Stack], None]:
    def change(s: Stack) -> None:
        s.set("rerank-td", containerDefinitions=container_json({**RERANKER, **changes}))

    return change


def _llm_env(*env) -> Callable[[Stack], None]:
    def change(s: Stack) -> None:
        s.set(
            "llm-td",
            containerDefinitions=container_json({**VLLM, "environment": [*env, HUB_OFFLINE]}),
        )

    return change


def _add_public_nlb(
    port: float, internal: bool = False, forwards: bool = True
) -> Callable[[Stack], None]:
    """An NLB listener on ``port`` forwarding (or not) to the re-ranker's target group."""

    def change(s: Stack) -> None:
        s.add(LB, "nlb", {"internal": internal, "loadBalancerType": "network"})
        actions = [forward(1.0)] if forwards else []
        refs = {"loadBalancerArn": "nlb", **({"defaultActions": "rerank-tg"} if forwards else {})}
        s.add(
            LISTENER,
            "nlb-tcp",
            {
                "loadBalancerArn": UNKNOWN,
                "port": port,
                "protocol": "TCP",
                "defaultActions": actions,
            },
            refs=refs,
        )

    return change


def _task_sg(
    *ingress: dict, public_ip: bool = False, rule: dict | None = None
) -> Callable[[Stack], None]:
    """A security group ``task-sg`` (inline ``ingress``, or a standalone ``rule``) attached to
    the re-ranker's tasks."""

    def change(s: Stack) -> None:
        s.add(SG, "task-sg", {"vpcId": UNKNOWN, "ingress": list(ingress)})
        if rule is not None:
            s.add(
                SG_RULE,
                "task-rule",
                {"type": "ingress", "securityGroupId": UNKNOWN, **rule},
                refs={"securityGroupId": "task-sg"},
            )
        s.set(
            "rerank",
            networkConfiguration={
                "subnets": ["a"],
                "assignPublicIp": public_ip,
                "securityGroups": [UNKNOWN],
            },
        )
        deps = dict(s["rerank"].property_dependencies)
        deps["networkConfiguration"] = (s["task-sg"].urn,)
        s.replace("rerank", property_dependencies=deps)

    return change


def _open(port: float, cidr: str = "0.0.0.0/0") -> dict:
    key = "ipv6CidrBlocks" if ":" in cidr else "cidrBlocks"
    return {"protocol": "tcp", "fromPort": port, "toPort": port, key: [cidr]}


def _fargate_spot_llm(s: Stack) -> None:
    s.set("llm", capacityProviderStrategies=[{"capacityProvider": "FARGATE_SPOT", "weight": 1.0}])
    deps = dict(s["llm"].property_dependencies)
    deps.pop("capacityProviderStrategies")
    s.replace("llm", property_dependencies=deps)


def _large_rerank(platform: str) -> Callable[[Stack], None]:
    def change(s: Stack) -> None:
        s.set("rerank-td", cpu="8192", memory="16384")
        s.set("rerank", platformVersion=platform)

    return change


GPU = [{"type": "GPU", "value": "1"}]
NEURON = {"devices": [{"hostPath": "/dev/neuron0", "containerPath": "/dev/neuron0"}]}
HOST = "no-accelerators-or-host-features-on-fargate"
ON_FARGATE = "no-gpu-task-on-fargate-service"
#: A Fargate-refused parameter on the re-ranker: its task definition and the service running it.
RERANK_REFUSED = {(HOST, "rerank-td"), (ON_FARGATE, "rerank")}
GRID = "fargate-task-size-on-grid"
PLATFORM = "fargate-platform-version-for-large-tasks"
PUBLIC_IP = "no-reachable-public-ip"
INGRESS = "no-internet-ingress-to-unauthenticated-target"
AUTH = "no-unauthenticated-internet-path"
NOTES = "guardrail-notes"

VARIANTS: dict[str, tuple[Callable[[Stack], None], set]] = {
    # no accelerators or host features on Fargate, no GPU task on a Fargate service
    "fargate-gpu": (
        _rerank_container(resourceRequirements=GPU),
        RERANK_REFUSED,
    ),
    "fargate-neuron-device": (
        _rerank_container(linuxParameters=NEURON),
        RERANK_REFUSED,
    ),
    "fargate-privileged": (
        _rerank_container(privileged=True),
        RERANK_REFUSED,
    ),
    "fargate-ipc-mode": (
        lambda s: s.set("rerank-td", ipcMode="host"),
        RERANK_REFUSED,
    ),
    "fargate-placement": (
        lambda s: s.set(
            "rerank-td",
            placementConstraints=[{"type": "memberOf", "expression": "attribute:x == y"}],
        ),
        RERANK_REFUSED,
    ),
    "fargate-docker-volume": (
        lambda s: s.set(
            "rerank-td",
            volumes=[{"name": "cache", "dockerVolumeConfiguration": {"scope": "task"}}],
        ),
        RERANK_REFUSED,
    ),
    "gpu-service-launch-type-fargate": (
        lambda s: s.set("llm", launchType="FARGATE", capacityProviderStrategies=...),
        {(ON_FARGATE, "llm")},
    ),
    "gpu-service-fargate-spot-provider": (_fargate_spot_llm, {(ON_FARGATE, "llm")}),
    # Fargate grid and platform version
    "grid-memory-off": (lambda s: s.set("rerank-td", memory="3000"), {(GRID, "rerank-td")}),
    "grid-cpu-off": (lambda s: s.set("rerank-td", cpu="3072"), {(GRID, "rerank-td")}),
    "grid-memory-too-big": (lambda s: s.set("rerank-td", memory="17408"), {(GRID, "rerank-td")}),
    "grid-missing-memory": (lambda s: s.set("rerank-td", memory=...), {(GRID, "rerank-td")}),
    "grid-8vcpu-step": (
        lambda s: s.set("rerank-td", cpu="8192", memory="18432"),
        {(GRID, "rerank-td")},
    ),
    "platform-1.3-large-task": (_large_rerank("1.3.0"), {(PLATFORM, "rerank")}),
    # unauthenticated internet-facing endpoints
    "public-ip-open-sg": (
        _task_sg(_open(8080.0), public_ip=True),
        {(PUBLIC_IP, "rerank"), (INGRESS, "task-sg")},
    ),
    "public-ip-default-sg-cannot-verify": (
        lambda s: s.set("rerank", networkConfiguration={"subnets": ["a"], "assignPublicIp": True}),
        {(NOTES, "rerank")},
    ),
    "task-sg-open-any-port": (_task_sg(_open(22.0)), {(INGRESS, "task-sg")}),
    "task-sg-open-ipv6-model-port": (_task_sg(_open(8080.0, "::/0")), {(INGRESS, "task-sg")}),
    "task-sg-rule-all-ports": (
        _task_sg(
            rule={"protocol": "-1", "fromPort": 0.0, "toPort": 0.0, "cidrBlocks": ["0.0.0.0/0"]}
        ),
        {(INGRESS, "task-rule")},
    ),
    "sg-ingress-rule-unknown-group": (
        lambda s: s.set("task-from-alb", cidrIpv4="0.0.0.0/0", referencedSecurityGroupId=...),
        {(NOTES, "task-from-alb")},
    ),
    "public-nlb-any-port": (_add_public_nlb(9443.0), {(AUTH, "nlb-tcp")}),
    "public-alb-open-sg-forward-without-auth": (
        lambda s: (
            s.set("alb", internal=False),
            s.set("alb-sg", ingress=[_open(443.0)]),
            s.set("llm-browser", actions=[forward(1.0)]),
        ),
        {(AUTH, "llm-browser"), (INGRESS, "alb-sg")},
    ),
    # advisories
    "idle-timeout-short": (
        lambda s: s.set("alb", idleTimeout=120.0),
        {("alb-idle-timeout-for-streaming", "alb")},
    ),
    "idle-timeout-unset": (
        lambda s: s.set("alb", idleTimeout=...),
        {("alb-idle-timeout-for-streaming", "alb")},
    ),
    "grace-missing": (
        lambda s: s.set("llm", healthCheckGracePeriodSeconds=...),
        {("health-check-grace-period", "llm")},
    ),
    "grace-short": (
        lambda s: s.set("rerank", healthCheckGracePeriodSeconds=30.0),
        {("health-check-grace-period", "rerank")},
    ),
    "circuit-breaker-no-rollback": (
        lambda s: s.set("rerank", deploymentCircuitBreaker={"enable": True, "rollback": False}),
        {("deployment-circuit-breaker-rollback", "rerank")},
    ),
    "circuit-breaker-missing": (
        lambda s: s.set("llm", deploymentCircuitBreaker=...),
        {("deployment-circuit-breaker-rollback", "llm")},
    ),
    "scale-in-faster": (
        lambda s: s.set(
            "llm-scaling",
            targetTrackingScalingPolicyConfiguration={
                "targetValue": 30.0,
                "scaleInCooldown": 30.0,
                "scaleOutCooldown": 60.0,
            },
        ),
        {("scale-out-faster-than-scale-in", "llm-scaling")},
    ),
    "no-cooldowns": (
        lambda s: s.set(
            "llm-scaling", targetTrackingScalingPolicyConfiguration={"targetValue": 30.0}
        ),
        {("scale-out-faster-than-scale-in", "llm-scaling")},
    ),
    "deregistration-short": (
        lambda s: s.set("llm-tg", deregistrationDelay=30.0),
        {("deregistration-delay-covers-streams", "llm-tg")},
    ),
    "deregistration-default": (
        lambda s: s.set("rerank-tg", deregistrationDelay=...),
        {("deregistration-delay-covers-streams", "rerank-tg")},
    ),
    # The owner states the service's longest request: a 45 s delay behind a 900 s ALB is right
    # for a 30 s re-ranker, and wrong for one whose requests last 60 s.
    "deregistration-covers-stated-longest-request": (
        lambda s: s.set(
            "rerank-tg", deregistrationDelay=45.0, tags={"ml:max-request-seconds": "30"}
        ),
        set(),
    ),
    "deregistration-below-stated-longest-request": (
        lambda s: s.set(
            "rerank-tg", deregistrationDelay=45.0, tags={"ml:max-request-seconds": "60"}
        ),
        {("deregistration-delay-covers-streams", "rerank-tg")},
    ),
    "deregistration-unreadable-tag-falls-back-to-idle-timeout": (
        lambda s: s.set(
            "rerank-tg", deregistrationDelay=45.0, tags={"ml:max-request-seconds": "long"}
        ),
        {("deregistration-delay-covers-streams", "rerank-tg")},
    ),
    "target-type-instance": (
        lambda s: s.set("rerank-tg", targetType="instance"),
        {("target-type-ip-for-awsvpc", "rerank-tg")},
    ),
    "plaintext-secret": (
        _llm_env({"name": "OPENAI_API_KEY", "value": "sk-live-123"}),
        {("no-plaintext-secrets-in-environment", "llm-td")},
    ),
    "gpu-headroom": (
        lambda s: s.set("gpu-asg", maxSize=3.0),
        {("gpu-deploy-headroom", "llm")},
    ),
}


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_one_change_one_violation(local_pack, variant):
    change, expected = VARIANTS[variant]
    stack = aws_baseline().copy()
    change(stack)
    violations = local_pack.analyze(stack)
    assert found(violations) == expected, [v.message for v in violations]
    mandatory = {v.policy_name for v in violations if v.enforcement_level == "mandatory"}
    assert all(p in mandatory for p, _ in expected if p in MANDATORY)


MANDATORY = {HOST, ON_FARGATE, GRID, PLATFORM, PUBLIC_IP, INGRESS, AUTH}

COMPLIANT_CHANGES: dict[str, Callable[[Stack], None]] = {
    "internal-nlb-serving-port": _add_public_nlb(8000.0, internal=True),
    "public-nlb-without-forward": _add_public_nlb(8000.0, forwards=False),
    "public-ip-closed-sg": _task_sg(_open(8080.0, "10.0.0.0/8"), public_ip=True),
    "internal-alb-sg-open-443": lambda s: s.set("alb-sg", ingress=[_open(443.0)]),
    "public-authenticated-alb-sg-open-443": lambda s: (
        s.set("alb", internal=False),
        s.set("alb-sg", ingress=[_open(443.0), _open(443.0, "::/0")]),
    ),
    "sg-open-on-ssh-only": lambda s: s.set(
        "alb-sg",
        ingress=[
            {"protocol": "tcp", "fromPort": 22.0, "toPort": 22.0, "cidrBlocks": ["0.0.0.0/0"]}
        ],
    ),
    "sg-open-icmp": lambda s: s.set(
        "alb-sg",
        ingress=[
            {"protocol": "icmp", "fromPort": -1.0, "toPort": -1.0, "cidrBlocks": ["0.0.0.0/0"]}
        ],
    ),
    "fargate-large-task-latest": _large_rerank("LATEST"),
    "fargate-large-task-1.4": _large_rerank("1.4.0"),
    "grid-vcpu-units": lambda s: s.set("rerank-td", cpu="2 vCPU", memory="8 GB"),
    "grid-32vcpu-244gb": lambda s: s.set("rerank-td", cpu="32768", memory=str(244 * 1024)),
    # The same service on an ECS Managed Instances provider: no group maximum to exceed, even
    # though the (now unused) ASG is still linked and too small.
    "headroom-managed-instances": lambda s: (
        s.set("gpu-asg", maxSize=1.0),
        s.set(
            "gpu-cp",
            autoScalingGroupProvider=...,
            managedInstancesProvider={"infrastructureRoleArn": UNKNOWN},
        ),
        s.set("llm-td", requiresCompatibilities=["MANAGED_INSTANCES"]),
    ),
    "headroom-max-percent-100": lambda s: (
        s.set("gpu-asg", maxSize=2.0),
        s.set("llm", deploymentMaximumPercent=100.0),
    ),
    "secret-looking-but-allowed-names": _llm_env(
        {"name": "TOKENIZERS_PARALLELISM", "value": "false"},
        {"name": "MAX_NUM_BATCHED_TOKENS", "value": "8192"},
        {"name": "HF_TOKEN", "value": ""},
    ),
    "scale-in-disabled": lambda s: s.set(
        "llm-scaling",
        targetTrackingScalingPolicyConfiguration={"targetValue": 30.0, "disableScaleIn": True},
    ),
    "code-deploy-controller": lambda s: s.set(
        "rerank", deploymentController={"type": "CODE_DEPLOY"}, deploymentCircuitBreaker=...
    ),
}


@pytest.mark.parametrize("variant", sorted(COMPLIANT_CHANGES))
def test_compliant_changes_stay_clean(local_pack, variant):
    stack = aws_baseline().copy()
    COMPLIANT_CHANGES[variant](stack)
    assert found(local_pack.analyze(stack)) == set()


# --- internet-facing ALB: every forwarding listener / rule must authenticate first -----------


def _public() -> Stack:
    return aws_baseline().copy().set("alb", internal=False)


def test_internet_facing_alb_with_auth_everywhere_is_compliant(local_pack):
    assert local_pack.analyze(_public()) == []


@pytest.mark.parametrize(
    ("name", "actions"),
    [
        ("llm-browser", [forward(1.0)]),
        ("llm-api", [forward(1.0), {"type": "jwt-validation", "order": 2.0}]),
        ("rerank-route", [{"type": "forward", "targetGroupArn": UNKNOWN}]),
    ],
)
def test_public_rule_forwarding_without_auth(local_pack, name, actions):
    stack = _public().set(name, actions=actions)
    violations = local_pack.analyze(stack)
    assert found(violations) == {(AUTH, name)}
    assert violations[0].enforcement_level == "mandatory"
    assert violations[0].stage == "stack"


def test_public_listener_default_forward_without_auth(local_pack):
    stack = _public().set("https", defaultActions=[forward(1.0)])
    deps = {**stack["https"].property_dependencies, "defaultActions": (stack["llm-tg"].urn,)}
    stack.replace("https", property_dependencies=deps)
    assert found(local_pack.analyze(stack)) == {(AUTH, "https")}


def test_forward_to_an_untraceable_target_group_is_judged_and_noted(local_pack):
    # The target group ARN is unknown and no dependency says which group it is: the route is
    # still unauthenticated (a violation), and the pack says what it could not follow.
    stack = _public().set("https", defaultActions=[forward(1.0)])
    violations = local_pack.analyze(stack)
    assert found(violations) == {(AUTH, "https"), (NOTES, "https")}
    note = next(v for v in violations if v.policy_name == NOTES)
    assert "cannot verify" in note.message and "defaultActions" in note.message


def test_internal_alb_may_forward_without_auth(local_pack):
    stack = aws_baseline().copy().set("llm-browser", actions=[forward(1.0)])
    assert found(local_pack.analyze(stack)) == set()


def test_violation_messages_say_what_and_how_to_fix(local_pack):
    stack = aws_baseline().copy()
    _rerank_container(resourceRequirements=GPU)(stack)
    by_policy = {v.policy_name: v for v in local_pack.analyze(stack)}
    host = by_policy[HOST]
    assert "GPU=1" in host.message and "rerank" in host.message
    assert "Fix:" in host.description
    assert host.urn.endswith("::rerank-td") and host.stage == "resource"
    assert json.loads(stack["rerank-td"].inputs["containerDefinitions"])[0]["name"] == "reranker"
