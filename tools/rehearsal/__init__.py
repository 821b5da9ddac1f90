"""The runtime rehearsal (DESIGN §13): what AWS does with the stack once `up` has created it.

A request AWS accepts can still give a service that never serves. After the fidelity checks,
the preview rehearses, over the recorded resources of any program:
- every task start on its launch type (`tasks.py`): image pulls, secrets, log streams, EFS
  mounts, and the calls each image's contract declares (`contracts/aws_calls.py`);
- every one-off function run `pulumi up` makes (`functions.py`): its logs and its code's calls;
- every blue/green, canary or linear deployment (`deployments.py`): ECS shifting traffic with the
  service's load balancer role, invoking the smoke hook, and the hook's run;
- one role per duty (`duties.py`): a task that serves requests may not read a secret it does
  not inject, nor run SQL as a database's master user;
- what AWS services do with the stack's roles and resource policies (`services.py`): the
  container instance role's agent and user-data calls, the Managed Instances infrastructure
  role, ALB access-log delivery, CloudWatch alarms and EventBridge publishing to SNS;
- each pool's instance life cycle through its lifecycle hooks and warm pool (`boot.py`), and
  the CloudWatch agent its user data configures (`agent.py`);
- the constraints AWS documents for an operation beyond its request shape
  (`constraints.py`);
- the image pull path of every service and instance group in subnets the program looked up (an
  existing network, `network.py`).
Every IAM question goes to a real evaluator (`iam.py`). A denied call, a refused constraint or a
lifecycle hook nothing completes is a finding (the preview exits 4); what cannot be known
during preview is a note, never a pass in silence.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tools.aws_requests import Finding, Resource
from tools.aws_shapes import UNKNOWN
from tools.rehearsal.calls import Call, Refusal, Unverified
from tools.rehearsal.deployments import deployment_checks
from tools.rehearsal.iam import Decision, Evaluator, Request, evaluator
from tools.rehearsal.model import StackModel, unknown_policies
from tools.rehearsal.routes import Through, endpoint_context

CHECK = "runtime"
"""The `check` of every rehearsal finding."""


@dataclass
class Rehearsal:
    """What the rehearsal found."""

    findings: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """Checks the preview cannot make (values unknown until deploy, roles outside the stack)."""
    evaluated: int = 0
    """Distinct AWS calls sent to the IAM evaluator."""


def _finding(subject: Resource, message: str) -> Finding:
    return Finding(subject.type, subject.name, CHECK, message)


def _denied(call: Call, decision: Decision) -> Finding:
    actor = f"role {call.role.label}" if call.role is not None else call.principal
    return _finding(
        call.subject,
        f"{call.who}: {call.action} on {call.resource} is denied to {actor} "
        f"({decision.reason()}); needed to {call.why}",
    )


def _exceeds(call: Call) -> Finding:
    actor = f"role {call.role.label}" if call.role is not None else call.principal
    return _finding(
        call.subject,
        f"{call.who}: {call.action} on {call.resource} is allowed to {actor}, which would let "
        f"it {call.why}; {call.forbidden}",
    )


def evaluate(
    model: StackModel,
    checks: Iterable[Call | Unverified | Refusal],
    iam: Evaluator,
    through: Mapping[int, Through] | None = None,
) -> Rehearsal:
    """Send every call to the evaluator once; refusals, denials and forbidden calls allowed
    become findings. `through`: the VPC endpoint a call goes through (by `id(call)`), whose
    policy it must pass too."""
    out = Rehearsal()
    calls: list[Call] = []
    for check in checks:
        if isinstance(check, Refusal):
            out.findings.append(_finding(check.subject, f"{check.who}: {check.message}"))
        elif isinstance(check, Unverified):
            out.notes.append(f"{check.subject.name}: {check.who}: cannot verify: {check.reason}")
        else:
            calls.append(check)
    managed = iam.managed_policies(sorted({n for r in model.roles for n in r.managed}))
    pending: dict[str, tuple[Call, Request]] = {}
    for call in calls:
        identity = (
            model.policies(call.role, managed)
            if call.role is not None
            else list(call.identity_policies)
        )
        unknown = unknown_policies(identity)
        if unknown or call.resource_policy == UNKNOWN:
            what = ", ".join(unknown) or "the resource policy"
            out.notes.append(
                f"{call.subject.name}: {call.who}: cannot verify {call.action}: "
                f"{what} unknown at preview"
            )
            continue
        via = (through or {}).get(id(call))
        request = Request(
            call.principal,
            call.action,
            call.resource,
            call.account_id or model.account_id,
            tuple(identity),
            call.resource_policy,
            {**call.context, **(endpoint_context(via) if via else {})},
            ((via.endpoint_id, via.policy),) if via else (),
        )
        key = json.dumps([call.who, call.forbidden, request.to_json()], sort_keys=True, default=str)
        pending.setdefault(key, (call, request))
    decisions = iam.decide([request for _, request in pending.values()])
    out.evaluated = len(decisions)
    for (call, _), decision in zip(pending.values(), decisions, strict=True):
        if call.forbidden and decision.allowed:
            out.findings.append(_exceeds(call))
        elif not call.forbidden and not decision.allowed:
            out.findings.append(_denied(call, decision))
    return out


def rehearse(
    resources: Sequence[Resource],
    region: str,
    account_id: str,
    iam: Evaluator | None = None,
    lookups: Sequence[Any] = (),
) -> Rehearsal:
    """The whole rehearsal of a recorded program run; `lookups`: the data sources' answers the
    program got (tools/recording.py `Lookup`), for the image pull paths through looked-up
    subnets (`network.py`) and the AMI each launch template resolved (`programs.py`)."""
    from tools.rehearsal.agent import agent_checks
    from tools.rehearsal.boot import lifecycle_checks
    from tools.rehearsal.constraints import violations
    from tools.rehearsal.contracts import CONTRACTS
    from tools.rehearsal.duties import duty_checks
    from tools.rehearsal.environment import environment_checks
    from tools.rehearsal.functions import function_checks
    from tools.rehearsal.network import LookedUpNetwork, pull_path_findings
    from tools.rehearsal.programs import program_checks
    from tools.rehearsal.routes import route_checks
    from tools.rehearsal.services import service_checks
    from tools.rehearsal.tasks import task_checks

    model = StackModel(resources, region, account_id)
    checks: list[Call | Unverified | Refusal] = [
        *task_checks(model, tuple(CONTRACTS.values())),
        *function_checks(model),
        *deployment_checks(model),
        *duty_checks(model),
        *environment_checks(model),
        *service_checks(model),
        *lifecycle_checks(model),
        *program_checks(model, lookups),
        *agent_checks(model),
    ]
    network = LookedUpNetwork(resources, lookups)
    routed, through = route_checks(model, network, [c for c in checks if isinstance(c, Call)])
    out = evaluate(model, [*checks, *routed], iam or evaluator(), through)
    out.findings[:0] = [
        Finding(r.type, r.name, "constraint", f'{message}; AWS: "{c.quote}" ({c.source})')
        for c, r, message in violations(model)
    ]
    out.findings += [_finding(r, message) for r, message in pull_path_findings(resources, lookups)]
    return out
