"""The rehearsal's image pull paths through looked-up subnets (tools/rehearsal/network.py), on a
program of its own: it looks up an existing subnet and runs a Fargate service in it."""

from __future__ import annotations

import json
from typing import Any

import pulumi
import pulumi_aws as aws
import pytest

from tools.described import World
from tools.recording import ACCOUNT_ID, run_function
from tools.rehearsal import rehearse
from tools.rehearsal.network import pull_path_findings

VPC = "vpc-0a1b2c3d4e5f60718"
SUBNET = "subnet-0a1b2c3d4e5f60a01"
TABLE = "rtb-0a1b2c3d4e5f60a01"


def _world(routes: list[dict[str, Any]], endpoints: dict[str, Any] | None = None) -> World:
    return World.parse(
        {
            "vpcs": {VPC: {"cidrBlock": "10.60.0.0/16"}},
            "subnets": {SUBNET: {"availabilityZone": "us-east-1a", "cidrBlock": "10.60.0.0/19"}},
            "routeTables": {TABLE: {"associations": [{"subnetId": SUBNET}], "routes": routes}},
            **({"vpcEndpoints": endpoints} if endpoints else {}),
        },
        "us-east-1",
        "test",
    )


def _endpoints(subnet: Any, services: tuple[str, ...]) -> None:
    """The stack's own endpoints of `services` in the subnet's VPC (interfaces with private DNS,
    the S3 gateway on the subnet's route table)."""
    for service in services:
        aws.ec2.VpcEndpoint(
            service.replace(".", "-"),
            vpc_id=subnet.vpc_id,
            service_name=f"com.amazonaws.us-east-1.{service}",
            vpc_endpoint_type="Gateway" if service == "s3" else "Interface",
            route_table_ids=[TABLE] if service == "s3" else None,
            private_dns_enabled=None if service == "s3" else True,
        )


def _program(endpoints: tuple[str, ...]) -> None:
    subnet = aws.ec2.get_subnet(id=SUBNET)
    aws.ec2.get_route_table(subnet_id=SUBNET)
    _endpoints(subnet, endpoints)
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


# -- every call needs a route, and passes the endpoint policy it goes through ------------------

LOGS_POLICY_ONLY_OTHER_GROUPS = {
    "Statement": [
        {
            "Effect": "Allow",
            "Principal": "*",
            "Action": "logs:*",
            "Resource": "arn:aws:logs:us-east-1:123456789012:log-group:/other/*",
        }
    ]
}


def _task_program(
    logs_endpoint: str | None,
    image: str = "123456789012.dkr.ecr.us-east-1.amazonaws.com/shop/app:1.0",
    repository_policy: dict[str, Any] | None = None,
) -> None:
    """A Fargate service whose image is in ECR (ECR and S3 endpoints present) and whose logs go
    to CloudWatch Logs, through the network team's `logs_endpoint` when one is named."""
    subnet = aws.ec2.get_subnet(id=SUBNET)
    aws.ec2.get_route_table(subnet_id=SUBNET)
    if logs_endpoint:
        aws.ec2.get_vpc_endpoint(id=logs_endpoint)
    _endpoints(subnet, ("ecr.api", "ecr.dkr", "s3"))
    group = aws.cloudwatch.LogGroup("app", name="/shop/app")
    role = aws.iam.Role(
        "exec",
        assume_role_policy=json.dumps({"Version": "2012-10-17", "Statement": [{
            "Effect": "Allow", "Principal": {"Service": "ecs-tasks.amazonaws.com"},
            "Action": "sts:AssumeRole"}]}),
        managed_policy_arns=[
            "arn:aws:iam::aws:policy/service-role/AmazonECSTaskExecutionRolePolicy"
        ],
    )  # fmt: skip
    task = aws.ecs.TaskDefinition(
        "app",
        family="app",
        requires_compatibilities=["FARGATE"],
        network_mode="awsvpc",
        cpu="256",
        memory="512",
        execution_role_arn=role.arn,
        container_definitions=json.dumps([{
            "name": "app",
            "image": image,
            "essential": True,
            "logConfiguration": {"logDriver": "awslogs", "options": {
                "awslogs-group": "/shop/app", "awslogs-region": "us-east-1",
                "awslogs-stream-prefix": "shop"}},
        }]),
        opts=pulumi.ResourceOptions(depends_on=[group]),
    )  # fmt: skip
    if repository_policy is not None:
        aws.ecr.RepositoryPolicy("app", repository="shop/app", policy=json.dumps(repository_policy))
    aws.ecs.Service(
        "svc",
        launch_type="FARGATE",
        task_definition=task.arn,
        network_configuration=aws.ecs.ServiceNetworkConfigurationArgs(subnets=[subnet.id]),
    )


