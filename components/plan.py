"""The plan: every decision a stack's resources depend on, made before any resource exists.

`build_plan(config)` checks what the schema alone cannot — instance types that exist and match
their pool kind, models that fit their pool's accelerators, Neuron artifacts that fit their
instance, Fargate sizes on the grid, timeouts that cover the longest generation, deploys that
can make progress on scarce accelerators — and records each decision as a line the preview
prints and the stack exports. It raises one `ConfigError` with every problem, each naming the
config path to edit, so an invalid stack registers nothing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Literal

from ecs_inference import engines, iam, sizing
from ecs_inference.config.issues import ConfigError, ConfigIssue
from ecs_inference.config.models import ModelConfig
from ecs_inference.config.pools import ManagedInstancePoolConfig, PoolConfig
from ecs_inference.config.rerankers import RerankerConfig
from ecs_inference.config.stack import StackConfig, images_to_build
from ecs_inference.contracts import litellm
from ecs_inference.contracts import reranker as reranker_contract
from ecs_inference.engines import Engine, Launch
from ecs_inference.engines.base import EngineLaunchError, LaunchInputs, PresetError
from ecs_inference.sizing import catalog, instance_types
from ecs_inference.sizing import weights as weight_load
from ecs_inference.sizing.instance_types import (
    DeclaredDemand,
    DeclaredFit,
    DeclaredFitError,
    Demand,
    GpuDemand,
    PoolTypes,
)
from ecs_inference.specs import gateway as gateway_specs
from ecs_inference.specs import images as image_build
from ecs_inference.specs import managed_instances
from ecs_inference.specs import operations as ops_specs
from ecs_inference.specs import weights as efs
from ecs_inference.specs import worker as worker_specs
from ecs_inference.specs.endpoint import AuthSpec, EndpointSpec, endpoint_arg_issues
from ecs_inference.specs.managed_instances import ManagedInstancesArgs
from ecs_inference.specs.mixed_instances import MixedInstancesArgs, spot_interruption_notes
from ecs_inference.specs.pool import PoolSpec, WarmPoolSpec, pool_problems, provider_name_problems
from ecs_inference.specs.service import (
    ModelServiceSpec,
    RerankerSpec,
    ServiceArgsError,
    validate_model_service,
    validate_reranker,
)
from ecs_inference.specs.service_connect import private_host

# Name of the InferencePlatform component; pool, service and capacity-provider names derive
# from it.
PLATFORM_NAME = "inference"
# Listener rule priorities: each service takes two consecutive ones (bearer, browser); spacing
# them by 10 leaves room for hand-added rules between services.
PRIORITY_START, PRIORITY_STEP = 100, 10
# Each service takes two listener rules (bearer -> jwt-validation, browser -> Cognito); the ALB
# quota "Rules per Application Load Balancer" (default 100) is `endpoint.listenerRuleQuota`.
RULES_PER_SERVICE = 2
# Host memory ECS and the OS keep for themselves on an accelerator instance: the task
# reservation must stay below what the agent registers or the task never places.
HOST_MEMORY_RESERVE_FRACTION = 0.10
# Added to a service's longest request for its deregistration delay: the last response bytes,
# the client's read of them, and the ALB noticing the target is idle.
DEREGISTRATION_MARGIN_SECONDS = 15
# vLLM's engine core and tensor-parallel workers exchange tensors through /dev/shm.
SHM_SINGLE_GPU_MIB, SHM_PER_EXTRA_GPU_MIB, SHM_MAX_MIB = 2048, 2048, 16384


_SECTIONS = {"gpu": "gpuPools", "neuron": "neuronPools", "managed": "managedInstancePools"}


@dataclass(frozen=True)
class PoolPlan:
    """One pool: its config, and the instance types chosen for the models placed on it."""

    name: str
    kind: Literal["gpu", "neuron", "managed"]
    config: PoolConfig | ManagedInstancePoolConfig
    types: PoolTypes
    ami_parameter: str | None
    """SSM parameter of the ECS-optimized AMI; None on Managed Instances (ECS picks the OS)."""
    host_telemetry: bool = True
    """The CloudWatch agent on the pool's instances (Auto Scaling group pools only: Managed
    Instances run no user data)."""
    image_pull_behavior: Literal["default", "prefer-cached"] = "prefer-cached"
    prepull_images: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    """Decisions about the pool as a whole (pull behaviour, shared capacity, ENIs)."""

    @property
    def instance(self) -> catalog.InstanceType:
        """The cheapest (or first listed) type: what single-type decisions describe."""
        return self.types.cheapest

    @property
    def section(self) -> str:
        return _SECTIONS[self.kind]

    @property
    def managed(self) -> bool:
        return self.kind == "managed"

    @property
    def spec(self) -> PoolSpec:
        """What the Auto Scaling group pool component builds."""
        assert isinstance(self.config, PoolConfig), "a Managed Instances pool has no PoolSpec"
        return replace(
            pool_spec(self.config, self.types.chosen),
            host_telemetry_pool=self.name if self.host_telemetry else None,
            image_pull_behavior=self.image_pull_behavior,
            prepull_images=self.prepull_images,
        )

    @property
    def managed_options(self) -> ManagedInstancesArgs:
        """What the Managed Instances pool component builds (with `requirements`)."""
        assert isinstance(self.config, ManagedInstancePoolConfig)
        return managed_args(self.config)

    @property
    def requirements(self) -> instance_types.InstanceRequirements:
        """The Managed Instances `instanceRequirements` for the chosen types."""
        return instance_types.managed_instance_requirements(self.types)

    def decisions(self) -> list[str]:
        lines = self.types.summary()
        if self.managed:
            lines += [
                self.requirements.summary(),
                "Managed Instances: ECS picks and patches the OS image and replaces each host "
                f"within {managed_instances.MAX_INSTANCE_LIFETIME_DAYS} days (each replacement "
                "re-warms its models); idle hosts are kept "
                f"{self.managed_options.scale_in_after_seconds} s",
            ]
            return [*lines, *self.notes]
        lines.append(f"AMI from SSM {self.ami_parameter}")
        mixed = self.spec.mixed
        if mixed is not None:
            lines.append(
                f"mixed instances policy over {len(self.types.chosen)} type(s): On-Demand base "
                f"{mixed.on_demand_base_capacity}, {mixed.on_demand_percentage_above_base} % "
                f"On-Demand above it ({mixed.on_demand_allocation_strategy}), Spot "
                f"{mixed.spot_allocation_strategy}, capacity rebalance "
                f"{'on' if mixed.capacity_rebalance else 'off'}"
            )
        return [*lines, *self.notes]


@dataclass(frozen=True)
class DeployPlan:
    """ECS deployment percentages chosen for the pool's headroom, and what they do at each
    count autoscaling can reach (`steps`)."""

    minimum_healthy_percent: int
    maximum_percent: int
    note: str
    steps: tuple[sizing.DeployStep, ...] = ()


@dataclass(frozen=True)
class ModelPlan:
    name: str
    config: ModelConfig
    pool: PoolPlan
    image: str | None  # None: built by the stack (images.build), see Plan.builds
    launch: Launch
    fit: sizing.GpuFit | sizing.NeuronFit | DeclaredFit
    priority: int
    task_cpu: int
    task_memory_mib: int
    gpu_count: int
    neuron_devices: tuple[str, ...]
    shm_size_mib: int
    one_task_per_instance: bool
    deregistration: sizing.DeregistrationDelay
    grace: sizing.GracePeriod
    deploy: DeployPlan
    weights_bucket: str | None
    weights_prefix: str | None
    scaling: ops_specs.ScalingPolicySpec
    """Target tracking (engine load, KV cache or ALB requests) with its cooldowns and note."""
    metrics_sidecar: bool = True
    metrics_image: str | None = None
    """None with `metrics_sidecar`: the stack's own build (images.build)."""
    execute_command: bool = False
    execute_command_logging: bool = True
    tasks_per_instance: int = 1
    """The fewest copies any of the pool's types holds (what capacity planning relies on)."""
    efs: efs.EfsWeights | None = None
    """Weights on EFS: the file system (store name or id) and directory; None: S3 or none."""
    weights_note: str | None = None
    """The weight-load estimate line (EFS against S3), when the weights are on EFS."""

    @property
    def port(self) -> int:
        return self.launch.port

    @property
    def spot_notes(self) -> list[str]:
        """What a Spot reclaim means for this service (empty when its pool buys no Spot)."""
        if self.pool.managed or self.pool.spec.mixed is None:
            return []
        if not self.pool.spec.mixed.uses_spot:
            return []
        cfg = self.pool.config
        assert isinstance(cfg, PoolConfig)
        return spot_interruption_notes(
            self.pool.spec.mixed,
            service=self.name,
            min_count=self.config.min_count,
            tasks_per_instance=self.tasks_per_instance,
            replacement_seconds=self.grace.seconds,
            instance_warmup_seconds=cfg.instance_warmup_seconds,
            deregistration_delay_seconds=self.deregistration.seconds,
            max_generation_seconds=self.config.max_generation_seconds,
        )

    @property
    def spec(self) -> ModelServiceSpec:
        """What the model service component builds (image None: the stack's own build)."""
        cfg = self.config
        return ModelServiceSpec(
            compatibility="MANAGED_INSTANCES" if self.pool.managed else "EC2",
            service=self.name,
            priority=self.priority,
            image=self.image,
            launch=self.launch,
            weights_bucket=self.weights_bucket,
            weights_prefix=self.weights_prefix,
            efs_file_system=self.efs.file_system if self.efs else None,
            efs_path=self.efs.path if self.efs else None,
            task_cpu=self.task_cpu,
            task_memory_mib=self.task_memory_mib,
            gpu_count=self.gpu_count,
            neuron_devices=self.neuron_devices,
            shm_size_mib=self.shm_size_mib,
            desired_count=cfg.desired_count,
            min_count=cfg.min_count,
            max_count=cfg.max_count,
            target_requests_per_target=cfg.autoscaling.target_requests_per_target,
            scale_out_cooldown=self.scaling.scale_out_cooldown,
            scale_in_cooldown=self.scaling.scale_in_cooldown,
            health_check_grace_period_seconds=self.grace.seconds,
            deregistration_delay_seconds=self.deregistration.seconds,
            max_request_seconds=self.deregistration.max_generation_seconds,
            deployment_minimum_healthy_percent=self.deploy.minimum_healthy_percent,
            deployment_maximum_percent=self.deploy.maximum_percent,
            one_task_per_instance=self.one_task_per_instance,
            environment=dict(cfg.environment),
            secrets=dict(cfg.secrets),
            weights_kms_key_arn=cfg.kms_key_arns.weights,
            secrets_kms_key_arns=tuple(cfg.kms_key_arns.secrets),
            execute_command=self.execute_command,
            execute_command_logging=self.execute_command_logging,
            log_retention_days=cfg.log_retention_days,
            # ALBRequestCountPerTarget needs the target group's label, known only at deploy
            # time: the component builds that one from target_requests_per_target.
            scaling_configuration=(
                None if self.scaling.metric == "albRequests" else self.scaling.configuration
            ),
            metrics_sidecar=self.metrics_sidecar,
            metrics_image=self.metrics_image,
        )


