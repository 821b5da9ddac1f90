"""Where a front door sends a request when it names its target by address: a CloudFront
origin's domain name, an API integration's URL, the URL a function or App Runner service
proxies to.

An address names a resource of the stack by reference (a recorded dependency) or as a literal
(a load balancer's DNS name, an instance's public DNS name or IP, an Elastic IP, a Lambda
function URL's host, an App Runner service URL, a Route 53 record of the stack). Each kind
leads on:

* a load balancer: its listeners' routes (internal ones too: the front door connects from
  AWS's network or through a VPC link);
* an instance, an App Runner service: it serves;
* an Elastic IP: the instance it is on;
* a Lambda function URL: its function (and what the function proxies to). Behind CloudFront
  the URL is reached when it takes anonymous requests (auth type ``NONE``) or when the origin
  signs with an origin access control (then the URL's ``AWS_IAM`` checks CloudFront, not the
  viewer); an ``AWS_IAM`` URL without one refuses CloudFront's unsigned requests;
* a Route 53 record: what its alias or values name.

A function or App Runner service proxies to what its environment names (a load balancer by
ARN, DNS name or URL, or a listener): a route that reaches it continues there, so a public
function URL in front of an internal model is a route to the model.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..resources import (
    APP_RUNNER,
    DNS_RECORD,
    EIP,
    FUNCTION,
    FUNCTION_URL,
    INSTANCE,
    LISTENER,
    LOAD_BALANCER,
    get,
    get_path,
    is_native,
    strings,
)
from .elb import lb_legs, listener_legs
from .global_accelerator import eip_holders
from .index import Leg, Model, Resource, label

#: Everything an address may name.
ADDRESSED = LOAD_BALANCER | INSTANCE | EIP | FUNCTION_URL | APP_RUNNER | DNS_RECORD


def address_legs(
    model: Model, target: Resource, *, signed: bool = False, seen: frozenset[str] = frozenset()
) -> list[Leg]:
    """Routes from ``target`` (one of :data:`ADDRESSED`) to what serves. ``signed``: the caller
    signs its requests to a Lambda function URL (a CloudFront origin access control)."""
    if target.urn in seen:
        return []
    seen = seen | {target.urn}
    kind = target.resource_type
    if kind in LOAD_BALANCER:
        return lb_legs(model, target)
    if kind in EIP:
        held = eip_holders(model, target)
        return [Leg(target, None, (label(target), *map(label, held)), tuple(held), (), (target,))]
    if kind in FUNCTION_URL:
        return _url_legs(model, target, signed, seen)
    if kind in DNS_RECORD:
        return [
            leg
            for named in _record_targets(model, target)
            for leg in address_legs(model, named, signed=signed, seen=seen)
        ]
    # An instance or an App Runner service serves; App Runner may proxy on.
    return serving_legs(model, target, seen)


def _url_legs(model: Model, url: Resource, signed: bool, seen: frozenset[str]) -> list[Leg]:
    native = is_native(url.resource_type)
    auth_type = str(get(url.props, "authType" if native else "authorizationType", "")).upper()
    if auth_type != "NONE" and not signed:
        return []  # AWS_IAM: an unsigned request is refused
    functions = model.refs(
        url,
        "targetFunctionArn" if native else "functionName",
        FUNCTION,
        what="which function it invokes",
    )
    if not functions:
        return [Leg(url, None, (label(url),), (), (), (url,))]
    return [
        Leg(url, None, (label(url), *leg.chain), leg.ends, leg.via, (url, *leg.hops))
        for function in functions
        for leg in serving_legs(model, function, seen)
    ]


def _record_targets(model: Model, record: Resource) -> list[Resource]:
    """What a Route 53 record names: its alias target or its values."""
    props = record.props
    if is_native(record.resource_type):
        keys: tuple[str, ...] = ("aliasTarget", "resourceRecords")

        def values() -> list[Any]:
            return [
                get_path(props, "aliasTarget", "dnsName"),
                *strings(get(props, "resourceRecords")),
            ]
    else:
        keys = ("aliases", "records")

        def values() -> list[Any]:
            aliases = [get(a, "name") for a in get(props, "aliases") or ()]
            return [*aliases, *strings(get(props, "records"))]

    return model.refs(
        record,
        keys,
        ADDRESSED - DNS_RECORD,
        values=lambda: [_bare(v) for v in values() if isinstance(v, str)],
        silent_external=True,
    )


def _bare(name: str) -> str:
    """A DNS name as resources hold it: without the root dot or ELB's ``dualstack.`` prefix."""
    name = name.rstrip(".").lower()
    return name.removeprefix("dualstack.")


def serving_legs(model: Model, server: Resource, seen: frozenset[str] = frozenset()) -> list[Leg]:
    """``server`` serves; when its environment names a load balancer or listener of the stack,
    the routes through that load balancer continue behind it (a proxy to a model)."""
    own = Leg(server, None, (label(server),), (server,), (), (server,))
    legs = [own]
    for leg in _proxied(model, server, seen | {server.urn}):
        legs.append(
            Leg(
                server,
                leg.auth,
                (label(server), *leg.chain),
                (server, *leg.ends),
                leg.via,
                (server, *leg.hops),
            )
        )
    return legs


def _proxied(model: Model, server: Resource, seen: frozenset[str]) -> Iterable[Leg]:
    key, variables = _environment(server)
    if key is None:
        return []
    targets = model.refs(
        server,
        key,
        LOAD_BALANCER | LISTENER,
        values=lambda: [v for v in strings(variables()) if v],
        silent_external=True,
    )
    legs: list[Leg] = []
    for target in targets:
        if target.urn in seen:
            continue
        if target.resource_type in LISTENER:
            legs += listener_legs(model, target, None, seen)
        else:
            legs += lb_legs(model, target, None, seen)
    return legs


def _environment(server: Resource) -> tuple[str | None, Any]:
    """(top-level input, reader of the environment variables) of a function or App Runner
    service; (None, None) for anything else."""
    props = server.props
    if server.resource_type in FUNCTION:
        return "environment", lambda: get_path(props, "environment", "variables")
    if server.resource_type in APP_RUNNER:
        return "sourceConfiguration", lambda: get_path(
            props,
            "sourceConfiguration",
            "imageRepository",
            "imageConfiguration",
            "runtimeEnvironmentVariables",
        )
    return None, None
