"""The resources the awsx provider registers for an `awsx:ec2:Vpc`, as pulumi-awsx does it.

`awsx:ec2:Vpc` is a remote component: the awsx provider process constructs it and registers its
children with the engine, which checks and analyses each one. The mock runtime runs no provider
process, so this module does what `awsx/ec2/vpc.ts` (pulumi/pulumi-awsx, read at commit
e60adf3c, 2026-08-20, the newest stored source; the pinned 3.11.0 was not available to read)
does for the layouts it covers:

- `subnetStrategy` Legacy (the default) with the default subnet specs (a private and a public
  subnet per zone, `subnetDistributorLegacy.ts` `generateDefaultSubnets`) or explicit
  `subnetSpecs` of types Private, Public and Isolated (`getSubnetSpecsLegacy`);
- every `natGateways.strategy` (None, Single, OnePerAz), with or without
  `elasticIpAllocationIds`;
- `vpcEndpointSpecs` under the Legacy endpoint strategy.

Per zone, in that order: the subnet (public first), its route table, the association, the EIP
and NAT gateway of a public subnet that gets one, the default route (internet gateway for
public subnets, NAT gateway for private ones); the internet gateway is always created. Parents
and names are awsx's (`<vpc>-private-1`; EIPs and NAT gateways `<vpc>-1`). A layout outside
this (`subnetStrategy` Auto or Exact, the Auto endpoint strategy) is reported by
`unsupported` and its children are not registered.

The children use the default aws provider of the `@pulumi/aws` version the awsx provider bundles
(`AWS_SDK_VERSION`: the pin in awsx/package.json at that commit).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

AWS_SDK_VERSION = "7.42.0"
VPC = "aws:ec2/vpc:Vpc"
SUBNET = "aws:ec2/subnet:Subnet"
ROUTE_TABLE = "aws:ec2/routeTable:RouteTable"
ASSOCIATION = "aws:ec2/routeTableAssociation:RouteTableAssociation"
ROUTE = "aws:ec2/route:Route"
INTERNET_GATEWAY = "aws:ec2/internetGateway:InternetGateway"
NAT_GATEWAY = "aws:ec2/natGateway:NatGateway"
EIP = "aws:ec2/eip:Eip"
ENDPOINT = "aws:ec2/vpcEndpoint:VpcEndpoint"
DEFAULT_CIDR = "10.0.0.0/16"
# The aws.ec2.Vpc inputs awsx passes through from its own arguments (`{...args, cidrBlock,
# tags}`; the Node SDK keeps only the Vpc's own input names).
_VPC_INPUTS = (
    "assignGeneratedIpv6CidrBlock",
    "enableDnsHostnames",
    "enableDnsSupport",
    "enableNetworkAddressUsageMetrics",
    "instanceTenancy",
    "ipv4IpamPoolId",
    "ipv4NetmaskLength",
    "ipv6CidrBlock",
    "ipv6CidrBlockNetworkBorderGroup",
    "ipv6IpamPoolId",
    "ipv6NetmaskLength",
    "region",
)


@dataclass(frozen=True)
class Ref:
    """An output `attr` (`id`, `allocationId`) of the child (`type`, `name`)."""

    name: str
    type: str
    attr: str = "id"
    dropped_when_known: bool = False
    """An apply over the output that yields no value once it runs (the subnet's
    `ipv6CidrBlock` when IPv6 is not assigned): unknown until then, absent after."""


@dataclass
class Child:
    """One resource awsx registers; `parent` names another child (None: the component)."""

    type: str
    name: str
    inputs: dict[str, Any]
    parent: tuple[str, str] | None = None
    """(type, name) of the parent child."""
    depends_on: tuple[tuple[str, str], ...] = ()
    outputs_from: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class SubnetSpec:
    type: str
    """Private, Public or Isolated."""
    zone: str
    cidr: str
    resource_name: str
    tags: Mapping[str, str] = field(default_factory=dict)


def unsupported(inputs: Mapping[str, Any]) -> str | None:
    """Why this module cannot lay out the VPC (None: it can)."""
    strategy = inputs.get("subnetStrategy") or "Legacy"
    if strategy != "Legacy":
        return f"subnetStrategy {strategy!r} (only Legacy is emulated)"
    if (inputs.get("vpcEndpointStrategy") or "Legacy") != "Legacy":
        return "vpcEndpointStrategy Auto (only Legacy is emulated)"
    if (inputs.get("subnetNameTagStrategy") or "Legacy") != "Legacy":
        return "subnetNameTagStrategy AvailabilityZone (only Legacy is emulated)"
    if inputs.get("assignGeneratedIpv6CidrBlock") or any(
        s.get("assignIpv6AddressOnCreation") for s in inputs.get("subnetSpecs") or ()
    ):
        return "IPv6 subnets (their CIDRs are derived from the VPC's, known after apply)"
    if not isinstance(inputs.get("cidrBlock", DEFAULT_CIDR), str):
        return "a cidrBlock that is not known at preview (awsx refuses it with Legacy)"
    for spec in inputs.get("subnetSpecs") or ():
        if spec.get("cidrBlocks") or spec.get("size"):
            return "explicit subnet CIDRs or sizes (the Auto layouts)"
    return None


def _cidr_subnet(base: str, new_bits: int, number: int) -> str:
    """`cidrSubnetV4`: the `number`th block of `new_bits` more bits, counted from `base`'s
    address (not its network, exactly as awsx adds to the address)."""
    net = ipaddress.ip_interface(base)
    prefix = net.network.prefixlen + new_bits
    if prefix > 32:
        raise ValueError(f"{base}: {new_bits} new bits leave no room")
    address = int(net.ip) + (2 ** (32 - prefix)) * number
    return f"{ipaddress.IPv4Address(address)}/{prefix}"


def _next_pow2(n: int) -> int:
    return 1 if n == 0 else 1 << (n - 1).bit_length()


def _overlaps(a: str, b: str) -> bool:
    return ipaddress.ip_network(a, strict=False).overlaps(ipaddress.ip_network(b, strict=False))


def _next_block(previous: str, mask: int) -> str:
    last = ipaddress.ip_network(previous, strict=False).broadcast_address
    block = ipaddress.ip_network(f"{last}/{mask}", strict=False)
    return f"{block.broadcast_address + 1}/{mask}"


def subnet_specs(name: str, cidr: str, zones: list[str], specs: list[Mapping[str, Any]] | None):
    """The Legacy layout (`getSubnetSpecsLegacy`): per zone, private, then public, then isolated
    subnets, each type's CIDR mask /19, /20, /24 unless the spec sets `cidrMask`."""
    bits = (_next_pow2(len(zones)) - 1).bit_length()
    bases = [_cidr_subnet(cidr, bits, i) for i in range(len(zones))]
    if not specs:
        private = [_cidr_subnet(base, 1, 0) for base in bases]
        public = [_cidr_subnet(_cidr_subnet(p, 0, 1), 1, 0) for p in private]
        return [
            SubnetSpec("Private", z, private[i], f"{name}-private-{i + 1}")
            for i, z in enumerate(zones)
        ] + [
            SubnetSpec("Public", z, public[i], f"{name}-public-{i + 1}")
            for i, z in enumerate(zones)
        ]
    out: list[SubnetSpec] = []
    base_mask = ipaddress.ip_interface(bases[0]).network.prefixlen
    step = 0 if len(specs) == 1 else 1
    defaults = {"private": 19, "public": 20, "isolated": 24}
    for i, zone in enumerate(zones):
        current = str(ipaddress.IPv4Address(int(ipaddress.ip_interface(bases[i]).ip) - 1)) + "/32"
        previous: str | None = None
        for kind in ("private", "public", "isolated"):
            of_kind = [s for s in specs if str(s.get("type", "")).lower() == kind]
            for j, spec in enumerate(of_kind):
                mask = spec.get("cidrMask") or max(base_mask + step, defaults[kind])
                base = bases[i] if previous is None else _cidr_subnet(previous, 0, 1)
                base_len = ipaddress.ip_interface(previous or bases[i]).network.prefixlen
                block = _cidr_subnet(base, int(mask) - base_len, j)
                if _overlaps(current, block):
                    block = _next_block(current, int(mask))
                label = spec.get("name") or kind
                out.append(
                    SubnetSpec(
                        kind.capitalize(),
                        zone,
                        block,
                        f"{name}-{label}-{i + 1}",
                        dict(spec.get("tags") or {}),
                    )
                )
                current = block
            if of_kind:
                previous = out[-1].cidr
    return out


