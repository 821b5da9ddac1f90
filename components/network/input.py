"""`platform.network`: the VPC the stack creates (CIDR, zones, NAT gateways, VPC endpoints), or the
existing one it runs in (`network.existing`). `NetworkConfig` is both the stack file's section
and the Python input of `Network`, and the endpoint services it names are listed here once."""

from __future__ import annotations

import ipaddress
import re
from typing import Literal

from pydantic import Field, field_validator, model_validator
from pydantic.alias_generators import to_camel

from ecs_inference.config.base import Section
from ecs_inference.contracts import aws_limits

CONFIG_PATH = "platform.network"
EXISTING_PATH = f"{CONFIG_PATH}.existing"

# An ALB needs subnets in at least two zones; six covers every region's zone count.
AVAILABILITY_ZONES_RANGE = (2, 6)

GATEWAY_SERVICE = "s3"
"""The gateway endpoint: weights and the ECR image layers (ECR stores layers in S3)."""
ENDPOINT_GROUPS: dict[str, dict[str, str]] = {
    "gateway": {GATEWAY_SERVICE: "weights and ECR's image layers (ECR keeps layers in S3)"},
    # Interface endpoints every stack gets (unless `vpcEndpoints: false`).
    "interface": {
        "ecr.api": "ECR authentication and image manifests",
        "ecr.dkr": "ECR image layers",
        "logs": "the tasks' awslogs driver",
        "sts": "task role credentials",
        "secretsmanager": "the containers' secrets",
        "ssm": "parameters and ECS Exec",
        "ssmmessages": "ECS Exec sessions",
    },
    # What container instances call besides the above, needed as endpoints only where no route
    # leads out (the ECS guide's "Amazon ECS interface VPC endpoints", and the agents').
    "container instances": {
        "ecs": "the ECS agent's control calls",
        "ecs-agent": "the ECS agent's task state",
        "ecs-telemetry": "the ECS agent's metrics",
        "autoscaling": "lifecycle-hook completion at boot",
        "monitoring": "the CloudWatch agent's metrics",
    },
    "workers": {"sqs": "the queue workers"},
    "bedrock": {"bedrock-runtime": "the gateway's Bedrock models"},
}
"""Every service the stack can use an endpoint of (the keys `existing.vpcEndpoints` takes), by
who needs it, with what it carries for this stack (the refusals say why it is needed)."""
PURPOSES: dict[str, str] = {s: p for group in ENDPOINT_GROUPS.values() for s, p in group.items()}
ENDPOINT_SERVICES: tuple[str, ...] = tuple(PURPOSES)
INTERFACE_ENDPOINT_SERVICES: tuple[str, ...] = tuple(ENDPOINT_GROUPS["interface"])
CONTAINER_INSTANCE_SERVICES: tuple[str, ...] = tuple(ENDPOINT_GROUPS["container instances"])
PULL_PATH_SERVICES: tuple[str, ...] = ("ecr.api", "ecr.dkr", GATEWAY_SERVICE)
"""What a task in a subnet without a NAT route needs to pull an image from ECR (ECR's
"Amazon ECR interface VPC endpoints": both ECR endpoints and the S3 gateway endpoint)."""
SHARED_ENDPOINT = "shared"
"""`existing.vpcEndpoints.<service>: shared`: the service is reached through an endpoint outside
this VPC (a hub VPC's endpoint behind a shared private hosted zone). Nothing is created for it
and nothing can be checked."""


def _ids(values: list[str], pattern: re.Pattern[str], example: str) -> list[str]:
    for value in values:
        if not pattern.match(value):
            raise ValueError(f"{value!r} is not an id like {example}")
    if len(set(values)) != len(values):
        raise ValueError("lists an id twice")
    return values


