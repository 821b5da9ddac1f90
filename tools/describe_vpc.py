"""Describe a stack's existing VPC for the offline preview: write its `preview:lookups`.

    python -m tools.describe_vpc shared-vpc            # prints the setting
    python -m tools.describe_vpc shared-vpc --write    # puts it into Pulumi.shared-vpc.yaml

Run it where AWS credentials for the stack's account are (the standard chain: environment,
profile, SSO, instance role) and nowhere else: it reads the stack file's
`ecs-inference:platform.network.existing` and `aws:region`, asks EC2 what the program's data
sources would return (DescribeVpcs and DescribeVpcAttribute for the VPC, DescribeSubnets,
DescribeRouteTables for the subnets' tables and the VPC's main table, DescribeVpcEndpoints for
every endpoint of the VPC, and STS GetCallerIdentity for the deploying account), and writes them
in the data sources' shape (camelCase outputs, keyed by id) that tools/described.py reads. Every
field it writes is one the preview's checks read (docs/network.md lists them). Read-only calls
only: the `ViewOnlyAccess` managed policy covers them.

Endpoints of the VPC that `vpcEndpoints` does not name are described too, and listed on stderr:
the program looks up only the named ones, so name those the stack should use.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from tools.described import SETTING

ROOT = Path(__file__).resolve().parent.parent
PLATFORM = "ecs-inference:platform"

# DescribeRouteTables' route members -> the data source's route fields (described.ROUTE_FIELDS).
_ROUTE_TARGETS = {
    "GatewayId": "gatewayId",
    "NatGatewayId": "natGatewayId",
    "TransitGatewayId": "transitGatewayId",
    "NetworkInterfaceId": "networkInterfaceId",
    "InstanceId": "instanceId",
    "VpcPeeringConnectionId": "vpcPeeringConnectionId",
    "CoreNetworkArn": "coreNetworkArn",
    "LocalGatewayId": "localGatewayId",
    "CarrierGatewayId": "carrierGatewayId",
    "EgressOnlyInternetGatewayId": "egressOnlyGatewayId",
}
_ROUTE_DESTINATIONS = {
    "DestinationCidrBlock": "cidrBlock",
    "DestinationIpv6CidrBlock": "ipv6CidrBlock",
    "DestinationPrefixListId": "destinationPrefixListId",
}


class DescribeError(Exception):
    """The stack file names no existing VPC, or AWS refused a call."""


def _existing(stack_file: Path) -> tuple[Mapping[str, Any], str]:
    """`network.existing` and `aws:region` of the stack file."""
    data = yaml.safe_load(stack_file.read_text()) or {}
    config = data.get("config") or {}
    existing = ((config.get(PLATFORM) or {}).get("network") or {}).get("existing")
    if not isinstance(existing, Mapping) or not existing.get("vpcId"):
        raise DescribeError(
            f"{stack_file.name}: {PLATFORM}.network.existing names no vpcId: nothing to describe"
        )
    region = config.get("aws:region")
    if not region:
        raise DescribeError(f"{stack_file.name}: aws:region is not set")
    return existing, str(region)


def _route(route: Mapping[str, Any]) -> dict[str, str]:
    out = {field: str(route[key]) for key, field in _ROUTE_DESTINATIONS.items() if route.get(key)}
    out |= {field: str(route[key]) for key, field in _ROUTE_TARGETS.items() if route.get(key)}
    return out


def _table(table: Mapping[str, Any]) -> dict[str, Any]:
    # The data source leaves out the VPC's local route and gateway-endpoint routes (their target
    # is the endpoint's prefix list); the checks read default routes only.
    routes = [
        _route(r)
        for r in table.get("Routes") or ()
        if r.get("GatewayId") != "local" and not str(r.get("GatewayId", "")).startswith("vpce-")
    ]
    associations = []
    for a in table.get("Associations") or ():
        entry: dict[str, Any] = {"main": True} if a.get("Main") else {}
        if a.get("SubnetId"):
            entry["subnetId"] = a["SubnetId"]
        if entry:
            associations.append(entry)
    return {
        "vpcId": table["VpcId"],
        "ownerId": table.get("OwnerId", ""),
        "associations": associations,
        "routes": routes,
    }


def _endpoint(endpoint: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "vpcId": endpoint["VpcId"],
        "serviceName": endpoint["ServiceName"],
        "vpcEndpointType": endpoint["VpcEndpointType"],
        "state": str(endpoint.get("State", "")).lower(),
        "routeTableIds": list(endpoint.get("RouteTableIds") or ()),
        "privateDnsEnabled": bool(endpoint.get("PrivateDnsEnabled")),
        "policy": endpoint.get("PolicyDocument") or "",
        "ownerId": endpoint.get("OwnerId", ""),
    }


def _pages(client: Any, operation: str, key: str, **kwargs: Any) -> list[dict[str, Any]]:
    return [
        item for page in client.get_paginator(operation).paginate(**kwargs) for item in page[key]
    ]


def describe(ec2: Any, sts: Any, existing: Mapping[str, Any]) -> dict[str, Any]:
    """The `preview:lookups` value for `existing` (a stack file's `network.existing`), from an
    EC2 and an STS client."""
    vpc_id = str(existing["vpcId"])
    (vpc,) = ec2.describe_vpcs(VpcIds=[vpc_id])["Vpcs"]
    dns = {
        field: bool(ec2.describe_vpc_attribute(VpcId=vpc_id, Attribute=attribute)[key]["Value"])
        for attribute, key, field in (
            ("enableDnsSupport", "EnableDnsSupport", "enableDnsSupport"),
            ("enableDnsHostnames", "EnableDnsHostnames", "enableDnsHostnames"),
        )
    }
    subnet_ids = list(
        dict.fromkeys(
            str(s)
            for key in ("privateSubnetIds", "loadBalancerSubnetIds", "publicSubnetIds")
            for s in existing.get(key) or ()
        )
    )
    subnets = _pages(ec2, "describe_subnets", "Subnets", SubnetIds=subnet_ids) if subnet_ids else []
    filters = [{"Name": "vpc-id", "Values": [vpc_id]}]
    tables = _pages(ec2, "describe_route_tables", "RouteTables", Filters=filters)
    wanted = set(subnet_ids)
    tables = [
        t
        for t in tables
        if any(a.get("Main") or a.get("SubnetId") in wanted for a in t.get("Associations") or ())
    ]
    endpoints = _pages(ec2, "describe_vpc_endpoints", "VpcEndpoints", Filters=filters)
    return {
        "callerIdentity": {"accountId": sts.get_caller_identity()["Account"]},
        "vpcs": {
            vpc_id: {"cidrBlock": vpc["CidrBlock"], "ownerId": vpc["OwnerId"], **dns},
        },
        "subnets": {
            s["SubnetId"]: {
                "vpcId": s["VpcId"],
                "availabilityZone": s["AvailabilityZone"],
                "cidrBlock": s["CidrBlock"],
                "mapPublicIpOnLaunch": bool(s.get("MapPublicIpOnLaunch")),
                "ownerId": s.get("OwnerId", ""),
            }
            for s in subnets
        },
        "routeTables": {t["RouteTableId"]: _table(t) for t in tables},
        "vpcEndpoints": {e["VpcEndpointId"]: _endpoint(e) for e in endpoints},
    }


def unnamed_endpoints(existing: Mapping[str, Any], lookups: Mapping[str, Any]) -> list[str]:
    """`<id> (<service>)` of each endpoint of the VPC that `vpcEndpoints` does not name."""
    named = set((existing.get("vpcEndpoints") or {}).values())
    return [
        f"{i} ({e['serviceName']})" for i, e in lookups["vpcEndpoints"].items() if i not in named
    ]


def render(lookups: Mapping[str, Any]) -> str:
    """The setting as the lines of a stack file's `config:` block."""
    body = yaml.safe_dump({SETTING: dict(lookups)}, sort_keys=False, width=100)
    return "".join(f"  {line}\n" for line in body.splitlines())


def splice(text: str, block: str) -> str:
    """`text` (a stack file) with its `preview:lookups` block replaced by `block`, or `block`
    appended to `config:` when it has none. Other lines, comments included, stay as they are."""
    lines = text.splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if line.startswith(f"  {SETTING}:")), None)
    if start is None:
        if not any(line.rstrip() == "config:" for line in lines):
            raise DescribeError("the stack file has no top-level `config:` key")
        return "".join(lines).rstrip("\n") + "\n" + block
    end = start + 1
    while end < len(lines) and (lines[end].startswith("   ") or not lines[end].strip()):
        end += 1
    return "".join(lines[:start]) + block + "".join(lines[end:])


