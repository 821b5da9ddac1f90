"""EFS: file systems, mount targets, access points and file system policies."""

from __future__ import annotations

from collections.abc import Iterable

from ecs_inference.contracts.aws_limits import EFS_ACCESS_POINT_PATH_MAX_DEPTH
from tools.aws_requests.registry import (
    ApiRequest,
    Inputs,
    as_int,
    drop_none,
    maps,
    rule,
    single,
    tags,
)
from tools.aws_shapes import UNKNOWN


@maps("aws:efs/fileSystem:FileSystem")
def _efs(i: Inputs, name: str | None) -> list[ApiRequest]:
    return [
        ApiRequest(
            "efs",
            "CreateFileSystem",
            drop_none(
                {
                    # The provider autonames the creation token (resource_overrides.go).
                    "CreationToken": i.get("creationToken") or name or UNKNOWN,
                    "PerformanceMode": i.get("performanceMode"),
                    "Encrypted": i.get("encrypted"),
                    "KmsKeyId": i.get("kmsKeyId"),
                    "ThroughputMode": i.get("throughputMode"),
                    "ProvisionedThroughputInMibps": i.get("provisionedThroughputInMibps"),
                    "AvailabilityZoneName": i.get("availabilityZoneName"),
                    "Tags": tags(i.get("tags")),
                }
            ),
        )
    ]


@maps("aws:efs/mountTarget:MountTarget")
def _efs_mount_target(i: Inputs, _name: str | None) -> list[ApiRequest]:
    return [
        ApiRequest(
            "efs",
            "CreateMountTarget",
            drop_none(
                {
                    "FileSystemId": i.get("fileSystemId"),
                    "SubnetId": i.get("subnetId"),
                    "IpAddress": i.get("ipAddress"),
                    "SecurityGroups": i.get("securityGroups"),
                }
            ),
        )
    ]


@maps("aws:efs/accessPoint:AccessPoint")
def _efs_access_point(i: Inputs, _name: str | None) -> list[ApiRequest]:
    posix = single(i.get("posixUser")) or {}
    root = single(i.get("rootDirectory")) or {}
    info = single(root.get("creationInfo")) or {}
    return [
        ApiRequest(
            "efs",
            "CreateAccessPoint",
            drop_none(
                {
                    # The provider sends an idempotency token of its own.
                    "ClientToken": "pulumi-access-point",
                    "FileSystemId": i.get("fileSystemId"),
                    "Tags": tags(i.get("tags")),
                    "PosixUser": drop_none(
                        {
                            "Uid": as_int(posix.get("uid")),
                            "Gid": as_int(posix.get("gid")),
                            "SecondaryGids": posix.get("secondaryGids"),
                        }
                    )
                    or None,
                    "RootDirectory": drop_none(
                        {
                            "Path": root.get("path"),
                            "CreationInfo": drop_none(
                                {
                                    "OwnerUid": as_int(info.get("ownerUid")),
                                    "OwnerGid": as_int(info.get("ownerGid")),
                                    "Permissions": info.get("permissions"),
                                }
                            )
                            or None,
                        }
                    )
                    or None,
                }
            ),
        )
    ]


@rule("aws:efs/accessPoint:AccessPoint")
def _efs_access_point_limits(i: Inputs, _name: str | None) -> Iterable[str]:
    # CreateAccessPoint: the root path has at most four subdirectories (its length, 100, is in
    # botocore's model).
    root = single(i.get("rootDirectory")) or {}
    path = root.get("path")
    if isinstance(path, str) and path != UNKNOWN:
        depth = len([p for p in path.split("/") if p])
        if depth > EFS_ACCESS_POINT_PATH_MAX_DEPTH:
            yield (
                f"rootDirectory.path {path!r} has {depth} directories; EFS allows at most "
                f"{EFS_ACCESS_POINT_PATH_MAX_DEPTH}"
            )


@maps("aws:efs/fileSystemPolicy:FileSystemPolicy")
def _efs_policy(i: Inputs, _name: str | None) -> list[ApiRequest]:
    return [
        ApiRequest(
            "efs",
            "PutFileSystemPolicy",
            drop_none(
                {
                    "FileSystemId": i.get("fileSystemId"),
                    "Policy": i.get("policy"),
                    "BypassPolicyLockoutSafetyCheck": i.get("bypassPolicyLockoutSafetyCheck"),
                }
            ),
        )
    ]
