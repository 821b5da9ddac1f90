"""A model service's decisions, as pure functions of its input (`ModelConfig`) and the few facts
it takes from around it: its pool's instance types, the endpoint's idle timeout, its listener
priority and the deploy its pool leaves it.

The stack's plan and a `ModelService` built directly by a program call the same functions, so
both get the same fit check, task size, shared memory, grace period, deregistration delay and
the same errors, at the same config path (`platform.models.<name>`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Literal, TypeVar

from ecs_inference import engines, iam, sizing
from ecs_inference.config.issues import ConfigIssue, Issues
from ecs_inference.contracts.engine import DEFAULT_PORT
from ecs_inference.endpoint.decisions import Routes
from ecs_inference.engines import Engine, Launch
from ecs_inference.engines.base import (
    EngineLaunchError,
    Fit,
    LaunchInputs,
    PresetError,
    reserved_gpus,
)
from ecs_inference.images.input import ImagesConfig
from ecs_inference.models.input import ModelConfig
from ecs_inference.operations.errors import ObservabilityError
from ecs_inference.operations.input import AlarmsConfig
from ecs_inference.operations.scaling import ScalingPolicySpec, engine_scaling_policy
from ecs_inference.operations.watch import WatchedService
from ecs_inference.pools.decisions import AsgPoolDecisions
from ecs_inference.pools.spot import spot_interruption_notes
from ecs_inference.rollouts.decisions import RolloutFacts, decide_rollout
from ecs_inference.secrets.refs import secret_refs
from ecs_inference.services.checks import (
    ServiceArgsError,
    common_decision_checks,
)
from ecs_inference.services.decisions import (
    METRICS_NOTE,
    ServedDecisions,
    deregistration,
    service_issue,
)
from ecs_inference.sizing import catalog, instance_types
from ecs_inference.sizing import weights as weight_load
from ecs_inference.sizing.headroom import DeployChoice
from ecs_inference.sizing.instance_types import (
    DeclaredDemand,
    DeclaredFit,
    Demand,
    GpuDemand,
    PoolTypes,
)
from ecs_inference.storage import efs as efs
from ecs_inference.storage.input import WeightStoreConfig

# Host memory ECS and the OS keep for themselves on an accelerator instance: the task
# reservation must stay below what the agent registers or the task never places.
HOST_MEMORY_RESERVE_FRACTION = 0.10
# vLLM's engine core and tensor-parallel workers exchange tensors through /dev/shm.
SHM_SINGLE_GPU_MIB, SHM_PER_EXTRA_GPU_MIB, SHM_MAX_MIB = 2048, 2048, 16384
# Stands for the ALB/target-group label in an albRequests spec; the component uses the real one.
_ALB_LABEL_PLACEHOLDER = "app/alb/0/targetgroup/tg/0"

UNDECIDED_DEPLOY = DeployChoice(100, 200, "deploy: undecided")
MANAGED_INSTANCES_DEPLOY = DeployChoice(
    100,
    200,
    "deploy: surge (min 100 %, max 200 %); Managed Instances has no group maximum, ECS launches "
    "the instances the surge needs",
)


def model_path(name: str) -> str:
    """The config path of model `name`, in a stack file and in a program's errors alike."""
    return f"platform.models.{name}"


# --------------------------------------------------------------------------------------------
# fit on the pool's instance types
# --------------------------------------------------------------------------------------------


def demand(name: str, model: ModelConfig, issues: Issues) -> Demand | None:
    """What `model` needs from an instance type, as its engine sizes it (`Engine.demand`);
    None (and the issue) when it cannot be sized."""
    try:
        return engines.get(model.engine).demand(name, model)
    except sizing.SizingError as exc:
        issues.add(model_path(name), str(exc))
    except PresetError as exc:
        where, _, message = str(exc).partition(": ")
        issues.add(where, message)
    return None


def demands(models: Mapping[str, ModelConfig], issues: Issues) -> dict[str, Demand]:
    """Every model's demand (what its pool's types are chosen for)."""
    found = {name: demand(name, model, issues) for name, model in models.items()}
    return {name: need for name, need in found.items() if need is not None}


def configured_image(model: ModelConfig, images: ImagesConfig) -> str | None:
    """The model's image reference: its own, else its engine's in `images`; None: the stack's
    own build (images.build)."""
    if model.image is not None or not engines.get(model.engine).default_image:
        return model.image
    return images.for_engine(model.engine)


