"""``fargate-image-pull-path``: a Fargate service's tasks can pull their image.

A Fargate task pulls its image through its own ENI: each of its subnets needs a ``0.0.0.0/0``
route to a NAT gateway (or to an internet gateway with ``assignPublicIp``), or its VPC needs
the ``ecr.api`` and ``ecr.dkr`` interface endpoints and the S3 gateway endpoint (where ECR keeps
image layers); otherwise every task stops with ``CannotPullContainerError``. A route table outside
the stack, or endpoints whose VPC or service is unknown, give "cannot verify". Subnets the stack
does not declare (an existing VPC's, named by id) show no routes: when the service's security
groups name the VPC (an interface's groups belong to its subnet's VPC), the path is verified by
the three endpoints the stack declares there, and "cannot verify" otherwise; without such a group
the subnets are another stack's network, not judged.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pulumi_policy import EnforcementLevel, StackValidationArgs
from pulumi_policy.proxy import UnknownValueError

from ..launches import ClusterDefaults, launches
from ..reachability import Model
from ..resources import (
    INTERNET_GATEWAY,
    ROUTE,
    ROUTE_TABLE,
    ROUTE_TABLE_ASSOCIATION,
    SECURITY_GROUP,
    SERVICE,
    SUBNET,
    VPC,
    VPC_ENDPOINT,
    UnknownCollector,
    as_bool,
    as_list,
    get,
    is_native,
    known,
    present,
)
from ..rules import EXEMPT_ONLY, Config, Report, judge_each, stack_rule

Resource = Any

#: Interface endpoints (ecr.api, ecr.dkr) and the gateway endpoint (s3, where ECR keeps image
#: layers) a Fargate task in a subnet without internet egress needs to pull from ECR.
ECR_ENDPOINT_SUFFIXES = ("ecr.api", "ecr.dkr", "s3")
#: Route targets that reach the internet only through something this rule cannot see (transit
#: gateway, appliance ENI, peering, VPN, Gateway Load Balancer endpoint, instance, local zone):
#: the path may exist, so the route is not held against the subnet.
_OTHER_EGRESS = (
    "transitGatewayId",
    "networkInterfaceId",
    "vpcPeeringConnectionId",
    "instanceId",
    "vpcEndpointId",
    "localGatewayId",
    "carrierGatewayId",
    "coreNetworkArn",
)
_IPV4_DEFAULT = "0.0.0.0/0"


@dataclass(frozen=True)
class Egress:
    """What a subnet's routes offer for pulling an image: NAT, an internet gateway, another
    egress the rule cannot follow, and routes it could not read (a table outside the stack)."""

    nat: bool = False
    igw: bool = False
    other: bool = False
    unknown: str | None = None

    def merge(self, other: Egress) -> Egress:
        return Egress(
            self.nat or other.nat,
            self.igw or other.igw,
            self.other or other.other,
            self.unknown or other.unknown,
        )


class PullNetwork:
    """Route tables, routes and VPC endpoints of a stack, indexed once per rule run."""

    def __init__(self, model: Model) -> None:
        self.model = model
        self._tables_of_subnet: dict[str, list[Resource] | None] = {}
        for assoc in model.of(ROUTE_TABLE_ASSOCIATION):
            subnets = model.refs(assoc, "subnetId", SUBNET, silent_external=True)
            tables = model.refs(
                assoc,
                "routeTableId",
                ROUTE_TABLE,
                what="which routes its subnet uses",
                silent_external=True,
            )
            for subnet in subnets:
                known = self._tables_of_subnet.setdefault(subnet.urn, [])
                if not tables or known is None:
                    self._tables_of_subnet[subnet.urn] = None  # a table outside the stack
                else:
                    known.extend(tables)
        self._routes: dict[str, list[Mapping[str, Any]]] = {}
        self._unknown_routes: set[str] = set()
        for table in model.of(ROUTE_TABLE):
            try:
                routes = as_list(get(table.props, "routes"))
            except UnknownValueError:
                self._unknown_routes.add(table.urn)
                continue
            self._routes[table.urn] = [r for r in routes if isinstance(r, Mapping)]
        self._route_resources: dict[str, list[Resource]] = {}
        for route in model.of(ROUTE):
            for table in model.refs(
                route, "routeTableId", ROUTE_TABLE, what="which route table it extends"
            ):
                self._route_resources.setdefault(table.urn, []).append(route)
        self.endpoints = model.of(VPC_ENDPOINT)
        self._by_vpc: dict[str | None, tuple[set[str], bool]] | None = None

    def egress(self, subnet: Resource) -> Egress:
        """The egress routes of ``subnet``'s route tables."""
        tables = self._tables_of_subnet.get(subnet.urn, [])
        if tables is None:
            return Egress(unknown="its route table association names a table outside the stack")
        if not tables:
            return Egress(
                unknown="no route table association in this stack (it uses the VPC's main "
                "route table)"
            )
        found = Egress()
        for table in tables:
            if table.urn in self._unknown_routes:
                found = found.merge(Egress(unknown=f"route table {table.name!r} routes unknown"))
            for props in self._routes.get(table.urn, []):
                found = found.merge(self._route(props, table, None))
            for route in self._route_resources.get(table.urn, []):
                found = found.merge(self._route(route.props, route, route))
        return found

    def _route(self, props: Mapping[str, Any], owner: Resource, route: Resource | None) -> Egress:
        """One route's egress; ``route`` is the Route resource, None for an inline route of
        the route table ``owner``."""
        cidr_key = "cidrBlock" if route is None else "destinationCidrBlock"
        try:
            destination = get(props, cidr_key)
        except UnknownValueError:
            destination = _IPV4_DEFAULT  # unknown destination: assume it may be the default
        if destination is None and present(props, "destinationPrefixListId"):
            destination = _IPV4_DEFAULT  # a prefix list may hold public ranges
        if destination != _IPV4_DEFAULT:
            return Egress()  # IPv6-only or a narrower range: not how ECR is reached
        if present(props, "natGatewayId"):
            return Egress(nat=True)
        if any(present(props, key) for key in _OTHER_EGRESS):
            return Egress(other=True)
        if not present(props, "gatewayId"):
            return Egress()
        gateway = known(props, "gatewayId")
        if gateway == "local":
            return Egress()
        if isinstance(gateway, str) and (
            gateway.startswith("igw-") or self.model.lookup(gateway, INTERNET_GATEWAY)
        ):
            return Egress(igw=True)
        if gateway is None:  # unknown at preview: the engine recorded what it depends on
            holder, key = (owner, "routes") if route is None else (route, "gatewayId")
            deps = (holder.property_dependencies or {}).get(key) or []
            if any(d.resource_type in INTERNET_GATEWAY for d in deps):
                return Egress(igw=True)
        return Egress(other=True)  # a gateway this rule cannot name (VPN, or unknown)

    def endpoints_in(self, subnet: Resource) -> tuple[set[str], bool]:
        """(endpoint services present in ``subnet``'s VPC, whether some endpoint's VPC or
        service could not be read)."""
        return self.endpoints_in_vpc(self._vpc_key(subnet, "vpcId"))

    def vpc_of(self, resource: Resource) -> str | None:
        """The VPC (a resource's URN or an id) ``resource``'s ``vpcId`` names, without a note
        when it cannot be read (a group's VPC only decides whether outside subnets are judged)."""
        deps = (getattr(resource, "property_dependencies", None) or {}).get("vpcId") or []
        vpcs = [d.urn for d in deps if d.resource_type in VPC]
        if vpcs:
            return vpcs[0]
        value = known(resource.props, "vpcId")
        if isinstance(value, str) and value:
            found = self.model.lookup(value, VPC)
            return found[0].urn if found else value
        return None

    def endpoints_in_vpc(self, vpc: str | None) -> tuple[set[str], bool]:
        """(endpoint services present in ``vpc``, whether some endpoint's VPC or service could
        not be read)."""
        if self._by_vpc is None:
            self._by_vpc = self._endpoint_table()
        if vpc is None:
            return set(), bool(self.endpoints)
        found, unreadable = self._by_vpc.get(vpc, (set(), False))
        return set(found), unreadable or self._by_vpc.get(None, (set(), False))[1]

    def _endpoint_table(self) -> dict[str | None, tuple[set[str], bool]]:
        """VPC key -> (ECR endpoint services in it, whether one's service cannot be read);
        under None, whether some endpoint's VPC cannot be read. Once per rule run: every
        subnet asks."""
        table: dict[str | None, tuple[set[str], bool]] = {}
        for endpoint in self.endpoints:
            key = self._vpc_key(endpoint, "vpcId")
            found, _ = table.setdefault(key, (set(), False))
            service = known(endpoint.props, "serviceName") if key is not None else None
            if not isinstance(service, str):
                table[key] = (found, True)
                continue
            found.update(s for s in ECR_ENDPOINT_SUFFIXES if service.endswith("." + s))
        return table

    def _vpc_key(self, resource: Resource, prop: str) -> str | None:
        vpcs = self.model.refs(resource, prop, VPC, silent_external=True)
        if vpcs:
            return vpcs[0].urn
        value = known(resource.props, prop)
        return value if isinstance(value, str) and value else None


