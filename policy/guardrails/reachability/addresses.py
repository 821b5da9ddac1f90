"""Address sets and ports: whether the sources of an ingress add up to the internet.

A security group admits the internet when the union of its sources on a port covers all public
IPv4 unicast space (0.0.0.0/0 minus the RFC 6890 special-purpose ranges) or all of IPv6
2000::/3: so ``0.0.0.0/1`` plus ``128.0.0.0/1`` is the internet, ``203.0.113.0/24`` or
``0.0.0.0/1`` alone is a client allow-list.
"""

from __future__ import annotations

import functools
import ipaddress
from collections.abc import Iterable, Sequence
from typing import Any

from ..resources import as_number

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


def only_private(cidrs: Iterable[str], owned: Iterable[str] = ()) -> bool:
    """True when every CIDR holds no public address or lies within the ``owned`` ranges (the
    stack's own VPC and subnet ranges): no client on the internet has a source address there.
    False for an empty list or a value that is not a CIDR."""
    nets = [n for n in (_network(str(c)) for c in owned) if n is not None]
    values = list(cidrs)
    for cidr in values:
        net = _network(str(cidr))
        if net is None:
            return False
        if public_share(str(cidr)) and not _covers(
            [n for n in nets if n.version == net.version], net
        ):
            return False
    return bool(values)