class ExistingNetworkConfig(Section):
    """A VPC the stack runs in but does not own (the network team's): nothing of the VPC itself is
    created or changed. The preview reads the VPC, each subnet, the route tables they use and the
    endpoints named here, and refuses subnets in one zone, public subnets, and subnets whose
    tasks could not pull their images. It creates the VPC endpoints (and their security group)
    the VPC lacks, unless `network.vpcEndpoints` is false. The offline preview answers these
    lookups from the stack's `preview:lookups` setting (docs/network.md)."""

    vpc_id: str
    """The VPC (`vpc-…`)."""
    private_subnet_ids: list[str] = Field(min_length=1)
    """Private subnets for every task, container instance, EFS mount target and database (at
    least two Availability Zones; no route to an internet gateway)."""
    load_balancer_subnet_ids: list[str] = Field(default_factory=list)
    """Private subnets for the internal ALB (one per zone is used); empty: `privateSubnetIds`.
    They need a NAT (or transit gateway) route: the ALB's sign-in and token checks call the
    identity provider."""
    public_subnet_ids: list[str] = Field(default_factory=list)
    """Public subnets for an internet-facing endpoint's ALB only (`endpoint.internetFacing`)."""
    vpc_endpoints: dict[str, str] = Field(default_factory=dict)
    """Endpoints the VPC already has, by service (`s3`, `ecr.api`, `ecr.dkr`, `logs`, ...):
    `vpce-…`, or `shared` for one reached through a hub VPC. The stack creates the others."""

    @field_validator("vpc_id")
    @classmethod
    def _vpc(cls, value: str) -> str:
        if not aws_limits.VPC_ID.match(value):
            raise ValueError(f"{value!r} is not a VPC id like vpc-0123456789abcdef0")
        return value

    @field_validator("private_subnet_ids", "load_balancer_subnet_ids", "public_subnet_ids")
    @classmethod
    def _subnets(cls, values: list[str]) -> list[str]:
        return _ids(values, aws_limits.SUBNET_ID, "subnet-0123456789abcdef0")

    @field_validator("vpc_endpoints")
    @classmethod
    def _endpoints(cls, values: dict[str, str]) -> dict[str, str]:
        for service, endpoint in values.items():
            if service not in ENDPOINT_SERVICES:
                raise ValueError(
                    f"{service!r} is not an endpoint service this stack uses; use one of "
                    + ", ".join(ENDPOINT_SERVICES)
                )
            if endpoint != SHARED_ENDPOINT and not aws_limits.VPC_ENDPOINT_ID.match(endpoint):
                raise ValueError(
                    f"{service}: {endpoint!r} is neither an endpoint id like "
                    f"vpce-0123456789abcdef0 nor {SHARED_ENDPOINT!r}"
                )
        return values


# Keys of the VPC the stack creates: meaningless for an existing one.
_CREATED_VPC_KEYS = ("cidr_block", "availability_zones", "availability_zone_names", "nat_gateways")


class NetworkConfig(Section):
    """The VPC: created by the stack (the default), or an existing one (`existing`)."""

    cidr_block: str = "10.40.0.0/16"
    """VPC CIDR (/16 to /20); subnets are carved out of it per AZ."""
    availability_zones: int = Field(
        2, ge=AVAILABILITY_ZONES_RANGE[0], le=AVAILABILITY_ZONES_RANGE[1]
    )
    """Number of AZs (an ALB needs subnets in at least two)."""
    availability_zone_names: list[str] | None = None
    """Explicit AZ names; overrides `availabilityZones` when given."""
    nat_gateways: Literal["single", "perAz"] = "single"
    """`single` (cheaper, one AZ is a single point of failure) or `perAz` (production)."""
    vpc_endpoints: bool = True
    """S3 gateway + ECR/logs/STS/Secrets Manager/SSM interface endpoints (in an existing VPC:
    those it lacks)."""
    existing: ExistingNetworkConfig | None = None
    """Run in this existing VPC instead of creating one (docs/network.md)."""

    @field_validator("cidr_block")
    @classmethod
    def _cidr(cls, value: str) -> str:
        try:
            net = ipaddress.IPv4Network(value)
        except ValueError as exc:
            raise ValueError(f"must be an IPv4 CIDR like 10.40.0.0/16 ({exc})") from None
        if not 16 <= net.prefixlen <= 20:
            raise ValueError("prefix must be between /16 and /20 to leave room for subnets")
        return value

    @model_validator(mode="after")
    def _az_names(self) -> NetworkConfig:
        names = self.availability_zone_names
        low, high = AVAILABILITY_ZONES_RANGE
        if names is not None and not low <= len(names) <= high:
            raise ValueError(f"availabilityZoneNames must list {low} to {high} zones")
        return self

    @model_validator(mode="after")
    def _created_keys(self) -> NetworkConfig:
        if self.existing is not None:
            given = [to_camel(k) for k in _CREATED_VPC_KEYS if k in self.model_fields_set]
            if given:
                raise ValueError(
                    f"{', '.join(given)}: only for a VPC the stack creates; with `existing` the "
                    "VPC, its zones and its NAT are the network team's: remove them"
                )
        return self

    @property
    def az_count(self) -> int:
        return len(self.availability_zone_names or []) or self.availability_zones
