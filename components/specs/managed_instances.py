"""Amazon ECS Managed Instances as accelerator capacity: what it accepts, what it does not.

A Managed Instances capacity provider has no Auto Scaling group, launch template or AMI of ours:
ECS launches, patches and replaces EC2 instances itself (at most 21 days per instance), picking
among the types its `instanceRequirements` allow (see
`components.sizing.instance_types.managed_instance_requirements`). What the stack still owns is
the infrastructure role ECS acts through, the instance profile the hosts run with, the private
subnets and security groups, the data volume size, monitoring and tag propagation.

Many options of an ASG pool have no meaning here and are rejected with the reason
(`unsupported_option_problems`). Task definitions that run on it declare `MANAGED_INSTANCES`
compatibility, and ECS refuses a set of task parameters on it that our GPU tasks would otherwise
use (`task_definition_problems`), notably `linuxParameters.sharedMemorySize`: vLLM's tensor
parallel workers exchange tensors through /dev/shm, so a model that needs more than one GPU per
task is refused on a Managed Instances pool (`model_problems`).

Sources (docs/capacity.md has the full list): the ECS developer guide pages "Amazon ECS Managed
Instances", "Amazon ECS task definition differences for Amazon ECS Managed Instances",
"Amazon ECS Managed Instances instance profile", "Amazon ECS infrastructure IAM role" and
"Shared responsibility model for Amazon ECS Managed Instances"; botocore's ECS model
(CreateCapacityProvider); terraform-provider-aws `internal/service/ecs/capacity_provider.go`
(which pulumi-aws 7.51 wraps).

Pure functions; no Pulumi import. Problems are `(config key, message)` pairs relative to the
pool's config section.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ecs_inference.contracts import aws_limits
from ecs_inference.sizing.instance_types import InstanceRequirements

COMPATIBILITY = aws_limits.MANAGED_INSTANCES_COMPATIBILITY
MONITORING_OPTIONS = aws_limits.MANAGED_INSTANCES_MONITORING
CAPACITY_OPTION_TYPES = aws_limits.MANAGED_INSTANCES_CAPACITY_OPTIONS
RESERVATION_PREFERENCES = aws_limits.MANAGED_INSTANCES_RESERVATION_PREFERENCES
SCALE_IN_AFTER_RANGE = aws_limits.MANAGED_INSTANCES_SCALE_IN_AFTER_RANGE
STORAGE_GIB_RANGE = aws_limits.MANAGED_INSTANCES_STORAGE_GIB_RANGE
MAX_INSTANCE_LIFETIME_DAYS = aws_limits.MANAGED_INSTANCES_MAX_LIFETIME_DAYS
NETWORK_MODES = aws_limits.MANAGED_INSTANCES_NETWORK_MODES
INVALID_TASK_PARAMETERS = aws_limits.MANAGED_INSTANCES_INVALID_TASK_PARAMETERS

#: AWS-managed policies: what ECS needs to launch and manage the instances (infrastructure role,
#: trusted by ecs.amazonaws.com), and what the ECS agent on them needs (instance role, trusted by
#: ec2.amazonaws.com through the instance profile). The infrastructure policy only lets ECS pass
#: roles named `aws_limits.MANAGED_INSTANCES_PASSABLE_ROLE_PREFIX*`; Pulumi auto-names ours, so
#: the pool grants iam:PassRole on its own instance role.
INFRASTRUCTURE_POLICY = "AmazonECSInfrastructureRolePolicyForManagedInstances"
INSTANCE_POLICY = "AmazonECSInstanceRolePolicyForManagedInstances"


# --------------------------------------------------------------------------------------------
# options an ASG pool has and a Managed Instances pool cannot
# --------------------------------------------------------------------------------------------

_NO_ASG = "a Managed Instances pool has no Auto Scaling group: ECS adds and removes instances"
_NO_AGENT_CONFIG = "ECS configures the agent on Managed Instances; there is no user data"
_ONE_PURCHASE_OPTION = (
    "a Managed Instances pool buys one way: set capacityOptionType (ON_DEMAND or SPOT), and mix "
    "On-Demand and Spot with two pools in the service's capacity-provider strategy"
)

#: Pool config key -> why a Managed Instances pool cannot take it, and what to do instead.
UNSUPPORTED_OPTIONS: Mapping[str, str] = {
    "warmPool": "ECS keeps no warm pool of Managed Instances; to start faster, keep idle "
    "instances longer with scaleInAfterSeconds",
    "amiId": "ECS chooses and patches the operating system image of Managed Instances itself",
    "minSize": f"{_NO_ASG} as tasks need them; bound the services' minCount instead",
    "maxSize": f"{_NO_ASG} as tasks need them; bound the services' maxCount instead",
    "targetCapacityPercent": f"{_NO_ASG}, so there is no managed-scaling target",
    "instanceWarmupSeconds": f"{_NO_ASG}, so there is no managed-scaling warm-up",
    "instanceRefresh": f"ECS replaces Managed Instances itself (patching, at most "
    f"{MAX_INSTANCE_LIFETIME_DAYS} days each), draining them first",
    "rootVolumeIops": "only the data volume size (storageGib) of a Managed Instance is set",
    "rootVolumeThroughput": "only the data volume size (storageGib) of a Managed Instance is set",
    "rootVolumeGib": "a Managed Instance's data volume is sized by storageGib",
    "kmsKeyId": "a Managed Instance's data volume takes only a size (storageSizeGiB), no KMS "
    "key; turn on EBS encryption by default in the account",
    "ssmAccess": "Managed Instances allow no SSH and no Session Manager access (AWS operates "
    "the hosts); use ECS Exec on the task",
    "containerStopTimeoutSeconds": f"{_NO_AGENT_CONFIG}; set the container's stopTimeout",
    "imageMinimumCleanupAgeHours": _NO_AGENT_CONFIG,
    "onDemandBaseCapacity": _ONE_PURCHASE_OPTION,
    "onDemandPercentageAboveBaseCapacity": _ONE_PURCHASE_OPTION,
    "spotAllocationStrategy": _ONE_PURCHASE_OPTION,
    "onDemandAllocationStrategy": _ONE_PURCHASE_OPTION,
    "capacityRebalance": _ONE_PURCHASE_OPTION,
    "spotMaxPrice": _ONE_PURCHASE_OPTION,
}


def unsupported_option_problems(options: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The keys of a Managed Instances pool's raw config that only an ASG pool understands.

    Keys whose value is None are ignored (an absent option); the message says why and what to
    use instead.
    """
    return [
        (key, f"not supported on a Managed Instances pool: {UNSUPPORTED_OPTIONS[key]}")
        for key, value in options.items()
        if key in UNSUPPORTED_OPTIONS and value is not None
    ]


