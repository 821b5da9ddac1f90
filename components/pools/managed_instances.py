"""Amazon ECS Managed Instances as accelerator capacity: what it accepts, what it does not.

A Managed Instances capacity provider has no Auto Scaling group, launch template or AMI of ours:
ECS launches, patches and replaces EC2 instances itself (at most 21 days per instance), picking
among the types its `instanceRequirements` allow (see
`components.sizing.instance_types.managed_instance_requirements`). What the stack still owns is
the infrastructure role ECS acts through, the instance profile the hosts run with, the private
subnets and security groups, the data volume size, monitoring and tag propagation.

Many options of an ASG pool have no meaning here and are rejected with the reason
(`components.pools.input.UNSUPPORTED_OPTIONS`). Task definitions that run on it declare
`MANAGED_INSTANCES` compatibility, and ECS refuses a set of task parameters on it that our GPU
tasks would otherwise use (`task_definition_problems`), notably
`linuxParameters.sharedMemorySize`: vLLM's tensor parallel workers exchange tensors through
/dev/shm, so a model that needs more than one GPU per task is refused on a Managed Instances pool
(`model_problems`).

Sources (docs/capacity.md has the full list): the ECS developer guide pages "Amazon ECS Managed
Instances", "Amazon ECS task definition differences for Amazon ECS Managed Instances",
"Amazon ECS Managed Instances instance profile", "Amazon ECS infrastructure IAM role" and
"Shared responsibility model for Amazon ECS Managed Instances"; botocore's ECS model
(CreateCapacityProvider); terraform-provider-aws `internal/service/ecs/capacity_provider.go`
(which pulumi-aws 7.51 wraps).

Pure functions; no Pulumi import.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from ecs_inference.contracts import aws_limits

COMPATIBILITY = aws_limits.MANAGED_INSTANCES_COMPATIBILITY
NETWORK_MODES = aws_limits.MANAGED_INSTANCES_NETWORK_MODES
INVALID_TASK_PARAMETERS = aws_limits.MANAGED_INSTANCES_INVALID_TASK_PARAMETERS

#: AWS-managed policies: what ECS needs to launch and manage the instances (infrastructure role,
#: trusted by ecs.amazonaws.com), and what the ECS agent on them needs (instance role, trusted by
#: ec2.amazonaws.com through the instance profile). The infrastructure policy only lets ECS pass
#: roles named `aws_limits.MANAGED_INSTANCES_PASSABLE_ROLE_PREFIX*`; Pulumi auto-names ours, so
#: the pool grants iam:PassRole on its own instance role.
INFRASTRUCTURE_POLICY = "AmazonECSInfrastructureRolePolicyForManagedInstances"
INSTANCE_POLICY = "AmazonECSInstanceRolePolicyForManagedInstances"


def model_problems(tensor_parallel_size: int) -> list[tuple[str, str]]:
    """What stops a model split over `tensor_parallel_size` GPUs (any GPU engine, a custom
    image on several GPUs) from running on Managed Instances, as (config key relative to the
    model, message)."""
    if tensor_parallel_size > 1:
        return [
            (
                "pool",
                f"needs tensor parallel {tensor_parallel_size}, and the engine's GPU workers "
                "exchange tensors through /dev/shm, but Managed Instances tasks cannot set "
                "linuxParameters.sharedMemorySize or ipcMode (Docker's default /dev/shm is "
                "64 MiB); serve it from an ASG pool, or fit it on one GPU (a larger-memory type, "
                "fp8 weights or KV cache, a shorter maxModelLen)",
            )
        ]
    return []


# --------------------------------------------------------------------------------------------
# task definitions
# --------------------------------------------------------------------------------------------


def _present(node: Any, path: Sequence[str]) -> bool:
    """Whether the dotted `path` (with `[]` for every list element) has a non-empty value."""
    if not path:
        return node not in (None, [], {}, "")
    head, rest = path[0], path[1:]
    if head.endswith("[]"):
        items = node.get(head[:-2]) if isinstance(node, Mapping) else None
        if isinstance(items, str):
            try:
                items = json.loads(items)
            except ValueError:
                return False
        return isinstance(items, list) and any(_present(i, rest) for i in items)
    if not isinstance(node, Mapping):
        return False
    return head in node and _present(node[head], rest)


def task_definition_problems(request: Mapping[str, Any]) -> list[str]:
    """Why ECS would refuse to register `request` (RegisterTaskDefinition, camelCase; container
    definitions as a list or a JSON string) with MANAGED_INSTANCES compatibility."""
    problems = [
        f"{path} is not valid on Managed Instances"
        for path in INVALID_TASK_PARAMETERS
        if _present(request, path.split("."))
    ]
    mode = request.get("networkMode")
    if mode is not None and mode not in NETWORK_MODES:
        problems.append(f"networkMode {mode!r}: Managed Instances tasks use awsvpc or host")
    return problems


# --------------------------------------------------------------------------------------------
# IAM
# --------------------------------------------------------------------------------------------


def pass_instance_role_policy(instance_role_arn: str) -> str:
    """Inline policy letting the infrastructure role pass exactly the pool's instance role to
    EC2, needed because the managed policy only covers roles named `ecsInstanceRole*`."""
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Effect": "Allow",
                    "Action": "iam:PassRole",
                    "Resource": instance_role_arn,
                    "Condition": {"StringEquals": {"iam:PassedToService": "ec2.amazonaws.com"}},
                }
            ],
        }
    )
