"""The network's decisions, pure: what it wires and creates, what it costs, and the checks an
existing VPC must pass.

An existing VPC's facts (`ecs_inference.network.facts`) are checked against what the stack needs
of them; each refusal names its config path and the fix (the table in docs/network.md). Only the
endpoints the VPC lacks are created, and none in a VPC shared through AWS RAM: its owner is
"responsible for creating, managing, and deleting" route tables and endpoints (VPC user guide,
"Responsibilities and permissions for owners and participants"), so each thing a participant's
subnets lack is one refusal saying what the network team must add.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from ecs_inference.config.issues import Issues
from ecs_inference.contracts.aws_limits import ALB_MIN_AVAILABILITY_ZONES
from ecs_inference.network.facts import EndpointFacts, NetworkFacts, NetworkLookup, SubnetFacts
from ecs_inference.network.input import (
    CONFIG_PATH,
    CONTAINER_INSTANCE_SERVICES,
    ENDPOINT_GROUPS,
    EXISTING_PATH,
    GATEWAY_SERVICE,
    INTERFACE_ENDPOINT_SERVICES,
    PULL_PATH_SERVICES,
    PURPOSES,
    SHARED_ENDPOINT,
    ExistingNetworkConfig,
    NetworkConfig,
)


def endpoint_service_name(region: str, service: str) -> str:
    """`com.amazonaws.<region>.<service>`, the service name of a VPC endpoint."""
    return f"com.amazonaws.{region}.{service}"


@dataclass(frozen=True)
class NetworkNeeds:
    """What the rest of the stack asks of its network (default: nothing beyond the standard
    endpoints)."""

    internet_facing: bool = False
    """The endpoint is internet-facing (its ALB goes in public subnets)."""
    container_instances: bool = False
    """Some pool runs EC2 container instances (the ECS agent and its calls)."""
    workers: bool = False
    """Queue workers read and write SQS."""
    bedrock: bool = False
    """The gateway serves Bedrock models."""
    outside_ecr_images: Mapping[str, str] = field(default_factory=dict)
    """Config path -> image, for each image the stack pulls from a registry other than ECR
    (no VPC endpoint reaches it)."""

    def services(self, egress: bool) -> tuple[str, ...]:
        """Endpoint services the stack wants: the standard set, and where no route leads out
        also everything its tasks and instances call (each is an AWS API they could not reach)."""
        wanted = [GATEWAY_SERVICE, *INTERFACE_ENDPOINT_SERVICES]
        if not egress:
            wanted += CONTAINER_INSTANCE_SERVICES if self.container_instances else ()
            wanted += ENDPOINT_GROUPS["workers"] if self.workers else ()
            wanted += ENDPOINT_GROUPS["bedrock"] if self.bedrock else ()
        return tuple(wanted)


@dataclass(frozen=True, kw_only=True)
class NetworkWiring:
    """What a `Network` takes besides its input: the region, what the rest of the stack asks of
    it, and what the data sources read about an existing VPC."""

    region: str | None = None
    """The stack's region (`aws:region`; default None: left to the provider): the endpoints'
    service names in an existing VPC, the cost estimate's prices and the images' registry
    region."""
    needs: NetworkNeeds = field(default_factory=NetworkNeeds)
    """What the stack's other components ask of the network; default: nothing beyond the
    standard endpoints."""
    lookup: NetworkLookup | None = None
    """An existing VPC read before the plan; default None: `Network` reads it itself."""


@dataclass(frozen=True)
class ExistingNetwork:
    """What the Network wires and creates in an existing VPC besides the input's subnets."""

    zone_subnet_ids: tuple[str, ...]
    """One task subnet per Availability Zone: interface endpoints and EFS mount targets (each
    takes at most one subnet per zone)."""
    load_balancer_subnet_ids: tuple[str, ...]
    """One subnet per zone for the internal ALB (or the public ones when internet-facing)."""
    interface_services: tuple[str, ...] = ()
    """Interface endpoints to create (those the VPC lacks)."""
    gateway_route_table_ids: tuple[str, ...] = ()
    """Route tables of the S3 gateway endpoint to create; empty: none is created."""
    availability_zones: tuple[str, ...] = ()


@dataclass(frozen=True)
class NetworkInput:
    """What the network costs (`components.cost`)."""

    nat_gateways: int
    """The stack's own NAT gateways (none in an existing VPC: its NAT is the network team's)."""
    availability_zones: int
    """Zones of the task subnets (EFS mount targets and interface endpoints take one each)."""
    interface_endpoints: int
    """Interface endpoint services created (0 when VPC endpoints are off); each has one ENI per
    AZ."""


