"""ModelService: one LLM served by a registered engine (`components.engines`) on a pool.

It decides its own fit, task size and timeouts from its input (`components.models.decisions`),
then builds on `EcsService`: a task definition of EC2 or MANAGED_INSTANCES compatibility on
the pool's capacity provider (spread over Availability Zones, packed by memory), the engine's
container (environment, command, port and health path from the engine's launch, whatever the
engine; GPU `resourceRequirements` from the decided fit, or the Neuron devices mapped
through `linuxParameters.devices`, since Neuron devices are not an ECS resource type; shared
memory for NCCL; no container health check: the ALB's decides), a task role that can only read
the weights (one S3 prefix, or an EFS access point), the metrics sidecar for engines whose
metric families it knows (`Launch.metrics_target`), and target tracking on the engine's load or
ALBRequestCountPerTarget. The container definition is a plain function, tested without mocks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

import pulumi
import pulumi_aws as aws
from pulumi import Input

from ecs_inference import ledger
from ecs_inference.config.issues import Issues
from ecs_inference.contracts import neuron as neuron_contract
from ecs_inference.engines import Launch
from ecs_inference.engines.base import Fit, reserved_gpus
from ecs_inference.models.decisions import (
    MANAGED_INSTANCES_DEPLOY,
    ModelDecisions,
    ModelInputs,
    decide,
    fit_on_types,
    model_path,
)
from ecs_inference.models.decisions import (  # a program names its placement and routes
    Placement as Placement,
)
from ecs_inference.models.decisions import routes as routes
from ecs_inference.models.input import ModelConfig, scaling_metric_problem
from ecs_inference.pools.decisions import AsgPoolDecisions
from ecs_inference.services.base import (
    ALB_REQUESTS_METRIC,
    Balancing,
    EcsService,
    EfsAccess,
    PlacedWiring,
    metrics_sidecar,
    weights_task_role,
)
from ecs_inference.services.base import Placement as TaskPlacement
from ecs_inference.services.containers import container_definition
from ecs_inference.sizing.headroom import DeployChoice, RolloutRoom, choose_deploy
from ecs_inference.sizing.instance_types import PoolTypes
from ecs_inference.storage import efs as weights_spec

TOKEN = "ecs-inference:serving:ModelService"
CONTAINER_NAME = "engine"
"""Name of the serving container (the target group registers this container's port)."""


class ModelPool(Protocol):
    """What a model service takes from its pool (`GpuAsgPool`, `InferentiaPool` or
    `ManagedInstancesPool`)."""

    @property
    def capacity_provider_name(self) -> Input[str]:
        """The capacity provider its tasks are placed with."""
        ...

    @property
    def instance_types(self) -> tuple[str, ...]:
        """The instance types the pool launches, in priority order."""
        ...

    @property
    def decided(self) -> AsgPoolDecisions | None:
        """The Auto Scaling group pool as decided (its input, warm pool pre-pull); None on
        Managed Instances."""
        ...


@dataclass(frozen=True, kw_only=True)
class ModelWiring(PlacedWiring):
    """What a model service takes from around it besides its input: what every placed service
    takes (`PlacedWiring`: the engine image, its placement), its pool and its weights' file
    system; the placement's deploy defaults to that of a service alone on its pool."""

    pool: ModelPool
    """The pool it runs on: its capacity provider, and the instance types it is sized on."""
    weights_efs: EfsAccess | None = None
    """Weights on EFS (default None: S3, or none): volume, mount right and client group."""


def _deploy(model: ModelConfig, wiring: ModelWiring, types: PoolTypes, name: str) -> DeployChoice:
    """The placement's deploy, else the one a pool holding this service alone leaves it."""
    if wiring.placement.deploy is not None:
        return wiring.placement.deploy
    pool = wiring.pool.decided
    if pool is None:
        return MANAGED_INSTANCES_DEPLOY
    per_instance = types.tasks_per_instance(name)
    return choose_deploy(
        model.min_count, model.max_count, per_instance, pool.input.max_size, model.desired_count
    )


def decide_service(
    name: str, model: ModelConfig, wiring: ModelWiring
) -> tuple[ModelDecisions, list[str]]:
    """The service's decisions and decision lines, decided from its input on its pool's instance
    types, as a stack's plan decides them. Raises `ConfigError` with every problem, each at
    the config path a stack file would name (`platform.models.<name>`)."""
    issues = Issues()
    path = model_path(name)
    placement = wiring.placement
    if (problem := scaling_metric_problem(model, placement.facts.metrics_sidecar)) is not None:
        issues.add(f"{path}.autoscaling.metric", problem)
    fitted = fit_on_types(name, model, wiring.pool.instance_types, issues)
    issues.raise_if_any()
    assert fitted is not None
    demand, types = fitted
    pool = wiring.pool.decided
    if model.rollout.native and pool is not None and placement.deploy is None:
        # Alone on its pool (a stack checks a shared pool in its plan).
        room = RolloutRoom(
            model.rollout.strategy,
            model.max_count,
            types.tasks_per_instance(name),
            pool.input.max_size,
        )
        if (problem := room.problem()) is not None:
            issues.add(f"{path}.rollout.strategy", problem)
    idle = placement.idle_timeout_seconds
    if idle is None:
        idle = wiring.router.idle_timeout_seconds
    image = wiring.image
    decided = decide(
        ModelInputs(
            name=name,
            model=model,
            demand=demand,
            types=types,
            managed=wiring.pool.decided is None,
            asg_pool=wiring.pool.decided,
            placement=replace(
                placement, idle_timeout_seconds=idle, deploy=_deploy(model, wiring, types, name)
            ),
            # An Output is the stack's own build: its digest reference is known at deploy time.
            image=image if isinstance(image, str) else None,
        ),
        issues,
    )
    if decided is not None and decided[0].metrics_sidecar and wiring.metrics_image is None:
        issues.add(
            path,
            "the metrics sidecar needs an image: give `ModelWiring.metrics_image`, or turn it "
            "off (`Placement(..., facts=StackFacts(metrics_sidecar=False))`) and scale on "
            "`albRequests`",
        )
    issues.raise_if_any()
    assert decided is not None
    return decided


# --------------------------------------------------------------------------------------------
# container definition (pure)
# --------------------------------------------------------------------------------------------


def model_container_definitions(
    *,
    image: str,
    launch: Launch,
    fit: Fit,
    log_group_name: str,
    region: str,
    stream_prefix: str,
    neuron_devices: Sequence[str] = (),
    shm_size_mib: int = 0,
    stop_timeout_seconds: int = 120,
    environment: Mapping[str, str] | None = None,
    secrets: Mapping[str, str] | None = None,
    efs_model: str | None = None,
) -> list[dict[str, Any]]:
    """The task's container definitions (a one-item list) for an EC2 model server.

    The GPUs reserved are the fit's (`reserved_gpus`: the tensor parallel size it chose, or the
    GPUs declared), the fit the launch was built on.
    Defaults: no Neuron devices, Docker's /dev/shm, 120 s stop timeout, no extra environment or
    secrets. There is deliberately no container `healthCheck`: the target
    group's `/health` check decides, and a second check would restart a task the ALB still
    drains.
    """
    # An init process reaps the engine's worker processes (vLLM spawns one per GPU, the Neuron
    # entrypoint runs engine + proxy) and forwards SIGTERM so draining starts on stop.
    linux: dict[str, Any] = {"initProcessEnabled": True}
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
    return [
        container_definition(
            name=CONTAINER_NAME,
            image=image,
            environment=launch.container_environment(region),
            extra_environment=environment,
            port_mappings=launch.port_mappings(),
            log_group_name=log_group_name,
            region=region,
            stream_prefix=stream_prefix,
            stop_timeout_seconds=stop_timeout_seconds,
            command=launch.container_command(),
            mount_points=[weights_spec.mount_point(efs_model)] if efs_model is not None else None,
            secrets=secrets,
            gpu_count=reserved_gpus(fit),
            linux_parameters=linux,
        )
    ]


def pool_placement(capacity_provider: Input[str], *, one_task_per_instance: bool) -> TaskPlacement:
    """The pool's capacity provider; with `one_task_per_instance`, ECS's distinctInstance."""
    return TaskPlacement(
        capacity_provider=capacity_provider,
        constraints=[aws.ecs.ServicePlacementConstraintArgs(type="distinctInstance")]
        if one_task_per_instance
        else None,
        # Spread over AZs first (an AZ outage keeps capacity), then pack each instance's memory
        # so scarce accelerator instances are filled before new ones start.
        strategies=[
            aws.ecs.ServiceOrderedPlacementStrategyArgs(
                type="spread", field="attribute:ecs.availability-zone"
            ),
            aws.ecs.ServiceOrderedPlacementStrategyArgs(type="binpack", field="memory"),
        ],
    )


# --------------------------------------------------------------------------------------------
# the component
# --------------------------------------------------------------------------------------------


class ModelService(EcsService):
    """One model behind the endpoint, on a pool's capacity provider; outputs as `EcsService`.

    `ModelService(name, input, wiring, opts=None)`: `input` is the model's `ModelConfig` (its
    stack-file section), `wiring` what it takes from around it (`ModelWiring`). It decides its
    fit, task size, timeouts and scaling itself (`decide_service`), with the errors a stack
    file gets, before it creates anything.
    """

    port: int
    """The engine's serving port (what the target group and the gateway reach)."""
    decided: ModelDecisions
    """What it decided: the fit, the engine's launch, task size, timeouts and deploy."""
    decisions: list[str]
    """The decision lines behind it (the preview prints them; a stack exports them)."""

    def __init__(
        self,
        name: str,
        input: ModelConfig,
        wiring: ModelWiring,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        self.decided, self.decisions = decide_service(wiring.service or name, input, wiring)
        decided = self.decided
        ledger.record_decisions(f"model {decided.service}", self.decisions)
        ledger.record_model(wiring.pool, decided.service, decided, input.engine)
        where = f"ModelService {decided.service!r}"
        launch = decided.launch
        if (decided.efs_file_system is not None) != (wiring.weights_efs is not None):
            raise ValueError(f"{where}: weights on EFS need their EfsAccess wiring, and only then")
        # The sidecar's scrape spec knows only some engines' metric families; the decisions
        # turn it off for the others.
        metrics = launch.metrics_target()
        super().__init__(TOKEN, name, opts)
        self.port = launch.port
        group = self._logs(decided.service, input.log_retention_days)
        sidecar = metrics_sidecar(
            decided,
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
                    fit=decided.fit,
                    log_group_name=group,
                    region=a[0],
                    stream_prefix=decided.service,
                    neuron_devices=decided.neuron_devices,
                    shm_size_mib=decided.shm_size_mib,
                    stop_timeout_seconds=decided.stop_timeout_seconds,
                    environment=input.environment,
                    secrets=decided.secret_refs,
                    efs_model=decided.service if wiring.weights_efs is not None else None,
                ),
                *sidecar(a[0], a[2]),
            ],
            wiring.image,
            wiring.metrics_image or "",
            service_connect=wiring.service_connect_namespace is not None,
            secret_arns=wiring.stack_secret_arns,
        )
        efs = wiring.weights_efs
        self._task(
            service=decided.service,
            compatibility=decided.compatibility,
            cpu=decided.task_cpu,
            memory_mib=decided.task_memory_mib,
            task_role=weights_task_role(
                self._ctx,
                bucket=decided.weights.bucket,
                prefix=decided.weights.prefix,
                efs=efs,
                kms_key_arn=input.kms_key_arns.weights,
                adapter_prefixes=launch.adapter_prefixes,
            ),
            volumes=[efs.volume] if efs else None,
            secrets_kms_key_arns=tuple(input.kms_key_arns.secrets),
            exec_logging=wiring.placement.facts.execute_command_logging
            if wiring.placement.facts.execute_command
            else None,
        )
        self._serve(
            decided,
            wiring,
            balancing=Balancing(CONTAINER_NAME, launch.port, launch.health_path),
            placement=pool_placement(
                wiring.pool.capacity_provider_name,
                one_task_per_instance=decided.one_task_per_instance,
            ),
            scaling_metric=ALB_REQUESTS_METRIC,
            scaling_target=input.autoscaling.target_requests_per_target,
            scaling_configuration=decided.scaling_configuration,
            extra_security_groups=[efs.client_security_group_id] if efs else (),
        )
