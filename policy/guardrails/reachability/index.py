"""The index of a stack: its resources by type and by identity, and references between them.

Every front-door family reads the stack through one :class:`Model`. A reference (an ARN, id,
name or DNS name in an input) resolves through the property dependencies the engine records for
the input first (what a preview knows while ARNs are unknown), then by value against the
resources' identity outputs (known on ``pulumi up`` and on previews of existing stacks). A
reference that resolves to nothing is never passed in silence: the model records a "cannot
verify" note, naming the resource and the property, that the calling rule hands to
``guardrail-notes``. Answers are memoised per model (:meth:`Model.memo`), and one model serves
every stack rule of one ``AnalyzeStack`` call (:meth:`Model.of_stack`).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from pulumi_policy.proxy import UnknownValueError, _DictProxy  # pyright: ignore[reportPrivateUsage]

from ..resources import (
    APP_RUNNER,
    BATCH_COMPUTE_ENVIRONMENT,
    BATCH_JOB_DEFINITION,
    BATCH_JOB_QUEUE,
    DNS_RECORD,
    EIP,
    EXPRESS_SERVICE,
    FUNCTION_URL,
    HTTP_API,
    HTTP_INTEGRATION,
    HTTP_VPC_LINK,
    INSTANCE,
    LAUNCH_TEMPLATE,
    LISTENER,
    LISTENER_RULE,
    LOAD_BALANCER,
    PREFIX_LIST,
    REST_API,
    REST_VPC_LINK,
    SECURITY_GROUP,
    SERVICE,
    SUBNET,
    TARGET_GROUP,
    TASK_DEFINITION,
    VPC_ENDPOINT,
    NoteRelay,
    UnknownCollector,
    as_bool,
    get,
    known,
    strings,
)

Resource = Any

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
    "publicDns",
    "functionUrl",
    "serviceUrl",
    "fqdn",
    "jobDefinitionName",
    "jobDefinitionArn",
    "jobQueueName",
    "jobQueueArn",
    "computeEnvironmentName",
    "computeEnvironmentArn",
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
    "publicDns": INSTANCE | EIP,
    "functionUrl": FUNCTION_URL,
    "serviceUrl": APP_RUNNER,
    "fqdn": DNS_RECORD,
    "jobDefinitionName": BATCH_JOB_DEFINITION,
    "jobDefinitionArn": BATCH_JOB_DEFINITION,
    "jobQueueName": BATCH_JOB_QUEUE,
    "jobQueueArn": BATCH_JOB_QUEUE,
    "computeEnvironmentName": BATCH_COMPUTE_ENVIRONMENT,
    "computeEnvironmentArn": BATCH_COMPUTE_ENVIRONMENT,
}

#: Identity keys whose values are DNS names or URLs: indexed lower-case, and by host too.
_ADDRESS_KEYS = frozenset({"dnsName", "publicDns", "functionUrl", "serviceUrl", "fqdn"})

#: Resources whose outputs name things outside the stack: a reference that depends on one of
#: them is not explained by the dependency.
_OUTSIDE_REFERENCES = frozenset({"pulumi:pulumi:StackReference"})

_ELB_ARN = re.compile(r":(?:loadbalancer|targetgroup)/(?:(?:app|net|gwy)/)?([^/]+)/")
_TASK_DEF_ARN = re.compile(r":task-definition/([^:/]+)(?::\d+)?$")
_LAMBDA_ARN = re.compile(r":function:([^:/]+)")
#: AWS Batch ARNs: a job definition (with or without its revision), a job queue, a compute
#: environment; references name them by ARN or by name.
_BATCH_ARN = re.compile(
    r":batch:[^:]*:[^:]*:(?:job-definition/([^:/]+)(?::\d+)?|(?:job-queue|compute-environment)/([^/]+))$"
)
_INVOKE_ARN = re.compile(r"/functions/(arn:[^/]+)/invocations")
_URL_HOST = re.compile(r"^[a-z][a-z0-9+.-]*://([^/:]+)", re.IGNORECASE)


def _address_forms(value: str) -> list[str]:
    """A DNS name or URL as origins and integrations write it: lower-case, its host, without
    the root dot."""
    match = _URL_HOST.match(value)
    host = (match.group(1) if match else value).lower().rstrip(".")
    return [f for f in dict.fromkeys((value.lower(), host)) if f != value]


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
    match = _BATCH_ARN.search(value)
    if match:
        out.append(match.group(1) or match.group(2))
    if ":" in value and not value.startswith("arn:") and "//" not in value:
        out.append(value.rsplit(":", 1)[0])  # task definition family:revision
    match = _URL_HOST.match(value)
    if match:
        out.append(match.group(1).lower())
    elif "." in value and "/" not in value:
        out.append(value.lower().rstrip(".").removeprefix("dualstack."))  # a DNS name
    return out


# --- routes -----------------------------------------------------------------------------------


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


#: What a front-door family yields: (entry point, one route from it).
Entry = tuple[Resource, Leg]


def label(resource: Resource) -> str:
    """``Listener 'web'``: the resource's type name and its name."""
    kind = str(resource.resource_type).rsplit(":", 1)[-1]
    return f"{kind} {resource.name!r}"


