"""Network spec: the VPC a stack runs in, as plain values, and the checks an existing one must pass.

A stack either creates its VPC (the default: an awsx VPC with NAT, see `components.network`) or
runs in one the network team owns (`network.existing`: a VPC id and private subnet ids). For an
existing VPC the program first reads what AWS says about it through the data sources
(`components.network.discover`: the VPC, each subnet, the route tables the subnets use, the
endpoints the config names) into `NetworkFacts`; `plan_existing_network` then refuses, with the
config path and the fix, what would give a stack that cannot serve:
- task subnets in fewer than two Availability Zones (an ALB needs two; so does any failover);
- a public subnet among the task subnets (a default route to an internet gateway, or
  MapPublicIpOnLaunch): tasks and instances stay private;
- a subnet without a NAT (or other egress) route whose tasks could not pull their images: ECR
  needs `ecr.api`, `ecr.dkr` and the S3 gateway endpoint (ECR keeps layers in S3) when no route
  leads out;
- load-balancer subnets without egress: the ALB's authenticate actions call the identity
  provider's public endpoints;
- named endpoints that are not what they claim (another service, another VPC, not available,
  private DNS off, an S3 gateway not on the subnets' route tables);
- images from outside ECR (GHCR, Docker Hub, ECR Public) pulled from subnets without a way out:
  endpoints reach AWS services only, so such an image needs a NAT (or other) route, or an ECR
  pull-through cache rule and the reference to its ECR copy.
It creates only the endpoints (and their security group) the VPC lacks, and only when the stack's
account owns the VPC: in a VPC shared through AWS RAM, "VPC owners are responsible for creating,
managing, and deleting" route tables, gateway endpoints and interface endpoints (VPC user guide,
"Responsibilities and permissions for owners and participants"), so a participant creates none
and each thing its subnets lack is one refusal saying what the network team must add. No Pulumi
import.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

from ecs_inference.config.issues import ConfigIssue, Issues
from ecs_inference.contracts.aws_limits import ALB_MIN_AVAILABILITY_ZONES

CONFIG_PATH = "platform.network"
EXISTING_PATH = f"{CONFIG_PATH}.existing"

GATEWAY_SERVICE = "s3"
"""The gateway endpoint: weights and the ECR image layers (ECR stores layers in S3)."""
PULL_PATH_SERVICES: tuple[str, ...] = ("ecr.api", "ecr.dkr", GATEWAY_SERVICE)
"""What a task in a subnet without a NAT route needs to pull an image from ECR (ECR's
"Amazon ECR interface VPC endpoints": both ECR endpoints and the S3 gateway endpoint)."""
INTERFACE_ENDPOINT_SERVICES: tuple[str, ...] = (
    "ecr.api",
    "ecr.dkr",
    "logs",
    "sts",
    "secretsmanager",
    "ssm",
    "ssmmessages",
)
"""Interface endpoints every stack gets (unless `vpcEndpoints: false`): ECR (api: auth and
manifests; dkr: layers), logs (awslogs driver), STS (task role credentials for the S3
streamer), Secrets Manager (container secrets), SSM and SSM messages (parameters, ECS Exec)."""
CONTAINER_INSTANCE_SERVICES: tuple[str, ...] = (
    "ecs",
    "ecs-agent",
    "ecs-telemetry",
    "autoscaling",
    "monitoring",
)
"""What container instances call besides the above, needed as endpoints only where no route
leads out: the ECS agent (`ecs`, `ecs-agent`, `ecs-telemetry`: the ECS guide's "Amazon ECS
interface VPC endpoints"), lifecycle-hook completion (`autoscaling`) and the CloudWatch agent's
host metrics (`monitoring`)."""
WORKER_SERVICES: tuple[str, ...] = ("sqs",)
"""Queue workers read and write SQS."""
BEDROCK_SERVICES: tuple[str, ...] = ("bedrock-runtime",)
"""The gateway's Bedrock models."""
ENDPOINT_SERVICES: tuple[str, ...] = tuple(
    dict.fromkeys(
        (
            GATEWAY_SERVICE,
            *INTERFACE_ENDPOINT_SERVICES,
            *CONTAINER_INSTANCE_SERVICES,
            *WORKER_SERVICES,
            *BEDROCK_SERVICES,
        )
    )
)
"""Every service the stack can use an endpoint of (the keys `existing.vpcEndpoints` takes)."""
SHARED_ENDPOINT = "shared"
"""`existing.vpcEndpoints.<service>: shared`: the service is reached through an endpoint outside
this VPC (a hub VPC's endpoint behind a shared private hosted zone). Nothing is created for it
and nothing can be checked."""

IPV4_DEFAULT = "0.0.0.0/0"

Egress = Literal["nat", "internet-gateway", "other", "none"]


def endpoint_service_name(region: str, service: str) -> str:
    """`com.amazonaws.<region>.<service>`, the service name of a VPC endpoint."""
    return f"com.amazonaws.{region}.{service}"


# ------------------------------------------------------------------------------------------------
# what AWS says about an existing network (the data sources' answers, as plain values)
# ------------------------------------------------------------------------------------------------


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

    def egress(self) -> tuple[Egress, str | None]:
        """The table's default route: what it leads to and its target id."""
        for route in self.routes:
            if route.egress != "none":
                return route.egress, route.target
        return "none", None


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


@dataclass(frozen=True)
class NetworkLookup:
    """What `components.network.discover` read about an existing VPC."""

    facts: NetworkFacts | None
    """None when the VPC itself could not be read."""
    unreadable: tuple[ConfigIssue, ...] = ()
    """Each lookup that failed, as an issue at the id's config path."""


class ExistingNetworkSettings(Protocol):
    """What `network.existing` says (`components.config.network.ExistingNetworkConfig`)."""

    @property
    def vpc_id(self) -> str: ...
    @property
    def private_subnet_ids(self) -> Sequence[str]: ...
    @property
    def load_balancer_subnet_ids(self) -> Sequence[str]: ...
    @property
    def public_subnet_ids(self) -> Sequence[str]: ...
    @property
    def vpc_endpoints(self) -> Mapping[str, str]: ...


@dataclass(frozen=True)
class NetworkNeeds:
    """What the rest of the stack asks of its network."""

    internet_facing: bool = False
    """The endpoint is internet-facing (its ALB goes in public subnets)."""
    container_instances: bool = False
    """Some pool runs EC2 container instances (the ECS agent and its calls)."""
    workers: bool = False
    bedrock: bool = False
    create_endpoints: bool = True
    """`network.vpcEndpoints`: create the endpoints the VPC lacks."""
    outside_ecr_images: Mapping[str, str] = field(default_factory=dict)
    """Config path -> image, for each image the stack pulls from a registry other than ECR
    (no VPC endpoint reaches it)."""

    def services(self, egress: bool) -> tuple[str, ...]:
        """Endpoint services the stack wants: the standard set, and where no route leads out
        also everything its tasks and instances call (each is an AWS API they could not reach)."""
        wanted = [GATEWAY_SERVICE, *INTERFACE_ENDPOINT_SERVICES]
        if not egress:
            wanted += CONTAINER_INSTANCE_SERVICES if self.container_instances else ()
            wanted += WORKER_SERVICES if self.workers else ()
            wanted += BEDROCK_SERVICES if self.bedrock else ()
        return tuple(wanted)


@dataclass(frozen=True)
class ExistingNetworkSpec:
    """What the Network component wires and creates in an existing VPC."""

    vpc_id: str
    cidr_block: str
    """The VPC's primary CIDR: what the endpoint and ALB security groups admit."""
    private_subnet_ids: tuple[str, ...]
    """Every task and instance subnet."""
    zone_subnet_ids: tuple[str, ...]
    """One task subnet per Availability Zone: interface endpoints and EFS mount targets (each
    takes at most one subnet per zone)."""
    load_balancer_subnet_ids: tuple[str, ...]
    """One subnet per zone for the internal ALB (or the public ones when internet-facing)."""
    public_subnet_ids: tuple[str, ...] = ()
    interface_services: tuple[str, ...] = ()
    """Interface endpoints to create (those the VPC lacks)."""
    gateway_route_table_ids: tuple[str, ...] = ()
    """Route tables of the S3 gateway endpoint to create; empty: none is created."""
    availability_zones: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class VpcSpec:
    """What `components.network.Network` builds: the VPC it creates, or the existing one it
    wires (`existing`)."""

    cidr_block: str = "10.40.0.0/16"
    """VPC CIDR; subnets are carved out of it per AZ."""
    az_count: int = 2
    """Number of AZs (ignored when `az_names` is given)."""
    az_names: tuple[str, ...] | None = None
    """Explicit AZ names; None: the region's first `az_count` zones."""
    nat_per_az: bool = False
    """One NAT gateway per AZ instead of a single one."""
    vpc_endpoints: bool = True
    """Create the S3 gateway and the interface endpoints."""
    interface_services: tuple[str, ...] = INTERFACE_ENDPOINT_SERVICES
    """Services that get an interface endpoint (private subnets reach them without NAT)."""
    existing: ExistingNetworkSpec | None = None
    """Run in this existing VPC (the fields above are then unused); None: create the VPC."""
    region: str | None = None
    """The region, for the endpoint service names in an existing VPC; None: the provider's."""


@dataclass(frozen=True)
class NetworkSpec:
    """The plan's network: what the rest of the stack wires to and what it costs."""

    cidr_block: str
    """The VPC's CIDR (created: `network.cidrBlock`; existing: the VPC's primary CIDR), which the
    ALB's and the gateway's rules admit."""
    availability_zones: int
    """Zones of the task subnets (EFS mount targets and interface endpoints take one each)."""
    nat_gateways: int
    """The stack's own NAT gateways (0 in an existing VPC: its NAT is the network team's)."""
    interface_endpoints: int
    """Interface endpoint services the stack creates."""
    existing: ExistingNetworkSpec | None = None
    """The existing VPC's wiring; None: the stack creates its VPC."""
    region: str | None = None
    """The stack's region (`aws:region`; None: left to the provider): the endpoints' service
    names in an existing VPC, the cost estimate's prices and the images' registry region."""
    vpc: VpcSpec = field(default_factory=VpcSpec)
    """What the Network component builds."""


# ------------------------------------------------------------------------------------------------
# the checks
# ------------------------------------------------------------------------------------------------


def one_per_zone(subnets: Iterable[SubnetFacts]) -> tuple[SubnetFacts, ...]:
    """The first subnet of each Availability Zone, in the given order."""
    seen: dict[str, SubnetFacts] = {}
    for subnet in subnets:
        seen.setdefault(subnet.availability_zone, subnet)
    return tuple(seen.values())


def _within(cidr: str, outer: str) -> bool:
    try:
        return ipaddress.ip_network(cidr).subnet_of(ipaddress.ip_network(outer))  # type: ignore[arg-type]
    except (ValueError, TypeError):
        return False


@dataclass
class _Check:
    """One run of the checks over an existing network."""

    config: ExistingNetworkSettings
    facts: NetworkFacts
    issues: Issues
    lines: list[str] = field(default_factory=list)

    def subnets(self, key: str, ids: Sequence[str]) -> list[SubnetFacts]:
        """The facts of `ids` (config key `key`); a subnet of another VPC or outside the VPC's
        primary CIDR is refused."""
        found: list[SubnetFacts] = []
        for i, subnet_id in enumerate(ids):
            subnet = self.facts.subnets.get(subnet_id)
            if subnet is None:
                continue  # unreadable: already reported by the lookup
            where = f"{EXISTING_PATH}.{key}[{i}]"
            if subnet.vpc_id != self.facts.vpc_id:
                self.issues.add(
                    where,
                    f"{subnet_id} is in {subnet.vpc_id}, not in vpcId {self.facts.vpc_id}: name "
                    "subnets of that VPC",
                )
                continue
            if not _within(subnet.cidr_block, self.facts.cidr_block):
                self.issues.add(
                    where,
                    f"{subnet_id} ({subnet.cidr_block}) is outside the VPC's primary CIDR "
                    f"{self.facts.cidr_block}: the stack's security groups admit that CIDR, so "
                    "name subnets carved from it",
                )
                continue
            found.append(subnet)
        return found

    def zones(self, key: str, subnets: Sequence[SubnetFacts], what: str) -> None:
        zones = sorted({s.availability_zone for s in subnets})
        if subnets and len(zones) < ALB_MIN_AVAILABILITY_ZONES:
            self.issues.add(
                f"{EXISTING_PATH}.{key}",
                f"every subnet is in {', '.join(zones)}: {what} need subnets in at least "
                f"{ALB_MIN_AVAILABILITY_ZONES} Availability Zones (an ALB refuses fewer, and one "
                "zone's outage would stop every service); add a subnet of another zone",
            )

    def egress(self, subnet: SubnetFacts) -> tuple[Egress, str | None, RouteTableFacts | None]:
        table = self.facts.table_of(subnet)
        if table is None:
            return "none", None, None
        kind, target = table.egress()
        return kind, target, table


def _check_private(
    check: _Check, key: str, ids: Sequence[str], subnets: Sequence[SubnetFacts]
) -> None:
    """Tasks and instances run in private subnets only (`ids`: the config list `key`)."""
    for subnet in subnets:
        kind, target, table = check.egress(subnet)
        why = []
        if kind == "internet-gateway" and table is not None:
            why.append(f"its route table {table.id} sends 0.0.0.0/0 to {target}")
        if subnet.map_public_ip_on_launch:
            why.append("it gives every interface a public IP (MapPublicIpOnLaunch)")
        if why:
            check.issues.add(
                f"{EXISTING_PATH}.{key}[{ids.index(subnet.id)}]",
                f"{subnet.id} is a public subnet ({'; '.join(why)}): tasks and container "
                "instances must run in private subnets, so name private ones here (public subnets "
                "belong in publicSubnetIds, for an internet-facing endpoint's ALB only)",
            )


def _existing_endpoints(
    check: _Check, region: str | None
) -> tuple[dict[str, EndpointFacts], set[str]]:
    """The named endpoints that are what they claim, by service; and the services named
    `shared`."""
    found: dict[str, EndpointFacts] = {}
    shared: set[str] = set()
    for service, endpoint_id in check.config.vpc_endpoints.items():
        where = f"{EXISTING_PATH}.vpcEndpoints.{service}"
        if endpoint_id == SHARED_ENDPOINT:
            shared.add(service)
            continue
        endpoint = check.facts.endpoints.get(endpoint_id)
        if endpoint is None:
            continue  # unreadable: already reported by the lookup
        # Without the region (left to the provider), the service's own suffix.
        expected = endpoint_service_name(region or "<region>", service)
        kind = "Gateway" if service == GATEWAY_SERVICE else "Interface"
        problems = []
        if not (
            endpoint.service_name == expected
            or (region is None and endpoint.service_name.endswith(f".{service}"))
        ):
            problems.append(f"it is an endpoint of {endpoint.service_name}, not {expected}")
        if endpoint.vpc_id != check.facts.vpc_id:
            problems.append(f"it is in {endpoint.vpc_id}, not in {check.facts.vpc_id}")
        if endpoint.state.lower() != "available":
            problems.append(f"its state is {endpoint.state}, not available")
        if endpoint.endpoint_type != kind and service != GATEWAY_SERVICE:
            problems.append(f"it is a {endpoint.endpoint_type} endpoint, not an {kind} one")
        if endpoint.endpoint_type == "Interface" and not endpoint.private_dns_enabled:
            problems.append(
                "its private DNS is off, so tasks resolve the service's public name and bypass "
                "it (turn private DNS on)"
            )
        if problems:
            check.issues.add(where, f"{endpoint_id}: {'; '.join(problems)}")
            continue
        found[service] = endpoint
    return found, shared


def _check_s3_gateway(
    check: _Check, endpoint: EndpointFacts | None, subnets: Sequence[SubnetFacts]
) -> None:
    """An existing S3 gateway endpoint serves a subnet only through the subnet's route table:
    one refusal for every table it lacks, with the one command that adds them."""
    if endpoint is None or endpoint.endpoint_type != "Gateway":
        return
    lacking: dict[str, list[str]] = {}
    for subnet in subnets:
        table = check.facts.table_of(subnet)
        if table is not None and table.id not in endpoint.route_table_ids:
            lacking.setdefault(table.id, []).append(subnet.id)
    if not lacking:
        return
    tables = ", ".join(f"{t} (of {', '.join(s)})" for t, s in lacking.items())
    who = _OWNER_RUNS.format(owner=check.facts.owner_id) if check.facts.participant else ""
    check.issues.add(
        f"{EXISTING_PATH}.vpcEndpoints.{GATEWAY_SERVICE}",
        f"{endpoint.id} is not on route table {tables}: those subnets' image layers and weights "
        f"would not use it; add the route tables to the endpoint{who} (aws ec2 "
        f"modify-vpc-endpoint --vpc-endpoint-id {endpoint.id} --add-route-table-ids "
        f"{' '.join(lacking)})",
    )


_OWNER_RUNS = " (the VPC's owner, account {owner}, must: a participant cannot)"

_PURPOSE: Mapping[str, str] = {
    GATEWAY_SERVICE: "weights and ECR's image layers (ECR keeps layers in S3)",
    "ecr.api": "ECR authentication and image manifests",
    "ecr.dkr": "ECR image layers",
    "logs": "the tasks' awslogs driver",
    "sts": "task role credentials",
    "secretsmanager": "the containers' secrets",
    "ssm": "parameters and ECS Exec",
    "ssmmessages": "ECS Exec sessions",
    "ecs": "the ECS agent's control calls",
    "ecs-agent": "the ECS agent's task state",
    "ecs-telemetry": "the ECS agent's metrics",
    "autoscaling": "lifecycle-hook completion at boot",
    "monitoring": "the CloudWatch agent's metrics",
    "sqs": "the queue workers",
    "bedrock-runtime": "the gateway's Bedrock models",
}
"""What each endpoint service carries for this stack (the refusals say why it is needed)."""


def _owner_must_add(check: _Check, blocked: Sequence[SubnetFacts], missing: Sequence[str]) -> None:
    """A participant's subnets without a way out: one refusal per endpoint the VPC's owner must
    add (a participant can neither create it nor add a NAT route)."""
    facts = check.facts
    names = ", ".join(s.id for s in blocked)
    tables = sorted({t.id for s in blocked if (t := facts.table_of(s)) is not None})
    zones = ", ".join(sorted({s.availability_zone for s in blocked}))
    for service in missing:
        what = (
            f"an S3 gateway endpoint on route table(s) {', '.join(tables) or 'of ' + names}"
            if service == GATEWAY_SERVICE
            else f"an interface endpoint for {service} with private DNS, in {zones}"
        )
        check.issues.add(
            f"{EXISTING_PATH}.vpcEndpoints.{service}",
            f"{facts.vpc_id} belongs to account {facts.owner_id} and this stack deploys as "
            f"{facts.caller_account} (an AWS RAM participant, which cannot create endpoints or "
            f"change route tables); {names} have no NAT (or other) route out, so {service} "
            f"({_PURPOSE.get(service, service)}) is unreachable. Ask the network team to add "
            f"{what} (or a NAT route for these subnets), then name it here",
        )


def _outside_ecr_refusal(
    check: _Check, blocked: Sequence[SubnetFacts], needs: NetworkNeeds
) -> None:
    """Images from outside ECR in subnets without a way out: no VPC endpoint reaches them."""
    if not needs.outside_ecr_images:
        return
    names = ", ".join(s.id for s in blocked)
    route = "ask the network team for a NAT route" if check.facts.participant else "add a NAT route"
    for path, image in needs.outside_ecr_images.items():
        check.issues.add(
            path,
            f"{image} comes from a registry outside ECR, and {names} have no NAT (or other) "
            "route out: VPC endpoints reach AWS services only, so every task would stop with "
            f"CannotPullContainerError. {route.capitalize()} for these subnets, or create an ECR "
            "pull-through cache rule for its registry and reference the image through it "
            "(<account>.dkr.ecr.<region>.amazonaws.com/<prefix>/...)",
        )


def _check_load_balancer(
    check: _Check, private: Sequence[SubnetFacts], internet_facing: bool
) -> tuple[SubnetFacts, ...]:
    """The ALB's subnets (one per zone): public ones with an internet gateway route when the
    endpoint is internet-facing, else private ones with a way out to the identity provider."""
    cfg = check.config
    if internet_facing:
        if not cfg.public_subnet_ids:
            check.issues.add(
                f"{EXISTING_PATH}.publicSubnetIds",
                "an internet-facing endpoint needs public subnets for its ALB (a 0.0.0.0/0 route "
                "to an internet gateway) in at least two zones; list them here, or make the "
                "endpoint internal (endpoint.internetFacing: false)",
            )
            return ()
        public = check.subnets("publicSubnetIds", cfg.public_subnet_ids)
        check.zones("publicSubnetIds", public, "an internet-facing ALB's subnets")
        for subnet in public:
            kind, _, table = check.egress(subnet)
            if kind != "internet-gateway":
                check.issues.add(
                    f"{EXISTING_PATH}.publicSubnetIds[{cfg.public_subnet_ids.index(subnet.id)}]",
                    f"{subnet.id} has no 0.0.0.0/0 route to an internet gateway (route table "
                    f"{table.id if table else 'unknown'}): an internet-facing ALB there is "
                    "unreachable; name public subnets",
                )
        return one_per_zone(public)
    if cfg.public_subnet_ids:
        check.issues.add(
            f"{EXISTING_PATH}.publicSubnetIds",
            "is used only by an internet-facing endpoint (endpoint.internetFacing: true); "
            "remove it, the internal ALB goes in private subnets",
        )
    key = "loadBalancerSubnetIds" if cfg.load_balancer_subnet_ids else "privateSubnetIds"
    subnets = list(private)
    if cfg.load_balancer_subnet_ids:
        subnets = check.subnets(key, cfg.load_balancer_subnet_ids)
        check.zones(key, subnets, "the internal ALB's subnets")
    ids = cfg.load_balancer_subnet_ids or cfg.private_subnet_ids
    if cfg.load_balancer_subnet_ids:
        _check_private(check, key, ids, subnets)
    for subnet in subnets:
        kind, _, table = check.egress(subnet)
        if kind == "none":
            check.issues.add(
                f"{EXISTING_PATH}.{key}[{ids.index(subnet.id)}]",
                f"{subnet.id} has no NAT (or other) route out (route table "
                f"{table.id if table else 'unknown'}): the internal ALB's authenticate-cognito "
                "and jwt-validation actions call the identity provider's public endpoints from "
                "its subnets; add a 0.0.0.0/0 route to a NAT gateway or transit gateway, or "
                "put the ALB in subnets that have one (existing.loadBalancerSubnetIds)",
            )
    return one_per_zone(subnets)


def _pull_path_refusal(
    check: _Check, blocked: Sequence[SubnetFacts], missing: Sequence[str]
) -> None:
    """Subnets without a way out whose tasks could not pull their images, nor reach the rest."""
    pull = [s for s in PULL_PATH_SERVICES if s in missing]
    tables = sorted({t.id for s in blocked if (t := check.facts.table_of(s)) is not None})
    names = ", ".join(s.id for s in blocked)
    others = [s for s in missing if s not in pull]
    also = f"; they would also miss {', '.join(others)}" if others else ""
    if pull:
        why = (
            f"and the VPC has no {', '.join(pull)} endpoint: tasks and instances there could "
            "not pull their images from ECR (CannotPullContainerError; ECR keeps image layers "
            "in S3)"
        )
    else:
        why = "and the VPC lacks endpoints that its tasks and instances call"
    check.issues.add(
        f"{EXISTING_PATH}.privateSubnetIds",
        f"{names} {'has' if len(blocked) == 1 else 'have'} no NAT (or other) route out "
        f"(route table {', '.join(tables) or 'unknown'}) {why}{also}. Set "
        f"{CONFIG_PATH}.vpcEndpoints: true to create the missing endpoints, add a NAT route, "
        "or name the endpoints the VPC has in existing.vpcEndpoints",
    )


def plan_existing_network(
    config: ExistingNetworkSettings,
    facts: NetworkFacts,
    needs: NetworkNeeds,
    region: str | None,
    issues: Issues,
) -> tuple[ExistingNetworkSpec, list[str]]:
    """The checks above, every problem added to `issues` (config paths under
    `platform.network.existing`), and what to wire and create, with the decisions."""
    check = _Check(config, facts, issues)
    private = check.subnets("privateSubnetIds", config.private_subnet_ids)
    check.zones("privateSubnetIds", private, "tasks, container instances and the ALB")
    _check_private(check, "privateSubnetIds", config.private_subnet_ids, private)
    load_balancer = _check_load_balancer(check, private, needs.internet_facing)
    found, shared = _existing_endpoints(check, region)
    _check_s3_gateway(check, found.get(GATEWAY_SERVICE), private)

    egress = {s.id: check.egress(s) for s in private}
    blocked = [s for s in private if egress[s.id][0] not in ("nat", "other")]
    wanted = needs.services(egress=not blocked)
    missing = [s for s in wanted if s not in found and s not in shared]
    create = missing if needs.create_endpoints and not facts.participant else []
    if blocked and missing and facts.participant:
        _owner_must_add(check, blocked, missing)
    elif blocked and missing and not needs.create_endpoints:
        _pull_path_refusal(check, blocked, missing)
    if blocked:
        _outside_ecr_refusal(check, blocked, needs)
    interface = tuple(s for s in create if s != GATEWAY_SERVICE)
    if interface and not (facts.dns_support and facts.dns_hostnames):
        issues.add(
            f"{EXISTING_PATH}.vpcId",
            f"{facts.vpc_id} has DNS support or DNS host names off: the interface endpoints this "
            f"stack creates ({', '.join(interface)}) answer the services' names only with both "
            "on; turn them on (aws ec2 modify-vpc-attribute), or set "
            f"{CONFIG_PATH}.vpcEndpoints: false and name the endpoints the VPC reaches",
        )
    gateway_tables: tuple[str, ...] = ()
    if GATEWAY_SERVICE in create:
        gateway_tables = tuple(
            dict.fromkeys(t.id for s in private if (t := check.facts.table_of(s)) is not None)
        )
    zoned = one_per_zone(private)
    spec = ExistingNetworkSpec(
        vpc_id=facts.vpc_id,
        cidr_block=facts.cidr_block,
        private_subnet_ids=tuple(s.id for s in private),
        zone_subnet_ids=tuple(s.id for s in zoned),
        load_balancer_subnet_ids=tuple(s.id for s in load_balancer),
        public_subnet_ids=tuple(s.id for s in load_balancer) if needs.internet_facing else (),
        interface_services=interface,
        gateway_route_table_ids=gateway_tables,
        availability_zones=tuple(s.availability_zone for s in zoned),
    )
    lines = _decisions(spec, facts, egress, found, shared, missing if create else [])
    if facts.participant:
        lines.append(
            f"VPC owned by account {facts.owner_id}, shared with this stack's account "
            f"{facts.caller_account} (AWS RAM): no endpoint is created and no route table "
            "changed"
            + (
                f"; without its own endpoints for {', '.join(missing)}, that traffic "
                "goes through the VPC's NAT"
                if missing and not blocked
                else ""
            )
        )
    return spec, lines


def _decisions(
    spec: ExistingNetworkSpec,
    facts: NetworkFacts,
    egress: Mapping[str, tuple[Egress, str | None, RouteTableFacts | None]],
    found: Mapping[str, EndpointFacts],
    shared: Iterable[str],
    created: Sequence[str],
) -> list[str]:
    ways: dict[str, list[str]] = {}
    for subnet_id, (kind, target, _) in egress.items():
        label = {"nat": "NAT", "other": "other route", "none": "no route out"}.get(kind, kind)
        ways.setdefault(f"{label} {target}" if target else label, []).append(subnet_id)
    lines = [
        f"existing VPC {spec.vpc_id} ({facts.cidr_block}): {len(spec.private_subnet_ids)} "
        f"private subnet(s) in {len(spec.availability_zones)} zones "
        f"({', '.join(spec.availability_zones)}); nothing of the VPC itself is created or changed",
        "egress: " + "; ".join(f"{way} ({', '.join(ids)})" for way, ids in sorted(ways.items())),
        f"load balancer subnets (one per zone): {', '.join(spec.load_balancer_subnet_ids)}",
    ]
    used = [f"{s} {e.id}" for s, e in sorted(found.items())] + [f"{s} shared" for s in shared]
    if used:
        lines.append("endpoints the VPC has: " + ", ".join(used))
    if created:
        where = f"one interface per zone in {', '.join(spec.zone_subnet_ids)}"
        lines.append(f"endpoints created: {', '.join(created)} ({where})")
    return lines
