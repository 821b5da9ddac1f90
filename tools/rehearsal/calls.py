"""What the rehearsal asks the evaluator: one AWS call, who makes it and why, or why it cannot
be checked during preview."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tools.aws_requests import Resource
from tools.rehearsal.model import Role

TASK_ID = "0123456789abcdef0123456789abcdef"
"""A task id of ECS's shape (32 hex digits), for the ARNs and log streams of a simulated task."""


@dataclass(frozen=True)
class Call:
    """An AWS call that must be allowed for the stack to work."""

    subject: Resource
    """The resource the finding is reported on (task definition, Auto Scaling group, ...)."""
    who: str
    """Who acts, for the message: `task X container Y`, `Auto Scaling group X user data`."""
    principal: str
    """The role session or service principal making the call."""
    action: str
    resource: str
    why: str
    role: Role | None = None
    """The stack's role whose policies apply (None: a service principal)."""
    resource_policy: Any = None
    context: Mapping[str, str | list[str]] = field(default_factory=dict)
    account_id: str = ""
    identity_policies: tuple[tuple[str, Any], ...] = ()
    """Policies of a principal outside the stack (an AWS-owned account), when `role` is None."""
    forbidden: str = ""
    """Non-empty: a call that must be DENIED (one role per duty), and why; `why` then says
    what an allowed call would let the principal do."""


@dataclass(frozen=True)
class Unverified:
    """A check the preview cannot make (a value unknown until deploy, a role or key outside
    the stack); reported as a note, never as a failure."""

    subject: Resource
    who: str
    reason: str


@dataclass(frozen=True)
class Refusal:
    """Something AWS refuses outright, no IAM evaluation needed (an execution role missing
    where the launch type needs one, a log group that does not exist)."""

    subject: Resource
    who: str
    message: str


def session_arn(role: Role, account_id: str, session: str) -> str:
    """The assumed-role session ARN AWS evaluates for calls made with `role`."""
    return f"arn:aws:sts::{account_id}:assumed-role/{role.name or role.resource.name}/{session}"
