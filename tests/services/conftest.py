"""What the tests of ModelService and FargateReranker share: the endpoint stand-in, the ARNs
of the cluster and load balancer around a service, and the check of a service's children.

Both components build the same load-balanced service (`components.services.base`), so their
tests need the same router and the same surrounding identifiers.
"""

from __future__ import annotations

from typing import Any

import pulumi_aws as aws

from tools.recording import ACCOUNT_ID, Recording

CLUSTER_ARN = f"arn:aws:ecs:us-east-1:{ACCOUNT_ID}:cluster/inference"
LISTENER_ARN = f"arn:aws:elasticloadbalancing:us-east-1:{ACCOUNT_ID}:listener/app/alb/1/2"
LB_SUFFIX = "app/dev-alb/0123456789abcdef"


def service_wiring(router: Any = None) -> dict[str, Any]:
    """The arguments a load-balanced service takes from around it (cluster, VPC, private
    subnets, ALB security group and ARN suffix, the endpoint's router; a new FakeRouter when
    `router` is None), for the args builders of the service tests."""
    return {
        "cluster_arn": CLUSTER_ARN,
        "vpc_id": "vpc-0abc",
        "subnet_ids": ["subnet-a", "subnet-b"],
        "alb_security_group_id": "sg-alb",
        "load_balancer_arn_suffix": LB_SUFFIX,
        "router": router or FakeRouter(),
    }


class FakeRouter:
    """Stands in for the Endpoint: records calls and creates one listener rule per call."""

    idle_timeout_seconds = 360

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def route(self, service, *, target_group_arn, priority, opts=None):
        self.calls.append({"service": service, "priority": priority, "opts": opts})
        rule = aws.lb.ListenerRule(
            f"rule-{service}",
            listener_arn=LISTENER_ARN,
            priority=priority,
            actions=[
                aws.lb.ListenerRuleActionArgs(type="forward", target_group_arn=target_group_arn)
            ],
            conditions=[
                aws.lb.ListenerRuleConditionArgs(
                    path_pattern=aws.lb.ListenerRuleConditionPathPatternArgs(
                        values=[f"/{service}/*"]
                    )
                )
            ],
        )
        return [rule]


ONE_PER_SERVICE = (
    "aws:cloudwatch/logGroup:LogGroup",
    "aws:ec2/securityGroup:SecurityGroup",
    "aws:lb/targetGroup:TargetGroup",
    "aws:ecs/taskDefinition:TaskDefinition",
    "aws:ecs/service:Service",
    "aws:appautoscaling/target:Target",
    "aws:appautoscaling/policy:Policy",
)


def check_service_children(rec: Recording, token: str, prefix: str) -> None:
    """A load-balanced service is one task definition run by one ECS service behind one target
    group, scaled by one target and policy, logging to its own group, with an execution role and
    a separate task role, each with its own inline policy; all children of the component and
    named after it (the endpoint's rules are the router's)."""
    component = rec.one(token)
    children = [r for r in rec.resources if r.type != token and not r.name.startswith("rule-")]
    for child in children:
        assert child.parent == component.urn, child.name
        assert child.name.startswith(prefix), child.name
    for type_ in ONE_PER_SERVICE:
        rec.one(type_)  # exactly one
    roles = {r.name for r in rec.by_type("aws:iam/role:Role")}
    assert {p.name for p in rec.by_type("aws:iam/rolePolicy:RolePolicy")} == roles
    task = rec.one("aws:ecs/taskDefinition:TaskDefinition").inputs
    used = {
        task[key].rsplit("/", 1)[-1].rsplit("-", 1)[0]
        for key in ("executionRoleArn", "taskRoleArn")
    }
    assert used == roles and len(roles) == 2, (used, roles)
