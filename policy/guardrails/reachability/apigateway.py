"""API Gateway front doors: HTTP / WebSocket APIs (v2) and REST APIs (v1).

HTTP: every route, and a quick-create API's ``target`` (a ``$default`` route without an
authorizer) -> integration (``target: integrations/<id>``) -> ``VPC_LINK`` to a listener ARN
(followed), or to a Cloud Map service / a listener outside the stack (the route enters the VPC:
judged, noted); Lambda integrations reach the function; an HTTP URL on one of the stack's load
balancers (DNS name) is followed; any other URL is already public and adds no route. REST:
every method of an API that is not ``PRIVATE`` -> the integration of the same API, resource and
HTTP method -> ``VPC_LINK`` -> VPC link ``targetArns`` -> NLB -> its routes. A route or method
is authenticated by any authorization type but ``NONE`` (JWT, Lambda ``CUSTOM``, ``AWS_IAM``,
``COGNITO_USER_POOLS``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from pulumi_policy.proxy import UnknownValueError

from ..resources import (
    FUNCTION,
    HTTP_API,
    HTTP_INTEGRATION,
    HTTP_ROUTE,
    LISTENER,
    LOAD_BALANCER,
    REST_API,
    REST_INTEGRATION,
    REST_VPC_LINK,
    as_list,
    get,
    is_native,
    known,
    present,
    stored_path,
    strings,
)
from .elb import lb_legs, listener_legs
from .index import Entry, Leg, Model, Resource, label, prepend
from .origins import ADDRESSED, address_legs, serving_legs


def quick_create_entry(model: Model, api: Resource) -> Iterator[Entry]:
    """A quick-create HTTP API: a ``$default`` route to its target, no authorizer."""
    if present(api.props, "target"):
        yield from _integration_target(
            model, api, api, None, "target", lambda: get(api.props, "target")
        )


def route_entry(model: Model, route: Resource) -> Iterator[Entry]:
    """An HTTP / WebSocket API route: its integration, authenticated by its authorizer (on a
    WebSocket API, the ``$connect`` route's: a client authenticates once, when it connects,
    and API Gateway accepts an authorizer on no other route)."""
    auth = _route_auth(_connect_route(model, route) or route)
    integrations = model.refs(
        route, "target", HTTP_INTEGRATION, what="which integration it invokes"
    )
    for integration in integrations:
        yield from _http_integration(model, route, integration, auth)


def _route_auth(route: Resource) -> str | None:
    auth_type = str(get(route.props, "authorizationType", "NONE")).upper()
    return None if auth_type == "NONE" else f"{auth_type} authorizer on {label(route)}"


def _connect_route(model: Model, route: Resource) -> Resource | None:
    """The ``$connect`` route of ``route``'s API when that API is a WebSocket API (None: an
    HTTP API, an API outside the stack, or no ``$connect`` route: connecting is then open)."""
    apis = model.refs(route, "apiId", HTTP_API, silent_external=True)
    if not any(str(get(a.props, "protocolType", "")).upper() == "WEBSOCKET" for a in apis):
        return None
    if get(route.props, "routeKey") == "$connect":
        return route
    routes = model.referrers(HTTP_ROUTE, "apiId", HTTP_API)
    connects = [
        other
        for other in model.in_order(r for a in apis for r in routes.get(a.urn, ()))
        if get(other.props, "routeKey") == "$connect"
    ]
    return connects[0] if connects else None


def method_entry(model: Model, method: Resource) -> Iterator[Entry]:
    """A REST API method of an API that is not private: its integration."""
    if _rest_api_private(model, method):
        return
    native = is_native(method.resource_type)
    kind = str(get(method.props, "authorizationType" if native else "authorization", "NONE"))
    auth = None if kind.upper() == "NONE" else f"{kind} authorizer on {label(method)}"
    if native:
        inline = get(method.props, "integration")
        if inline is not None:
            yield from _rest_integration(model, method, method, inline, auth, "integration")
        return
    for integration in _rest_integrations_of(model, method):
        yield from _rest_integration(model, method, integration, integration.props, auth, "")


def _rest_api_private(model: Model, method: Resource) -> bool:
    for api in model.refs(
        method,
        "restApi" if not is_native(method.resource_type) else "restApiId",
        REST_API,
        silent_external=True,
    ):
        types = stored_path(api.props, "endpointConfiguration", "types", resource=api)
        if [str(t).upper() for t in as_list(types)] == ["PRIVATE"]:
            return True
    return False


def _rest_integrations_of(model: Model, method: Resource) -> list[Resource]:
    """REST integrations of the same API, resource and HTTP method as ``method``: one whose
    ``httpMethod`` depends on the method, or whose ``restApi`` and ``resourceId`` are the
    method's (the same dependencies where either records some, else the same values)."""
    table = model.memo("rest-integrations", lambda: _RestIntegrations(model))
    verb = str(get(method.props, "httpMethod", "")).upper()
    candidates = [
        *table.by_method.get(method.urn, ()),
        *table.by_place.get((verb, *_place(method)), ()),
    ]
    return model.in_order(i for i in candidates if table.verbs[i.urn] == verb)


