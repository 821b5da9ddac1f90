"""ManagedInstancesPool: accelerator capacity from Amazon ECS Managed Instances.

ECS launches, patches and replaces the EC2 instances itself, choosing among the types the
provider's `instanceRequirements` allow; there is no Auto Scaling group, launch template or AMI
of ours (what that rules out is in `components.pools.managed_instances`). The component creates:

- the infrastructure role ECS acts through (trusted by ecs.amazonaws.com, with
  AmazonECSInfrastructureRolePolicyForManagedInstances) and an inline grant to pass exactly this
  pool's instance role to EC2: the managed policy only lets ECS pass roles named
  `ecsInstanceRole*`, and Pulumi auto-names ours;
- the instance role (AmazonECSInstanceRolePolicyForManagedInstances, for the ECS agent) and its
  instance profile;
- a security group with no ingress and HTTPS-only egress: tasks run in awsvpc mode with their own
  ENIs and security groups, and the host only talks to AWS APIs;
- the capacity provider, scoped to the cluster (Managed Instances providers belong to one
  cluster; the provider refuses to plan one without `cluster`), in the private subnets, with the
  data volume size, monitoring, purchase option, idle scale-in delay, auto repair and tag
  propagation of its input.

`ManagedInstancesPool(name, input, wiring)`: `input` is the pool's `ManagedInstancePoolConfig`
(its stack-file section), `wiring` the cluster, network and the `instanceRequirements` sizing
chose for the models on it. The cluster association is `Cluster.associate_capacity_providers`,
as for ASG pools.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_aws as aws

from ecs_inference import ledger
from ecs_inference.arns import arn_of, aws_context
from ecs_inference.iam import assume_role_policy
from ecs_inference.operations.scaling import snake_case
from ecs_inference.pools import managed_instances as mi
from ecs_inference.pools.asg_pool import CapacityPool, PoolWiring
from ecs_inference.pools.decisions import (
    decide_managed_pool,
    provider_name_problems,
    refuse,
)
from ecs_inference.pools.input import ManagedInstancePoolConfig
from ecs_inference.pools.instance_role import managed_policy_arn
from ecs_inference.sizing.instance_types import InstanceRequirements

TYPE_TOKEN = "ecs-inference:compute:ManagedInstancesPool"


@dataclass(frozen=True, kw_only=True)
class ManagedPoolWiring(PoolWiring):
    """A Managed Instances pool's wiring: the cluster (the provider belongs to it) and network,
    and the `instanceRequirements` sizing chose for the models on it
    (`sizing.instance_types.managed_instance_requirements`)."""

    requirements: InstanceRequirements
    """The allowed types and their envelope."""
    sizing: tuple[str, ...] = ()
    """The stack's lines on the types sizing chose, printed before the pool's own."""


# The provider's input TypedDicts (snake_case keys), named once: their generated names run past
# the line length.
_ProviderInput = aws.ecs.CapacityProviderManagedInstancesProviderArgsDict
_TemplateInput = aws.ecs.CapacityProviderManagedInstancesProviderInstanceLaunchTemplateArgsDict
_ReservationsInput = aws.ecs.CapacityProviderManagedInstancesProviderInstanceLaunchTemplateCapacityReservationsArgsDict  # noqa: E501


# The provider's names of the request members whose capitals `snake_case` would split.
_PROVIDER_KEYS = {
    "v_cpu_count": "vcpu_count",
    "memory_mi_b": "memory_mib",
    "accelerator_total_memory_mi_b": "accelerator_total_memory_mib",
}


def requirements_input(req: InstanceRequirements) -> Any:
    """The pulumi-aws `instance_requirements` input for `req`: the CreateCapacityProvider
    request member (`InstanceRequirements.to_api`) under the provider's snake_case names."""
    return {_PROVIDER_KEYS.get(k, k): v for k, v in snake_case(req.to_api()).items()}


