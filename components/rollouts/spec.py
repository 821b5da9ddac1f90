"""A service's rollout as plain values, and the IAM documents of the roles it needs (pure).

`RolloutSpec` is what a model service or re-ranker decided about its deployments (strategy,
timings, bake time, deployment alarms, smoke test). The two policies below belong to the duties
ECS and the smoke hook perform during a deployment:

- ECS's infrastructure role for the load balancer moves traffic between the primary and the
  alternate target group. AWS's managed `AmazonECSInfrastructureRolePolicyForLoadBalancers` (v6,
  2026-02-12) grants Describe{Listeners,Rules,TargetGroups,TargetHealth} on `*`,
  {Register,Deregister}Targets on every target group, ModifyListener on every listener and
  ModifyRule on every rule; `load_balancer_role_policy` grants the same actions on exactly this
  service's two target groups and two listener rules (the Describe calls take no resource).
  It also invokes the lifecycle hook: `lambda:InvokeFunction` on the hook function only
  ("Permissions required for Lambda functions in Amazon ECS blue/green deployments"). It
  trusts `ecs.amazonaws.com`.
- the smoke hook's own role: its log streams, and the one secret it reads.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from ecs_inference.rollouts.input import RolloutConfig, default_rollout

EcsStrategy = Literal["ROLLING", "BLUE_GREEN", "CANARY", "LINEAR"]
STRATEGIES: dict[str, EcsStrategy] = {
    "rolling": "ROLLING",
    "blueGreen": "BLUE_GREEN",
    "canary": "CANARY",
    "linear": "LINEAR",
}
"""Stack-file strategy -> ECS's DeploymentConfiguration.strategy."""
ECS_PRINCIPAL = "ecs.amazonaws.com"
SMOKE_STAGE = "POST_TEST_TRAFFIC_SHIFT"
"""When the smoke hook runs: the new revision holds all test traffic and no production traffic."""
ELB_DESCRIBE_ACTIONS = (
    "elasticloadbalancing:DescribeListeners",
    "elasticloadbalancing:DescribeRules",
    "elasticloadbalancing:DescribeTargetGroups",
    "elasticloadbalancing:DescribeTargetHealth",
)
ELB_TARGET_ACTIONS = (
    "elasticloadbalancing:RegisterTargets",
    "elasticloadbalancing:DeregisterTargets",
)
ELB_RULE_ACTIONS = ("elasticloadbalancing:ModifyRule",)
LAMBDA_VPC_ACTIONS = (
    "ec2:CreateNetworkInterface",
    "ec2:DescribeNetworkInterfaces",
    "ec2:DescribeSubnets",
    "ec2:DeleteNetworkInterface",
    "ec2:AssignPrivateIpAddresses",
    "ec2:UnassignPrivateIpAddresses",
)
"""AWSLambdaVPCAccessExecutionRole's EC2 actions (AWS managed policy reference)."""


@dataclass(frozen=True, kw_only=True)
class RolloutSpec:
    """How a service's new revision replaces the old one: its `rollout` section and what was
    derived from it; the default is ECS's rolling update."""

    config: RolloutConfig = field(default_factory=default_rollout)
    bake_minutes: int | None = None
    """Minutes both revisions run after all production traffic moved (native strategies)."""
    alarm_names: tuple[str, ...] = ()
    """Deployment alarms: a breach during the shift or the bake rolls back."""
    smoke: Mapping[str, Any] = field(default_factory=dict)
    """The service's part of the smoke hook's `hookDetails` (camelCase, as
    `components.rollouts.smoke.SmokeSettings.from_details` reads them)."""
    shift_minutes: int = 0
    """How long the green revision runs beside the blue one, in minutes: its start, the shift's
    waits and the bake (what one rollout's extra tasks cost)."""

    @property
    def strategy(self) -> EcsStrategy:
        return STRATEGIES[self.config.strategy]


ROLLING = RolloutSpec()


@dataclass(frozen=True)
class LoadBalancerGrants:
    """What ECS's infrastructure role may touch for one service."""

    target_group_arns: tuple[str, str]
    rule_arns: tuple[str, str]
    hook_function_arn: str | None = None


def load_balancer_role_policy(grants: LoadBalancerGrants) -> str:
    """ECS's infrastructure role for one service's traffic shift (JSON): the managed policy's
    actions scoped to this service's target groups and rules, and its smoke hook."""
    statements: list[dict[str, Any]] = [
        {
            "Sid": "ReadLoadBalancerState",
            "Effect": "Allow",
            # Describe* calls take no resource-level permission.
            "Action": list(ELB_DESCRIBE_ACTIONS),
            "Resource": "*",
        },
        {
            "Sid": "RegisterTasksInBothTargetGroups",
            "Effect": "Allow",
            "Action": list(ELB_TARGET_ACTIONS),
            "Resource": list(grants.target_group_arns),
        },
        {
            "Sid": "ShiftTrafficOnTheServiceRules",
            "Effect": "Allow",
            "Action": list(ELB_RULE_ACTIONS),
            "Resource": list(grants.rule_arns),
        },
    ]
    if grants.hook_function_arn is not None:
        statements.append(
            {
                "Sid": "InvokeTheSmokeHook",
                "Effect": "Allow",
                "Action": "lambda:InvokeFunction",
                "Resource": grants.hook_function_arn,
            }
        )
    return json.dumps({"Version": "2012-10-17", "Statement": statements})


def smoke_hook_policy(*, log_group_arn: str, secret_arn: str) -> str:
    """The smoke hook's own role (JSON): its log streams, the one client secret it reads, and the
    network interfaces Lambda creates for a function in a VPC (the actions of AWS's
    AWSLambdaVPCAccessExecutionRole, which take no resource-level permission)."""
    statements = [
        {
            "Sid": "NetworkInterfacesInTheVpc",
            "Effect": "Allow",
            "Action": list(LAMBDA_VPC_ACTIONS),
            "Resource": "*",
        },
        {
            "Sid": "WriteOwnLogGroup",
            "Effect": "Allow",
            "Action": ["logs:CreateLogStream", "logs:PutLogEvents"],
            "Resource": f"{log_group_arn}:log-stream:*",
        },
        {
            "Sid": "ReadTheHookClientSecret",
            "Effect": "Allow",
            "Action": "secretsmanager:GetSecretValue",
            "Resource": secret_arn,
        },
    ]
    return json.dumps({"Version": "2012-10-17", "Statement": statements})


def hook_details(smoke: Mapping[str, Any], **wiring: Any) -> str:
    """The hook's `hookDetails` (JSON): the service's settings plus the endpoint's (`url`,
    `tokenUrl`, `clientId`, ...), leaving out what is unset."""
    details = {**smoke, **{k: v for k, v in wiring.items() if v is not None}}
    return json.dumps(details, sort_keys=True)
