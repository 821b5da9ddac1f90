"""Model weights on Amazon EFS, the pure half: `efs://` URIs and what a task needs to mount them.

`weightsUri: efs://<file-system>/<path>` names either an existing file system by id
(`efs://fs-0123456789abcdef0/models/llama`) or one the stack manages, by its `weightStores`
name (`efs://weights/models/llama`). The stack-managed file system itself is
`components.storage.service.WeightFileSystem`.

The task side: an EFS volume with transit encryption and IAM authorisation through the model's
access point, mounted read-only at `/mnt/efs/<model>`, and a task-role statement allowing
`elasticfilesystem:ClientMount` (read only: no ClientWrite, no ClientRootAccess) on the file
system, only through that access point and a mount target. No Pulumi import.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ecs_inference.contracts import aws_limits
from ecs_inference.iam import deny_insecure_transport

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
    deny = deny_insecure_transport("DenyUnencryptedTransport", "*", file_system_arn, {"AWS": "*"})
    return json.dumps({"Version": "2012-10-17", "Statement": [deny]}, sort_keys=True)


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
