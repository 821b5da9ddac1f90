"""Weights on EFS: `efs://` URIs, the stack-managed file system and the task side.

The component runs under the recording mock runtime; its recorded inputs are mapped to the EFS
and ECS API requests they become and validated against botocore's service models.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pulumi
import pytest

import ecs_inference.storage.service as storage
from ecs_inference.storage import efs as efs
from ecs_inference.storage.decisions import WeightStoreUse
from ecs_inference.storage.input import WeightStoreConfig
from tests.aws_shapes import validate_named_shape, validate_shape
from tools.recording import run_function

WHERE = "platform.models.chat.weightsUri"
FS = "aws:efs/fileSystem:FileSystem"
MT = "aws:efs/mountTarget:MountTarget"
AP = "aws:efs/accessPoint:AccessPoint"
SG = "aws:ec2/securityGroup:SecurityGroup"
INGRESS = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"
EGRESS = "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule"
POLICY = "aws:efs/fileSystemPolicy:FileSystemPolicy"
SUBNETS = ["subnet-0aaa1111", "subnet-0bbb2222", "subnet-0ccc3333"]


USE = WeightStoreUse({"llama": "/models/llama-8b", "mistral": "/models/mistral"}, len(SUBNETS))


def weights(name: str = "weights", input: WeightStoreConfig | None = None, **use: Any):
    """A WeightFileSystem of `input` (default: the section's defaults), its use `USE` with
    `use`'s fields replaced."""
    wiring = storage.WeightStoreWiring(
        use=replace(USE, **use), vpc_id="vpc-0123", subnet_ids=SUBNETS, tags={"stack": "test"}
    )
    return storage.WeightFileSystem(name, input or WeightStoreConfig(), wiring)


# --- URIs --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("uri", "expected"),
    [
        ("efs://weights/models/llama", efs.EfsWeights("weights", "/models/llama")),
        ("efs://weights/models/llama/", efs.EfsWeights("weights", "/models/llama")),
        ("efs://fs-0123456789abcdef0/m", efs.EfsWeights("fs-0123456789abcdef0", "/m")),
    ],
)
def test_parse(uri, expected):
    parsed = efs.parse_efs_uri(uri, WHERE, ["weights"])
    assert parsed == expected
    assert parsed.managed is (not expected.file_system.startswith("fs-"))


@pytest.mark.parametrize(
    ("uri", "fragment"),
    [
        ("efs:///models/llama", "names no file system"),
        ("efs://other/models/llama", "neither an id (fs-...) nor one of this stack's weightStores"),
        ("efs://weights", "has no directory"),
        ("efs://weights/", "has no directory"),
        ("efs://weights/models/../etc", "no '..'"),
        ("efs://weights/a b", "letters, digits"),
        ("efs://weights/a/b/c/d/e", "4 directories deep"),
        ("efs://weights/" + "x" * 100, "at most 100 characters"),
        ("s3://bucket/x", "is not an efs:// URI"),
    ],
)
def test_bad_uris_name_the_config_path(uri, fragment):
    with pytest.raises(efs.EfsConfigError) as caught:
        efs.parse_efs_uri(uri, WHERE, ["weights"])
    assert str(caught.value).startswith(WHERE + ": ")
    assert fragment in str(caught.value)


def test_store_names_cannot_pose_as_ids():
    assert efs.check_store_name("weights", "platform.weightStores") == "weights"
    for bad in ("fs-0123456789", "W", "-x", "x" * 30):
        with pytest.raises(efs.EfsConfigError, match=r"^platform\.weightStores: "):
            efs.check_store_name(bad, "platform.weightStores")


# --- task side ----------------------------------------------------------------------------------


def test_task_volume_and_mount_validate_against_register_task_definition():
    volume = efs.task_volume_request("llama", "fs-0123456789abcdef0", "fsap-0123456789abcdef0")
    assert volume["efsVolumeConfiguration"]["transitEncryption"] == "ENABLED"
    assert volume["efsVolumeConfiguration"]["authorizationConfig"]["iam"] == "ENABLED"
    assert "rootDirectory" not in volume["efsVolumeConfiguration"]
    container = {
        "name": "engine",
        "image": "123456789012.dkr.ecr.us-east-1.amazonaws.com/sglang:v0.5.23",
        "mountPoints": [efs.mount_point("llama")],
        "environment": [{"name": "ENGINE_WEIGHTS_URI", "value": efs.container_path("llama")}],
    }
    assert container["mountPoints"][0]["readOnly"] is True
    validate_shape(
        "ecs",
        "RegisterTaskDefinition",
        {"family": "f", "containerDefinitions": [container], "volumes": [volume]},
    )


def test_task_volume_args_carry_the_same_settings():
    args_ = storage.task_volume("llama", "fs-1", "fsap-1")
    config = args_.efs_volume_configuration
    assert args_.name == efs.volume_name("llama")
    assert config.transit_encryption == "ENABLED"
    assert config.authorization_config.iam == "ENABLED"
    assert config.authorization_config.access_point_id == "fsap-1"