def fit_issue(demand: Demand, model: ModelConfig, exc: sizing.SizingError) -> ConfigIssue:
    """A model that does not fit an instance type, reported against the setting to change."""
    where = model_path(demand.model)
    engine = engines.get(model.engine)
    if isinstance(exc, instance_types.DeclaredFitError):
        return ConfigIssue(f"{where}.{engine.settings_key}.{exc.key}", str(exc))
    if not engine.names_itself_when_too_big:
        return ConfigIssue(where, str(exc))
    return ConfigIssue(where, f"the {model.engine} model does not fit: {exc}")


def fit_on_types(
    name: str, model: ModelConfig, types: Sequence[str], issues: Issues
) -> tuple[Demand, PoolTypes] | None:
    """The model's demand and its fit on each of `types` (its pool's, in priority order), the
    check a stack's plan makes for a pool's models; None (and the issues) when it does not fit
    every type."""
    path = model_path(name)
    if (need := demand(name, model, issues)) is None:
        return None
    fitting = True
    for type_name in types:
        try:
            instance_types.fit_on(need, catalog.instance(type_name))
        except sizing.SizingError as exc:
            issues.extend([fit_issue(need, model, exc)])
            fitting = False
    if not fitting:
        return None
    accelerator = catalog.instance(types[0]).accelerator if types else "nvidia"
    chosen, problems = instance_types.choose_pool_types(accelerator, [need], list(types))
    for _, message in problems:
        issues.add(path, message)
    return (need, chosen) if chosen is not None and not problems else None


def routes(*models: ModelConfig) -> Routes:
    """What an endpoint routing `models` takes from them (`EndpointWiring.routes`), as a stack's
    plan derives it: their serving ports (a custom engine's own, else the engines' 8000), their
    longest requests (`maxGenerationSeconds`) and the smoke hook a native rollout needs."""
    ports = {getattr(m.engine_settings, "port", DEFAULT_PORT) for m in models}
    return Routes(
        ports=tuple(sorted(ports)),
        longest_request_seconds=tuple(m.max_generation_seconds for m in models),
        smoke_hook=any(m.rollout.native for m in models),
    )


# --------------------------------------------------------------------------------------------
# the service
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StackFacts:
    """What a model service takes from stack-wide settings; the defaults are a stack file's."""

    weight_stores: Mapping[str, WeightStoreConfig] = field(
        default_factory=dict[str, WeightStoreConfig]
    )
    """The stack's EFS weight stores, by name (what an `efs://` weights URI names)."""
    metrics_sidecar: bool = True
    """`operations.metricsSidecar`: the sidecar, for engines whose metrics it knows."""
    metrics_image: str | None = None
    """The sidecar's image reference; None: the stack's own build."""
    execute_command: bool = False
    """`cluster.executeCommand`: ECS Exec into the service's tasks."""
    execute_command_logging: bool = True
    """`cluster.executeCommandLogging`: log ECS Exec sessions."""
    region: str | None = None
    """The stack's region (engines that name it in their environment); None: the provider's."""
    stack: str = "stack"
    """The stack's name (the dimension of the engine-load metric math)."""
    alarm_settings: AlarmsConfig = field(default_factory=AlarmsConfig)
    """`operations.alarms`: thresholds of the paging alarms (the smoke test's first-token bound
    is the time-to-first-token alarm's)."""


@dataclass(frozen=True)
class Placement:
    """What the stack around a model service decides for it across services; the defaults are
    those of a service alone behind its endpoint and on its pool."""

    priority: int
    """Its listener rule priority on the endpoint (1-50000, unique per listener)."""
    idle_timeout_seconds: int | None = None
    """The endpoint's idle timeout in seconds (a stack: sized for every routed service); None:
    the endpoint's own (`Endpoint.idle_timeout_seconds`)."""
    deploy: DeployChoice | None = None
    """The deploy percentages (a stack: what the services sharing the pool leave this one);
    None: what a pool holding this service alone leaves it."""
    facts: StackFacts = field(default_factory=StackFacts)
    """What the service takes from stack-wide settings."""


_T = TypeVar("_T")


def _decided(name: str, value: _T | None, what: str) -> _T:
    """A placement value the stack (or the component, for a lone service) must have decided."""
    if value is None:
        raise ValueError(f"{name}: the placement's {what} is not decided")
    return value


