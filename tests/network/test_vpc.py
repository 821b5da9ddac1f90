"""The Network component under the mock runtime, built directly as another program builds it:
the created VPC's inputs as the engine would receive them, and an existing VPC, given no lookup,
read by the component itself with the plan's decisions, cost and refusals."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
import yaml

from ecs_inference.config.issues import ConfigError
from ecs_inference.config.load import load_stack_config
from ecs_inference.network.input import INTERFACE_ENDPOINT_SERVICES, NetworkConfig
from ecs_inference.network.vpc import Network
from tests.stacks import reference_plan, stack_file
from tools.described import SETTING, World
from tools.recording import Recording, run_function

STACK = "shared-vpc"


def _build(network: NetworkConfig, built: list[Network]) -> Recording:
    """`network` built with the shared-vpc stack's wiring but no lookup, its VPC answered from
    the stack's `preview:lookups`."""
    data: dict[str, Any] = yaml.safe_load(stack_file(STACK).read_text())["config"]
    region = str(data["aws:region"])
    world = World.parse(data.get(SETTING), region, stack_file(STACK).name)
    wiring = replace(reference_plan(STACK).network.wiring, lookup=None)
    return run_function(
        lambda: built.append(Network("net", network, wiring)),
        config={"aws:region": region},
        world=world,
    )


def _network() -> NetworkConfig:
    data = yaml.safe_load(stack_file(STACK).read_text())["config"]
    return load_stack_config(data["ecs-inference:platform"], STACK).network


def test_an_existing_vpc_is_read_and_decided_as_the_plan_does() -> None:
    built: list[Network] = []
    rec = _build(_network(), built)
    planned = reference_plan(STACK).network
    assert built[0].decided == replace(planned, wiring=built[0].decided.wiring)
    assert built[0].decided.lines and "aws:ec2/getVpc:getVpc" in rec.invokes
    assert rec.by_type("awsx:ec2:Vpc") == []


def test_an_existing_vpc_it_refuses_raises_the_stack_files_error() -> None:
    network = _network()
    assert network.existing is not None
    one_zone = network.existing.model_copy(
        update={"private_subnet_ids": network.existing.private_subnet_ids[:1]}
    )
    with pytest.raises(ConfigError, match=r"platform\.network\.existing\.privateSubnetIds: every"):
        _build(network.model_copy(update={"existing": one_zone}), [])


def record_network(**kwargs):
    return run_function(lambda: Network("net", NetworkConfig(**kwargs)))


def test_vpc_private_subnets_single_nat_and_dns() -> None:
    rec = record_network(cidr_block="10.40.0.0/16", availability_zones=2)
    vpc = rec.one("awsx:ec2:Vpc")
    assert vpc.inputs["cidrBlock"] == "10.40.0.0/16"
    assert vpc.inputs["numberOfAvailabilityZones"] == 2.0
    assert vpc.inputs["natGateways"] == {"strategy": "Single"}
    # Private DNS of interface endpoints needs both.
    assert vpc.inputs["enableDnsHostnames"] is True
    assert vpc.inputs["enableDnsSupport"] is True


def test_nat_per_az_and_explicit_zones() -> None:
    rec = record_network(
        nat_gateways="perAz", availability_zone_names=["us-east-1a", "us-east-1b", "us-east-1c"]
    )
    vpc = rec.one("awsx:ec2:Vpc")
    assert vpc.inputs["natGateways"] == {"strategy": "OnePerAz"}
    assert vpc.inputs["availabilityZoneNames"] == ["us-east-1a", "us-east-1b", "us-east-1c"]
    assert "numberOfAvailabilityZones" not in vpc.inputs


def test_interface_endpoints_in_private_subnets_with_their_own_sg() -> None:
    rec = record_network(cidr_block="10.40.0.0/16")
    vpc_outputs_private = rec.one("aws:ec2/vpcEndpoint:VpcEndpoint", "ecr-api").inputs["subnetIds"]
    sg = rec.one("aws:ec2/securityGroup:SecurityGroup", "endpoints-sg")
    assert sg.inputs["ingress"] == [
        {
            "protocol": "tcp",
            "fromPort": 443.0,
            "toPort": 443.0,
            "cidrBlocks": ["10.40.0.0/16"],
            "description": "HTTPS from the VPC",
        }
    ]
    assert sg.inputs["egress"] == []
    interface = [
        r
        for r in rec.by_type("aws:ec2/vpcEndpoint:VpcEndpoint")
        if r.inputs["vpcEndpointType"] == "Interface"
    ]
    services = sorted(r.inputs["serviceName"] for r in interface)
    assert services == sorted(f"com.amazonaws.us-east-1.{s}" for s in INTERFACE_ENDPOINT_SERVICES)
    for endpoint in interface:
        assert endpoint.inputs["privateDnsEnabled"] is True
        assert endpoint.inputs["subnetIds"] == vpc_outputs_private
        assert all(s.startswith("subnet-") for s in endpoint.inputs["subnetIds"])
        assert len(endpoint.inputs["securityGroupIds"]) == 1


def test_s3_gateway_endpoint_on_private_route_tables() -> None:
    rec = record_network()
    s3 = rec.one("aws:ec2/vpcEndpoint:VpcEndpoint", "-s3")
    assert s3.inputs["vpcEndpointType"] == "Gateway"
    assert s3.inputs["serviceName"] == "com.amazonaws.us-east-1.s3"
    assert len(s3.inputs["routeTableIds"]) == 2  # one per private subnet
    assert "aws:ec2/getRouteTables:getRouteTables" in rec.invokes


def test_endpoints_can_be_turned_off() -> None:
    rec = record_network(vpc_endpoints=False)
    assert rec.by_type("aws:ec2/vpcEndpoint:VpcEndpoint") == []
    assert rec.by_type("aws:ec2/securityGroup:SecurityGroup") == []
