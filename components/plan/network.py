"""The network's plan: the VPC the stack creates (from `network`), or the existing one it runs in
(`network.existing`, checked against what the data sources said about it before the plan)."""

from __future__ import annotations

from ecs_inference.config.issues import Issues
from ecs_inference.config.stack import StackConfig
from ecs_inference.plan.image_regions import ECR_REFERENCE, image_references
from ecs_inference.specs.network import (
    INTERFACE_ENDPOINT_SERVICES,
    NetworkLookup,
    NetworkNeeds,
    NetworkSpec,
    VpcSpec,
    plan_existing_network,
)


def network_needs(cfg: StackConfig) -> NetworkNeeds:
    """What the stack's other sections ask of the network."""
    gateway = cfg.gateway
    return NetworkNeeds(
        internet_facing=cfg.endpoint.internet_facing,
        container_instances=bool(cfg.gpu_pools or cfg.neuron_pools or cfg.managed_instance_pools),
        workers=bool(cfg.workers),
        bedrock=gateway is not None and bool(gateway.bedrock.models),
        create_endpoints=cfg.network.vpc_endpoints,
        outside_ecr_images={
            path: image
            for path, (image, _, _) in image_references(cfg).items()
            if not ECR_REFERENCE.match(image)
        },
    )


def plan_network(
    cfg: StackConfig, lookup: NetworkLookup | None, region: str | None, issues: Issues
) -> tuple[NetworkSpec, list[str]]:
    """The network's spec and decisions (none for a created VPC: its settings are the config's).

    `lookup`: what the data sources said about `network.existing` (None when it is not set)."""
    network = cfg.network
    if lookup is not None:
        issues.extend(lookup.unreadable)
    facts = lookup.facts if lookup is not None else None
    if network.existing is None:
        zones = network.az_count
        return NetworkSpec(
            cidr_block=network.cidr_block,
            availability_zones=zones,
            nat_gateways=1 if network.nat_gateways == "single" else zones,
            interface_endpoints=len(INTERFACE_ENDPOINT_SERVICES) if network.vpc_endpoints else 0,
            region=region,
            vpc=VpcSpec(
                cidr_block=network.cidr_block,
                az_count=network.availability_zones,
                az_names=tuple(network.availability_zone_names)
                if network.availability_zone_names
                else None,
                nat_per_az=network.nat_gateways == "perAz",
                vpc_endpoints=network.vpc_endpoints,
                region=region,
            ),
        ), []
    if facts is None:
        if lookup is None:
            issues.add(
                "platform.network.existing",
                "the program did not read the existing VPC (components.network.discover)",
            )
        # The other sections still plan (against a stand-in CIDR) to report their problems.
        return NetworkSpec(network.cidr_block, 0, 0, 0, region=region), []
    spec, lines = plan_existing_network(network.existing, facts, network_needs(cfg), region, issues)
    return NetworkSpec(
        cidr_block=facts.cidr_block,
        availability_zones=len(spec.availability_zones),
        nat_gateways=0,
        interface_endpoints=len(spec.interface_services),
        existing=spec,
        region=region,
        vpc=VpcSpec(vpc_endpoints=network.vpc_endpoints, existing=spec, region=region),
    ), lines
