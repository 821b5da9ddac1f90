"""Accelerator capacity pools: `GpuAsgPool` (NVIDIA) and `InferentiaPool` (Inferentia/Trainium).

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
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import pulumi
import pulumi_aws as aws

from ecs_inference.network import aws_api_egress
from ecs_inference.sizing import catalog
from ecs_inference.sizing.catalog import Accelerator, InstanceType
from ecs_inference.specs.mixed_instances import SPOT_AGENT_SETTINGS, MixedInstancesArgs
from ecs_inference.specs.operations import host_telemetry_policy, host_telemetry_user_data
from ecs_inference.specs.pool import (
    KIND_LABEL,
    PoolArgumentError,
    PoolSpec,
    WarmPoolSpec,
    pool_problems,
)

#: Root device of the ECS-optimized Amazon Linux 2023 AMIs (standard, GPU and Neuron variants).
ROOT_DEVICE_NAME = "/dev/xvda"

#: AWS-managed policies the instance role may carry, by name (partition filled in at deploy).
ECS_INSTANCE_POLICY = "service-role/AmazonEC2ContainerServiceforEC2Role"
SSM_INSTANCE_POLICY = "AmazonSSMManagedInstanceCore"

# ECS cluster names (CreateCluster API).
_CLUSTER_NAME = re.compile(r"^[A-Za-z0-9_-]{1,255}$")


@dataclass(frozen=True, kw_only=True)
class PoolArgs(PoolSpec):
    """Inputs of an accelerator pool: its spec (`components.specs.pool.PoolSpec`, built by the
    plan) plus the wiring below."""

    cluster_name: pulumi.Input[str]
    """The ECS cluster the instances join (written to ECS_CLUSTER)."""
    vpc_id: pulumi.Input[str]
    """VPC of the instance security group."""
    subnet_ids: pulumi.Input[Sequence[pulumi.Input[str]]]
    """PRIVATE subnets the ASG spans (one per AZ)."""


# Name kept for callers that build pools directly.
WarmPoolArgs = WarmPoolSpec


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
    image_pull_behavior: str = "prefer-cached",
    spot: bool = False,
) -> dict[str, str]:
    """The /etc/ecs/ecs.config entries of a pool's instances, in file order.

    Defaults: stop timeout 120 s, images kept at least 24 h after their pull, pull behaviour
    prefer-cached (the plan chooses `default` for a pool that runs a mutable tag), no Spot.
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
            # prefer-cached: a multi-GB CUDA/Neuron image already on the volume is reused
            # instead of pulled again on every task start; safe only for digest references.
            "ECS_IMAGE_PULL_BEHAVIOR": image_pull_behavior,
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
    # Images the warm-pool initialisation pre-pulled with `docker pull` are untracked by the
    # agent; its untracked-image cleanup (agent config DeleteNonECSImagesEnabled) defaults to
    # false, stated here so the pre-pulled images stay until a task uses (and tracks) them.
    settings["ECS_ENABLE_UNTRACKED_IMAGE_CLEANUP"] = "false"
    if warm_pool:
        # Without it an instance registers with the cluster while parked in the warm pool and
        # ECS places tasks on a host that is about to stop (agent >= 1.59.0).
        settings["ECS_WARM_POOLS_CHECK"] = "true"
    if spot:
        # Off by default: without it a reclaimed Spot host keeps its tasks (and ALB targets)
        # until EC2 stops it, two minutes after the interruption notice.
        settings.update(SPOT_AGENT_SETTINGS)
    return settings


