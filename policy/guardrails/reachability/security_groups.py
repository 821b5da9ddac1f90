"""Security groups: what their ingress admits, and what they are attached to.

The model adds up each group's ingress (inline, ``SecurityGroupRule``,
``SecurityGroupIngressRule``, aws-native ``SecurityGroupIngress``; IPv4, IPv6, and the entries
of prefix lists declared in the stack) per port, and asks whether the union covers the internet
(``addresses``). A group outside the stack named only by its id is judged under that id
(:func:`external_group`): a standalone rule of the stack that opens it and a resource of the
stack that names the same id are its ingress and its attachment. A group is judged by what it
is attached to: see :data:`_ATTACHMENTS` for the kinds.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pulumi_policy.proxy import UnknownValueError

from ..resources import (
    CLASSIC_ELB,
    DEFAULT_SECURITY_GROUP,
    EXPRESS_SERVICE,
    FUNCTION,
    INGRESS_RULE,
    INSTANCE,
    LAUNCH_CONFIGURATION,
    LAUNCH_TEMPLATE,
    LOAD_BALANCER,
    NETWORK_INTERFACE,
    PREFIX_LIST,
    PREFIX_LIST_ENTRY,
    SECURITY_GROUP,
    SERVICE,
    TASK_SET,
    VPC_ENDPOINT,
    as_list,
    get,
    is_native,
    known,
    present,
    stored,
)
from .addresses import covers_internet, port_range, public_share
from .index import Model, Resource

GROUPS = SECURITY_GROUP | DEFAULT_SECURITY_GROUP

#: Egress rules name a group without attaching it to anything.
_EGRESS_RULES = frozenset(
    {
        "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule",
        "aws-native:ec2:SecurityGroupEgress",
    }
)


@dataclass(frozen=True)
class Ingress:
    """One ingress permission: who holds it, which ports, which sources."""

    holder: Resource
    ports: tuple[int, int]
    cidrs: tuple[str, ...]


_EXTERNAL_GROUP = "security-group-outside-stack:"


def external_group(group_id: str) -> str:
    """The key under which a security group outside the stack, named by ``group_id``, is
    judged (its ingress from the stack's rules, its attachments from the stack's resources)."""
    return _EXTERNAL_GROUP + group_id


# --- ingress ----------------------------------------------------------------------------------


def ingress(model: Model) -> dict[str, list[Ingress]]:
    """Security group URN (or ``external_group`` key) -> its ingress permissions."""
    return model.memo("ingress", lambda: _ingress_table(model))


def _ingress_table(model: Model) -> dict[str, list[Ingress]]:
    table: dict[str, list[Ingress]] = {}
    for sg in model.of(GROUPS):
        inline_key = "securityGroupIngress" if is_native(sg.resource_type) else "ingress"
        for entry in as_list(stored(sg.props, inline_key, None, sg)):
            item = _ingress_item(model, sg, entry, inline_key)
            if item is not None:
                table.setdefault(sg.urn, []).append(item)
    for rule in model.of(INGRESS_RULE):
        if (
            rule.resource_type == "aws:ec2/securityGroupRule:SecurityGroupRule"
            and str(get(rule.props, "type", "")).lower() != "ingress"
        ):
            continue
        key = "groupId" if is_native(rule.resource_type) else "securityGroupId"
        item = _ingress_item(model, rule, rule.props, None)
        if item is None:
            continue
        groups = model.refs(rule, key, GROUPS, what="which security group it opens")
        for sg in groups:
            table.setdefault(sg.urn, []).append(item)
        if not groups:
            # A group outside the stack, named by its id: judged under that id, so a
            # resource of the stack that names the same id is attached to it.
            literal = known(rule.props, key)
            if isinstance(literal, str) and literal:
                table.setdefault(external_group(literal), []).append(item)
            elif covers_internet(item.cidrs):
                table.setdefault(rule.urn, []).append(item)
    return table


#: (CIDR keys, protocol key, prefix list key) of an ingress entry, per holder type.
_AWS_ENTRY = (("cidrBlocks", "ipv6CidrBlocks"), "protocol", "prefixListIds")
_VPC_RULE_ENTRY = (("cidrIpv4", "cidrIpv6"), "ipProtocol", "prefixListId")
_NATIVE_ENTRY = (("cidrIp", "cidrIpv6"), "ipProtocol", "sourcePrefixListId")
_ENTRY_KEYS = {
    "aws:ec2/securityGroup:SecurityGroup": _AWS_ENTRY,
    "aws:ec2/securityGroupRule:SecurityGroupRule": _AWS_ENTRY,
    "aws:ec2/defaultSecurityGroup:DefaultSecurityGroup": _AWS_ENTRY,
    "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule": _VPC_RULE_ENTRY,
}


def _ingress_item(
    model: Model, holder: Resource, entry: Mapping[str, Any], pl_prop: str | None
) -> Ingress | None:
    """The permission of one ingress entry when its sources include public addresses
    (prefix lists expanded); None when only private sources or no ports."""
    cidr_keys, proto, pl_key = _ENTRY_KEYS.get(holder.resource_type, _NATIVE_ENTRY)
    cidrs = [str(c) for key in cidr_keys for c in as_list(get(entry, key))]
    if present(entry, pl_key):
        cidrs += _prefix_list_cidrs(
            model, holder, pl_prop or pl_key, lambda: list(as_list(get(entry, pl_key)))
        )
    if not any(public_share(c) for c in cidrs):
        return None
    ports = port_range(get(entry, proto, "tcp"), get(entry, "fromPort"), get(entry, "toPort"))
    if ports is None:
        return None
    return Ingress(holder, ports, tuple(cidrs))


def _prefix_list_cidrs(
    model: Model, holder: Resource, prop: str, values: Callable[[], list[Any]]
) -> list[str]:
    """CIDRs of the stack's prefix lists an ingress names ("cannot verify" otherwise)."""
    lists = model.refs(
        holder, prop, PREFIX_LIST, values=values, what="which addresses its prefix list admits"
    )
    cidrs: list[str] = []
    for pl in lists:
        cidrs += [str(get(e, "cidr")) for e in as_list(get(pl.props, "entries")) if get(e, "cidr")]
        entries = model.referrers(PREFIX_LIST_ENTRY, "prefixListId", PREFIX_LIST)
        cidrs += [str(get(entry.props, "cidr", "")) for entry in entries.get(pl.urn, ())]
    return cidrs


