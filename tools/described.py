"""Existing resources a stack file describes for the offline preview: `preview:lookups`.

A stack that runs in an existing network (`network.existing`) asks AWS about it through data
sources: the VPC, each subnet, the route tables the subnets use, the endpoints it names. A real
`pulumi preview` gets AWS's answers; the offline preview has no account, so the stack file can
describe those resources under a setting of its own, in the data sources' shape (camelCase
outputs), keyed by id::

    config:
      preview:lookups:
        vpcs:
          vpc-0a1b2c3d4e5f60718: {cidrBlock: 10.20.0.0/16}
        subnets:
          subnet-0a1b2c3d4e5f60001: {vpcId: vpc-0a1b2c3d4e5f60718, availabilityZone: us-east-1a,
                                     cidrBlock: 10.20.0.0/20}
        routeTables:
          rtb-0a1b2c3d4e5f60001:
            vpcId: vpc-0a1b2c3d4e5f60718
            associations: [{subnetId: subnet-0a1b2c3d4e5f60001}]   # or [{main: true}]
            routes: [{cidrBlock: 0.0.0.0/0, natGatewayId: nat-0a1b2c3d4e5f60001}]
        vpcEndpoints:
          vpce-0a1b2c3d4e5f60001: {vpcId: vpc-0a1b2c3d4e5f60718, vpcEndpointType: Gateway,
                                   serviceName: com.amazonaws.us-east-1.s3,
                                   routeTableIds: [rtb-0a1b2c3d4e5f60001]}

Every key must be one the data source returns; what a description leaves out keeps the value the
offline preview derives (an available resource of the account, in the region). Pulumi hands the
setting to the program like any other (the program does not read it), so the same stack file
previews with the real CLI unchanged. A lookup of an id the file does not describe is answered
with a derived value of the real shape, and listed (`World.derived`): the preview names them when
the configuration is refused, since the refusal may come from a made-up answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tools import lookups
from tools.lookups import hex_id

SETTING = "preview:lookups"
"""The stack setting that holds the descriptions."""

# Route fields of the route-table data sources (every route carries all of them, "" when unset).
ROUTE_FIELDS = (
    "carrierGatewayId",
    "cidrBlock",
    "coreNetworkArn",
    "destinationPrefixListId",
    "egressOnlyGatewayId",
    "gatewayId",
    "instanceId",
    "ipv6CidrBlock",
    "localGatewayId",
    "natGatewayId",
    "networkInterfaceId",
    "odbNetworkArn",
    "transitGatewayId",
    "vpcEndpointId",
    "vpcPeeringConnectionId",
)
ASSOCIATION_FIELDS = ("gatewayId", "main", "routeTableAssociationId", "routeTableId", "subnetId")


class DescriptionError(ValueError):
    """`preview:lookups` is not a description the offline preview can use."""


def _route_table_shape(args: Mapping[str, Any], region: str) -> dict[str, Any]:
    return lookups.LOOKUPS["aws:ec2/getRouteTable:getRouteTable"](args, region)


def _endpoint(args: Mapping[str, Any], region: str) -> dict[str, Any]:
    """The VPC endpoint data source's answer for an endpoint nothing describes."""
    endpoint = str(args.get("id") or "vpce-" + hex_id("vpce", args))
    service = str(args.get("serviceName") or f"com.amazonaws.{region}.s3")
    return {
        "id": endpoint,
        "arn": f"arn:aws:ec2:{region}:{lookups.ACCOUNT_ID}:vpc-endpoint/{endpoint}",
        "serviceName": service,
        "vpcId": str(args.get("vpcId") or "vpc-" + hex_id("vpc", endpoint)),
        "vpcEndpointType": str(args.get("vpcEndpointType") or "Gateway"),
        "state": "available",
        "routeTableIds": [],
        "subnetIds": [],
        "securityGroupIds": [],
        "networkInterfaceIds": [],
        "privateDnsEnabled": False,
        "requesterManaged": False,
        "ownerId": lookups.ACCOUNT_ID,
        "policy": "",
        "prefixListId": "",
        "cidrBlocks": [],
        "dnsEntries": [],
        "dnsOptions": [],
        "ipAddressType": "ipv4",
        "region": region,
        "serviceRegion": region,
        "tags": args.get("tags") or {},
        "filters": args.get("filters"),
    }


# kind -> (the data source that answers an id, how to derive its shape from an id)
_KINDS: dict[str, tuple[str, Any]] = {
    "vpcs": (
        "aws:ec2/getVpc:getVpc",
        lambda i, r: lookups.LOOKUPS["aws:ec2/getVpc:getVpc"]({"id": i}, r),
    ),
    "subnets": (
        "aws:ec2/getSubnet:getSubnet",
        lambda i, r: lookups.LOOKUPS["aws:ec2/getSubnet:getSubnet"]({"id": i}, r),
    ),
    "routeTables": ("aws:ec2/getRouteTable:getRouteTable", lambda i, r: _route_table_shape(
        {"routeTableId": i}, r)),
    "vpcEndpoints": ("aws:ec2/getVpcEndpoint:getVpcEndpoint", lambda i, r: _endpoint({"id": i}, r)),
}  # fmt: skip


