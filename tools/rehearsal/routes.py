"""The way each AWS call leaves its subnet: a route to the service, and the endpoint's policy.

A task (awsvpc) calls AWS from its service's subnets, an instance from its Auto Scaling group's.
From a subnet of an existing network (one the program looked up, so its routes are known) a call
reaches the service through a default route out (NAT, transit gateway, ...) or through an
endpoint of that service in the VPC: an interface endpoint with private DNS (its name then
resolves to the endpoint whether or not a NAT exists) or the S3 gateway on the subnet's route
table ("Access an AWS service using an interface VPC endpoint", "Gateway endpoints"). Without
either, the call times out: every call the rehearsal authorises also needs that route, so a
permission alone is not a pass.

A call that goes through an endpoint is also evaluated against the endpoint's policy (a network
team's endpoint is often limited to its organisation or to named resources; `get_vpc_endpoint`
returns it). A policy that conditions on a key the preview cannot know (`aws:PrincipalOrgID`
without the organisation) is a note, not a pass. ECR calls are left to `network.py`, which
judges the whole image pull path (ECR API, ECR registry, S3 layers) at once.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from tools.aws_requests import Resource
from tools.rehearsal.calls import Call, Refusal, Unverified
from tools.rehearsal.model import SERVICE, TASK_DEFINITION, StackModel, known, listify
from tools.rehearsal.network import ASG, LookedUpNetwork

# An action's service prefix -> the endpoint service that answers it (the ECS guide's "Amazon ECS
# interface VPC endpoints": the agent's long poll and its telemetry have endpoints of their own).
_ENDPOINT_OF_PREFIX: Mapping[str, str] = {
    "autoscaling": "autoscaling",
    "ecs": "ecs",
    "ssm": "ssm",
    "ssmmessages": "ssmmessages",
    "ec2messages": "ec2messages",
    "logs": "logs",
    "cloudwatch": "monitoring",
    "s3": "s3",
    "sts": "sts",
    "secretsmanager": "secretsmanager",
    "sqs": "sqs",
    "bedrock": "bedrock-runtime",
    "kms": "kms",
}
_ENDPOINT_OF_ACTION: Mapping[str, str] = {
    "ecs:Poll": "ecs-agent",
    "ecs:StartTelemetrySession": "ecs-telemetry",
    "ecs:PutSystemLogEvents": "ecs-telemetry",
}
_KNOWN_KEYS = frozenset(
    {"aws:sourcevpce", "aws:sourcevpc", "aws:principalarn", "aws:principalaccount"}
)
"""Condition keys the rehearsal sets for a call through an endpoint (or the evaluator derives
from the principal); an endpoint policy on any other key cannot be judged at preview."""


def endpoint_service(action: str) -> str | None:
    """The endpoint service a call of `action` goes to (None: ECR, or no endpoint service)."""
    return _ENDPOINT_OF_ACTION.get(action) or _ENDPOINT_OF_PREFIX.get(action.split(":", 1)[0])


@dataclass(frozen=True)
class Through:
    """The endpoint a call goes through and the policy it must also pass."""

    endpoint_id: str
    vpc: str
    policy: Any


def _condition_keys(policy: Any) -> set[str]:
    statements = policy.get("Statement") if isinstance(policy, Mapping) else None
    keys: set[str] = set()
    for st in listify(statements):
        for block in ((st.get("Condition") or {}) if isinstance(st, Mapping) else {}).values():
            keys |= {str(k).lower() for k in (block or {})}
    return keys


def _subnets(model: StackModel, subject: Resource) -> tuple[list[str], bool]:
    """The subnets a subject's calls leave from, and whether they carry a public IP."""
    if subject.type == ASG:
        return [s for s in listify(subject.inputs.get("vpcZoneIdentifiers")) if known(s)], False
    if subject.type != TASK_DEFINITION:
        return [], False
    subnets: list[str] = []
    public = False
    for service in model.of(SERVICE):
        if model.by_arn(service.inputs.get("taskDefinition"), TASK_DEFINITION) is not subject:
            continue
        config = service.inputs.get("networkConfiguration") or {}
        if isinstance(config, Mapping):
            subnets += [s for s in listify(config.get("subnets")) if known(s)]
            public = public or bool(config.get("assignPublicIp"))
    return subnets, public


def route_checks(
    model: StackModel, network: LookedUpNetwork, calls: Iterable[Call]
) -> tuple[list[Refusal | Unverified], dict[int, Through]]:
    """A refusal for each (subject, service) its calls cannot reach, a note for each endpoint
    policy the preview cannot judge, and the endpoint each judged call goes through (by
    `id(call)`)."""
    checks: list[Refusal | Unverified] = []
    through: dict[int, Through] = {}
    seen: set[tuple[str, str]] = set()
    for call in calls:
        service = endpoint_service(call.action)
        if service is None or call.role is None:
            continue  # a service principal acts from AWS's network, not from the subnet
        subnets, public = _subnets(model, call.subject)
        for subnet in (s for s in subnets if s in network.subnets):
            endpoint = network.endpoint(subnet, service)
            key = (call.subject.urn, service)
            if endpoint is None:
                if not network.routed_out(subnet, public) and key not in seen:
                    seen.add(key)
                    vpc = network.subnets[subnet].get("vpcId")
                    checks.append(
                        Refusal(
                            call.subject,
                            call.who,
                            f"{call.action} cannot leave subnet {subnet}: no default route out "
                            f"and no {service} endpoint in {vpc}, so the call times out "
                            f"(needed to {call.why}); add a NAT route or the endpoint",
                        )
                    )
                continue
            if endpoint.policy is None:
                continue
            unknown = sorted(_condition_keys(endpoint.policy) - _KNOWN_KEYS - set(call.context))
            if unknown:
                if key not in seen:
                    seen.add(key)
                    checks.append(
                        Unverified(
                            call.subject,
                            call.who,
                            f"endpoint {endpoint.id}'s policy conditions on "
                            f"{', '.join(unknown)}, unknown at preview",
                        )
                    )
                continue
            through[id(call)] = Through(endpoint.id, endpoint.vpc, endpoint.policy)
            break
    return checks, through


def endpoint_context(via: Through) -> dict[str, str]:
    """The request context a call through `via` carries."""
    return {"aws:SourceVpce": via.endpoint_id, "aws:SourceVpc": via.vpc}
