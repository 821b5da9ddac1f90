"""EC2 networking that the awsx VPC creates: VPCs, subnets, route tables, routes and their
associations, internet and NAT gateways, Elastic IPs (terraform-provider-aws's create
functions: CreateVpc then ModifyVpcAttribute per DNS attribute, CreateSubnet then
ModifySubnetAttribute, CreateInternetGateway then AttachInternetGateway, ...)."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from typing import Any

from tools.aws_requests.registry import (
    ApiRequest,
    Inputs,
    drop_none,
    known,
    maps,
    rule,
    tags,
)
from tools.aws_shapes import UNKNOWN


def _tagged(resource_type: str, i: Inputs) -> Any:
    """TagSpecifications of a create call (None without tags)."""
    value = tags(i.get("tags"))
    return [{"ResourceType": resource_type, "Tags": value}] if value else None


def _attribute(operation: str, key: str, id_key: str, value: Any) -> ApiRequest:
    """A Modify*Attribute call on the resource just created (its id is known only then)."""
    return ApiRequest("ec2", operation, {id_key: UNKNOWN, key: {"Value": value}})


@maps("aws:ec2/vpc:Vpc")
def _vpc(i: Inputs, _name: str | None) -> list[ApiRequest]:
    out = [
        ApiRequest(
            "ec2",
            "CreateVpc",
            drop_none(
                {
                    "CidrBlock": i.get("cidrBlock"),
                    "InstanceTenancy": i.get("instanceTenancy"),
                    "Ipv4IpamPoolId": i.get("ipv4IpamPoolId"),
                    "Ipv4NetmaskLength": i.get("ipv4NetmaskLength"),
                    "AmazonProvidedIpv6CidrBlock": i.get("assignGeneratedIpv6CidrBlock"),
                    "TagSpecifications": _tagged("vpc", i),
                }
            ),
        )
    ]
    # One attribute per ModifyVpcAttribute call, as the API requires.
    for key, member in (
        ("enableDnsHostnames", "EnableDnsHostnames"),
        ("enableDnsSupport", "EnableDnsSupport"),
    ):
        if key in i:
            out.append(_attribute("ModifyVpcAttribute", member, "VpcId", i[key]))
    return out


@maps("aws:ec2/subnet:Subnet")
def _subnet(i: Inputs, _name: str | None) -> list[ApiRequest]:
    out = [
        ApiRequest(
            "ec2",
            "CreateSubnet",
            drop_none(
                {
                    "VpcId": i.get("vpcId"),
                    "CidrBlock": i.get("cidrBlock"),
                    "AvailabilityZone": i.get("availabilityZone"),
                    "AvailabilityZoneId": i.get("availabilityZoneId"),
                    "Ipv6CidrBlock": i.get("ipv6CidrBlock"),
                    "TagSpecifications": _tagged("subnet", i),
                }
            ),
        )
    ]
    if i.get("mapPublicIpOnLaunch"):
        out.append(_attribute("ModifySubnetAttribute", "MapPublicIpOnLaunch", "SubnetId", True))
    return out


@rule("aws:ec2/vpc:Vpc", "aws:ec2/subnet:Subnet")
def _ipv4_block_size(i: Inputs, _name: str | None) -> Iterable[str]:
    # Amazon VPC user guide, "VPC CIDR blocks" and "Subnet sizing": IPv4 blocks between /16
    # and /28.
    cidr = i.get("cidrBlock")
    if known(cidr) and isinstance(cidr, str):
        prefix = ipaddress.ip_network(cidr, strict=False).prefixlen
        if not 16 <= prefix <= 28:
            yield f"cidrBlock {cidr!r}: an IPv4 block must be between /16 and /28"


@maps("aws:ec2/routeTable:RouteTable")
def _route_table(i: Inputs, _name: str | None) -> list[ApiRequest]:
    params = {"VpcId": i.get("vpcId"), "TagSpecifications": _tagged("route-table", i)}
    return [ApiRequest("ec2", "CreateRouteTable", drop_none(params))]


@maps("aws:ec2/routeTableAssociation:RouteTableAssociation")
def _association(i: Inputs, _name: str | None) -> list[ApiRequest]:
    params = {
        "RouteTableId": i.get("routeTableId"),
        "SubnetId": i.get("subnetId"),
        "GatewayId": i.get("gatewayId"),
    }
    return [ApiRequest("ec2", "AssociateRouteTable", drop_none(params))]


@rule("aws:ec2/routeTableAssociation:RouteTableAssociation")
def _association_target(i: Inputs, _name: str | None) -> Iterable[str]:
    # AssociateRouteTable: a subnet or a gateway, not both.
    given = [k for k in ("subnetId", "gatewayId") if k in i]
    if len(given) != 1:
        yield f"a route table association needs exactly one of subnetId, gatewayId (got {given})"


_ROUTE_DESTINATIONS = (
    "destinationCidrBlock",
    "destinationIpv6CidrBlock",
    "destinationPrefixListId",
)
_ROUTE_TARGETS = {
    "gatewayId": "GatewayId",
    "natGatewayId": "NatGatewayId",
    "transitGatewayId": "TransitGatewayId",
    "vpcEndpointId": "VpcEndpointId",
    "egressOnlyGatewayId": "EgressOnlyInternetGatewayId",
    "networkInterfaceId": "NetworkInterfaceId",
    "vpcPeeringConnectionId": "VpcPeeringConnectionId",
    "carrierGatewayId": "CarrierGatewayId",
    "localGatewayId": "LocalGatewayId",
    "coreNetworkArn": "CoreNetworkArn",
}


@maps("aws:ec2/route:Route")
def _route(i: Inputs, _name: str | None) -> list[ApiRequest]:
    params: dict[str, Any] = {
        "RouteTableId": i.get("routeTableId"),
        "DestinationCidrBlock": i.get("destinationCidrBlock"),
        "DestinationIpv6CidrBlock": i.get("destinationIpv6CidrBlock"),
        "DestinationPrefixListId": i.get("destinationPrefixListId"),
    }
    params.update({member: i.get(key) for key, member in _ROUTE_TARGETS.items()})
    return [ApiRequest("ec2", "CreateRoute", drop_none(params))]


@rule("aws:ec2/route:Route")
def _route_shape(i: Inputs, _name: str | None) -> Iterable[str]:
    # CreateRoute: one destination and one target.
    destinations = [k for k in _ROUTE_DESTINATIONS if k in i]
    targets = [k for k in _ROUTE_TARGETS if k in i]
    if len(destinations) != 1:
        yield f"a route needs exactly one destination of {', '.join(_ROUTE_DESTINATIONS)}"
    if len(targets) != 1:
        yield f"a route needs exactly one target (got {', '.join(targets) or 'none'})"


@maps("aws:ec2/internetGateway:InternetGateway")
def _internet_gateway(i: Inputs, _name: str | None) -> list[ApiRequest]:
    out = [
        ApiRequest(
            "ec2",
            "CreateInternetGateway",
            drop_none({"TagSpecifications": _tagged("internet-gateway", i)}),
        )
    ]
    if "vpcId" in i:
        out.append(
            ApiRequest(
                "ec2", "AttachInternetGateway", {"InternetGatewayId": UNKNOWN, "VpcId": i["vpcId"]}
            )
        )
    return out


@maps("aws:ec2/natGateway:NatGateway")
def _nat_gateway(i: Inputs, _name: str | None) -> list[ApiRequest]:
    params = {
        "SubnetId": i.get("subnetId"),
        "AllocationId": i.get("allocationId"),
        "ConnectivityType": i.get("connectivityType"),
        "PrivateIpAddress": i.get("privateIp"),
        "TagSpecifications": _tagged("natgateway", i),
    }
    return [ApiRequest("ec2", "CreateNatGateway", drop_none(params))]


@rule("aws:ec2/natGateway:NatGateway")
def _nat_gateway_shape(i: Inputs, _name: str | None) -> Iterable[str]:
    # CreateNatGateway: a public NAT gateway needs an Elastic IP allocation; a private one
    # takes none.
    private = i.get("connectivityType") == "private"
    if not private and "allocationId" not in i:
        yield "a public NAT gateway needs allocationId (an Elastic IP)"
    if private and "allocationId" in i:
        yield "a private NAT gateway takes no allocationId"


@maps("aws:ec2/eip:Eip")
def _eip(i: Inputs, _name: str | None) -> list[ApiRequest]:
    params = {
        "Domain": i.get("domain") or "vpc",
        "Address": i.get("address"),
        "PublicIpv4Pool": i.get("publicIpv4Pool"),
        "NetworkBorderGroup": i.get("networkBorderGroup"),
        "CustomerOwnedIpv4Pool": i.get("customerOwnedIpv4Pool"),
        "IpamPoolId": i.get("ipamPoolId"),
        "TagSpecifications": _tagged("elastic-ip", i),
    }
    return [ApiRequest("ec2", "AllocateAddress", drop_none(params))]
