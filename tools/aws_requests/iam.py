"""IAM: roles, policies, attachments, instance profiles; the policy grammar and size limits
that S3, SNS, SQS, EFS and KMS documents share."""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ecs_inference.contracts.aws_limits import (
    IAM_ROLE_SESSION_DURATION_RANGE,
    MANAGED_POLICIES_PER_ROLE,
    MANAGED_POLICY_MAX_CHARS,
    ROLE_INLINE_POLICIES_MAX_CHARS,
    TRUST_POLICY_MAX_CHARS,
)
from tools.aws_requests.registry import (
    ApiRequest,
    Inputs,
    Quotas,
    Resource,
    as_int,
    drop_none,
    known,
    maps,
    rule,
    stack_rule,
    tags,
)

_STATEMENT_KEYS = {
    "Sid",
    "Effect",
    "Principal",
    "NotPrincipal",
    "Action",
    "NotAction",
    "Resource",
    "NotResource",
    "Condition",
}


_ACTION = re.compile(r"^(\*|[A-Za-z0-9-]+:[A-Za-z0-9*?]+)$")


def policy_chars(document: str) -> int:
    """Characters IAM counts against its size quotas: all but whitespace."""
    return len(re.sub(r"\s", "", document))


def policy_problems(document: Any, kind: str) -> list[str]:
    """What IAM (or S3) would say about a policy document of `kind`: "identity" (inline or
    managed), "trust" (a role's assume-role policy) or "resource" (a bucket policy)."""
    if not known(document):
        return []
    if isinstance(document, Mapping):
        document = json.dumps(document)
    try:
        doc = json.loads(document)
    except json.JSONDecodeError as exc:
        return [f"policy is not valid JSON: {exc.msg}"]
    if not isinstance(doc, dict):
        return ["policy must be a JSON object"]
    found: list[str] = []
    extra = set(doc) - {"Version", "Id", "Statement"}
    if extra:
        found.append(f"unknown top-level element(s) {sorted(extra)}")
    if doc.get("Version") not in (None, "2012-10-17", "2008-10-17"):
        found.append(f"Version {doc.get('Version')!r} must be 2012-10-17 or 2008-10-17")
    statements = doc.get("Statement")
    if isinstance(statements, dict):
        statements = [statements]
    if not isinstance(statements, list) or not statements:
        return [*found, "Statement must be a non-empty list or object"]
    for n, st in enumerate(statements):
        where = f"Statement[{n}]"
        if not isinstance(st, dict):
            found.append(f"{where} must be an object")
            continue
        if extra := set(st) - _STATEMENT_KEYS:
            found.append(f"{where}: unknown element(s) {sorted(extra)}")
        if st.get("Effect") not in ("Allow", "Deny"):
            found.append(f"{where}: Effect must be Allow or Deny, got {st.get('Effect')!r}")
        if ("Action" in st) == ("NotAction" in st):
            found.append(f"{where}: needs exactly one of Action and NotAction")
        actions = st.get("Action", st.get("NotAction"))
        for action in [actions] if isinstance(actions, str) else actions or []:
            if not isinstance(action, str) or not _ACTION.match(action):
                found.append(f"{where}: action {action!r} is not `service:Action`")
        has_principal = "Principal" in st or "NotPrincipal" in st
        has_resource = "Resource" in st or "NotResource" in st
        if kind == "identity":
            if has_principal:
                found.append(f"{where}: an identity policy has no Principal")
            if not has_resource:
                found.append(f"{where}: needs Resource or NotResource")
            sid = st.get("Sid")
            if isinstance(sid, str) and not re.match(r"^[A-Za-z0-9]*$", sid):
                found.append(f"{where}: Sid {sid!r} must be alphanumeric in IAM policies")
        elif kind == "trust":
            if not has_principal:
                found.append(f"{where}: a trust policy needs a Principal")
            if has_resource:
                found.append(f"{where}: a trust policy has no Resource")
        elif kind == "resource":
            if not has_principal:
                found.append(f"{where}: a resource policy needs a Principal")
            if not has_resource:
                found.append(f"{where}: needs Resource or NotResource")
        condition = st.get("Condition")
        if condition is not None and not (
            isinstance(condition, dict) and all(isinstance(v, dict) for v in condition.values())
        ):
            found.append(f"{where}: Condition must map operators to {{key: values}} objects")
    return found


@maps("aws:iam/role:Role")
def _iam_role(i: Inputs, name: str | None) -> list[ApiRequest]:
    out = [
        ApiRequest(
            "iam",
            "CreateRole",
            drop_none(
                {
                    "Path": i.get("path"),
                    "RoleName": name,
                    "AssumeRolePolicyDocument": i.get("assumeRolePolicy"),
                    "Description": i.get("description"),
                    "MaxSessionDuration": i.get("maxSessionDuration"),
                    "PermissionsBoundary": i.get("permissionsBoundary"),
                    "Tags": tags(i.get("tags")),
                }
            ),
        )
    ]
    for policy in i.get("inlinePolicies") or []:
        if isinstance(policy, Mapping) and policy.get("policy"):
            out.append(
                ApiRequest(
                    "iam",
                    "PutRolePolicy",
                    {
                        "RoleName": name,
                        "PolicyName": policy.get("name"),
                        "PolicyDocument": policy.get("policy"),
                    },
                )
            )
    for arn in i.get("managedPolicyArns") or []:
        out.append(ApiRequest("iam", "AttachRolePolicy", {"RoleName": name, "PolicyArn": arn}))
    return out