CALLER = "callerIdentity"
"""The deploying account (getCallerIdentity): a mapping of its fields, not keyed by id. Left
out, the offline preview deploys as its own account (tools/lookups.py `ACCOUNT_ID`)."""
CALLER_TOKEN = "aws:index/getCallerIdentity:getCallerIdentity"
KINDS = (CALLER, *_KINDS)


def _caller_identity(
    where: str, item: Any, region: str, problems: list[str]
) -> dict[str, Any] | None:
    shape = lookups.LOOKUPS[CALLER_TOKEN]({}, region)
    if not isinstance(item, Mapping):
        problems.append(f"{where}: must be a mapping of {CALLER_TOKEN}'s fields")
        return None
    unknown = [f"{where}.{k}: not a field of {CALLER_TOKEN} (fields: {', '.join(sorted(shape))})"
               for k in item if k not in shape]  # fmt: skip
    problems += unknown
    if unknown:
        return None
    account = str(item.get("accountId") or shape["accountId"])
    return shape | {"id": account, "arn": f"arn:aws:iam::{account}:user/preview"} | dict(item)


def _normalized(kind: str, item: Mapping[str, Any]) -> dict[str, Any]:
    """A described resource with every nested field the data source returns."""
    out = dict(item)
    if kind == "routeTables":
        out["routes"] = [{f: "" for f in ROUTE_FIELDS} | dict(r) for r in item.get("routes") or ()]
        out["associations"] = [
            {"gatewayId": "", "main": False, "routeTableAssociationId": "", "subnetId": ""}
            | dict(a)
            for a in item.get("associations") or ()
        ]
    return out


def _check_keys(where: str, item: Any, shape: Mapping[str, Any], kind: str) -> list[str]:
    if not isinstance(item, Mapping):
        return [f"{where}: must be a mapping of the data source's fields"]
    problems = [
        f"{where}.{key}: not a field of {_KINDS[kind][0]} (fields: {', '.join(sorted(shape))})"
        for key in item
        if key not in shape
    ]
    if kind == "routeTables":
        for name, fields in (("routes", ROUTE_FIELDS), ("associations", ASSOCIATION_FIELDS)):
            for i, entry in enumerate(item.get(name) or ()):
                keys = entry if isinstance(entry, Mapping) else {"": None}
                problems += [
                    f"{where}.{name}[{i}].{k}: not a field (fields: {', '.join(fields)})"
                    for k in keys
                    if k not in fields
                ]
    return problems


def _default_vpc(described: dict[str, dict[str, dict[str, Any]]], raw: Mapping[str, Any]) -> None:
    """With one described VPC, what names no `vpcId` is in it (as a network team's one VPC)."""
    vpcs = list(described.get("vpcs", {}))
    if len(vpcs) != 1:
        return
    for kind in ("subnets", "routeTables", "vpcEndpoints"):
        for resource_id, item in described.get(kind, {}).items():
            if "vpcId" not in (raw.get(kind) or {}).get(resource_id, {}):
                item["vpcId"] = vpcs[0]


# The fields of each kind whose preview default can decide a refusal (docs/network.md), by
# kind; an endpoint's depend on its type.
_DECIDING: dict[str, tuple[str, ...]] = {
    "vpcs": ("cidrBlock",),
    "subnets": ("availabilityZone", "cidrBlock"),
    "routeTables": ("routes",),
    "vpcEndpoints": ("serviceName", "vpcEndpointType"),
}
_DECIDING_ENDPOINT = {"Gateway": ("routeTableIds",), "Interface": ("privateDnsEnabled",)}


def _left_out(kind: str, item: Mapping[str, Any]) -> list[str]:
    fields = list(_DECIDING.get(kind, ()))
    if kind == "vpcEndpoints":
        fields += _DECIDING_ENDPOINT.get(str(item.get("vpcEndpointType") or "Gateway"), ())
    return [f for f in fields if f not in item]


