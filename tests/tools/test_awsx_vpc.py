"""The awsx VPC's children as pulumi-awsx creates them (tools/awsx_vpc.py): layout, names,
parents, NAT strategies, and what the component answers."""

from __future__ import annotations

from collections import Counter

import pulumi
import pulumi_awsx as awsx
import pytest
from pulumi.runtime.rpc import UNKNOWN

from tools.awsx_vpc import AWS_SDK_VERSION, children, subnet_specs, unsupported
from tools.recording import run_function


def test_default_layout_splits_each_zone_into_a_private_and_a_public_subnet() -> None:
    # getSubnetSpecsLegacy: the VPC split evenly by zone (a power of two), the private subnet
    # the first half of the zone, the public one the first half of the next quarter.
    specs = subnet_specs("v", "10.40.0.0/16", ["a", "b"], None)
    assert [(s.type, s.zone, s.cidr, s.resource_name) for s in specs] == [
        ("Private", "a", "10.40.0.0/18", "v-private-1"),
        ("Private", "b", "10.40.128.0/18", "v-private-2"),
        ("Public", "a", "10.40.64.0/19", "v-public-1"),
        ("Public", "b", "10.40.192.0/19", "v-public-2"),
    ]
    three = subnet_specs("v", "10.0.0.0/16", ["a", "b", "c"], None)
    assert [s.cidr for s in three if s.type == "Private"] == [
        "10.0.0.0/19",
        "10.0.64.0/19",
        "10.0.128.0/19",
    ]


def test_explicit_specs_take_their_masks_and_names() -> None:
    specs = subnet_specs(
        "v",
        "10.0.0.0/16",
        ["a", "b"],
        [{"type": "Private", "cidrMask": 20}, {"type": "Isolated", "name": "db"}],
    )
    assert [(s.type, s.cidr, s.resource_name) for s in specs if s.zone == "a"] == [
        ("Private", "10.0.0.0/20", "v-private-1"),
        ("Isolated", "10.0.16.0/24", "v-db-1"),
    ]


@pytest.mark.parametrize(
    ("strategy", "gateways", "eips"), [("None", 0, 0), ("Single", 1, 1), ("OnePerAz", 3, 3)]
)
def test_nat_strategies(strategy: str, gateways: int, eips: int) -> None:
    made = children("v", {"natGateways": {"strategy": strategy}}, ["a", "b", "c"])
    count = Counter(c.type.split(":")[-1] for c in made)
    assert (count["NatGateway"], count["Eip"]) == (gateways, eips)
    assert count["InternetGateway"] == 1 and count["Subnet"] == 6 and count["RouteTable"] == 6
    routes = [c for c in made if c.type.endswith("Route")]
    # Public subnets route to the internet gateway; private ones to a NAT gateway, if any.
    assert len(routes) == 3 + (3 if gateways else 0)


@pytest.mark.parametrize(
    "inputs",
    [
        {"subnetStrategy": "Auto"},
        {"vpcEndpointStrategy": "Auto"},
        {"assignGeneratedIpv6CidrBlock": True},
    ],
)
def test_layouts_not_emulated_say_so(inputs: dict) -> None:
    assert unsupported(inputs)


def _program() -> None:
    vpc = awsx.ec2.Vpc(
        "net",
        cidr_block="10.40.0.0/16",
        number_of_availability_zones=2,
        nat_gateways=awsx.ec2.NatGatewayConfigurationArgs(
            strategy=awsx.ec2.NatGatewayStrategy.SINGLE
        ),
    )
    pulumi.export("private", vpc.private_subnet_ids)
    pulumi.export("vpc", vpc.vpc_id)


@pytest.mark.parametrize("view", ["new", "update"])
def test_the_component_registers_its_children_and_answers_their_ids(view: str) -> None:
    rec = run_function(_program, stack="dev", config={"aws:region": "us-east-1"}, view=view)
    vpc = rec.one("aws:ec2/vpc:Vpc")
    assert vpc.urn == "urn:pulumi:dev::ecs-inference::awsx:ec2:Vpc$aws:ec2/vpc:Vpc::net"
    subnet = rec.one("aws:ec2/subnet:Subnet", "net-private-1")
    assert subnet.parent == vpc.urn and subnet.version == AWS_SDK_VERSION
    assert subnet.property_dependencies["vpcId"] == (vpc.urn,)
    association = rec.one("aws:ec2/routeTableAssociation:RouteTableAssociation", "net-private-1")
    assert association.parent == rec.one("aws:ec2/routeTable:RouteTable", "net-private-1").urn
    route = rec.one("aws:ec2/route:Route", "net-private-1")
    nat = rec.one("aws:ec2/natGateway:NatGateway")
    if view == "new":
        assert route.inputs["natGatewayId"] == UNKNOWN and rec.outputs["vpc"] == UNKNOWN
        assert subnet.inputs["ipv6CidrBlock"] == UNKNOWN  # an apply over an unknown
    else:
        assert route.inputs["natGatewayId"] == nat.outputs["id"]
        assert rec.outputs["vpc"] == vpc.outputs["id"]
        assert rec.outputs["private"] == [
            rec.one("aws:ec2/subnet:Subnet", f"net-private-{n}").outputs["id"] for n in (1, 2)
        ]
        assert "ipv6CidrBlock" not in subnet.inputs
        assert nat.inputs["allocationId"] == rec.one("aws:ec2/eip:Eip").outputs["id"]
