"""InferentiaPool: an ECS capacity provider backed by an Auto Scaling group of ONE Neuron type.

Same shape as `GpuAsgPool` (shared code in `asg_pool`), with the ECS Neuron-optimized
AL2023 AMI from `/aws/service/ecs/optimized-ami/amazon-linux-2023/neuron/recommended/image_id`
(Neuron driver and runtime prerequisites) and an Inferentia2 or Trainium instance type (inf2,
trn1). No GPU support flag: Neuron devices are not an ECS resource type, so the model's task maps
/dev/neuronN through linuxParameters.devices and placement keeps one task per device set.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from components.capacity.asg_pool import AcceleratorPool, PoolArgs, PoolArgumentError, WarmPoolArgs
from components.sizing.catalog import Accelerator

__all__ = ["InferentiaPool", "InferentiaPoolArgs", "PoolArgumentError", "WarmPoolArgs"]


@dataclass(frozen=True)
class InferentiaPoolArgs(PoolArgs):
    """Inputs of `InferentiaPool`; every field and default is documented on `PoolArgs`.
    `instance_type` must be an Inferentia2 or Trainium type from the catalog."""


class InferentiaPool(AcceleratorPool):
    """One Inferentia2/Trainium instance type as an ECS capacity provider.

    Attributes: `instance`, `instance_role`, `instance_profile`, `security_group`,
    `launch_template`, `auto_scaling_group`, `warm_pool` (or None), `capacity_provider`,
    `capacity_provider_name`.
    """

    TYPE_TOKEN: ClassVar[str] = "ecs-inference:compute:InferentiaPool"
    ACCELERATOR: ClassVar[Accelerator] = "neuron"