@dataclass(frozen=True)
class RerankerPlan:
    name: str
    config: RerankerConfig
    image: str | None  # None: built by the stack (images.build), see Plan.builds
    size: sizing.FargateSize
    priority: int
    deregistration: sizing.DeregistrationDelay
    model_bucket: str
    model_prefix: str
    idle_timeout_seconds: int
    metrics_sidecar: bool = True
    metrics_image: str | None = None
    """None with `metrics_sidecar`: the stack's own build (images.build)."""
    execute_command: bool = False
    execute_command_logging: bool = True

    @property
    def port(self) -> int:
        return reranker_contract.PORT

    @property
    def admission(self) -> reranker_contract.AdmissionLimits:
        """The image contract's work limits for this task size (stated for a MiniLM-L6 model;
        the service re-derives them for the model it serves)."""
        drain = self.config.environment.get(reranker_contract.ENV_DRAIN_TIMEOUT_SECONDS, "")
        return reranker_contract.admission_limits(
            self.size.cpu / 1024,
            request_timeout_seconds=self.config.max_request_seconds,
            drain_timeout_seconds=int(drain)
            if drain.isdigit() and int(drain) > 0
            else reranker_contract.DRAIN_TIMEOUT_SECONDS,
        )

    @property
    def spec(self) -> RerankerSpec:
        """What the re-ranker component builds (image None: the stack's own build)."""
        cfg = self.config
        return RerankerSpec(
            service=self.name,
            priority=self.priority,
            image=self.image,
            model_bucket=self.model_bucket,
            model_prefix=self.model_prefix,
            cpu=self.size.cpu,
            memory_mib=self.size.memory_mib,
            cpu_architecture=cfg.cpu_architecture,
            platform_version=cfg.platform_version,
            desired_count=cfg.desired_count,
            min_count=cfg.min_count,
            max_count=cfg.max_count,
            scaling_metric=cfg.scaling_metric,
            scaling_target=cfg.scaling_target,
            deregistration_delay_seconds=self.deregistration.seconds,
            max_request_seconds=self.deregistration.max_generation_seconds,
            alb_idle_timeout_seconds=self.idle_timeout_seconds,
            # The service bounds each request (and its admission) by the same maxRequestSeconds
            # the ALB idle timeout and the deregistration delay are derived from.
            environment={
                reranker_contract.ENV_REQUEST_TIMEOUT_SECONDS: str(cfg.max_request_seconds),
                **cfg.environment,
            },
            secrets=dict(cfg.secrets),
            weights_kms_key_arn=cfg.kms_key_arns.weights,
            secrets_kms_key_arns=tuple(cfg.kms_key_arns.secrets),
            execute_command=self.execute_command,
            execute_command_logging=self.execute_command_logging,
            log_retention_days=cfg.log_retention_days,
            metrics_sidecar=self.metrics_sidecar,
            metrics_image=self.metrics_image,
        )


