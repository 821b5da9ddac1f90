"""The rehearsal's image pull paths through looked-up subnets (tools/rehearsal/network.py), on a
program of its own: it looks up an existing subnet and runs a Fargate service in it."""

from __future__ import annotations

from typing import Any

import pulumi_aws as aws
import pytest

from tools.described import World
from tools.recording import run_function
from tools.rehearsal.network import pull_path_findings

VPC = "vpc-0a1b2c3d4e5f60718"
SUBNET = "subnet-0a1b2c3d4e5f60a01"
TABLE = "rtb-0a1b2c3d4e5f60a01"


def _world(routes: list[dict[str, Any]]) -> World:
    return World.parse(
        {
            "vpcs": {VPC: {"cidrBlock": "10.60.0.0/16"}},
            "subnets": {SUBNET: {"availabilityZone": "us-east-1a", "cidrBlock": "10.60.0.0/19"}},
            "routeTables": {TABLE: {"associations": [{"subnetId": SUBNET}], "routes": routes}},
        },
        "us-east-1",
        "test",
    )


def _program(endpoints: tuple[str, ...]) -> None:
    subnet = aws.ec2.get_subnet(id=SUBNET)
    aws.ec2.get_route_table(subnet_id=SUBNET)
    for service in endpoints:
        aws.ec2.VpcEndpoint(
            service.replace(".", "-"),
            vpc_id=subnet.vpc_id,
            service_name=f"com.amazonaws.us-east-1.{service}",
            vpc_endpoint_type="Gateway" if service == "s3" else "Interface",
            route_table_ids=[TABLE] if service == "s3" else None,
        )
    aws.ecs.Service(
        "svc",
        launch_type="FARGATE",
        network_configuration=aws.ecs.ServiceNetworkConfigurationArgs(subnets=[subnet.id]),
    )


def _findings(routes: list[dict[str, Any]], endpoints: tuple[str, ...] = ()) -> list[str]:
    rec = run_function(lambda: _program(endpoints), world=_world(routes))
    return [message for _, message in pull_path_findings(rec.resources, rec.lookups)]


def test_no_route_out_and_no_endpoints_cannot_pull() -> None:
    assert _findings([]) == [
        f"subnet {SUBNET} (route table {TABLE}) has no default route out and no ecr.api, "
        "ecr.dkr, s3 gateway endpoint on its route table: its tasks could not pull their images "
        "(CannotPullContainerError)"
    ]


@pytest.mark.parametrize(
    "route",
    [{"natGatewayId": "nat-0a1b2c3d4e5f60a01"}, {"transitGatewayId": "tgw-0a1b2c3d4e5f60a01"}],
)
def test_a_route_out_pulls(route: dict[str, str]) -> None:
    assert _findings([{"cidrBlock": "0.0.0.0/0", **route}]) == []


def test_an_internet_gateway_without_a_public_ip_cannot_pull() -> None:
    found = _findings([{"cidrBlock": "0.0.0.0/0", "gatewayId": "igw-0a1b2c3d4e5f60a01"}])
    assert len(found) == 1 and "no default route out" in found[0]


def test_the_three_endpoints_pull_and_two_do_not() -> None:
    assert _findings([], ("ecr.api", "ecr.dkr", "s3")) == []
    (only,) = _findings([], ("ecr.api", "ecr.dkr"))
    assert "and no s3 gateway endpoint on its route table:" in only
