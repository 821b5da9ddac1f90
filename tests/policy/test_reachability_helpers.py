"""Pure parts of the reachability model and of scoped exemptions (no pack process)."""

from __future__ import annotations

import ipaddress

import pytest
from guardrails.exemptions import exemption_matches, parse_urn
from guardrails.reachability import covers_internet, describe_ports, port_range, public_share
from hypothesis import given, settings
from hypothesis import strategies as st


@pytest.mark.parametrize(
    ("cidrs", "internet"),
    [
        (["0.0.0.0/0"], True),
        (["::/0"], True),
        (["0.0.0.0/1", "128.0.0.0/1"], True),
        (["2000::/3"], True),
        (["0.0.0.0/1"], False),
        (["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"], False),
        (["203.0.113.0/24"], False),
        (["2001:db8::/32"], False),
        (["not-a-cidr", "0.0.0.0/0"], True),
        ([], False),
    ],
)
def test_covers_internet(cidrs, internet):
    assert covers_internet(cidrs) is internet


def test_public_space_split_any_way_is_the_internet():
    # Every public /3 of IPv4 listed separately, plus the reserved space it does not need.
    halves = [str(n) for n in ipaddress.ip_network("0.0.0.0/0").subnets(new_prefix=3)]
    assert covers_internet(halves)
    assert not covers_internet(halves[:-2])  # 192.0.0.0/3 is mostly public


@settings(deadline=None)  # the first call fills the parse caches; timing is not the property
@given(st.integers(min_value=1, max_value=8))
def test_subnets_of_the_internet_cover_it_only_all_together(bits):
    nets = [str(n) for n in ipaddress.ip_network("0.0.0.0/0").subnets(prefixlen_diff=bits)]
    assert covers_internet(nets)
    first = ipaddress.IPv4Network(nets[0])
    assert not covers_internet(nets[1:]) or first.subnet_of(ipaddress.IPv4Network("0.0.0.0/8"))


def test_public_share():
    assert public_share("8.8.8.8/32") and public_share("::/0")
    assert not public_share("10.1.0.0/16") and not public_share("fd00::/8")


@pytest.mark.parametrize(
    ("protocol", "low", "high", "expected"),
    [
        ("tcp", 443.0, 443.0, (443, 443)),
        ("-1", 0.0, 0.0, (0, 65535)),
        ("all", None, None, (0, 65535)),
        ("icmp", -1.0, -1.0, None),
        ("tcp", -1.0, -1.0, (0, 65535)),
        ("6", 8000.0, 8002.0, (8000, 8002)),
    ],
)
def test_port_range(protocol, low, high, expected):
    assert port_range(protocol, low, high) == expected


def test_describe_ports():
    assert describe_ports([(443, 443), (8000, 8002)]) == "443, 8000-8002"


class _R:
    def __init__(self, type_: str, name: str, stack: str = "prod", project: str = "shop"):
        self.resource_type = type_
        self.name = name
        self.urn = f"urn:pulumi:{stack}::{project}::{type_}::{name}"


LISTENER = "aws:lb/listener:Listener"
SG = "aws:ec2/securityGroup:SecurityGroup"


def test_parse_urn_with_parent_types():
    parts = parse_urn("urn:pulumi:dev::proj::my:comp$aws:lb/listener:Listener::web")
    assert parts and (parts.stack, parts.project, parts.type, parts.name) == (
        "dev",
        "proj",
        LISTENER,
        "web",
    )
    assert parse_urn("web") is None


def test_bare_name_matches_only_the_policy_types():
    own = frozenset({LISTENER})
    assert exemption_matches("web", _R(LISTENER, "web"), own)
    assert not exemption_matches("web", _R(SG, "web"), own)


def test_urn_and_scoped_object_exemptions():
    listener = _R(LISTENER, "web", stack="prod", project="shop")
    assert exemption_matches(listener.urn, listener, frozenset())
    assert exemption_matches("urn:pulumi:prod::shop::*::web", listener, frozenset())
    assert not exemption_matches("urn:pulumi:dev::shop::*::web", listener, frozenset())
    entry = {"type": "aws:lb/*", "name": "web", "stack": "prod"}
    assert exemption_matches(entry, listener, frozenset())
    assert not exemption_matches({**entry, "stack": "dev"}, listener, frozenset())
    assert not exemption_matches({**entry, "project": "other"}, listener, frozenset())
    assert not exemption_matches({"name": "web"}, listener, frozenset())  # type is required
