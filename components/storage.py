"""Model weights on Amazon EFS: `efs://` URIs, a stack-managed file system, and the task side.

`weightsUri: efs://<file-system>/<path>` names either an existing file system by id
(`efs://fs-0123456789abcdef0/models/llama`) or one the stack manages, by its config name
(`efs://weights/models/llama`). For a stack-managed one, `WeightFileSystem` creates:

- the file system: encrypted at rest, General Purpose performance mode (AWS recommends it for
  every workload; Max I/O has higher latency), Elastic throughput (reads scale to the
  Region's per-file-system limit, billed per GiB read; see `components/weight_store.py`);
- a file system policy that denies any access not over TLS, so transit encryption cannot be
  switched off by a task definition;
- one mount target per private subnet (EFS allows one per Availability Zone, and the private
  subnets are one per AZ), in a security group that admits NFS (2049) only from a *client*
  security group; tasks that read weights attach that client group, whose only rule is NFS
  egress to the mount targets;
- one access point per model, rooted at the model's path, entering as the images' non-root
  user (uid/gid 10001) and creating the directory with 0755 if missing.

The task side (pure functions): an EFS volume with transit encryption and IAM authorisation
through the model's access point, mounted read-only at `/mnt/efs/<model>`; and a task-role
statement allowing `elasticfilesystem:ClientMount` (read only: no ClientWrite, no
ClientRootAccess) on the file system, only through that access point and a mount target.

A stack-managed file system starts empty: the weights are copied in once (DataSync from S3, or
`aws s3 sync` from an instance that mounts the access point); the entrypoints refuse to start,
with one log line, on a directory without `config.json` and weights.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_aws as aws
from pulumi import Input

from contracts import aws_limits

TOKEN = "ecs-inference:storage:WeightFileSystem"
SCHEME = "efs://"
NFS_PORT = aws_limits.NFS_PORT
MOUNT_ROOT = "/mnt/efs"
"""Containers see a model's access point at `<MOUNT_ROOT>/<model>`."""
POSIX_ID = 10001
"""uid/gid of the images' non-root user; the access point enters as it."""
ACCESS_POINT_PATH_MAX = aws_limits.EFS_ACCESS_POINT_PATH_MAX
ACCESS_POINT_PATH_MAX_DEPTH = aws_limits.EFS_ACCESS_POINT_PATH_MAX_DEPTH
FILE_SYSTEM_ID = re.compile(r"^fs-[0-9a-f]{8,40}$")
_CONFIG_NAME = re.compile(r"^[a-z][a-z0-9-]{0,19}[a-z0-9]$")
_PATH_PART = re.compile(r"^[A-Za-z0-9._-]+$")


class EfsConfigError(ValueError):
    """An `efs://` URI or file-system setting is invalid; the message starts with its path."""


@dataclass(frozen=True)
class EfsWeights:
    """Where one model's weights live on EFS."""

    file_system: str
    """A stack-managed file system's config name, or an existing file system's id."""
    path: str
    """Absolute directory on the file system (the access point's root)."""

    @property
    def managed(self) -> bool:
        """True when the stack creates the file system (a config name, not an `fs-` id)."""
        return not FILE_SYSTEM_ID.match(self.file_system)