def internet_ports(model: Model, key: str) -> tuple[list[tuple[int, int]], list[Resource]]:
    """(port ranges on which the group ``key`` (a URN or an ``external_group`` key) admits the
    internet, the resources holding that ingress). CIDRs of permissions on one port add up."""
    return model.memo(("internet", key), lambda: _internet_ports(ingress(model).get(key, [])))


def _internet_ports(items: list[Ingress]) -> tuple[list[tuple[int, int]], list[Resource]]:
    if not items:
        return [], []
    points = sorted({p for i in items for p in (i.ports[0], i.ports[1] + 1)})
    open_ranges: list[tuple[int, int]] = []
    holders: dict[str, Resource] = {}
    for low, nxt in itertools.pairwise(points):
        covering = [i for i in items if i.ports[0] <= low and nxt - 1 <= i.ports[1]]
        cidrs = [c for i in covering for c in i.cidrs]
        if covering and covers_internet(cidrs):
            if open_ranges and open_ranges[-1][1] == low - 1:
                open_ranges[-1] = (open_ranges[-1][0], nxt - 1)
            else:
                open_ranges.append((low, nxt - 1))
            for i in covering:
                if any(public_share(c) for c in i.cidrs):
                    holders.setdefault(i.holder.urn, i.holder)
    return open_ranges, list(holders.values())


def external_groups(model: Model) -> list[str]:
    """Keys (``external_group(id)``) of groups outside the stack that a rule of the stack
    opens to the internet."""
    return [
        key
        for key in ingress(model)
        if key.startswith(_EXTERNAL_GROUP) and internet_ports(model, key)[0]
    ]


# --- attachments ------------------------------------------------------------------------------

#: A path into a resource's inputs to its security group ids; ``*`` walks each list item.
Path = tuple[str, ...]
#: (kind, the top-level input(s) holding the reference, paths to the group ids).
Attachment = tuple[str, str | tuple[str, ...], tuple[Path, ...]]


def _per_provider(types: frozenset[str], aws: Attachment, native: Attachment) -> dict:
    return {t: native if is_native(t) else aws for t in types}