def ecs_user_data(
    cluster_name: str,
    *,
    accelerator: Accelerator,
    warm_pool: bool,
    container_stop_timeout_seconds: int = 120,
    image_minimum_cleanup_age_hours: int = 24,
    image_pull_behavior: str = "prefer-cached",
    spot: bool = False,
    prepull_images: Sequence[str] = (),
    region: str | None = None,
) -> str:
    """The instance user data (a shell script) that writes /etc/ecs/ecs.config.

    The ECS-optimized AMI starts the agent after cloud-init has run the user data, so the file
    is complete before the agent reads it. Same defaults as `ecs_agent_settings`.

    With a warm pool and `prepull_images` (default none; `region` then required), an instance
    that is initialising INTO the warm pool (IMDS target lifecycle state `Warmed:*`) logs in to
    each ECR registry with the instance role and `docker pull`s every image, then completes the
    `PREPULL_HOOK` launch lifecycle action, after which the group stops it; an instance
    launching straight into service completes the action at once and its agent pulls as usual.
    """
    settings = ecs_agent_settings(
        cluster_name,
        accelerator=accelerator,
        warm_pool=warm_pool,
        container_stop_timeout_seconds=container_stop_timeout_seconds,
        image_minimum_cleanup_age_hours=image_minimum_cleanup_age_hours,
        image_pull_behavior=image_pull_behavior,
        spot=spot,
    )
    body = "\n".join(f"{key}={value}" for key, value in settings.items())
    script = (
        "#!/bin/bash\n"
        "set -euo pipefail\n"
        "mkdir -p /etc/ecs\n"
        "cat <<'EOF' >> /etc/ecs/ecs.config\n"
        f"{body}\n"
        "EOF\n"
    )
    if warm_pool and prepull_images:
        if region is None or not _REGION.fullmatch(region):
            raise ValueError(f"pre-pulling images needs the stack's region, got {region!r}")
        script += prepull_script(prepull_images, region)
    return script


# Name of the launch lifecycle hook that holds a warm-pool instance until its images are pulled.
PREPULL_HOOK = "prepull-images"
# How long the group waits for the hook before it continues anyway (a stuck pull must not keep
# the instance out of the warm pool forever): a 20 GB image at 100 MiB/s takes under 4 minutes.
PREPULL_HOOK_TIMEOUT_SECONDS = 1800
_REGION = re.compile(r"^[a-z]{2}(-[a-z]+)+-\d$")
_IMAGE_REFERENCE = re.compile(r"^[a-z0-9][a-z0-9._/:@-]*$")


PREPULL_UNIT = "ecs-inference-prepull.service"
"""The systemd unit that runs the pre-pull script and completes `PREPULL_HOOK` on every boot."""