def parse_efs_uri(uri: str, where: str, file_systems: Sequence[str]) -> EfsWeights:
    """Parse `efs://<file-system>/<path>` for the config value at `where`.

    `file_systems` are the config names of the stack-managed file systems. Errors (one line,
    starting with `where`): no file system (`efs:///models/x`), an unknown name, a path that is
    not absolute, has `..`, empty or unusual components, or exceeds EFS's access-point limits.
    """
    if not uri.startswith(SCHEME):
        raise EfsConfigError(f"{where}: {uri!r} is not an efs:// URI")
    file_system, slash, rest = uri[len(SCHEME) :].partition("/")
    known = ", ".join(sorted(file_systems)) or "none"
    if not file_system:
        raise EfsConfigError(
            f"{where}: {uri!r} names no file system: use efs://<file-system>/<path> with a "
            f"file system id (fs-...) or one of this stack's weightStores ({known})"
        )
    if not FILE_SYSTEM_ID.match(file_system) and file_system not in file_systems:
        raise EfsConfigError(
            f"{where}: {uri!r} names file system {file_system!r}, which is neither an id "
            f"(fs-...) nor one of this stack's weightStores ({known})"
        )
    parts = [p for p in rest.split("/") if p]
    if not slash or not parts:
        raise EfsConfigError(f"{where}: {uri!r} has no directory after the file system")
    for part in parts:
        if part in (".", "..") or not _PATH_PART.match(part):
            raise EfsConfigError(
                f"{where}: {uri!r}: path component {part!r} must be letters, digits and ._- "
                "(no '..')"
            )
    path = "/" + "/".join(parts)
    if len(path) > ACCESS_POINT_PATH_MAX or len(parts) > ACCESS_POINT_PATH_MAX_DEPTH:
        raise EfsConfigError(
            f"{where}: {uri!r}: an EFS access point root is at most {ACCESS_POINT_PATH_MAX} "
            f"characters and {ACCESS_POINT_PATH_MAX_DEPTH} directories deep"
        )
    return EfsWeights(file_system, path)


def check_store_name(name: str, where: str) -> str:
    """A stack-managed file system's config name (it becomes part of resource names)."""
    if not _CONFIG_NAME.match(name) or FILE_SYSTEM_ID.match(name):
        raise EfsConfigError(
            f"{where}: {name!r} must be 2-21 characters of lowercase letters, digits and '-', "
            "starting with a letter, and not look like a file system id"
        )
    return name


def container_path(model: str) -> str:
    """Where the model's weights appear inside its container (`ENGINE_WEIGHTS_URI`)."""
    return f"{MOUNT_ROOT}/{model}"


def volume_name(model: str) -> str:
    """The task definition's volume name for the model's weights."""
    return f"weights-{model}"


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


def task_volume_request(model: str, file_system_id: str, access_point_id: str) -> dict[str, Any]:
    """The same volume as RegisterTaskDefinition receives it (for request-shape checks)."""
    return {
        "name": volume_name(model),
        "efsVolumeConfiguration": {
            "fileSystemId": file_system_id,
            "transitEncryption": "ENABLED",
            "authorizationConfig": {"accessPointId": access_point_id, "iam": "ENABLED"},
        },
    }


def mount_point(model: str) -> dict[str, object]:
    """The container's `mountPoints` entry: read-only (serving never writes weights)."""
    return {
        "sourceVolume": volume_name(model),
        "containerPath": container_path(model),
        "readOnly": True,
    }


def task_role_statement(file_system_arn: str, access_point_arn: str) -> dict[str, Any]:
    """Task-role permission to mount the weights read-only, only through the model's access
    point and a mount target (IAM authorisation is what `iam: ENABLED` checks)."""
    return {
        "Sid": "ReadModelWeightsOnEfs",
        "Effect": "Allow",
        "Action": ["elasticfilesystem:ClientMount"],
        "Resource": file_system_arn,
        "Condition": {
            "StringEquals": {"elasticfilesystem:AccessPointArn": access_point_arn},
            "Bool": {"elasticfilesystem:AccessedViaMountTarget": "true"},
        },
    }


def file_system_policy(file_system_arn: str) -> str:
    """Resource policy: deny every request not made over TLS."""
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Sid": "DenyUnencryptedTransport",
                    "Effect": "Deny",
                    "Principal": {"AWS": "*"},
                    "Action": "*",
                    "Resource": file_system_arn,
                    "Condition": {"Bool": {"aws:SecureTransport": "false"}},
                }
            ],
        },
        sort_keys=True,
    )


# --- API requests the provider makes (for botocore request-shape checks) -----------------------


def _tags(tags: Mapping[str, str] | None) -> list[dict[str, str]] | None:
    return [{"Key": k, "Value": v} for k, v in sorted(tags.items())] if tags else None


