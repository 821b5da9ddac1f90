"""Reading an existing VPC (`network.existing`) through the data sources, into the facts the
decisions check (`ecs_inference.network.facts`).

The program (`__main__.py`) calls `discover` before the plan, and a `Network` given no lookup
calls it itself. A real preview asks AWS; the offline preview answers from the stack file's
`preview:lookups` (tools/described.py).
Each lookup that fails (an id that does not exist in the account and region) becomes an issue at
that id's config path, reported with every other problem of the run.
"""

from __future__ import annotations

from dataclasses import replace

import pulumi_aws as aws

from ecs_inference.config.issues import Issues
from ecs_inference.network.facts import (
    EndpointFacts,
    NetworkFacts,
    NetworkLookup,
    Route,
    RouteTableFacts,
    SubnetFacts,
)
from ecs_inference.network.input import EXISTING_PATH, SHARED_ENDPOINT, ExistingNetworkConfig

# Route targets in the order a route names them (a route has exactly one).
_ROUTE_TARGETS = (
    "nat_gateway_id",
    "gateway_id",
    "transit_gateway_id",
    "network_interface_id",
    "instance_id",
    "vpc_peering_connection_id",
    "core_network_arn",
    "vpc_endpoint_id",
    "local_gateway_id",
    "carrier_gateway_id",
    "egress_only_gateway_id",
)


def _route(route: object) -> Route:
    destination = (
        getattr(route, "cidr_block", "")
        or getattr(route, "destination_prefix_list_id", "")
        or getattr(route, "ipv6_cidr_block", "")
    )
    target = next((v for k in _ROUTE_TARGETS if (v := getattr(route, k, ""))), "")
    return Route(str(destination), str(target))


def _unreadable(issues: Issues, path: str, what: str, exc: Exception) -> None:
    cause = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    issues.add(path, f"{what} could not be read ({cause}); check the id and the region")


def _table(table: aws.ec2.GetRouteTableResult) -> RouteTableFacts:
    return RouteTableFacts(str(table.id), tuple(_route(r) for r in table.routes))


def discover(existing: ExistingNetworkConfig) -> NetworkLookup:
    """What AWS says about `existing` (the VPC and its owner, the deploying account, its subnets,
    the route tables they use, the endpoints the config names), read with the data sources, and
    each lookup that failed as an issue at the id's config path."""
    issues = Issues()
    facts = _discover(existing, issues)
    return NetworkLookup(facts, tuple(issues))


def _discover(existing: ExistingNetworkConfig, issues: Issues) -> NetworkFacts | None:
    try:
        vpc = aws.ec2.get_vpc(id=existing.vpc_id)
    except Exception as exc:  # the data source's own error: the VPC does not exist here
        _unreadable(issues, f"{EXISTING_PATH}.vpcId", existing.vpc_id, exc)
        return None
    subnets: dict[str, SubnetFacts] = {}
    for key, ids in (
        ("privateSubnetIds", existing.private_subnet_ids),
        ("loadBalancerSubnetIds", existing.load_balancer_subnet_ids),
        ("publicSubnetIds", existing.public_subnet_ids),
    ):
        for i, subnet_id in enumerate(ids):
            if subnet_id in subnets:
                continue
            try:
                found = aws.ec2.get_subnet(id=subnet_id)
            except Exception as exc:
                _unreadable(issues, f"{EXISTING_PATH}.{key}[{i}]", subnet_id, exc)
                continue
            subnets[subnet_id] = SubnetFacts(
                id=subnet_id,
                vpc_id=str(found.vpc_id),
                availability_zone=str(found.availability_zone),
                cidr_block=str(found.cidr_block),
                map_public_ip_on_launch=bool(found.map_public_ip_on_launch),
            )
    tables, associated = _route_tables(existing.vpc_id, list(subnets), issues)
    main: str | None = None
    if any(s not in associated for s in subnets):
        # A subnet without an explicit association uses the VPC's main route table.
        try:
            table = aws.ec2.get_route_table(
                vpc_id=existing.vpc_id,
                filters=[aws.ec2.GetRouteTableFilterArgs(name="association.main", values=["true"])],
            )
            tables[str(table.id)] = _table(table)
            main = str(table.id)
        except Exception as exc:
            _unreadable(issues, f"{EXISTING_PATH}.vpcId", "the VPC's main route table", exc)
    subnets = {i: replace(s, route_table_id=associated.get(i)) for i, s in subnets.items()}
    return NetworkFacts(
        vpc_id=existing.vpc_id,
        cidr_block=str(vpc.cidr_block),
        dns_support=bool(vpc.enable_dns_support),
        dns_hostnames=bool(vpc.enable_dns_hostnames),
        subnets=subnets,
        route_tables=tables,
        main_route_table_id=main,
        endpoints=_endpoints(existing, issues),
        owner_id=str(vpc.owner_id) if vpc.owner_id else None,
        caller_account=_caller_account(issues),
    )


def _caller_account(issues: Issues) -> str | None:
    """The account the stack deploys with: a VPC another account owns (AWS RAM) is the owner's
    to route and to give endpoints."""
    try:
        return str(aws.get_caller_identity().account_id)
    except Exception as exc:  # the credentials' own error
        _unreadable(issues, f"{EXISTING_PATH}.vpcId", "the deploying account", exc)
        return None


def _route_tables(
    vpc_id: str, subnet_ids: list[str], issues: Issues
) -> tuple[dict[str, RouteTableFacts], dict[str, str]]:
    """The route tables explicitly associated with `subnet_ids`, and subnet -> its table."""
    tables: dict[str, RouteTableFacts] = {}
    associated: dict[str, str] = {}
    if not subnet_ids:
        return tables, associated
    try:
        ids = aws.ec2.get_route_tables(
            vpc_id=vpc_id,
            filters=[
                aws.ec2.GetRouteTablesFilterArgs(name="association.subnet-id", values=subnet_ids)
            ],
        ).ids
        for table_id in ids:
            table = aws.ec2.get_route_table(route_table_id=table_id)
            tables[table_id] = _table(table)
            for assoc in table.associations:
                if assoc.subnet_id:
                    associated[str(assoc.subnet_id)] = table_id
    except Exception as exc:
        _unreadable(issues, f"{EXISTING_PATH}.privateSubnetIds", "the subnets' route tables", exc)
    return tables, associated


def _endpoints(existing: ExistingNetworkConfig, issues: Issues) -> dict[str, EndpointFacts]:
    found: dict[str, EndpointFacts] = {}
    for service, endpoint_id in existing.vpc_endpoints.items():
        if endpoint_id == SHARED_ENDPOINT:
            continue
        try:
            endpoint = aws.ec2.get_vpc_endpoint(id=endpoint_id)
        except Exception as exc:
            _unreadable(issues, f"{EXISTING_PATH}.vpcEndpoints.{service}", endpoint_id, exc)
            continue
        found[endpoint_id] = EndpointFacts(
            id=endpoint_id,
            service_name=str(endpoint.service_name),
            vpc_id=str(endpoint.vpc_id),
            endpoint_type=str(endpoint.vpc_endpoint_type),
            state=str(endpoint.state),
            route_table_ids=tuple(endpoint.route_table_ids or ()),
            private_dns_enabled=bool(endpoint.private_dns_enabled),
        )
    return found
