"""ECS Service Connect: what a route that reaches a client service reaches through it.

A service whose ``serviceConnectConfiguration`` is enabled takes part in a Cloud Map
namespace: its own ``namespace`` (a namespace resource of the stack, or the literal ARN /
name), else its cluster's ``serviceConnectDefaults.namespace``. A service that publishes ports
(``services[]``, aws ``clientAlias``, aws-native ``clientAliases``) is a server; every
participating service is a client, and its Envoy proxy reaches every server of the namespace by
alias, past any load balancer and its authentication. So a route from the internet that ends at
a client continues to each server of the client's namespace.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pulumi_policy.proxy import UnknownValueError

from ..resources import (
    CLUSTER,
    SERVICE,
    SERVICE_DISCOVERY_NAMESPACE,
    as_bool,
    as_list,
    as_number,
    get,
    is_native,
    present,
)
from .index import Entry, Leg, Model, Resource, label


def through_service_connect(model: Model, legs: list[Entry]) -> list[Entry]:
    """``legs`` plus, for each route ending at an ECS service that takes part in Service
    Connect, one route on to every server of its namespace: the client's Envoy proxy
    resolves their aliases, so what reaches the client reaches them, past no further auth.
    """
    out = list(legs)
    for entry, leg in legs:
        for client in leg.ends:
            if client.resource_type not in SERVICE:
                continue
            for server, alias in service_connect_servers(model, client):
                if any(server.urn == h.urn for h in (*leg.hops, *leg.ends)):
                    continue
                out.append(
                    (
                        entry,
                        Leg(
                            leg.front,
                            leg.auth,
                            (*leg.chain, f"Service Connect {alias}", label(server)),
                            (server,),
                            leg.via,
                            (*leg.hops, client, server),
                        ),
                    )
                )
    return out


def service_connect_servers(model: Model, client: Resource) -> list[tuple[Resource, str]]:
    """(server, alias) for every Service Connect server ``client`` reaches: each other
    service of its namespace that publishes a port. Empty when ``client`` does not take
    part; "cannot verify" when its namespace cannot be told."""
    key = _namespace(model, client, judged=True)
    if key is None:
        return []
    table = model.memo("sc_namespaces", lambda: _server_table(model))
    return [(s, alias) for s, alias in table.get(key, []) if s.urn != client.urn]


def servers_unknown(model: Model, client: Resource) -> bool:
    """Whether ``client`` takes part in Service Connect through a namespace the pack cannot
    tell (unknown at preview, or none named): the servers it reaches cannot be listed, so
    ``scope: model-serving`` judges it as if one served a model."""
    try:
        block = get(client.props, "serviceConnectConfiguration")
        if not isinstance(block, Mapping) or not as_bool(get(block, "enabled", False)):
            return False
    except UnknownValueError:
        return True
    return _namespace(model, client, judged=False) is None


def _server_table(model: Model) -> dict[str, list[tuple[Resource, str]]]:
    table: dict[str, list[tuple[Resource, str]]] = {}
    for service in model.of(SERVICE):
        try:
            key = _namespace(model, service, judged=False)
            aliases = _aliases(service) if key is not None else []
        except UnknownValueError:  # a server that cannot be told is left out, not guessed
            continue
        if key is not None and aliases:
            table.setdefault(key, []).append((service, ", ".join(aliases)))
    return table


def _namespace(model: Model, service: Resource, *, judged: bool) -> str | None:
    """The namespace a service's Service Connect uses (its own ``namespace``, else its
    cluster's ``serviceConnectDefaults``) as a namespace resource URN or the literal ARN /
    name; None when Service Connect is off. ``judged``: leave a "cannot verify" note when
    the namespace is unknown (only for a client the internet reaches)."""
    block = get(service.props, "serviceConnectConfiguration")
    if not isinstance(block, Mapping) or not as_bool(get(block, "enabled", False)):
        return None
    if present(block, "namespace"):
        return _namespace_key(model, service, "serviceConnectConfiguration", block, judged)
    for cluster in model.refs(service, "cluster", CLUSTER, silent_external=True):
        defaults = get(cluster.props, "serviceConnectDefaults")
        if isinstance(defaults, Mapping) and present(defaults, "namespace"):
            return _namespace_key(model, cluster, "serviceConnectDefaults", defaults, judged)
    if judged:
        model.note(
            service,
            "serviceConnectConfiguration",
            "enables Service Connect without a namespace, and no cluster of this stack "
            "gives it a default one",
            "which Service Connect servers it reaches",
        )
    return None


def _namespace_key(
    model: Model, holder: Resource, prop: str, block: Mapping[str, Any], judged: bool
) -> str | None:
    deps = [
        d
        for d in (getattr(holder, "property_dependencies", None) or {}).get(prop) or ()
        if d.resource_type in SERVICE_DISCOVERY_NAMESPACE
    ]
    if deps:
        return deps[0].urn
    try:
        value = get(block, "namespace")
    except UnknownValueError:
        if judged:
            model.note(
                holder,
                prop,
                "names a namespace unknown at preview, and no dependency records which",
                "which Service Connect servers it reaches",
            )
        return None
    if not isinstance(value, str) or not value:
        return None
    found = model.lookup(value, SERVICE_DISCOVERY_NAMESPACE)
    return found[0].urn if found else f"namespace:{value}"


def _aliases(service: Resource) -> list[str]:
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
