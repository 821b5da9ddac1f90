"""A stack in an existing VPC, through the real program and the offline preview: the
`shared-vpc` reference stack plans its network from the `preview:lookups` descriptions, and each
refusal (one zone, a public subnet, no S3 endpoint and no NAT) is one line naming the config
path, all of them in one run."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.stacks import ROOT, stack_file
from tools.preview import EXIT_CONFIG, EXIT_OK, run_preview
from tools.recording import ACCOUNT_ID

STACK = "shared-vpc"
SUBNETS = ("subnet-0a1b2c3d4e5f60a01", "subnet-0a1b2c3d4e5f60b02", "subnet-0a1b2c3d4e5f60c03")
EXISTING = "platform.network.existing"


@pytest.fixture(scope="module")
def reference() -> dict[str, Any]:
    return yaml.safe_load(stack_file(STACK).read_text())


def _preview(tmp_path: Path, data: dict[str, Any]):
    path = tmp_path / f"Pulumi.{STACK}.yaml"
    path.write_text(yaml.safe_dump(data))
    return run_preview(STACK, program_dir=ROOT, policy_pack=None, stack_file=path)


def _refusals_without_routes(tmp_path: Path, data: dict[str, Any]) -> list[str]:
    """The refusal lines of `data` previewed with every route of its route tables removed."""
    for table in data["config"]["preview:lookups"]["routeTables"].values():
        table.pop("routes", None)
    result = _preview(tmp_path, data)
    assert result.exit_code == EXIT_CONFIG
    return [line for line in result.error.splitlines() if line.startswith("  - ")]


def _edit(reference: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """A copy of the reference stack, its `network` section and its lookups."""
    data = copy.deepcopy(reference)
    config = data["config"]
    return data, config["ecs-inference:platform"]["network"], config["preview:lookups"]


def _endpoints(result) -> dict[str, dict[str, Any]]:
    """The VPC endpoints the stack creates, by service suffix (`s3`, `ecr.api`)."""
    return {
        r.inputs["serviceName"].split("eu-west-1.", 1)[1]: r.inputs
        for r in result.resources
        if r.type == "aws:ec2/vpcEndpoint:VpcEndpoint"
    }


def test_reference_stack_runs_in_the_shared_vpc_as_a_participant(tmp_path: Path, reference) -> None:
    """The VPC belongs to another account (AWS RAM): the stack creates no endpoint and touches
    no route table, and its images, layers and weights go through the VPC's NAT."""
    lookups = reference["config"]["preview:lookups"]
    assert lookups["vpcs"]["vpc-0a1b2c3d4e5f60718"]["ownerId"] != ACCOUNT_ID
    result = _preview(tmp_path, reference)
    assert result.exit_code == EXIT_OK, result.error
    types = {r.type for r in result.resources}
    for absent in (
        "awsx:ec2:Vpc", "aws:ec2/subnet:Subnet", "aws:ec2/natGateway:NatGateway",
        "aws:ec2/vpcEndpoint:VpcEndpoint", "aws:ec2/route:Route", "aws:ec2/routeTable:RouteTable",
        "aws:ec2/routeTableAssociation:RouteTableAssociation",
        "aws:ec2/vpcEndpointRouteTableAssociation:VpcEndpointRouteTableAssociation",
    ):  # fmt: skip
        assert absent not in types
    assert not any(r.name.endswith("endpoints-sg") for r in result.resources)
    alb = next(r for r in result.resources if r.type == "aws:lb/loadBalancer:LoadBalancer")
    assert alb.inputs["subnets"] == list(SUBNETS)
    services = [r for r in result.resources if r.type == "aws:ecs/service:Service"]
    assert {tuple(s.inputs["networkConfiguration"]["subnets"]) for s in services} == {SUBNETS}
    assert result.outputs["vpcId"] == "vpc-0a1b2c3d4e5f60718"
    steady = result.outputs["cost"]["points"]["steady"]["byCategory"]
    assert not steady.get("VPC endpoints")


