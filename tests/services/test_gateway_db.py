"""GatewayDatabase under mocks: private, encrypted, password managed by RDS, gateway-only."""

from __future__ import annotations

import pytest

from ecs_inference.services.gateway_db import GatewayDatabase, GatewayDatabaseArgs
from tests.aws_shapes import UNKNOWN, validate_shape
from tools.recording import Recording, run_function


def record(**overrides) -> Recording:
    settings = {
        "vpc_id": "vpc-0abc",
        "subnet_ids": ["subnet-a", "subnet-b"],
        "gateway_security_group_id": "sg-gateway",
    }
    settings.update(overrides)
    return run_function(lambda: GatewayDatabase("gw-db", GatewayDatabaseArgs(**settings)))


def test_cluster_is_encrypted_private_and_never_sees_a_password():
    rec = record()
    cluster = rec.one("aws:rds/cluster:Cluster").inputs
    assert cluster["storageEncrypted"] is True
    assert cluster["manageMasterUserPassword"] is True and "masterPassword" not in cluster
    assert cluster["deletionProtection"] is True and cluster["skipFinalSnapshot"] is False
    scaling = cluster["serverlessv2ScalingConfiguration"]
    request = {
        "DBClusterIdentifier": "gw-db-cluster-abc1234",
        "Engine": cluster["engine"],
        "EngineVersion": cluster["engineVersion"],
        "EngineMode": cluster["engineMode"],
        "DatabaseName": cluster["databaseName"],
        "MasterUsername": cluster["masterUsername"],
        "ManageMasterUserPassword": True,
        "StorageEncrypted": True,
        "EnableIAMDatabaseAuthentication": True,
        "DeletionProtection": True,
        "BackupRetentionPeriod": int(cluster["backupRetentionPeriod"]),
        "CopyTagsToSnapshot": True,
        "ServerlessV2ScalingConfiguration": {
            "MinCapacity": scaling["minCapacity"],
            "MaxCapacity": scaling["maxCapacity"],
        },
    }
    validate_shape("rds", "CreateDBCluster", request)
    instance = rec.one("aws:rds/clusterInstance:ClusterInstance").inputs
    assert instance["instanceClass"] == "db.serverless"
    assert instance["publiclyAccessible"] is False
    sg = rec.one("aws:ec2/securityGroup:SecurityGroup").inputs
    (rule,) = sg["ingress"]
    assert (rule["fromPort"], rule["securityGroups"]) == (5432, ["sg-gateway"])
    assert not sg.get("egress")
    subnets = rec.one("aws:rds/subnetGroup:SubnetGroup").inputs
    assert subnets["subnetIds"] == ["subnet-a", "subnet-b"]
    assert UNKNOWN not in (cluster["engine"], cluster["databaseName"])


def test_auto_pause_only_at_zero_capacity():
    paused = record(min_capacity_acu=0.0).one("aws:rds/cluster:Cluster").inputs
    assert paused["serverlessv2ScalingConfiguration"]["secondsUntilAutoPause"] == 300
    steady = record().one("aws:rds/cluster:Cluster").inputs
    assert "secondsUntilAutoPause" not in steady["serverlessv2ScalingConfiguration"]


@pytest.mark.parametrize(
    "overrides",
    [
        {"min_capacity_acu": 8.0, "max_capacity_acu": 4.0},
        {"max_capacity_acu": 512.0},
        {"backup_retention_days": 0},
    ],
)
def test_bad_capacity_or_retention_is_refused_before_anything_exists(overrides):
    errors: list[str] = []

    def program() -> None:
        try:
            GatewayDatabase("db", GatewayDatabaseArgs("vpc", ["s"], "sg", **overrides))
        except ValueError as exc:
            errors.append(str(exc))

    assert run_function(program).resources == [] and errors