_ORDER = {"Public": 0, "Private": 1, "Isolated": 2}


def children(name: str, inputs: Mapping[str, Any], zones: list[str]) -> list[Child]:
    """Every resource awsx registers for the Vpc `name` with `inputs` (camelCase), in order."""
    cidr = inputs.get("cidrBlock") or DEFAULT_CIDR
    user_tags = dict(inputs.get("tags") or {})
    shared = {"Name": name, **user_tags}
    vpc_key = (VPC, name)
    vpc_inputs = {k: inputs[k] for k in _VPC_INPUTS if k in inputs}
    out = [Child(VPC, name, {**vpc_inputs, "cidrBlock": cidr, "tags": shared})]
    igw = Child(
        INTERNET_GATEWAY, name, {"vpcId": Ref(name, VPC), "tags": shared}, vpc_key, (vpc_key,)
    )
    out.append(igw)
    nat = inputs.get("natGateways") or {}
    zone_args = ZoneArgs(
        vpc=name,
        strategy=str(nat.get("strategy") or "OnePerAz").lower(),
        allocations=list(nat.get("elasticIpAllocationIds") or []),
        shared=shared,
        user_tags=user_tags,
        region={"region": inputs["region"]} if "region" in inputs else {},
    )
    layout = subnet_specs(name, cidr, zones, inputs.get("subnetSpecs"))
    for i, zone in enumerate(zones):
        specs = sorted((s for s in layout if s.zone == zone), key=lambda s: _ORDER[s.type])
        for spec in specs:
            out += _zone_children(spec, i, zone_args)
    for spec in inputs.get("vpcEndpointSpecs") or ():
        endpoint = {k: v for k, v in spec.items() if k != "tags"}
        endpoint.update(vpcId=Ref(name, VPC), tags={**shared, **(spec.get("tags") or {})})
        out.append(Child(ENDPOINT, str(spec["serviceName"]), endpoint, vpc_key, (vpc_key,)))
    return out