def _rehearsed(routes: list[dict[str, Any]], logs_endpoint: dict[str, Any] | None = None):
    endpoint = "vpce-0a1b2c3d4e5f6a001"
    described = None
    if logs_endpoint is not None:
        logs = {"serviceName": "com.amazonaws.us-east-1.logs", "vpcEndpointType": "Interface"}
        described = {endpoint: {**logs, "privateDnsEnabled": True, **logs_endpoint}}
    rec = run_function(
        lambda: _task_program(endpoint if described else None), world=_world(routes, described)
    )
    return rehearse(rec.resources, "us-east-1", ACCOUNT_ID, lookups=rec.lookups)


def test_a_call_without_a_route_or_an_endpoint_is_refused() -> None:
    out = _rehearsed([])
    refused = [f.message for f in out.findings if "cannot leave subnet" in f.message]
    assert len(refused) == 1, out.findings  # one per service, not per call or subnet
    assert f"no logs endpoint in {VPC}" in refused[0] and ": logs:" in refused[0]
    # The same stack with a NAT route: the permission is all that is left to check.
    nat = [{"cidrBlock": "0.0.0.0/0", "natGatewayId": "nat-0a1b2c3d4e5f60a01"}]
    assert not _rehearsed(nat).findings


def test_a_call_through_the_network_teams_endpoint_must_pass_its_policy() -> None:
    nat = [{"cidrBlock": "0.0.0.0/0", "natGatewayId": "nat-0a1b2c3d4e5f60a01"}]
    open_policy = {"Statement": [{"Effect": "Allow", "Principal": "*", "Action": "*",
                                  "Resource": "*"}]}  # fmt: skip
    assert not _rehearsed(nat, {"policy": json.dumps(open_policy)}).findings
    # NAT or not, private DNS sends the call to the endpoint, whose policy admits other groups.
    denied = _rehearsed(nat, {"policy": json.dumps(LOGS_POLICY_ONLY_OTHER_GROUPS)})
    messages = [f.message for f in denied.findings]
    assert messages and all("logs:" in m and "denied" in m for m in messages), messages
    # A condition the preview cannot know is a note, never a pass in silence.
    in_org = {"StringEquals": {"aws:PrincipalOrgID": "o-a1b2c3d4e5"}}
    org = {"Statement": [{**open_policy["Statement"][0], "Condition": in_org}]}
    noted = _rehearsed(nat, {"policy": json.dumps(org)})
    assert not noted.findings
    assert any("aws:principalorgid" in n for n in noted.notes), noted.notes


OTHER_ACCOUNT_IMAGE = "210987654321.dkr.ecr.us-east-1.amazonaws.com/shop/app:1.0"


def _pull_rehearsed(policy: dict[str, Any] | None):
    nat = [{"cidrBlock": "0.0.0.0/0", "natGatewayId": "nat-0a1b2c3d4e5f60a01"}]
    rec = run_function(lambda: _task_program(None, OTHER_ACCOUNT_IMAGE, policy), world=_world(nat))
    return rehearse(rec.resources, "us-east-1", ACCOUNT_ID, lookups=rec.lookups)


def test_an_image_in_another_accounts_registry_needs_that_repositorys_policy() -> None:
    unknown = _pull_rehearsed(None)
    assert not unknown.findings
    assert any("account 210987654321's registry" in n for n in unknown.notes), unknown.notes
    pull = ["ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer"]
    admits = {"Statement": [{"Effect": "Allow", "Action": pull,
                             "Principal": {"AWS": f"arn:aws:iam::{ACCOUNT_ID}:root"}}]}  # fmt: skip
    assert not _pull_rehearsed(admits).findings
    others = {"Statement": [{**admits["Statement"][0],
                             "Principal": {"AWS": "arn:aws:iam::999999999999:root"}}]}  # fmt: skip
    denied = [f.message for f in _pull_rehearsed(others).findings]
    assert denied and all("ecr:" in m and "denied" in m for m in denied), denied
