"""The pack's own approximation of the engine's views, for its tests (the offline preview's
``tools.views`` builds the real ones from the providers' schemas).

What a stack rule sees is the resources' outputs. On a first preview (``new``) an Optional +
Computed attribute the program did not set is unknown; after ``up`` (``state``) it holds what the
provider stores. ``COMPUTED`` lists the attributes of that kind the mandatory rules read, per type,
with what pulumi-aws / aws-native store when the program leaves them unset (``KEEP``: the stored
value depends on AWS, so the state view leaves it as the program wrote it).
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Iterable
from typing import Any

from pulumi.runtime.rpc import UNKNOWN

KEEP = object()


def _has_strategy(inputs: dict[str, Any]) -> bool:
    return bool(inputs.get("capacityProviderStrategies") or inputs.get("capacityProviderStrategy"))


def _launch_type(inputs: dict[str, Any]) -> Any:
    # A capacity-provider service stores launchType "" (terraform-provider-aws); one with
    # neither set stores what ECS chose, which the pack cannot know either.
    return "" if _has_strategy(inputs) else KEEP


Stored = Any | Callable[[dict[str, Any]], Any]

#: type -> {top-level attribute: what the state holds when the program did not set it}.
COMPUTED: dict[str, dict[str, Stored]] = {
    "aws:ecs/service:Service": {"launchType": _launch_type, "cluster": KEEP},
    "aws-native:ecs:Service": {"launchType": _launch_type, "cluster": KEEP},
    "aws:ecs/taskSet:TaskSet": {"launchType": _launch_type},
    "aws:lb/loadBalancer:LoadBalancer": {"internal": False, "securityGroups": []},
    "aws:alb/loadBalancer:LoadBalancer": {"internal": False, "securityGroups": []},
    "aws-native:elasticloadbalancingv2:LoadBalancer": {"scheme": "internet-facing"},
    "aws:lb/listener:Listener": {"mutualAuthentication": {"mode": "off"}, "port": KEEP},
    "aws-native:elasticloadbalancingv2:Listener": {"port": KEEP},
    "aws:ec2/securityGroup:SecurityGroup": {"ingress": []},
    "aws:ec2/instance:Instance": {
        "associatePublicIpAddress": KEEP,
        "subnetId": KEEP,
        "vpcSecurityGroupIds": KEEP,
    },
    "aws:autoscaling/group:Group": {"vpcZoneIdentifiers": KEEP},
    "aws:ecs/taskDefinition:TaskDefinition": {"networkMode": KEEP},
    "aws:apprunner/service:Service": {"networkConfiguration": KEEP},
    "aws:ecs/expressGatewayService:ExpressGatewayService": {"networkConfigurations": KEEP},
}
#: Nested attributes of listener / rule actions: unknown in `new`, filled in `state`.
_ACTION_KEYS = ("defaultActions", "actions")


def _actions(inputs: dict[str, Any], view: str) -> None:
    for key in _ACTION_KEYS:
        for index, action in enumerate(inputs.get(key) or ()):
            if not isinstance(action, dict):
                continue
            if "order" not in action:
                action["order"] = UNKNOWN if view == "new" else float(index + 1)
            for block in ("authenticateCognito", "authenticateOidc"):
                inner = action.get(block)
                if isinstance(inner, dict) and "onUnauthenticatedRequest" not in inner:
                    inner["onUnauthenticatedRequest"] = UNKNOWN if view == "new" else "authenticate"


def view_inputs(type_: str, inputs: dict[str, Any], view: str) -> dict[str, Any]:
    """``inputs`` as the outputs the engine shows in ``view`` ("new" or "state")."""
    out = copy.deepcopy(inputs)
    for key, stored in COMPUTED.get(type_, {}).items():
        if out.get(key) is not None:
            continue
        if view == "new":
            out[key] = UNKNOWN
            continue
        value = stored(inputs) if callable(stored) else stored
        if value is not KEEP:
            out[key] = value
    if type_.endswith(("Listener", "ListenerRule")):
        _actions(out, view)
    return out


def in_view(records: Iterable[Any], view: str) -> list[Any]:
    """Records (``policy_stacks.Res`` or ``tools.recording.RecordedResource``) as ``view``
    shows them to AnalyzeStack; "update" returns them unchanged."""
    if view == "update":
        return list(records)
    return [dataclasses.replace(r, inputs=view_inputs(r.type, r.inputs, view)) for r in records]