@dataclass(frozen=True)
class Plan:
    """A validated config plus every derived decision."""

    config: StackConfig
    idle_timeout: sizing.IdleTimeout
    endpoint: EndpointSpec
    """What the Endpoint component builds."""
    pools: dict[str, PoolPlan] = field(default_factory=dict)
    models: dict[str, ModelPlan] = field(default_factory=dict)
    rerankers: dict[str, RerankerPlan] = field(default_factory=dict)
    builds: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Images the stack builds (`images.build`): image name -> Docker platforms."""
    gateway: gateway_specs.GatewayPlan | None = None
    """The AI gateway (LiteLLM), when configured."""
    workers: dict[str, worker_specs.WorkerPlan] = field(default_factory=dict)
    """Queue workers, by name."""
    service_connect_namespace: str | None = None
    """Cloud Map namespace of the private routes (gateway or workers configured), else None."""

    def alarm_specs(self, stack: str = "stack") -> list[ops_specs.AlarmSpec]:
        """The alarms the stack creates (`ops_specs.stack_alarms`, deploy-time dimension values
        left as placeholders)."""
        services = [
            ops_specs.ServiceSubject(
                m.name, m.config.engine, m.config.min_count, "targetgroup/tg/0", m.name,
                engine_metrics=m.metrics_sidecar,
            )
            for m in self.models.values()
        ] + [
            ops_specs.ServiceSubject(
                r.name, "reranker", r.config.min_count, "targetgroup/tg/0", r.name,
                engine_metrics=r.metrics_sidecar,
            )
            for r in self.rerankers.values()
        ]  # fmt: skip
        gateway = self.gateway
        return [
            spec
            for _, spec in ops_specs.stack_alarms(
                stack=stack,
                settings=self.alarm_settings(),
                load_balancer="app/alb/0",
                cluster_name="cluster",
                services=services,
                # The GPU memory alarm reads the host agent's metrics (Auto Scaling group pools).
                gpu_pools=[
                    n for n, p in self.pools.items() if p.host_telemetry and p.kind == "gpu"
                ],
                gateway=None
                if gateway is None
                else ops_specs.GatewaySubject(
                    gateway.config.path, gateway, "targetgroup/tg/0", gateway.config.path
                ),
                workers=[
                    ops_specs.WorkerSubject(name, w, name, f"{name}-dlq", name)
                    for name, w in self.workers.items()
                ],
            )
        ]

    def alarm_settings(self) -> ops_specs.AlarmSettings:
        a = self.config.operations.alarms
        return ops_specs.AlarmSettings(
            target_5xx_percent=a.target_5xx_percent,
            ttft_p99_seconds=a.ttft_p99_seconds,
            pending_minutes=a.pending_minutes,
            gpu_memory_percent=a.gpu_memory_percent,
            gateway_memory_percent=a.gateway_memory_percent,
        )

    def alarm_keys(self) -> list[str]:
        """Distinct alarm kinds the stack creates, in first-seen order."""
        return list(dict.fromkeys(a.key for a in self.alarm_specs()))

    def decisions(self) -> dict[str, list[str]]:
        """Human-readable decisions, keyed by subject (printed by the preview, exported)."""
        out: dict[str, list[str]] = {"endpoint": [self.idle_timeout.summary()]}
        for name, pool in self.pools.items():
            out[f"pool {name}"] = pool.decisions()
        for name, m in self.models.items():
            out[f"model {name}"] = [
                m.fit.summary(),
                f"task reservation {m.task_cpu} CPU units / {m.task_memory_mib} MiB"
                + (f", shared memory {m.shm_size_mib} MiB" if m.shm_size_mib else ""),
                m.grace.summary(),
                *(
                    [m.grace.warm_start_summary()]
                    if m.image is not None and m.image in self.pools[m.pool.name].prepull_images
                    else []
                ),
                m.deregistration.summary(),
                m.deploy.note,
                *([m.weights_note] if m.weights_note else []),
                m.scaling.note,
                *m.spot_notes,
            ]
            if m.metrics_sidecar:
                out[f"model {name}"].append(_METRICS_NOTE)
        for name, r in self.rerankers.items():
            out[f"reranker {name}"] = [
                r.size.summary(),
                r.deregistration.summary(),
                r.admission.summary(),
            ]
            if r.metrics_sidecar:
                out[f"reranker {name}"].append(_METRICS_NOTE)
        ops = self.config.operations
        for name, pool in self.pools.items():
            if pool.host_telemetry:
                out[f"pool {name}"].append(
                    "host telemetry: CloudWatch agent "
                    f"{ops_specs.CLOUDWATCH_AGENT_VERSION} "
                    + (
                        "nvidia_smi (utilisation, memory, temperature, power)"
                        if pool.kind == "gpu"
                        else "scraping neuron-monitor (NeuronCore utilisation, device memory, "
                        "errors)"
                    )
                    + f" every {ops_specs.HOST_TELEMETRY_INTERVAL_SECONDS} s, per Stack/Pool"
                )
        alarms = self.alarm_keys()
        subscribers = len(ops.alarm_subscriptions)
        out["operations"] = [
            f"alarms ({len(alarms)}) to an encrypted SNS topic with {subscribers} "
            f"subscription(s): {', '.join(alarms)}; circuit-breaker rollbacks by an EventBridge "
            "rule on ECS deployment state changes",
        ]
        if ops.dashboard:
            out["operations"].append(
                "dashboard: one per stack (models, re-rankers, "
                + ("gateway, " if self.gateway is not None else "")
                + ("workers, " if self.workers else "")
                + "pools, endpoint)"
            )
        if self.gateway is not None:
            out["gateway"] = self.gateway.decisions()
        for name, w in self.workers.items():
            out[f"worker {name}"] = w.decisions()
        for image, platforms in self.builds.items():
            out[f"image {image}"] = [
                f"built from {image_build.IMAGES_DIR}/{image} for {', '.join(platforms)}, "
                "pushed to the stack's ECR repository, run by its content tag"
            ]
        return out


_METRICS_NOTE = (
    "metrics: sidecar (non-essential, after the engine) publishes the engine's /metrics as "
    "CloudWatch EMF every 15 s, namespace ECSInference, per Stack/Service and per task; "
    "EngineUp = 0 when the engine stops answering"
)
# Stands for the ALB/target-group label in an albRequests spec; the component uses the real one.
_ALB_LABEL_PLACEHOLDER = "app/alb/0/targetgroup/tg/0"
# Placeholder until build_plan has seen every service on the pool; never reaches a resource.
_UNDECIDED = DeployPlan(100, 200, "deploy: undecided")
MANAGED_INSTANCES_DEPLOY = DeployPlan(
    100,
    200,
    "deploy: surge (min 100 %, max 200 %); Managed Instances has no group maximum, ECS launches "
    "the instances the surge needs",
)


def choose_deploy(
    min_count: int,
    max_count: int,
    tasks_per_instance: int,
    capacity_instances: int,
    desired_count: int | None = None,
) -> DeployPlan:
    """Deployment percentages that let a rolling deploy (and managed draining, which follows the
    same percentages) progress at EVERY task count autoscaling may reach (min_count..max_count),
    stopping as few running tasks as possible.

    `capacity_instances` is how many of the pool's instances this service can have while every
    other service on the pool runs at its maxCount. Surge (min 100 %, max 200 %) when even at
    max_count one more task fits. Otherwise the highest minimum healthy percent with which
    every count still progresses (a free slot, or one old task stopped first), with max 200 %
    where lower counts have room to surge into and 100 % where none has. The note states, for
    the smallest, desired and largest count, how many tasks run at once, how many wait in
    PROVISIONING and how many stop early; it never promises more than the smallest count keeps.
    """
    slots = capacity_instances * tasks_per_instance
    low, high = max(min_count, 1), max(max_count, 1)
    counts = range(low, high + 1)
    if slots > high:
        minimum, maximum = 100, 200
    else:
        maximum = 200 if slots > low else 100
        minimum = next(
            p
            for p in range(99, -1, -1)
            if all(sizing.deploy_step(n, p, maximum, slots).progresses for n in counts)
        )
    steps = tuple(sizing.deploy_step(n, minimum, maximum, slots) for n in counts)
    shown = sorted({low, high, desired_count or low} & set(counts))
    worst = max(step.stopped_at_once for step in steps)
    how = (
        "surge"
        if minimum == 100
        else "replace in place"
        if maximum == 100
        else "surge where the pool has room, else replace in place"
    )
    note = (
        f"deploy and managed draining: {how} (min {minimum} %, max {maximum} %); the pool "
        f"holds {slots} task(s) of this service with the others at their maxCount; "
        + "; ".join(steps[n - low].summary() for n in shown)
    )
    if worst and worst >= low:
        note = (
            f"{note}. WARNING: at up to {worst} stopped at once a deploy can leave no task "
            "serving (an outage); raise the pool's maxSize to deploy without one"
        )
    return DeployPlan(minimum, maximum, note, steps)


def mixed_args(cfg: PoolConfig, chosen: tuple[str, ...]) -> MixedInstancesArgs | None:
    """The pool's purchase options, or None when it launches one type On-Demand only (a plain
    launch template, which keeps a warm pool possible)."""
    if len(chosen) <= 1 and cfg.on_demand_percentage_above_base_capacity >= 100:
        return None
    return MixedInstancesArgs(
        on_demand_base_capacity=cfg.on_demand_base_capacity,
        on_demand_percentage_above_base=cfg.on_demand_percentage_above_base_capacity,
        spot_allocation_strategy=cfg.spot_allocation_strategy,
        on_demand_allocation_strategy=cfg.on_demand_allocation_strategy,
        capacity_rebalance=cfg.capacity_rebalance,
        spot_max_price=cfg.spot_max_price,
    )


def managed_args(cfg: ManagedInstancePoolConfig) -> ManagedInstancesArgs:
    """The Managed Instances options of a pool, from its config section."""
    return ManagedInstancesArgs(
        storage_gib=cfg.storage_gib,
        monitoring=cfg.monitoring,
        capacity_option_type=cfg.capacity_option_type,
        reservation_preference=cfg.reservation_preference,
        reservation_group_arn=cfg.reservation_group_arn,
        scale_in_after_seconds=cfg.scale_in_after_seconds,
        auto_repair=cfg.auto_repair,
        propagate_tags=cfg.propagate_tags,
    )


def pool_spec(cfg: PoolConfig, chosen: tuple[str, ...] = ()) -> PoolSpec:
    """The spec of one pool, from its config section and the types chosen for it (default: the
    configured `instanceType` alone)."""
    warm = cfg.warm_pool
    types = chosen or ((cfg.instance_type,) if cfg.instance_type else ())
    return PoolSpec(
        instance_type=types[0] if types else "",
        instance_types=types if len(types) > 1 else (),
        mixed=mixed_args(cfg, types),
        min_size=cfg.min_size,
        max_size=cfg.max_size,
        root_volume_gib=cfg.root_volume_gib,
        target_capacity_percent=cfg.target_capacity_percent,
        instance_warmup_seconds=cfg.instance_warmup_seconds,
        warm_pool=None
        if warm is None
        else WarmPoolSpec(
            min_size=warm.min_size,
            max_group_prepared_capacity=warm.max_group_prepared_capacity,
            state=warm.state,
        ),
    )


def pool_resource_name(platform_name: str, pool: str) -> str:
    """Component name of a pool (it also names the ECS capacity provider)."""
    return f"{platform_name}-{pool}"


def _demand(name: str, model: ModelConfig) -> Demand:
    """What `model` needs from an instance type, as its engine sizes it (`Engine.demand`).
    Raises `sizing.SizingError`, or `PresetError` (path first)."""
    return engines.get(model.engine).demand(name, model)


def _fit_issue(demand: Demand, model: ModelConfig, exc: sizing.SizingError) -> ConfigIssue:
    """A model that does not fit its pool's one type, reported against the setting to change."""
    where = f"platform.models.{demand.model}"
    engine = engines.get(model.engine)
    if isinstance(exc, DeclaredFitError):
        return ConfigIssue(f"{where}.{engine.settings_key}.{exc.key}", str(exc))
    if not engine.names_itself_when_too_big:
        return ConfigIssue(where, str(exc))
    return ConfigIssue(where, f"the {model.engine} model does not fit: {exc}")


