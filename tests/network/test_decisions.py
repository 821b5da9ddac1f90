"""The network's decisions (components/network/decisions.py): what a created VPC costs, and the
checks an existing VPC must pass, on plain facts: each refusal names its config path and the
fix; what passes creates only the endpoints it lacks."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from ecs_inference.config.issues import Issues
from ecs_inference.network.decisions import NetworkInput, NetworkNeeds, NetworkWiring, decide
from ecs_inference.network.facts import (
    EndpointFacts,
    NetworkFacts,
    NetworkLookup,
    Route,
    RouteTableFacts,
    SubnetFacts,
)
from ecs_inference.network.input import ExistingNetworkConfig, NetworkConfig

VPC = "vpc-0a1b2c3d4e5f60718"
REGION = "eu-west-1"
NAT = (Route("0.0.0.0/0", "nat-0a1b2c3d4e5f60a01"),)
IGW = (Route("0.0.0.0/0", "igw-0a1b2c3d4e5f60a01"),)


def _subnet(n: int, zone: str, **kw: Any) -> SubnetFacts:
    return SubnetFacts(
        id=f"subnet-0a1b2c3d4e5f60a0{n}",
        vpc_id=VPC,
        availability_zone=zone,
        cidr_block=f"10.60.{32 * n}.0/19",
        route_table_id=f"rtb-0a1b2c3d4e5f60a0{n}",
        **kw,
    )


def _facts(*subnets: SubnetFacts, routes: Any = NAT, **kw: Any) -> NetworkFacts:
    tables = {s.route_table_id: RouteTableFacts(s.route_table_id, routes) for s in subnets}
    return NetworkFacts(
        vpc_id=VPC,
        cidr_block="10.60.0.0/16",
        subnets={s.id: s for s in subnets},
        route_tables={k: v for k, v in tables.items() if k is not None},
        **kw,
    )


def _plan(facts: NetworkFacts, needs: NetworkNeeds | None = None, create: bool = True, **kw: Any):
    """The decisions for `network.existing` (`kw`: its keys) in `facts`."""
    existing = ExistingNetworkConfig(
        **{"vpc_id": VPC, "private_subnet_ids": list(facts.subnets), **kw}
    )
    wiring = NetworkWiring(
        region=REGION, needs=needs or NetworkNeeds(), lookup=NetworkLookup(facts)
    )
    issues = Issues()
    decided = decide(NetworkConfig(existing=existing, vpc_endpoints=create), wiring, issues)
    assert decided.existing is not None
    assert decided.cost.nat_gateways == 0  # the VPC's NAT is not the stack's
    return decided.existing, list(decided.lines), [str(i) for i in issues]


@pytest.mark.parametrize(
    ("network", "cost"),
    [
        (NetworkConfig(), NetworkInput(1, 2, 7)),
        (NetworkConfig(nat_gateways="perAz", availability_zones=3), NetworkInput(3, 3, 7)),
        (
            NetworkConfig(availability_zone_names=["a", "b"], vpc_endpoints=False),
            NetworkInput(1, 2, 0),
        ),
    ],
)
def test_a_created_vpc_costs_its_nat_gateways_and_endpoints(
    network: NetworkConfig, cost: NetworkInput
) -> None:
    decided = decide(network, NetworkWiring(), Issues())
    assert (decided.cidr_block, decided.cost, decided.lines) == ("10.40.0.0/16", cost, ())


def test_an_existing_vpc_not_read_is_one_refusal_and_still_plans() -> None:
    issues = Issues()
    existing = ExistingNetworkConfig(vpc_id=VPC, private_subnet_ids=["subnet-0a1b2c3d4e5f60a01"])
    decided = decide(NetworkConfig(existing=existing), NetworkWiring(), issues)
    assert [i.path for i in issues] == ["platform.network.existing"]
    assert decided.cost == NetworkInput(0, 0, 0) and decided.existing is None


def _two_zones(**kw: Any) -> NetworkFacts:
    return _facts(_subnet(1, "eu-west-1a"), _subnet(2, "eu-west-1b"), **kw)


def test_two_zones_with_nat_pass_and_get_the_standard_endpoints() -> None:
    spec, lines, issues = _plan(_two_zones())
    assert issues == []
    assert spec.availability_zones == ("eu-west-1a", "eu-west-1b")
    assert spec.interface_services == (
        "ecr.api", "ecr.dkr", "logs", "sts", "secretsmanager", "ssm", "ssmmessages"
    )  # fmt: skip
    assert spec.gateway_route_table_ids == ("rtb-0a1b2c3d4e5f60a01", "rtb-0a1b2c3d4e5f60a02")
    assert "endpoints created: s3, ecr.api" in " ".join(lines)


def test_one_zone_is_refused() -> None:
    facts = _facts(_subnet(1, "eu-west-1a"), _subnet(2, "eu-west-1a"))
    _, _, issues = _plan(facts)
    assert issues == [
        "platform.network.existing.privateSubnetIds: every subnet is in eu-west-1a: tasks, "
        "container instances and the ALB need subnets in at least 2 Availability Zones (an ALB "
        "refuses fewer, and one zone's outage would stop every service); add a subnet of "
        "another zone"
    ]


def test_a_subnet_routed_to_an_internet_gateway_is_refused() -> None:
    public = _subnet(2, "eu-west-1b")
    facts = _facts(_subnet(1, "eu-west-1a"), public)
    facts = replace(
        facts,
        route_tables={**facts.route_tables, public.route_table_id: RouteTableFacts("x", IGW)},
    )
    _, _, issues = _plan(facts)
    assert len(issues) == 1
    assert issues[0].startswith(
        "platform.network.existing.privateSubnetIds[1]: subnet-0a1b2c3d4e5f60a02 is a public "
        "subnet (its route table x sends 0.0.0.0/0 to igw-0a1b2c3d4e5f60a01)"
    )
    assert "name private ones here" in issues[0]


def test_a_subnet_that_maps_public_ips_is_refused() -> None:
    facts = _facts(_subnet(1, "eu-west-1a"), _subnet(2, "eu-west-1b", map_public_ip_on_launch=True))
    _, _, issues = _plan(facts)
    assert len(issues) == 1
    assert "privateSubnetIds[1]" in issues[0] and "MapPublicIpOnLaunch" in issues[0]


def test_no_nat_and_no_s3_endpoint_without_endpoint_creation_is_refused() -> None:
    endpoints = {
        f"vpce-0a1b2c3d4e5f6a00{i}": EndpointFacts(
            f"vpce-0a1b2c3d4e5f6a00{i}",
            f"com.amazonaws.{REGION}.{service}",
            VPC,
            "Interface",
            private_dns_enabled=True,
        )
        for i, service in enumerate(("ecr.api", "ecr.dkr"), start=1)
    }
    facts = _two_zones(routes=(), endpoints=endpoints)
    _, _, issues = _plan(
        facts,
        create=False,
        load_balancer_subnet_ids=[],
        vpc_endpoints={"ecr.api": "vpce-0a1b2c3d4e5f6a001", "ecr.dkr": "vpce-0a1b2c3d4e5f6a002"},
    )
    pull = [i for i in issues if "could not pull" in i]
    assert len(pull) == 1
    assert pull[0].startswith(
        "platform.network.existing.privateSubnetIds: subnet-0a1b2c3d4e5f60a01, "
        "subnet-0a1b2c3d4e5f60a02 have no NAT (or other) route out (route table "
        "rtb-0a1b2c3d4e5f60a01, rtb-0a1b2c3d4e5f60a02) and the VPC has no s3 endpoint"
    )
    assert "Set platform.network.vpcEndpoints: true" in pull[0]
    # The ALB in the same subnets cannot reach the identity provider either.
    assert sum("identity provider" in i for i in issues) == 2


def test_no_nat_with_endpoint_creation_creates_what_instances_call() -> None:
    facts = _two_zones(routes=())
    spec, _, issues = _plan(
        facts, NetworkNeeds(container_instances=True, workers=True), load_balancer_subnet_ids=[]
    )
    # Only the ALB's own way out is missing; the tasks get every endpoint they call.
    assert all("identity provider" in i for i in issues) and len(issues) == 2
    for service in ("ecs-agent", "ecs-telemetry", "ecs", "autoscaling", "monitoring", "sqs"):
        assert service in spec.interface_services


def test_transit_gateway_egress_counts_as_a_way_out() -> None:
    spec, lines, issues = _plan(_two_zones(routes=(Route("0.0.0.0/0", "tgw-0a1b2c3d4e5f60a01"),)))
    assert issues == []
    assert "other route tgw-0a1b2c3d4e5f60a01" in " ".join(lines)
    assert "ecs-agent" not in spec.interface_services


def test_a_subnet_on_the_main_route_table_uses_its_routes() -> None:
    implicit = replace(_subnet(2, "eu-west-1b"), route_table_id=None)
    facts = _facts(_subnet(1, "eu-west-1a"), implicit)
    facts = replace(
        facts,
        main_route_table_id="rtb-0a1b2c3d4e5f60d00",
        route_tables={**facts.route_tables, "rtb-0a1b2c3d4e5f60d00": RouteTableFacts("m", IGW)},
    )
    _, _, issues = _plan(facts)
    assert len(issues) == 1 and "privateSubnetIds[1]" in issues[0] and "igw-" in issues[0]


def test_existing_endpoints_are_used_not_created() -> None:
    s3 = EndpointFacts(
        "vpce-0a1b2c3d4e5f6a001",
        f"com.amazonaws.{REGION}.s3",
        VPC,
        "Gateway",
        route_table_ids=("rtb-0a1b2c3d4e5f60a01", "rtb-0a1b2c3d4e5f60a02"),
    )
    facts = _two_zones(endpoints={s3.id: s3})
    spec, _, issues = _plan(
        facts, vpc_endpoints={"s3": s3.id, "logs": "shared", "ecr.api": "shared"}
    )
    assert issues == []
    assert spec.gateway_route_table_ids == ()
    assert "logs" not in spec.interface_services and "ecr.api" not in spec.interface_services


@pytest.mark.parametrize(
    ("endpoint", "expected"),
    [
        (
            EndpointFacts(
                "vpce-0a1b2c3d4e5f6a001", f"com.amazonaws.{REGION}.s3", VPC, "Gateway",
                route_table_ids=("rtb-0a1b2c3d4e5f60a01",),
            ),
            "vpce-0a1b2c3d4e5f6a001 is not on route table rtb-0a1b2c3d4e5f60a02 (of "
            "subnet-0a1b2c3d4e5f60a02)",
        ),
        (
            EndpointFacts(
                "vpce-0a1b2c3d4e5f6a001", f"com.amazonaws.{REGION}.logs", VPC, "Interface"
            ),
            f"it is an endpoint of com.amazonaws.{REGION}.logs, not com.amazonaws.{REGION}.s3",
        ),
        (
            EndpointFacts(
                "vpce-0a1b2c3d4e5f6a001", f"com.amazonaws.{REGION}.s3", "vpc-0f0f0f0f0f0f0f0f0",
                "Gateway",
            ),
            "it is in vpc-0f0f0f0f0f0f0f0f0",
        ),
    ],
)  # fmt: skip
def test_a_named_s3_endpoint_must_be_what_it_claims(endpoint: EndpointFacts, expected: str) -> None:
    facts = _two_zones(endpoints={endpoint.id: endpoint})
    _, _, issues = _plan(facts, vpc_endpoints={"s3": endpoint.id})
    assert len(issues) == 1
    assert issues[0].startswith("platform.network.existing.vpcEndpoints.s3: ")
    assert expected in issues[0]


def test_an_interface_endpoint_without_private_dns_is_refused() -> None:
    logs = EndpointFacts("vpce-0a1b2c3d4e5f6a001", f"com.amazonaws.{REGION}.logs", VPC, "Interface")
    _, _, issues = _plan(_two_zones(endpoints={logs.id: logs}), vpc_endpoints={"logs": logs.id})
    assert len(issues) == 1 and "private DNS is off" in issues[0]


def test_created_interface_endpoints_need_the_vpcs_dns_attributes() -> None:
    _, _, issues = _plan(_two_zones(dns_hostnames=False))
    assert len(issues) == 1
    assert issues[0].startswith("platform.network.existing.vpcId: ")
    assert "DNS host names off" in issues[0]


def test_a_subnet_of_another_vpc_or_outside_the_cidr_is_refused() -> None:
    other = replace(_subnet(2, "eu-west-1b"), vpc_id="vpc-0f0f0f0f0f0f0f0f0")
    outside = replace(_subnet(3, "eu-west-1c"), cidr_block="100.64.0.0/19")
    _, _, issues = _plan(_facts(_subnet(1, "eu-west-1a"), other, outside))
    assert any(i.startswith("platform.network.existing.privateSubnetIds[1]: ") for i in issues)
    assert any("outside the VPC's primary CIDR" in i for i in issues)


def test_one_subnet_per_zone_for_the_alb_and_the_endpoints() -> None:
    facts = _facts(_subnet(1, "eu-west-1a"), _subnet(2, "eu-west-1a"), _subnet(3, "eu-west-1b"))
    spec, _, issues = _plan(facts)
    assert issues == []
    assert spec.zone_subnet_ids == ("subnet-0a1b2c3d4e5f60a01", "subnet-0a1b2c3d4e5f60a03")
    assert spec.load_balancer_subnet_ids == spec.zone_subnet_ids


def test_an_internet_facing_endpoint_needs_public_subnets() -> None:
    _, _, issues = _plan(_two_zones(), NetworkNeeds(internet_facing=True))
    assert issues and issues[0].startswith("platform.network.existing.publicSubnetIds: ")


OWNER = "210987654321"
CALLER = "123456789012"


def _endpoint(n: int, service: str, **kw: Any) -> EndpointFacts:
    kind = "Gateway" if service == "s3" else "Interface"
    return EndpointFacts(
        f"vpce-0a1b2c3d4e5f6a00{n}", f"com.amazonaws.{REGION}.{service}", VPC, kind, **kw
    )


def test_an_s3_gateway_missing_from_several_tables_is_one_refusal_with_one_command() -> None:
    s3 = _endpoint(1, "s3", route_table_ids=())
    facts = _facts(
        _subnet(1, "eu-west-1a"), _subnet(2, "eu-west-1b"), _subnet(3, "eu-west-1a"),
        endpoints={s3.id: s3},
    )  # fmt: skip
    _, _, issues = _plan(facts, vpc_endpoints={"s3": s3.id})
    assert len(issues) == 1
    assert issues[0].count("modify-vpc-endpoint") == 1
    assert issues[0].endswith(
        "--add-route-table-ids rtb-0a1b2c3d4e5f60a01 rtb-0a1b2c3d4e5f60a02 rtb-0a1b2c3d4e5f60a03)"
    )


def test_a_participant_with_nat_creates_no_endpoint_and_changes_no_route_table() -> None:
    """A VPC shared through AWS RAM: only its owner creates endpoints and edits route tables."""
    facts = _two_zones(owner_id=OWNER, caller_account=CALLER)
    spec, lines, issues = _plan(facts)
    assert issues == []
    assert spec.interface_services == () and spec.gateway_route_table_ids == ()
    assert f"VPC owned by account {OWNER}" in lines[-1]
    assert "traffic goes through the VPC's NAT" in lines[-1]
    # The same VPC, owned by the deploying account: every missing endpoint is created.
    owned, _, _ = _plan(replace(facts, caller_account=OWNER))
    assert owned.interface_services and owned.gateway_route_table_ids


def test_a_participant_without_a_way_out_is_told_what_the_network_team_must_add() -> None:
    """One refusal per missing endpoint (not per subnet), at the key that will name it."""
    ecr = {
        s: _endpoint(n, s, private_dns_enabled=True) for n, s in ((1, "ecr.api"), (2, "ecr.dkr"))
    }
    facts = _facts(
        _subnet(1, "eu-west-1a"), _subnet(2, "eu-west-1b"), _subnet(3, "eu-west-1b"), routes=(),
        endpoints={e.id: e for e in ecr.values()}, owner_id=OWNER, caller_account=CALLER,
    )  # fmt: skip
    spec, _, issues = _plan(facts, vpc_endpoints={s: e.id for s, e in ecr.items()})
    assert spec.interface_services == () and spec.gateway_route_table_ids == ()
    paths = [i.split(": ", 1)[0] for i in issues]
    assert len(paths) == len(set(paths))
    s3 = next(i for i in issues if i.startswith("platform.network.existing.vpcEndpoints.s3: "))
    assert f"belongs to account {OWNER}" in s3 and f"deploys as {CALLER}" in s3
    assert "an S3 gateway endpoint on route table(s) rtb-0a1b2c3d4e5f60a01, " in s3
    assert "ecr.api" not in " ".join(paths)
    sts = next(i for i in issues if ".vpcEndpoints.sts: " in i)
    assert "an interface endpoint for sts with private DNS, in eu-west-1a, eu-west-1b" in sts


def test_an_image_from_outside_ecr_needs_a_way_out_even_with_every_endpoint() -> None:
    """VPC endpoints reach AWS services only: GHCR's LiteLLM needs a NAT or a pull-through
    cache, whoever creates the endpoints."""
    image = "ghcr.io/berriai/litellm:main-v1.80.0"
    needs = NetworkNeeds(outside_ecr_images={"platform.gateway.image": image})
    spec, _, issues = _plan(_two_zones(routes=()), needs)
    assert spec.interface_services  # the endpoints are created, and still do not reach GHCR
    pulls = [i for i in issues if i.startswith("platform.gateway.image: ")]
    assert len(pulls) == 1
    assert pulls[0].startswith(f"platform.gateway.image: {image} comes from a registry outside")
    assert "pull-through cache rule" in pulls[0]
    _, _, with_nat = _plan(_two_zones(), needs)
    assert with_nat == []
