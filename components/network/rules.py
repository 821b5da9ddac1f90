"""Security-group rule bodies: one TCP rule (`PortRule`), emitted inline or as its own resource,
and the HTTPS egress every task and container instance that calls AWS APIs gets."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import pulumi
import pulumi_aws as aws
from pulumi import Input

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
