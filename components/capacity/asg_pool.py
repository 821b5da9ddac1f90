"""Shared machinery of the accelerator capacity pools (`GpuAsgPool`, `InferentiaPool`).

A pool is one EC2 Auto Scaling group of ONE accelerator instance type registered with ECS as a
capacity provider (ECS cluster auto scaling sizes an ASG by the instance type it was created
with, so mixing types would make its arithmetic wrong). It creates:

- an instance role (AmazonEC2ContainerServiceforEC2Role for the ECS agent, optionally
  AmazonSSMManagedInstanceCore for shell access without SSH) and its instance profile;
- a security group with no ingress and HTTPS-only egress: tasks run in awsvpc mode with their
  own ENIs and security groups, so the host's primary ENI only talks to AWS APIs;
- a launch template: the ECS-optimized AL2023 GPU or Neuron AMI resolved from its public SSM
  parameter at deploy time (so a new recommended AMI appears as a launch-template diff in
  preview instead of silently changing what new instances boot), IMDSv2 only with hop limit 1,
  an encrypted gp3 root volume with enough IOPS/throughput to extract multi-GB images, and
  user data that writes /etc/ecs/ecs.config (`ecs_user_data`, a pure function);
- the Auto Scaling group across the private subnets, protected from scale-in (ECS managed
  termination protection decides which instances may go), tagged `AmazonECSManaged`, with its
  desired capacity left to ECS managed scaling, and an optional warm pool of pre-initialised
  instances;
- the capacity provider: managed scaling (target capacity, instance warm-up, step sizes),
  managed termination protection and managed draining.

The cluster association (one `ClusterCapacityProviders` per cluster listing every pool) lives in
`Cluster.associate_capacity_providers`, because a cluster has exactly one such resource.

Plain arguments are validated by `pool_problems` before any resource is registered; the
component raises `PoolArgumentError` listing every problem (with the camelCase config key it came
from, so the plan can prefix the config path).
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import ClassVar, Literal

import pulumi
import pulumi_aws as aws

from components.sizing import catalog
from components.sizing.catalog import Accelerator, InstanceType

#: Root device of the ECS-optimized Amazon Linux 2023 AMIs (standard, GPU and Neuron variants).
ROOT_DEVICE_NAME = "/dev/xvda"
#: The AL2023 ECS AMIs ship a 30 GiB root snapshot; a smaller volume fails at launch.
MIN_ROOT_VOLUME_GIB = 30
#: gp3 limits (EBS volume types page): 3,000-16,000 IOPS, 125-1,000 MiB/s, at most 500 IOPS per
#: GiB and 0.25 MiB/s of throughput per provisioned IOPS.
GP3_IOPS_RANGE = (3000, 16000)
GP3_THROUGHPUT_RANGE = (125, 1000)
GP3_MAX_IOPS_PER_GIB = 500
GP3_MAX_MIBPS_PER_IOPS = 0.25

#: AWS-managed policies the instance role may carry, by name (partition filled in at deploy).
ECS_INSTANCE_POLICY = "service-role/AmazonEC2ContainerServiceforEC2Role"
SSM_INSTANCE_POLICY = "AmazonSSMManagedInstanceCore"

# ECS rejects capacity provider names that start with these (CreateCapacityProvider API) and
# allows only letters, digits, '_' and '-'; Pulumi's auto-name is the resource name + "-xxxxxxx".
_RESERVED_PROVIDER_PREFIXES = ("aws", "ecs", "fargate")
_PROVIDER_NAME = re.compile(r"^[A-Za-z0-9_-]{1,200}$")
_CLUSTER_NAME = re.compile(r"^[A-Za-z0-9_-]{1,255}$")

_KIND_LABEL: dict[Accelerator, str] = {"nvidia": "NVIDIA GPU", "neuron": "Inferentia/Trainium"}
_A_POOL: dict[Accelerator, str] = {"nvidia": "a GpuAsgPool", "neuron": "an InferentiaPool"}


class PoolArgumentError(ValueError):
    """Pool arguments that cannot work; raised before any resource is registered.

    `problems` holds `(key, message)` pairs, `key` being the camelCase pool config key
    (`instanceType`, `warmPool.reuseOnScaleIn`, ...) so callers can prefix the config path.
    """

    def __init__(self, pool: str, problems: Sequence[tuple[str, str]]) -> None:
        self.pool = pool
        self.problems = list(problems)
        lines = [f"pool {pool!r} is invalid:"] + [f"  - {k}: {m}" for k, m in self.problems]
        super().__init__("\n".join(lines))


@dataclass(frozen=True)
class WarmPoolArgs:
    """A warm pool of pre-initialised instances (booted once, driver loaded, then parked).

    min_size: instances kept in the warm pool. Default 1.
    max_group_prepared_capacity: cap on warm + in-service instances. Default None (the warm pool
        holds max_size minus desired, at least min_size).
    state: "Stopped" (pay for EBS only) or "Running". Default "Stopped". "Hibernated" is rejected:
        EC2 hibernation needs a hibernation-enabled launch template and at most 150 GB of RAM, and
        does not apply to these accelerated instances.
    reuse_on_scale_in: must stay False: ECS does not allow ReuseOnScaleIn on a warm pool of a
        capacity-provider ASG (ECS developer guide, "Configuring pre-initialized instances").
        Default False.
    """

    min_size: int = 1
    max_group_prepared_capacity: int | None = None
    state: Literal["Stopped", "Running", "Hibernated"] = "Stopped"
    reuse_on_scale_in: bool = False


@dataclass(frozen=True)
class PoolArgs:
    """Inputs of an accelerator pool. Required: cluster_name, vpc_id, subnet_ids, instance_type.

    cluster_name: the ECS cluster the instances join (written to ECS_CLUSTER).
    vpc_id: VPC of the instance security group.
    subnet_ids: PRIVATE subnets the ASG spans (one per AZ).
    instance_type: one catalog instance type of the pool's accelerator kind.
    min_size: ASG minimum. Default 0 (ECS managed scaling adds instances when tasks are pending).
    max_size: ASG maximum; leave room for a rolling deploy. Default 2.
    root_volume_gib: encrypted gp3 root volume (image layers live here). Default 200.
    root_volume_iops: gp3 IOPS. Default 6000 (layer extraction writes many files in parallel).
    root_volume_throughput: gp3 MiB/s. Default 1000 (a 10-20 GB CUDA image is written twice,
        compressed then extracted; at the 125 MiB/s baseline the disk alone takes minutes).
    kms_key_id: KMS key for the root volume. Default None (the account's EBS default key).
    target_capacity_percent: managed scaling target (100 = no idle spare instances). Default 100.
    instance_warmup_seconds: managed scaling instance warm-up. Default 300.
    warm_pool: a `WarmPoolArgs`, or None for no warm pool. Default None.
    ami_id: an explicit AMI (e.g. one baked with the serving image pre-pulled). Default None (the
        ECS-optimized AL2023 AMI of the pool's kind, from its public SSM parameter).
    container_stop_timeout_seconds: ECS_CONTAINER_STOP_TIMEOUT, the SIGTERM-to-SIGKILL time for
        containers without their own stopTimeout; generous so an in-flight stream can finish.
        Default 120.
    image_minimum_cleanup_age_hours: ECS_IMAGE_MINIMUM_CLEANUP_AGE: an unused image stays cached
        at least this long after its pull, so a restart or rollback finds it on disk. Default 24.
    ssm_access: attach AmazonSSMManagedInstanceCore so operators reach hosts through Session
        Manager (nvidia-smi, neuron-top, docker logs) with no SSH port or key pair. Default True.
    instance_refresh: roll instances when the launch template changes (new AMI, user data),
        launching replacements before terminating (min 100 %, max 200 % healthy) and refreshing
        scale-in-protected instances, which ECS managed draining empties first. Default False
        (new settings reach only newly launched instances).
    """

    cluster_name: pulumi.Input[str]
    vpc_id: pulumi.Input[str]
    subnet_ids: pulumi.Input[Sequence[pulumi.Input[str]]]
    instance_type: str
    min_size: int = 0
    max_size: int = 2
    root_volume_gib: int = 200
    root_volume_iops: int = 6000
    root_volume_throughput: int = 1000
    kms_key_id: pulumi.Input[str] | None = None
    target_capacity_percent: int = 100
    instance_warmup_seconds: int = 300
    warm_pool: WarmPoolArgs | None = None
    ami_id: str | None = None
    container_stop_timeout_seconds: int = 120
    image_minimum_cleanup_age_hours: int = 24
    ssm_access: bool = True
    instance_refresh: bool = False
    tags: Mapping[str, str] = field(default_factory=dict)
    """Extra tags on the ASG (propagated to instances). Default none; provider default tags
    still apply to every taggable resource."""


# --------------------------------------------------------------------------------------------
# validation (pure)
# --------------------------------------------------------------------------------------------


def _int_in(value: object, low: int, high: int, what: str) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int):
        return f"{what} must be a whole number, got {value!r}"
    if not low <= value <= high:
        return f"{what} must be between {low} and {high}, got {value}"
    return None


def pool_problems(name: str, args: PoolArgs, accelerator: Accelerator) -> list[tuple[str, str]]:
    """Everything wrong with `args` for a pool of `accelerator` kind, as (config key, message).

    Checks only plain values (never Outputs), so it runs before any resource exists.
    """
    problems: list[tuple[str, str]] = []

    def check(key: str, message: str | None) -> None:
        if message:
            problems.append((key, message))

    lowered = name.lower()
    if not _PROVIDER_NAME.fullmatch(name):
        check("name", "must be letters, digits, '_' or '-' (it names the ECS capacity provider)")
    elif lowered.startswith(_RESERVED_PROVIDER_PREFIXES):
        check(
            "name",
            f"{name!r} starts with 'aws', 'ecs' or 'fargate', which ECS rejects for capacity "
            "provider names; choose another pool name",
        )

    try:
        instance = catalog.instance(args.instance_type)
    except catalog.CatalogLookupError as exc:
        check("instanceType", str(exc))
    else:
        if instance.accelerator != accelerator:
            wanted = (
                catalog.gpu_instances() if accelerator == "nvidia" else catalog.neuron_instances()
            )
            families = sorted({i.family for i in wanted})
            check(
                "instanceType",
                f"{instance.name} has {_KIND_LABEL[instance.accelerator]} accelerators, but "
                f"{_A_POOL[accelerator]} needs {_KIND_LABEL[accelerator]} instances "
                f"({', '.join(families)}); put it in {_A_POOL[instance.accelerator]} instead",
            )

    min_msg = _int_in(args.min_size, 0, 1000, "minSize")
    max_msg = _int_in(args.max_size, 1, 1000, "maxSize")
    check("minSize", min_msg)
    check("maxSize", max_msg)
    if not (min_msg or max_msg) and args.min_size > args.max_size:
        check("minSize", f"minSize ({args.min_size}) must not exceed maxSize ({args.max_size})")

    root_msg = _int_in(args.root_volume_gib, MIN_ROOT_VOLUME_GIB, 16_384, "rootVolumeGib")
    if root_msg:
        root_msg += f" (the ECS AMI root snapshot is {MIN_ROOT_VOLUME_GIB} GiB)"
    check("rootVolumeGib", root_msg)
    check("rootVolumeIops", _int_in(args.root_volume_iops, *GP3_IOPS_RANGE, "rootVolumeIops"))
    check(
        "rootVolumeThroughput",
        _int_in(args.root_volume_throughput, *GP3_THROUGHPUT_RANGE, "rootVolumeThroughput"),
    )
    keys = {k for k, _ in problems}
    if not keys & {"rootVolumeGib", "rootVolumeIops", "rootVolumeThroughput"}:
        if args.root_volume_iops > GP3_MAX_IOPS_PER_GIB * args.root_volume_gib:
            check(
                "rootVolumeIops",
                f"gp3 allows at most {GP3_MAX_IOPS_PER_GIB} IOPS per GiB: "
                f"{args.root_volume_iops} IOPS needs at least "
                f"{-(-args.root_volume_iops // GP3_MAX_IOPS_PER_GIB)} GiB",
            )
        if args.root_volume_throughput > GP3_MAX_MIBPS_PER_IOPS * args.root_volume_iops:
            check(
                "rootVolumeThroughput",
                f"gp3 allows at most {GP3_MAX_MIBPS_PER_IOPS} MiB/s per provisioned IOPS: "
                f"{args.root_volume_throughput} MiB/s needs at least "
                f"{int(args.root_volume_throughput / GP3_MAX_MIBPS_PER_IOPS)} IOPS",
            )

    check(
        "targetCapacityPercent",
        _int_in(args.target_capacity_percent, 1, 100, "targetCapacityPercent"),
    )
    check(
        "instanceWarmupSeconds",
        _int_in(args.instance_warmup_seconds, 0, 10_000, "instanceWarmupSeconds"),
    )
    check(
        "containerStopTimeoutSeconds",
        _int_in(args.container_stop_timeout_seconds, 1, 3600, "containerStopTimeoutSeconds"),
    )
    check(
        "imageMinimumCleanupAgeHours",
        _int_in(args.image_minimum_cleanup_age_hours, 1, 24 * 30, "imageMinimumCleanupAgeHours"),
    )
    if args.ami_id is not None and not re.fullmatch(r"ami-[0-9a-f]{8,17}", args.ami_id):
        check("amiId", f"must be an AMI id like ami-0123456789abcdef0, got {args.ami_id!r}")

    warm = args.warm_pool
    if warm is not None:
        check("warmPool.minSize", _int_in(warm.min_size, 0, 100, "warmPool.minSize"))
        cap = warm.max_group_prepared_capacity
        if cap is not None:
            msg = _int_in(cap, 0, 1000, "warmPool.maxGroupPreparedCapacity")
            if msg is None and isinstance(warm.min_size, int) and cap < warm.min_size:
                msg = (
                    f"maxGroupPreparedCapacity ({cap}) is below the warm pool minSize "
                    f"({warm.min_size}); the warm pool could never hold its minimum"
                )
            check("warmPool.maxGroupPreparedCapacity", msg)
        if warm.state == "Hibernated":
            check(
                "warmPool.state",
                "Hibernated is not supported for accelerator pools (EC2 hibernation needs a "
                "hibernation-enabled launch template and at most 150 GB of RAM, and does not "
                "cover accelerated instance families); use Stopped (default) or Running",
            )
        elif warm.state not in ("Stopped", "Running"):
            check("warmPool.state", f"must be Stopped or Running, got {warm.state!r}")
        if warm.reuse_on_scale_in:
            check(
                "warmPool.reuseOnScaleIn",
                "ECS does not allow returning instances to the warm pool on scale-in "
                "(ReuseOnScaleIn) for an Auto Scaling group used by a capacity provider; set it "
                "to false",
            )
    return problems


# --------------------------------------------------------------------------------------------
# user data (pure)
# --------------------------------------------------------------------------------------------


def ecs_agent_settings(
    cluster_name: str,
    *,
    accelerator: Accelerator,
    warm_pool: bool,
    container_stop_timeout_seconds: int = 120,
    image_minimum_cleanup_age_hours: int = 24,
) -> dict[str, str]:
    """The /etc/ecs/ecs.config entries of a pool's instances, in file order.

    Defaults: stop timeout 120 s, images kept at least 24 h after their pull.
    """
    if not _CLUSTER_NAME.fullmatch(cluster_name):
        # Also keeps the value from breaking out of the heredoc in `ecs_user_data`.
        raise ValueError(
            f"ECS cluster name {cluster_name!r} must be 1-255 letters, digits, '_' or '-'"
        )
    settings: dict[str, str] = {"ECS_CLUSTER": cluster_name}
    if accelerator == "nvidia":
        # Advertises the GPUs as the GPU resource, so tasks can reserve them and the agent passes
        # NVIDIA_VISIBLE_DEVICES for exactly the reserved ones.
        settings["ECS_ENABLE_GPU_SUPPORT"] = "true"
    # Neuron devices are not an ECS resource type: tasks map /dev/neuronN through
    # linuxParameters.devices, which needs no agent setting (the Neuron AMI loads the driver).
    settings.update(
        {
            # A multi-GB CUDA/Neuron image already on the volume is reused instead of pulled
            # again on every task start; tags are pinned by the config, so the cache is safe.
            "ECS_IMAGE_PULL_BEHAVIOR": "prefer-cached",
            # Unused images stay at least this long, so a crashed task, a scale-in/out on the
            # same host or a circuit-breaker rollback finds its image on disk. Cleanup stays on
            # so months of deploys cannot fill the root volume.
            "ECS_IMAGE_MINIMUM_CLEANUP_AGE": f"{image_minimum_cleanup_age_hours}h",
            "ECS_IMAGE_CLEANUP_INTERVAL": "1h",
            # Default SIGTERM-to-SIGKILL grace for containers without their own stopTimeout:
            # an in-flight generation gets time to finish after the ALB has drained the target.
            "ECS_CONTAINER_STOP_TIMEOUT": f"{container_stop_timeout_seconds}s",
            # Task roles through the agent's credential endpoint (169.254.170.2)...
            "ECS_ENABLE_TASK_IAM_ROLE": "true",
            # ...and never the instance role. The IMDS hop limit covers bridge-mode containers;
            # for awsvpc tasks (their own network namespace and ENI) AWS's documented control is
            # this agent setting (ECS developer guide, container instance security).
            "ECS_AWSVPC_BLOCK_IMDS": "true",
            "ECS_AVAILABLE_LOGGING_DRIVERS": json.dumps(
                ["json-file", "awslogs"], separators=(",", ":")
            ),
        }
    )
    if warm_pool:
        # Without it an instance registers with the cluster while parked in the warm pool and
        # ECS places tasks on a host that is about to stop (agent >= 1.59.0).
        settings["ECS_WARM_POOLS_CHECK"] = "true"
    return settings


def ecs_user_data(
    cluster_name: str,
    *,
    accelerator: Accelerator,
    warm_pool: bool,
    container_stop_timeout_seconds: int = 120,
    image_minimum_cleanup_age_hours: int = 24,
) -> str:
    """The instance user data (a shell script) that writes /etc/ecs/ecs.config.

    The ECS-optimized AMI starts the agent after cloud-init has run the user data, so the file
    is complete before the agent reads it. Same defaults as `ecs_agent_settings`.
    """
    settings = ecs_agent_settings(
        cluster_name,
        accelerator=accelerator,
        warm_pool=warm_pool,
        container_stop_timeout_seconds=container_stop_timeout_seconds,
        image_minimum_cleanup_age_hours=image_minimum_cleanup_age_hours,
    )
    body = "\n".join(f"{key}={value}" for key, value in settings.items())
    return (
        "#!/bin/bash\n"
        "set -euo pipefail\n"
        "mkdir -p /etc/ecs\n"
        "cat <<'EOF' >> /etc/ecs/ecs.config\n"
        f"{body}\n"
        "EOF\n"
    )


def encode_user_data(script: str) -> str:
    """Base64 of `script`, as EC2 launch templates require."""
    return base64.b64encode(script.encode()).decode()


def instance_assume_role_policy() -> str:
    """Trust policy letting EC2 instances assume the role (through the instance profile)."""
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Effect": "Allow",
                    "Principal": {"Service": "ec2.amazonaws.com"},
                    "Action": "sts:AssumeRole",
                }
            ],
        }
    )


def managed_policy_arn(partition: str, policy: str) -> str:
    """ARN of an AWS-managed IAM policy, e.g. `arn:aws:iam::aws:policy/AmazonSSM...`."""
    return f"arn:{partition}:iam::aws:policy/{policy}"


def instance_policies(ssm_access: bool) -> tuple[str, ...]:
    """AWS-managed policies of the instance role: what the ECS agent needs (register, poll,
    pull from ECR, write logs), plus Session Manager when `ssm_access`."""
    return (ECS_INSTANCE_POLICY, SSM_INSTANCE_POLICY) if ssm_access else (ECS_INSTANCE_POLICY,)


# --------------------------------------------------------------------------------------------
# the component
# --------------------------------------------------------------------------------------------


class AcceleratorPool(pulumi.ComponentResource):
    """Base of `GpuAsgPool` and `InferentiaPool`; subclasses set `TYPE_TOKEN` and `ACCELERATOR`.

    Attributes: `instance` (catalog InstanceType), `instance_role`, `instance_profile`,
    `security_group`, `launch_template`, `auto_scaling_group`, `warm_pool` (the group's warm pool
    output, or None), `capacity_provider`, `capacity_provider_name`.
    """

    TYPE_TOKEN: ClassVar[str]
    ACCELERATOR: ClassVar[Accelerator]

    def __init__(
        self, name: str, args: PoolArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        problems = pool_problems(name, args, self.ACCELERATOR)
        if problems:
            raise PoolArgumentError(name, problems)
        super().__init__(self.TYPE_TOKEN, name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        self.instance: InstanceType = catalog.instance(args.instance_type)
        partition = aws.get_partition_output(opts=pulumi.InvokeOutputOptions(parent=self)).partition

        self.instance_role = aws.iam.Role(
            f"{name}-instance-role",
            description=f"ECS container instances of pool {name} ({self.instance.name})",
            assume_role_policy=instance_assume_role_policy(),
            opts=child,
        )
        self.instance_policy_attachments = [
            aws.iam.RolePolicyAttachment(
                f"{name}-{policy.rsplit('/', 1)[-1]}",
                role=self.instance_role.name,
                policy_arn=partition.apply(lambda p, pol=policy: managed_policy_arn(p, pol)),
                opts=child,
            )
            for policy in instance_policies(args.ssm_access)
        ]
        self.instance_profile = aws.iam.InstanceProfile(
            f"{name}-instance-profile", role=self.instance_role.name, opts=child
        )

        self.security_group = aws.ec2.SecurityGroup(
            f"{name}-sg",
            description=f"ECS container instances of pool {name}: no ingress, HTTPS egress",
            vpc_id=args.vpc_id,
            # Tasks use awsvpc ENIs with their own security groups; nothing connects to the
            # host itself (Session Manager is an outbound channel).
            ingress=[],
            # The agent, ECR, S3, CloudWatch and SSM are all HTTPS APIs. DNS (VPC resolver),
            # NTP (169.254.169.123) and IMDS are not filtered by security groups.
            egress=[
                aws.ec2.SecurityGroupEgressArgs(
                    description="HTTPS to AWS APIs (VPC endpoints or NAT)",
                    protocol="tcp",
                    from_port=443,
                    to_port=443,
                    cidr_blocks=["0.0.0.0/0"],
                )
            ],
            opts=child,
        )

        if args.ami_id is not None:
            image_id: pulumi.Input[str] = args.ami_id
        else:
            # Resolved at deploy time and pinned in the template: a new recommended AMI shows up
            # as a launch-template diff in preview. (`resolve:ssm:` would let each launch pick
            # whatever is current, leaving hosts of one ASG on different drivers unnoticed.)
            image_id = aws.ssm.get_parameter_output(
                name=catalog.ECS_AMI_SSM_PARAMETERS[self.ACCELERATOR],
                opts=pulumi.InvokeOutputOptions(parent=self),
            ).insecure_value
        user_data = pulumi.Output.from_input(args.cluster_name).apply(
            lambda cluster: encode_user_data(
                ecs_user_data(
                    cluster,
                    accelerator=self.ACCELERATOR,
                    warm_pool=args.warm_pool is not None,
                    container_stop_timeout_seconds=args.container_stop_timeout_seconds,
                    image_minimum_cleanup_age_hours=args.image_minimum_cleanup_age_hours,
                )
            )
        )
        name_tags = {"Name": f"{name}-{self.instance.name}"}
        self.launch_template = aws.ec2.LaunchTemplate(
            f"{name}-lt",
            description=f"ECS {_KIND_LABEL[self.ACCELERATOR]} pool {name} ({self.instance.name})",
            image_id=image_id,
            instance_type=self.instance.name,
            iam_instance_profile=aws.ec2.LaunchTemplateIamInstanceProfileArgs(
                arn=self.instance_profile.arn
            ),
            vpc_security_group_ids=[self.security_group.id],
            metadata_options=aws.ec2.LaunchTemplateMetadataOptionsArgs(
                http_endpoint="enabled",
                http_tokens="required",
                # 1, not the AL2023 default of 2: the agent and SSM agent use host networking
                # (one hop), while a bridge-mode container is a second hop and so cannot get an
                # IMDSv2 token, i.e. cannot read the instance role's credentials. awsvpc tasks
                # are blocked by ECS_AWSVPC_BLOCK_IMDS in the user data.
                http_put_response_hop_limit=1,
                instance_metadata_tags="disabled",
            ),
            block_device_mappings=[
                aws.ec2.LaunchTemplateBlockDeviceMappingArgs(
                    device_name=ROOT_DEVICE_NAME,
                    ebs=aws.ec2.LaunchTemplateBlockDeviceMappingEbsArgs(
                        volume_size=args.root_volume_gib,
                        volume_type="gp3",
                        iops=args.root_volume_iops,
                        throughput=args.root_volume_throughput,
                        encrypted="true",
                        kms_key_id=args.kms_key_id,
                        delete_on_termination="true",
                    ),
                )
            ],
            # One-minute instance metrics: GPU hosts are expensive, and a stuck image pull or a
            # CPU-bound tokenizer shows up here long before five-minute metrics would.
            monitoring=aws.ec2.LaunchTemplateMonitoringArgs(enabled=True),
            user_data=user_data,
            tag_specifications=[
                aws.ec2.LaunchTemplateTagSpecificationArgs(resource_type=kind, tags=name_tags)
                for kind in ("instance", "volume")
            ],
            update_default_version=True,
            opts=child,
        )

        warm_pool_args = None
        if args.warm_pool is not None:
            warm_pool_args = aws.autoscaling.GroupWarmPoolArgs(
                pool_state=args.warm_pool.state,
                min_size=args.warm_pool.min_size,
                max_group_prepared_capacity=args.warm_pool.max_group_prepared_capacity,
                # ReuseOnScaleIn is left unset: ECS does not allow it (see WarmPoolArgs).
            )
        instance_refresh = None
        if args.instance_refresh:
            instance_refresh = aws.autoscaling.GroupInstanceRefreshArgs(
                strategy="Rolling",
                preferences=aws.autoscaling.GroupInstanceRefreshPreferencesArgs(
                    # Launch the replacement first: GPU capacity is scarce and the service's
                    # tasks need somewhere to go while managed draining empties the old host.
                    min_healthy_percentage=100,
                    max_healthy_percentage=200,
                    # Every instance carrying tasks is scale-in protected by ECS; "Ignore" (the
                    # default) would skip exactly the hosts that need the new AMI.
                    scale_in_protected_instances="Refresh",
                    skip_matching=True,
                    instance_warmup=str(args.instance_warmup_seconds),
                ),
            )
        asg_tags = [
            aws.autoscaling.GroupTagArgs(key=k, value=v, propagate_at_launch=True)
            for k, v in {**dict(args.tags), **name_tags}.items()
        ]
        # ECS tags a managed-scaling group with this itself; declaring it keeps the tag from
        # showing up as drift (and from being removed by an `up`, which would confuse ECS).
        asg_tags.append(
            aws.autoscaling.GroupTagArgs(
                key="AmazonECSManaged", value="true", propagate_at_launch=True
            )
        )
        self.auto_scaling_group = aws.autoscaling.Group(
            f"{name}-asg",
            vpc_zone_identifiers=args.subnet_ids,
            min_size=args.min_size,
            max_size=args.max_size,
            launch_template=aws.autoscaling.GroupLaunchTemplateArgs(
                id=self.launch_template.id,
                # The concrete version (not $Latest) so a template change is an ASG diff too,
                # which is what starts an instance refresh when one is configured.
                version=self.launch_template.latest_version.apply(str),
            ),
            # Required by managed termination protection: ECS clears protection only on
            # instances without running tasks, so scale-in never kills a generating model.
            protect_from_scale_in=True,
            health_check_type="EC2",
            warm_pool=warm_pool_args,
            instance_refresh=instance_refresh,
            # Deleting the pool must not wait for protected instances that nothing unprotects
            # once the capacity provider is gone; services (and their tasks) are deleted first
            # because they depend on the capacity provider.
            force_delete=True,
            force_delete_warm_pool=True,
            tags=asg_tags,
            opts=pulumi.ResourceOptions(
                parent=self,
                # ECS managed scaling owns the desired capacity; resetting it on each `up` would
                # fight cluster auto scaling (and could terminate busy instances).
                ignore_changes=["desiredCapacity"],
            ),
        )
        self.warm_pool: pulumi.Output | None = (
            self.auto_scaling_group.warm_pool if args.warm_pool is not None else None
        )

        # The provider's auto-name is "<name>-capacity-<hex>"; pool_problems checked the prefix.
        self.capacity_provider = aws.ecs.CapacityProvider(
            f"{name}-capacity",
            auto_scaling_group_provider=aws.ecs.CapacityProviderAutoScalingGroupProviderArgs(
                auto_scaling_group_arn=self.auto_scaling_group.arn,
                managed_scaling=aws.ecs.CapacityProviderAutoScalingGroupProviderManagedScalingArgs(
                    status="ENABLED",
                    target_capacity=args.target_capacity_percent,
                    instance_warmup_period=args.instance_warmup_seconds,
                    minimum_scaling_step_size=1,
                    # A burst of pending model tasks gets all its hosts in one step rather than
                    # one instance per scaling cycle; more than max_size is never possible.
                    maximum_scaling_step_size=max(1, args.max_size),
                ),
                managed_termination_protection="ENABLED",
                # ECS drains an instance (tasks rescheduled, ALB targets deregistered) before
                # the ASG terminates it, for scale-in, instance refresh and rebalancing alike.
                managed_draining="ENABLED",
            ),
            opts=child,
        )
        self.capacity_provider_name = self.capacity_provider.name

        self.register_outputs(
            {
                "capacityProviderName": self.capacity_provider_name,
                "autoScalingGroupName": self.auto_scaling_group.name,
                "launchTemplateId": self.launch_template.id,
                "instanceType": self.instance.name,
            }
        )
