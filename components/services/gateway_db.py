"""GatewayDatabase: LiteLLM's PostgreSQL as Aurora Serverless v2, private and encrypted.

Only created when `gateway.database.enabled` (off by default): LiteLLM needs a database for
virtual keys, per-team budgets and rate limits, and spend logs. Creates, as children:
- a DB subnet group over the private subnets and a security group admitting PostgreSQL only
  from the gateway's tasks (no egress: the database initiates nothing);
- an Aurora PostgreSQL cluster (Serverless v2 scaling between `min_capacity_acu` and
  `max_capacity_acu`; 0 lets it pause when idle), storage encrypted, the master password
  generated and rotated by RDS in Secrets Manager (`manage_master_user_password`: no password ever
  passes through the program or its state), IAM authentication on, 7 days of backups, a final
  snapshot on deletion and deletion protection;
- one `db.serverless` writer instance.

`endpoint()` gives what the gateway's container needs (`DatabaseEndpoint` fields as Outputs):
the writer's host and port, the database name and the RDS-managed secret's ARN.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws
from pulumi import Input, Output

from ecs_inference.specs.gateway import GatewayDatabaseSpec

TOKEN = "ecs-inference:gateway:GatewayDatabase"
ENGINE = aws.rds.EngineType.AURORA_POSTGRESQL
POSTGRES_PORT = 5432
DATABASE_NAME = "litellm"
MASTER_USERNAME = "litellm_admin"


@dataclass(frozen=True, kw_only=True)
class GatewayDatabaseArgs(GatewayDatabaseSpec):
    """Inputs of `GatewayDatabase`: its spec (`components.specs.gateway.GatewayDatabaseSpec`)
    plus the wiring below."""

    vpc_id: Input[str]
    """VPC of the database security group."""
    subnet_ids: Input[Sequence[str]]
    """PRIVATE subnets of the cluster."""
    gateway_security_group_id: Input[str]
    """The only group admitted to PostgreSQL (the gateway's tasks)."""


@dataclass(frozen=True)
class DatabaseOutputs:
    """The gateway's view of the database: host, port, name, managed secret ARN, the cluster's
    ARN (the Data API's resource) and resource id (IAM's `rds-db:connect` resource)."""

    host: Output[str]
    port: int
    name: str
    secret_arn: Output[str]
    cluster_arn: Output[str]
    resource_id: Output[str]


def rds_identifier(name: str) -> str:
    """`<project>-<stack>-<name>`, lowercased, hyphens only, at most 50 characters (room for the
    `-writer` and `-final` suffixes under RDS's 63)."""
    raw = f"{pulumi.get_project()}-{pulumi.get_stack()}-{name}".lower()
    cleaned = re.sub(r"-{2,}", "-", re.sub(r"[^a-z0-9-]", "-", raw)).strip("-")
    if not cleaned or not cleaned[0].isalpha():
        cleaned = f"db-{cleaned}"
    return cleaned[:50].rstrip("-")


class GatewayDatabase(pulumi.ComponentResource):
    """Attributes: `subnet_group`, `security_group`, `cluster`, `instance`."""

    subnet_group: aws.rds.SubnetGroup
    """The private subnets of the cluster."""
    security_group: aws.ec2.SecurityGroup
    """PostgreSQL from the gateway's tasks only."""
    cluster: aws.rds.Cluster
    """The Aurora Serverless v2 PostgreSQL cluster (managed master secret)."""
    instance: aws.rds.ClusterInstance
    """Its serverless writer."""

    def __init__(
        self, name: str, args: GatewayDatabaseArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(TOKEN, name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        self.subnet_group = aws.rds.SubnetGroup(
            f"{name}-subnets",
            description="LiteLLM database: private subnets only",
            subnet_ids=args.subnet_ids,
            opts=child,
        )
        self.security_group = aws.ec2.SecurityGroup(
            f"{name}-db",
            description="LiteLLM database: PostgreSQL from the gateway tasks only",
            vpc_id=args.vpc_id,
            ingress=[
                aws.ec2.SecurityGroupIngressArgs(
                    description="Gateway tasks",
                    protocol="tcp",
                    from_port=POSTGRES_PORT,
                    to_port=POSTGRES_PORT,
                    security_groups=[args.gateway_security_group_id],
                )
            ],
            opts=child,
        )
        identifier = rds_identifier(name)
        self.cluster = aws.rds.Cluster(
            f"{name}-cluster",
            # The provider does not autoname RDS identifiers; a fixed, per-stack one is readable
            # in the console and the final snapshot's name can follow it.
            cluster_identifier=identifier,
            engine=ENGINE,
            engine_mode="provisioned",
            engine_version=args.engine_version,
            database_name=DATABASE_NAME,
            master_username=MASTER_USERNAME,
            manage_master_user_password=True,
            # LiteLLM logs in with IAM tokens, so nothing goes stale when RDS rotates the master
            # secret; the gateway's bootstrap creates that login through the Data API.
            iam_database_authentication_enabled=True,
            enable_http_endpoint=True,
            storage_encrypted=True,
            db_subnet_group_name=self.subnet_group.name,
            vpc_security_group_ids=[self.security_group.id],
            serverlessv2_scaling_configuration=aws.rds.ClusterServerlessv2ScalingConfigurationArgs(
                min_capacity=args.min_capacity_acu,
                max_capacity=args.max_capacity_acu,
                # Pausing only applies at 0 ACU; 5 minutes idle is Aurora's minimum.
                seconds_until_auto_pause=300 if args.min_capacity_acu == 0 else None,
            ),
            backup_retention_period=args.backup_retention_days,
            copy_tags_to_snapshot=True,
            deletion_protection=args.deletion_protection,
            skip_final_snapshot=False,
            final_snapshot_identifier=f"{identifier}-final",
            opts=child,
        )
        self.instance = aws.rds.ClusterInstance(
            f"{name}-writer",
            identifier=f"{identifier}-writer",
            cluster_identifier=self.cluster.id,
            instance_class="db.serverless",
            engine=ENGINE,
            engine_version=args.engine_version,
            db_subnet_group_name=self.subnet_group.name,
            publicly_accessible=False,
            opts=child,
        )
        self.register_outputs({"endpoint": self.cluster.endpoint})

    def endpoint(self) -> DatabaseOutputs:
        """Host, port, database name and the RDS-managed master secret's ARN."""
        return DatabaseOutputs(
            host=self.cluster.endpoint,
            port=POSTGRES_PORT,
            name=DATABASE_NAME,
            secret_arn=self.cluster.master_user_secrets.apply(_managed_secret_arn),
            cluster_arn=self.cluster.arn,
            resource_id=self.cluster.cluster_resource_id,
        )


def _managed_secret_arn(secrets: Sequence[aws.rds.outputs.ClusterMasterUserSecret] | None) -> str:
    # RDS returns the secret once the cluster exists with manage_master_user_password on.
    arn = secrets[0].secret_arn if secrets else None
    if not arn:
        raise ValueError("the Aurora cluster reported no managed master user secret")
    return arn