@dataclass(frozen=True)
class NetworkDecisions:
    """What the network decided: what the rest of the stack wires to and what it costs."""

    wiring: NetworkWiring
    """What it was decided from besides its input."""
    cidr_block: str
    """The VPC's CIDR (created: `network.cidrBlock`; existing: the VPC's primary CIDR), which the
    ALB's and the gateway's rules admit."""
    cost: NetworkInput
    """What it costs."""
    existing: ExistingNetwork | None = None
    """The existing VPC's wiring; None: the stack creates its VPC."""
    lines: tuple[str, ...] = ()
    """The decision lines (an existing VPC's: a created one's settings are the input's)."""


def decide(network: NetworkConfig, wiring: NetworkWiring, issues: Issues) -> NetworkDecisions:
    """The network's decisions, every problem added to `issues` at its config path."""
    if network.existing is None:
        zones = network.az_count
        nat = 1 if network.nat_gateways == "single" else zones
        endpoints = len(INTERFACE_ENDPOINT_SERVICES) if network.vpc_endpoints else 0
        return NetworkDecisions(wiring, network.cidr_block, NetworkInput(nat, zones, endpoints))
    lookup = wiring.lookup
    if lookup is None:
        issues.add(
            EXISTING_PATH,
            "the program did not read the existing VPC (ecs_inference.network.discover)",
        )
    else:
        issues.extend(lookup.unreadable)
    if lookup is None or lookup.facts is None:
        # The other sections still plan (against a stand-in CIDR) to report their problems.
        return NetworkDecisions(wiring, network.cidr_block, NetworkInput(0, 0, 0))
    existing, lines = _existing(network, lookup.facts, wiring, issues)
    zones, created = len(existing.availability_zones), len(existing.interface_services)
    return NetworkDecisions(
        wiring, lookup.facts.cidr_block, NetworkInput(0, zones, created), existing, tuple(lines)
    )


# ------------------------------------------------------------------------------------------------
# the checks of an existing VPC
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


def _names(subnets: Iterable[SubnetFacts]) -> str:
    return ", ".join(s.id for s in subnets)


@dataclass
class _Check:
    """One run of the checks over an existing network."""

    config: ExistingNetworkConfig
    facts: NetworkFacts
    issues: Issues

    def subnets(self, key: str, ids: Sequence[str]) -> list[SubnetFacts]:
        """The facts of `ids` (config key `key`); a subnet of another VPC or outside the VPC's
        primary CIDR is refused."""
        found: list[SubnetFacts] = []
        for i, subnet_id in enumerate(ids):
            subnet = self.facts.subnets.get(subnet_id)
            if subnet is None:
                continue  # unreadable: already reported by the lookup
            if subnet.vpc_id != self.facts.vpc_id:
                problem = (
                    f"{subnet_id} is in {subnet.vpc_id}, not in vpcId {self.facts.vpc_id}: name "
                    "subnets of that VPC"
                )
            elif not _within(subnet.cidr_block, self.facts.cidr_block):
                problem = (
                    f"{subnet_id} ({subnet.cidr_block}) is outside the VPC's primary CIDR "
                    f"{self.facts.cidr_block}: the stack's security groups admit that CIDR, so "
                    "name subnets carved from it"
                )
            else:
                found.append(subnet)
                continue
            self.issues.add(f"{EXISTING_PATH}.{key}[{i}]", problem)
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

    def tables(self, subnets: Iterable[SubnetFacts]) -> list[str]:
        """The ids of the route tables `subnets` use, sorted."""
        return sorted({t.id for s in subnets if (t := self.facts.table_of(s)) is not None})

    def refuse(self, key: str, ids: Sequence[str], subnet: SubnetFacts, message: str) -> None:
        """A refusal of `subnet`, at its place in the config list `key` (`ids`)."""
        self.issues.add(f"{EXISTING_PATH}.{key}[{ids.index(subnet.id)}]", message)


def _check_private(
    check: _Check, key: str, ids: Sequence[str], subnets: Sequence[SubnetFacts]
) -> None:
    """Tasks and instances run in private subnets only (`ids`: the config list `key`)."""
    for subnet in subnets:
        kind, target, table = check.facts.egress(subnet)
        why = []
        if kind == "internet-gateway" and table is not None:
            why.append(f"its route table {table.id} sends 0.0.0.0/0 to {target}")
        if subnet.map_public_ip_on_launch:
            why.append("it gives every interface a public IP (MapPublicIpOnLaunch)")
        if why:
            check.refuse(
                key,
                ids,
                subnet,
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


def _owner_must_add(check: _Check, blocked: Sequence[SubnetFacts], missing: Sequence[str]) -> None:
    """A participant's subnets without a way out: one refusal per endpoint the VPC's owner must
    add (a participant can neither create it nor add a NAT route)."""
    facts = check.facts
    names = _names(blocked)
    tables = check.tables(blocked)
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
            f"({PURPOSES.get(service, service)}) is unreachable. Ask the network team to add "
            f"{what} (or a NAT route for these subnets), then name it here",
        )