def create_file_system_request(inputs: Mapping[str, Any]) -> dict[str, Any]:
    """`efs:CreateFileSystem` from recorded `aws:efs/fileSystem` inputs."""
    request = {
        "CreationToken": inputs.get("creationToken"),
        "PerformanceMode": inputs.get("performanceMode"),
        "Encrypted": inputs.get("encrypted"),
        "KmsKeyId": inputs.get("kmsKeyId"),
        "ThroughputMode": inputs.get("throughputMode"),
        "ProvisionedThroughputInMibps": inputs.get("provisionedThroughputInMibps"),
        "Tags": _tags(inputs.get("tags")),
    }
    return {k: v for k, v in request.items() if v is not None}


def create_mount_target_request(inputs: Mapping[str, Any]) -> dict[str, Any]:
    """`efs:CreateMountTarget` from recorded `aws:efs/mountTarget` inputs."""
    request = {
        "FileSystemId": inputs.get("fileSystemId"),
        "SubnetId": inputs.get("subnetId"),
        "SecurityGroups": inputs.get("securityGroups"),
    }
    return {k: v for k, v in request.items() if v is not None}


def create_access_point_request(inputs: Mapping[str, Any]) -> dict[str, Any]:
    """`efs:CreateAccessPoint` from recorded `aws:efs/accessPoint` inputs."""
    posix = inputs.get("posixUser") or {}
    root = inputs.get("rootDirectory") or {}
    info = root.get("creationInfo") or {}
    request: dict[str, Any] = {
        "ClientToken": "pulumi-access-point",
        "FileSystemId": inputs.get("fileSystemId"),
        "Tags": _tags(inputs.get("tags")),
    }
    if posix:
        request["PosixUser"] = {"Uid": int(posix["uid"]), "Gid": int(posix["gid"])}
    if root:
        request["RootDirectory"] = {"Path": root.get("path")}
        if info:
            request["RootDirectory"]["CreationInfo"] = {
                "OwnerUid": int(info["ownerUid"]),
                "OwnerGid": int(info["ownerGid"]),
                "Permissions": info["permissions"],
            }
    return {k: v for k, v in request.items() if v is not None}


# --- the component -------------------------------------------------------------------------------


@dataclass
class WeightFileSystemArgs:
    """Inputs of `WeightFileSystem`.

    Required: `vpc_id`, `subnet_ids` (the private subnets, one per Availability Zone),
    `access_points` (model name → absolute directory on the file system).
    Defaults: `throughput_mode` "elastic", `provisioned_mib_per_second` None (required when
    `throughput_mode` is "provisioned"), `kms_key_id` None (the AWS-managed EFS key),
    `tags` {}.
    """

    vpc_id: Input[str]
    subnet_ids: Sequence[Input[str]]
    access_points: Mapping[str, str]
    throughput_mode: str = "elastic"
    provisioned_mib_per_second: float | None = None
    kms_key_id: Input[str] | None = None
    tags: Mapping[str, str] = field(default_factory=dict)


def check_args(name: str, args: WeightFileSystemArgs) -> None:
    """Validate plain values before any child is created (errors name the store)."""
    where = f"platform.weightStores.{name}"
    if not args.subnet_ids:
        raise EfsConfigError(f"{where}: needs at least one private subnet for a mount target")
    if args.throughput_mode not in ("elastic", "provisioned"):
        raise EfsConfigError(
            f"{where}.throughputMode: {args.throughput_mode!r} must be elastic or provisioned "
            "(bursting ties throughput to the data stored)"
        )
    provisioned = args.provisioned_mib_per_second
    if (args.throughput_mode == "provisioned") != (provisioned is not None):
        raise EfsConfigError(
            f"{where}.provisionedMibPerSecond: give it exactly when throughputMode is provisioned"
        )
    low, high = aws_limits.EFS_PROVISIONED_MIBPS_RANGE
    if provisioned is not None and not low <= provisioned <= high:
        raise EfsConfigError(f"{where}.provisionedMibPerSecond: {provisioned} outside {low}-{high}")
    for model, path in args.access_points.items():
        parse_efs_uri(f"{SCHEME}{name}{path}", f"{where} (model {model})", [name])