def test_the_same_stack_in_the_owners_account_creates_only_the_missing_endpoints(
    tmp_path: Path, reference
) -> None:
    data, _, lookups = _edit(reference)
    lookups["vpcs"]["vpc-0a1b2c3d4e5f60718"]["ownerId"] = ACCOUNT_ID
    result = _preview(tmp_path, data)
    assert result.exit_code == EXIT_OK, result.error
    endpoints = _endpoints(result)
    assert sorted(endpoints) == ["ecr.api", "ecr.dkr", "s3"]
    assert endpoints["s3"]["routeTableIds"] == [
        "rtb-0a1b2c3d4e5f60a01", "rtb-0a1b2c3d4e5f60b02", "rtb-0a1b2c3d4e5f60c03"
    ]  # fmt: skip
    assert endpoints["ecr.api"]["subnetIds"] == list(SUBNETS)
    group = next(r for r in result.resources if r.name.endswith("endpoints-sg"))
    assert group.inputs["ingress"][0]["cidrBlocks"] == ["10.60.0.0/16"]
    # Two interface endpoints in three zones; the gateway endpoint is free.
    steady = result.outputs["cost"]["points"]["steady"]["byCategory"]
    assert steady["VPC endpoints"] == pytest.approx(2 * 3 * 0.01, abs=1e-3)


def test_a_participant_without_nat_is_told_what_to_ask_for_once_each(
    tmp_path: Path, reference
) -> None:
    data, _, _ = _edit(reference)
    lines = _refusals_without_routes(tmp_path, data)
    asks = [line for line in lines if "Ask the network team to add" in line]
    asked = sorted(line.split(f"{EXISTING}.vpcEndpoints.")[1].split(":")[0] for line in asks)
    assert asked == sorted(
        [
            "s3",
            "ecr.api",
            "ecr.dkr",
            "ecs",
            "ecs-agent",
            "ecs-telemetry",
            "autoscaling",
            "monitoring",
        ]
    )
    assert not any("endpoints created" in line for line in lines)


def test_subnets_in_one_zone_are_refused(tmp_path: Path, reference) -> None:
    data, _, lookups = _edit(reference)
    for subnet in SUBNETS:
        lookups["subnets"][subnet]["availabilityZone"] = "eu-west-1a"
    result = _preview(tmp_path, data)
    assert result.exit_code == EXIT_CONFIG
    assert f": {EXISTING}.privateSubnetIds: every subnet is in eu-west-1a:" in result.error


def test_a_public_subnet_is_refused(tmp_path: Path, reference) -> None:
    data, _, lookups = _edit(reference)
    lookups["routeTables"]["rtb-0a1b2c3d4e5f60b02"]["routes"] = [
        {"cidrBlock": "0.0.0.0/0", "gatewayId": "igw-0a1b2c3d4e5f60001"}
    ]
    result = _preview(tmp_path, data)
    assert result.exit_code == EXIT_CONFIG
    assert (
        f": {EXISTING}.privateSubnetIds[1]: subnet-0a1b2c3d4e5f60b02 is a public subnet (its "
        "route table rtb-0a1b2c3d4e5f60b02 sends 0.0.0.0/0 to igw-0a1b2c3d4e5f60001)"
    ) in result.error


def test_no_s3_endpoint_and_no_nat_is_refused(tmp_path: Path, reference) -> None:
    data, network, lookups = _edit(reference)
    lookups["vpcs"]["vpc-0a1b2c3d4e5f60718"]["ownerId"] = ACCOUNT_ID  # the owner could create them
    network["vpcEndpoints"] = False
    lines = _refusals_without_routes(tmp_path, data)
    pull = [line for line in lines if "could not pull their images" in line]
    assert len(pull) == 1
    assert f": {EXISTING}.privateSubnetIds: {', '.join(SUBNETS)} have no NAT" in pull[0]
    assert "no ecr.api, ecr.dkr, s3 endpoint" in pull[0]
    # In the same run: the ALB's subnets cannot reach the identity provider either.
    assert sum("identity provider" in line for line in lines) == len(SUBNETS)