@dataclass(frozen=True)
class ModelInputs:
    """What one model service is decided from: its input, its fit on its pool's types, what the
    stack around it decided (deploy, listener priority, idle timeout) and the stack's facts."""

    name: str
    model: ModelConfig
    demand: Demand
    types: PoolTypes
    managed: bool
    """On a Managed Instances pool (else an Auto Scaling group pool)."""
    asg_pool: AsgPoolDecisions | None
    """The Auto Scaling group pool as decided (for the Spot notes and the warm pool's
    pre-pull); None on Managed Instances."""
    placement: Placement
    """What the stack decided for it, every field given. A deploy is `UNDECIDED_DEPLOY` when
    the pool cannot hold its services: the model is still decided, so its own problems are
    reported too."""
    image: str | None
    """The image reference (the model's own, else its engine's in `images`); None: the stack's
    own build (`images.build`), known at deploy time."""

    @property
    def idle_timeout_seconds(self) -> int:
        return _decided(self.name, self.placement.idle_timeout_seconds, "idle timeout")

    @property
    def deploy(self) -> DeployChoice:
        return _decided(self.name, self.placement.deploy, "deploy")

    @property
    def facts(self) -> StackFacts:
        return self.placement.facts


@dataclass(frozen=True)
class Weights:
    """Where the weights are and how fast they load."""

    bucket: str | None
    prefix: str | None
    efs: efs.EfsWeights | None
    engine_uri: str | None
    """The URI the engine reads: the S3 URI, or the EFS mount path in the container."""
    note: str | None
    """The weight-load estimate (EFS against S3), when the weights are on EFS."""
    load_mib_per_second: float


def _weights(
    name: str, model: ModelConfig, stores: Mapping[str, WeightStoreConfig], need_gib: float
) -> Weights:
    uri = model.weights_uri
    rate = model.startup.weight_load_mib_per_second
    if uri is None:
        return Weights(None, None, None, None, None, rate)
    if not uri.startswith(efs.SCHEME):
        bucket, prefix = iam.split_s3_uri(uri)
        return Weights(bucket, prefix, None, uri, None, rate)
    location = efs.parse_efs_uri(uri, f"{model_path(name)}.weightsUri", list(stores))
    store = stores.get(location.file_system)
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
    return Weights(
        None,
        None,
        location,
        efs.container_path(name),
        compared.summary(),
        compared.efs.mib_per_second,
    )


