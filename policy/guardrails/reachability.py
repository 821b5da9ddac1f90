"""The reachability model: what the internet can reach in a stack, and whether it authenticates.

One place answers every exposure question the pack asks. It starts from each internet entry
point and follows the routes to what serves at the end:

* internet-facing ELBv2 load balancers (application, network, gateway): listener -> default
  actions or listener rule -> target group -> ECS service / instance / Auto Scaling group /
  Lambda, and NLB -> ``alb``-type target group -> that ALB's listener on the group's port;
* classic ELBs (they cannot authenticate);
* API Gateway HTTP/WebSocket routes (and quick-create APIs) and REST methods -> integration ->
  VPC link -> listener / NLB, a load balancer's DNS name, or a Lambda function;
* CloudFront distributions -> VPC origin or load-balancer origin;
* App Runner services and ECS Express services that are publicly accessible, and Lambda
  function URLs without IAM auth.

A path is authenticated when the first thing on it that can refuse a request does: an ALB
action list whose first action is ``authenticate-cognito`` / ``authenticate-oidc`` with
``onUnauthenticatedRequest`` ``deny`` or ``authenticate`` (AWS's default) or
``jwt-validation``; a listener with mutual TLS ``verify``; an API Gateway route or method with
an authorizer (JWT, Lambda, IAM, Cognito); a CloudFront distribution whose every cache behavior
requires signed requests (trusted key groups / signers) or runs a viewer-request function.
``onUnauthenticatedRequest: allow``, ``NONE`` and plain CloudFront do not count.

References resolve through property dependencies first (what the engine records while ARNs are
unknown), then by value (ARNs, ids and names are known on ``pulumi up`` and on previews of
existing stacks). A reference that resolves to nothing is never passed in silence: the model
records a "cannot verify" note, naming the resource and the property, that the calling rule
hands to ``guardrail-notes``.

Security groups are judged by what they are attached to. Whether ingress admits the internet
is computed on address sets: the union of an ingress's IPv4 / IPv6 CIDRs and of the entries of
prefix lists declared in the stack must cover all public unicast space (so ``0.0.0.0/1`` plus
``128.0.0.0/1`` is the internet, ``203.0.113.0/24`` is a client allow-list).
"""

from __future__ import annotations

import functools
import ipaddress
import itertools
import re
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pulumi_policy.proxy import UnknownValueError, _DictProxy  # pyright: ignore[reportPrivateUsage]

from . import tags
from .resources import (
    APP_RUNNER,
    AUTOSCALING_GROUP,
    CLASSIC_ELB,
    CLUSTER,
    DEFAULT_SECURITY_GROUP,
    DISTRIBUTION,
    EIP,
    EIP_ASSOCIATION,
    EXPRESS_SERVICE,
    FUNCTION,
    FUNCTION_URL,
    HTTP_API,
    HTTP_INTEGRATION,
    HTTP_ROUTE,
    HTTP_VPC_LINK,
    INGRESS_RULE,
    INSTANCE,
    LAUNCH_CONFIGURATION,
    LAUNCH_TEMPLATE,
    LISTENER,
    LISTENER_RULE,
    LOAD_BALANCER,
    NETWORK_INTERFACE,
    PREFIX_LIST,
    PREFIX_LIST_ENTRY,
    REST_API,
    REST_INTEGRATION,
    REST_METHOD,
    REST_VPC_LINK,
    SECURITY_GROUP,
    SERVICE,
    SERVICE_DISCOVERY_NAMESPACE,
    SUBNET,
    TARGET_GROUP,
    TASK_DEFINITION,
    TASK_SET,
    TG_ATTACHMENT,
    VPC_ENDPOINT,
    VPC_ORIGIN,
    NoteRelay,
    UnknownCollector,
    accelerator_needs,
    as_bool,
    as_list,
    as_number,
    container_definitions,
    get,
    get_path,
    is_native,
    lb_is_internet_facing,
)

Resource = Any

# --- address space ----------------------------------------------------------------------------

Net4 = ipaddress.IPv4Network
Net6 = ipaddress.IPv6Network

#: IPv4 space that is not routable on the internet (RFC 6890 special-purpose registry).
_NON_PUBLIC_V4 = [
    ipaddress.IPv4Network(c)
    for c in (
        "0.0.0.0/8",
        "10.0.0.0/8",
        "100.64.0.0/10",
        "127.0.0.0/8",
        "169.254.0.0/16",
        "172.16.0.0/12",
        "192.0.0.0/24",
        "192.0.2.0/24",
        "192.168.0.0/16",
        "198.18.0.0/15",
        "198.51.100.0/24",
        "203.0.113.0/24",
        "224.0.0.0/3",
    )
]
#: IPv6 global unicast space.
_PUBLIC_V6 = ipaddress.IPv6Network("2000::/3")


def _public_v4() -> list[Net4]:
    remaining = [ipaddress.IPv4Network("0.0.0.0/0")]
    for hole in _NON_PUBLIC_V4:
        nxt: list[Net4] = []
        for net in remaining:
            if hole.subnet_of(net):
                nxt.extend(net.address_exclude(hole))
            elif not net.subnet_of(hole):
                nxt.append(net)
        remaining = nxt
    return sorted(remaining)


_PUBLIC_V4 = _public_v4()


def _covers(nets: Sequence[Any], target: Any) -> bool:
    """True when the union of ``nets`` contains every address of ``target``."""
    overlapping = [n for n in nets if n.overlaps(target)]
    if not overlapping:
        return False
    if any(target.subnet_of(n) for n in overlapping):
        return True
    low, high = target.subnets(prefixlen_diff=1)
    return _covers(overlapping, low) and _covers(overlapping, high)


@functools.lru_cache(maxsize=4096)
def _network(cidr: str) -> Net4 | Net6 | None:
    try:
        return ipaddress.ip_network(cidr.strip(), strict=False)
    except ValueError:
        return None


def covers_internet(cidrs: Iterable[str]) -> bool:
    """True when the CIDRs together admit all public IPv4 or all global IPv6 addresses."""
    return _covers_internet(frozenset(str(c) for c in cidrs))


@functools.lru_cache(maxsize=1024)
def _covers_internet(cidrs: frozenset[str]) -> bool:
    v4: list[Net4] = []
    v6: list[Net6] = []
    for cidr in cidrs:
        net = _network(cidr)
        if isinstance(net, ipaddress.IPv4Network):
            v4.append(net)
        elif isinstance(net, ipaddress.IPv6Network):
            v6.append(net)
    if v4 and all(_covers(v4, p) for p in _PUBLIC_V4):
        return True
    return bool(v6) and _covers(v6, _PUBLIC_V6)


@functools.lru_cache(maxsize=4096)
def public_share(cidr: str) -> bool:
    """True when a CIDR includes any public address (it may contribute to internet cover)."""
    net = _network(str(cidr))
    if net is None:
        return False
    if isinstance(net, ipaddress.IPv4Network):
        return any(net.overlaps(p) for p in _PUBLIC_V4)
    return net.overlaps(_PUBLIC_V6)


# --- ports ------------------------------------------------------------------------------------


def port_range(protocol: Any, from_port: Any, to_port: Any) -> tuple[int, int] | None:
    """Port range an ingress covers; protocol ``-1`` / ``all`` is every port, ICMP and other
    port-less protocols None (they carry no service traffic)."""
    number = as_number(protocol)
    # A program may register the protocol as a number (-1.0, 6.0): compare its integer form.
    proto = str(int(number)) if number is not None else str(protocol).lower()
    if proto in {"-1", "all"}:
        return (0, 65535)
    if proto not in {"tcp", "udp", "6", "17"}:
        return None
    low, high = as_number(from_port), as_number(to_port)
    if low is None and high is None:
        return (0, 65535)
    low = low if low is not None else high
    high = high if high is not None else low
    assert low is not None and high is not None
    if low < 0 or high < 0:  # -1 with tcp/udp means all ports in the EC2 API
        return (0, 65535)
    return (int(low), int(high))


def describe_ports(ranges: Iterable[tuple[int, int]]) -> str:
    """``80, 443, 8000-8002`` for a set of port ranges."""
    return ", ".join(str(lo) if lo == hi else f"{lo}-{hi}" for lo, hi in sorted(set(ranges)))


# --- values -----------------------------------------------------------------------------------


