"""Model weights on Amazon EFS, the Pulumi half: a stack-managed file system and a task's
volume (`components.storage.efs` has the `efs://` URIs and the rest of the task side). For a
stack-managed one (`efs://<weightStores name>/<path>`), `WeightFileSystem` creates:

- the file system: encrypted at rest, General Purpose performance mode (AWS recommends it for
  every workload; Max I/O has higher latency), Elastic throughput (reads scale to the
  Region's per-file-system limit, billed per GiB read; see `components/sizing/weights.py`);
- a file system policy that denies any access not over TLS, so transit encryption cannot be
  switched off by a task definition; having a policy at all also replaces EFS's implicit
  allow-everyone default, so an NFS client without IAM credentials is refused and tasks mount
  through their task role (`iam: ENABLED`) only;
- one mount target per private subnet (EFS allows one per Availability Zone, and the private
  subnets are one per AZ), in a security group that admits NFS (2049) only from a *client*
  security group; tasks that read weights attach that client group, whose only rule is NFS
  egress to the mount targets;
- one access point per model, rooted at the model's path, entering as the images' non-root
  user (uid/gid 10001) and creating the directory with 0755 if missing.

A stack-managed file system starts empty: the weights are copied in once (DataSync from S3, or
`aws s3 sync` from an instance that mounts the access point); the entrypoints refuse to start,
with one log line, on a directory without `config.json` and weights.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_aws as aws
from pulumi import Input, Output

from ecs_inference.arns import aws_context
from ecs_inference.network.rules import PortRule
from ecs_inference.storage.decisions import WeightStoreUse
from ecs_inference.storage.efs import NFS_PORT, POSIX_ID, file_system_policy, volume_name
from ecs_inference.storage.input import WeightStoreConfig

TOKEN = "ecs-inference:storage:WeightFileSystem"


def task_volume(model: str, file_system_id: Input[str], access_point_id: Input[str]) -> Any:
    """The task definition `volumes` entry: EFS through the access point, TLS and IAM on.

    An access point fixes the root directory, so `rootDirectory` is left out (ECS requires it
    omitted or `/` when an access point is given).
    """
    return aws.ecs.TaskDefinitionVolumeArgs(
        name=volume_name(model),
        efs_volume_configuration=aws.ecs.TaskDefinitionVolumeEfsVolumeConfigurationArgs(
            file_system_id=file_system_id,
            transit_encryption="ENABLED",
            authorization_config=(
                aws.ecs.TaskDefinitionVolumeEfsVolumeConfigurationAuthorizationConfigArgs(
                    access_point_id=access_point_id, iam="ENABLED"
                )
            ),
        ),
    )


@dataclass(frozen=True, kw_only=True)
class WeightStoreWiring:
    """What a `WeightFileSystem` takes besides its input: who reads it (`use`, the stack's
    decision) and the network."""

    use: WeightStoreUse
    """The model services' access points, the zones and an existing file system's id."""
    vpc_id: Input[str]
    """VPC of the mount targets' security groups."""
    subnet_ids: Input[Sequence[str]]
    """The private subnets, one per Availability Zone (may be an Output)."""
    kms_key_id: Input[str] | None = None
    """KMS key of the file system; None: the AWS-managed EFS key."""
    tags: Mapping[str, str] = field(default_factory=dict)
    """Tags on the file system."""


