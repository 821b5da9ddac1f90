"""`PoolService`: the base of model services on a capacity pool (EC2 Auto Scaling group
capacity or ECS Managed Instances).

What the launch kind decides: the task definition declares EC2 or MANAGED_INSTANCES with the
task-level CPU and memory reserved on the instance, the service runs on the pool's capacity
provider, spread over Availability Zones and packed by memory, and optionally one task per
instance (a task that maps host devices by path). Which engine the task runs is the concrete
component's business (`models.service.ModelService`).
"""

from __future__ import annotations

from collections.abc import Sequence

import pulumi_aws as aws
from pulumi import Input

from ecs_inference.services.base import EcsService, Placement, TaskRole


class PoolService(EcsService):
    """A service whose tasks run on a pool's instances; attributes as `EcsService`."""

    def _pool_task(
        self,
        *,
        service: str,
        compatibility: str,
        cpu: int,
        memory_mib: int,
        task_role: TaskRole,
        volumes: Sequence[aws.ecs.TaskDefinitionVolumeArgs] | None = None,
        secrets_kms_key_arns: Sequence[str] = (),
        exec_logging: bool | None = None,
    ) -> None:
        """The roles and a task definition of `compatibility` ("EC2" or "MANAGED_INSTANCES")
        reserving `cpu` units and `memory_mib` on the instance, with `volumes` (default none);
        see `EcsService._task`."""
        self._task(
            service=service,
            compatibility=compatibility,
            cpu=cpu,
            memory_mib=memory_mib,
            task_role=task_role,
            volumes=volumes,
            secrets_kms_key_arns=secrets_kms_key_arns,
            exec_logging=exec_logging,
        )


def pool_placement(capacity_provider: Input[str], *, one_task_per_instance: bool) -> Placement:
    """The pool's capacity provider; with `one_task_per_instance`, ECS's distinctInstance."""
    return Placement(
        capacity_provider=capacity_provider,
        constraints=[aws.ecs.ServicePlacementConstraintArgs(type="distinctInstance")]
        if one_task_per_instance
        else None,
        # Spread over AZs first (an AZ outage keeps capacity), then pack each instance's memory
        # so scarce accelerator instances are filled before new ones start.
        strategies=[
            aws.ecs.ServiceOrderedPlacementStrategyArgs(
                type="spread", field="attribute:ecs.availability-zone"
            ),
            aws.ecs.ServiceOrderedPlacementStrategyArgs(type="binpack", field="memory"),
        ],
    )