def provider_input(
    o: ManagedInstancePoolConfig,
    wiring: ManagedPoolWiring,
    infrastructure_role_arn: pulumi.Input[str],
    instance_profile_arn: pulumi.Input[str],
    security_group_id: pulumi.Input[str],
) -> _ProviderInput:
    """The `managed_instances_provider` input (snake_case keys of
    `CapacityProviderManagedInstancesProviderArgsDict`)."""
    template: _TemplateInput = {
        "ec2_instance_profile_arn": instance_profile_arn,
        "network_configuration": {
            "subnets": wiring.subnet_ids,
            "security_groups": [security_group_id],
        },
        "storage_configuration": {"storage_size_gib": o.storage_gib},
        "monitoring": o.monitoring,
        "capacity_option_type": o.capacity_option_type,
        "instance_requirements": requirements_input(wiring.requirements),
    }
    if o.reservation_preference is not None:
        reservations: _ReservationsInput = {"reservation_preference": o.reservation_preference}
        if o.reservation_group_arn is not None:
            reservations["reservation_group_arn"] = o.reservation_group_arn
        template["capacity_reservations"] = reservations
    provider: _ProviderInput = {
        "infrastructure_role_arn": infrastructure_role_arn,
        "instance_launch_template": template,
        "propagate_tags": "CAPACITY_PROVIDER" if o.propagate_tags else "NONE",
        "auto_repair_configuration": {"actions_status": "ENABLED" if o.auto_repair else "DISABLED"},
    }
    if o.scale_in_after_seconds is not None:
        provider["infrastructure_optimization"] = {"scale_in_after": o.scale_in_after_seconds}
    return provider


class ManagedInstancesPool(CapacityPool):
    """Accelerator capacity from ECS Managed Instances (the types ECS may launch: cheapest
    first; the capacity provider: in its cluster)."""

    infrastructure_role: aws.iam.Role
    """The role ECS launches and manages the instances with."""
    input: ManagedInstancePoolConfig
    """What it was built from."""
    decided: None = None
    """A Managed Instances pool has no Auto Scaling group decisions (no Spot notes, warm pool
    or deploy room for its services)."""

    def __init__(
        self,
        name: str,
        input: ManagedInstancePoolConfig,
        wiring: ManagedPoolWiring,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        if problems := provider_name_problems(name):
            refuse("managed", name, problems)
        super().__init__(TYPE_TOKEN, name, None, opts)
        self.input = input
        self.instance_types = tuple(wiring.requirements.allowed_instance_types)
        decided = decide_managed_pool(input, wiring.requirements, wiring.sizing)
        ledger.record_pool(self, name, decided.input)
        ledger.record_decisions(f"pool {name}", decided.lines)
        child = pulumi.ResourceOptions(parent=self)
        self.context = ctx = aws_context(self)

        [instance_policy] = self._hosts(
            name,
            [mi.INSTANCE_POLICY],
            f"ECS agent on the Managed Instances of pool {name}",
            "ECS Managed Instances",
            wiring.vpc_id,
        )
        self.infrastructure_role = aws.iam.Role(
            f"{name}-infra-role",
            description=f"ECS launches and manages the Managed Instances of pool {name}",
            # ECS assumes it to launch and manage the instances.
            assume_role_policy=assume_role_policy("ecs.amazonaws.com"),
            opts=child,
        )
        infrastructure_policy = aws.iam.RolePolicyAttachment(
            f"{name}-{mi.INFRASTRUCTURE_POLICY}",
            role=self.infrastructure_role.name,
            policy_arn=ctx.partition.apply(
                lambda p: managed_policy_arn(p, mi.INFRASTRUCTURE_POLICY)
            ),
            opts=child,
        )
        pass_role = aws.iam.RolePolicy(
            f"{name}-pass-instance-role",
            role=self.infrastructure_role.name,
            policy=arn_of(self.instance_role, ctx).apply(mi.pass_instance_role_policy),
            opts=child,
        )

        self.capacity_provider = aws.ecs.CapacityProvider(
            f"{name}-capacity",
            cluster=wiring.cluster_name,
            managed_instances_provider=provider_input(
                input,
                wiring,
                arn_of(self.infrastructure_role, ctx),
                arn_of(self.instance_profile, ctx),
                self.security_group.id,
            ),
            tags=dict(input.tags) or None,
            # ECS checks the roles when it first launches; IAM is eventually consistent, so the
            # grants exist before the provider does (and outlive it on delete).
            opts=pulumi.ResourceOptions(
                parent=self, depends_on=[instance_policy, infrastructure_policy, pass_role]
            ),
        )
        self.capacity_provider_name = self.capacity_provider.name
        self.register_outputs(
            {
                "capacityProviderName": self.capacity_provider_name,
                "allowedInstanceTypes": list(self.instance_types),
            }
        )
