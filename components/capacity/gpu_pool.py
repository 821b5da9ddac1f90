"""GpuAsgPool: an ECS capacity provider backed by an Auto Scaling group of ONE NVIDIA GPU type.

What it creates (launch template with the ECS GPU-optimized AL2023 AMI, ASG, optional warm pool,
capacity provider with managed scaling, termination protection and draining, instance role) is
shared with `InferentiaPool` and lives in `capacity.asg_pool`. What is GPU-specific: the AMI
comes from `/aws/service/ecs/optimized-ami/amazon-linux-2023/gpu/recommended/image_id` (NVIDIA
driver and container toolkit), the agent runs with ECS_ENABLE_GPU_SUPPORT=true so tasks reserve
GPUs as an ECS resource, and the instance type must be an NVIDIA type from the catalog (g5, g6,
g6e, p4d/p4de, p5/p5e). Use one pool per GPU type: cluster auto scaling assumes every instance of
a group is the same size.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from components.capacity.asg_pool import AcceleratorPool, PoolArgs, PoolArgumentError, WarmPoolArgs
from components.sizing.catalog import Accelerator

__all__ = ["GpuAsgPool", "GpuAsgPoolArgs", "PoolArgumentError", "WarmPoolArgs"]


@dataclass(frozen=True)
class GpuAsgPoolArgs(PoolArgs):
    """Inputs of `GpuAsgPool`; every field and default is documented on `PoolArgs`.
    `instance_type` must be an NVIDIA GPU type from the catalog."""


class GpuAsgPool(AcceleratorPool):
    """One NVIDIA GPU instance type as an ECS capacity provider.

    Attributes: `instance`, `instance_role`, `instance_profile`, `security_group`,
    `launch_template`, `auto_scaling_group`, `warm_pool` (or None), `capacity_provider`,
    `capacity_provider_name`.
    """

    TYPE_TOKEN: ClassVar[str] = "ecs-inference:compute:GpuAsgPool"
    ACCELERATOR: ClassVar[Accelerator] = "nvidia"