@rule("aws:iam/role:Role")
def _iam_role_limits(i: Inputs, _name: str | None) -> Iterable[str]:
    trust = i.get("assumeRolePolicy")
    yield from (f"assumeRolePolicy: {p}" for p in policy_problems(trust, "trust"))
    if isinstance(trust, str) and known(trust) and policy_chars(trust) > TRUST_POLICY_MAX_CHARS:
        yield (
            f"assumeRolePolicy has {policy_chars(trust)} characters (without whitespace), more "
            f"than the {TRUST_POLICY_MAX_CHARS} IAM allows by default"
        )
    for n, policy in enumerate(i.get("inlinePolicies") or []):
        if isinstance(policy, Mapping):
            yield from (
                f"inlinePolicies[{n}]: {p}"
                for p in policy_problems(policy.get("policy"), "identity")
            )
    session, (lo, hi) = i.get("maxSessionDuration"), IAM_ROLE_SESSION_DURATION_RANGE
    if isinstance(session, (int, float)) and not lo <= session <= hi:
        yield f"maxSessionDuration {as_int(session)} is outside {lo}-{hi} seconds"


@maps("aws:iam/rolePolicy:RolePolicy")
def _iam_role_policy(i: Inputs, name: str | None) -> list[ApiRequest]:
    return [
        ApiRequest(
            "iam",
            "PutRolePolicy",
            {"RoleName": i.get("role"), "PolicyName": name, "PolicyDocument": i.get("policy")},
        )
    ]


@rule("aws:iam/rolePolicy:RolePolicy")
def _iam_role_policy_grammar(i: Inputs, _name: str | None) -> Iterable[str]:
    yield from (f"policy: {p}" for p in policy_problems(i.get("policy"), "identity"))


@maps("aws:iam/policy:Policy")
def _iam_policy(i: Inputs, name: str | None) -> list[ApiRequest]:
    return [
        ApiRequest(
            "iam",
            "CreatePolicy",
            drop_none(
                {
                    "PolicyName": name,
                    "Path": i.get("path"),
                    "PolicyDocument": i.get("policy"),
                    "Description": i.get("description"),
                    "Tags": tags(i.get("tags")),
                }
            ),
        )
    ]


@rule("aws:iam/policy:Policy")
def _iam_policy_limits(i: Inputs, _name: str | None) -> Iterable[str]:
    doc = i.get("policy")
    yield from (f"policy: {p}" for p in policy_problems(doc, "identity"))
    if isinstance(doc, str) and known(doc) and policy_chars(doc) > MANAGED_POLICY_MAX_CHARS:
        yield (
            f"policy has {policy_chars(doc)} characters (without whitespace), more than the "
            f"{MANAGED_POLICY_MAX_CHARS} of a managed policy"
        )


@maps("aws:iam/rolePolicyAttachment:RolePolicyAttachment")
def _iam_attachment(i: Inputs, _name: str | None) -> list[ApiRequest]:
    return [
        ApiRequest(
            "iam", "AttachRolePolicy", {"RoleName": i.get("role"), "PolicyArn": i.get("policyArn")}
        )
    ]


@maps("aws:iam/instanceProfile:InstanceProfile")
def _instance_profile(i: Inputs, name: str | None) -> list[ApiRequest]:
    out = [
        ApiRequest(
            "iam",
            "CreateInstanceProfile",
            drop_none(
                {"InstanceProfileName": name, "Path": i.get("path"), "Tags": tags(i.get("tags"))}
            ),
        )
    ]
    if i.get("role") is not None:
        out.append(
            ApiRequest(
                "iam",
                "AddRoleToInstanceProfile",
                {"InstanceProfileName": name, "RoleName": i.get("role")},
            )
        )
    return out


@stack_rule
def _role_policy_totals(
    resources: Sequence[Resource], quotas: Quotas
) -> Iterable[tuple[Resource, str]]:
    """All inline policies of one role within 10,240 characters; at most 10 managed ones."""
    inline: dict[str, list[Resource]] = defaultdict(list)
    attached: dict[str, list[Resource]] = defaultdict(list)
    for r in resources:
        role = r.inputs.get("role")
        if not isinstance(role, str) or not known(role):
            continue
        if r.type == "aws:iam/rolePolicy:RolePolicy":
            inline[role].append(r)
        elif r.type == "aws:iam/rolePolicyAttachment:RolePolicyAttachment":
            attached[role].append(r)
    for role, policies in inline.items():
        docs = [p.inputs.get("policy") for p in policies]
        if all(isinstance(d, str) and known(d) for d in docs):
            total = sum(policy_chars(d) for d in docs)  # type: ignore[arg-type]
            if total > ROLE_INLINE_POLICIES_MAX_CHARS:
                yield (
                    policies[-1],
                    (
                        f"the inline policies of role {role} total {total} characters (without "
                        f"whitespace), more than the {ROLE_INLINE_POLICIES_MAX_CHARS} IAM allows "
                        "(LimitExceeded)"
                    ),
                )
    for role, attachments in attached.items():
        if len(attachments) > quotas.get("managed_policies_per_role", MANAGED_POLICIES_PER_ROLE):
            yield (
                attachments[-1],
                (
                    f"{len(attachments)} managed policies attached to role {role}, more than the "
                    f"default quota of {MANAGED_POLICIES_PER_ROLE}"
                ),
            )