def _strings(value: Any) -> list[str]:
    """Every string in a (nested) input value; reading an unknown raises."""
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, Mapping):
        return [s for key in value for s in _strings(value[key])]
    if isinstance(value, Sequence):  # lists arrive as the proxy's Sequence, not list
        return [s for item in value for s in _strings(item)]
    return []


def present(props: Any, key: str) -> bool:
    """Whether ``key`` is set (possibly to a value unknown at preview), without reading it.

    The unknown-checking proxy raises on ``in`` too (``Mapping.__contains__`` reads the
    value), so this looks at the proxied dict itself, which pulumi_policy exposes as
    ``proxy["__target"]`` (pulumi-policy 1.21, pinned).
    """
    if not isinstance(props, Mapping):
        return False
    raw = props["__target"] if isinstance(props, _DictProxy) else props
    return raw.get(key) is not None


def _known(props: Mapping[str, Any], key: str) -> Any:
    """``props[key]`` or None when absent or unknown. Only the identity index uses this: an
    identity that is unknown simply cannot be matched by value."""
    try:
        return get(props, key)
    except UnknownValueError:
        return None


def tags_of(props: Mapping[str, Any]) -> dict[str, str]:
    """Tags as a dict: aws ``tags`` map, aws-native ``[{key, value}]`` list."""
    raw = get(props, "tags")
    if isinstance(raw, Mapping):
        return {str(k): str(raw[k]) for k in raw}
    out: dict[str, str] = {}
    for item in as_list(raw):
        if isinstance(item, Mapping) and get(item, "key") is not None:
            out[str(get(item, "key"))] = str(get(item, "value", ""))
    return out


_IDENTITY_KEYS = (
    "arn",
    "id",
    "name",
    "family",
    "functionName",
    "dnsName",
    "arnSuffix",
    "loadBalancerArn",
    "targetGroupArn",
    "listenerArn",
    "ruleArn",
    "groupId",
    "groupName",
    "taskDefinitionArn",
    "vpcLinkId",
    "apiId",
    "integrationId",
    "restApiId",
    "prefixListId",
    "subnetId",
    "instanceId",
    "launchTemplateId",
    "launchTemplateName",
    "allocationId",
    "publicIp",
    "serviceArn",
    "clusterArn",
    "clusterName",
    "vpcEndpointId",
)

#: For types whose own identity lives under a key that other types use for references.
_OWN_KEY_TYPES: dict[str, frozenset[str]] = {
    "loadBalancerArn": LOAD_BALANCER,
    "targetGroupArn": TARGET_GROUP,
    "listenerArn": LISTENER,
    "ruleArn": LISTENER_RULE,
    "taskDefinitionArn": TASK_DEFINITION,
    "vpcLinkId": HTTP_VPC_LINK | REST_VPC_LINK,
    "apiId": HTTP_API,
    "integrationId": HTTP_INTEGRATION,
    "restApiId": REST_API,
    "prefixListId": PREFIX_LIST,
    "subnetId": SUBNET,
    "instanceId": INSTANCE,
    "launchTemplateId": LAUNCH_TEMPLATE,
    "allocationId": EIP,
    "groupId": SECURITY_GROUP,
    "serviceArn": SERVICE | APP_RUNNER | EXPRESS_SERVICE,
    "vpcEndpointId": VPC_ENDPOINT,
}

#: Egress rules name a group without attaching it to anything.
_EGRESS_RULES = frozenset(
    {
        "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule",
        "aws-native:ec2:SecurityGroupEgress",
    }
)

#: Resources whose outputs name things outside the stack: a reference that depends on one of
#: them is not explained by the dependency.
_OUTSIDE_REFERENCES = frozenset({"pulumi:pulumi:StackReference"})

_ELB_ARN = re.compile(r":(?:loadbalancer|targetgroup)/(?:(?:app|net|gwy)/)?([^/]+)/")
_TASK_DEF_ARN = re.compile(r":task-definition/([^:/]+)(?::\d+)?$")
_LAMBDA_ARN = re.compile(r":function:([^:/]+)")
_INVOKE_ARN = re.compile(r"/functions/(arn:[^/]+)/invocations")
_URL_HOST = re.compile(r"^[a-z][a-z0-9+.-]*://([^/:]+)", re.IGNORECASE)


def _alternatives(value: str) -> list[str]:
    """Forms under which a reference value may match a resource's identity."""
    out = [value]
    if value.startswith("integrations/"):
        out.append(value[len("integrations/") :])
    match = _INVOKE_ARN.search(value)
    if match:
        out.append(match.group(1))
        value = match.group(1)
    for pattern in (_ELB_ARN, _TASK_DEF_ARN, _LAMBDA_ARN):
        match = pattern.search(value)
        if match:
            out.append(match.group(1))
    if ":" in value and not value.startswith("arn:") and "//" not in value:
        out.append(value.rsplit(":", 1)[0])  # task definition family:revision
    match = _URL_HOST.match(value)
    if match:
        out.append(match.group(1).lower())
    return out


# --- the model --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Leg:
    """One route from what the internet hits to what serves.

    ``front`` is the resource of this stack the internet reaches first on the route (a
    listener or rule, an API route or method, a distribution, a service); ``auth`` says what
    authenticates the route (None: nothing); ``chain`` names the hops; ``ends`` are what serves
    (empty when the target is not in the stack); ``via`` the load balancers passed through.
    """

    front: Resource
    auth: str | None
    chain: tuple[str, ...]
    ends: tuple[Resource, ...]
    via: tuple[Resource, ...] = ()
    hops: tuple[Resource, ...] = ()


@dataclass(frozen=True)
class Ingress:
    """One ingress permission: who holds it, which ports, which sources."""

    holder: Resource
    ports: tuple[int, int]
    cidrs: tuple[str, ...]


def _label(resource: Resource) -> str:
    kind = str(resource.resource_type).rsplit(":", 1)[-1]
    return f"{kind} {resource.name!r}"


# The last model built, per analyzer thread, with the resource list it models (held so that
# the list's identity cannot be reused by another list while the model is cached).
_LAST_MODEL = threading.local()


