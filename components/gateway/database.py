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
- one `db.serverless` writer instance;
- the bootstrap: a Lambda function with its own role (the Data API on this cluster, the master
  secret it reads, its log group) that creates LiteLLM's IAM login role, invoked once by
  `pulumi up` itself (`aws.lambda.Invocation`, again only when its input changes). The master
  user's grants stay with this one-off duty: the gateway's tasks, which serve requests, get
  only `rds-db:connect` as LiteLLM's user.

`GatewayDatabase(name, input, wiring)`: `input` is the gateway's `database` section
(`GatewayDatabaseConfig`), `wiring` the network and the gateway's group (`DatabaseWiring`).
`outputs()` gives what the gateway needs: the writer's host, the cluster's resource id, the
database's group and the bootstrap's invocation, which the gateway's service waits for.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws
from pulumi import Input, Output

from ecs_inference.arns import arn_of, aws_context
from ecs_inference.contracts import litellm
from ecs_inference.gateway.input import GatewayDatabaseConfig
from ecs_inference.gateway.litellm_config import (
    DATABASE_NAME,
    POSTGRES_PORT,
    database_bootstrap_policy,
)
from ecs_inference.iam import LAMBDA_PRINCIPAL, assume_role_policy

TOKEN = "ecs-inference:gateway:GatewayDatabase"
ENGINE = aws.rds.EngineType.AURORA_POSTGRESQL
MASTER_USERNAME = "litellm_admin"
ENGINE_VERSION = "16.6"
"""Aurora PostgreSQL version (16.6 supports auto-pause at 0 ACU)."""
BACKUP_RETENTION_DAYS = 7
"""Automated backups kept, in days (RDS allows 1-35)."""


@dataclass(frozen=True, kw_only=True)
class DatabaseWiring:
    """What the database takes from around it."""

    vpc_id: Input[str]
    """VPC of the database security group."""
    subnet_ids: Input[Sequence[str]]
    """PRIVATE subnets of the cluster."""
    gateway_security_group_id: Input[str]
    """The only group admitted to PostgreSQL (the gateway's tasks)."""
    deletion_protection: bool = True
    """RDS refuses to delete the cluster until this is turned off; default True."""