@dataclass(frozen=True)
class _Awsvpc:
    """A service's awsvpc configuration, read lazily."""

    subnets: Callable[[], list[Any]]
    groups: Callable[[], list[Any]]
    public_ip: bool


def _awsvpc(service: Resource) -> _Awsvpc:
    """Subnets, security groups and public IP of a service's awsvpc configuration."""
    config = get(service.props, "networkConfiguration")
    if is_native(service.resource_type):
        config = get(config, "awsvpcConfiguration") if config is not None else None
    if config is None:
        return _Awsvpc(lambda: [], lambda: [], False)
    public = as_bool(get(config, "assignPublicIp", False)) or (
        str(get(config, "assignPublicIp", "")).upper() == "ENABLED"
    )
    return _Awsvpc(
        lambda: list(as_list(get(config, "subnets"))),
        lambda: list(as_list(get(config, "securityGroups"))),
        public,
    )


def _judge_outside_subnets(
    model: Model, net: PullNetwork, service: Resource, ids: list[str], unknowns: UnknownCollector
) -> None:
    """Subnets the stack does not declare: verified by the three endpoints in the service's VPC
    (the VPC its security groups name), else "cannot verify" (their routes are not visible).
    Without a group of the stack naming a VPC, another stack's network: not judged."""
    awsvpc = _awsvpc(service)
    groups = model.refs(
        service, "networkConfiguration", SECURITY_GROUP, values=awsvpc.groups, silent_external=True
    )
    vpcs = {v for g in groups if (v := net.vpc_of(g)) is not None}
    if not vpcs:
        return  # no group of the stack names the VPC: not a network this stack can judge
    present: set[str] = set()
    for vpc in vpcs:
        found, _ = net.endpoints_in_vpc(vpc)
        present |= found
    if len(present) == len(ECR_ENDPOINT_SUFFIXES):
        return
    missing = [s for s in ECR_ENDPOINT_SUFFIXES if s not in present]
    unknowns.note(
        f"cannot verify whether Fargate service {service.name!r} can pull its image: its "
        f"subnets ({', '.join(ids[:3])}) are not this stack's, so their routes are not visible, "
        f"and the stack declares no {', '.join(missing)} endpoint in its VPC.",
        service.urn,
    )


