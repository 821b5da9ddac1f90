"""Network: the VPC every task runs in, with no public IP anywhere in the serving path.

By default creates an awsx VPC (public subnets only for the NAT gateways and an optional
internet-facing ALB; private subnets for every task and instance), and VPC endpoints so that
tasks in private subnets pull images and weights without a NAT hop: an S3 gateway endpoint
(weights and the ECR image layers, which ECR stores in S3) and interface endpoints for ECR
api/dkr, CloudWatch Logs, STS, Secrets Manager, SSM and SSM messages (ECS Exec). The interface
endpoints get their own security group that admits HTTPS from inside the VPC only.

In an existing VPC (`network.existing`, a plan's `ExistingNetworkSpec`) it creates nothing of the
VPC: it wires the given subnets and creates only the endpoints the VPC lacks
(`components.existing_network.discover` reads that VPC before the plan, which checks it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import pulumi
import pulumi_aws as aws
import pulumi_awsx as awsx
from pulumi import Input

from ecs_inference import ledger
from ecs_inference.specs.network import (
    GATEWAY_SERVICE,
    INTERFACE_ENDPOINT_SERVICES,
    ExistingNetworkSpec,
    VpcSpec,
    endpoint_service_name,
)

__all__ = ["INTERFACE_ENDPOINT_SERVICES", "Network", "NetworkArgs"]


@dataclass(frozen=True, kw_only=True)
class NetworkArgs(VpcSpec):
    """Inputs of `Network`: its spec (`components.specs.network.VpcSpec`); it needs no wiring."""


HTTPS_PORT = 443
ANY_IPV4 = "0.0.0.0/0"
"""AWS APIs are reached over 443 through the VPC endpoints or the NAT gateway; their addresses
are not a fixed CIDR, so HTTPS egress is open by address and closed by port."""


@dataclass(frozen=True)
class PortRule:
    """TCP `port` to a `cidr` or a security `group` (exactly one), with a `description`."""

    port: int
    description: str
    cidr: str | None = None
    group: Input[str] | None = None

    def __post_init__(self) -> None:
        if (self.cidr is None) == (self.group is None):
            raise ValueError(f"rule {self.description!r}: give a CIDR or a security group")
        if not 1 <= self.port <= 65535:
            raise ValueError(f"rule {self.description!r}: port {self.port} outside 1-65535")

    def inline_egress(self) -> aws.ec2.SecurityGroupEgressArgs:
        """The rule as an inline `egress` entry of `aws.ec2.SecurityGroup`."""
        return aws.ec2.SecurityGroupEgressArgs(
            description=self.description,
            protocol="tcp",
            from_port=self.port,
            to_port=self.port,
            cidr_blocks=None if self.cidr is None else [self.cidr],
            security_groups=None if self.group is None else [self.group],
        )

    def standalone(
        self,
        name: str,
        *,
        security_group_id: Input[str],
        direction: Literal["ingress", "egress"],
        parent: pulumi.Resource,
    ) -> pulumi.CustomResource:
        """The rule as its own `aws.vpc.SecurityGroupIngressRule` / `EgressRule` resource."""
        rule = (
            aws.vpc.SecurityGroupIngressRule
            if direction == "ingress"
            else aws.vpc.SecurityGroupEgressRule
        )
        return rule(
            name,
            security_group_id=security_group_id,
            cidr_ipv4=self.cidr,
            referenced_security_group_id=self.group,
            ip_protocol="tcp",
            from_port=self.port,
            to_port=self.port,
            description=self.description,
            opts=pulumi.ResourceOptions(parent=parent),
        )


AWS_API_EGRESS = "HTTPS to AWS APIs (VPC endpoints or NAT)"


def aws_api_rule(description: str = AWS_API_EGRESS) -> PortRule:
    """The egress rule of a task or container instance that calls AWS APIs: HTTPS (443)
    anywhere, which in private subnets means the VPC endpoints or the NAT gateway."""
    # The ECS agent, ECR, S3, CloudWatch, STS, Secrets Manager and SSM are all HTTPS APIs. DNS
    # (VPC resolver), NTP (169.254.169.123) and IMDS are not filtered by security groups.
    return PortRule(HTTPS_PORT, description, cidr=ANY_IPV4)


def aws_api_egress() -> aws.ec2.SecurityGroupEgressArgs:
    """`aws_api_rule()` as an inline egress entry (tasks and instances that only call AWS)."""
    return aws_api_rule().inline_egress()


class Network(pulumi.ComponentResource):
    """A VPC with private subnets, NAT and VPC endpoints."""

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
        self, name: str, args: NetworkArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("ecs-inference:network:Network", name, None, opts)
        ledger.record_network(args)
        child = pulumi.ResourceOptions(parent=self)
        self.endpoint_security_group = None
        self.s3_endpoint = None
        self.interface_endpoints = {}
        if args.existing is not None:
            self._existing(name, args.existing, args.region, child)
        else:
            self._created(name, args, child)
        self.register_outputs(
            {
                "vpcId": self.vpc_id,
                "privateSubnetIds": self.private_subnet_ids,
                "publicSubnetIds": self.public_subnet_ids,
            }
        )

    def _created(self, name: str, args: NetworkArgs, child: pulumi.ResourceOptions) -> None:
        """The awsx VPC and, unless switched off, every endpoint."""
        strategy = (
            awsx.ec2.NatGatewayStrategy.ONE_PER_AZ
            if args.nat_per_az
            else awsx.ec2.NatGatewayStrategy.SINGLE
        )
        self.vpc = awsx.ec2.Vpc(
            f"{name}-vpc",
            cidr_block=args.cidr_block,
            number_of_availability_zones=None if args.az_names else args.az_count,
            availability_zone_names=args.az_names,
            nat_gateways=awsx.ec2.NatGatewayConfigurationArgs(strategy=strategy),
            # Interface endpoints resolve the public service names to private IPs only when
            # the VPC has DNS support and DNS host names.
            enable_dns_hostnames=True,
            enable_dns_support=True,
            opts=child,
        )
        self.cidr_block = args.cidr_block
        self.vpc_id = self.vpc.vpc_id
        self.private_subnet_ids = self.vpc.private_subnet_ids
        self.public_subnet_ids = self.vpc.public_subnet_ids
        # awsx creates one private subnet per zone.
        self.load_balancer_subnet_ids = self.private_subnet_ids
        self.zone_subnet_ids = self.private_subnet_ids
        if args.vpc_endpoints:
            self._endpoints(name, self.vpc, args, child)

    def _existing(
        self,
        name: str,
        spec: ExistingNetworkSpec,
        region: str | None,
        child: pulumi.ResourceOptions,
    ) -> None:
        """The existing VPC's subnets, and the endpoints it lacks (the plan decided which)."""
        self.vpc = None
        self.cidr_block = spec.cidr_block
        self.vpc_id = pulumi.Output.from_input(spec.vpc_id)
        self.private_subnet_ids = pulumi.Output.from_input(list(spec.private_subnet_ids))
        self.public_subnet_ids = pulumi.Output.from_input(list(spec.public_subnet_ids))
        self.load_balancer_subnet_ids = pulumi.Output.from_input(
            list(spec.load_balancer_subnet_ids)
        )
        self.zone_subnet_ids = pulumi.Output.from_input(list(spec.zone_subnet_ids))
        service_region: pulumi.Input[str] = (
            region
            if region is not None
            else aws.get_region_output(opts=pulumi.InvokeOutputOptions(parent=self)).region
        )
        if spec.gateway_route_table_ids:
            self.s3_endpoint = aws.ec2.VpcEndpoint(
                f"{name}-s3",
                vpc_id=spec.vpc_id,
                service_name=pulumi.Output.from_input(service_region).apply(
                    lambda r: endpoint_service_name(r, GATEWAY_SERVICE)
                ),
                vpc_endpoint_type="Gateway",
                route_table_ids=list(spec.gateway_route_table_ids),
                opts=child,
            )
        if spec.interface_services:
            self._interface_endpoints(
                name,
                spec.interface_services,
                service_region,
                self.zone_subnet_ids,
                spec.cidr_block,
                child,
            )

    def _endpoint_security_group(
        self, name: str, cidr_block: str, child: pulumi.ResourceOptions
    ) -> aws.ec2.SecurityGroup:
        return aws.ec2.SecurityGroup(
            f"{name}-endpoints-sg",
            description="VPC interface endpoints: HTTPS from inside the VPC only",
            vpc_id=self.vpc_id,
            ingress=[
                aws.ec2.SecurityGroupIngressArgs(
                    description="HTTPS from the VPC",
                    protocol="tcp",
                    from_port=443,
                    to_port=443,
                    cidr_blocks=[cidr_block],
                )
            ],
            # Endpoints only answer; they never open connections.
            egress=[],
            opts=child,
        )

    def _interface_endpoints(
        self,
        name: str,
        services: Sequence[str],
        region: pulumi.Input[str],
        subnet_ids: pulumi.Input[Sequence[str]],
        cidr_block: str,
        child: pulumi.ResourceOptions,
    ) -> None:
        """One interface endpoint per service in `subnet_ids` (one per zone), with private DNS,
        behind a security group admitting HTTPS from `cidr_block`."""
        group = self._endpoint_security_group(name, cidr_block, child)
        self.endpoint_security_group = group
        for service in services:
            self.interface_endpoints[service] = aws.ec2.VpcEndpoint(
                f"{name}-{service.replace('.', '-')}",
                vpc_id=self.vpc_id,
                service_name=pulumi.Output.from_input(region).apply(
                    lambda r, s=service: endpoint_service_name(r, s)
                ),
                vpc_endpoint_type="Interface",
                private_dns_enabled=True,
                subnet_ids=subnet_ids,
                security_group_ids=[group.id],
                opts=child,
            )

    def _endpoints(
        self, name: str, vpc: awsx.ec2.Vpc, args: NetworkArgs, child: pulumi.ResourceOptions
    ) -> None:
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
        self.s3_endpoint = aws.ec2.VpcEndpoint(
            f"{name}-s3",
            vpc_id=self.vpc_id,
            service_name=region.apply(lambda r: endpoint_service_name(r, "s3")),
            vpc_endpoint_type="Gateway",
            route_table_ids=private_tables.ids,
            opts=child,
        )
        self._interface_endpoints(
            name,
            args.interface_services,
            region,
            self.private_subnet_ids,
            args.cidr_block,
            child,
        )
