"""Global Accelerator front doors: an accelerator's anycast IPs put its endpoints on the internet.

Standard accelerators: accelerator -> listener (``portRanges``) -> endpoint group
(``endpointConfigurations[].endpointId``: an ALB or NLB ARN, an EC2 instance id or an Elastic IP
allocation id; ``portOverrides`` map a listener port to an endpoint port) -> the load balancer's
routes on those ports (an *internal* ALB or NLB too: that is what an accelerator is for), the
instance, or what the Elastic IP is attached to. Global Accelerator authenticates nothing, so a
route is authenticated only by what the load balancer does. Custom routing accelerators (pulumi-aws
only; CloudFormation has none): accelerator -> listener -> custom routing endpoint group whose
endpoints are VPC subnets -> every instance of the stack in those subnets. Which destinations of a
subnet receive traffic is set by the AllowCustomRoutingTraffic API, which no stack resource holds;
an accelerator exists to carry traffic to them, so each instance counts as reached.
A disabled accelerator (``enabled: false``) is no entry point.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from ..resources import (
    EIP,
    EIP_ASSOCIATION,
    GA_ACCELERATOR,
    GA_CUSTOM_ENDPOINT_GROUP,
    GA_ENDPOINT_GROUP,
    GA_LISTENER,
    INSTANCE,
    LOAD_BALANCER,
    SUBNET,
    as_bool,
    as_list,
    as_number,
    get,
    is_native,
    stored,
)
from .elb import listener_legs, listeners_of
from .index import Entry, Leg, Model, Resource, label, prepend

#: (low, high) port ranges of a listener; None: all ports (unknown or unset).
Ports = list[tuple[int, int]] | None


def accelerator_entry(model: Model, accelerator: Resource) -> Iterator[Entry]:
    """An enabled accelerator: every route through each of its listeners."""
    if not as_bool(stored(accelerator.props, "enabled", True, accelerator)):
        return
    for listener in _children(model, GA_LISTENER, "acceleratorArn", accelerator, "accelerator"):
        ports = _port_ranges(listener)
        for group in _children(model, GA_ENDPOINT_GROUP, "listenerArn", listener, "listener"):
            for target in _endpoints(model, group):
                for leg in _target_legs(model, target, _endpoint_ports(group, ports)):
                    yield accelerator, prepend(listener, group, None, leg)
        for group in _children(
            model, GA_CUSTOM_ENDPOINT_GROUP, "listenerArn", listener, "listener"
        ):
            yield from _custom_routing(model, accelerator, listener, group)


def _children(
    model: Model, types: frozenset[str], key: str, parent: Resource, what: str
) -> list[Resource]:
    """The resources of ``types`` whose ``key`` names ``parent`` (memoised per type)."""
    table = model.memo(("ga", key, types), lambda: _child_table(model, types, key, what))
    return table.get(parent.urn, [])


def _child_table(
    model: Model, types: frozenset[str], key: str, what: str
) -> dict[str, list[Resource]]:
    table: dict[str, list[Resource]] = {}
    parents = GA_ACCELERATOR if key == "acceleratorArn" else GA_LISTENER
    for child in model.of(types):
        for parent in model.refs(child, key, parents, what=f"which {what} it belongs to"):
            table.setdefault(parent.urn, []).append(child)
    return table


def _port_ranges(listener: Resource) -> Ports:
    ranges: list[tuple[int, int]] = []
    for item in as_list(get(listener.props, "portRanges")):
        low, high = as_number(get(item, "fromPort")), as_number(get(item, "toPort"))
        if low is None and high is None:
            return None
        low = low if low is not None else high
        high = high if high is not None else low
        assert low is not None and high is not None
        ranges.append((int(low), int(high)))
    return ranges or None


def _endpoint_ports(group: Resource, ports: Ports) -> Callable[[int], bool]:
    """Whether an endpoint port is reached from the listener's ports (``portOverrides``
    applied: a listener port that is overridden reaches its endpoint port instead)."""
    overrides = {
        int(listen): int(endpoint)
        for item in as_list(get(group.props, "portOverrides"))
        if (listen := as_number(get(item, "listenerPort"))) is not None
        and (endpoint := as_number(get(item, "endpointPort"))) is not None
    }
    if ports is None:
        return lambda port: True

    def listened(port: int) -> bool:
        return any(low <= port <= high for low, high in ports)

    moved = {endpoint for listen, endpoint in overrides.items() if listened(listen)}
    return lambda port: port in moved or (listened(port) and port not in overrides)


def _endpoints(model: Model, group: Resource) -> list[Resource]:
    return model.refs(
        group,
        "endpointConfigurations",
        LOAD_BALANCER | INSTANCE | EIP,
        values=lambda: [
            get(c, "endpointId") for c in as_list(get(group.props, "endpointConfigurations"))
        ],
        what="which endpoints it serves",
    )


def _target_legs(model: Model, target: Resource, reaches: Callable[[int], bool]) -> list[Leg]:
    if target.resource_type in LOAD_BALANCER:
        legs: list[Leg] = []
        for listener in listeners_of(model, target):
            port = as_number(stored(listener.props, "port", None, listener))
            if port is None or reaches(int(port)):
                legs += listener_legs(model, listener, target)
        return legs
    if target.resource_type in EIP:
        held = eip_holders(model, target)
        return [Leg(target, None, (label(target), *map(label, held)), tuple(held), (), (target,))]
    return [Leg(target, None, (label(target),), (target,), (), (target,))]


def eip_holders(model: Model, eip: Resource) -> list[Resource]:
    """The instances an Elastic IP is on (its ``instance``, aws-native ``instanceId``, or an
    association of the stack)."""
    key = "instanceId" if is_native(eip.resource_type) else "instance"
    found = model.refs(eip, key, INSTANCE, silent_external=True)
    for assoc in model.referrers(EIP_ASSOCIATION, "allocationId", EIP).get(eip.urn, ()):
        found += model.refs(assoc, "instanceId", INSTANCE, silent_external=True)
    return found


def _custom_routing(
    model: Model, accelerator: Resource, listener: Resource, group: Resource
) -> Iterator[Entry]:
    subnets = model.refs(
        group,
        "endpointConfigurations",
        SUBNET,
        values=lambda: [
            get(c, "endpointId") for c in as_list(get(group.props, "endpointConfigurations"))
        ],
        what="which subnets it routes to",
    )
    by_subnet = model.referrers(INSTANCE, "subnetId", SUBNET)
    instances = model.in_order(i for s in subnets for i in by_subnet.get(s.urn, ()))
    chain = (label(listener), label(group), *map(label, subnets), *map(label, instances))
    hops: tuple[Any, ...] = (listener, group, *subnets)
    yield accelerator, Leg(listener, None, chain, tuple(instances), (), hops)