def _check_pull_path(
    args: StackValidationArgs, config: Config, report: Report, unknowns: UnknownCollector
) -> None:
    model = Model.of_stack(args.resources, unknowns)
    defaults = ClusterDefaults(model)
    network: list[PullNetwork] = []

    def judge(service: Resource) -> None:
        if not any(launch.on_fargate(defaults) for launch in launches(service)):
            return
        awsvpc = _awsvpc(service)
        public_ip = awsvpc.public_ip
        subnets = model.refs(
            service, "networkConfiguration", SUBNET, values=awsvpc.subnets, silent_external=True
        )
        if not network:
            network.append(PullNetwork(model))
        net = network[0]
        if not subnets:
            try:
                ids = [v for v in awsvpc.subnets() if isinstance(v, str) and v]
            except UnknownValueError:
                return  # refs() above noted what it could not read
            if ids:
                _judge_outside_subnets(model, net, service, ids, unknowns)
            return
        blocked: list[str] = []
        for subnet in subnets:
            egress = net.egress(subnet)
            if egress.nat or egress.other or (egress.igw and public_ip):
                continue
            endpoints, unreadable = net.endpoints_in(subnet)
            if len(endpoints) == len(ECR_ENDPOINT_SUFFIXES):
                continue
            if egress.unknown or unreadable:
                unknowns.note(
                    f"cannot verify whether Fargate service {service.name!r} can pull its "
                    f"image: subnet {subnet.name!r} has "
                    f"{egress.unknown or 'VPC endpoints whose VPC or service is unknown'}.",
                    service.urn,
                )
                continue
            missing = [s for s in ECR_ENDPOINT_SUFFIXES if s not in endpoints]
            why = (
                "an internet gateway route but no public IP"
                if egress.igw
                else "no NAT or internet gateway route"
            )
            blocked.append(f"{subnet.name!r} ({why}; no {', '.join(missing)} endpoint)")
        if blocked:
            report(
                f"Fargate service {service.name!r} cannot pull its image from subnet(s) "
                f"{', '.join(blocked)}: tasks stop with CannotPullContainerError.",
                service.urn,
            )

    judge_each(model.of(SERVICE), SERVICE, config, unknowns, judge)


fargate_image_pull_path = stack_rule(
    name="fargate-image-pull-path",
    description=(
        "A Fargate service's tasks pull their image through their own ENI: each of its "
        "subnets needs a 0.0.0.0/0 route to a NAT gateway (or to an internet gateway with "
        "assignPublicIp), or its VPC needs the ecr.api and ecr.dkr interface endpoints and the "
        "S3 gateway endpoint. Route tables the stack does not declare give a 'cannot verify' "
        "note; subnets it does not declare (an existing VPC's) are verified by the three "
        "endpoints declared in the VPC of the service's security groups, else noted. Fix: add a "
        "NAT gateway route or the three VPC endpoints."
    ),
    level=EnforcementLevel.ADVISORY,
    types=SERVICE,
    schema=EXEMPT_ONLY,
    check=_check_pull_path,
)
