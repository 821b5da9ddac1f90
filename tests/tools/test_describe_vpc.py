"""`python -m tools.describe_vpc`: EC2's and STS's answers (botocore's Stubber, no network, no
credentials) become a `preview:lookups` the offline preview reads, and the preview decides on it
as it would on AWS's own answers (a participant account creates no endpoint)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import botocore.session
import yaml
from botocore.stub import Stubber

from tests.stacks import ROOT, stack_file
from tools import describe_vpc
from tools.described import SETTING, World
from tools.preview import EXIT_OK, run_preview

VPC = "vpc-0a1b2c3d4e5f60718"
SUBNETS = ("subnet-0a1b2c3d4e5f60a01", "subnet-0a1b2c3d4e5f60b02", "subnet-0a1b2c3d4e5f60c03")
OWNER, CALLER = "210987654321", "123456789012"
POLICY = json.dumps(
    {
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": "*",
                "Action": "*",
                "Resource": "*",
                "Condition": {"StringEquals": {"aws:PrincipalOrgID": "o-a1b2c3d4e5"}},
            }
        ]
    }
)


def _clients() -> tuple[Any, Any, Stubber, Stubber]:
    session = botocore.session.get_session()
    kw: dict[str, Any] = {
        "region_name": "eu-west-1",
        "aws_access_key_id": "AKIAIOSFODNN7EXAMPLE",
        "aws_secret_access_key": "stub",
    }
    ec2, sts = session.create_client("ec2", **kw), session.create_client("sts", **kw)
    return ec2, sts, Stubber(ec2), Stubber(sts)


def _stub(ec2: Stubber, sts: Stubber) -> None:
    ec2.add_response(
        "describe_vpcs",
        {"Vpcs": [{"VpcId": VPC, "CidrBlock": "10.60.0.0/16", "OwnerId": OWNER}]},
        {"VpcIds": [VPC]},
    )
    for attribute, key in (
        ("enableDnsSupport", "EnableDnsSupport"),
        ("enableDnsHostnames", "EnableDnsHostnames"),
    ):
        ec2.add_response(
            "describe_vpc_attribute",
            {"VpcId": VPC, key: {"Value": True}},
            {"VpcId": VPC, "Attribute": attribute},
        )
    subnets = [
        {
            "SubnetId": s,
            "VpcId": VPC,
            "AvailabilityZone": f"eu-west-1{z}",
            "CidrBlock": f"10.60.{32 * n}.0/19",
            "MapPublicIpOnLaunch": False,
            "OwnerId": OWNER,
        }
        for n, (s, z) in enumerate(zip(SUBNETS, "abc", strict=True))
    ]
    ec2.add_response("describe_subnets", {"Subnets": subnets}, {"SubnetIds": list(SUBNETS)})
    local = {"DestinationCidrBlock": "10.60.0.0/16", "GatewayId": "local"}
    tables = [
        {
            "RouteTableId": f"rtb-0a1b2c3d4e5f60{z}0{n + 1}",
            "VpcId": VPC,
            "OwnerId": OWNER,
            "Associations": [{"SubnetId": s, "Main": False}],
            "Routes": [
                local,
                {"DestinationCidrBlock": "0.0.0.0/0", "NatGatewayId": f"nat-0a1b2c3d4e5f60{z}01"},
            ],
        }
        for n, (s, z) in enumerate(zip(SUBNETS, "abc", strict=True))
    ] + [
        {
            "RouteTableId": "rtb-0a1b2c3d4e5f60d00",
            "VpcId": VPC,
            "Associations": [{"Main": True}],
            "Routes": [local],
        },
        # Another team's subnet: not the stack's, left out.
        {"RouteTableId": "rtb-0f0f0f0f0f0f0f0f0", "VpcId": VPC,
         "Associations": [{"SubnetId": "subnet-0f0f0f0f0f0f0f0f0"}], "Routes": []},
    ]  # fmt: skip
    vpc_filter = {"Filters": [{"Name": "vpc-id", "Values": [VPC]}]}
    ec2.add_response("describe_route_tables", {"RouteTables": tables}, vpc_filter)
    endpoints = [
        {
            "VpcEndpointId": f"vpce-0a1b2c3d4e5f6a00{n}",
            "VpcId": VPC,
            "ServiceName": f"com.amazonaws.eu-west-1.{service}",
            "VpcEndpointType": "Interface",
            "State": "Available",
            "PrivateDnsEnabled": True,
            "PolicyDocument": POLICY,
            "OwnerId": OWNER,
        }
        for n, service in enumerate(
            ("logs", "sts", "secretsmanager", "ssm", "ssmmessages", "sqs"), 1
        )
    ]
    ec2.add_response("describe_vpc_endpoints", {"VpcEndpoints": endpoints}, vpc_filter)
    sts.add_response(
        "get_caller_identity",
        {"Account": CALLER, "Arn": f"arn:aws:iam::{CALLER}:user/ci", "UserId": "AIDAEXAMPLE"},
        {},
    )


def test_the_description_is_what_the_preview_reads_and_it_previews_as_a_participant(
    tmp_path: Path, capsys
) -> None:
    reference = yaml.safe_load(stack_file("shared-vpc").read_text())
    reference["config"].pop(SETTING)
    path = tmp_path / "Pulumi.shared-vpc.yaml"
    path.write_text("# the team's comment stays\n" + yaml.safe_dump(reference))
    ec2, sts, ec2_stub, sts_stub = _clients()
    _stub(ec2_stub, sts_stub)
    with ec2_stub, sts_stub:
        code = describe_vpc.main(["shared-vpc", "--stack-file", str(path), "--write"], (ec2, sts))
        ec2_stub.assert_no_pending_responses()
    assert code == 0
    assert (
        "vpce-0a1b2c3d4e5f6a006 (com.amazonaws.eu-west-1.sqs), not named" in capsys.readouterr().err
    )
    text = path.read_text()
    assert text.startswith("# the team's comment stays\n")
    lookups = yaml.safe_load(text)["config"][SETTING]
    assert lookups["vpcs"][VPC]["ownerId"] == OWNER
    assert sorted(lookups["routeTables"]) == [
        "rtb-0a1b2c3d4e5f60a01", "rtb-0a1b2c3d4e5f60b02", "rtb-0a1b2c3d4e5f60c03",
        "rtb-0a1b2c3d4e5f60d00",
    ]  # fmt: skip
    # The local route is not one the data source returns.
    assert lookups["routeTables"]["rtb-0a1b2c3d4e5f60a01"]["routes"] == [
        {"cidrBlock": "0.0.0.0/0", "natGatewayId": "nat-0a1b2c3d4e5f60a01"}
    ]
    assert lookups["vpcEndpoints"]["vpce-0a1b2c3d4e5f6a001"]["policy"] == POLICY
    World.parse(lookups, "eu-west-1", path.name)  # every field is one the data sources return

    result = run_preview(
        "shared-vpc", program_dir=ROOT, policy_pack=None, stack_file=path, views=("update",)
    )
    assert result.exit_code == EXIT_OK, result.error
    assert not [r for r in result.resources if r.type == "aws:ec2/vpcEndpoint:VpcEndpoint"]


def test_writing_twice_replaces_the_setting(tmp_path: Path) -> None:
    text = "config:\n  aws:region: eu-west-1\n  preview:lookups:\n    vpcs: {}\n# tail\n"
    block = describe_vpc.render({"vpcs": {VPC: {"cidrBlock": "10.60.0.0/16"}}})
    once = describe_vpc.splice(text, block)
    assert describe_vpc.splice(once, block) == once
    assert once.endswith("# tail\n") and once.count(SETTING) == 1


def test_a_stack_without_an_existing_vpc_is_refused(tmp_path: Path, capsys) -> None:
    path = tmp_path / "Pulumi.dev.yaml"
    path.write_text("config:\n  aws:region: eu-west-1\n")
    assert describe_vpc.main(["dev", "--stack-file", str(path)], (None, None)) == 2
    assert "names no vpcId" in capsys.readouterr().err
