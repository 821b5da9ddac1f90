"""What the tests of ModelService and FargateReranker share: the endpoint stand-in and the ARNs
of the cluster and load balancer around a service.

Both components build the same load-balanced service (`components.services.base`), so their
tests need the same router and the same surrounding identifiers.
"""

from __future__ import annotations

from typing import Any

import pulumi_aws as aws

from tools.recording import ACCOUNT_ID

CLUSTER_ARN = f"arn:aws:ecs:us-east-1:{ACCOUNT_ID}:cluster/inference"
LISTENER_ARN = f"arn:aws:elasticloadbalancing:us-east-1:{ACCOUNT_ID}:listener/app/alb/1/2"
LB_SUFFIX = "app/dev-alb/0123456789abcdef"


class FakeRouter:
    """Stands in for the Endpoint: records calls and creates one listener rule per call."""

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
