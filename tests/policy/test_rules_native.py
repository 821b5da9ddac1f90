"""The rules against pulumi-aws-native (CloudFormation) shapes, judged in process.

aws-native gives container definitions as a list of objects, load balancer and target group
settings as ``{key, value}`` attribute lists, ``scheme`` instead of ``internal``,
``capacityProviderStrategy`` (singular), ``awsvpcConfiguration.assignPublicIp`` as
ENABLED/DISABLED and numbers that CloudFormation types as strings.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.policy.policy_stacks import (
    HUB_OFFLINE,
    N_INGRESS,
    N_SG,
    RERANKER,
    UNKNOWN,
    VLLM,
    Stack,
    found,
    native_baseline,
)


def test_native_baseline_is_compliant(local_pack):
    assert local_pack.analyze(native_baseline()) == []


def _rerank(**changes) -> Callable[[Stack], None]:
    return lambda s: s.set("n-rerank-td", containerDefinitions=[{**RERANKER, **changes}])


PATH = "no-unauthenticated-internet-path"
SG = "no-internet-ingress-to-unauthenticated-target"
PIP = "no-reachable-public-ip"
NOTES = "guardrail-notes"


def _open_task_sg(port: float, public_ip: str = "DISABLED", **cidr) -> Callable[[Stack], None]:
    """A security group open to ``cidr`` on ``port``, attached to the re-ranker's tasks."""

    def change(s: Stack) -> None:
        rule = {"ipProtocol": "tcp", "fromPort": port, "toPort": port, **cidr}
        s.add(N_SG, "n-task-sg", {"groupDescription": "tasks", "securityGroupIngress": [rule]})
        s.set(
            "n-rerank",
            networkConfiguration={
                "awsvpcConfiguration": {
                    "subnets": ["a"],
                    "assignPublicIp": public_ip,
                    "securityGroups": [UNKNOWN],
                }
            },
        )
        deps = dict(s["n-rerank"].property_dependencies)
        deps["networkConfiguration"] = (s["n-task-sg"].urn,)
        s.replace("n-rerank", property_dependencies=deps)

    return change


def _public_alb(s: Stack) -> None:
    s.set("n-alb", scheme=...)  # CloudFormation's default scheme is internet-facing


def _public_alb_forward_only(s: Stack) -> None:
    _public_alb(s)
    s.set("n-llm-api", actions=[{"type": "forward", "order": 1.0, "targetGroupArn": UNKNOWN}])


