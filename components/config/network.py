"""`platform.network`: the VPC the stack creates (CIDR, zones, NAT gateways, VPC endpoints)."""

from __future__ import annotations

import ipaddress
from typing import Literal

from pydantic import Field, field_validator, model_validator

from ecs_inference.config.base import Section

# An ALB needs subnets in at least two zones; six covers every region's zone count.
AVAILABILITY_ZONES_RANGE = (2, 6)


class NetworkConfig(Section):
    """The VPC."""

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
    """S3 gateway + ECR/logs/STS/Secrets Manager/SSM interface endpoints."""

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

    @property
    def az_count(self) -> int:
        return len(self.availability_zone_names or []) or self.availability_zones