def prepull_script(images: Sequence[str], region: str) -> str:
    """The user-data tail of `ecs_user_data` that pre-pulls `images` on warm-pool initialisation
    and completes `PREPULL_HOOK` on every launch transition.

    A launch hook pauses an instance both entering the warm pool (`Warmed:Pending:Wait`) and
    leaving it (`Pending:Wait`), but cloud-init runs user data on the first boot only. So the
    script is an enabled systemd unit, started on every boot (`--now --no-block`: this boot too,
    without holding up cloud-init, docker or the agent): entering the pool it pulls, then
    completes; started from a Stopped pool (a later boot, target state InService) it completes
    at once; in a Running pool it stays up after entering and completes again when the target
    state turns InService, since that instance does not boot again. IMDSv2 only (hop limit 1
    allows the host itself)."""
    bad = [i for i in images if not _IMAGE_REFERENCE.fullmatch(i)]
    if bad:
        raise ValueError(f"image references {bad!r} cannot be pre-pulled safely")
    registries = sorted({i.split("/", 1)[0] for i in images if ".dkr.ecr." in i.split("/", 1)[0]})
    logins = "".join(
        f"  aws ecr get-login-password --region {region} | docker login --username AWS "
        f"--password-stdin {r}\n"
        for r in registries
    )
    pulls = "".join(f"  docker pull {i}\n" for i in sorted(set(images)))
    return (
        "cat <<'PREPULL' > /usr/local/sbin/ecs-inference-prepull\n"
        "#!/bin/bash\n"
        "set -uo pipefail\n"
        "imds() {\n"
        "  local token\n"
        '  token=$(curl -fsS -X PUT -H "X-aws-ec2-metadata-token-ttl-seconds: 300" '
        "http://169.254.169.254/latest/api/token) &&\n"
        '    curl -fsS -H "X-aws-ec2-metadata-token: $token" "http://169.254.169.254/latest/$1"\n'
        "}\n"
        "target() { imds meta-data/autoscaling/target-lifecycle-state || echo unknown; }\n"
        "complete_hook() {\n"
        f"  aws autoscaling complete-lifecycle-action --region {region} "
        f'--lifecycle-hook-name {PREPULL_HOOK} --auto-scaling-group-name "$group" '
        '--instance-id "$instance" --lifecycle-action-result CONTINUE\n'
        "}\n"
        "state=$(target)\n"
        "instance=$(imds meta-data/instance-id)\n"
        'if [[ "$state" == Warmed:* ]]; then\n'
        "  until docker info >/dev/null 2>&1; do sleep 5; done\n"
        f"{logins}{pulls}"
        "fi\n"
        f"group=$(aws autoscaling describe-auto-scaling-instances --region {region} "
        '--instance-ids "$instance" --query "AutoScalingInstances[0].AutoScalingGroupName" '
        "--output text)\n"
        "complete_hook\n"
        'if [[ "$state" == Warmed:Running ]]; then\n'
        '  until [[ "$(target)" == InService ]]; do sleep 5; done\n'
        "  complete_hook\n"
        "fi\n"
        "PREPULL\n"
        "chmod 0755 /usr/local/sbin/ecs-inference-prepull\n"
        f"cat <<'UNIT' > /etc/systemd/system/{PREPULL_UNIT}\n"
        "[Unit]\n"
        "Description=ecs-inference: pre-pull images into the warm pool, complete the launch hook\n"
        "Wants=network-online.target\n"
        "After=network-online.target\n"
        "[Service]\n"
        "Type=oneshot\n"
        "ExecStart=/usr/local/sbin/ecs-inference-prepull\n"
        "[Install]\n"
        "WantedBy=multi-user.target\n"
        "UNIT\n"
        "systemctl daemon-reload\n"
        f"systemctl enable --now --no-block {PREPULL_UNIT}\n"
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


def mixed_instances_policy_args(
    mixed: MixedInstancesArgs,
    instance_types: Sequence[str],
    template: aws.autoscaling.GroupLaunchTemplateArgs,
) -> aws.autoscaling.GroupMixedInstancesPolicyArgs:
    """The group's mixed instances policy: the launch template with one override per type, in
    priority order, and the On-Demand/Spot distribution (the same members as
    `specs.mixed_instances.mixed_instances_policy_request`)."""
    asg = aws.autoscaling
    return asg.GroupMixedInstancesPolicyArgs(
        launch_template=asg.GroupMixedInstancesPolicyLaunchTemplateArgs(
            launch_template_specification=asg.GroupMixedInstancesPolicyLaunchTemplateLaunchTemplateSpecificationArgs(
                launch_template_id=template.id, version=template.version
            ),
            overrides=[
                asg.GroupMixedInstancesPolicyLaunchTemplateOverrideArgs(instance_type=t)
                for t in instance_types
            ],
        ),
        instances_distribution=asg.GroupMixedInstancesPolicyInstancesDistributionArgs(
            on_demand_allocation_strategy=mixed.on_demand_allocation_strategy,
            on_demand_base_capacity=mixed.on_demand_base_capacity,
            on_demand_percentage_above_base_capacity=mixed.on_demand_percentage_above_base,
            spot_allocation_strategy=mixed.spot_allocation_strategy,
            spot_max_price=mixed.spot_max_price,
        ),
    )


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
        mixed = args.mixed
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
        self.prepulls = args.warm_pool is not None and bool(args.prepull_images)
        if self.prepulls:
            # The pre-pull script finds its group and completes its launch hook. Resource "*":
            # the group's ARN embeds an id only known after the group (which needs this role)
            # exists; completing a hook only lets an instance end its own wait early.
            aws.iam.RolePolicy(
                f"{name}-prepull",
                role=self.instance_role.id,
                policy=json.dumps(
                    {
                        "Version": "2012-10-17",
                        "Statement": [
                            {
                                "Sid": "CompletePrepullHook",
                                "Effect": "Allow",
                                "Action": [
                                    "autoscaling:CompleteLifecycleAction",
                                    "autoscaling:DescribeAutoScalingInstances",
                                ],
                                "Resource": "*",
                            }
                        ],
                    }
                ),
                opts=child,
            )
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
            egress=[aws_api_egress()],
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
        self.telemetry_policy: aws.iam.RolePolicy | None = None
        self.telemetry_log_group: aws.cloudwatch.LogGroup | None = None
        if args.host_telemetry_pool:
            self.telemetry_policy, self.telemetry_log_group = _telemetry_resources(
                self, name, args.host_telemetry_pool
            )
        region = aws.get_region_output(opts=pulumi.InvokeOutputOptions(parent=self)).region

        def script(values: list[str]) -> str:
            cluster, region_name = values
            text = ecs_user_data(
                cluster,
                accelerator=self.ACCELERATOR,
                warm_pool=args.warm_pool is not None,
                container_stop_timeout_seconds=args.container_stop_timeout_seconds,
                image_minimum_cleanup_age_hours=args.image_minimum_cleanup_age_hours,
                image_pull_behavior=args.image_pull_behavior,
                spot=mixed is not None and mixed.uses_spot,
                prepull_images=args.prepull_images,
                region=region_name,
            )
            if args.host_telemetry_pool:
                # Appended after ecs.config is written: an agent install that fails cannot keep
                # the instance from joining the cluster (the snippet only logs its failure).
                text += host_telemetry_user_data(
                    stack=pulumi.get_stack(),
                    pool=args.host_telemetry_pool,
                    kind="gpu" if self.ACCELERATOR == "nvidia" else "neuron",
                    region=region_name,
                    log_group=host_log_group_name(args.host_telemetry_pool),
                )
            return encode_user_data(text)

        user_data = pulumi.Output.all(args.cluster_name, region).apply(script)
        types = args.instance_types or (self.instance.name,)
        # With a mixed instances policy the group's overrides name the types.
        name_tags = {"Name": name if mixed is not None else f"{name}-{self.instance.name}"}
        self.launch_template = aws.ec2.LaunchTemplate(
            f"{name}-lt",
            description=f"ECS {KIND_LABEL[self.ACCELERATOR]} pool {name} ({', '.join(types)})",
            image_id=image_id,
            instance_type=None if mixed is not None else self.instance.name,
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
        template = aws.autoscaling.GroupLaunchTemplateArgs(
            id=self.launch_template.id,
            # The concrete version (not $Latest) so a template change is an ASG diff too,
            # which is what starts an instance refresh when one is configured.
            version=self.launch_template.latest_version.apply(str),
        )
        self.auto_scaling_group = aws.autoscaling.Group(
            f"{name}-asg",
            vpc_zone_identifiers=args.subnet_ids,
            min_size=args.min_size,
            max_size=args.max_size,
            launch_template=None if mixed is not None else template,
            mixed_instances_policy=None
            if mixed is None
            else mixed_instances_policy_args(mixed, types, template),
            # Launch a replacement on a Spot rebalance recommendation, before the two-minute
            # interruption notice; managed draining empties the old host first.
            capacity_rebalance=True if mixed is not None and mixed.capacity_rebalance else None,
            # Required by managed termination protection: ECS clears protection only on
            # instances without running tasks, so scale-in never kills a generating model.
            protect_from_scale_in=True,
            health_check_type="EC2",
            warm_pool=warm_pool_args,
            # Holds a launching instance until its pre-pull completed (warm pool) or was skipped
            # (straight into service), see `prepull_script`.
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
                f"{name}-telemetry", role=pool.instance_role.id, policy=document, opts=child
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
        role=pool.instance_role.id,
        policy=group.arn.apply(
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
