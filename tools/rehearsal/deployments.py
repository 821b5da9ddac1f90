"""What ECS does during a blue/green, canary or linear deployment, with the service's roles.

From AWS's documentation (read 2026-12-03), not from the grants the program writes:
- the load balancer's infrastructure role (`loadBalancers[].advancedConfiguration.roleArn`),
  assumed by `ecs.amazonaws.com`, reads the listeners, rules, target groups and target health,
  registers and deregisters the revisions' tasks in the primary and the alternate target group,
  and modifies the production and test listener rules' forward weights: the actions of AWS's
  `AmazonECSInfrastructureRolePolicyForLoadBalancers` (v6, 2026-02-12) on the resources this
  service names (`SHIFT_CALLS`);
- a Lambda lifecycle hook's role (`lifecycleHooks[].roleArn`), assumed by `ecs.amazonaws.com`,
  invokes the hook function (`lambda:InvokeFunction`, "Permissions required for Lambda functions
  in Amazon ECS blue/green deployments");
- the hook function then runs with its own role: its log stream, Lambda's network interfaces
  in the VPC (AWSLambdaVPCAccessExecutionRole's EC2 actions), and the calls its code declares
  for the hook's details (`components.rollouts.smoke.aws_calls`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from ecs_inference.rollouts import smoke
from tools.aws_requests import Resource
from tools.rehearsal.calls import Call, Refusal, Unverified, session_arn
from tools.rehearsal.functions import FUNCTION, REQUEST_ID
from tools.rehearsal.model import Role, StackModel, known

SERVICE = "aws:ecs/service:Service"
ECS_PRINCIPAL = "ecs.amazonaws.com"
SHIFT_CALLS: tuple[tuple[str, str], ...] = (
    ("elasticloadbalancing:DescribeListeners", "*"),
    ("elasticloadbalancing:DescribeRules", "*"),
    ("elasticloadbalancing:DescribeTargetGroups", "*"),
    ("elasticloadbalancing:DescribeTargetHealth", "*"),
    ("elasticloadbalancing:RegisterTargets", "target groups"),
    ("elasticloadbalancing:DeregisterTargets", "target groups"),
    ("elasticloadbalancing:ModifyRule", "rules"),
)
"""(action, on what) ECS calls with the load balancer role during a shift (managed policy v6)."""
LAMBDA_VPC_CALLS = (
    "ec2:CreateNetworkInterface",
    "ec2:DescribeNetworkInterfaces",
    "ec2:DeleteNetworkInterface",
)
"""What Lambda does with a VPC function's role to attach it to its subnets."""


def _native(service: Resource) -> Mapping[str, Any] | None:
    dc = service.inputs.get("deploymentConfiguration")
    if isinstance(dc, Mapping) and dc.get("strategy") not in (None, "ROLLING"):
        return dc
    return None


def ecs_roles(model: StackModel) -> Iterator[tuple[Role, Resource]]:
    """The roles ECS assumes for a service's native deployments (for the trust checks)."""
    for service in model.of(SERVICE):
        dc = _native(service)
        if dc is None:
            continue
        refs = [
            (lb.get("advancedConfiguration") or {}).get("roleArn")
            for lb in service.inputs.get("loadBalancers") or []
            if isinstance(lb, Mapping)
        ]
        refs += [h.get("roleArn") for h in dc.get("lifecycleHooks") or [] if isinstance(h, Mapping)]
        for ref in refs:
            role = model.role(ref)
            if role is not None:
                yield role, service


def _resources(service: Resource, lb: Mapping[str, Any], what: str) -> Sequence[Any]:
    advanced = lb.get("advancedConfiguration") or {}
    if what == "target groups":
        return [lb.get("targetGroupArn"), advanced.get("alternateTargetGroupArn")]
    if what == "rules":
        return [advanced.get("productionListenerRule"), advanced.get("testListenerRule")]
    return ["*"]


def _shift(model: StackModel, service: Resource) -> Iterator[Call | Unverified | Refusal]:
    for lb in service.inputs.get("loadBalancers") or []:
        advanced = lb.get("advancedConfiguration") if isinstance(lb, Mapping) else None
        if not isinstance(advanced, Mapping):
            yield Refusal(
                service,
                f"service {service.name}",
                "a native deployment needs advancedConfiguration on its load balancer",
            )
            continue
        role = model.role(advanced.get("roleArn"))
        who = f"service {service.name} traffic shift (ECS)"
        if role is None:
            yield Unverified(service, who, "its load balancer role is not in this stack")
            continue
        principal = session_arn(role, model.account_id, "ecs-service-deployment")
        for action, what in SHIFT_CALLS:
            for arn in _resources(service, lb, what):
                if arn is None:
                    continue
                if not known(arn):
                    yield Unverified(service, who, f"{action}: its resource is unknown at preview")
                    continue
                yield Call(
                    service,
                    who,
                    principal,
                    action,
                    arn,
                    f"shift traffic ({what})",
                    role=role,
                    account_id=model.account_id,
                )


def _hook_run(
    model: StackModel, service: Resource, function: Resource, details: Any
) -> Iterator[Call | Unverified]:
    who = f"smoke hook {function.name} for {service.name}"
    role = model.role(function.inputs.get("role"))
    if role is None:
        yield Unverified(function, who, "its role is not in this stack")
        return
    name = model.output(function, "name") or function.inputs.get("name")
    principal = session_arn(role, model.account_id, str(name))
    group = (function.inputs.get("loggingConfig") or {}).get("logGroup") or f"/aws/lambda/{name}"
    stream = f"{model.arn('logs', f'log-group:{group}')}:log-stream:{REQUEST_ID}"
    calls = [
        (a, stream, f"write the run's output to {group}")
        for a in ("logs:CreateLogStream", "logs:PutLogEvents")
    ]
    if function.inputs.get("vpcConfig"):
        calls += [(a, "*", "attach the function to its subnets") for a in LAMBDA_VPC_CALLS]
    if not (known(details) and isinstance(details, str)):
        yield Unverified(function, who, "its hookDetails are unknown at preview")
    else:
        calls += list(smoke.aws_calls(json.loads(details)))
    for action, resource, why in calls:
        yield Call(
            function, who, principal, action, resource, why, role=role, account_id=model.account_id
        )


def deployment_checks(model: StackModel) -> Iterator[Call | Unverified | Refusal]:
    """Every native deployment's traffic shift, hook invocation and hook run."""
    for service in model.of(SERVICE):
        dc = _native(service)
        if dc is None:
            continue
        yield from _shift(model, service)
        for hook in dc.get("lifecycleHooks") or []:
            if (
                not isinstance(hook, Mapping)
                or hook.get("targetType", "AWS_LAMBDA") != "AWS_LAMBDA"
            ):
                continue
            who = f"service {service.name} lifecycle hook (ECS)"
            role, target = model.role(hook.get("roleArn")), hook.get("hookTargetArn")
            if role is None or not known(target) or not isinstance(target, str):
                yield Unverified(service, who, "its role or function is unknown at preview")
                continue
            yield Call(
                service,
                who,
                session_arn(role, model.account_id, "ecs-lifecycle-hook"),
                "lambda:InvokeFunction",
                target,
                "run the hook before production traffic",
                role=role,
                account_id=model.account_id,
            )
            function = model.by_arn(target, FUNCTION)
            if function is None:
                yield Unverified(service, who, "the hook function is not in this stack")
                continue
            yield from _hook_run(model, service, function, hook.get("hookDetails"))
