"""RDS (Aurora): subnet groups, clusters and cluster instances."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from tools.aws_requests.registry import ApiRequest, Inputs, drop_none, maps, rule, single, tags


@maps("aws:rds/subnetGroup:SubnetGroup")
def _db_subnet_group(i: Inputs, name: str | None) -> list[ApiRequest]:
    return [
        ApiRequest(
            "rds",
            "CreateDBSubnetGroup",
            drop_none(
                {
                    "DBSubnetGroupName": name,
                    # The provider fills "Managed by Pulumi"; the API requires a description.
                    "DBSubnetGroupDescription": i.get("description") or "Managed by Pulumi",
                    "SubnetIds": i.get("subnetIds"),
                    "Tags": tags(i.get("tags")),
                }
            ),
        )
    ]


@maps("aws:rds/cluster:Cluster")
def _db_cluster(i: Inputs, name: str | None) -> list[ApiRequest]:
    scaling = single(i.get("serverlessv2ScalingConfiguration"))
    return [
        ApiRequest(
            "rds",
            "CreateDBCluster",
            drop_none(
                {
                    "DBClusterIdentifier": name,
                    "Engine": i.get("engine"),
                    "EngineVersion": i.get("engineVersion"),
                    "EngineMode": i.get("engineMode"),
                    "DatabaseName": i.get("databaseName"),
                    "MasterUsername": i.get("masterUsername"),
                    "MasterUserPassword": i.get("masterPassword"),
                    "ManageMasterUserPassword": i.get("manageMasterUserPassword"),
                    "StorageEncrypted": i.get("storageEncrypted"),
                    "KmsKeyId": i.get("kmsKeyId"),
                    "EnableIAMDatabaseAuthentication": i.get("iamDatabaseAuthenticationEnabled"),
                    "DeletionProtection": i.get("deletionProtection"),
                    "BackupRetentionPeriod": i.get("backupRetentionPeriod"),
                    "CopyTagsToSnapshot": i.get("copyTagsToSnapshot"),
                    "DBSubnetGroupName": i.get("dbSubnetGroupName"),
                    "VpcSecurityGroupIds": i.get("vpcSecurityGroupIds"),
                    "ServerlessV2ScalingConfiguration": drop_none(
                        {
                            "MinCapacity": scaling.get("minCapacity"),
                            "MaxCapacity": scaling.get("maxCapacity"),
                            "SecondsUntilAutoPause": scaling.get("secondsUntilAutoPause"),
                        }
                    )
                    if isinstance(scaling, Mapping)
                    else None,
                    "Tags": tags(i.get("tags")),
                }
            ),
        )
    ]


@rule("aws:rds/cluster:Cluster")
def _db_cluster_limits(i: Inputs, _name: str | None) -> Iterable[str]:
    # CreateDBCluster: a managed password and an explicit one exclude each other; a final
    # snapshot needs its identifier unless skipped.
    if i.get("manageMasterUserPassword") and i.get("masterPassword") is not None:
        yield "manageMasterUserPassword and masterPassword cannot both be set"
    if i.get("skipFinalSnapshot") is False and not i.get("finalSnapshotIdentifier"):
        yield "skipFinalSnapshot false needs finalSnapshotIdentifier"
    scaling = single(i.get("serverlessv2ScalingConfiguration"))
    if isinstance(scaling, Mapping):
        lo, hi = scaling.get("minCapacity"), scaling.get("maxCapacity")
        if isinstance(lo, (int, float)) and isinstance(hi, (int, float)) and lo > hi:
            yield f"serverless v2 minCapacity {lo} is above maxCapacity {hi}"


@maps("aws:rds/clusterInstance:ClusterInstance")
def _db_cluster_instance(i: Inputs, name: str | None) -> list[ApiRequest]:
    return [
        ApiRequest(
            "rds",
            "CreateDBInstance",
            drop_none(
                {
                    "DBInstanceIdentifier": name,
                    "DBClusterIdentifier": i.get("clusterIdentifier"),
                    "DBInstanceClass": i.get("instanceClass"),
                    "Engine": i.get("engine"),
                    "EngineVersion": i.get("engineVersion"),
                    "DBSubnetGroupName": i.get("dbSubnetGroupName"),
                    "PubliclyAccessible": i.get("publiclyAccessible"),
                    "Tags": tags(i.get("tags")),
                }
            ),
        )
    ]