def _shm_size(tp_size: int, task_memory_mib: int) -> int:
    wanted = SHM_SINGLE_GPU_MIB + SHM_PER_EXTRA_GPU_MIB * (tp_size - 1)
    return min(wanted, SHM_MAX_MIB, task_memory_mib // 4)


def _weights_gib(demand: Demand, fit: sizing.GpuFit | sizing.NeuronFit | DeclaredFit) -> float:
    """The weights a task loads (GiB): the VRAM method's, the Neuron artifact's, or the
    declared accelerator memory."""
    if isinstance(fit, sizing.NeuronFit):
        return fit.weights_gib
    if isinstance(demand, DeclaredDemand):
        return demand.accelerator_memory_gib
    assert isinstance(demand, GpuDemand)
    return demand.need.weights_gib


def _engine_scaling(m: ModelInputs, engine: Engine, grace_seconds: int) -> ScalingPolicySpec:
    """The target-tracking policy of the service, with the rest of its `autoscaling` config; a
    policy AWS would refuse is a SizingError naming the config path. An engine the metrics
    sidecar cannot scrape scales on ALB requests (the config refuses an explicit engineLoad or
    kvCache for it)."""
    scaling = m.model.autoscaling
    scraped = engine.metrics_kind is not None
    try:
        policy = engine_scaling_policy(
            stack=m.facts.stack,
            service=m.name,
            engine=m.model.engine,
            max_concurrency=engine.max_concurrency(m.model),
            grace_seconds=grace_seconds,
            metric=scaling.metric if scraped else "albRequests",
            target_utilization=scaling.target_utilization,
            scale_in_floor=scaling.scale_in_cooldown_seconds,
            scale_out_cooldown=scaling.scale_out_cooldown_seconds,
            # albRequests: the label is the component's (deploy-time ARNs); this one only
            # lets the spec state the policy.
            alb_resource_label=_ALB_LABEL_PLACEHOLDER,
            requests_per_target=scaling.target_requests_per_target,
            where=f"{model_path(m.name)}.autoscaling",
        )
    except ObservabilityError as exc:
        raise sizing.SizingError(str(exc)) from None
    if scraped:
        return policy
    return replace(
        policy,
        note=f"{policy.note}; engine {m.model.engine}: no metrics sidecar (it scrapes only the "
        "vLLM, Neuron and re-ranker metric families), so no engine-load scaling",
    )


@dataclass(frozen=True)
class ModelDecisions(ServedDecisions):
    """What a model service decides from what it was decided from (`inputs`): each derived
    value once, as its decision made it; the input's own values are read from `inputs.model`
    (the properties below name them as `EcsService`, the cost lines and the plan read them)."""

    inputs: ModelInputs
    launch: Launch
    """How the engine starts (environment, command, port): `Engine.launch` on `fit`."""
    fit: Fit
    """The fit on the pool's cheapest chosen type (every chosen type has the same layout): the
    launch's tensor parallel size and the GPUs the task reserves are both read from it."""
    weights: Weights
    task_cpu: int
    """Task CPU units: the smallest share any chosen type gives."""
    task_memory_mib: int
    """Task memory: the smallest share any chosen type gives, below the host reserve."""
    shm_size_mib: int
    """`/dev/shm` for tensor-parallel GPUs (0: Docker's; Managed Instances refuses it)."""
    grace: sizing.GracePeriod
    scaling: ScalingPolicySpec
    deploy: DeployChoice
    """The deploy percentages the stack (or a pool holding it alone) leaves it."""
    metrics_sidecar: bool
    """The sidecar runs for engines whose metric families it knows, unless turned off."""

    stop_timeout_seconds: ClassVar[int] = 120
    """SIGTERM-to-SIGKILL (ECS waits out the deregistration delay first)."""

    @property
    def model(self) -> ModelConfig:
        return self.inputs.model

    @property
    def service(self) -> str:
        return self.inputs.name

    @property
    def compatibility(self) -> Literal["EC2", "MANAGED_INSTANCES"]:
        return "MANAGED_INSTANCES" if self.inputs.managed else "EC2"

    @property
    def gpu_count(self) -> int:
        return reserved_gpus(self.fit)

    @property
    def neuron_devices(self) -> tuple[str, ...]:
        return tuple(f"/dev/neuron{i}" for i in range(self.launch.neuron_device_count))

    @property
    def one_task_per_instance(self) -> bool:
        """Neuron devices are not an ECS resource: a second task would map the same ones."""
        return self.launch.neuron_device_count > 0

    @property
    def efs_file_system(self) -> str | None:
        return self.weights.efs.file_system if self.weights.efs else None

    @property
    def efs_path(self) -> str | None:
        return self.weights.efs.path if self.weights.efs else None

    @property
    def desired_count(self) -> int:
        return self.model.desired_count

    @property
    def min_count(self) -> int:
        return self.model.min_count

    @property
    def max_count(self) -> int:
        return self.model.max_count

    @property
    def health_check_grace_period_seconds(self) -> int:
        return self.grace.seconds

    @property
    def scale_out_cooldown(self) -> int:
        return self.scaling.scale_out_cooldown

    @property
    def scale_in_cooldown(self) -> int:
        return self.scaling.scale_in_cooldown

    @property
    def scaling_configuration(self) -> Mapping[str, Any] | None:
        """Target tracking on the engine's load; None: ALBRequestCountPerTarget, whose label
        (the target group's, known at deploy time) the component builds."""
        return None if self.scaling.metric == "albRequests" else self.scaling.configuration


def model_service(m: ModelInputs) -> tuple[ModelDecisions, list[str]]:
    """The service's decisions and decision lines. Raises `sizing.SizingError`,
    `EngineLaunchError` or `PresetError` for what cannot work (the caller names the path)."""
    model = m.model
    fits = m.types.fits[m.name]
    # The task must place on every chosen type: the smallest share of CPU and memory.
    cpu, memory = instance_types.task_reservation(fits.values(), HOST_MEMORY_RESERVE_FRACTION)
    fit = fits[m.types.cheapest.name].fit
    engine = engines.get(model.engine)
    need_gib = _weights_gib(m.demand, fit)
    weights = _weights(m.name, model, m.facts.weight_stores, need_gib)
    launch: Launch = engine.launch(
        LaunchInputs(
            name=m.name,
            model=model,
            fit=fit,
            weights_uri=weights.engine_uri,
            instance_family=m.types.cheapest.family,
            idle_timeout_seconds=m.idle_timeout_seconds,
            region=m.facts.region,
        )
    )
    grace = sizing.health_check_grace_period(
        model.startup.image_gib,
        need_gib,
        image_pull_mib_per_second=model.startup.image_pull_mib_per_second,
        weight_load_mib_per_second=weights.load_mib_per_second,
        warmup_seconds=engine.warmup_seconds(model),
        override=model.health_check_grace_period_seconds,
    )
    scaling = _engine_scaling(m, engine, grace.seconds)
    gpus = reserved_gpus(fit)
    # Managed Instances refuses linuxParameters.sharedMemorySize (one GPU there: the plan
    # refuses tensor parallelism on it).
    shm = _shm_size(gpus, memory) if gpus and not m.managed else 0
    sidecar = m.facts.metrics_sidecar and engine.metrics_kind is not None
    rollout, rollout_lines = decide_rollout(
        model.rollout,
        RolloutFacts(
            stack=m.facts.stack,
            watched=WatchedService(m.name, model.engine, model.min_count, model.pool, sidecar),
            served_model=launch.served_model_name,
            default_prompt=engine.smoke_prompt,
            requests_per_task_minute=model.autoscaling.target_requests_per_target,
            startup_seconds=grace.seconds,
            alarm_settings=m.facts.alarm_settings,
        ),
    )
    decided = ModelDecisions(
        inputs=m,
        launch=launch,
        fit=fit,
        weights=weights,
        task_cpu=cpu,
        task_memory_mib=memory,
        shm_size_mib=shm,
        grace=grace,
        delay=deregistration(model.max_generation_seconds),
        scaling=scaling,
        deploy=m.deploy,
        metrics_sidecar=sidecar,
        secret_refs=secret_refs(model_path(m.name), model.secrets),
        rollout=rollout,
    )
    prepulled = m.asg_pool is not None and m.image in m.asg_pool.prepull_images
    lines = [
        fit.summary(),
        *_lora_lines(fit),
        f"task reservation {cpu} CPU units / {memory} MiB"
        + (f", shared memory {shm} MiB" if shm else ""),
        grace.summary(),
        *([grace.warm_start_summary()] if prepulled else []),
        decided.delay.summary(),
        m.deploy.note,
        *rollout_lines,
        *([weights.note] if weights.note else []),
        scaling.note,
        *_spot_notes(m, decided),
        *([METRICS_NOTE] if sidecar else []),
    ]
    return decided, lines


def _lora_lines(fit: sizing.GpuFit | sizing.NeuronFit | DeclaredFit) -> list[str]:
    """What the LoRA adapters take from the GPUs (none without adapters)."""
    if not isinstance(fit, sizing.GpuFit) or fit.need.lora is None:
        return []
    return [fit.need.lora.summary(fit.tp_size)]


def _spot_notes(m: ModelInputs, decided: ModelDecisions) -> list[str]:
    """What a Spot reclaim means for this service (none when its pool buys no Spot)."""
    pool = None if m.asg_pool is None else m.asg_pool.input
    if pool is None or not pool.uses_spot:
        return []
    return spot_interruption_notes(
        pool,
        service=m.name,
        min_count=m.model.min_count,
        tasks_per_instance=m.types.tasks_per_instance(m.name),
        replacement_seconds=decided.grace.seconds,
        instance_warmup_seconds=pool.instance_warmup_seconds,
        deregistration_delay_seconds=decided.delay.seconds,
        max_generation_seconds=m.model.max_generation_seconds,
    )


def decision_checks(where: str, decided: ModelDecisions) -> None:
    """What the service decided, checked: what every service decides
    (`common_decision_checks`: image, priority, timeouts, a deploy that progresses, its
    variables against the launch's) and a Managed Instances task without host-level
    parameters (the launch reads the fit and the weights the task reserves and
    grants, so the two agree). Raises `ServiceArgsError`."""
    common_decision_checks(
        where,
        decided,
        priority=decided.inputs.placement.priority,
        image=decided.inputs.image,
        environment=decided.model.environment,
        secrets=decided.secret_refs,
        managed_env=decided.launch.managed_environment(),
    )
    if decided.inputs.managed and decided.neuron_devices:
        raise ServiceArgsError(
            f"{where}: a MANAGED_INSTANCES task cannot map Neuron devices (Managed Instances "
            "refuses host-level parameters); use an Auto Scaling group pool"
        )


def decide(m: ModelInputs, issues: Issues) -> tuple[ModelDecisions, list[str]] | None:
    """One model service and its decision lines; None (and its issues) when it cannot be
    built."""
    path = model_path(m.name)
    try:
        decided, lines = model_service(m)
    except (sizing.SizingError, EngineLaunchError) as exc:
        issues.add(path, str(exc))
        return None
    except PresetError as exc:
        # The message starts with the config path of the setting to fix.
        where, _, message = str(exc).partition(": ")
        issues.add(where, message)
        return None
    try:
        decision_checks(path, decided)
    except (ServiceArgsError, ValueError) as exc:
        issues.extend([service_issue(path, exc)])
        return None
    return decided, lines
