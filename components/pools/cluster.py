"""Cluster: the ECS cluster all pools and services join.

Creates the cluster with Container Insights (enhanced by default, which adds per-task and
per-container metrics) and ECS Exec audit logging to a dedicated log group, so that an
interactive session into a GPU task leaves a record.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

from ecs_inference.arns import arn_of, aws_context
from ecs_inference.pools.input import ClusterConfig

EXEC_LOG_RETENTION_DAYS = 365
"""Retention of the ECS Exec session log group, in days."""


@dataclass(frozen=True)
class ExecLogWiring:
    """What a `Cluster` takes besides its input: the name the stack gives its session log."""

    exec_log_group_name: str | None = None
    """Name of the ECS Exec log group (the task roles are scoped to it); None: auto-named."""


class Cluster(pulumi.ComponentResource):
    """An ECS cluster; `associate_capacity_providers` makes its one provider association."""

    cluster: aws.ecs.Cluster
    """The ECS cluster."""
    name: pulumi.Output[str]
    """Its name."""
    arn: pulumi.Output[str]
    """Its ARN, from its name (known at preview, so the services, rules and policies that name
    the cluster are too)."""
    exec_log_group: aws.cloudwatch.LogGroup | None
    """The ECS Exec session log; None without session logging."""

    def __init__(
        self,
        name: str,
        input: ClusterConfig | None = None,
        wiring: ExecLogWiring | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        """`input`: the cluster's section (default `ClusterConfig()`); sessions are logged only
        where ECS Exec is on."""
        super().__init__("ecs-inference:compute:Cluster", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        args = input or ClusterConfig()
        exec_log_group_name = (wiring or ExecLogWiring()).exec_log_group_name

        self.exec_log_group = None
        configuration = None
        if args.execute_command and args.execute_command_logging:
            self.exec_log_group = aws.cloudwatch.LogGroup(
                f"{name}-exec",
                name=exec_log_group_name,
                retention_in_days=EXEC_LOG_RETENTION_DAYS,
                opts=child,
            )
            configuration = aws.ecs.ClusterConfigurationArgs(
                execute_command_configuration=aws.ecs.ClusterConfigurationExecuteCommandConfigurationArgs(
                    logging="OVERRIDE",
                    log_configuration=aws.ecs.ClusterConfigurationExecuteCommandConfigurationLogConfigurationArgs(
                        # The explicit name when given (known at preview; the task roles are
                        # scoped to it); the cluster depends on the group either way.
                        cloud_watch_log_group_name=exec_log_group_name or self.exec_log_group.name,
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
            opts=pulumi.ResourceOptions.merge(
                child,
                pulumi.ResourceOptions(
                    depends_on=[self.exec_log_group] if self.exec_log_group else []
                ),
            ),
        )
        self.name = self.cluster.name
        self.arn = arn_of(self.cluster, aws_context(self))
        self.register_outputs({"name": self.name, "arn": self.arn})

    def associate_capacity_providers(
        self, providers: Sequence[aws.ecs.CapacityProvider], *, fargate: bool
    ) -> aws.ecs.ClusterCapacityProviders:
        """Associate every Auto Scaling group capacity provider with this cluster, in ONE resource.

        Managed Instances providers do not belong here: they are created inside their cluster
        (`CapacityProvider.cluster`), and PutClusterCapacityProviders rejects them with
        InvalidParameterException.

        A cluster has exactly one capacity-provider association (a second
        `ClusterCapacityProviders` would overwrite the first on every `up`), so call this once
        with all pools; a second call raises RuntimeError. With `fargate` the list also holds
        FARGATE and FARGATE_SPOT, and the cluster's default strategy is FARGATE: a service that
        names no strategy then lands on cheap, isolated Fargate capacity instead of taking a
        slot on a GPU host, while accelerator services always name their own pool. Without
        `fargate` the default strategy is empty (such a service must say where it runs).

        The association depends on the providers explicitly, so it is created after them and,
        on delete or replacement, removed before them (ECS refuses to delete a provider that is
        still associated).
        """
        if getattr(self, "_capacity_association", None) is not None:
            raise RuntimeError(
                f"cluster {self.pulumi_resource_name!r} already has its capacity-provider "
                "association; pass every provider in one call"
            )
        names: list[pulumi.Input[str]] = [p.name for p in providers]
        strategies: list[aws.ecs.ClusterCapacityProvidersDefaultCapacityProviderStrategyArgs] = []
        if fargate:
            names += ["FARGATE", "FARGATE_SPOT"]
            strategies.append(
                aws.ecs.ClusterCapacityProvidersDefaultCapacityProviderStrategyArgs(
                    capacity_provider="FARGATE", weight=1, base=0
                )
            )
        self._capacity_association = aws.ecs.ClusterCapacityProviders(
            f"{self.pulumi_resource_name}-capacity-providers",
            cluster_name=self.cluster.name,
            capacity_providers=names,
            default_capacity_provider_strategies=strategies,
            opts=pulumi.ResourceOptions(parent=self, depends_on=list(providers)),
        )
        return self._capacity_association