class WeightFileSystem(pulumi.ComponentResource):
    """A stack-managed EFS file system for model weights (see the module docstring)."""

    file_system: aws.efs.FileSystem
    client_security_group: aws.ec2.SecurityGroup
    mount_security_group: aws.ec2.SecurityGroup
    mount_targets: list[aws.efs.MountTarget]
    access_points: dict[str, aws.efs.AccessPoint]

    def __init__(
        self, name: str, args: WeightFileSystemArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        check_args(name, args)
        super().__init__(TOKEN, name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        tags = {**args.tags, "Name": f"{name}-weights"}
        self.file_system = aws.efs.FileSystem(
            f"{name}-fs",
            encrypted=True,
            kms_key_id=args.kms_key_id,
            performance_mode="generalPurpose",
            throughput_mode=args.throughput_mode,
            provisioned_throughput_in_mibps=args.provisioned_mib_per_second,
            tags=tags,
            opts=child,
        )
        aws.efs.FileSystemPolicy(
            f"{name}-tls-only",
            file_system_id=self.file_system.id,
            policy=self.file_system.arn.apply(file_system_policy),
            opts=child,
        )
        self.mount_security_group = aws.ec2.SecurityGroup(
            f"{name}-mounts",
            description=f"{name} EFS mount targets: NFS from weight clients only",
            vpc_id=args.vpc_id,
            tags=args.tags,
            opts=child,
        )
        self.client_security_group = aws.ec2.SecurityGroup(
            f"{name}-clients",
            description=f"tasks reading weights from {name}: NFS to its mount targets only",
            vpc_id=args.vpc_id,
            tags=args.tags,
            opts=child,
        )
        # The rules are separate resources because each names the other group; the groups
        # themselves declare no inline rules (the provider would then delete the separate ones
        # on every update) and the provider removes AWS's default allow-all egress on create.
        aws.vpc.SecurityGroupIngressRule(
            f"{name}-nfs-in",
            security_group_id=self.mount_security_group.id,
            referenced_security_group_id=self.client_security_group.id,
            ip_protocol="tcp",
            from_port=NFS_PORT,
            to_port=NFS_PORT,
            description="NFS from tasks that read weights",
            opts=child,
        )
        aws.vpc.SecurityGroupEgressRule(
            f"{name}-nfs-out",
            security_group_id=self.client_security_group.id,
            referenced_security_group_id=self.mount_security_group.id,
            ip_protocol="tcp",
            from_port=NFS_PORT,
            to_port=NFS_PORT,
            description="NFS to the weight file system's mount targets",
            opts=child,
        )
        self.mount_targets = [
            aws.efs.MountTarget(
                f"{name}-mount-{index}",
                file_system_id=self.file_system.id,
                subnet_id=subnet,
                security_groups=[self.mount_security_group.id],
                opts=child,
            )
            for index, subnet in enumerate(args.subnet_ids)
        ]
        self.access_points = {
            model: aws.efs.AccessPoint(
                f"{name}-{model}",
                file_system_id=self.file_system.id,
                posix_user=aws.efs.AccessPointPosixUserArgs(uid=POSIX_ID, gid=POSIX_ID),
                root_directory=aws.efs.AccessPointRootDirectoryArgs(
                    path=path,
                    creation_info=aws.efs.AccessPointRootDirectoryCreationInfoArgs(
                        owner_uid=POSIX_ID, owner_gid=POSIX_ID, permissions="0755"
                    ),
                ),
                tags={**args.tags, "Name": f"{name}-{model}"},
                # a task can mount only once the mount targets exist
                opts=pulumi.ResourceOptions(parent=self, depends_on=list(self.mount_targets)),
            )
            for model, path in sorted(args.access_points.items())
        }
        self.register_outputs(
            {
                "fileSystemId": self.file_system.id,
                "clientSecurityGroupId": self.client_security_group.id,
                "accessPointIds": {m: ap.id for m, ap in self.access_points.items()},
            }
        )