class WeightFileSystem(pulumi.ComponentResource):
    """A stack-managed EFS file system for model weights (see the module docstring).

    `WeightFileSystem(name, input, wiring, opts=None)`: `input` is the file system's
    `WeightStoreConfig` (its stack-file section; the default for an existing file system),
    `wiring` who reads it and the network (`WeightStoreWiring`)."""

    file_system: aws.efs.FileSystem | None
    """The new file system; None for an existing one."""
    file_system_id: Output[str]
    """Its id."""
    file_system_arn: Output[str]
    """Its ARN (the task role mounts it)."""
    client_security_group: aws.ec2.SecurityGroup
    """Tasks that mount the weights join this group."""
    mount_security_group: aws.ec2.SecurityGroup
    """The mount targets' group: NFS from the client group only."""
    mount_targets: list[aws.efs.MountTarget]
    """One per private subnet."""
    access_points: dict[str, aws.efs.AccessPoint]
    """One per model, rooted at its directory."""

    def __init__(
        self,
        name: str,
        input: WeightStoreConfig,
        wiring: WeightStoreWiring,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        use = wiring.use
        super().__init__(TOKEN, name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        tags = {**wiring.tags, "Name": f"{name}-weights"}
        self.file_system = None
        if use.existing_file_system_id is None:
            self.file_system = aws.efs.FileSystem(
                f"{name}-fs",
                encrypted=True,
                kms_key_id=wiring.kms_key_id,
                performance_mode="generalPurpose",
                throughput_mode=input.throughput_mode,
                provisioned_throughput_in_mibps=input.provisioned_mib_per_second,
                tags=tags,
                opts=child,
            )
            aws.efs.FileSystemPolicy(
                f"{name}-tls-only",
                file_system_id=self.file_system.id,
                policy=self.file_system.arn.apply(file_system_policy),
                opts=child,
            )
            self.file_system_id = self.file_system.id
            self.file_system_arn = self.file_system.arn
        else:
            existing = use.existing_file_system_id
            self.file_system_id = Output.from_input(existing)
            ctx = aws_context(self)
            self.file_system_arn = Output.all(ctx.partition, ctx.region, ctx.account_id).apply(
                lambda a: f"arn:{a[0]}:elasticfilesystem:{a[1]}:{a[2]}:file-system/{existing}"
            )
        self.mount_security_group, self.client_security_group = (
            aws.ec2.SecurityGroup(
                f"{name}-{role}",
                description=what,
                vpc_id=wiring.vpc_id,
                tags=wiring.tags,
                opts=child,
            )
            for role, what in (
                ("mounts", f"{name} EFS mount targets: NFS from weight clients only"),
                ("clients", f"tasks reading weights from {name}: NFS to its mount targets only"),
            )
        )
        # The rules are separate resources because each names the other group; the groups
        # themselves declare no inline rules (the provider would then delete the separate ones
        # on every update) and the provider removes AWS's default allow-all egress on create.
        mounts, clients = self.mount_security_group, self.client_security_group
        for label, group, peer, what in (
            ("in", mounts, clients, "NFS from tasks that read weights"),
            ("out", clients, mounts, "NFS to the weight file system mount targets"),
        ):
            PortRule(NFS_PORT, what, group=peer.id).standalone(
                f"{name}-nfs-{label}",
                security_group_id=group.id,
                direction="ingress" if label == "in" else "egress",
                parent=self,
            )
        subnets = Output.from_input(wiring.subnet_ids)
        self.mount_targets = [
            aws.efs.MountTarget(
                f"{name}-mount-{index}",
                file_system_id=self.file_system_id,
                subnet_id=subnets.apply(lambda ids, i=index: ids[i]),
                security_groups=[self.mount_security_group.id],
                opts=child,
            )
            for index in range(use.subnet_count)
        ]
        self.access_points = {
            model: aws.efs.AccessPoint(
                f"{name}-{model}",
                file_system_id=self.file_system_id,
                posix_user=aws.efs.AccessPointPosixUserArgs(uid=POSIX_ID, gid=POSIX_ID),
                root_directory=aws.efs.AccessPointRootDirectoryArgs(
                    path=path,
                    creation_info=aws.efs.AccessPointRootDirectoryCreationInfoArgs(
                        owner_uid=POSIX_ID, owner_gid=POSIX_ID, permissions="0755"
                    ),
                ),
                tags={**wiring.tags, "Name": f"{name}-{model}"},
                # a task can mount only once the mount targets exist
                opts=pulumi.ResourceOptions(parent=self, depends_on=list(self.mount_targets)),
            )
            for model, path in sorted(use.access_points.items())
        }
        self.register_outputs(
            {
                "fileSystemId": self.file_system_id,
                "clientSecurityGroupId": self.client_security_group.id,
                "accessPointIds": {m: ap.id for m, ap in self.access_points.items()},
            }
        )