@dataclass(frozen=True)
class DatabaseOutputs:
    """The gateway's view of the database: its writer's host, the cluster's resource id (IAM's
    `rds-db:connect` resource) and the database's security group."""

    host: Output[str]
    resource_id: Output[str]
    security_group_id: Output[str]
    bootstrap: pulumi.Resource | None = None
    """What creates LiteLLM's login role (the gateway's service waits for it)."""


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
    bootstrap_role: aws.iam.Role
    """The bootstrap function's own role."""
    bootstrap_function: aws.lambda_.Function
    """Creates LiteLLM's IAM login role through the Data API."""
    bootstrap: aws.lambda_.Invocation
    """Its run by `pulumi up` (again when its input changes)."""

    def __init__(
        self,
        name: str,
        input: GatewayDatabaseConfig,
        wiring: DatabaseWiring,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__(TOKEN, name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        self.subnet_group = aws.rds.SubnetGroup(
            f"{name}-subnets",
            description="LiteLLM database: private subnets only",
            subnet_ids=wiring.subnet_ids,
            opts=child,
        )
        self.security_group = aws.ec2.SecurityGroup(
            f"{name}-db",
            description="LiteLLM database: PostgreSQL from the gateway tasks only",
            vpc_id=wiring.vpc_id,
            ingress=[
                aws.ec2.SecurityGroupIngressArgs(
                    description="Gateway tasks",
                    protocol="tcp",
                    from_port=POSTGRES_PORT,
                    to_port=POSTGRES_PORT,
                    security_groups=[wiring.gateway_security_group_id],
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
            engine_version=ENGINE_VERSION,
            database_name=DATABASE_NAME,
            master_username=MASTER_USERNAME,
            manage_master_user_password=True,
            # LiteLLM logs in with IAM tokens, so nothing goes stale when RDS rotates the master
            # secret; the bootstrap function creates that login through the Data API.
            iam_database_authentication_enabled=True,
            enable_http_endpoint=True,
            storage_encrypted=True,
            db_subnet_group_name=self.subnet_group.name,
            vpc_security_group_ids=[self.security_group.id],
            serverlessv2_scaling_configuration=aws.rds.ClusterServerlessv2ScalingConfigurationArgs(
                min_capacity=input.min_capacity_acu,
                max_capacity=input.max_capacity_acu,
                # Pausing only applies at 0 ACU; 5 minutes idle is Aurora's minimum.
                seconds_until_auto_pause=300 if input.min_capacity_acu == 0 else None,
            ),
            backup_retention_period=BACKUP_RETENTION_DAYS,
            copy_tags_to_snapshot=True,
            deletion_protection=wiring.deletion_protection,
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
            engine_version=ENGINE_VERSION,
            db_subnet_group_name=self.subnet_group.name,
            publicly_accessible=False,
            opts=child,
        )
        self._bootstrap(name, identifier)
        self.register_outputs({"endpoint": self.cluster.endpoint})

    def _bootstrap(self, name: str, identifier: str) -> None:
        """The one-off function that creates LiteLLM's login role, its role, log group and run."""
        child = pulumi.ResourceOptions(parent=self)
        ctx = aws_context(self)
        function_name = f"{identifier}-bootstrap"
        logs = aws.cloudwatch.LogGroup(
            f"{name}-bootstrap-logs",
            name=f"/aws/lambda/{function_name}",
            retention_in_days=BOOTSTRAP_LOG_RETENTION_DAYS,
            opts=child,
        )
        self.bootstrap_role = aws.iam.Role(
            f"{name}-bootstrap",
            description="LiteLLM database bootstrap: create its login role as the master user",
            assume_role_policy=ctx.account_id.apply(
                lambda account: assume_role_policy(LAMBDA_PRINCIPAL, account_id=account)
            ),
            opts=child,
        )
        secret_arn = self.cluster.master_user_secrets.apply(_managed_secret_arn)
        grant = aws.iam.RolePolicy(
            f"{name}-bootstrap",
            role=self.bootstrap_role.name,
            policy=Output.all(
                cluster_arn=self.cluster.arn, secret_arn=secret_arn, log_group_arn=arn_of(logs, ctx)
            ).apply(lambda a: database_bootstrap_policy(**a)),
            opts=child,
        )
        self.bootstrap_function = aws.lambda_.Function(
            f"{name}-bootstrap",
            name=function_name,
            description="Creates LiteLLM's IAM login role in its database (Data API)",
            runtime=litellm.BOOTSTRAP_RUNTIME,
            handler=litellm.BOOTSTRAP_HANDLER,
            code=pulumi.AssetArchive(
                {
                    litellm.BOOTSTRAP_HANDLER_FILE: pulumi.StringAsset(
                        litellm.BOOTSTRAP_HANDLER_SOURCE
                    )
                }
            ),
            role=self.bootstrap_role.arn,
            timeout=litellm.BOOTSTRAP_TIMEOUT_SECONDS,
            architectures=["arm64"],
            opts=pulumi.ResourceOptions(parent=self, depends_on=[logs]),
        )
        event = Output.all(cluster_arn=self.cluster.arn, secret_arn=secret_arn).apply(
            lambda a: litellm.bootstrap_event(
                **a, database=DATABASE_NAME, user=litellm.DATABASE_IAM_USER
            )
        )
        # The Data API answers once the writer exists; the grant must exist before the run.
        self.bootstrap = aws.lambda_.Invocation(
            f"{name}-bootstrap",
            function_name=self.bootstrap_function.name,
            input=event,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[grant, self.instance]),
        )

    def outputs(self) -> DatabaseOutputs:
        """What the gateway needs of the database."""
        return DatabaseOutputs(
            host=self.cluster.endpoint,
            resource_id=self.cluster.cluster_resource_id,
            security_group_id=self.security_group.id,
            bootstrap=self.bootstrap,
        )


BOOTSTRAP_LOG_RETENTION_DAYS = 30
"""How long the bootstrap's runs stay readable (one line per run)."""


def _managed_secret_arn(secrets: Sequence[aws.rds.outputs.ClusterMasterUserSecret] | None) -> str:
    # RDS returns the secret once the cluster exists with manage_master_user_password on.
    arn = secrets[0].secret_arn if secrets else None
    if not arn:
        raise ValueError("the Aurora cluster reported no managed master user secret")
    return arn
