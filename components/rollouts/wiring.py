"""What a blue/green, canary or linear service adds to its ECS service: ECS's infrastructure role
for the shift (its own, scoped to this service's target groups, rules and smoke hook), and the
provider arguments of the native deployment (strategy, timings, bake, the smoke hook at
POST_TEST_TRAFFIC_SHIFT, the deployment alarms, the load balancer's advanced configuration)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_aws as aws
from pulumi import Output

from ecs_inference.arns import AwsContext
from ecs_inference.iam import assume_role_policy
from ecs_inference.rollouts.spec import (
    ECS_PRINCIPAL,
    SMOKE_STAGE,
    LoadBalancerGrants,
    RolloutSpec,
    hook_details,
    load_balancer_role_policy,
)

API_PATHS = {"chat": "/v1/chat/completions", "rerank": "/v1/rerank"}
"""Where the smoke hook sends each kind of test, below the service's prefix."""


@dataclass(frozen=True)
class NativeDeployment:
    """The ECS service's arguments for a native strategy, and what it must wait for."""

    deployment_configuration: aws.ecs.ServiceDeploymentConfigurationArgs
    alarms: aws.ecs.ServiceAlarmsArgs | None
    advanced: aws.ecs.ServiceLoadBalancerAdvancedConfigurationArgs
    role: aws.iam.Role
    depends_on: Sequence[pulumi.Resource]


def native_deployment(
    owner: pulumi.Resource,
    name: str,
    *,
    service: str,
    rollout: RolloutSpec,
    router: Any,
    ctx: AwsContext,
    target_groups: tuple[aws.lb.TargetGroup, aws.lb.TargetGroup],
    rules: Sequence[aws.lb.ListenerRule],
) -> NativeDeployment:
    """The infrastructure role and the native deployment's arguments; `rules` are [test,
    production] (`routes.service_rules`)."""
    smoke = rollout.smoke
    assert smoke and len(rules) == 2
    test, production = rules
    function_arn, endpoint_details = router.smoke_target(service, API_PATHS[smoke["kind"]])
    child = pulumi.ResourceOptions(parent=owner)
    role = aws.iam.Role(
        f"{name}-deploy",
        description=f"ECS: shift {service}'s traffic between its target groups, run its hook",
        assume_role_policy=ctx.account_id.apply(
            lambda a: assume_role_policy(ECS_PRINCIPAL, account_id=a)
        ),
        opts=child,
    )
    grant = aws.iam.RolePolicy(
        f"{name}-deploy",
        role=role.name,
        policy=Output.all(
            target_groups[0].arn,
            target_groups[1].arn,
            test.arn,
            production.arn,
            function_arn,
        ).apply(
            lambda a: load_balancer_role_policy(
                LoadBalancerGrants((a[0], a[1]), (a[2], a[3]), a[4])
            )
        ),
        opts=child,
    )
    details = Output.from_input(endpoint_details).apply(lambda d: hook_details(smoke, **d))
    config = rollout.config
    configuration = aws.ecs.ServiceDeploymentConfigurationArgs(
        strategy=rollout.strategy,
        bake_time_in_minutes=str(rollout.bake_minutes),
        canary_configuration=None
        if rollout.strategy != "CANARY"
        else aws.ecs.ServiceDeploymentConfigurationCanaryConfigurationArgs(
            canary_percent=config.canary_percent,
            canary_bake_time_in_minutes=str(config.canary_wait_minutes),
        ),
        linear_configuration=None
        if rollout.strategy != "LINEAR"
        else aws.ecs.ServiceDeploymentConfigurationLinearConfigurationArgs(
            step_percent=config.linear_step_percent,
            step_bake_time_in_minutes=str(config.linear_interval_minutes),
        ),
        lifecycle_hooks=[
            aws.ecs.ServiceDeploymentConfigurationLifecycleHookArgs(
                hook_target_arn=function_arn,
                role_arn=role.arn,
                lifecycle_stages=[SMOKE_STAGE],
                hook_details=details,
            )
        ],
    )
    alarms = (
        aws.ecs.ServiceAlarmsArgs(alarm_names=list(rollout.alarm_names), enable=True, rollback=True)
        if rollout.alarm_names
        else None
    )
    advanced = aws.ecs.ServiceLoadBalancerAdvancedConfigurationArgs(
        alternate_target_group_arn=target_groups[1].arn,
        production_listener_rule=production.arn,
        test_listener_rule=test.arn,
        role_arn=role.arn,
    )
    return NativeDeployment(configuration, alarms, advanced, role, [grant])
