"""`FargateService`: the base of the Fargate components (re-ranker, AI gateway, queue worker).

What the launch kind decides: FARGATE task definitions (awsvpc, on the Fargate grid, Linux on
the chosen architecture, ARM64 unless told otherwise) run by the FARGATE capacity provider, not
`launch_type`, so FARGATE_SPOT can be mixed in later without replacing the service (the cluster
associates FARGATE). Everything else is `EcsService`'s.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pulumi_aws as aws
from pulumi import Input

from ecs_inference.services.base import (
    EXECUTION_ROLE_DESCRIPTION,
    Balancing,
    ClusterWiring,
    Deployment,
    EcsService,
    Placement,
    TaskRole,
)
from ecs_inference.services.input import FargateServiceConfig
from ecs_inference.sizing.fargate import FargateSize

FARGATE = "FARGATE"


class FargateService(EcsService):
    """A service whose tasks run on Fargate; attributes as `EcsService`."""

    def _fargate_task(
        self,
        *,
        service: str,
        input: FargateServiceConfig[Any],
        size: FargateSize,
        task_role: TaskRole,
        execution_description: str = EXECUTION_ROLE_DESCRIPTION,
        exec_logging: bool | None = None,
    ) -> None:
        """The roles and a FARGATE task definition of the decided `size` for the input's
        `cpuArchitecture`, its execution role decrypting the input's secrets' KMS keys; see
        `EcsService._task`."""
        self._task(
            service=service,
            compatibility=FARGATE,
            cpu=size.cpu,
            memory_mib=size.memory_mib,
            task_role=task_role,
            runtime_platform=aws.ecs.TaskDefinitionRuntimePlatformArgs(
                cpu_architecture=input.cpu_architecture, operating_system_family="LINUX"
            ),
            secrets_kms_key_arns=input.kms_key_arns.secrets,
            execution_description=execution_description,
            exec_logging=exec_logging,
        )

    def _fargate_service(
        self,
        wiring: ClusterWiring,
        *,
        security_groups: Sequence[Input[str]],
        deployment: Deployment,
        balancing: Balancing | None = None,
        service_connect: aws.ecs.ServiceServiceConnectConfigurationArgs | None = None,
    ) -> aws.ecs.Service:
        """The service on the FARGATE capacity provider; see `EcsService._service`."""
        return self._service(
            cluster_arn=wiring.cluster_arn,
            subnet_ids=wiring.subnet_ids,
            security_groups=security_groups,
            placement=fargate_placement(),
            deployment=deployment,
            balancing=balancing,
            service_connect=service_connect,
        )


def fargate_placement(platform_version: str | None = None) -> Placement:
    """The FARGATE capacity provider, on `platform_version` (default None: unset)."""
    return Placement(capacity_provider=FARGATE, platform_version=platform_version)