def _outside_ecr_refusal(
    check: _Check, blocked: Sequence[SubnetFacts], needs: NetworkNeeds
) -> None:
    """Images from outside ECR in subnets without a way out: no VPC endpoint reaches them."""
    route = "ask the network team for a NAT route" if check.facts.participant else "add a NAT route"
    for path, image in needs.outside_ecr_images.items():
        check.issues.add(
            path,
            f"{image} comes from a registry outside ECR, and {_names(blocked)} have no NAT (or "
            "other) route out: VPC endpoints reach AWS services only, so every task would stop "
            f"with CannotPullContainerError. {route.capitalize()} for these subnets, or create "
            "an ECR pull-through cache rule for its registry and reference the image through it "
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
            kind, _, table = check.facts.egress(subnet)
            if kind != "internet-gateway":
                check.refuse(
                    "publicSubnetIds",
                    cfg.public_subnet_ids,
                    subnet,
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
    ids = cfg.load_balancer_subnet_ids or cfg.private_subnet_ids
    subnets = list(private)
    if cfg.load_balancer_subnet_ids:
        subnets = check.subnets(key, ids)
        check.zones(key, subnets, "the internal ALB's subnets")
        _check_private(check, key, ids, subnets)
    for subnet in subnets:
        kind, _, table = check.facts.egress(subnet)
        if kind == "none":
            check.refuse(
                key,
                ids,
                subnet,
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
        f"{_names(blocked)} {'has' if len(blocked) == 1 else 'have'} no NAT (or other) route out "
        f"(route table {', '.join(check.tables(blocked)) or 'unknown'}) {why}{also}. Set "
        f"{CONFIG_PATH}.vpcEndpoints: true to create the missing endpoints, add a NAT route, "
        "or name the endpoints the VPC has in existing.vpcEndpoints",
    )


def _existing(
    network: NetworkConfig, facts: NetworkFacts, wiring: NetworkWiring, issues: Issues
) -> tuple[ExistingNetwork, list[str]]:
    """The checks above, every problem added to `issues` (config paths under
    `platform.network.existing`), and what to wire and create, with the decisions."""
    config, needs = network.existing, wiring.needs
    assert config is not None
    check = _Check(config, facts, issues)
    private = check.subnets("privateSubnetIds", config.private_subnet_ids)
    check.zones("privateSubnetIds", private, "tasks, container instances and the ALB")
    _check_private(check, "privateSubnetIds", config.private_subnet_ids, private)
    load_balancer = _check_load_balancer(check, private, needs.internet_facing)
    found, shared = _existing_endpoints(check, wiring.region)
    _check_s3_gateway(check, found.get(GATEWAY_SERVICE), private)

    egress = {s.id: check.facts.egress(s) for s in private}
    blocked = [s for s in private if egress[s.id][0] not in ("nat", "other")]
    wanted = needs.services(egress=not blocked)
    missing = [s for s in wanted if s not in found and s not in shared]
    create = missing if network.vpc_endpoints and not facts.participant else []
    if blocked and missing and facts.participant:
        _owner_must_add(check, blocked, missing)
    elif blocked and missing and not network.vpc_endpoints:
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
            dict.fromkeys(t.id for s in private if (t := facts.table_of(s)) is not None)
        )
    zoned = one_per_zone(private)
    existing = ExistingNetwork(
        zone_subnet_ids=tuple(s.id for s in zoned),
        load_balancer_subnet_ids=tuple(s.id for s in load_balancer),
        interface_services=interface,
        gateway_route_table_ids=gateway_tables,
        availability_zones=tuple(s.availability_zone for s in zoned),
    )
    ways: dict[str, list[str]] = {}
    for subnet_id, (kind, target, _) in egress.items():
        label = {"nat": "NAT", "other": "other route", "none": "no route out"}.get(kind, kind)
        ways.setdefault(f"{label} {target}" if target else label, []).append(subnet_id)
    lines = [
        f"existing VPC {facts.vpc_id} ({facts.cidr_block}): {len(private)} "
        f"private subnet(s) in {len(zoned)} zones "
        f"({', '.join(existing.availability_zones)}); nothing of the VPC itself is created or "
        "changed",
        "egress: " + "; ".join(f"{way} ({', '.join(ids)})" for way, ids in sorted(ways.items())),
        f"load balancer subnets (one per zone): {', '.join(existing.load_balancer_subnet_ids)}",
    ]
    used = [f"{s} {e.id}" for s, e in sorted(found.items())] + [f"{s} shared" for s in shared]
    if used:
        lines.append("endpoints the VPC has: " + ", ".join(used))
    if create:
        where = f"one interface per zone in {', '.join(existing.zone_subnet_ids)}"
        lines.append(f"endpoints created: {', '.join(create)} ({where})")
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
    return existing, lines