# Kinds: "task" and "instance" serve whatever their ports carry; "lb" is judged by its routes;
# "endpoint" (interface VPC endpoints), "function" (Lambda ENIs) and "egress" (App Runner VPC
# connectors) never receive internet traffic.
_SERVICE_GROUPS: Attachment = (
    "task",
    "networkConfiguration",
    (("networkConfiguration", "securityGroups"),),
)
_ATTACHMENTS: dict[str, Attachment] = {
    **_per_provider(
        SERVICE,
        _SERVICE_GROUPS,
        (
            "task",
            "networkConfiguration",
            (("networkConfiguration", "awsvpcConfiguration", "securityGroups"),),
        ),
    ),
    **_per_provider(
        TASK_SET,
        _SERVICE_GROUPS,
        (
            "task",
            "networkConfiguration",
            (("networkConfiguration", "awsVpcConfiguration", "securityGroups"),),
        ),
    ),
    **_per_provider(
        EXPRESS_SERVICE,
        ("task", "networkConfigurations", (("networkConfigurations", "*", "securityGroups"),)),
        _SERVICE_GROUPS,
    ),
    **_per_provider(
        INSTANCE,
        (
            "instance",
            ("vpcSecurityGroupIds", "securityGroups"),
            (("vpcSecurityGroupIds",), ("securityGroups",)),
        ),
        (
            "instance",
            ("securityGroupIds", "securityGroups", "networkInterfaces"),
            (("securityGroupIds",), ("securityGroups",), ("networkInterfaces", "*", "groupSet")),
        ),
    ),
    **_per_provider(
        LAUNCH_TEMPLATE,
        (
            "instance",
            ("vpcSecurityGroupIds", "networkInterfaces"),
            (("vpcSecurityGroupIds",), ("networkInterfaces", "*", "securityGroups")),
        ),
        (
            "instance",
            "launchTemplateData",
            (
                ("launchTemplateData", "securityGroupIds"),
                ("launchTemplateData", "networkInterfaces", "*", "groups"),
            ),
        ),
    ),
    **{t: ("instance", "securityGroups", (("securityGroups",),)) for t in LAUNCH_CONFIGURATION},
    **_per_provider(
        NETWORK_INTERFACE,
        ("instance", "securityGroups", (("securityGroups",),)),
        ("instance", "groupSet", (("groupSet",),)),
    ),
    **{t: ("lb", "securityGroups", (("securityGroups",),)) for t in LOAD_BALANCER | CLASSIC_ELB},
    **{t: ("endpoint", "securityGroupIds", (("securityGroupIds",),)) for t in VPC_ENDPOINT},
    **{t: ("function", "vpcConfig", (("vpcConfig", "securityGroupIds"),)) for t in FUNCTION},
    **{
        t: ("egress", "securityGroups", (("securityGroups",),))
        for t in ("aws:apprunner/vpcConnector:VpcConnector", "aws-native:apprunner:VpcConnector")
    },
}


def _walk(value: Any, path: Path) -> list[Any]:
    """The values at ``path`` under ``value`` (lists at the end are flattened)."""
    if not path:
        return list(as_list(value))
    head, rest = path[0], path[1:]
    if head == "*":
        return [found for item in as_list(value) for found in _walk(item, rest)]
    if not isinstance(value, Mapping):
        return []
    return _walk(get(value, head), rest)


def _attachment_spec(
    resource: Resource,
) -> tuple[str, str | tuple[str, ...], Callable[[], list[Any]]] | None:
    """(kind, input key(s), reader of the group ids) for a resource that takes security
    groups; None for any other type."""
    spec = _ATTACHMENTS.get(resource.resource_type)
    if spec is None:
        return None
    kind, key, paths = spec
    props = resource.props

    def groups() -> list[Any]:
        # The top-level input is Optional+Computed on several types (an instance's groups):
        # unset, unknown on a first preview or as stored after up, all mean "none named".
        return [
            g for path in paths for g in _walk(stored(props, path[0], None, resource), path[1:])
        ]

    return kind, key, groups


def attachments(model: Model, key: str) -> list[tuple[str, Resource]]:
    """(kind, resource) for everything the group ``key`` (a URN or an ``external_group``
    key) is attached to; kind "other" for a resource that depends on it some other way."""
    return model.memo("attach", lambda: _attachment_table(model)).get(key, [])


def _attachment_table(model: Model) -> dict[str, list[tuple[str, Resource]]]:
    table: dict[str, dict[str, tuple[str, Resource]]] = {}
    for resource in model.resources:
        spec = _attachment_spec(resource)
        if spec is None:
            _other_dependents(resource, table)
            continue
        kind, key, values = spec
        for sg in model.refs(
            resource, key, GROUPS, values=values, what="which security groups it uses"
        ):
            table.setdefault(sg.urn, {})[resource.urn] = (kind, resource)
        try:
            named = [v for v in values() if isinstance(v, str) and v]
        except UnknownValueError:  # refs() has left the "cannot verify" note
            named = []
        for value in named:
            if not model.lookup(value, GROUPS):
                table.setdefault(external_group(value), {})[resource.urn] = (kind, resource)
    return {k: list(v.values()) for k, v in table.items()}


def _other_dependents(
    resource: Resource, table: dict[str, dict[str, tuple[str, Resource]]]
) -> None:
    """A resource the pack does not judge that depends on a group (kind "other")."""
    if resource.resource_type in GROUPS | INGRESS_RULE | _EGRESS_RULES:
        return
    deps = getattr(resource, "property_dependencies", None) or {}
    for key, targets in deps.items():
        if key in {"vpcId", "tags"}:
            continue
        for dep in targets:
            if dep.resource_type in GROUPS:
                table.setdefault(dep.urn, {})[resource.urn] = ("other", resource)


def security_groups_of(model: Model, resource: Resource) -> list[Resource] | None:
    """Security groups attached to a compute resource; None when it names none (it then
    uses its VPC's default group)."""
    spec = _attachment_spec(resource)
    if spec is None:
        return []
    _, key, values = spec
    return model.refs_or_none(resource, key, GROUPS, values)
