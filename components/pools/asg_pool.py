"""Accelerator capacity pools: `GpuAsgPool` (NVIDIA) and `InferentiaPool` (Inferentia/Trainium).

A pool is one EC2 Auto Scaling group registered with ECS as a capacity provider: one accelerator
instance type, or several of the same accelerator through a mixed instances policy. It creates:

- an instance role (`pools.instance_role`: the ECS agent's managed policy, optionally Session
  Manager, the pre-pull hook, the host telemetry grant) and its instance profile;
- a security group with no ingress and HTTPS-only egress: tasks run in awsvpc mode with their
  own ENIs and security groups, so the host's primary ENI only talks to AWS APIs;
- a launch template: the ECS-optimized AL2023 GPU or Neuron AMI resolved from its public SSM
  parameter at deploy time (so a new recommended AMI appears as a launch-template diff in
  preview instead of silently changing what new instances boot), IMDSv2 only with hop limit 1,
  an encrypted gp3 root volume with enough IOPS/throughput to extract multi-GB images, and
  the user data of `pools.user_data` (agent settings, warm-pool pre-pull) plus the host
  telemetry agent;
- the Auto Scaling group across the private subnets, protected from scale-in (ECS managed
  termination protection decides which instances may go), tagged `AmazonECSManaged`, with its
  desired capacity left to ECS managed scaling, and an optional warm pool of pre-initialised
  instances;
- the capacity provider: managed scaling (target capacity, instance warm-up, step sizes),
  managed termination protection and managed draining.

The cluster association (one `ClusterCapacityProviders` per cluster listing every pool) lives in
`Cluster.associate_capacity_providers`, because a cluster has exactly one such resource.

`GpuAsgPool(name, input, wiring)`: `input` is the pool's `PoolConfig` (its stack-file section,
with its types: listed, or filled by the stack from sizing), `wiring` the cluster and network
and what the stack decides across the services on the pool (`PoolPlacement`). It checks and
decides with `components.pools.decisions`, as the plan does.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar

import pulumi
import pulumi_aws as aws
from pulumi import Input, Output

from ecs_inference import ledger
from ecs_inference.arns import AwsContext, arn_of, aws_context
from ecs_inference.iam import assume_role_policy
from ecs_inference.network.rules import aws_api_egress
from ecs_inference.operations.scaling import snake_case
from ecs_inference.operations.telemetry import host_telemetry_policy, host_telemetry_user_data
from ecs_inference.pools.decisions import (
    KIND_LABEL,
    KIND_OF,
    AsgPoolDecisions,
    PoolPlacement,
    decide_asg_pool,
    pool_problems,
    refuse,
)
from ecs_inference.pools.input import PoolConfig
from ecs_inference.pools.instance_role import (
    POOL_TAG,
    instance_policies,
    managed_policy_arn,
    prepull_hook_policy,
)
from ecs_inference.pools.offerings_check import checked_subnet_ids
from ecs_inference.pools.spot import mixed_instances_policy_request
from ecs_inference.pools.user_data import (
    PREPULL_HOOK,
    PREPULL_HOOK_TIMEOUT_SECONDS,
    ecs_agent_settings,
    ecs_user_data,
    encode_user_data,
)
from ecs_inference.sizing import catalog
from ecs_inference.sizing.catalog import Accelerator, InstanceType

#: Root device of the ECS-optimized Amazon Linux 2023 AMIs (standard, GPU and Neuron variants).
ROOT_DEVICE_NAME = "/dev/xvda"


@dataclass(frozen=True, kw_only=True)
class PoolWiring:
    """What a pool takes from around it besides its input: the cluster and the network."""

    cluster_name: pulumi.Input[str]
    """The ECS cluster the instances (or the capacity provider) belong to."""
    vpc_id: pulumi.Input[str]
    """VPC of the instance security group."""
    subnet_ids: pulumi.Input[Sequence[pulumi.Input[str]]]
    """PRIVATE subnets the instances launch in (one per AZ)."""


@dataclass(frozen=True, kw_only=True)
class AsgPoolWiring(PoolWiring):
    """An Auto Scaling group pool's wiring: the cluster and network, and what the stack decides
    across the services on it (default: a pool of a program's own, `PoolPlacement()`)."""

    placement: PoolPlacement = field(default_factory=PoolPlacement)
    """The images of the services on it, host telemetry and the stack's lines on it."""


class CapacityPool(pulumi.ComponentResource):
    """Base of every pool: its hosts' role and security group, and its capacity provider."""

    instance_types: tuple[str, ...]
    """Every type the pool may launch, in priority order (what its services are sized on)."""
    instance_role: aws.iam.Role
    """The role of the pool's instances (the ECS agent's)."""
    instance_profile: aws.iam.InstanceProfile
    """The role's instance profile."""
    security_group: aws.ec2.SecurityGroup
    """The hosts' group: no ingress, HTTPS egress."""
    capacity_provider: aws.ecs.CapacityProvider
    """The pool as an ECS capacity provider."""
    capacity_provider_name: pulumi.Output[str]
    """Its name, for a service's capacity provider strategy."""
    context: AwsContext
    """The provider's partition, account and region (what the pool's ARNs are built from)."""

    def _hosts(
        self, name: str, policies: Sequence[str], role_description: str, hosts: str, vpc_id: Input
    ) -> list[aws.iam.RolePolicyAttachment]:
        """The instance role (trusted by EC2) with the AWS-managed `policies` (returned), its
        profile, and the hosts' security group (`hosts` names them in its description)."""
        child = pulumi.ResourceOptions(parent=self)
        partition = self.context.partition
        self.instance_role = aws.iam.Role(
            f"{name}-instance-role",
            description=role_description,
            # EC2 instances assume it through the instance profile.
            assume_role_policy=assume_role_policy("ec2.amazonaws.com"),
            opts=child,
        )
        self.instance_profile = aws.iam.InstanceProfile(
            f"{name}-instance-profile", role=self.instance_role.name, opts=child
        )
        self.security_group = aws.ec2.SecurityGroup(
            f"{name}-sg",
            description=f"{hosts} of pool {name}: no ingress, HTTPS egress",
            vpc_id=vpc_id,
            # Tasks use awsvpc ENIs with their own security groups; nothing connects to the
            # host itself (Session Manager is an outbound channel).
            ingress=[],
            egress=[aws_api_egress()],
            opts=child,
        )
        return [
            aws.iam.RolePolicyAttachment(
                f"{name}-{policy.rsplit('/', 1)[-1]}",
                role=self.instance_role.name,
                policy_arn=partition.apply(lambda p, pol=policy: managed_policy_arn(p, pol)),
                opts=child,
            )
            for policy in policies
        ]


# --------------------------------------------------------------------------------------------
# the component
# --------------------------------------------------------------------------------------------


class AcceleratorPool(CapacityPool):
    """Base of `GpuAsgPool` and `InferentiaPool`; subclasses set `TYPE_TOKEN` and `ACCELERATOR`."""

    instance: InstanceType
    """The catalog entry of `instance_type`."""
    input: PoolConfig
    """What it was built from (its types, size, warm pool and purchase options)."""
    decided: AsgPoolDecisions
    """Its image handling and decision lines (`pools.decisions.decide_asg_pool`)."""
    prepulls: bool
    """Warm-pool instances pre-pull images (and hold their launch hook until done)."""
    instance_policy_attachments: list[aws.iam.RolePolicyAttachment]
    """The instance role's AWS-managed policies (ECS agent, optionally Session Manager)."""
    pool_tag: str
    """The group's `POOL_TAG` value, `<project>/<stack>/<pool>`: what the instance role's
    lifecycle grant is conditioned on."""
    prepull_policy: aws.iam.RolePolicy | None
    """The instance role's grant to complete its own group's launch hook; None without
    pre-pull."""
    telemetry_policy: aws.iam.RolePolicy | None
    """The host telemetry agent's grant; None without host telemetry."""
    telemetry_log_group: aws.cloudwatch.LogGroup | None
    """Where Neuron hosts' EMF lands; None on GPU pools and without host telemetry."""
    launch_template: aws.ec2.LaunchTemplate
    """AMI, IMDSv2, root volume, user data."""
    auto_scaling_group: aws.autoscaling.Group
    """The group (scale-in protected; ECS owns its desired capacity)."""
    warm_pool: pulumi.Output | None
    """The group's warm pool output; None without a warm pool."""

    TYPE_TOKEN: ClassVar[str]
    ACCELERATOR: ClassVar[Accelerator]

    def __init__(
        self,
        name: str,
        input: PoolConfig,
        wiring: AsgPoolWiring,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        if problems := pool_problems(name, input, self.ACCELERATOR):
            refuse(KIND_OF[self.ACCELERATOR], name, problems)
        super().__init__(self.TYPE_TOKEN, name, None, opts)
        self._name = name
        self._child = pulumi.ResourceOptions(parent=self)
        self.input = args = input
        self.decided = decided = decide_asg_pool(input, self.ACCELERATOR, wiring.placement)
        self.instance_types = input.types
        self.instance = catalog.instance(self.instance_types[0])
        ledger.record_pool(self, name, input)
        ledger.record_decisions(f"pool {name}", decided.lines)
        self.prepulls = bool(decided.prepull_images)
        telemetry = wiring.placement.host_telemetry_pool
        self.pool_tag = f"{pulumi.get_project()}/{pulumi.get_stack()}/{name}"
        self.context = aws_context(self)
        self.instance_policy_attachments = self._hosts(
            name,
            instance_policies(args.ssm_access),
            f"ECS container instances of pool {name} ({self.instance.name})",
            "ECS container instances",
            wiring.vpc_id,
        )
        self._prepull_policy()
        self.telemetry_policy = None
        self.telemetry_log_group = None
        if telemetry:
            self.telemetry_policy, self.telemetry_log_group = _telemetry_resources(
                self, name, telemetry
            )
        # With a mixed instances policy the group's overrides name the types.
        name_tags = {"Name": name if args.mixed else f"{name}-{self.instance.name}"}
        self._launch_template(args, wiring, name_tags)
        self._auto_scaling_group(args, wiring, name_tags)
        self._capacity_provider(args)
        self.register_outputs(
            {
                "capacityProviderName": self.capacity_provider_name,
                "autoScalingGroupName": self.auto_scaling_group.name,
                "launchTemplateId": self.launch_template.id,
                "instanceType": self.instance.name,
            }
        )

    def _prepull_policy(self) -> None:
        """The instance role's grant to complete its own group's launch hook (pre-pull only)."""
        name, child = self._name, self._child
        self.prepull_policy = None
        if self.prepulls:
            ctx = self.context
            # The group's autoname (`<name>-asg-<7 random>`) is known only once it exists, and
            # its instances need the grant as they boot: the grant names the autoname's prefix
            # and the group's own tag, both known before the group.
            group, tag = f"{name}-asg-*", self.pool_tag
            self.prepull_policy = aws.iam.RolePolicy(
                f"{name}-prepull",
                role=self.instance_role.name,
                policy=Output.all(ctx.partition, ctx.region, ctx.account_id).apply(
                    lambda a: prepull_hook_policy(
                        group, tag, partition=a[0], region=a[1], account_id=a[2]
                    )
                ),
                opts=child,
            )

    def _image_id(self, args: PoolConfig) -> pulumi.Input[str]:
        if args.ami_id is not None:
            return args.ami_id
        # Resolved at deploy time and pinned in the template: a new recommended AMI shows up as
        # a launch-template diff in preview. (`resolve:ssm:` would let each launch pick whatever
        # is current, leaving hosts of one ASG on different drivers unnoticed.)
        return aws.ssm.get_parameter_output(
            name=catalog.ECS_AMI_SSM_PARAMETERS[self.ACCELERATOR],
            opts=pulumi.InvokeOutputOptions(parent=self),
        ).insecure_value

    def _user_data(self, args: PoolConfig, cluster_name: pulumi.Input[str]) -> pulumi.Output[str]:
        """`pools.user_data` for this pool, then the host telemetry agent."""
        region = self.context.region
        decided = self.decided
        telemetry = decided.placement.host_telemetry_pool

        def script(values: list[str]) -> str:
            cluster, region_name = values
            settings = ecs_agent_settings(
                cluster,
                accelerator=self.ACCELERATOR,
                warm_pool=args.warm_pool is not None,
                container_stop_timeout_seconds=args.container_stop_timeout_seconds,
                image_minimum_cleanup_age_hours=args.image_minimum_cleanup_age_hours,
                image_pull_behavior=decided.image_pull_behavior,
                spot=args.uses_spot,
            )
            text = ecs_user_data(
                settings, prepull_images=decided.prepull_images, region=region_name
            )
            if telemetry:
                # Appended after ecs.config is written: an agent install that fails cannot keep
                # the instance from joining the cluster (the snippet only logs its failure).
                text += host_telemetry_user_data(
                    stack=pulumi.get_stack(),
                    pool=telemetry,
                    kind=KIND_OF[self.ACCELERATOR],
                    region=region_name,
                    log_group=host_log_group_name(telemetry),
                )
            return encode_user_data(text)

        return pulumi.Output.all(cluster_name, region).apply(script)

    def _launch_template(
        self, args: PoolConfig, wiring: AsgPoolWiring, name_tags: dict[str, str]
    ) -> None:
        name, mixed, types = self._name, args.mixed, self.instance_types
        self.launch_template = aws.ec2.LaunchTemplate(
            f"{name}-lt",
            description=f"ECS {KIND_LABEL[self.ACCELERATOR]} pool {name} ({', '.join(types)})",
            image_id=self._image_id(args),
            instance_type=None if mixed else self.instance.name,
            iam_instance_profile=aws.ec2.LaunchTemplateIamInstanceProfileArgs(
                arn=arn_of(self.instance_profile, self.context)
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
            user_data=self._user_data(args, wiring.cluster_name),
            tag_specifications=[
                aws.ec2.LaunchTemplateTagSpecificationArgs(resource_type=kind, tags=name_tags)
                for kind in ("instance", "volume")
            ],
            update_default_version=True,
            opts=self._child,
        )

    def _auto_scaling_group(
        self, args: PoolConfig, wiring: AsgPoolWiring, name_tags: dict[str, str]
    ) -> None:
        mixed, types = args.mixed, self.instance_types
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
        if self.prepulls:
            # What the instance role's lifecycle grant is conditioned on (on the group only).
            asg_tags.append(
                aws.autoscaling.GroupTagArgs(
                    key=POOL_TAG, value=self.pool_tag, propagate_at_launch=False
                )
            )
        template = aws.autoscaling.GroupLaunchTemplateArgs(
            id=self.launch_template.id,
            # The concrete version (not $Latest) so a template change is an ASG diff too,
            # which is what starts an instance refresh when one is configured.
            version=self.launch_template.latest_version.apply(str),
        )
        self.auto_scaling_group = aws.autoscaling.Group(
            f"{self._name}-asg",
            vpc_zone_identifiers=checked_subnet_ids(self._name, wiring.subnet_ids, types, self),
            min_size=args.min_size,
            max_size=args.max_size,
            launch_template=None if mixed else template,
            # The request's members in snake case are the provider's.
            mixed_instances_policy=snake_case(
                mixed_instances_policy_request(args, types, template.id, template.version)
            )
            if mixed
            else None,
            # Launch a replacement on a Spot rebalance recommendation, before the two-minute
            # interruption notice; managed draining empties the old host first.
            capacity_rebalance=True if mixed and args.capacity_rebalance else None,
            # Required by managed termination protection: ECS clears protection only on
            # instances without running tasks, so scale-in never kills a generating model.
            protect_from_scale_in=True,
            health_check_type="EC2",
            warm_pool=_warm_pool_args(args),
            # Holds a launching instance until its pre-pull completed (warm pool) or was skipped
            # (straight into service), see `user_data.prepull_script`.
            initial_lifecycle_hooks=[
                aws.autoscaling.GroupInitialLifecycleHookArgs(
                    name=PREPULL_HOOK,
                    lifecycle_transition="autoscaling:EC2_INSTANCE_LAUNCHING",
                    heartbeat_timeout=PREPULL_HOOK_TIMEOUT_SECONDS,
                    default_result="CONTINUE",
                )
            ]
            if self.prepulls
            else None,
            instance_refresh=_instance_refresh_args(args),
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
                depends_on=[self.prepull_policy] if self.prepull_policy is not None else None,
            ),
        )
        self.warm_pool = self.auto_scaling_group.warm_pool if args.warm_pool is not None else None

    def _capacity_provider(self, args: PoolConfig) -> None:
        # The provider's auto-name is "<name>-capacity-<hex>"; the plan checked the prefix.
        self.capacity_provider = aws.ecs.CapacityProvider(
            f"{self._name}-capacity",
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
            opts=self._child,
        )
        self.capacity_provider_name = self.capacity_provider.name


def _warm_pool_args(args: PoolConfig) -> aws.autoscaling.GroupWarmPoolArgs | None:
    if args.warm_pool is None:
        return None
    return aws.autoscaling.GroupWarmPoolArgs(
        pool_state=args.warm_pool.state,
        min_size=args.warm_pool.min_size,
        max_group_prepared_capacity=args.warm_pool.max_group_prepared_capacity,
        # ReuseOnScaleIn is left unset: ECS does not allow it (see WarmPoolConfig).
    )


def _instance_refresh_args(args: PoolConfig) -> aws.autoscaling.GroupInstanceRefreshArgs | None:
    if not args.instance_refresh:
        return None
    return aws.autoscaling.GroupInstanceRefreshArgs(
        strategy="Rolling",
        preferences=aws.autoscaling.GroupInstanceRefreshPreferencesArgs(
            # Launch the replacement first: GPU capacity is scarce and the service's tasks need
            # somewhere to go while managed draining empties the old host.
            min_healthy_percentage=100,
            max_healthy_percentage=200,
            # Every instance carrying tasks is scale-in protected by ECS; "Ignore" (the default)
            # would skip exactly the hosts that need the new AMI.
            scale_in_protected_instances="Refresh",
            skip_matching=True,
            instance_warmup=str(args.instance_warmup_seconds),
        ),
    )


# --------------------------------------------------------------------------------------------
# the two kinds of pool
# --------------------------------------------------------------------------------------------

# GPU: the ECS GPU-optimized AL2023 AMI
# (`/aws/service/ecs/optimized-ami/amazon-linux-2023/gpu/recommended/image_id`: NVIDIA driver and
# container toolkit); the agent runs with ECS_ENABLE_GPU_SUPPORT=true so tasks reserve GPUs.
#
# Neuron: the ECS Neuron-optimized AL2023 AMI
# (`/aws/service/ecs/optimized-ami/amazon-linux-2023/neuron/recommended/image_id`) on inf2/trn1.
# No GPU support flag: Neuron devices are not an ECS resource type, so the model's task maps
# /dev/neuronN through linuxParameters.devices and placement keeps one task per device set.


def _telemetry_resources(
    pool: AcceleratorPool, name: str, telemetry_pool: str
) -> tuple[aws.iam.RolePolicy, aws.cloudwatch.LogGroup | None]:
    """The agent's least-privilege grant on the instance role (and the Neuron EMF log group)."""
    child = pulumi.ResourceOptions(parent=pool)
    if pool.ACCELERATOR == "nvidia":
        document = json.dumps(host_telemetry_policy(kind="gpu"))
        return (
            aws.iam.RolePolicy(
                f"{name}-telemetry", role=pool.instance_role.name, policy=document, opts=child
            ),
            None,
        )
    group = aws.cloudwatch.LogGroup(
        f"{name}-host-metrics",
        name=host_log_group_name(telemetry_pool),
        retention_in_days=HOST_LOG_RETENTION_DAYS,
        opts=child,
    )
    policy = aws.iam.RolePolicy(
        f"{name}-telemetry",
        role=pool.instance_role.name,
        policy=arn_of(group, pool.context).apply(
            lambda arn: json.dumps(host_telemetry_policy(kind="neuron", log_group_arn=arn))
        ),
        opts=child,
    )
    return policy, group


# The EMF lines are only the carrier of Neuron host metrics (CloudWatch keeps the metrics 15
# months regardless); a week of raw lines is enough to debug the pipeline.
HOST_LOG_RETENTION_DAYS = 7


def host_log_group_name(pool: str) -> str:
    """`/<project>/<stack>/hosts/<pool>`: where Neuron hosts' EMF lands (GPU hosts use
    PutMetricData and write no log)."""
    return f"/{pulumi.get_project()}/{pulumi.get_stack()}/hosts/{pool}"


class GpuAsgPool(AcceleratorPool):
    """NVIDIA GPU instances (one type, or several of one GPU) as an ECS capacity provider."""

    TYPE_TOKEN: ClassVar[str] = "ecs-inference:compute:GpuAsgPool"
    ACCELERATOR: ClassVar[Accelerator] = "nvidia"


class InferentiaPool(AcceleratorPool):
    """Inferentia2/Trainium instances as an ECS capacity provider."""

    TYPE_TOKEN: ClassVar[str] = "ecs-inference:compute:InferentiaPool"
    ACCELERATOR: ClassVar[Accelerator] = "neuron"
