"""Cluster: the ECS cluster all pools and services join.

Creates the cluster with Container Insights (enhanced by default, which adds per-task and
per-container metrics) and ECS Exec audit logging to a dedicated log group, so that an
interactive session into a GPU task leaves a record.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_aws as aws


@dataclass(frozen=True)
class ClusterArgs:
    """Inputs of `Cluster`.

    container_insights: "enhanced", "enabled" or "disabled". Default "enhanced".
    execute_command_logging: log ECS Exec sessions to CloudWatch. Default True.
    exec_log_retention_days: retention of that log group. Default 365.
    """

    container_insights: str = "enhanced"
    execute_command_logging: bool = True
    exec_log_retention_days: int = 365


class Cluster(pulumi.ComponentResource):
    """An ECS cluster. Attributes: `cluster`, `name`, `arn`, `exec_log_group`."""

    def __init__(
        self, name: str, args: ClusterArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("ecs-inference:compute:Cluster", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)

        self.exec_log_group: aws.cloudwatch.LogGroup | None = None
        configuration = None
        if args.execute_command_logging:
            self.exec_log_group = aws.cloudwatch.LogGroup(
                f"{name}-exec",
                retention_in_days=args.exec_log_retention_days,
                opts=child,
            )
            configuration = aws.ecs.ClusterConfigurationArgs(
                execute_command_configuration=aws.ecs.ClusterConfigurationExecuteCommandConfigurationArgs(
                    logging="OVERRIDE",
                    log_configuration=aws.ecs.ClusterConfigurationExecuteCommandConfigurationLogConfigurationArgs(
                        cloud_watch_log_group_name=self.exec_log_group.name,
                        cloud_watch_encryption_enabled=False,
                    ),
                )
            )

        self.cluster = aws.ecs.Cluster(
            f"{name}-cluster",
            settings=[
                aws.ecs.ClusterSettingArgs(name="containerInsights", value=args.container_insights)
            ],
            configuration=configuration,
            opts=child,
        )
        self.name = self.cluster.name
        self.arn = self.cluster.arn
        self.register_outputs({"name": self.name, "arn": self.arn})