# --------------------------------------------------------------------------------------------
# the pool's own options
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ManagedInstancesArgs:
    """Options of a Managed Instances capacity provider."""

    storage_gib: int = 200
    """Data volume of each instance (image layers and container storage): CUDA serving images
    are 10-20 GB compressed and ECS keeps the previous one for rollback."""
    monitoring: Literal["BASIC", "DETAILED"] = "DETAILED"
    """EC2 monitoring; DETAILED publishes one-minute metrics."""
    capacity_option_type: Literal["ON_DEMAND", "SPOT", "RESERVED"] = "ON_DEMAND"
    """How instances are bought; changing it replaces the capacity provider."""
    reservation_preference: str | None = None
    """With RESERVED, how Capacity Reservations are used."""
    reservation_group_arn: str | None = None
    """With RESERVATIONS_ONLY, the reservation resource group."""
    scale_in_after_seconds: int | None = 1800
    """How long an idle instance is kept before ECS optimises it away (-1 never, 0-3600): a GPU
    host that already pulled a multi-GB image is worth keeping for a burst that returns within
    half an hour."""
    auto_repair: bool = True
    """Let ECS replace instances it detects as unhealthy."""
    propagate_tags: bool = True
    """Copy the capacity provider's tags to the instances."""


@dataclass(frozen=True)
class ManagedInstancesPoolSpec:
    """One Managed Instances capacity provider: the instance requirements sizing chose, and the
    provider's options."""

    requirements: InstanceRequirements
    """The `instanceRequirements` (allowed types and their envelope)."""
    options: ManagedInstancesArgs = field(default_factory=ManagedInstancesArgs)
    """Data volume, monitoring, purchase option, scale-in delay, repair, tag propagation."""


def _whole(value: object, low: int, high: int, what: str) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int):
        return f"{what} must be a whole number, got {value!r}"
    if not low <= value <= high:
        return f"{what} must be between {low} and {high}, got {value}"
    return None


