"""Elastic Load Balancing front doors: ELBv2 load balancers (application, network, gateway) and
classic ELBs.

Routes: listener -> default actions, and every listener rule on it -> forward target groups
(``targetGroupArn``, ``forward.targetGroups[]``, aws-native ``forwardConfig``) -> what the
group sends to: ECS services and task sets, target group attachments (instances, Lambda
functions, ALBs), aws-native inline ``targets``, Auto Scaling groups. An ``alb``-type target
group leads to that ALB's listener on the group's port, so NLB -> ALB routes are followed to the
ALB's own actions. A route is authenticated when the listener verifies mutual TLS, or when an
authenticating action (``authenticate-cognito`` / ``authenticate-oidc`` that denies or
authenticates, ``jwt-validation``) runs before the forward; redirect and fixed-response
actions end a route. A classic ELB cannot authenticate.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from pulumi_policy.proxy import UnknownValueError

from ..resources import (
    AUTOSCALING_GROUP,
    FUNCTION,
    INSTANCE,
    LISTENER,
    LISTENER_RULE,
    LOAD_BALANCER,
    SERVICE,
    SUBNET,
    TARGET_GROUP,
    TASK_SET,
    TG_ATTACHMENT,
    VPC,
    VPC_CIDR_ASSOCIATION,
    as_bool,
    as_list,
    as_number,
    get,
    is_native,
    known,
    lb_is_internet_facing,
    stored,
    stored_path,
    strings,
)
from .addresses import only_private
from .index import Entry, Leg, Model, Resource, label

# --- listeners and rules ----------------------------------------------------------------------


def listeners_of(model: Model, lb: Resource) -> list[Resource]:
    """Listeners on ``lb``."""
    return model.memo("listeners", lambda: _listener_table(model)).get(lb.urn, [])


def _listener_table(model: Model) -> dict[str, list[Resource]]:
    table: dict[str, list[Resource]] = {}
    for listener in model.of(LISTENER):
        for lb in model.refs(
            listener, "loadBalancerArn", LOAD_BALANCER, what="which load balancer serves it"
        ):
            table.setdefault(lb.urn, []).append(listener)
    return table


def rules_of(model: Model, listener: Resource) -> list[Resource]:
    """Listener rules on ``listener``."""
    return model.memo("rules", lambda: _rule_table(model)).get(listener.urn, [])


def _rule_table(model: Model) -> dict[str, list[Resource]]:
    table: dict[str, list[Resource]] = {}
    for rule in model.of(LISTENER_RULE):
        for listener in model.refs(rule, "listenerArn", LISTENER, what="which listener it is on"):
            table.setdefault(listener.urn, []).append(rule)
    return table


def index_listeners(model: Model) -> None:
    """Resolve every listener's load balancer and every rule's listener once, so that a
    listener on a load balancer outside the stack is noted even when no route reaches it."""
    model.memo("listeners", lambda: _listener_table(model))
    model.memo("rules", lambda: _rule_table(model))


def lb_of_listener(model: Model, listener: Resource) -> list[Resource]:
    """The load balancer(s) a listener is on."""
    return [
        lb
        for lb in model.of(LOAD_BALANCER)
        if any(ln.urn == listener.urn for ln in listeners_of(model, lb))
    ]


def _mtls_verify(listener: Resource) -> bool:
    mode = stored_path(listener.props, "mutualAuthentication", "mode", resource=listener)
    return str(mode or "").lower() == "verify"


def ordered_actions(actions: Sequence[Any]) -> list[Any]:
    """Actions in the order ALB runs them: ascending ``order``, list position when unset."""
    keyed = []
    for index, action in enumerate(actions):
        order = as_number(stored(action, "order"))
        keyed.append((order if order is not None else float(index + 1), index, action))
    return [action for _, _, action in sorted(keyed, key=lambda item: (item[0], item[1]))]


def authenticates(action: Any, kind: str, native: bool) -> str | None:
    """How an authenticate action treats anonymous requests (None: it lets them through)."""
    if kind == "jwt-validation":
        return "jwt-validation"
    block = "authenticateCognito" if kind.endswith("cognito") else "authenticateOidc"
    block += "Config" if native else ""
    on_unauth = str(stored_path(action, block, "onUnauthenticatedRequest", default="authenticate"))
    on_unauth = on_unauth.lower()
    return None if on_unauth == "allow" else f"{kind} ({on_unauth})"


def action_chain(model: Model, front: Resource) -> tuple[bool, str | None, list[Resource]]:
    """(forwards?, what authenticates first, target groups) for a listener / rule.

    The route is authenticated only when an authenticating action runs before the forward.
    """
    native = is_native(front.resource_type)
    key = "actions" if front.resource_type in LISTENER_RULE else "defaultActions"
    actions = as_list(get(front.props, key))
    auth: str | None = None
    for action in ordered_actions(actions):
        kind = str(get(action, "type", "")).lower()
        if kind in {"authenticate-cognito", "authenticate-oidc", "jwt-validation"}:
            how = authenticates(action, kind, native)
            if how is not None and auth is None:
                auth = f"{how} on {label(front)}"
        elif kind == "forward":
            groups = model.refs(
                front,
                key,
                TARGET_GROUP,
                values=lambda: _forward_targets(actions, native),
                what="where it forwards",
            )
            return True, auth, groups
        elif kind in {"redirect", "fixed-response"}:
            return False, auth, []
    return False, auth, []


def _forward_targets(actions: Sequence[Any], native: bool) -> list[Any]:
    values: list[Any] = []
    for action in actions:
        if str(get(action, "type", "")).lower() != "forward":
            continue
        values.append(get(action, "targetGroupArn"))
        block = get(action, "forwardConfig" if native else "forward")
        for group in as_list(get(block, "targetGroups") if block is not None else None):
            values.append(get(group, "targetGroupArn" if native else "arn"))
    return values


# --- rule conditions --------------------------------------------------------------------------

#: Resources whose address ranges are the stack's own (a rule admitting only them admits no
#: internet client): their CIDR attributes.
_OWNED_RANGES = {
    "cidrBlock": VPC | SUBNET | VPC_CIDR_ASSOCIATION,
    "ipv6CidrBlock": VPC | SUBNET | VPC_CIDR_ASSOCIATION,
}


def private_sources_only(model: Model, rule: Resource) -> bool:
    """Whether a listener rule's ``source-ip`` condition admits only addresses no internet
    client has: private and special-purpose ranges, or the stack's own VPC / subnet ranges.

    ``sourceIp`` matches the connection's own source address, so it restricts who connects
    (a header condition, ``X-Forwarded-For`` included, is written by the client and never
    does). Conditions are ANDed, so one such condition is enough. Values unknown at preview
    are the stack's own ranges when the engine recorded a dependency on a VPC or subnet;
    otherwise the rule cannot be told and is noted (and not counted as a route).
    """
    for condition in as_list(get(rule.props, "conditions")):
        try:
            values = _source_ips(rule, condition)
        except UnknownValueError:
            deps = (rule.property_dependencies or {}).get("conditions") or ()
            if any(d.resource_type in VPC | SUBNET | VPC_CIDR_ASSOCIATION for d in deps):
                return True
            model.note(
                rule,
                "conditions",
                "has a source-ip condition unknown at preview; the rule is not counted as a "
                "route from the internet",
                "who can match it",
            )
            return True
        if values is not None and only_private(values, _owned_ranges(model)):
            return True
    return False


def _source_ips(rule: Resource, condition: Any) -> list[str] | None:
    """The CIDRs of a source-ip condition (None: another kind of condition)."""
    if is_native(rule.resource_type):
        block = get(condition, "sourceIpConfig")
        if block is None and str(get(condition, "field", "")).lower() != "source-ip":
            return None
        values = get(block, "values") if block is not None else get(condition, "values")
    else:
        block = get(condition, "sourceIp")
        if block is None:
            return None
        values = get(block, "values")
    return [str(v) for v in as_list(values)]


def _owned_ranges(model: Model) -> tuple[str, ...]:
    def compute() -> tuple[str, ...]:
        found: list[str] = []
        for key, types in _OWNED_RANGES.items():
            for resource in model.of(types):
                value = known(resource.props, key)
                if isinstance(value, str) and value:
                    found.append(value)
        return tuple(found)

    return model.memo("owned_ranges", compute)


# --- routes -----------------------------------------------------------------------------------


def lb_legs(
    model: Model,
    lb: Resource,
    port: int | None = None,
    seen: frozenset[str] = frozenset(),
    *,
    direct: bool = False,
) -> list[Leg]:
    """Every route through ``lb`` (only listeners on ``port`` when given). ``direct``: the
    internet connects to ``lb`` itself, so a rule's source addresses are the clients' own."""
    if lb.urn in seen:
        return []
    key = ("lb_legs", lb.urn, port, seen, direct)
    return model.memo(key, lambda: list(_lb_legs(model, lb, port, seen | {lb.urn}, direct)))


def _lb_legs(
    model: Model, lb: Resource, port: int | None, seen: frozenset[str], direct: bool
) -> Iterator[Leg]:
    for listener in listeners_of(model, lb):
        lport = as_number(stored(listener.props, "port", None, listener))
        if port is not None and lport is not None and int(lport) != port:
            continue
        yield from listener_legs(model, listener, lb, seen, direct=direct)


def listener_legs(
    model: Model,
    listener: Resource,
    lb: Resource | None = None,
    seen: frozenset[str] = frozenset(),
    *,
    direct: bool = False,
) -> list[Leg]:
    """Every route through one listener (its default actions and its rules; a rule that only
    private sources can match is no route when the internet connects directly)."""
    lbs = [lb] if lb is not None else lb_of_listener(model, listener)
    mtls = "mutual TLS verify on " + label(listener) if _mtls_verify(listener) else None
    legs: list[Leg] = []
    for front in [listener, *rules_of(model, listener)]:
        if direct and front is not listener and private_sources_only(model, front):
            continue
        forwards, auth, groups = action_chain(model, front)
        if not forwards:
            continue
        auth = mtls or auth
        head = tuple(label(x) for x in (*lbs, front))
        if not groups:
            legs.append(Leg(front, auth, head, (), tuple(lbs), (front,)))
        for tg in groups:
            for sub in tg_legs(model, tg, seen):
                legs.append(
                    Leg(
                        front,
                        auth or sub.auth,
                        head + sub.chain,
                        sub.ends,
                        tuple(lbs) + sub.via,
                        (front, *sub.hops),
                    )
                )
    return legs


def tg_legs(model: Model, tg: Resource, seen: frozenset[str] = frozenset()) -> list[Leg]:
    """Routes from a target group to what serves (through ALBs for ``alb`` groups)."""
    legs: list[Leg] = []
    plain: list[Resource] = []
    for backend in backends(model, tg):
        if backend.resource_type in LOAD_BALANCER:
            port = as_number(get(tg.props, "port"))
            for sub in lb_legs(model, backend, int(port) if port is not None else None, seen):
                legs.append(
                    Leg(
                        sub.front,
                        sub.auth,
                        (label(tg), *sub.chain),
                        sub.ends,
                        sub.via,
                        (tg, *sub.hops),
                    )
                )
        else:
            plain.append(backend)
    if plain or not legs:
        ends = tuple(plain) if plain else (tg,)
        legs.append(Leg(tg, None, (label(tg), *(label(e) for e in plain)), ends, (), (tg, *plain)))
    return legs


def backends(model: Model, tg: Resource) -> list[Resource]:
    """What a target group sends traffic to: ECS services / task sets, attached instances,
    Lambda functions or ALBs, Auto Scaling groups."""
    return model.memo("backends", lambda: _backend_table(model)).get(tg.urn, [])


def _backend_table(model: Model) -> dict[str, list[Resource]]:
    table: dict[str, dict[str, Resource]] = {}

    def add(tg: Resource, backend: Resource) -> None:
        table.setdefault(tg.urn, {})[backend.urn] = backend

    for service in model.of(SERVICE | TASK_SET):
        groups = model.refs(
            service,
            "loadBalancers",
            TARGET_GROUP,
            values=lambda s=service: [
                get(lb, "targetGroupArn") for lb in as_list(get(s.props, "loadBalancers"))
            ],
            silent_external=True,
        )
        for tg in groups:
            add(tg, service)
    targets = INSTANCE | FUNCTION | LOAD_BALANCER
    for attachment in model.of(TG_ATTACHMENT):
        groups = model.refs(attachment, "targetGroupArn", TARGET_GROUP, silent_external=True)
        found = model.refs(attachment, "targetId", targets, silent_external=True)
        for tg in groups:
            for target in found:
                add(tg, target)
    for tg in model.of(TARGET_GROUP):
        if is_native(tg.resource_type):
            ids = model.refs(
                tg,
                "targets",
                targets,
                values=lambda t=tg: [get(x, "id") for x in as_list(get(t.props, "targets"))],
                silent_external=True,
            )
            for target in ids:
                add(tg, target)
    for asg in model.of(AUTOSCALING_GROUP):
        for tg in model.refs(asg, "targetGroupArns", TARGET_GROUP, silent_external=True):
            add(tg, asg)
    return {k: list(v.values()) for k, v in table.items()}


# --- entry points -----------------------------------------------------------------------------


def lb_entry(model: Model, lb: Resource) -> Iterator[Entry]:
    """An internet-facing ELBv2 load balancer: every route through it."""
    if lb_is_internet_facing(lb.resource_type, lb.props, lb):
        for leg in lb_legs(model, lb, direct=True):
            yield lb, leg


def classic_entry(model: Model, elb: Resource) -> Iterator[Entry]:
    """An internet-facing classic ELB with listeners: one route to its instances, Auto Scaling
    groups and ECS services (it cannot authenticate)."""
    internal = as_bool(stored(elb.props, "internal", False, elb))
    if not internal and as_list(get(elb.props, "listeners")):
        ends = _classic_backends(model, elb)
        yield elb, Leg(elb, None, (label(elb),), tuple(ends), (elb,), (elb,))


def _classic_backends(model: Model, elb: Resource) -> list[Resource]:
    found = model.refs(elb, "instances", INSTANCE, silent_external=True)
    name = known(elb.props, "name")
    users = model.memo("classic-users", lambda: _ClassicUsers(model))
    linked = users.by_dependency.get(elb.urn, [])
    if name:
        for urn, error in users.unreadable.items():
            if all(u.urn != urn for u in linked):
                raise error  # its names may include this ELB's
        linked = [*linked, *users.by_name.get(name, ())]
    for kind in (AUTOSCALING_GROUP, SERVICE):  # Auto Scaling groups first, then services
        found += model.in_order(u for u in linked if u.resource_type in kind)
    return found


class _ClassicUsers:
    """Auto Scaling groups and ECS services by the classic ELBs their ``loadBalancers`` depend
    on (URN) or name, once per model; ``unreadable``: those whose names are unknown."""

    def __init__(self, model: Model) -> None:
        self.by_dependency: dict[str, list[Resource]] = {}
        self.by_name: dict[str, list[Resource]] = {}
        self.unreadable: dict[str, UnknownValueError] = {}
        for user in model.of(AUTOSCALING_GROUP | SERVICE):
            for dep in (user.property_dependencies or {}).get("loadBalancers") or []:
                self.by_dependency.setdefault(dep.urn, []).append(user)
            try:
                names = _classic_names(user)
            except UnknownValueError as error:
                self.unreadable[user.urn] = error
                continue
            for elb_name in names:
                self.by_name.setdefault(elb_name, []).append(user)


def _classic_names(user: Resource) -> set[str]:
    if user.resource_type in AUTOSCALING_GROUP:
        names = set(strings(known(user.props, "loadBalancers")))
    else:
        names = {known(lb, "elbName") for lb in as_list(known(user.props, "loadBalancers"))}
    return {n for n in names if isinstance(n, str) and n}