@dataclass
class World:
    """The described resources of one stack, by kind and id, merged over derived shapes."""

    region: str = "us-east-1"
    described: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    derived: list[str] = field(default_factory=list)
    """Ids asked for by a lookup that nothing described (answered with derived values)."""
    left_out: dict[str, list[str]] = field(default_factory=dict)
    """Id -> the fields its description leaves out whose default can decide a refusal."""

    @classmethod
    def parse(cls, value: Any, region: str, source: str) -> World:
        """The `preview:lookups` value of `source` (a stack file); DescriptionError names every
        problem."""
        if value is None:
            return cls(region)
        where = f"{source}: {SETTING}"
        if not isinstance(value, Mapping):
            raise DescriptionError(f"{where}: must be a mapping of {', '.join(KINDS)}")
        problems: list[str] = []
        described: dict[str, dict[str, dict[str, Any]]] = {}
        for kind, items in value.items():
            if kind == CALLER:
                caller = _caller_identity(f"{where}.{kind}", items, region, problems)
                if caller is not None:
                    described[CALLER] = {"": caller}
                continue
            if kind not in _KINDS:
                problems.append(f"{where}.{kind}: unknown kind (kinds: {', '.join(KINDS)})")
                continue
            if not isinstance(items, Mapping):
                problems.append(f"{where}.{kind}: must map ids to their fields")
                continue
            for resource_id, item in items.items():
                shape = _KINDS[kind][1](str(resource_id), region)
                found = _check_keys(f"{where}.{kind}.{resource_id}", item, shape, kind)
                problems += found
                if not found:
                    described.setdefault(kind, {})[str(resource_id)] = shape | _normalized(
                        kind, item
                    )
        if problems:
            raise DescriptionError("\n".join(problems))
        _default_vpc(described, value)
        left_out = {
            str(i): fields
            for kind, items in value.items()
            if kind in _KINDS
            for i, item in items.items()
            if (fields := _left_out(kind, item))
        }
        return cls(region, described, left_out=left_out)

    def get(self, kind: str, resource_id: str, derive: Any) -> dict[str, Any]:
        """The described resource, else `derive()` (the id is recorded as derived)."""
        found = self.described.get(kind, {}).get(resource_id)
        if found is not None:
            return dict(found)
        self.derived.append(resource_id)
        return derive()

    def of(self, kind: str) -> dict[str, dict[str, Any]]:
        return self.described.get(kind, {})

    # -- the data sources -------------------------------------------------------------------------
    def answer(self, token: str, args: Mapping[str, Any]) -> dict[str, Any] | None:
        """The answer of `token` for `args` from the descriptions; None: not a lookup the
        descriptions answer (the derived answers of tools/lookups.py apply)."""
        region = self.region
        if token == CALLER_TOKEN and CALLER in self.described:
            return dict(self.described[CALLER][""])
        if token == "aws:ec2/getVpc:getVpc" and args.get("id"):
            vpc = str(args["id"])
            return self.get("vpcs", vpc, lambda: lookups.LOOKUPS[token](args, region))
        if token == "aws:ec2/getSubnet:getSubnet" and args.get("id"):
            subnet = str(args["id"])
            return self.get("subnets", subnet, lambda: lookups.LOOKUPS[token](args, region))
        if token == "aws:ec2/getVpcEndpoint:getVpcEndpoint" and args.get("id"):
            endpoint = str(args["id"])
            return self.get("vpcEndpoints", endpoint, lambda: _endpoint(args, region))
        if token == "aws:ec2/getRouteTables:getRouteTables" and self.of("routeTables"):
            return self._route_tables(args)
        if token == "aws:ec2/getRouteTable:getRouteTable":
            return self._route_table(args)
        return None

    def _matching(self, args: Mapping[str, Any]) -> list[dict[str, Any]]:
        """Described route tables that pass the request's filters, as DescribeRouteTables
        filters them (`association.subnet-id`, `association.main`, `vpc-id`)."""
        filters = {
            str(f["name"]): [str(v) for v in f.get("values") or ()]
            for f in args.get("filters") or ()
            if isinstance(f, Mapping) and f.get("name")
        }
        vpc = args.get("vpcId") or (filters.get("vpc-id") or [None])[0]
        subnets = set(filters.get("association.subnet-id") or ())
        if args.get("subnetId"):
            subnets.add(str(args["subnetId"]))
        main = filters.get("association.main")
        out = []
        for table in self.of("routeTables").values():
            assocs = table.get("associations") or []
            if vpc and table.get("vpcId") not in (vpc, None, ""):
                continue
            if subnets and not any(a.get("subnetId") in subnets for a in assocs):
                continue
            if main and not any(bool(a.get("main")) == (main[0] == "true") for a in assocs):
                continue
            out.append(table)
        return out

    def _route_tables(self, args: Mapping[str, Any]) -> dict[str, Any]:
        found = self._matching(args)
        return {"ids": [t["id"] for t in found], "id": args.get("vpcId") or self.region}

    def _route_table(self, args: Mapping[str, Any]) -> dict[str, Any] | None:
        table_id = args.get("routeTableId")
        if table_id:
            return self.get(
                "routeTables", str(table_id), lambda: _route_table_shape(args, self.region)
            )
        if not self.of("routeTables"):
            return None
        found = self._matching(args)
        if len(found) != 1:
            # What the data source does (terraform-provider-aws vpc_route_table_data_source.go).
            raise DescriptionError(
                "lookup aws:ec2/getRouteTable:getRouteTable: "
                + ("query returned no results" if not found else "multiple Route Tables matched")
                + f" among the route tables {SETTING} describes (asked: {dict(args)})"
            )
        return dict(found[0])