def test_task_role_statement_is_read_only_and_scoped_to_the_access_point():
    fs_arn = "arn:aws:elasticfilesystem:us-east-1:123456789012:file-system/fs-0123456789abcdef0"
    ap_arn = "arn:aws:elasticfilesystem:us-east-1:123456789012:access-point/fsap-0123456789abcdef0"
    statement = efs.task_role_statement(fs_arn, ap_arn)
    assert statement["Action"] == ["elasticfilesystem:ClientMount"]
    assert statement["Resource"] == fs_arn
    assert statement["Condition"]["StringEquals"]["elasticfilesystem:AccessPointArn"] == ap_arn
    document = json.dumps({"Version": "2012-10-17", "Statement": [statement]})
    validate_shape(
        "iam", "PutRolePolicy", {"RoleName": "r", "PolicyName": "p", "PolicyDocument": document}
    )
    policy = json.loads(efs.file_system_policy(fs_arn))
    (deny,) = policy["Statement"]
    assert deny["Effect"] == "Deny" and deny["Condition"]["Bool"]["aws:SecureTransport"] == "false"


# --- the component ------------------------------------------------------------------------------


def test_component_creates_an_encrypted_file_system_reachable_only_by_its_clients():
    rec = run_function(lambda: weights())
    fs = rec.one(FS)
    assert fs.inputs["encrypted"] is True
    assert fs.inputs["performanceMode"] == "generalPurpose"
    assert fs.inputs["throughputMode"] == "elastic"
    validate_shape(
        "efs",
        "CreateFileSystem",
        efs.create_file_system_request(fs.inputs) | {"CreationToken": "weights-fs-token"},
    )

    mounts = rec.by_type(MT)
    assert sorted(m.inputs["subnetId"] for m in mounts) == sorted(SUBNETS)
    for mount in mounts:
        validate_shape("efs", "CreateMountTarget", efs.create_mount_target_request(mount.inputs))

    groups = {g.name: g for g in rec.by_type(SG)}
    assert set(groups) == {"weights-mounts", "weights-clients"}
    # no inline rules: mixing them with the rule resources makes the provider delete the latter
    assert all("egress" not in g.inputs and "ingress" not in g.inputs for g in groups.values())
    (ingress,) = rec.by_type(INGRESS)
    (egress,) = rec.by_type(EGRESS)
    for rule in (ingress, egress):
        assert rule.inputs["fromPort"] == rule.inputs["toPort"] == efs.NFS_PORT
        assert rule.inputs["ipProtocol"] == "tcp"
        assert "cidrIpv4" not in rule.inputs  # from/to a security group only, never a CIDR
        assert rule.inputs["referencedSecurityGroupId"]

    points = {p.name: p for p in rec.by_type(AP)}
    assert set(points) == {"weights-llama", "weights-mistral"}
    llama = points["weights-llama"].inputs
    assert llama["rootDirectory"]["path"] == "/models/llama-8b"
    assert llama["posixUser"] == {"uid": efs.POSIX_ID, "gid": efs.POSIX_ID}
    for point in points.values():
        validate_shape("efs", "CreateAccessPoint", efs.create_access_point_request(point.inputs))

    (policy,) = rec.by_type(POLICY)
    assert "aws:SecureTransport" in policy.inputs["policy"]
    component = rec.one(storage.TOKEN)
    assert component.name == "weights"


def test_an_existing_file_system_gets_mounts_and_access_points_but_is_not_created():
    """`efs://fs-.../...`: the stack creates no file system and no policy of its own on it, and
    the ARN the task roles are granted is that file system's, in the stack's account and
    region."""
    existing = "fs-0123456789abcdef0"

    def program() -> None:
        store = weights(existing_file_system_id=existing)
        pulumi.export("arn", store.file_system_arn)
        pulumi.export("id", store.file_system_id)

    rec = run_function(program)
    assert not rec.by_type(FS) and not rec.by_type(POLICY)
    assert {m.inputs["fileSystemId"] for m in rec.by_type(MT)} == {existing}
    assert {p.inputs["fileSystemId"] for p in rec.by_type(AP)} == {existing}
    assert rec.outputs["id"] == existing
    assert rec.outputs["arn"] == (
        f"arn:aws:elasticfilesystem:us-east-1:123456789012:file-system/{existing}"
    )


def test_provisioned_throughput_reaches_the_request():
    rec = run_function(
        lambda: weights(
            input=WeightStoreConfig(throughput_mode="provisioned", provisioned_mib_per_second=256)
        )
    )
    request = efs.create_file_system_request(rec.one(FS).inputs)
    assert request["ProvisionedThroughputInMibps"] == 256
    validate_shape("efs", "CreateFileSystem", request | {"CreationToken": "t"})


def test_access_point_request_matches_the_named_shape():
    request = efs.create_access_point_request(
        {
            "fileSystemId": "fs-0123456789abcdef0",
            "posixUser": {"uid": 10001.0, "gid": 10001.0},
            "rootDirectory": {
                "path": "/models/x",
                "creationInfo": {"ownerUid": 10001.0, "ownerGid": 10001.0, "permissions": "0755"},
            },
        }
    )
    assert request["PosixUser"] == {"Uid": 10001, "Gid": 10001}
    validate_named_shape("efs", "RootDirectory", request["RootDirectory"])
