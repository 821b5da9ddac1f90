"""Network and Cluster under the mock runtime: assert on the inputs the engine would receive."""

from __future__ import annotations

import pytest

from ecs_inference.cluster import Cluster, ClusterArgs
from ecs_inference.network.input import INTERFACE_ENDPOINT_SERVICES, NetworkConfig
from ecs_inference.network.vpc import Network
from tools.recording import run_function


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


@pytest.mark.parametrize("insights", ["enhanced", "disabled"])
def test_cluster_container_insights_and_exec_logging(insights: str) -> None:
    rec = run_function(lambda: Cluster("ecs", ClusterArgs(container_insights=insights)))
    cluster = rec.one("aws:ecs/cluster:Cluster")
    assert cluster.inputs["settings"] == [{"name": "containerInsights", "value": insights}]
    exec_cfg = cluster.inputs["configuration"]["executeCommandConfiguration"]
    assert exec_cfg["logging"] == "OVERRIDE"
    log_group = rec.one("aws:cloudwatch/logGroup:LogGroup", "exec")
    assert exec_cfg["logConfiguration"]["cloudWatchLogGroupName"].startswith("ecs-exec")
    assert log_group.inputs["retentionInDays"] == 365.0
    # children hang under the component, as the tree and policy correlation expect
    component = rec.one("ecs-inference:compute:Cluster")
    assert cluster.parent == component.urn and log_group.parent == component.urn


def test_cluster_without_exec_logging() -> None:
    rec = run_function(lambda: Cluster("ecs", ClusterArgs(execute_command_logging=False)))
    assert rec.by_type("aws:cloudwatch/logGroup:LogGroup") == []
    assert "configuration" not in rec.one("aws:ecs/cluster:Cluster").inputs
