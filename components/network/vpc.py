"""Network: the VPC every task runs in, with no public IP anywhere in the serving path.

By default creates an awsx VPC (public subnets only for the NAT gateways and an optional
internet-facing ALB; private subnets for every task and instance), and VPC endpoints so that
tasks in private subnets pull images and weights without a NAT hop: an S3 gateway endpoint
(weights and the ECR image layers, which ECR stores in S3) and interface endpoints for ECR
api/dkr, CloudWatch Logs, STS, Secrets Manager, SSM and SSM messages (ECS Exec). The interface
endpoints get their own security group that admits HTTPS from inside the VPC only.

In an existing VPC (`network.existing`) it creates nothing of the VPC: it reads the VPC (unless
its wiring brings what the data sources read), checks it (`ecs_inference.network.decisions`),
wires the given subnets and creates only the endpoints the VPC lacks.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import pulumi
import pulumi_aws as aws
import pulumi_awsx as awsx

from ecs_inference import ledger
from ecs_inference.config.issues import Issues
from ecs_inference.network.decisions import (
    NetworkDecisions,
    NetworkWiring,
    decide,
    endpoint_service_name,
)
from ecs_inference.network.discover import discover
from ecs_inference.network.input import (
    GATEWAY_SERVICE,
    INTERFACE_ENDPOINT_SERVICES,
    ExistingNetworkConfig,
    NetworkConfig,
)
from ecs_inference.network.rules import HTTPS_PORT


class Network(pulumi.ComponentResource):
    """A VPC with private subnets, NAT and VPC endpoints.

    `Network(name, input=NetworkConfig(), wiring=NetworkWiring(), opts=None)`: `input` is the
    stack file's `network` section (`NetworkConfig`; default: its defaults), `wiring` the
    region, what the rest of the stack asks of it and an existing VPC's lookup. It decides
    (and for an existing VPC checks) before it creates anything, raising `ConfigError` with the
    config paths a stack file gets.
    """

    decided: NetworkDecisions
    """What it decided: the CIDR the stack's rules admit, its cost, an existing VPC's wiring."""
    vpc: awsx.ec2.Vpc | None
    """The awsx VPC (subnets, route tables, NAT gateways); None in an existing VPC."""
    vpc_id: pulumi.Output[str]
    """The VPC id."""
    cidr_block: str
    """The VPC CIDR."""
    private_subnet_ids: pulumi.Output[Sequence[str]]
    """One private subnet per AZ: every task and instance."""
    public_subnet_ids: pulumi.Output[Sequence[str]]
    """One public subnet per AZ: NAT gateways and an internet-facing ALB only."""
    load_balancer_subnet_ids: pulumi.Output[Sequence[str]]
    """One subnet per AZ for the internal ALB (the private ones of a created VPC)."""
    zone_subnet_ids: pulumi.Output[Sequence[str]]
    """One private subnet per AZ: interface endpoints and EFS mount targets."""
    endpoint_security_group: aws.ec2.SecurityGroup | None
    """HTTPS from inside the VPC to the interface endpoints; None without endpoints."""
    s3_endpoint: aws.ec2.VpcEndpoint | None
    """The S3 gateway endpoint; None without endpoints."""
    interface_endpoints: dict[str, aws.ec2.VpcEndpoint]
    """Interface endpoints by service (`ecr.api`, `logs`, ...)."""

    def __init__(
        self,
        name: str,
        input: NetworkConfig | None = None,
        wiring: NetworkWiring | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        input, wiring = input or NetworkConfig.model_validate({}), wiring or NetworkWiring()
        if input.existing is not None and wiring.lookup is None:
            wiring = replace(wiring, lookup=discover(input.existing))
        issues = Issues()
        self.decided = decide(input, wiring, issues)
        issues.raise_if_any()
        ledger.record_network(self.decided.cost)
        if self.decided.lines:
            ledger.record_decisions("network", self.decided.lines)
        super().__init__("ecs-inference:network:Network", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        self.cidr_block = self.decided.cidr_block
        self.endpoint_security_group = None
        self.s3_endpoint = None
        self.interface_endpoints = {}
        if input.existing is not None:
            self._existing(name, input.existing, child)
        else:
            self._created(name, input, child)
        self.register_outputs(
            {
                "vpcId": self.vpc_id,
                "privateSubnetIds": self.private_subnet_ids,
                "publicSubnetIds": self.public_subnet_ids,
            }
        )

    def _created(self, name: str, input: NetworkConfig, child: pulumi.ResourceOptions) -> None:
        """The awsx VPC and, unless switched off, every endpoint."""
        strategy = (
            awsx.ec2.NatGatewayStrategy.ONE_PER_AZ
            if input.nat_gateways == "perAz"
            else awsx.ec2.NatGatewayStrategy.SINGLE
        )
        names = input.availability_zone_names or None
        self.vpc = vpc = awsx.ec2.Vpc(
            f"{name}-vpc",
            cidr_block=input.cidr_block,
            number_of_availability_zones=None if names else input.availability_zones,
            availability_zone_names=names,
            nat_gateways=awsx.ec2.NatGatewayConfigurationArgs(strategy=strategy),
            # Interface endpoints resolve the public service names to private IPs only when
            # the VPC has DNS support and DNS host names.
            enable_dns_hostnames=True,
            enable_dns_support=True,
            opts=child,
        )
        self.vpc_id = vpc.vpc_id
        self.private_subnet_ids = vpc.private_subnet_ids
        self.public_subnet_ids = vpc.public_subnet_ids
        # awsx creates one private subnet per zone.
        self.load_balancer_subnet_ids = self.private_subnet_ids
        self.zone_subnet_ids = self.private_subnet_ids
        if not input.vpc_endpoints:
            return
        region = aws.get_region_output(opts=pulumi.InvokeOutputOptions(parent=self)).region
        # The awsx VPC creates the private route tables as its own children; looking them up
        # with depends_on=vpc waits until they exist (unknown during the first preview).
        private_tables = aws.ec2.get_route_tables_output(
            vpc_id=self.vpc_id,
            filters=[
                aws.ec2.GetRouteTablesFilterArgs(
                    # The output form of the invoke resolves Outputs in its arguments; the Args
                    # class is typed for plain values only.
                    name="association.subnet-id",
                    values=self.private_subnet_ids,  # pyright: ignore[reportArgumentType]
                )
            ],
            opts=pulumi.InvokeOutputOptions(parent=self, depends_on=[vpc]),
        )
        self._endpoints(name, region, private_tables.ids, INTERFACE_ENDPOINT_SERVICES, child)

    def _existing(
        self, name: str, existing: ExistingNetworkConfig, child: pulumi.ResourceOptions
    ) -> None:
        """The existing VPC's subnets, and the endpoints it lacks (the decisions chose which)."""
        decided = self.decided.existing
        assert decided is not None
        self.vpc = None
        self.vpc_id = pulumi.Output.from_input(existing.vpc_id)
        self.private_subnet_ids = pulumi.Output.from_input(list(existing.private_subnet_ids))
        balancer = list(decided.load_balancer_subnet_ids)
        self.public_subnet_ids = pulumi.Output.from_input(
            balancer if self.decided.wiring.needs.internet_facing else []
        )
        self.load_balancer_subnet_ids = pulumi.Output.from_input(balancer)
        self.zone_subnet_ids = pulumi.Output.from_input(list(decided.zone_subnet_ids))
        if not (decided.gateway_route_table_ids or decided.interface_services):
            return
        region = self.decided.wiring.region
        self._endpoints(
            name,
            region
            if region is not None
            else aws.get_region_output(opts=pulumi.InvokeOutputOptions(parent=self)).region,
            list(decided.gateway_route_table_ids) or None,
            decided.interface_services,
            child,
        )

    def _endpoints(
        self,
        name: str,
        region: pulumi.Input[str],
        route_table_ids: pulumi.Input[Sequence[str]] | None,
        services: Sequence[str],
        child: pulumi.ResourceOptions,
    ) -> None:
        """The S3 gateway endpoint on `route_table_ids` (None: none), and one interface
        endpoint per service in the zone subnets, with private DNS, behind a security group
        admitting HTTPS from the VPC's CIDR."""
        if route_table_ids is not None:
            self.s3_endpoint = aws.ec2.VpcEndpoint(
                f"{name}-s3",
                vpc_id=self.vpc_id,
                service_name=pulumi.Output.from_input(region).apply(
                    lambda r: endpoint_service_name(r, GATEWAY_SERVICE)
                ),
                vpc_endpoint_type="Gateway",
                route_table_ids=route_table_ids,
                opts=child,
            )
        if not services:
            return
        self.endpoint_security_group = group = aws.ec2.SecurityGroup(
            f"{name}-endpoints-sg",
            description="VPC interface endpoints: HTTPS from inside the VPC only",
            vpc_id=self.vpc_id,
            ingress=[
                aws.ec2.SecurityGroupIngressArgs(
                    description="HTTPS from the VPC",
                    protocol="tcp",
                    from_port=HTTPS_PORT,
                    to_port=HTTPS_PORT,
                    cidr_blocks=[self.cidr_block],
                )
            ],
            # Endpoints only answer; they never open connections.
            egress=[],
            opts=child,
        )
        for service in services:
            self.interface_endpoints[service] = aws.ec2.VpcEndpoint(
                f"{name}-{service.replace('.', '-')}",
                vpc_id=self.vpc_id,
                service_name=pulumi.Output.from_input(region).apply(
                    lambda r, s=service: endpoint_service_name(r, s)
                ),
                vpc_endpoint_type="Interface",
                private_dns_enabled=True,
                subnet_ids=self.zone_subnet_ids,
                security_group_ids=[group.id],
                opts=child,
            )