def _place(resource: Resource) -> tuple[Any, ...]:
    """What says where a method or integration sits: per key, its recorded dependencies or,
    without any, its value."""
    deps = resource.property_dependencies or {}
    place: list[Any] = []
    for key in ("restApi", "resourceId"):
        urns = frozenset(d.urn for d in deps.get(key) or ())
        value = known(resource.props, key)
        if not _hashable(value):  # an id or name is a string; anything else matches nothing
            value = id(value)
        place.append(("deps", urns) if urns else ("value", value))
    return tuple(place)


def _hashable(value: Any) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


class _RestIntegrations:
    """The stack's REST integrations by the method their ``httpMethod`` depends on and by
    (verb, place), once per model."""

    def __init__(self, model: Model) -> None:
        self.verbs: dict[str, str] = {}
        self.by_method: dict[str, list[Resource]] = {}
        self.by_place: dict[tuple[Any, ...], list[Resource]] = {}
        for integration in model.of(REST_INTEGRATION):
            verb = str(get(integration.props, "httpMethod", "")).upper()
            self.verbs[integration.urn] = verb
            deps = integration.property_dependencies or {}
            for dep in deps.get("httpMethod") or ():
                self.by_method.setdefault(dep.urn, []).append(integration)
            self.by_place.setdefault((verb, *_place(integration)), []).append(integration)


def _http_integration(
    model: Model, front: Resource, integration: Resource, auth: str | None
) -> Iterator[Entry]:
    props = integration.props
    if str(get(props, "connectionType", "INTERNET")).upper() == "VPC_LINK":
        # A listener ARN (ALB / NLB) or a Cloud Map service: either way the route enters the
        # VPC; only a listener of this stack can be followed further.
        listeners = model.refs(
            integration, "integrationUri", LISTENER, what="what the VPC link reaches"
        )
        for listener in listeners:
            for leg in listener_legs(model, listener):
                yield front, prepend(front, integration, auth, leg)
        if not listeners:
            chain = (label(front), label(integration))
            yield front, Leg(front, auth, chain, (), (), (front, integration))
        return
    yield from _integration_target(
        model, front, integration, auth, "integrationUri", lambda: get(props, "integrationUri")
    )


def _rest_integration(
    model: Model,
    front: Resource,
    holder: Resource,
    props: Mapping[str, Any],
    auth: str | None,
    prefix: str,
) -> Iterator[Entry]:
    if str(get(props, "connectionType", "INTERNET")).upper() == "VPC_LINK":
        yield from rest_private(model, front, holder, props, auth, prefix)
        return
    if str(get(props, "type", "")).upper() in {"MOCK"}:
        return
    yield from _integration_target(
        model, front, holder, auth, prefix or "uri", lambda: get(props, "uri")
    )


def rest_private(
    model: Model,
    front: Resource,
    holder: Resource,
    props: Mapping[str, Any],
    auth: str | None,
    prefix: str = "",
) -> Iterator[Entry]:
    """A REST private integration: to the load balancer named by ``integrationTarget`` (a VPC
    link V2, any ALB or NLB), else through the VPC link V1 in ``connectionId`` to its NLB
    (pulumi-aws ``targetArn``, aws-native ``targetArns``). ``prefix``: the top-level input
    holding ``props`` (aws-native's inline ``integration``), "" when they are the holder's own."""
    if present(props, "integrationTarget"):
        hops = [
            (holder, lb)
            for lb in model.refs(
                holder,
                prefix or "integrationTarget",
                LOAD_BALANCER,
                values=lambda: [get(props, "integrationTarget")],
                what="which load balancer it reaches",
            )
        ]
    else:
        links = model.refs(
            holder,
            prefix or "connectionId",
            REST_VPC_LINK,
            values=lambda: [get(props, "connectionId")],
            what="which VPC link it uses",
        )
        hops = [
            (link, nlb)
            for link in links
            for nlb in model.refs(
                link,
                ("targetArn", "targetArns"),
                LOAD_BALANCER,
                values=lambda lk=link: [
                    *strings(get(lk.props, "targetArn")),
                    *strings(get(lk.props, "targetArns")),
                ],
                what="which NLB it reaches",
            )
        ]
    for hop, lb in hops:
        for leg in lb_legs(model, lb):
            yield front, prepend(front, hop, auth, leg)
    if not hops:  # the route enters the VPC, to something outside the stack
        yield front, Leg(front, auth, (label(front),), (), (), (front,))


def _integration_target(
    model: Model,
    front: Resource,
    holder: Resource,
    auth: str | None,
    prop: str,
    value: Callable[[], Any],
) -> Iterator[Entry]:
    """A Lambda function or a URL on one of the stack's load balancers; an outside URL is
    already public and adds no route into the stack, an outside function does."""
    targets = model.refs(
        holder, prop, FUNCTION | ADDRESSED, values=lambda: [value()], silent_external=True
    )
    for target in targets:
        if target.resource_type in FUNCTION:
            legs = serving_legs(model, target)
        else:
            legs = address_legs(model, target)
        for leg in legs:
            yield front, prepend(front, holder, auth, leg)
    if targets:
        return
    try:
        literal = value()
    except UnknownValueError:  # refs() has left the "cannot verify" note
        return
    if isinstance(literal, str) and (":lambda:" in literal or ":function:" in literal):
        model.note(
            holder, prop, f"names {literal!r}, not a resource of this stack", "what it invokes"
        )
        yield front, Leg(front, auth, (label(front),), (), (), (front,))