VARIANTS: dict[str, tuple[Callable[[Stack], None], set]] = {
    "fargate-gpu": (
        _rerank(resourceRequirements=[{"type": "GPU", "value": "1"}]),
        {
            ("no-accelerators-or-host-features-on-fargate", "n-rerank-td"),
            ("no-gpu-task-on-fargate-service", "n-rerank"),
        },
    ),
    "fargate-privileged": (
        _rerank(privileged=True),
        {
            ("no-accelerators-or-host-features-on-fargate", "n-rerank-td"),
            ("no-gpu-task-on-fargate-service", "n-rerank"),
        },
    ),
    "fargate-inference-accelerator": (
        lambda s: s.set(
            "n-rerank-td", inferenceAccelerators=[{"deviceName": "a", "deviceType": "x"}]
        ),
        {
            ("no-accelerators-or-host-features-on-fargate", "n-rerank-td"),
            ("no-gpu-task-on-fargate-service", "n-rerank"),
        },
    ),
    "gpu-service-on-fargate-provider": (
        lambda s: s.set("n-llm", capacityProviderStrategy=[{"capacityProvider": "FARGATE"}]),
        {("no-gpu-task-on-fargate-service", "n-llm")},
    ),
    "grid-1vcpu-1gb": (
        lambda s: s.set("n-rerank-td", memory="1 GB"),
        {("fargate-task-size-on-grid", "n-rerank-td")},
    ),
    "public-ip-enabled-open-sg": (
        _open_task_sg(8080.0, "ENABLED", cidrIp="0.0.0.0/0"),
        {(PIP, "n-rerank"), (SG, "n-task-sg")},
    ),
    "public-ip-enabled-no-security-group": (
        lambda s: s.set(
            "n-rerank",
            networkConfiguration={
                "awsvpcConfiguration": {"subnets": ["a"], "assignPublicIp": "ENABLED"}
            },
        ),
        {(NOTES, "n-rerank")},
    ),
    "task-sg-open-ipv6": (_open_task_sg(8080.0, cidrIpv6="::/0"), {(SG, "n-task-sg")}),
    "public-alb-forward-without-auth": (_public_alb_forward_only, {(PATH, "n-llm-api")}),
    "sg-open-8000-attached-to-nothing": (
        lambda s: s.set(
            "n-alb-sg",
            securityGroupIngress=[
                {"ipProtocol": "tcp", "fromPort": 8000.0, "toPort": 8000.0, "cidrIp": "0.0.0.0/0"}
            ],
        ),
        {(NOTES, "n-alb-sg")},
    ),
    "sg-ingress-ollama-ipv6": (
        lambda s: s.add(
            N_INGRESS,
            "n-ollama",
            {
                "groupId": UNKNOWN,
                "ipProtocol": "tcp",
                "fromPort": 11434.0,
                "toPort": 11434.0,
                "cidrIpv6": "::/0",
            },
        ),
        {(NOTES, "n-ollama")},
    ),
    "idle-timeout-attribute-60": (
        lambda s: s.set(
            "n-alb",
            loadBalancerAttributes=[{"key": "idle_timeout.timeout_seconds", "value": "60"}],
        ),
        {("alb-idle-timeout-for-streaming", "n-alb")},
    ),
    "deregistration-attribute-30": (
        lambda s: s.set(
            "n-llm-tg",
            targetGroupAttributes=[{"key": "deregistration_delay.timeout_seconds", "value": "30"}],
        ),
        {("deregistration-delay-covers-streams", "n-llm-tg")},
    ),
    "deregistration-attribute-30-stated-20": (
        lambda s: s.set(
            "n-llm-tg",
            targetGroupAttributes=[{"key": "deregistration_delay.timeout_seconds", "value": "30"}],
            tags=[{"key": "ml:max-request-seconds", "value": "20"}],
        ),
        set(),
    ),
    "deregistration-attribute-30-stated-120": (
        lambda s: s.set(
            "n-llm-tg",
            targetGroupAttributes=[{"key": "deregistration_delay.timeout_seconds", "value": "30"}],
            tags=[{"key": "ml:max-request-seconds", "value": "120"}],
        ),
        {("deregistration-delay-covers-streams", "n-llm-tg")},
    ),
    "target-type-instance": (
        lambda s: s.set("n-llm-tg", targetType="instance"),
        {("target-type-ip-for-awsvpc", "n-llm-tg")},
    ),
    "circuit-breaker-missing": (
        lambda s: s.set("n-llm", deploymentConfiguration={"maximumPercent": 200.0}),
        {("deployment-circuit-breaker-rollback", "n-llm")},
    ),
    "grace-missing": (
        lambda s: s.set("n-llm", healthCheckGracePeriodSeconds=...),
        {("health-check-grace-period", "n-llm")},
    ),
    "scale-in-faster": (
        lambda s: s.set(
            "n-llm-scaling",
            targetTrackingScalingPolicyConfiguration={
                "targetValue": 30.0,
                "scaleInCooldown": 10.0,
                "scaleOutCooldown": 60.0,
            },
        ),
        {("scale-out-faster-than-scale-in", "n-llm-scaling")},
    ),
    "plaintext-secret-list-shape": (
        lambda s: s.set(
            "n-llm-td",
            containerDefinitions=[
                {
                    **VLLM,
                    "environment": [{"name": "DB_PASSWORD", "value": "hunter2"}, HUB_OFFLINE],
                }
            ],
        ),
        {("no-plaintext-secrets-in-environment", "n-llm-td")},
    ),
    "gpu-headroom-string-max-size": (
        lambda s: s.set("n-gpu-asg", maxSize="3"),
        {("gpu-deploy-headroom", "n-llm")},
    ),
}


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_native_one_change(local_pack, variant):
    change, expected = VARIANTS[variant]
    stack = native_baseline().copy()
    change(stack)
    violations = local_pack.analyze(stack)
    assert found(violations) == expected, [v.message for v in violations]


def test_native_internet_facing_alb_with_jwt_is_compliant(local_pack):
    stack = native_baseline().copy()
    _public_alb(stack)
    assert found(local_pack.analyze(stack)) == set()