def test_every_problem_in_one_run(tmp_path: Path, reference) -> None:
    data, network, lookups = _edit(reference)
    for subnet in SUBNETS:
        lookups["subnets"][subnet]["availabilityZone"] = "eu-west-1a"
    lookups["subnets"][SUBNETS[2]]["mapPublicIpOnLaunch"] = True
    network["existing"]["vpcEndpoints"]["logs"] = "vpce-0a1b2c3d4e5f6a002"  # the STS endpoint
    # A plan problem of another section, reported in the same run.
    data["config"]["ecs-inference:platform"]["models"]["llama"]["maxConcurrentSequences"] = 256
    result = _preview(tmp_path, data)
    assert result.exit_code == EXIT_CONFIG
    for expected in (
        f"{EXISTING}.privateSubnetIds: every subnet is in eu-west-1a",
        f"{EXISTING}.privateSubnetIds[2]: subnet-0a1b2c3d4e5f60c03 is a public subnet",
        f"{EXISTING}.vpcEndpoints.logs: vpce-0a1b2c3d4e5f6a002: it is an endpoint of "
        "com.amazonaws.eu-west-1.sts",
        "platform.models.llama",
    ):
        assert expected in result.error


def test_an_undescribed_subnet_is_named_with_the_refusal(tmp_path: Path, reference) -> None:
    data, network, _ = _edit(reference)
    network["existing"]["privateSubnetIds"] = ["subnet-0a1b2c3d4e5f60e05"]
    result = _preview(tmp_path, data)
    assert result.exit_code == EXIT_CONFIG
    assert "note: subnet-0a1b2c3d4e5f60e05 is not described under `preview:lookups`" in (
        result.error
    )


def test_a_description_with_an_unknown_field_is_refused(tmp_path: Path, reference) -> None:
    data, _, lookups = _edit(reference)
    lookups["subnets"][SUBNETS[0]]["zone"] = "eu-west-1a"
    result = _preview(tmp_path, data)
    assert result.exit_code == EXIT_CONFIG
    assert result.error.startswith(
        f"Pulumi.{STACK}.yaml: preview:lookups.subnets.{SUBNETS[0]}.zone: not a field of "
        "aws:ec2/getSubnet:getSubnet"
    )


def test_keys_of_a_created_vpc_are_refused_with_an_existing_one(tmp_path: Path, reference) -> None:
    data, network, _ = _edit(reference)
    network["cidrBlock"] = "10.40.0.0/16"
    result = _preview(tmp_path, data)
    assert result.exit_code == EXIT_CONFIG
    assert "platform.network: cidrBlock: only for a VPC the stack creates" in result.error


def test_a_refusal_from_a_field_the_description_left_out_says_so(tmp_path: Path, reference) -> None:
    """An S3 gateway described without its `routeTableIds`: the refusal prints its one fix
    once, and a note says the description left the field out (it may not be the VPC's fault)."""
    data, network, lookups = _edit(reference)
    gateway = "vpce-0a1b2c3d4e5f6a009"
    network["existing"]["vpcEndpoints"]["s3"] = gateway
    lookups["vpcEndpoints"][gateway] = {
        "serviceName": "com.amazonaws.eu-west-1.s3",
        "vpcEndpointType": "Gateway",
    }
    result = _preview(tmp_path, data)
    assert result.exit_code == EXIT_CONFIG
    assert result.error.count("modify-vpc-endpoint") == 1
    assert (
        f"note: the description of {gateway} under `preview:lookups` leaves out routeTableIds"
        in result.error
    )
    lookups["vpcEndpoints"][gateway]["routeTableIds"] = [
        "rtb-0a1b2c3d4e5f60a01", "rtb-0a1b2c3d4e5f60b02", "rtb-0a1b2c3d4e5f60c03"
    ]  # fmt: skip
    assert _preview(tmp_path, data).exit_code == EXIT_OK