class Model:
    """The reachability model of one stack (built lazily; every answer is cached).

    ``notes`` (an ``UnknownCollector``) receives the "cannot verify" advisories. Stack rules
    get their model from :meth:`of_stack`, which shares one model among the rules of one
    ``AnalyzeStack`` call.
    """

    def __init__(self, resources: Iterable[Resource], notes: UnknownCollector) -> None:
        self.resources = list(resources)
        self.notes = NoteRelay(notes)
        self.by_urn = {r.urn: r for r in self.resources}
        # (registration position, resource) per type: `of` reads a few types of a big stack.
        self._by_type: dict[str, list[tuple[int, Resource]]] = {}
        for position, r in enumerate(self.resources):
            self._by_type.setdefault(r.resource_type, []).append((position, r))
        self._index: dict[str, list[Resource]] | None = None
        self._cache: dict[Any, Any] = {}

    # --- lookups -------------------------------------------------------------------------

    def of(self, types: Iterable[str]) -> list[Resource]:
        """Resources of ``types`` in registration order."""
        found = [entry for t in frozenset(types) for entry in self._by_type.get(t, ())]
        found.sort(key=lambda entry: entry[0])
        return [r for _, r in found]

    def _identity_index(self) -> dict[str, list[Resource]]:
        if self._index is None:
            index: dict[str, list[Resource]] = {}
            for r in self.resources:
                for key in _IDENTITY_KEYS:
                    own = _OWN_KEY_TYPES.get(key)
                    if own is not None and r.resource_type not in own:
                        continue
                    value = _known(r.props, key)
                    if isinstance(value, str) and value:
                        index.setdefault(value, []).append(r)
                        if key == "dnsName":
                            index.setdefault(value.lower(), []).append(r)
            self._index = index
        return self._index

    def lookup(self, value: str, types: frozenset[str]) -> list[Resource]:
        """Resources of ``types`` whose identity (ARN, id, name, DNS name) is ``value``."""
        index = self._identity_index()
        found: dict[str, Resource] = {}
        for alt in _alternatives(value):
            for r in index.get(alt, ()):
                if r.resource_type in types:
                    found.setdefault(r.urn, r)
            if found:
                break
        return list(found.values())

    def refs(
        self,
        resource: Resource,
        prop: str | tuple[str, ...],
        types: Iterable[str],
        values: Callable[[], Iterable[Any]] | None = None,
        *,
        what: str = "",
        silent_external: bool = False,
    ) -> list[Resource]:
        """Resources of ``types`` that ``resource``'s input ``prop`` refers to.

        ``prop`` may name several inputs (a tuple) that hold the same kind of reference.
        Property dependencies first; then each string value (``values()``, default every
        string in ``prop``) by identity. A value that is unknown without a dependency, or a
        literal that names nothing in the stack, leaves a "cannot verify" note (unless
        ``silent_external``: callers for which an outside target is no exposure).
        """
        wanted = frozenset(types)
        keys = (prop,) if isinstance(prop, str) else tuple(prop)
        recorded = getattr(resource, "property_dependencies", None) or {}
        deps = [d for key in keys for d in recorded.get(key) or ()]
        found: dict[str, Resource] = {d.urn: d for d in deps if d.resource_type in wanted}
        if found:
            return list(found.values())
        prop = keys[0]
        reason = ""
        try:
            raw = list(values()) if values is not None else _strings(get(resource.props, prop))
        except UnknownValueError:
            # Unknown, but when the engine recorded dependencies for the input they say what
            # it refers to (none of ``types``): nothing is left unverified.
            raw = []
            outside = [d for d in deps if d.resource_type in _OUTSIDE_REFERENCES]
            if not deps:
                reason = "is unknown at preview and no dependency records what it refers to"
            elif outside:
                reason = (
                    f"comes from {outside[0].resource_type} {outside[0].name!r} (another stack)"
                )
        missing: list[str] = []
        for value in raw:
            if not isinstance(value, str) or not value:
                continue
            matches = self.lookup(value, wanted)
            if matches:
                for m in matches:
                    found.setdefault(m.urn, m)
            else:
                missing.append(value)
        if missing and not silent_external:
            reason = (
                f"names {', '.join(repr(m) for m in missing[:3])}, not a resource of this stack"
            )
        if reason:
            self.note(resource, prop, reason, what)
        return list(found.values())

    def note(self, resource: Resource, prop: str, reason: str, what: str = "") -> None:
        """Record "cannot verify" for ``resource``'s ``prop``."""
        purpose = f" {what}" if what else ""
        self.notes.note(
            f"cannot verify{purpose}: {resource.resource_type} {resource.name!r} property "
            f"{prop!r} {reason}.",
            resource.urn,
        )

    def _memo(self, key: Any, compute: Callable[[], Any]) -> Any:
        """``compute()``, once; a rule that reuses the answer also gets the notes and unknowns
        the computation left (see ``NoteRelay``)."""
        return self.notes.memo(self._cache, key, compute)

    @classmethod
    def of_stack(cls, resources: list[Resource], notes: UnknownCollector) -> Model:
        """The model of ``resources`` for a rule whose advisories go to ``notes``.

        The pack's analyzer hands every stack rule of one ``AnalyzeStack`` the same resource
        list (``analyzer.DecodeOnceServicer``), so the model is built once for that list and
        only its collector changes from rule to rule. Another list (another call, or the SDK's
        own servicer, which builds a list per rule) gets a new model.
        """
        last: tuple[list[Resource], Model] | None = getattr(_LAST_MODEL, "value", None)
        if last is not None and last[0] is resources:
            last[1].notes.retarget(notes)
            return last[1]
        model = cls(resources, notes)
        _LAST_MODEL.value = (resources, model)
        return model

    # --- load balancers ------------------------------------------------------------------

    def listeners_of(self, lb: Resource) -> list[Resource]:
        """Listeners on ``lb``."""
        table = self._memo("listeners", self._listener_table)
        return table.get(lb.urn, [])

    def _listener_table(self) -> dict[str, list[Resource]]:
        table: dict[str, list[Resource]] = {}
        for listener in self.of(LISTENER):
            for lb in self.refs(
                listener, "loadBalancerArn", LOAD_BALANCER, what="which load balancer serves it"
            ):
                table.setdefault(lb.urn, []).append(listener)
        return table

    def rules_of(self, listener: Resource) -> list[Resource]:
        """Listener rules on ``listener``."""
        table = self._memo("rules", self._rule_table)
        return table.get(listener.urn, [])

    def _rule_table(self) -> dict[str, list[Resource]]:
        table: dict[str, list[Resource]] = {}
        for rule in self.of(LISTENER_RULE):
            for listener in self.refs(
                rule, "listenerArn", LISTENER, what="which listener it is on"
            ):
                table.setdefault(listener.urn, []).append(rule)
        return table

    def lb_of_listener(self, listener: Resource) -> list[Resource]:
        """The load balancer(s) a listener is on."""
        return [
            lb
            for lb in self.of(LOAD_BALANCER)
            if any(ln.urn == listener.urn for ln in self.listeners_of(lb))
        ]

    @staticmethod
    def _mtls_verify(listener: Resource) -> bool:
        mode = get_path(listener.props, "mutualAuthentication", "mode")
        return str(mode or "").lower() == "verify"

    def _action_chain(self, front: Resource) -> tuple[bool, str | None, list[Resource]]:
        """(forwards?, what authenticates first, target groups) for a listener / rule.

        ALB runs actions in ascending ``order`` (list position when unset). The route is
        authenticated only when an authenticating action runs before the forward.
        """
        native = is_native(front.resource_type)
        key = "actions" if front.resource_type in LISTENER_RULE else "defaultActions"
        actions = as_list(get(front.props, key))
        keyed = []
        for index, action in enumerate(actions):
            order = as_number(get(action, "order"))
            keyed.append((order if order is not None else float(index + 1), index, action))
        auth: str | None = None
        for _, _, action in sorted(keyed, key=lambda item: (item[0], item[1])):
            kind = str(get(action, "type", "")).lower()
            if kind in {"authenticate-cognito", "authenticate-oidc"}:
                block = "authenticateCognito" if kind.endswith("cognito") else "authenticateOidc"
                block += "Config" if native else ""
                on_unauth = str(
                    get_path(action, block, "onUnauthenticatedRequest", default="authenticate")
                ).lower()
                if on_unauth != "allow" and auth is None:
                    auth = f"{kind} ({on_unauth}) on {_label(front)}"
            elif kind == "jwt-validation":
                auth = auth or f"jwt-validation on {_label(front)}"
            elif kind == "forward":
                groups = self.refs(
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

    def lb_legs(self, lb: Resource, port: int | None = None, seen: frozenset[str] = frozenset()):
        """Every route through ``lb`` (only listeners on ``port`` when given)."""
        if lb.urn in seen:
            return []
        key = ("lb_legs", lb.urn, port, seen)
        return self._memo(key, lambda: list(self._lb_legs(lb, port, seen | {lb.urn})))

    def _lb_legs(self, lb: Resource, port: int | None, seen: frozenset[str]) -> Iterator[Leg]:
        for listener in self.listeners_of(lb):
            lport = as_number(get(listener.props, "port"))
            if port is not None and lport is not None and int(lport) != port:
                continue
            yield from self.listener_legs(listener, lb, seen)

    def listener_legs(
        self, listener: Resource, lb: Resource | None = None, seen: frozenset[str] = frozenset()
    ) -> list[Leg]:
        """Every route through one listener (its default actions and its rules)."""
        lbs = [lb] if lb is not None else self.lb_of_listener(listener)
        mtls = "mutual TLS verify on " + _label(listener) if self._mtls_verify(listener) else None
        legs: list[Leg] = []
        for front in [listener, *self.rules_of(listener)]:
            forwards, auth, groups = self._action_chain(front)
            if not forwards:
                continue
            auth = mtls or auth
            head = tuple(_label(x) for x in (*lbs, front))
            if not groups:
                legs.append(Leg(front, auth, head, (), tuple(lbs), (front,)))
            for tg in groups:
                for sub in self.tg_legs(tg, seen):
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

    def tg_legs(self, tg: Resource, seen: frozenset[str] = frozenset()) -> list[Leg]:
        """Routes from a target group to what serves (through ALBs for ``alb`` groups)."""
        backends = self.backends(tg)
        legs: list[Leg] = []
        plain: list[Resource] = []
        for backend in backends:
            if backend.resource_type in LOAD_BALANCER:
                port = as_number(get(tg.props, "port"))
                for sub in self.lb_legs(backend, int(port) if port is not None else None, seen):
                    legs.append(
                        Leg(
                            sub.front,
                            sub.auth,
                            (_label(tg), *sub.chain),
                            sub.ends,
                            sub.via,
                            (tg, *sub.hops),
                        )
                    )
            else:
                plain.append(backend)
        if plain or not legs:
            ends = tuple(plain) if plain else (tg,)
            legs.append(
                Leg(tg, None, (_label(tg), *(_label(e) for e in plain)), ends, (), (tg, *plain))
            )
        return legs

    def backends(self, tg: Resource) -> list[Resource]:
        """What a target group sends traffic to: ECS services / task sets, attached instances,
        Lambda functions or ALBs, Auto Scaling groups."""
        table = self._memo("backends", self._backend_table)
        return table.get(tg.urn, [])

    def _backend_table(self) -> dict[str, list[Resource]]:
        table: dict[str, dict[str, Resource]] = {}

        def add(tg: Resource, backend: Resource) -> None:
            table.setdefault(tg.urn, {})[backend.urn] = backend

        for service in self.of(SERVICE | TASK_SET):
            groups = self.refs(
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
        for attachment in self.of(TG_ATTACHMENT):
            groups = self.refs(attachment, "targetGroupArn", TARGET_GROUP, silent_external=True)
            found = self.refs(attachment, "targetId", targets, silent_external=True)
            for tg in groups:
                for target in found:
                    add(tg, target)
        for tg in self.of(TARGET_GROUP):
            if is_native(tg.resource_type):
                ids = self.refs(
                    tg,
                    "targets",
                    targets,
                    values=lambda t=tg: [get(x, "id") for x in as_list(get(t.props, "targets"))],
                    silent_external=True,
                )
                for target in ids:
                    add(tg, target)
        for asg in self.of(AUTOSCALING_GROUP):
            for tg in self.refs(asg, "targetGroupArns", TARGET_GROUP, silent_external=True):
                add(tg, asg)
        return {k: list(v.values()) for k, v in table.items()}

    # --- entry points -----------------------------------------------------------------------

    def entry_legs(self) -> list[tuple[Resource, Leg]]:
        """(entry point, route) for every route the internet can take into the stack.

        Each entry point is followed inside its own unknown-value guard: a value unknown at
        preview skips that entry point only (the calling rule re-raises it as a note).
        """
        return self._memo("entries", self._entries)

    def _entries(self) -> list[tuple[Resource, Leg]]:
        found: list[tuple[Resource, Leg]] = []
        with self.notes.guard():  # listeners and rules on load balancers outside the stack
            self._memo("listeners", self._listener_table)
            self._memo("rules", self._rule_table)
        steps: list[Callable[[], Iterable[tuple[Resource, Leg]]]] = []
        for lb in self.of(LOAD_BALANCER):
            steps.append(lambda lb=lb: self._lb_entry(lb))
        for elb in self.of(CLASSIC_ELB):
            steps.append(lambda elb=elb: self._classic_entry(elb))
        for api in self.of(HTTP_API):
            steps.append(lambda a=api: self._quick_create_entry(a))
        for route in self.of(HTTP_ROUTE):
            steps.append(lambda r=route: self._route_entry(r))
        for method in self.of(REST_METHOD):
            steps.append(lambda m=method: self._method_entry(m))
        for dist in self.of(DISTRIBUTION):
            steps.append(lambda d=dist: self._distribution_entry(d))
        for service in self.of(APP_RUNNER):
            steps.append(lambda s=service: self._app_runner_entry(s))
        for service in self.of(EXPRESS_SERVICE):
            steps.append(lambda s=service: self._express_entry(s))
        for url in self.of(FUNCTION_URL):
            steps.append(lambda u=url: self._url_entry(u))
        for step in steps:
            with self.notes.guard():
                found.extend(self._through_service_connect(list(step())))
        return found

    # --- ECS Service Connect ----------------------------------------------------------------

    def _through_service_connect(
        self, legs: list[tuple[Resource, Leg]]
    ) -> list[tuple[Resource, Leg]]:
        """``legs`` plus, for each route ending at an ECS service that takes part in Service
        Connect, one route on to every server of its namespace: the client's Envoy proxy
        resolves their aliases, so what reaches the client reaches them, past no further auth.
        """
        out = list(legs)
        for entry, leg in legs:
            for client in leg.ends:
                if client.resource_type not in SERVICE:
                    continue
                for server, alias in self.service_connect_servers(client):
                    if any(server.urn == h.urn for h in (*leg.hops, *leg.ends)):
                        continue
                    out.append(
                        (
                            entry,
                            Leg(
                                leg.front,
                                leg.auth,
                                (*leg.chain, f"Service Connect {alias}", _label(server)),
                                (server,),
                                leg.via,
                                (*leg.hops, client, server),
                            ),
                        )
                    )
        return out

    def service_connect_servers(self, client: Resource) -> list[tuple[Resource, str]]:
        """(server, alias) for every Service Connect server ``client`` reaches: each other
        service of its namespace that publishes a port. Empty when ``client`` does not take
        part; "cannot verify" when its namespace cannot be told."""
        key = self._service_connect_namespace(client, judged=True)
        if key is None:
            return []
        table = self._memo("sc_namespaces", self._service_connect_table)
        return [(s, alias) for s, alias in table.get(key, []) if s.urn != client.urn]

    def _service_connect_table(self) -> dict[str, list[tuple[Resource, str]]]:
        table: dict[str, list[tuple[Resource, str]]] = {}
        for service in self.of(SERVICE):
            try:
                key = self._service_connect_namespace(service, judged=False)
                aliases = _service_connect_aliases(service) if key is not None else []
            except UnknownValueError:  # a server that cannot be told is left out, not guessed
                continue
            if key is not None and aliases:
                table.setdefault(key, []).append((service, ", ".join(aliases)))
        return table

    def _service_connect_namespace(self, service: Resource, *, judged: bool) -> str | None:
        """The namespace a service's Service Connect uses (its own ``namespace``, else its
        cluster's ``serviceConnectDefaults``) as a namespace resource URN or the literal ARN /
        name; None when Service Connect is off. ``judged``: leave a "cannot verify" note when
        the namespace is unknown (only for a client the internet reaches)."""
        block = get(service.props, "serviceConnectConfiguration")
        if not isinstance(block, Mapping) or not as_bool(get(block, "enabled", False)):
            return None
        if present(block, "namespace"):
            return self._namespace_key(
                service, "serviceConnectConfiguration", block, judged, "namespace"
            )
        for cluster in self.refs(service, "cluster", CLUSTER, silent_external=True):
            defaults = get(cluster.props, "serviceConnectDefaults")
            if isinstance(defaults, Mapping) and present(defaults, "namespace"):
                return self._namespace_key(
                    cluster, "serviceConnectDefaults", defaults, judged, "namespace"
                )
        if judged:
            self.note(
                service,
                "serviceConnectConfiguration",
                "enables Service Connect without a namespace, and no cluster of this stack "
                "gives it a default one",
                "which Service Connect servers it reaches",
            )
        return None

    def _namespace_key(
        self, holder: Resource, prop: str, block: Mapping[str, Any], judged: bool, key: str
    ) -> str | None:
        deps = [
            d
            for d in (getattr(holder, "property_dependencies", None) or {}).get(prop) or ()
            if d.resource_type in SERVICE_DISCOVERY_NAMESPACE
        ]
        if deps:
            return deps[0].urn
        try:
            value = get(block, key)
        except UnknownValueError:
            if judged:
                self.note(
                    holder,
                    prop,
                    "names a namespace unknown at preview, and no dependency records which",
                    "which Service Connect servers it reaches",
                )
            return None
        if not isinstance(value, str) or not value:
            return None
        found = self.lookup(value, SERVICE_DISCOVERY_NAMESPACE)
        return found[0].urn if found else f"namespace:{value}"

    def _lb_entry(self, lb: Resource) -> Iterator[tuple[Resource, Leg]]:
        if lb_is_internet_facing(lb.resource_type, lb.props):
            for leg in self.lb_legs(lb):
                yield lb, leg

    def _classic_entry(self, elb: Resource) -> Iterator[tuple[Resource, Leg]]:
        if not as_bool(get(elb.props, "internal", False)) and as_list(get(elb.props, "listeners")):
            ends = self._classic_backends(elb)
            yield elb, Leg(elb, None, (_label(elb),), tuple(ends), (elb,), (elb,))

    def _app_runner_entry(self, service: Resource) -> Iterator[tuple[Resource, Leg]]:
        public = get_path(
            service.props, "networkConfiguration", "ingressConfiguration", "isPubliclyAccessible"
        )
        if public is None or as_bool(public):
            yield service, Leg(service, None, (_label(service),), (service,), (), (service,))

    def _express_entry(self, service: Resource) -> Iterator[tuple[Resource, Leg]]:
        if self._express_public(service):
            yield service, Leg(service, None, (_label(service),), (service,), (), (service,))

    def _url_entry(self, url: Resource) -> Iterator[tuple[Resource, Leg]]:
        native = is_native(url.resource_type)
        if str(get(url.props, "authType" if native else "authorizationType", "")).upper() != "NONE":
            return
        functions = self.refs(
            url,
            "targetFunctionArn" if native else "functionName",
            FUNCTION,
            what="which function it invokes",
        )
        yield url, Leg(url, None, (_label(url),), tuple(functions), (), (url, *functions))

    def _classic_backends(self, elb: Resource) -> list[Resource]:
        found = self.refs(elb, "instances", INSTANCE, silent_external=True)
        name = _known(elb.props, "name")
        for asg in self.of(AUTOSCALING_GROUP):
            deps = (asg.property_dependencies or {}).get("loadBalancers") or []
            if any(d.urn == elb.urn for d in deps) or (
                name and name in _strings(_known(asg.props, "loadBalancers"))
            ):
                found.append(asg)
        for service in self.of(SERVICE):
            deps = (service.property_dependencies or {}).get("loadBalancers") or []
            names = {
                _known(lb, "elbName") for lb in as_list(_known(service.props, "loadBalancers"))
            }
            if any(d.urn == elb.urn for d in deps) or (name and name in names):
                found.append(service)
        return found

    def _express_public(self, service: Resource) -> bool:
        """ECS Express creates an internet-facing ALB when its subnets are public; without a
        network configuration it uses the default VPC's (public) subnets."""
        if is_native(service.resource_type):
            config = [get(service.props, "networkConfiguration")]
            key = "networkConfiguration"
        else:
            config = list(as_list(get(service.props, "networkConfigurations")))
            key = "networkConfigurations"
        subnets = self.refs_or_none(
            service,
            key,
            SUBNET,
            lambda: [s for c in config if c for s in as_list(get(c, "subnets"))],
            what="whether its subnets are public",
        )
        if subnets is None:
            return True
        return any(self.subnet_public(s) for s in subnets)

    def subnet_public(self, subnet: Resource) -> bool:
        """A subnet that hands out public IPs on launch."""
        return as_bool(get(subnet.props, "mapPublicIpOnLaunch", False))

    # --- API Gateway ------------------------------------------------------------------------

    def _quick_create_entry(self, api: Resource) -> Iterator[tuple[Resource, Leg]]:
        if present(api.props, "target"):  # quick create: a $default route, no authorizer
            yield from self._integration_target(
                api, api, None, "target", lambda: get(api.props, "target")
            )

    def _route_entry(self, route: Resource) -> Iterator[tuple[Resource, Leg]]:
        auth_type = str(get(route.props, "authorizationType", "NONE")).upper()
        auth = None if auth_type == "NONE" else f"{auth_type} authorizer on {_label(route)}"
        integrations = self.refs(
            route, "target", HTTP_INTEGRATION, what="which integration it invokes"
        )
        for integration in integrations:
            yield from self._http_integration(route, integration, auth)

    def _method_entry(self, method: Resource) -> Iterator[tuple[Resource, Leg]]:
        if self._rest_api_private(method):
            return
        native = is_native(method.resource_type)
        kind = str(get(method.props, "authorizationType" if native else "authorization", "NONE"))
        auth = None if kind.upper() == "NONE" else f"{kind} authorizer on {_label(method)}"
        if native:
            inline = get(method.props, "integration")
            if inline is not None:
                yield from self._rest_integration(method, method, inline, auth, "integration")
            return
        for integration in self._rest_integrations_of(method):
            yield from self._rest_integration(method, integration, integration.props, auth, "")

    def _rest_api_private(self, method: Resource) -> bool:
        for api in self.refs(
            method,
            "restApi" if not is_native(method.resource_type) else "restApiId",
            REST_API,
            silent_external=True,
        ):
            types = get_path(api.props, "endpointConfiguration", "types")
            if [str(t).upper() for t in as_list(types)] == ["PRIVATE"]:
                return True
        return False

    def _rest_integrations_of(self, method: Resource) -> list[Resource]:
        """REST integrations of the same API, resource and HTTP method as ``method``."""
        found = []
        verb = str(get(method.props, "httpMethod", "")).upper()
        for integration in self.of(REST_INTEGRATION):
            if str(get(integration.props, "httpMethod", "")).upper() != verb:
                continue
            deps = integration.property_dependencies or {}
            if any(d.urn == method.urn for d in deps.get("httpMethod") or ()):
                found.append(integration)
                continue
            same = True
            for key in ("restApi", "resourceId"):
                theirs = {d.urn for d in deps.get(key) or ()}
                ours = {d.urn for d in (method.property_dependencies or {}).get(key) or ()}
                if theirs or ours:
                    same = same and theirs == ours
                else:
                    same = same and _known(integration.props, key) == _known(method.props, key)
            if same:
                found.append(integration)
        return found

    def _http_integration(
        self, front: Resource, integration: Resource, auth: str | None
    ) -> Iterator[tuple[Resource, Leg]]:
        props = integration.props
        if str(get(props, "connectionType", "INTERNET")).upper() == "VPC_LINK":
            # A listener ARN (ALB / NLB) or a Cloud Map service: either way the route enters the
            # VPC; only a listener of this stack can be followed further.
            listeners = self.refs(
                integration, "integrationUri", LISTENER, what="what the VPC link reaches"
            )
            for listener in listeners:
                for leg in self.listener_legs(listener):
                    yield front, _prepend(front, integration, auth, leg)
            if not listeners:
                chain = (_label(front), _label(integration))
                yield front, Leg(front, auth, chain, (), (), (front, integration))
            return
        yield from self._integration_target(
            front, integration, auth, "integrationUri", lambda: get(props, "integrationUri")
        )

    def _rest_integration(
        self,
        front: Resource,
        holder: Resource,
        props: Mapping[str, Any],
        auth: str | None,
        prefix: str,
    ) -> Iterator[tuple[Resource, Leg]]:
        if str(get(props, "connectionType", "INTERNET")).upper() == "VPC_LINK":
            key = prefix or "connectionId"
            links = self.refs(
                holder,
                key,
                REST_VPC_LINK,
                values=lambda: [get(props, "connectionId")],
                what="which VPC link it uses",
            )
            reached = False
            for link in links:
                for nlb in self.refs(
                    link, "targetArns", LOAD_BALANCER, what="which NLB it reaches"
                ):
                    reached = True
                    for leg in self.lb_legs(nlb):
                        yield front, _prepend(front, link, auth, leg)
            if not reached:
                yield front, Leg(front, auth, (_label(front),), (), (), (front,))
            return
        if str(get(props, "type", "")).upper() in {"MOCK"}:
            return
        yield from self._integration_target(
            front, holder, auth, prefix or "uri", lambda: get(props, "uri")
        )

    def _integration_target(
        self,
        front: Resource,
        holder: Resource,
        auth: str | None,
        prop: str,
        value: Callable[[], Any],
    ) -> Iterator[tuple[Resource, Leg]]:
        """A Lambda function or a URL on one of the stack's load balancers; an outside URL is
        already public and adds no route into the stack, an outside function does."""
        targets = self.refs(
            holder, prop, FUNCTION | LOAD_BALANCER, values=lambda: [value()], silent_external=True
        )
        for target in targets:
            if target.resource_type in LOAD_BALANCER:
                for leg in self.lb_legs(target):
                    yield front, _prepend(front, holder, auth, leg)
            else:
                chain = (_label(front), _label(target))
                yield front, Leg(front, auth, chain, (target,), (), (front, target))
        if targets:
            return
        try:
            literal = value()
        except UnknownValueError:  # refs() has left the "cannot verify" note
            return
        if isinstance(literal, str) and (":lambda:" in literal or ":function:" in literal):
            self.note(
                holder, prop, f"names {literal!r}, not a resource of this stack", "what it invokes"
            )
            yield front, Leg(front, auth, (_label(front),), (), (), (front,))

    # --- CloudFront -------------------------------------------------------------------------

    def _distribution_entry(self, dist: Resource) -> Iterator[tuple[Resource, Leg]]:
        native = is_native(dist.resource_type)
        config = get(dist.props, "distributionConfig") if native else dist.props
        if config is None or not as_bool(get(config, "enabled", True)):
            return
        auth = self._viewer_auth(dist, config, native)
        origins_key = "distributionConfig" if native else "origins"
        for origin in as_list(get(config, "origins")):
            vpc_config = get(origin, "vpcOriginConfig")
            if vpc_config is not None:
                vpcos = self.refs(
                    dist,
                    origins_key,
                    VPC_ORIGIN,
                    values=lambda c=vpc_config: [get(c, "vpcOriginId")],
                    what="which VPC origin it uses",
                )
                for vpco in vpcos:
                    lbs = self.refs(
                        vpco,
                        "vpcOriginEndpointConfig",
                        LOAD_BALANCER | INSTANCE,
                        values=lambda v=vpco: [get_path(v.props, "vpcOriginEndpointConfig", "arn")],
                        what="which load balancer it reaches",
                    )
                    for lb in lbs:
                        yield from self._origin(dist, vpco, lb, auth)
                continue
            if not present(origin, "domainName") or get(origin, "s3OriginConfig") is not None:
                continue
            lbs = self.refs(
                dist,
                origins_key,
                LOAD_BALANCER | INSTANCE,
                values=lambda o=origin: [get(o, "domainName")],
                silent_external=True,
            )
            for lb in lbs:
                yield from self._origin(dist, dist, lb, auth)

    def _origin(
        self, dist: Resource, hop: Resource, target: Resource, auth: str | None
    ) -> Iterator[tuple[Resource, Leg]]:
        if target.resource_type in INSTANCE:
            yield (
                dist,
                Leg(dist, auth, (_label(dist), _label(target)), (target,), (), (dist, target)),
            )
            return
        for leg in self.lb_legs(target):
            yield dist, _prepend(dist, hop, auth, leg)

    @staticmethod
    def _viewer_auth(dist: Resource, config: Mapping[str, Any], native: bool) -> str | None:
        """CloudFront authenticates viewers only when every cache behavior requires signed
        URLs / cookies or runs a viewer-request function or Lambda@Edge."""
        behaviors = [get(config, "defaultCacheBehavior")]
        ordered = "cacheBehaviors" if native else "orderedCacheBehaviors"
        behaviors += list(as_list(get(config, ordered)))
        for behavior in behaviors:
            if behavior is None:
                return None
            signed = as_list(get(behavior, "trustedKeyGroups")) or as_list(
                get(behavior, "trustedSigners")
            )
            functions = [
                *as_list(get(behavior, "functionAssociations")),
                *as_list(get(behavior, "lambdaFunctionAssociations")),
            ]
            viewer = any(
                str(get(f, "eventType", "")).lower() == "viewer-request" for f in functions
            )
            if not signed and not viewer:
                return None
        return f"signed requests / viewer-request function on {_label(dist)}"

    # --- security groups --------------------------------------------------------------------

    def ingress(self) -> dict[str, list[Ingress]]:
        """Security group URN -> its ingress permissions (inline and standalone rules)."""
        return self._memo("ingress", self._ingress_table)

    def _ingress_table(self) -> dict[str, list[Ingress]]:
        table: dict[str, list[Ingress]] = {}
        for sg in self.of(SECURITY_GROUP | DEFAULT_SECURITY_GROUP):
            inline_key = "securityGroupIngress" if is_native(sg.resource_type) else "ingress"
            for entry in _inline_ingress(sg):
                item = self._ingress_item(sg, entry, inline_key)
                if item is not None:
                    table.setdefault(sg.urn, []).append(item)
        for rule in self.of(INGRESS_RULE):
            if (
                rule.resource_type == "aws:ec2/securityGroupRule:SecurityGroupRule"
                and str(get(rule.props, "type", "")).lower() != "ingress"
            ):
                continue
            key = "groupId" if is_native(rule.resource_type) else "securityGroupId"
            item = self._ingress_item(rule, rule.props, None)
            if item is None:
                continue
            groups = self.refs(
                rule,
                key,
                SECURITY_GROUP | DEFAULT_SECURITY_GROUP,
                what="which security group it opens",
            )
            for sg in groups:
                table.setdefault(sg.urn, []).append(item)
            if not groups:
                # A group outside the stack, named by its id: judged under that id, so a
                # resource of the stack that names the same id is attached to it.
                literal = _known(rule.props, key)
                if isinstance(literal, str) and literal:
                    table.setdefault(external_group(literal), []).append(item)
                elif covers_internet(item.cidrs):
                    table.setdefault(rule.urn, []).append(item)
        return table

    def _ingress_item(
        self, holder: Resource, entry: Mapping[str, Any], pl_prop: str | None
    ) -> Ingress | None:
        """The permission of one ingress entry when its sources include public addresses
        (prefix lists expanded); None when only private sources or no ports."""
        rtype = holder.resource_type
        if rtype in {
            "aws:ec2/securityGroup:SecurityGroup",
            "aws:ec2/securityGroupRule:SecurityGroupRule",
            "aws:ec2/defaultSecurityGroup:DefaultSecurityGroup",
        }:
            cidr_keys, proto, pl_key = ("cidrBlocks", "ipv6CidrBlocks"), "protocol", "prefixListIds"
        elif rtype == "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule":
            cidr_keys, proto, pl_key = ("cidrIpv4", "cidrIpv6"), "ipProtocol", "prefixListId"
        else:
            cidr_keys, proto, pl_key = ("cidrIp", "cidrIpv6"), "ipProtocol", "sourcePrefixListId"
        cidrs = [str(c) for key in cidr_keys for c in as_list(get(entry, key))]
        if present(entry, pl_key):
            cidrs += self._prefix_list_cidrs(
                holder, pl_prop or pl_key, lambda: list(as_list(get(entry, pl_key)))
            )
        if not any(public_share(c) for c in cidrs):
            return None
        ports = port_range(get(entry, proto, "tcp"), get(entry, "fromPort"), get(entry, "toPort"))
        if ports is None:
            return None
        return Ingress(holder, ports, tuple(cidrs))

    def _prefix_list_cidrs(
        self, holder: Resource, prop: str, values: Callable[[], list[Any]]
    ) -> list[str]:
        """CIDRs of the stack's prefix lists an ingress names ("cannot verify" otherwise)."""
        lists = self.refs(
            holder,
            prop,
            PREFIX_LIST,
            values=values,
            what="which addresses its prefix list admits",
        )
        cidrs: list[str] = []
        for pl in lists:
            cidrs += [
                str(get(e, "cidr")) for e in as_list(get(pl.props, "entries")) if get(e, "cidr")
            ]
            for entry in self.of(PREFIX_LIST_ENTRY):
                if pl in self.refs(entry, "prefixListId", PREFIX_LIST, silent_external=True):
                    cidrs.append(str(get(entry.props, "cidr", "")))
        return cidrs

    def internet_ports(self, sg: Resource) -> tuple[list[tuple[int, int]], list[Resource]]:
        """(port ranges on which ``sg`` admits the internet, the resources holding that
        ingress). CIDRs of different permissions on the same port add up."""
        return self.internet_ports_of(sg.urn)

    def internet_ports_of(self, key: str) -> tuple[list[tuple[int, int]], list[Resource]]:
        """``internet_ports`` by group URN or ``external_group`` key."""
        return self._memo(("internet", key), lambda: _internet_ports(self.ingress().get(key, [])))

    def attachments(self, sg: Resource) -> list[tuple[str, Resource]]:
        """(kind, resource) for everything ``sg`` is attached to."""
        return self.attachments_of(sg.urn)

    def attachments_of(self, key: str) -> list[tuple[str, Resource]]:
        """``attachments`` by group URN or ``external_group`` key."""
        table = self._memo("attach", self._attachment_table)
        return table.get(key, [])

    def _attachment_table(self) -> dict[str, list[tuple[str, Resource]]]:
        table: dict[str, dict[str, tuple[str, Resource]]] = {}
        sgs = SECURITY_GROUP | DEFAULT_SECURITY_GROUP
        for resource in self.resources:
            spec = _attachment_spec(resource)
            if spec is None:
                deps = getattr(resource, "property_dependencies", None) or {}
                if resource.resource_type in sgs | INGRESS_RULE | _EGRESS_RULES:
                    continue
                for key, targets in deps.items():
                    if key in {"vpcId", "tags"}:
                        continue
                    for dep in targets:
                        if dep.resource_type in sgs:
                            table.setdefault(dep.urn, {})[resource.urn] = ("other", resource)
                continue
            kind, key, values = spec
            for sg in self.refs(
                resource, key, sgs, values=values, what="which security groups it uses"
            ):
                table.setdefault(sg.urn, {})[resource.urn] = (kind, resource)
            try:
                named = [v for v in values() if isinstance(v, str) and v]
            except UnknownValueError:  # refs() has left the "cannot verify" note
                named = []
            for value in named:
                if not self.lookup(value, sgs):
                    table.setdefault(external_group(value), {})[resource.urn] = (kind, resource)
        return {k: list(v.values()) for k, v in table.items()}

    def external_groups(self) -> list[str]:
        """Keys (``external_group(id)``) of groups outside the stack that a rule of the stack
        opens to the internet."""
        return [
            key
            for key in self.ingress()
            if key.startswith(_EXTERNAL_GROUP) and self.internet_ports_of(key)[0]
        ]

    def security_groups_of(self, resource: Resource) -> list[Resource] | None:
        """Security groups attached to a compute resource; None when it names none (it then
        uses its VPC's default group)."""
        spec = _attachment_spec(resource)
        if spec is None:
            return []
        _, key, values = spec
        return self.refs_or_none(resource, key, SECURITY_GROUP | DEFAULT_SECURITY_GROUP, values)

    def refs_or_none(
        self,
        resource: Resource,
        key: str | tuple[str, ...],
        types: frozenset[str],
        values: Callable[[], list[Any]],
        what: str = "",
    ) -> list[Resource] | None:
        """Like :meth:`refs`, but None when the input names nothing at all."""
        keys = (key,) if isinstance(key, str) else key
        recorded = getattr(resource, "property_dependencies", None) or {}
        if any(d.resource_type in types for k in keys for d in recorded.get(k) or ()):
            return self.refs(resource, key, types, values=values, what=what)
        try:
            raw = [v for v in values() if v]
        except UnknownValueError:  # refs() reads it again and leaves the "cannot verify" note
            return self.refs(resource, key, types, values=values, what=what)
        if not raw:
            return None
        return self.refs(resource, key, types, values=lambda: raw, what=what)

    # --- services and what they run ---------------------------------------------------------

    def task_definitions(self, service: Resource, what: str = "") -> list[Resource]:
        """Task definitions an ECS service / task set runs."""
        return self.refs(service, "taskDefinition", TASK_DEFINITION, what=what)

    def unauthenticated_lbs(self) -> set[str]:
        """URNs of load balancers on an unauthenticated route from the internet."""
        return self._memo(
            "unauth_lbs",
            lambda: {lb.urn for _, leg in self.entry_legs() if leg.auth is None for lb in leg.via},
        )


_EXTERNAL_GROUP = "security-group-outside-stack:"


def external_group(group_id: str) -> str:
    """The key under which a security group outside the stack, named by ``group_id``, is
    judged (its ingress from the stack's rules, its attachments from the stack's resources)."""
    return _EXTERNAL_GROUP + group_id


def _service_connect_aliases(service: Resource) -> list[str]:
    """How clients address a Service Connect server: ``dnsName:port`` of each client alias,
    else its discovery name or port name (empty for a client-only service)."""
    native = is_native(service.resource_type)
    block = get(service.props, "serviceConnectConfiguration")
    out: list[str] = []
    for published in as_list(get(block, "services")):
        aliases = as_list(get(published, "clientAliases" if native else "clientAlias"))
        named = [
            f"{get(a, 'dnsName', get(published, 'discoveryName', get(published, 'portName')))}"
            f":{int(as_number(get(a, 'port')) or 0)}"
            for a in aliases
        ]
        out += named or [str(get(published, "discoveryName", get(published, "portName", "?")))]
    return out


def _prepend(front: Resource, hop: Resource, auth: str | None, leg: Leg) -> Leg:
    lead = (_label(front),) if hop is front else (_label(front), _label(hop))
    return Leg(
        front, auth or leg.auth, lead + leg.chain, leg.ends, leg.via, (front, hop, *leg.hops)
    )


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


def _inline_ingress(sg: Resource) -> Sequence[Any]:
    key = "securityGroupIngress" if is_native(sg.resource_type) else "ingress"
    return as_list(get(sg.props, key))


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


# Kinds of attachment: "task" and "instance" serve whatever their ports carry; "lb" is judged
# by its routes; "endpoint" (interface VPC endpoints), "function" (Lambda ENIs) and "egress"
# (App Runner VPC connectors) never receive internet traffic.
def _attachment_spec(
    resource: Resource,
) -> tuple[str, str | tuple[str, ...], Callable[[], list[Any]]] | None:
    rtype = resource.resource_type
    props = resource.props
    native = is_native(rtype)
    if rtype in SERVICE:
        if native:
            return (
                "task",
                "networkConfiguration",
                lambda: list(
                    as_list(
                        get_path(
                            props, "networkConfiguration", "awsvpcConfiguration", "securityGroups"
                        )
                    )
                ),
            )
        return (
            "task",
            "networkConfiguration",
            lambda: list(as_list(get_path(props, "networkConfiguration", "securityGroups"))),
        )
    if rtype in TASK_SET:
        inner = "awsVpcConfiguration" if native else None
        if inner:
            return (
                "task",
                "networkConfiguration",
                lambda: list(
                    as_list(get_path(props, "networkConfiguration", inner, "securityGroups"))
                ),
            )
        return (
            "task",
            "networkConfiguration",
            lambda: list(as_list(get_path(props, "networkConfiguration", "securityGroups"))),
        )
    if rtype in EXPRESS_SERVICE:
        if native:
            return (
                "task",
                "networkConfiguration",
                lambda: list(as_list(get_path(props, "networkConfiguration", "securityGroups"))),
            )
        return (
            "task",
            "networkConfigurations",
            lambda: [
                g
                for c in as_list(get(props, "networkConfigurations"))
                for g in as_list(get(c, "securityGroups"))
            ],
        )
    if rtype in INSTANCE:
        if native:
            return (
                "instance",
                ("securityGroupIds", "securityGroups", "networkInterfaces"),
                lambda: [
                    *as_list(get(props, "securityGroupIds")),
                    *as_list(get(props, "securityGroups")),
                    *[
                        g
                        for n in as_list(get(props, "networkInterfaces"))
                        for g in as_list(get(n, "groupSet"))
                    ],
                ],
            )
        return (
            "instance",
            ("vpcSecurityGroupIds", "securityGroups"),
            lambda: [
                *as_list(get(props, "vpcSecurityGroupIds")),
                *as_list(get(props, "securityGroups")),
            ],
        )
    if rtype in LAUNCH_TEMPLATE:
        if native:
            return (
                "instance",
                "launchTemplateData",
                lambda: [
                    *as_list(get_path(props, "launchTemplateData", "securityGroupIds")),
                    *[
                        g
                        for n in as_list(get_path(props, "launchTemplateData", "networkInterfaces"))
                        for g in as_list(get(n, "groups"))
                    ],
                ],
            )
        return (
            "instance",
            ("vpcSecurityGroupIds", "networkInterfaces"),
            lambda: [
                *as_list(get(props, "vpcSecurityGroupIds")),
                *[
                    g
                    for n in as_list(get(props, "networkInterfaces"))
                    for g in as_list(get(n, "securityGroups"))
                ],
            ],
        )
    if rtype in LAUNCH_CONFIGURATION or rtype in NETWORK_INTERFACE:
        key = "groupSet" if native and rtype in NETWORK_INTERFACE else "securityGroups"
        return "instance", key, lambda: list(as_list(get(props, key)))
    if rtype in LOAD_BALANCER or rtype in CLASSIC_ELB:
        return "lb", "securityGroups", lambda: list(as_list(get(props, "securityGroups")))
    if rtype in VPC_ENDPOINT:
        return "endpoint", "securityGroupIds", lambda: list(as_list(get(props, "securityGroupIds")))
    if rtype in FUNCTION:
        return (
            "function",
            "vpcConfig",
            lambda: list(as_list(get_path(props, "vpcConfig", "securityGroupIds"))),
        )
    if rtype in {"aws:apprunner/vpcConnector:VpcConnector", "aws-native:apprunner:VpcConnector"}:
        return "egress", "securityGroups", lambda: list(as_list(get(props, "securityGroups")))
    return None


# --- what counts as model serving ---------------------------------------------------------------

#: Images of model servers: vLLM, TGI / TEI, Triton, Ollama, SGLang, LMDeploy, TorchServe,
#: TF Serving, Ray, llama.cpp, LocalAI, NVIDIA NIM, DJL / LMI, Xinference, OpenLLM.
SERVING_IMAGE = re.compile(
    r"(vllm|text-generation-inference|text-embeddings-inference|tritonserver|triton|ollama|"
    r"sglang|lmdeploy|torchserve|tensorflow[-/]serving|rayproject|ray-ml|kuberay|llama[.-]?cpp|"
    r"localai|/nim/|nvcr\.io/nim|djl-inference|djl-serving|xinference|openllm|"
    r"huggingface-pytorch-tgi|huggingface-pytorch-inference)",
    re.IGNORECASE,
)
GPU_INSTANCE = re.compile(r"^(p\d|g\d|inf\d|trn\d|dl\d)", re.IGNORECASE)
SERVING_TAG = tags.SERVING


def model_serving(model: Model, leg: Leg, model_ports: set[int]) -> bool:
    """Whether a route reaches a model: an accelerator task or instance, a serving image or
    container port, a target group on a model port, or a resource tagged ``ml:serving=true``.

    A value unknown at preview counts as serving (the route is then judged, never waved
    through on a guess).
    """
    try:
        return _model_serving(model, leg, model_ports)
    except UnknownValueError:
        return True


def _model_serving(model: Model, leg: Leg, model_ports: set[int]) -> bool:
    for resource in (*leg.hops, *leg.via, *leg.ends):
        if _tagged(resource):
            return True
        rtype = resource.resource_type
        if rtype in TARGET_GROUP:
            port = as_number(get(resource.props, "port"))
            if port is not None and int(port) in model_ports:
                return True
        if rtype in SERVICE | TASK_SET:
            for td in model.task_definitions(resource):
                if _tagged(td) or task_serves_model(td, model_ports):
                    return True
        if rtype in INSTANCE | LAUNCH_TEMPLATE | LAUNCH_CONFIGURATION and GPU_INSTANCE.match(
            str(_instance_type(resource) or "")
        ):
            return True
        if rtype in APP_RUNNER:
            image = get_path(
                resource.props, "sourceConfiguration", "imageRepository", "imageIdentifier"
            )
            port = get_path(
                resource.props,
                "sourceConfiguration",
                "imageRepository",
                "imageConfiguration",
                "port",
            )
            if SERVING_IMAGE.search(str(image or "")) or (as_number(port) or -1) in model_ports:
                return True
        if rtype in EXPRESS_SERVICE:
            containers = get(resource.props, "primaryContainer")
            for c in as_list(containers):
                if (
                    SERVING_IMAGE.search(str(get(c, "image", "")))
                    or (as_number(get(c, "containerPort")) or -1) in model_ports
                ):
                    return True
    return False


def _tagged(resource: Resource) -> bool:
    found = tags_of(resource.props)
    return str(found.get(SERVING_TAG, "")).lower() == "true"


def _instance_type(resource: Resource) -> Any:
    if resource.resource_type in LAUNCH_TEMPLATE and is_native(resource.resource_type):
        return get_path(resource.props, "launchTemplateData", "instanceType")
    return get(resource.props, "instanceType")


def task_serves_model(td: Resource, model_ports: set[int]) -> bool:
    """A task definition that needs an accelerator, runs a known serving image or listens on
    a model port."""
    if accelerator_needs(td.props, td.resource_type):
        return True
    for container in container_definitions(td.props):
        if SERVING_IMAGE.search(str(get(container, "image", ""))):
            return True
        for mapping in as_list(get(container, "portMappings")):
            port = as_number(get(mapping, "containerPort"))
            if port is not None and int(port) in model_ports:
                return True
    return False


def public_ip(model: Model, resource: Resource) -> str | None:
    """Why a compute resource gets a public IP (None when it does not)."""
    rtype = resource.resource_type
    props = resource.props
    native = is_native(rtype)
    if rtype in SERVICE:
        if native:
            value = get_path(props, "networkConfiguration", "awsvpcConfiguration", "assignPublicIp")
        else:
            value = get_path(props, "networkConfiguration", "assignPublicIp")
        return "assignPublicIp" if value is not None and as_bool(value) else None
    if rtype in TASK_SET:
        inner = "awsVpcConfiguration" if native else None
        value = (
            get_path(props, "networkConfiguration", inner, "assignPublicIp")
            if inner
            else get_path(props, "networkConfiguration", "assignPublicIp")
        )
        return "assignPublicIp" if value is not None and as_bool(value) else None
    if rtype in INSTANCE:
        for eip in model.of(EIP):
            if resource in model.refs(eip, "instance", INSTANCE, silent_external=True):
                return f"elastic IP {eip.name!r}"
        for assoc in model.of(EIP_ASSOCIATION):
            key = "instanceId"
            if resource in model.refs(assoc, key, INSTANCE, silent_external=True):
                return f"elastic IP association {assoc.name!r}"
        interfaces = as_list(get(props, "networkInterfaces")) if native else ()
        explicit = get(props, "associatePublicIpAddress")
        for nic in interfaces:
            explicit = get(nic, "associatePublicIpAddress", explicit)
        if explicit is not None:
            return "associatePublicIpAddress" if as_bool(explicit) else None
        if not present(props, "subnetId") and not interfaces:
            return "no subnetId (the default VPC's subnets assign public IPs)"
        for s in model.refs(resource, "subnetId", SUBNET, silent_external=True):
            if model.subnet_public(s):
                return f"subnet {s.name!r} maps public IPs on launch"
        return None
    if rtype in LAUNCH_TEMPLATE:
        interfaces = (
            as_list(get_path(props, "launchTemplateData", "networkInterfaces"))
            if native
            else as_list(get(props, "networkInterfaces"))
        )
        for nic in interfaces:
            value = get(nic, "associatePublicIpAddress")
            if value is not None and as_bool(value):
                return "networkInterfaces associatePublicIpAddress"
        return None
    if rtype in LAUNCH_CONFIGURATION:
        value = get(props, "associatePublicIpAddress")
        return "associatePublicIpAddress" if value is not None and as_bool(value) else None
    if rtype in AUTOSCALING_GROUP:
        key = "vpcZoneIdentifiers" if not native else "vpcZoneIdentifier"
        if not present(props, key):
            # Availability zones only: instances launch in the default VPC's subnets, which
            # assign public IPs, unless every template of the stack it uses says otherwise.
            templates = _asg_templates(model, resource)
            if templates and not all(_template_public_ip(t) is False for t in templates):
                return f"no {key} (the default VPC's subnets assign public IPs)"
            return None
        for s in model.refs(resource, key, SUBNET, silent_external=True):
            if model.subnet_public(s):
                return f"subnet {s.name!r} maps public IPs on launch"
        return None
    return None


def _asg_templates(model: Model, asg: Resource) -> list[Resource]:
    """The stack's launch templates / configurations an Auto Scaling group launches from."""
    native = is_native(asg.resource_type)
    found: dict[str, Resource] = {}
    for key, types in (
        ("launchTemplate", LAUNCH_TEMPLATE),
        ("mixedInstancesPolicy", LAUNCH_TEMPLATE),
        ("launchConfiguration" if not native else "launchConfigurationName", LAUNCH_CONFIGURATION),
    ):
        for template in model.refs(asg, key, types, silent_external=True):
            found.setdefault(template.urn, template)
    return list(found.values())


def _template_public_ip(template: Resource) -> bool | None:
    """A launch template's / configuration's explicit public IP setting (None: unset)."""
    props = template.props
    if template.resource_type in LAUNCH_CONFIGURATION:
        value = get(props, "associatePublicIpAddress")
        return None if value is None else as_bool(value)
    if is_native(template.resource_type):
        interfaces = as_list(get_path(props, "launchTemplateData", "networkInterfaces"))
    else:
        interfaces = as_list(get(props, "networkInterfaces"))
    values = [get(nic, "associatePublicIpAddress") for nic in interfaces]
    known = [as_bool(v) for v in values if v is not None]
    return any(known) if known else None


def asg_security_groups(model: Model, asg: Resource) -> list[Resource] | None:
    """Security groups of an Auto Scaling group's launch template / configuration."""
    native = is_native(asg.resource_type)
    found: list[Resource] = []
    named = False
    for key, types in (
        ("launchTemplate", LAUNCH_TEMPLATE),
        ("mixedInstancesPolicy", LAUNCH_TEMPLATE),
        ("launchConfiguration" if not native else "launchConfigurationName", LAUNCH_CONFIGURATION),
    ):
        for template in model.refs(asg, key, types, silent_external=True):
            named = True
            sgs = model.security_groups_of(template)
            found += sgs or []
    return found if named else None
