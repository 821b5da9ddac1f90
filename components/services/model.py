"""ModelService: one LLM served by a registered engine (`components.engines`) on ECS.

Creates, for one service behind the authenticated Endpoint:
- a log group with retention;
- an execution role (pull the image from its ECR repository, write this log group, read exactly
  the container's Secrets Manager secrets) and a task role that can only read the weights
  prefix in S3 (documents in `components.iam`);
- an EC2 task definition in awsvpc mode whose single container is launched as the engine's
  launch describes (environment, command, port), with GPU `resourceRequirements`
  equal to the launch's GPUs or the Neuron devices mapped through
  `linuxParameters.devices` (Neuron devices are not an ECS resource type), shared memory for
  NCCL, no container health check (the ALB's health check decides);
- a task security group admitting only the ALB on the container port, egress HTTPS only;
- an ip target group health-checking the engine's `/health`, with a deregistration delay that
  lets the longest stream finish, and the endpoint's listener rules for it (`router.route`);
- the ECS service on the pool's capacity provider, created after the rules attach the target
  group to the ALB (ECS rejects a target group that belongs to no load balancer), with a
  circuit breaker that rolls back, a grace period covering image pull + weight load + warm-up;
- target-tracking autoscaling on ALBRequestCountPerTarget (scale out fast, scale in slow).

All numbers arrive already decided by the plan (`components.plan`); this module validates
their consistency before creating anything. Pure parts (validation, the container definition)
are plain functions tested without mocks. The resource sequence around the task, shared with
`FargateReranker`, is `components._ecs_service.LoadBalancedService`; the argument checks and
container pieces both services share (`validate_common`, `log_configuration`, ...) live here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_aws as aws
from pulumi import Input

from ecs_inference.contracts import neuron as neuron_contract
from ecs_inference.engines import Launch
from ecs_inference.services.base import (
    TARGET_TRACKING_METRIC,
    EfsAccess,
    LoadBalancedService,
    PlacementSpec,
    ServiceWiring,
    TaskSpec,
    environment_list,
    log_group_name,
    metrics_sidecar_fields,
    secrets_list,
    serving_container,
)
from ecs_inference.specs import weights as weights_spec
from ecs_inference.specs.service import ModelServiceSpec, validate_model_service

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


class ModelService(LoadBalancedService):
    """One model behind the endpoint. Attributes: `log_group`, `execution_role`, `task_role`,
    `task_definition`, `security_group`, `target_group`, `listener_rules`, `service`,
    `scaling_target`, `scaling_policy`, `container_definitions` (Output of the JSON string)."""

    def __init__(
        self, name: str, args: ModelServiceArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        where = f"ModelService {args.service!r}"
        validate_model_service(where, args)
        super().__init__(TOKEN, name, None, opts)
        launch = args.launch
        devices = launch.device_paths(where, args.neuron_devices)
        if (args.efs_file_system is not None) != (args.weights_efs is not None):
            raise ValueError(f"{where}: weights on EFS need their EfsAccess wiring, and only then")
        # The sidecar's scrape spec knows only some engines' metric families; the plan turns
        # it off for the others.
        metrics = launch.metrics_target()
        if args.metrics_sidecar and metrics is None:
            raise ValueError(
                f"{where}: the metrics sidecar knows none of this engine's metric families; "
                "turn metrics_sidecar off for this engine"
            )
        group_name = log_group_name(args.service)
        sidecar: dict[str, Any] = {"sidecar": None, "sidecar_image": None}
        if metrics is not None:
            sidecar = metrics_sidecar_fields(
                args,
                enabled=args.metrics_sidecar,
                image=args.metrics_image,
                kind=metrics.kind,
                port=metrics.port,
                engine_container=CONTAINER_NAME,
                log_group=group_name,
            )
        self._create_service(
            name,
            args,
            bucket=args.weights_bucket,
            prefix=args.weights_prefix,
            task=TaskSpec(
                container_definitions=lambda region, image: model_container_definitions(
                    image=image,
                    launch=launch,
                    log_group_name=group_name,
                    region=region,
                    stream_prefix=args.service,
                    gpu_count=args.gpu_count,
                    neuron_devices=devices,
                    shm_size_mib=args.shm_size_mib,
                    stop_timeout_seconds=args.stop_timeout_seconds,
                    environment=args.environment,
                    secrets=args.secrets,
                    efs_model=args.service if args.weights_efs is not None else None,
                ),
                compatibility=args.compatibility,
                cpu=args.task_cpu,
                memory_mib=args.task_memory_mib,
                container_name=CONTAINER_NAME,
                port=launch.port,
                health_path=launch.health_path,
                efs=args.weights_efs,
                **sidecar,
            ),
            placement=PlacementSpec(
                capacity_provider=args.capacity_provider_name,
                placement_constraints=(
                    [aws.ecs.ServicePlacementConstraintArgs(type="distinctInstance")]
                    if args.one_task_per_instance
                    else None
                ),
                # Spread over AZs first (an AZ outage keeps capacity), then pack each instance's
                # memory so scarce accelerator instances are filled before new ones start.
                ordered_placement_strategies=[
                    aws.ecs.ServiceOrderedPlacementStrategyArgs(
                        type="spread", field="attribute:ecs.availability-zone"
                    ),
                    aws.ecs.ServiceOrderedPlacementStrategyArgs(type="binpack", field="memory"),
                ],
            ),
            scaling_metric=TARGET_TRACKING_METRIC,
            scaling_target=args.target_requests_per_target,
            scaling_configuration=args.scaling_configuration,
        )