def prepend(front: Resource, hop: Resource, auth: str | None, leg: Leg) -> Leg:
    """``leg`` reached from ``front`` through ``hop`` (authenticated by ``auth`` when set)."""
    lead = (label(front),) if hop is front else (label(front), label(hop))
    return Leg(
        front, auth or leg.auth, lead + leg.chain, leg.ends, leg.via, (front, hop, *leg.hops)
    )


def subnet_public(subnet: Resource) -> bool:
    """A subnet that hands out public IPs on launch."""
    return as_bool(get(subnet.props, "mapPublicIpOnLaunch", False))


# --- the model --------------------------------------------------------------------------------

# The last model built, per analyzer thread, with the resource list it models (held so that
# the list's identity cannot be reused by another list while the model is cached).
_LAST_MODEL = threading.local()


class Model:
    """The index of one stack (built lazily; every answer is cached).

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
        self._position: dict[str, int] = {}
        for position, r in enumerate(self.resources):
            self._by_type.setdefault(r.resource_type, []).append((position, r))
            self._position.setdefault(r.urn, position)
        self._index: dict[str, dict[str, list[Resource]]] = {}
        self._cache: dict[Any, Any] = {}

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

    @staticmethod
    def release() -> None:
        """Drop the shared model (called when an ``AnalyzeStack`` call ends): it holds the
        whole decoded stack, which would otherwise stay in the heap through the next call's
        ``Analyze`` requests, where every full collection walks it again."""
        _LAST_MODEL.value = None

    # --- lookups -------------------------------------------------------------------------

    def of(self, types: Iterable[str]) -> list[Resource]:
        """Resources of ``types`` in registration order."""
        found = [entry for t in frozenset(types) for entry in self._by_type.get(t, ())]
        found.sort(key=lambda entry: entry[0])
        return [r for _, r in found]

    def _identity_index(self, rtype: str) -> dict[str, list[Resource]]:
        """Resources of type ``rtype`` by each identity value they carry, built on the first
        lookup of that type: a lookup reads only the types it asks for, so the properties of
        the rest of a large stack are never decoded for it."""
        index = self._index.get(rtype)
        if index is None:
            index = self._index[rtype] = {}
            for _, r in self._by_type.get(rtype, ()):
                raw = r.props["__target"] if isinstance(r.props, _DictProxy) else r.props
                for key in _IDENTITY_KEYS:
                    if key not in raw:
                        continue
                    own = _OWN_KEY_TYPES.get(key)
                    if own is not None and rtype not in own:
                        continue
                    value = known(r.props, key)
                    if isinstance(value, str) and value:
                        index.setdefault(value, []).append(r)
                        if key in _ADDRESS_KEYS or (key == "name" and rtype in DNS_RECORD):
                            for form in _address_forms(value):
                                index.setdefault(form, []).append(r)
        return index

    def lookup(self, value: str, types: frozenset[str]) -> list[Resource]:
        """Resources of ``types`` whose identity (ARN, id, name, DNS name) is ``value``, in
        registration order."""
        indexes = [self._identity_index(t) for t in types if t in self._by_type]
        found: dict[str, Resource] = {}
        for alt in _alternatives(value):
            for index in indexes:
                for r in index.get(alt, ()):
                    found.setdefault(r.urn, r)
            if found:
                break
        if len(found) > 1:
            return sorted(found.values(), key=lambda r: self._position[r.urn])
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
            raw = list(values()) if values is not None else strings(get(resource.props, prop))
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

    def referrers(
        self, types: frozenset[str], key: str, targets: frozenset[str]
    ) -> dict[str, list[Resource]]:
        """Target URN -> the resources of ``types`` (in registration order) whose input ``key``
        refers to it (as :meth:`refs` resolves it, an outside target silent), built once per
        model: "which associations name this EIP" is then a lookup, not a scan of the stack
        for every EIP."""

        def build() -> dict[str, list[Resource]]:
            table: dict[str, list[Resource]] = {}
            for r in self.of(types):
                for target in self.refs(r, key, targets, silent_external=True):
                    table.setdefault(target.urn, []).append(r)
            return table

        return self.memo(("referrers", types, key, targets), build)

    def in_order(self, resources: Iterable[Resource]) -> list[Resource]:
        """``resources`` once each, in registration order."""
        unique = {r.urn: r for r in resources}
        return sorted(unique.values(), key=lambda r: self._position[r.urn])

    def task_definitions(self, service: Resource, what: str = "") -> list[Resource]:
        """Task definitions an ECS service / task set runs."""
        return self.refs(service, "taskDefinition", TASK_DEFINITION, what=what)

    # --- notes and answers ---------------------------------------------------------------

    def note(self, resource: Resource, prop: str, reason: str, what: str = "") -> None:
        """Record "cannot verify" for ``resource``'s ``prop``."""
        purpose = f" {what}" if what else ""
        self.notes.note(
            f"cannot verify{purpose}: {resource.resource_type} {resource.name!r} property "
            f"{prop!r} {reason}.",
            resource.urn,
        )

    def memo(self, key: Any, compute: Callable[[], Any]) -> Any:
        """``compute()``, once per ``key``; a rule that reuses the answer also gets the notes
        and unknowns the computation left (see ``NoteRelay``)."""
        return self.notes.memo(self._cache, key, compute)