def _pool_sections(
    cfg: StackConfig,
) -> list[tuple[Literal["gpu", "neuron", "managed"], str, PoolConfig | ManagedInstancePoolConfig]]:
    return [
        *(("gpu", n, p) for n, p in cfg.gpu_pools.items()),
        *(("neuron", n, p) for n, p in cfg.neuron_pools.items()),
        *(("managed", n, p) for n, p in cfg.managed_instance_pools.items()),
    ]


def _pool_plans(
    cfg: StackConfig,
    platform_name: str,
    demands: dict[str, Demand],
    issues: list[ConfigIssue],
) -> dict[str, PoolPlan]:
    """Choose every pool's instance types for the models placed on it, then check the pool.

    A pool with one configured `instanceType` keeps its historical contract: a model that does
    not fit it is reported against the model. A list (or types from sizing) is judged as a
    whole: a member that cannot serve a model, or layouts that disagree, are the pool's
    problem, with the split that would work.
    """
    pools: dict[str, PoolPlan] = {}
    for kind, name, pool in _pool_sections(cfg):
        base = f"platform.{_SECTIONS[kind]}.{name}"
        accel: catalog.Accelerator = "neuron" if kind == "neuron" else "nvidia"
        resource = pool_resource_name(platform_name, name)
        on_pool = [
            demands[m] for m, model in cfg.models.items() if model.pool == name and m in demands
        ]
        single = pool.instance_type if isinstance(pool, PoolConfig) else None
        problems: list[tuple[str, str]] = []
        if isinstance(pool, PoolConfig) and single is not None:
            problems = pool_problems(resource, pool_spec(pool), accel)
            if not problems:
                inst = catalog.instance(single)
                kept: list[Demand] = []
                for demand in on_pool:
                    try:
                        instance_types.fit_on(demand, inst)
                        kept.append(demand)
                    except sizing.SizingError as exc:
                        issues.append(_fit_issue(demand, cfg.models[demand.model], exc))
                on_pool = kept
        listed = [single] if single is not None else pool.instance_types
        if not problems and listed is None and not on_pool:
            problems = [
                (
                    "instanceTypes",
                    "no model is placed on this pool, so there is nothing to take its instance "
                    "types from; list instanceTypes or remove the pool",
                )
            ]
        choice = None
        if not problems:
            warm = isinstance(pool, PoolConfig) and pool.warm_pool is not None
            # A warm pool allows one type only; from sizing, that is the cheapest.
            most = 1 if warm and listed is None else pool.max_instance_types
            choice, problems = instance_types.choose_pool_types(
                accel,
                on_pool,
                listed,
                pool.excluded_instance_types,
                most,
                pool.max_price_ratio,
            )
            if single is not None:
                problems = [
                    ("instanceType" if k.startswith("instanceTypes") else k, m) for k, m in problems
                ]
        if choice is not None and not problems:
            if isinstance(pool, ManagedInstancePoolConfig):
                problems = provider_name_problems(resource)
                problems += managed_instances.managed_instances_problems(managed_args(pool))
                for demand in on_pool:
                    for key, message in managed_instances.model_problems(
                        choice.layouts[demand.model].tp
                    ):
                        issues.append(ConfigIssue(f"platform.models.{demand.model}.{key}", message))
            else:
                problems = pool_problems(resource, pool_spec(pool, choice.chosen), accel)
        for key, message in problems:
            issues.append(ConfigIssue(base if key == "name" else f"{base}.{key}", message))
        if problems or choice is None:
            continue
        ami = None if kind == "managed" else catalog.ECS_AMI_SSM_PARAMETERS[accel]
        pools[name] = PoolPlan(
            name,
            kind,
            pool,
            choice,
            ami,
            host_telemetry=cfg.operations.host_telemetry and kind != "managed",
        )
    return pools


