"""ModelService: one LLM served by a registered engine (`components.engines`) on a pool.

On top of `PoolService` it adds the engine's container (environment, command, port and health
path from the engine's launch, whatever the engine; GPU `resourceRequirements` equal to the
launch's GPUs, or the Neuron devices mapped through `linuxParameters.devices`, since Neuron
devices are not an ECS resource type; shared memory for NCCL; no container health check: the
ALB's decides), a task role that can only read the weights (one S3 prefix, or an EFS access
point), the metrics sidecar for engines whose metric families it knows
(`Launch.metrics_target`), and target tracking on the engine's load or ALBRequestCountPerTarget.
The container definition is a plain function, tested without mocks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
from pulumi import Input

from ecs_inference.contracts import neuron as neuron_contract
from ecs_inference.engines import Launch
from ecs_inference.services.base import (
    ALB_REQUESTS_METRIC,
    Balancing,
    EfsAccess,
    ServiceWiring,
    metrics_sidecar,
    weights_task_role,
)
from ecs_inference.services.containers import environment_list, secrets_list, serving_container
from ecs_inference.services.ec2 import PoolService, pool_placement
from ecs_inference.specs import weights as weights_spec
from ecs_inference.specs.service import ModelServiceSpec

TOKEN = "ecs-inference:serving:ModelService"
CONTAINER_NAME = "engine"
"""Name of the serving container (the target group registers this container's port)."""


@dataclass(frozen=True, kw_only=True)
class ModelServiceArgs(ModelServiceSpec, ServiceWiring):
    """Inputs of `ModelService`: its spec (`components.specs.service.ModelServiceSpec`, built by
    the plan) plus the wiring (`ServiceWiring`, the pool's capacity provider, the image)."""

    image: Input[str]
    """Image reference, or the digest reference of the stack's own build."""
    capacity_provider_name: Input[str]
    """The pool's capacity provider."""
    weights_efs: EfsAccess | None = None
    """Weights on EFS (default None: S3, or none): volume, mount right and client group."""
    metrics_image: Input[str] | None = None
    """Metrics sidecar image (reference or the stack's build); needed with `metrics_sidecar`."""


# --------------------------------------------------------------------------------------------
# container definition (pure)
# --------------------------------------------------------------------------------------------


def model_container_definitions(
    *,
    image: str,
    launch: Launch,
    log_group_name: str,
    region: str,
    stream_prefix: str,
    gpu_count: int = 0,
    neuron_devices: Sequence[str] = (),
    shm_size_mib: int = 0,
    stop_timeout_seconds: int = 120,
    environment: Mapping[str, str] | None = None,
    secrets: Mapping[str, str] | None = None,
    efs_model: str | None = None,
) -> list[dict[str, Any]]:
    """The task's container definitions (a one-item list) for an EC2 model server.

    Defaults: no GPU, no Neuron devices, Docker's /dev/shm, 120 s stop timeout, no extra
    environment or secrets. There is deliberately no container `healthCheck`: the target
    group's `/health` check decides, and a second check would restart a task the ALB still
    drains.
    """
    command = launch.container_command()
    container = serving_container(
        name=CONTAINER_NAME,
        image=image,
        environment=environment_list(launch.container_environment(region), dict(environment or {})),
        port_mappings=launch.port_mappings(),
        log_group_name=log_group_name,
        region=region,
        stream_prefix=stream_prefix,
        stop_timeout_seconds=stop_timeout_seconds,
    )
    if command:
        container["command"] = command
    if efs_model is not None:
        container["mountPoints"] = [weights_spec.mount_point(efs_model)]
    if secrets:
        container["secrets"] = secrets_list(secrets)
    # An init process reaps the engine's worker processes (vLLM spawns one per GPU, the Neuron
    # entrypoint runs engine + proxy) and forwards SIGTERM so draining starts on stop.
    linux: dict[str, Any] = {"initProcessEnabled": True}
    if gpu_count:
        container["resourceRequirements"] = [{"type": "GPU", "value": str(gpu_count)}]
        # NCCL and CUDA IPC pin host memory; a capped memlock makes NCCL fail or fall back.
        container["ulimits"].append({"name": "memlock", "softLimit": -1, "hardLimit": -1})
    if shm_size_mib:
        linux["sharedMemorySize"] = shm_size_mib
    if neuron_devices:
        linux["devices"] = [
            {"hostPath": path, "containerPath": path, "permissions": ["read", "write"]}
            for path in neuron_devices
        ]
        # AWS's ECS Neuron task-definition example (developer guide, "Example Neuron task
        # definitions", manual device specification) adds IPC_LOCK next to the devices.
        linux["capabilities"] = {"add": list(neuron_contract.TASK_CAPABILITIES)}
    container["linuxParameters"] = linux
    return [container]


# --------------------------------------------------------------------------------------------
# the component
# --------------------------------------------------------------------------------------------


class ModelService(PoolService):
    """One model behind the endpoint, on a pool's capacity provider; outputs as `EcsService`."""

    port: int
    """The engine's serving port (what the target group and the gateway reach)."""

    def __init__(
        self, name: str, args: ModelServiceArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        where = f"ModelService {args.service!r}"
        launch = args.launch
        if (args.efs_file_system is not None) != (args.weights_efs is not None):
            raise ValueError(f"{where}: weights on EFS need their EfsAccess wiring, and only then")
        devices = launch.device_paths(where, args.neuron_devices)
        # The sidecar's scrape spec knows only some engines' metric families; the plan turns
        # it off for the others.
        metrics = launch.metrics_target()
        if args.metrics_sidecar and metrics is None:
            raise ValueError(
                f"{where}: the metrics sidecar knows none of this engine's metric families; "
                "turn metrics_sidecar off for this engine"
            )
        super().__init__(TOKEN, name, opts)
        self.port = launch.port
        group = self._logs(args.service, args.log_retention_days)
        sidecar = metrics_sidecar(
            args,
            kind=metrics.kind if metrics is not None else "",
            port=metrics.port if metrics is not None else launch.port,
            engine_container=CONTAINER_NAME,
            log_group=group,
        )
        self._containers(
            lambda a: [
                *model_container_definitions(
                    image=a[1],
                    launch=launch,
                    log_group_name=group,
                    region=a[0],
                    stream_prefix=args.service,
                    gpu_count=args.gpu_count,
                    neuron_devices=devices,
                    shm_size_mib=args.shm_size_mib,
                    stop_timeout_seconds=args.stop_timeout_seconds,
                    environment=args.environment,
                    secrets=args.secrets,
                    efs_model=args.service if args.weights_efs is not None else None,
                ),
                *sidecar(a[0], a[2]),
            ],
            args.image,
            args.metrics_image or "",
            service_connect=args.service_connect_namespace is not None,
            secret_arns=args.stack_secret_arns,
        )
        efs = args.weights_efs
        self._pool_task(
            service=args.service,
            compatibility=args.compatibility,
            cpu=args.task_cpu,
            memory_mib=args.task_memory_mib,
            task_role=weights_task_role(
                self._ctx,
                bucket=args.weights_bucket,
                prefix=args.weights_prefix,
                efs=efs,
                kms_key_arn=args.weights_kms_key_arn,
            ),
            volumes=[efs.volume] if efs else None,
            secrets_kms_key_arns=args.secrets_kms_key_arns,
            exec_logging=args.execute_command_logging if args.execute_command else None,
        )
        self._serve(
            args,
            args,
            balancing=Balancing(CONTAINER_NAME, launch.port, launch.health_path),
            placement=pool_placement(
                args.capacity_provider_name, one_task_per_instance=args.one_task_per_instance
            ),
            scaling_metric=ALB_REQUESTS_METRIC,
            scaling_target=args.target_requests_per_target,
            scaling_configuration=args.scaling_configuration,
            extra_security_groups=[efs.client_security_group_id] if efs else (),
        )
