"""Resource records and reference stacks for the policy pack tests.

Resources are plain ``Res`` records with the attributes the offline preview's recorder
produces (type, name, urn, custom, inputs, parent, dependencies, provider,
property_dependencies); inputs use pulumi-aws / aws-native camelCase keys and floats for
numbers, as the SDK registers them. ``UNKNOWN`` is the engine's unknown sentinel, used where a
preview cannot know a value (ARNs, ids).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from pulumi.runtime.rpc import UNKNOWN

from tools.analyzer_client import PolicyViolation


@dataclass(frozen=True)
class Res:
    """A recorded resource registration (duck-types tools.recording.RecordedResource)."""

    type: str
    name: str
    urn: str
    custom: bool
    inputs: dict
    parent: str | None = None
    dependencies: tuple[str, ...] = ()
    provider: str | None = None
    property_dependencies: dict[str, tuple[str, ...]] = field(default_factory=dict)


def urn_of(type_: str, name: str) -> str:
    """URN of a top-level resource in stack ``dev`` of project ``ecs-inference``."""
    return f"urn:pulumi:dev::ecs-inference::{type_}::{name}"


class Stack:
    """An ordered set of resources that tests copy and change one thing at a time."""

    def __init__(self, resources: Iterable[Res] = ()) -> None:
        self._items: dict[str, Res] = {r.name: r for r in resources}

    def add(
        self, type_: str, name: str, inputs: dict[str, Any], *, refs: dict[str, Any] | None = None
    ) -> Res:
        """Register a custom resource; ``refs`` maps an input key to the resource name(s) it
        refers to (recorded as property dependencies and dependencies, value left unknown
        unless ``inputs`` sets it)."""
        prop_deps: dict[str, tuple[str, ...]] = {}
        for key, targets in (refs or {}).items():
            names = [targets] if isinstance(targets, str) else list(targets)
            prop_deps[key] = tuple(self._items[n].urn for n in names)
        deps = tuple(dict.fromkeys(u for urns in prop_deps.values() for u in urns))
        if name in self._items:
            raise ValueError(f"duplicate resource name {name!r}")
        res = Res(
            type=type_,
            name=name,
            urn=urn_of(type_, name),
            custom=True,
            inputs=inputs,
            dependencies=deps,
            property_dependencies=prop_deps,
        )
        self._items[name] = res
        return res

    def __getitem__(self, name: str) -> Res:
        return self._items[name]

    def __iter__(self) -> Iterator[Res]:
        return iter(self._items.values())

    def copy(self) -> Stack:
        """A copy whose resources can be replaced without touching this one."""
        return Stack(dataclasses.replace(r, inputs=json.loads(json.dumps(r.inputs))) for r in self)

    def set(self, name: str, **changes: Any) -> Stack:
        """Replace top-level inputs of ``name`` (a value of ``...`` deletes the key)."""
        res = self._items[name]
        inputs = dict(res.inputs)
        for key, value in changes.items():
            if value is ...:
                inputs.pop(key, None)
            else:
                inputs[key] = value
        self._items[name] = dataclasses.replace(res, inputs=inputs)
        return self

    def replace(self, name: str, **fields: Any) -> Stack:
        """Replace record fields of ``name`` (e.g. property_dependencies)."""
        self._items[name] = dataclasses.replace(self._items[name], **fields)
        return self


def container_json(*containers: dict[str, Any]) -> str:
    """pulumi-aws containerDefinitions: a JSON string in the RegisterTaskDefinition shape."""
    return json.dumps(list(containers))


def found(violations: Iterable[PolicyViolation], *, level: str | None = None) -> set:
    """{(policy, resource name)} for the violations (the name is the URN's last segment)."""
    return {
        (v.policy_name, v.urn.rsplit("::", 1)[-1] if v.urn else None)
        for v in violations
        if level is None or v.enforcement_level == level
    }


# --- reference stacks ------------------------------------------------------------------------

TD = "aws:ecs/taskDefinition:TaskDefinition"
SVC = "aws:ecs/service:Service"
LB = "aws:lb/loadBalancer:LoadBalancer"
LISTENER = "aws:lb/listener:Listener"
RULE = "aws:lb/listenerRule:ListenerRule"
TG = "aws:lb/targetGroup:TargetGroup"
SG = "aws:ec2/securityGroup:SecurityGroup"
SG_INGRESS = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"
SG_RULE = "aws:ec2/securityGroupRule:SecurityGroupRule"
POLICY = "aws:appautoscaling/policy:Policy"
ASG = "aws:autoscaling/group:Group"
CP = "aws:ecs/capacityProvider:CapacityProvider"

#: The engines load staged weights and never reach the hub (no-hub-weights-at-task-start).
HUB_OFFLINE = {"name": "HF_HUB_OFFLINE", "value": "1"}
VLLM = {
    "name": "vllm",
    "image": "123456789012.dkr.ecr.us-east-1.amazonaws.com/vllm:0.9",
    "essential": True,
    "portMappings": [{"containerPort": 8000, "protocol": "tcp"}],
    "resourceRequirements": [{"type": "GPU", "value": "1"}],
    "environment": [
        {"name": "MAX_NUM_BATCHED_TOKENS", "value": "8192"},
        {"name": "TOKENIZERS_PARALLELISM", "value": "false"},
        HUB_OFFLINE,
    ],
    "secrets": [{"name": "HF_TOKEN", "valueFrom": "arn:aws:secretsmanager:us-east-1:1:secret:hf"}],
}
RERANKER = {
    "name": "reranker",
    "image": "123456789012.dkr.ecr.us-east-1.amazonaws.com/reranker:1.0",
    "essential": True,
    "portMappings": [{"containerPort": 8080, "protocol": "tcp"}],
    "ulimits": [{"name": "nofile", "softLimit": 65535, "hardLimit": 65535}],
}
JWT = {"type": "jwt-validation", "order": 1.0, "jwtValidation": {"issuer": "https://idp"}}
COGNITO = {
    "type": "authenticate-cognito",
    "order": 1.0,
    "authenticateCognito": {"userPoolArn": UNKNOWN, "userPoolClientId": UNKNOWN},
}


def forward(order: float = 2.0) -> dict[str, Any]:
    """A forward action to a target group whose ARN is unknown at preview."""
    return {"type": "forward", "order": order, "targetGroupArn": UNKNOWN}


def aws_baseline() -> Stack:
    """A compliant pulumi-aws stack: internal ALB with JWT/Cognito auth, one GPU service on an
    EC2 capacity provider, one Fargate re-ranker, target tracking, a restricted SG."""
    s = Stack()
    s.add(
        SG,
        "alb-sg",
        {
            "vpcId": UNKNOWN,
            "ingress": [
                {
                    "protocol": "tcp",
                    "fromPort": 443.0,
                    "toPort": 443.0,
                    "cidrBlocks": ["10.0.0.0/8"],
                }
            ],
            "egress": [
                {"protocol": "tcp", "fromPort": 443.0, "toPort": 443.0, "cidrBlocks": ["0.0.0.0/0"]}
            ],
        },
    )
    s.add(
        SG_INGRESS,
        "task-from-alb",
        {
            "securityGroupId": UNKNOWN,
            "referencedSecurityGroupId": UNKNOWN,
            "ipProtocol": "tcp",
            "fromPort": 8000.0,
            "toPort": 8000.0,
        },
        refs={"referencedSecurityGroupId": "alb-sg"},
    )
    s.add(
        LB,
        "alb",
        {
            "internal": True,
            "loadBalancerType": "application",
            "idleTimeout": 900.0,
            "securityGroups": [UNKNOWN],
            "subnets": ["subnet-a", "subnet-b"],
        },
        refs={"securityGroups": "alb-sg"},
    )
    s.add(
        LISTENER,
        "https",
        {
            "loadBalancerArn": UNKNOWN,
            "port": 443.0,
            "protocol": "HTTPS",
            "defaultActions": [
                {"type": "fixed-response", "fixedResponse": {"contentType": "text/plain"}}
            ],
        },
        refs={"loadBalancerArn": "alb"},
    )
    s.add(
        TG,
        "llm-tg",
        {"port": 8000.0, "protocol": "HTTP", "targetType": "ip", "deregistrationDelay": 900.0},
    )
    s.add(
        RULE,
        "llm-api",
        {"listenerArn": UNKNOWN, "priority": 10.0, "actions": [JWT, forward()]},
        refs={"listenerArn": "https", "actions": "llm-tg"},
    )
    s.add(
        RULE,
        "llm-browser",
        {"listenerArn": UNKNOWN, "priority": 20.0, "actions": [COGNITO, forward()]},
        refs={"listenerArn": "https", "actions": "llm-tg"},
    )
    s.add(ASG, "gpu-asg", {"maxSize": 4.0, "minSize": 1.0, "protectFromScaleIn": True})
    s.add(
        CP,
        "gpu-cp",
        {"name": "gpu-cp", "autoScalingGroupProvider": {"autoScalingGroupArn": UNKNOWN}},
        refs={"autoScalingGroupProvider": "gpu-asg"},
    )
    s.add(
        TD,
        "llm-td",
        {
            "family": "llm",
            "requiresCompatibilities": ["EC2"],
            "networkMode": "awsvpc",
            "containerDefinitions": container_json(VLLM),
        },
    )
    s.add(
        SVC,
        "llm",
        {
            "cluster": UNKNOWN,
            "taskDefinition": UNKNOWN,
            "desiredCount": 2.0,
            "deploymentMaximumPercent": 200.0,
            "capacityProviderStrategies": [{"capacityProvider": UNKNOWN, "weight": 1.0}],
            "networkConfiguration": {"subnets": ["subnet-a"], "assignPublicIp": False},
            "loadBalancers": [
                {"targetGroupArn": UNKNOWN, "containerName": "vllm", "containerPort": 8000.0}
            ],
            "healthCheckGracePeriodSeconds": 600.0,
            "deploymentCircuitBreaker": {"enable": True, "rollback": True},
        },
        refs={
            "taskDefinition": "llm-td",
            "capacityProviderStrategies": "gpu-cp",
            "loadBalancers": "llm-tg",
        },
    )
    s.add(
        POLICY,
        "llm-scaling",
        {
            "policyType": "TargetTrackingScaling",
            "serviceNamespace": "ecs",
            "resourceId": UNKNOWN,
            "scalableDimension": "ecs:service:DesiredCount",
            "targetTrackingScalingPolicyConfiguration": {
                "targetValue": 30.0,
                "scaleInCooldown": 600.0,
                "scaleOutCooldown": 60.0,
                "predefinedMetricSpecification": {
                    "predefinedMetricType": "ALBRequestCountPerTarget"
                },
            },
        },
    )
    s.add(
        TG,
        "rerank-tg",
        {"port": 8080.0, "protocol": "HTTP", "targetType": "ip", "deregistrationDelay": 900.0},
    )
    s.add(
        RULE,
        "rerank-route",
        {"listenerArn": UNKNOWN, "priority": 30.0, "actions": [JWT, forward()]},
        refs={"listenerArn": "https", "actions": "rerank-tg"},
    )
    s.add(
        TD,
        "rerank-td",
        {
            "family": "rerank",
            "requiresCompatibilities": ["FARGATE"],
            "networkMode": "awsvpc",
            "cpu": "2048",
            "memory": "8192",
            "runtimePlatform": {"cpuArchitecture": "ARM64", "operatingSystemFamily": "LINUX"},
            "containerDefinitions": container_json(RERANKER),
        },
    )
    s.add(
        SVC,
        "rerank",
        {
            "cluster": UNKNOWN,
            "taskDefinition": UNKNOWN,
            "desiredCount": 2.0,
            "launchType": "FARGATE",
            "platformVersion": "LATEST",
            "networkConfiguration": {"subnets": ["subnet-a"], "assignPublicIp": False},
            "loadBalancers": [
                {"targetGroupArn": UNKNOWN, "containerName": "reranker", "containerPort": 8080.0}
            ],
            "healthCheckGracePeriodSeconds": 120.0,
            "deploymentCircuitBreaker": {"enable": True, "rollback": True},
        },
        refs={"taskDefinition": "rerank-td", "loadBalancers": "rerank-tg"},
    )
    return s


N_TD = "aws-native:ecs:TaskDefinition"
N_SVC = "aws-native:ecs:Service"
N_LB = "aws-native:elasticloadbalancingv2:LoadBalancer"
N_LISTENER = "aws-native:elasticloadbalancingv2:Listener"
N_RULE = "aws-native:elasticloadbalancingv2:ListenerRule"
N_TG = "aws-native:elasticloadbalancingv2:TargetGroup"
N_SG = "aws-native:ec2:SecurityGroup"
N_INGRESS = "aws-native:ec2:SecurityGroupIngress"
N_POLICY = "aws-native:applicationautoscaling:ScalingPolicy"
N_ASG = "aws-native:autoscaling:AutoScalingGroup"
N_CP = "aws-native:ecs:CapacityProvider"


def native_baseline() -> Stack:
    """The same shape in pulumi-aws-native (CloudFormation) form: container definitions as a
    list, attributes as {key, value} lists, string numbers where CloudFormation uses strings."""
    s = Stack()
    s.add(
        N_SG,
        "n-alb-sg",
        {
            "groupDescription": "alb",
            "securityGroupIngress": [
                {"ipProtocol": "tcp", "fromPort": 443.0, "toPort": 443.0, "cidrIp": "10.0.0.0/8"}
            ],
        },
    )
    s.add(
        N_LB,
        "n-alb",
        {
            "scheme": "internal",
            "type": "application",
            "loadBalancerAttributes": [{"key": "idle_timeout.timeout_seconds", "value": "900"}],
        },
    )
    s.add(
        N_LISTENER,
        "n-https",
        {
            "loadBalancerArn": UNKNOWN,
            "port": 443.0,
            "protocol": "HTTPS",
            "defaultActions": [
                {"type": "fixed-response", "fixedResponseConfig": {"statusCode": "404"}}
            ],
        },
        refs={"loadBalancerArn": "n-alb"},
    )
    s.add(
        N_TG,
        "n-llm-tg",
        {
            "port": 8000.0,
            "protocol": "HTTP",
            "targetType": "ip",
            "targetGroupAttributes": [
                {"key": "deregistration_delay.timeout_seconds", "value": "900"}
            ],
        },
    )
    s.add(
        N_RULE,
        "n-llm-api",
        {
            "listenerArn": UNKNOWN,
            "priority": 10.0,
            "actions": [
                {"type": "jwt-validation", "order": 1.0, "jwtValidationConfig": {"issuer": "x"}},
                {"type": "forward", "order": 2.0, "targetGroupArn": UNKNOWN},
            ],
        },
        refs={"listenerArn": "n-https", "actions": "n-llm-tg"},
    )
    s.add(N_ASG, "n-gpu-asg", {"maxSize": "4", "minSize": "1"})
    s.add(
        N_CP,
        "n-gpu-cp",
        {"autoScalingGroupProvider": {"autoScalingGroupArn": UNKNOWN}},
        refs={"autoScalingGroupProvider": "n-gpu-asg"},
    )
    s.add(
        N_TD,
        "n-llm-td",
        {
            "requiresCompatibilities": ["EC2"],
            "networkMode": "awsvpc",
            "containerDefinitions": [VLLM],
        },
    )
    s.add(
        N_SVC,
        "n-llm",
        {
            "taskDefinition": UNKNOWN,
            "desiredCount": 2.0,
            "capacityProviderStrategy": [{"capacityProvider": UNKNOWN, "weight": 1.0}],
            "networkConfiguration": {
                "awsvpcConfiguration": {"subnets": ["subnet-a"], "assignPublicIp": "DISABLED"}
            },
            "loadBalancers": [
                {"targetGroupArn": UNKNOWN, "containerName": "vllm", "containerPort": 8000.0}
            ],
            "healthCheckGracePeriodSeconds": 600.0,
            "deploymentConfiguration": {
                "maximumPercent": 200.0,
                "deploymentCircuitBreaker": {"enable": True, "rollback": True},
            },
        },
        refs={
            "taskDefinition": "n-llm-td",
            "capacityProviderStrategy": "n-gpu-cp",
            "loadBalancers": "n-llm-tg",
        },
    )
    s.add(
        N_POLICY,
        "n-llm-scaling",
        {
            "policyType": "TargetTrackingScaling",
            "serviceNamespace": "ecs",
            "targetTrackingScalingPolicyConfiguration": {
                "targetValue": 30.0,
                "scaleInCooldown": 600.0,
                "scaleOutCooldown": 60.0,
            },
        },
    )
    s.add(
        N_TD,
        "n-rerank-td",
        {
            "requiresCompatibilities": ["FARGATE"],
            "networkMode": "awsvpc",
            "cpu": "1 vCPU",
            "memory": "4 GB",
            "containerDefinitions": [RERANKER],
        },
    )
    s.add(
        N_SVC,
        "n-rerank",
        {
            "taskDefinition": UNKNOWN,
            "launchType": "FARGATE",
            "networkConfiguration": {
                "awsvpcConfiguration": {"subnets": ["subnet-a"], "assignPublicIp": "DISABLED"}
            },
            "deploymentConfiguration": {
                "deploymentCircuitBreaker": {"enable": True, "rollback": True}
            },
        },
        refs={"taskDefinition": "n-rerank-td"},
    )
    return s