def _shm_size(tp_size: int, task_memory_mib: int) -> int:
    wanted = SHM_SINGLE_GPU_MIB + SHM_PER_EXTRA_GPU_MIB * (tp_size - 1)
    return min(wanted, SHM_MAX_MIB, task_memory_mib // 4)


def _model_plan(
    name: str,
    model: ModelConfig,
    demand: Demand,
    pool: PoolPlan,
    cfg: StackConfig,
    priority: int,
    idle: sizing.IdleTimeout,
    region: str | None,
    stack: str,
) -> ModelPlan:
    """Size one model on its pool's chosen types (one device layout on all of them) and build
    its engine's launch (`Engine.launch`); every error names its config path. The deploy
    strategy depends on every service sharing the pool, so `build_plan` decides it afterwards."""
    engine = engines.get(model.engine)
    image = model.image
    if image is None and engine.default_image:
        image = cfg.images.for_engine(engine.name)
    fits = pool.types.fits[name]
    # The task must place on every chosen type: the smallest share of CPU and memory.
    cpu, memory = instance_types.task_reservation(fits.values(), HOST_MEMORY_RESERVE_FRACTION)
    fit = fits[pool.instance.name].fit
    need_gib = _weights_gib(demand, fit)
    bucket, prefix, location, engine_uri, note, load_rate = _weights(name, model, cfg, need_gib)
    launch = engine.launch(
        LaunchInputs(
            name=name,
            model=model,
            demand=demand,
            fit=fit,
            weights_uri=engine_uri,
            instance_family=pool.instance.family,
            idle_timeout_seconds=idle.seconds,
            region=region,
        )
    )
    grace = sizing.health_check_grace_period(
        model.startup.image_gib,
        need_gib,
        image_pull_mib_per_second=model.startup.image_pull_mib_per_second,
        weight_load_mib_per_second=load_rate,
        warmup_seconds=engine.warmup_seconds(model),
        override=model.health_check_grace_period_seconds,
    )
    scraped = engine.metrics_kind is not None
    sidecar = cfg.operations.metrics_sidecar and scraped
    gpus = launch.gpus
    return ModelPlan(
        name=name,
        config=model,
        pool=pool,
        image=image,
        scaling=_engine_scaling(stack, name, model, engine, grace_seconds=grace.seconds),
        metrics_sidecar=sidecar,
        metrics_image=cfg.images.metrics if scraped else None,
        launch=launch,
        fit=fit,
        priority=priority,
        task_cpu=cpu,
        task_memory_mib=memory,
        gpu_count=gpus,
        neuron_devices=tuple(f"/dev/neuron{i}" for i in range(launch.neuron_device_count)),
        # Managed Instances refuses linuxParameters.sharedMemorySize (one GPU there: the plan
        # refuses tensor parallelism on it).
        shm_size_mib=_shm_size(gpus, memory) if gpus and not pool.managed else 0,
        # Neuron devices are not an ECS resource: a second task would map the same ones.
        one_task_per_instance=launch.neuron_device_count > 0,
        deregistration=_deregistration(model.max_generation_seconds),
        grace=grace,
        deploy=_UNDECIDED,
        weights_bucket=bucket,
        weights_prefix=prefix,
        execute_command=cfg.cluster.execute_command,
        execute_command_logging=cfg.cluster.execute_command_logging,
        tasks_per_instance=pool.types.tasks_per_instance(name),
        efs=location,
        weights_note=note,
    )


def _weights_gib(demand: Demand, fit: sizing.GpuFit | sizing.NeuronFit | DeclaredFit) -> float:
    """The weights a task loads (GiB): the VRAM method's, the Neuron artifact's, or the
    declared accelerator memory."""
    if isinstance(fit, sizing.NeuronFit):
        return fit.weights_gib
    if isinstance(demand, DeclaredDemand):
        return demand.accelerator_memory_gib
    assert isinstance(demand, GpuDemand)
    return demand.need.weights_gib


def _engine_scaling(
    stack: str, name: str, model: ModelConfig, engine: Engine, *, grace_seconds: int
) -> ops_specs.ScalingPolicySpec:
    """The target-tracking policy of model service `name`, with the rest of its `autoscaling`
    config; a policy AWS would refuse is a SizingError naming the config path. An engine the
    metrics sidecar cannot scrape scales on ALB requests (the config refuses an explicit
    engineLoad or kvCache for it)."""
    scaling_cfg = model.autoscaling
    scraped = engine.metrics_kind is not None
    try:
        policy = ops_specs.engine_scaling_policy(
            stack=stack,
            service=name,
            engine=model.engine,
            max_concurrency=engine.max_concurrency(model),
            grace_seconds=grace_seconds,
            metric=scaling_cfg.metric if scraped else "albRequests",
            target_utilization=scaling_cfg.target_utilization,
            scale_in_floor=scaling_cfg.scale_in_cooldown_seconds,
            scale_out_cooldown=scaling_cfg.scale_out_cooldown_seconds,
            # albRequests: the label is the component's (deploy-time ARNs); this one only
            # lets the spec state the policy.
            alb_resource_label=_ALB_LABEL_PLACEHOLDER,
            requests_per_target=scaling_cfg.target_requests_per_target,
            where=f"platform.models.{name}.autoscaling",
        )
    except ops_specs.ObservabilityError as exc:
        raise sizing.SizingError(str(exc)) from None
    if scraped:
        return policy
    return replace(
        policy,
        note=f"{policy.note}; engine {model.engine}: no metrics sidecar (it scrapes only the "
        "vLLM, Neuron and re-ranker metric families), so no engine-load scaling",
    )


def _weights(
    name: str, model: ModelConfig, cfg: StackConfig, need_gib: float
) -> tuple[str | None, str | None, efs.EfsWeights | None, str | None, str | None, float]:
    """Where the weights are: (bucket, prefix, EFS location, the URI the engine reads, the
    load-estimate note, the weight-load rate in MiB/s for the grace period)."""
    uri = model.weights_uri
    rate = model.startup.weight_load_mib_per_second
    if uri is None:
        return None, None, None, None, None, rate
    if not uri.startswith(efs.SCHEME):
        bucket, prefix = iam.split_s3_uri(uri)
        return bucket, prefix, None, uri, None, rate
    location = efs.parse_efs_uri(uri, f"platform.models.{name}.weightsUri", list(cfg.weight_stores))
    store = cfg.weight_stores.get(location.file_system)
    # The catalog has no network figures, so the estimate covers the storage side: EFS's
    # per-client and per-file-system limits against the engine's S3 path.
    compared = weight_load.compare(
        max(need_gib, 0.001),
        engine_streams_from_s3=engines.get(model.engine).streams_from_s3,
        instance_network_gbps=None,
        concurrent_tasks=max(1, model.desired_count),
        efs_throughput_mode=store.throughput_mode if store else "elastic",
        efs_provisioned_mib_per_second=store.provisioned_mib_per_second if store else None,
    )
    return (
        None,
        None,
        location,
        efs.container_path(name),
        compared.summary(),
        (compared.efs.mib_per_second),
    )


def _deregistration(own_seconds: int) -> sizing.DeregistrationDelay:
    """The service's own longest request plus `DEREGISTRATION_MARGIN_SECONDS`, never the ALB-wide
    idle timeout: ELB ends deregistration early only when a target has no request in flight AND
    no open connection, and the ALB keeps idle keep-alive connections to targets (which hold them
    for the idle timeout + 5 s), so in practice every deploy, scale-in and managed-draining step
    waits out the whole delay while the task and its GPU host stay billed."""
    return sizing.deregistration_delay(own_seconds, margin=DEREGISTRATION_MARGIN_SECONDS)


def _reranker_plan(
    name: str, rr: RerankerConfig, cfg: StackConfig, priority: int, idle: sizing.IdleTimeout
) -> RerankerPlan:
    if rr.cpu is not None:
        size = sizing.fargate_size(rr.cpu, rr.memory_mib)
    else:
        size = sizing.fargate_size(need_memory_mib=rr.need_memory_mib, need_vcpu=rr.need_vcpu)
    if size.needs_platform_1_4 and rr.platform_version not in ("LATEST", "1.4.0"):
        raise sizing.SizingError(
            f"{size.cpu // 1024} vCPU Fargate tasks need platform version 1.4.0 or LATEST, "
            f"got {rr.platform_version!r}"
        )
    bucket, prefix = iam.split_s3_uri(rr.model_uri)
    image = rr.image or cfg.images.reranker
    return RerankerPlan(
        name=name,
        config=rr,
        image=image,
        metrics_sidecar=cfg.operations.metrics_sidecar,
        metrics_image=cfg.images.metrics,
        size=size,
        priority=priority,
        deregistration=_deregistration(rr.max_request_seconds),
        model_bucket=bucket,
        model_prefix=prefix,
        idle_timeout_seconds=idle.seconds,
        execute_command=cfg.cluster.execute_command,
        execute_command_logging=cfg.cluster.execute_command_logging,
    )


def _service_issue(path: str, exc: ValueError) -> ConfigIssue:
    message = str(exc)
    return ConfigIssue(path, message.split(": ", 1)[1] if message.startswith(path) else message)


def build_plan(
    config: StackConfig,
    stack: str | None = None,
    region: str | None = None,
    platform_name: str = PLATFORM_NAME,
    project: str | None = None,
) -> Plan:
    """Derive every decision from `config`; raise `ConfigError` listing all problems.

    `region` is passed to the engines (S3 streaming endpoint); default None (the SDK's own
    resolution inside the container). `project` and `stack` name the Cognito domain prefix when
    the config sets none (`<project>-<stack>`).
    """
    issues: list[ConfigIssue] = []
    demands: dict[str, Demand] = {}
    for name, model in config.models.items():
        try:
            demands[name] = _demand(name, model)
        except sizing.SizingError as exc:
            issues.append(ConfigIssue(f"platform.models.{name}", str(exc)))
        except PresetError as exc:
            path, _, message = str(exc).partition(": ")
            issues.append(ConfigIssue(path, message))
    pools = _pool_plans(config, platform_name, demands, issues)
    services = config.service_names()
    routed = [*services, *([config.gateway.path] if config.gateway is not None else [])]
    quota = config.endpoint.listener_rule_quota
    if len(routed) * RULES_PER_SERVICE > quota:
        issues.append(
            ConfigIssue(
                "platform.models",
                f"{len(routed)} services need {len(routed) * RULES_PER_SERVICE} listener "
                f"rules but the ALB quota is {quota} (endpoint.listenerRuleQuota): at most "
                f"{quota // RULES_PER_SERVICE} services per stack; split the stack or raise the "
                "quota with AWS first",
            )
        )

    longest = [m.max_generation_seconds for m in config.models.values()]
    longest += [r.max_request_seconds for r in config.rerankers.values()]
    if config.gateway is not None and config.gateway.bedrock.models:
        longest.append(gateway_specs.BEDROCK_TIMEOUT_SECONDS)
    try:
        idle = sizing.alb_idle_timeout(
            longest or [60], override=config.endpoint.idle_timeout_seconds
        )
    except sizing.SizingError as exc:
        issues.append(ConfigIssue("platform.endpoint.idleTimeoutSeconds", str(exc)))
        idle = sizing.alb_idle_timeout(longest or [60])

    models: dict[str, ModelPlan] = {}
    priority = PRIORITY_START
    priorities: dict[str, int] = {}
    for name in services:
        priorities[name] = priority
        priority += PRIORITY_STEP

    for name, model in config.models.items():
        pool = pools.get(model.pool)
        if pool is None or name not in pool.types.fits:
            continue  # already reported against the pool or the model
        try:
            models[name] = _model_plan(
                name,
                model,
                demands[name],
                pool,
                config,
                priorities[name],
                idle,
                region,
                stack or "stack",
            )
        except (sizing.SizingError, EngineLaunchError) as exc:
            issues.append(ConfigIssue(f"platform.models.{name}", str(exc)))
        except PresetError as exc:
            # The message starts with the config path of the setting to fix.
            path, _, message = str(exc).partition(": ")
            issues.append(ConfigIssue(path, message))

    # The pool is shared: its maxSize must hold every service on it at maxCount at once, and a
    # deploy of one service only has what the others leave at their maxCount.
    for pool in pools.values():
        on_pool = [m for m in models.values() if m.pool.name == pool.name]
        if not isinstance(pool.config, PoolConfig):
            # Managed Instances has no group maximum: ECS launches what a surge needs.
            for m in on_pool:
                models[m.name] = replace(m, deploy=MANAGED_INSTANCES_DEPLOY)
            continue
        at_max = {m.name: math.ceil(m.config.max_count / m.tasks_per_instance) for m in on_pool}
        steady = sum(math.ceil(m.config.desired_count / m.tasks_per_instance) for m in on_pool)
        section = pool.section
        if steady > pool.config.max_size:
            issues.append(
                ConfigIssue(
                    f"platform.{section}.{pool.name}.maxSize",
                    f"the services on this pool ({', '.join(at_max)}) need {steady} "
                    f"instance(s) at their desired counts but maxSize is "
                    f"{pool.config.max_size}; raise maxSize or lower desiredCount",
                )
            )
            continue
        total = sum(at_max.values())
        if total > pool.config.max_size:
            pool_path = f"platform.{section}.{pool.name}.maxSize"
            if len(on_pool) == 1:
                (only,) = on_pool
                issues.append(
                    ConfigIssue(
                        f"platform.models.{only.name}.maxCount",
                        f"maxCount {only.config.max_count} needs {total} instance(s) at "
                        f"{only.tasks_per_instance} task(s) per instance but {pool_path} is "
                        f"{pool.config.max_size}; tasks beyond it would wait in PROVISIONING "
                        "forever: lower maxCount or raise maxSize",
                    )
                )
            else:
                issues.append(
                    ConfigIssue(
                        pool_path,
                        f"the services on this pool ("
                        f"{', '.join(f'{n} {at_max[n]}' for n in at_max)} instance(s) at their "
                        f"maxCount) need {total} instance(s) together but maxSize is "
                        f"{pool.config.max_size}; tasks beyond it would wait in PROVISIONING "
                        "forever: raise maxSize or lower the services' maxCount",
                    )
                )
            continue
        if len(on_pool) > 1:
            note = (
                f"shared by {', '.join(at_max)}: {total} of {pool.config.max_size} instance(s) "
                "with every service at its maxCount"
            )
            pools[pool.name] = replace(pool, notes=(*pool.notes, note))
        eni_notes, eni_issue = _eni_check(pool, on_pool)
        if eni_issue is not None:
            issues.append(eni_issue)
            continue
        pools[pool.name] = replace(pools[pool.name], notes=(*pools[pool.name].notes, *eni_notes))
        for m in on_pool:
            others = total - at_max[m.name]
            deploy = choose_deploy(
                m.config.min_count,
                m.config.max_count,
                m.tasks_per_instance,
                pool.config.max_size - others,
                m.config.desired_count,
            )
            models[m.name] = replace(m, deploy=deploy)

    for name, pool in pools.items():
        pools[name] = _pull_behavior(pool, [m for m in models.values() if m.pool.name == name])

    rerankers: dict[str, RerankerPlan] = {}
    for name, rr in config.rerankers.items():
        try:
            rerankers[name] = _reranker_plan(name, rr, config, priorities[name], idle)
        except sizing.SizingError as exc:
            issues.append(ConfigIssue(f"platform.rerankers.{name}", str(exc)))

    # The components' spec checks, run now, so that anything they would reject is reported with
    # its config path before a resource exists.
    for name, m in models.items():
        path = f"platform.models.{name}"
        try:
            validate_model_service(path, m.spec)
        except (ServiceArgsError, ValueError) as exc:
            issues.append(_service_issue(path, exc))
    for name, r in rerankers.items():
        path = f"platform.rerankers.{name}"
        try:
            validate_reranker(path, r.spec)
        except (ServiceArgsError, ValueError) as exc:
            issues.append(_service_issue(path, exc))

    namespace = None
    if config.gateway is not None or config.workers:
        namespace = service_connect_namespace(platform_name, stack)
    gateway = _gateway_plan(config, models, namespace or "", priority, idle, issues)
    workers, worker_issues = worker_specs.plan_workers(
        config.workers,
        has_gateway=config.gateway is not None,
        gateway_keys=None
        if config.gateway is None
        else worker_specs.GatewayKeys(
            config.gateway.master_key_secret_arn,
            database=config.gateway.database.enabled,
        ),
    )
    issues += worker_issues

    subscriptions = [
        ops_specs.Subscription(sub.protocol, sub.endpoint)
        for sub in config.operations.alarm_subscriptions
    ]
    issues += [
        ConfigIssue(path, message) for path, message in ops_specs.check_subscriptions(subscriptions)
    ]
    builds = _image_builds(config, issues)
    endpoint = _endpoint_spec(config, idle, models, rerankers, project, stack)
    issues += endpoint_arg_issues(endpoint)

    if issues:
        raise ConfigError(issues, stack)
    return Plan(
        config=config,
        idle_timeout=idle,
        endpoint=endpoint,
        pools=pools,
        models=models,
        rerankers=rerankers,
        builds=builds,
        gateway=gateway,
        workers=workers,
        service_connect_namespace=namespace,
    )


def service_connect_namespace(platform_name: str, stack: str | None) -> str:
    """The Cloud Map namespace of a stack's private routes: `<platform>-<stack>` (HTTP namespace
    names are unique per account and region; aliases read `<service>.<namespace>`)."""
    return f"{platform_name}-{stack}".lower() if stack else platform_name


def _gateway_plan(
    config: StackConfig,
    models: dict[str, ModelPlan],
    namespace: str,
    priority: int,
    idle: sizing.IdleTimeout,
    issues: list[ConfigIssue],
) -> gateway_specs.GatewayPlan | None:
    """The gateway's routes to the planned models at their Service Connect addresses; routes
    to a model that failed its own checks are left out (that model's problem is reported)."""
    gw = config.gateway
    if gw is None:
        return None
    targets = {
        name: gateway_specs.ServiceTarget(
            service=name,
            served_model_name=m.launch.served_model_name,
            host=private_host(name, namespace),
            port=m.port,
            timeout_seconds=m.config.max_generation_seconds,
            provider=engines.get(m.config.engine).gateway_provider,
            routed_by_default=engines.get(m.config.engine).routed_by_default,
        )
        for name, m in models.items()
    }
    if gw.routes is not None:
        failed = set(config.models) - set(models)
        kept = {k: v for k, v in gw.routes.items() if v not in failed}
        gw = gw.model_copy(update={"routes": kept})
    plan, found = gateway_specs.plan_gateway(
        gw,
        targets,
        service_names=config.service_names(),
        trusted_proxy_ranges=(config.network.cidr_block,),
    )
    issues += found
    if plan is None:
        return None
    return replace(
        plan,
        priority=priority,
        deregistration=_deregistration(plan.spec.longest_request_seconds),
    )


def _eni_check(pool: PoolPlan, on_pool: list[ModelPlan]) -> tuple[list[str], ConfigIssue | None]:
    """awsvpc gives every task its own ENI: an instance that can hold several tasks must have
    that many interfaces on its default network card besides its own (without trunking, which
    the stack does not enable). One line per chosen type that holds more than one task."""
    if not on_pool or pool.kind != "gpu":
        return [], None  # Neuron tasks run one per instance (distinctInstance)
    smallest = min(m.gpu_count for m in on_pool)
    notes: list[str] = []
    for inst in pool.types.instances:
        tasks = inst.accelerator_count // smallest
        if tasks <= 1:
            continue
        limit = catalog.awsvpc_task_limit(inst.name)
        if tasks > limit:
            return notes, ConfigIssue(
                f"platform.{pool.section}.{pool.name}",
                f"{inst.name} can hold {tasks} tasks of {smallest} GPU(s) but its default network "
                f"card takes only {limit} awsvpc task ENI(s) besides its own "
                f"({catalog.DEFAULT_CARD_ENIS[inst.name]} interfaces); the tasks beyond them "
                "would never place: use a type with more interfaces, larger tasks, or enable "
                "ECS awsvpc trunking and raise the limit in the catalog",
            )
        notes.append(
            f"awsvpc ENIs on {inst.name}: up to {tasks} task(s) of {smallest} GPU(s) need {tasks} "
            f"of the {limit} task ENIs its default network card takes without trunking"
        )
    return notes, None


def _pull_behavior(pool: PoolPlan, on_pool: list[ModelPlan]) -> PoolPlan:
    """prefer-cached only when every image the pool runs is a digest, or a stack's own build
    (its content tag is immutable in its repository); a mutable tag re-pushed later would
    otherwise keep running stale on every host that cached it. Managed Instances pools have no
    agent settings of ours: unchanged."""
    if pool.managed:
        return pool
    if isinstance(pool.config, PoolConfig) and pool.config.warm_pool is not None:
        images = tuple(sorted({m.image for m in on_pool if m.image is not None}))
        built = sorted(m.name for m in on_pool if m.image is None)
        note = (
            f"warm pool pre-pulls {len(images)} image(s) while its instances initialise "
            "(ECR login with the instance role, then the group stops them)"
            + (f"; not the stack-built image(s) of {', '.join(built)}" if built else "")
        )
        pool = replace(pool, prepull_images=images, notes=(*pool.notes, note))
    tagged = sorted(
        f"{m.name} ({m.image})"
        for m in on_pool
        if m.image is not None and not image_build.is_digest_reference(m.image)
    )
    if not tagged:
        note = "image pull behaviour prefer-cached: every image on the pool is pinned by digest"
        return replace(pool, image_pull_behavior="prefer-cached", notes=(*pool.notes, note))
    note = (
        f"image pull behaviour default, not prefer-cached: {', '.join(tagged)} "
        f"{'is a mutable tag' if len(tagged) == 1 else 'are mutable tags'}, which a host would "
        "keep running stale after a re-push; pin them by digest (<repository>@sha256:<digest>, "
        "what the CI deploys) to start tasks from the cached image"
    )
    return replace(pool, image_pull_behavior="default", notes=(*pool.notes, note))


def _image_builds(config: StackConfig, issues: list[ConfigIssue]) -> dict[str, tuple[str, ...]]:
    """Images to build (`images.build`) and their platforms: the engines' and the metrics
    sidecar's as `image_build.image_platforms` says, the re-ranker for every Fargate
    cpuArchitecture of the services that run the built image."""
    builds: dict[str, tuple[str, ...]] = {}
    for image, users in images_to_build(config).items():
        if image == "reranker":
            archs = [config.rerankers[u].cpu_architecture for u in users]
            try:
                builds[image] = image_build.reranker_platforms(archs)
            except image_build.ImageBuildError as exc:
                issues.append(ConfigIssue("platform.images.build", str(exc)))
        else:
            builds[image] = image_build.image_platforms()[image]
    return builds


def _endpoint_spec(
    config: StackConfig,
    idle: sizing.IdleTimeout,
    models: dict[str, ModelPlan],
    rerankers: dict[str, RerankerPlan],
    project: str | None,
    stack: str | None,
) -> EndpointSpec:
    ep = config.endpoint
    auth = ep.auth
    ports = {m.port for m in models.values()} | {r.port for r in rerankers.values()}
    if config.gateway is not None:
        ports.add(litellm.PORT)
    default_prefix = "-".join(p for p in (project, stack) if p) or AuthSpec.domain_prefix
    return EndpointSpec(
        vpc_cidr=config.network.cidr_block,
        domain_name=ep.domain_name,
        allowed_cidrs=tuple(ep.allowed_cidrs),
        idle_timeout_seconds=idle.seconds,
        target_ports=tuple(sorted(ports)),
        certificate_arn=ep.certificate_arn,
        self_signed_certificate=ep.self_signed_certificate,
        internet_facing=ep.internet_facing,
        ssl_policy=ep.ssl_policy,
        access_logs=ep.access_logs,
        access_log_retention_days=ep.access_log_retention_days,
        hosted_zone_id=ep.hosted_zone_id,
        protect=config.protect,
        auth=AuthSpec(
            existing_user_pool_id=auth.existing_user_pool_id,
            existing_user_pool_domain=auth.existing_user_pool_domain,
            domain_prefix=auth.domain_prefix or default_prefix,
            api_scopes=tuple(auth.api_scopes),
            session_timeout_seconds=auth.session_timeout_seconds,
            access_token_validity_minutes=auth.access_token_validity_minutes,
            protect=config.protect,
        ),
    )
