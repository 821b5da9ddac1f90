"""What AWS says about an existing network, as plain values: the data sources' answers
(`ecs_inference.network.discover`), or a test's, that the decisions check. No Pulumi import."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from ecs_inference.config.issues import ConfigIssue

IPV4_DEFAULT = "0.0.0.0/0"

Egress = Literal["nat", "internet-gateway", "other", "none"]


@dataclass(frozen=True)
class Route:
    """One route of a route table: its destination (CIDR or prefix list) and its target."""

    destination: str
    target: str
    """The target's id (`nat-…`, `igw-…`, `tgw-…`, `eni-…`, `vgw-…`, `pcx-…`)."""

    @property
    def egress(self) -> Egress:
        """What a default route leads to: a NAT gateway, an internet gateway (a public subnet),
        another way out this stack cannot follow (transit gateway, appliance ENI, VPN, peering,
        instance), or nothing (not a default route)."""
        if self.destination != IPV4_DEFAULT:
            return "none"
        if self.target.startswith("nat-"):
            return "nat"
        if self.target.startswith("igw-"):
            return "internet-gateway"
        return "other"


@dataclass(frozen=True)
class SubnetFacts:
    id: str
    vpc_id: str
    availability_zone: str
    cidr_block: str
    map_public_ip_on_launch: bool = False
    route_table_id: str | None = None
    """The table explicitly associated with the subnet; None: the VPC's main route table."""


@dataclass(frozen=True)
class RouteTableFacts:
    id: str
    routes: tuple[Route, ...] = ()


@dataclass(frozen=True)
class EndpointFacts:
    id: str
    service_name: str
    vpc_id: str
    endpoint_type: str
    """`Gateway`, `Interface` or `GatewayLoadBalancer`."""
    state: str = "available"
    route_table_ids: tuple[str, ...] = ()
    private_dns_enabled: bool = False


@dataclass(frozen=True)
class NetworkFacts:
    """An existing VPC, its task subnets and the route tables and endpoints they use."""

    vpc_id: str
    cidr_block: str
    dns_support: bool = True
    dns_hostnames: bool = True
    subnets: Mapping[str, SubnetFacts] = field(default_factory=dict)
    route_tables: Mapping[str, RouteTableFacts] = field(default_factory=dict)
    main_route_table_id: str | None = None
    endpoints: Mapping[str, EndpointFacts] = field(default_factory=dict)
    """By endpoint id."""
    owner_id: str | None = None
    """The account that owns the VPC (`get_vpc`'s `owner_id`); None: not read."""
    caller_account: str | None = None
    """The account the stack deploys with (`get_caller_identity`); None: not read."""

    @property
    def participant(self) -> bool:
        """The stack's account uses the VPC through AWS RAM and owns none of its routing."""
        return bool(self.owner_id and self.caller_account and self.owner_id != self.caller_account)

    def table_of(self, subnet: SubnetFacts) -> RouteTableFacts | None:
        table = subnet.route_table_id or self.main_route_table_id
        return None if table is None else self.route_tables.get(table)

    def egress(self, subnet: SubnetFacts) -> tuple[Egress, str | None, RouteTableFacts | None]:
        """Where `subnet`'s default route leads, its target id, and the route table it uses."""
        table = self.table_of(subnet)
        for route in table.routes if table is not None else ():
            if route.egress != "none":
                return route.egress, route.target, table
        return "none", None, table


@dataclass(frozen=True)
class NetworkLookup:
    """What `ecs_inference.network.discover.discover` read about an existing VPC."""

    facts: NetworkFacts | None
    """None when the VPC itself could not be read."""
    unreadable: tuple[ConfigIssue, ...] = ()
    """Each lookup that failed, as an issue at the id's config path."""