def main(argv: Sequence[str] | None = None, clients: tuple[Any, Any] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("stack", help="the stack whose Pulumi.<stack>.yaml names the VPC")
    parser.add_argument("--stack-file", type=Path, help="default: Pulumi.<stack>.yaml here")
    parser.add_argument("--write", action="store_true", help="write it into the stack file")
    args = parser.parse_args(argv)
    path: Path = args.stack_file or ROOT / f"Pulumi.{args.stack}.yaml"
    try:
        existing, region = _existing(path)
        if clients is None:
            import botocore.session

            session = botocore.session.get_session()
            clients = (
                session.create_client("ec2", region_name=region),
                session.create_client("sts", region_name=region),
            )
        lookups = describe(*clients, existing)
    except (DescribeError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # botocore's own: credentials, access denied, unknown id
        print(
            f"error: AWS refused a read-only call ({exc}); check the credentials", file=sys.stderr
        )
        return 2
    for line in unnamed_endpoints(existing, lookups):
        print(f"note: the VPC has endpoint {line}, not named in vpcEndpoints", file=sys.stderr)
    block = render(lookups)
    if args.write:
        path.write_text(splice(path.read_text(), block))
        print(f"wrote {SETTING} into {path.name}", file=sys.stderr)
    else:
        sys.stdout.write(block)
    return 0


if __name__ == "__main__":
    sys.exit(main())