def managed_instances_problems(args: ManagedInstancesArgs) -> list[tuple[str, str]]:
    """Everything ECS or the provider would reject about `args`, as (config key, message)."""
    problems: list[tuple[str, str]] = []

    def check(key: str, message: str | None) -> None:
        if message:
            problems.append((key, message))

    check("storageGib", _whole(args.storage_gib, *STORAGE_GIB_RANGE, "storageGib"))
    if args.monitoring not in MONITORING_OPTIONS:
        check("monitoring", f"must be BASIC or DETAILED, got {args.monitoring!r}")
    if args.capacity_option_type not in CAPACITY_OPTION_TYPES:
        check(
            "capacityOptionType",
            f"must be ON_DEMAND, SPOT or RESERVED, got {args.capacity_option_type!r}",
        )
    pref = args.reservation_preference
    if args.capacity_option_type == "RESERVED" and pref is None:
        check(
            "reservationPreference",
            "capacityOptionType RESERVED needs a reservation preference (RESERVATIONS_ONLY, "
            "RESERVATIONS_FIRST or RESERVATIONS_EXCLUDED)",
        )
    if pref is not None:
        if pref not in RESERVATION_PREFERENCES:
            check("reservationPreference", f"must be one of {', '.join(RESERVATION_PREFERENCES)}")
        elif args.capacity_option_type != "RESERVED":
            check("reservationPreference", "applies only with capacityOptionType RESERVED")
    if args.reservation_group_arn is not None and pref != "RESERVATIONS_ONLY":
        check(
            "reservationGroupArn",
            "a Capacity Reservation group can only be set with reservationPreference "
            "RESERVATIONS_ONLY",
        )
    if args.scale_in_after_seconds is not None:
        check(
            "scaleInAfterSeconds",
            _whole(args.scale_in_after_seconds, *SCALE_IN_AFTER_RANGE, "scaleInAfterSeconds"),
        )
    return problems


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


def _trust(service: str) -> str:
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Effect": "Allow",
                    "Principal": {"Service": service},
                    "Action": "sts:AssumeRole",
                }
            ],
        }
    )


def infrastructure_assume_role_policy() -> str:
    """Trust policy of the infrastructure role: ECS assumes it to launch and manage instances."""
    return _trust("ecs.amazonaws.com")


def instance_assume_role_policy() -> str:
    """Trust policy of the instance role (through the instance profile)."""
    return _trust("ec2.amazonaws.com")


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


# --------------------------------------------------------------------------------------------
# the request
# --------------------------------------------------------------------------------------------


def create_capacity_provider_request(
    name: str,
    cluster: str,
    *,
    infrastructure_role_arn: str,
    instance_profile_arn: str,
    subnets: Iterable[str],
    security_groups: Iterable[str],
    requirements: InstanceRequirements,
    args: ManagedInstancesArgs,
    tags: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The CreateCapacityProvider request (ECS API names) a Managed Instances pool becomes.

    `cluster` is required for a Managed Instances provider (and refused for an ASG one) by the
    provider's plan-time check.
    """
    template: dict[str, Any] = {
        "ec2InstanceProfileArn": instance_profile_arn,
        "networkConfiguration": {
            "subnets": list(subnets),
            "securityGroups": list(security_groups),
        },
        "storageConfiguration": {"storageSizeGiB": args.storage_gib},
        "monitoring": args.monitoring,
        "capacityOptionType": args.capacity_option_type,
        "instanceRequirements": requirements.to_api(),
    }
    if args.reservation_preference is not None:
        reservations: dict[str, str] = {"reservationPreference": args.reservation_preference}
        if args.reservation_group_arn is not None:
            reservations["reservationGroupArn"] = args.reservation_group_arn
        template["capacityReservations"] = reservations
    provider: dict[str, Any] = {
        "infrastructureRoleArn": infrastructure_role_arn,
        "instanceLaunchTemplate": template,
        "propagateTags": "CAPACITY_PROVIDER" if args.propagate_tags else "NONE",
        "autoRepairConfiguration": {"actionsStatus": "ENABLED" if args.auto_repair else "DISABLED"},
    }
    if args.scale_in_after_seconds is not None:
        provider["infrastructureOptimization"] = {"scaleInAfter": args.scale_in_after_seconds}
    request: dict[str, Any] = {
        "name": name,
        "cluster": cluster,
        "managedInstancesProvider": provider,
    }
    if tags:
        request["tags"] = [{"key": k, "value": v} for k, v in tags.items()]
    return request