@dataclass
class ZoneArgs:
    """What every zone's resources share."""

    vpc: str
    strategy: str
    """none, single or oneperaz."""
    allocations: list[str]
    shared: Mapping[str, str]
    """The VPC's tags: Name plus the user's."""
    user_tags: Mapping[str, str]
    region: Mapping[str, Any]
    gateways: list[str] = field(default_factory=list)
    """NAT gateways created so far, by name."""


def _zone_children(spec: SubnetSpec, index: int, z: ZoneArgs) -> list[Child]:
    vpc, strategy, gateways, shared, region = z.vpc, z.strategy, z.gateways, z.shared, z.region
    subnet_key = (SUBNET, spec.resource_name)
    table_key = (ROUTE_TABLE, spec.resource_name)
    typed = {"Name": spec.resource_name, "SubnetType": spec.type}
    out = [
        Child(
            SUBNET,
            spec.resource_name,
            {
                **region,
                "vpcId": Ref(vpc, VPC),
                "availabilityZone": spec.zone,
                "mapPublicIpOnLaunch": spec.type == "Public",
                "cidrBlock": spec.cidr,
                "assignIpv6AddressOnCreation": False,
                # An apply over the VPC's ipv6CidrBlock: it runs only once that is known.
                "ipv6CidrBlock": Ref(vpc, VPC, "ipv6CidrBlock", dropped_when_known=True),
                "tags": {**shared, **spec.tags, **typed},
            },
            (VPC, vpc),
            ((VPC, vpc),),
        ),
        Child(
            ROUTE_TABLE,
            spec.resource_name,
            {**region, "vpcId": Ref(vpc, VPC), "tags": {**shared, **typed}},
            subnet_key,
            (subnet_key,),
        ),
        Child(
            ASSOCIATION,
            spec.resource_name,
            {
                **region,
                "routeTableId": Ref(spec.resource_name, ROUTE_TABLE),
                "subnetId": Ref(spec.resource_name, SUBNET),
            },
            table_key,
            (table_key,),
        ),
    ]
    wants_nat = {"none": False, "single": len(gateways) < 1, "oneperaz": len(gateways) < index + 1}
    if spec.type == "Public" and wants_nat.get(strategy, False):
        out += _nat(index, subnet_key, z)
        gateways.append(f"{vpc}-{index + 1}")
    if spec.type == "Public":
        target: dict[str, Any] = {"gatewayId": Ref(vpc, INTERNET_GATEWAY)}
    elif spec.type == "Private" and strategy != "none":
        # awsx validates first that every zone has the public subnet its NAT gateway needs.
        gateway = gateways[0] if strategy == "single" else gateways[index]
        target = {"natGatewayId": Ref(gateway, NAT_GATEWAY)}
    else:
        return out
    route = {**region, "routeTableId": Ref(spec.resource_name, ROUTE_TABLE), **target}
    route["destinationCidrBlock"] = "0.0.0.0/0"
    out.append(Child(ROUTE, spec.resource_name, route, table_key, (table_key,)))
    return out


def _nat(index: int, subnet_key: tuple[str, str], z: ZoneArgs) -> list[Child]:
    label, region = f"{z.vpc}-{index + 1}", z.region
    tags = {**z.user_tags, "Name": label}
    out: list[Child] = []
    if z.allocations:
        allocation: Any = z.allocations[index]
    else:
        out.append(Child(EIP, label, {**region, "tags": tags}, subnet_key, (subnet_key,)))
        allocation = Ref(label, EIP, "allocationId")
    nat = {
        **region,
        "subnetId": Ref(subnet_key[1], SUBNET),
        "allocationId": allocation,
        "tags": tags,
    }
    out.append(Child(NAT_GATEWAY, label, nat, subnet_key, (subnet_key,)))
    return out


def component_outputs(name: str, outputs: Mapping[tuple[str, str], Mapping[str, Any]]) -> dict:
    """The Vpc component's outputs (`vpcId`, `publicSubnetIds`, `privateSubnetIds`,
    `isolatedSubnetIds`): its children's ids, as awsx registers them."""
    subnets: dict[str, list[Any]] = {"Public": [], "Private": [], "Isolated": []}
    for (type_, _child), values in outputs.items():
        if type_ == SUBNET:
            kind = str(dict(values.get("tags") or {}).get("SubnetType", ""))
            if kind in subnets:
                subnets[kind].append(values.get("id"))
    return {
        "vpcId": outputs[(VPC, name)].get("id"),
        "publicSubnetIds": subnets["Public"],
        "privateSubnetIds": subnets["Private"],
        "isolatedSubnetIds": subnets["Isolated"],
    }
