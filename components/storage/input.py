"""`platform.weightStores.<name>`: an EFS file system the stack creates for model weights.

`WeightStoreConfig` is both the stack file's section (camelCase keys) and the Python input of
`WeightFileSystem`."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from ecs_inference.config.base import Section
from ecs_inference.contracts import aws_limits

_PROVISIONED = aws_limits.EFS_PROVISIONED_MIBPS_RANGE


class WeightStoreConfig(Section):
    """A stack-managed EFS file system for model weights (`weightsUri: efs://<name>/<path>`):
    encrypted, General Purpose, mount targets in the private subnets, an access point per
    model."""

    throughput_mode: Literal["elastic", "provisioned"] = "elastic"
    """Elastic (default) scales reads with demand (billed per GiB read); provisioned fixes a
    rate."""
    provisioned_mib_per_second: float | None = Field(None, ge=_PROVISIONED[0], le=_PROVISIONED[1])
    """MiB/s, required with throughputMode provisioned (default none); reads get up to three
    times this."""

    @model_validator(mode="after")
    def _provisioned(self) -> WeightStoreConfig:
        if (self.throughput_mode == "provisioned") != (self.provisioned_mib_per_second is not None):
            raise ValueError(
                "give provisionedMibPerSecond exactly when throughputMode is provisioned"
            )
        return self
