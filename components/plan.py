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

from components import iam, sizing
from components.config.issues import ConfigError, ConfigIssue
from components.config.schema import (
    ModelConfig,
    PoolConfig,
    RerankerConfig,
    StackConfig,
    images_to_build,
)
from components.services import engine_presets as presets
from components.services.engine_presets import CustomLaunch, PresetError, SglangLaunch, TgiLaunch
from components.services.engines import (
    NEURON_FLAG_TABLE,
    NEURON_MANAGED_FLAGS,
    VLLM_FLAG_TABLE,
    VLLM_MANAGED_FLAGS,
    EngineLaunchError,
    NeuronLaunch,
    VllmLaunch,
)
from components.sizing import catalog
from components.sizing import weights as weight_load
from components.specs import images as image_build
from components.specs import weights as efs
from components.specs.endpoint import AuthSpec, EndpointSpec, endpoint_arg_issues
from components.specs.pool import PoolSpec, WarmPoolSpec, pool_problems
from components.specs.service import (
    ModelServiceSpec,
    RerankerSpec,
    ServiceArgsError,
    validate_model_service,
    validate_reranker,
)
from contracts import aws_limits, flag_table
from images.reranker import contract as reranker_contract

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
# Default re-ranker need when neither a size nor a need is given (a MiniLM-class cross-encoder
# with ONNX Runtime stays well under 1 GiB resident; 2 GiB leaves room for request bursts).
DEFAULT_RERANKER_NEED_MIB, DEFAULT_RERANKER_NEED_VCPU = 2048, 1.0
# vLLM's engine core and tensor-parallel workers exchange tensors through /dev/shm.
SHM_SINGLE_GPU_MIB, SHM_PER_EXTRA_GPU_MIB, SHM_MAX_MIB = 2048, 2048, 16384


@dataclass(frozen=True)
class PoolPlan:
    name: str
    kind: Literal["gpu", "neuron"]
    config: PoolConfig
    instance: catalog.InstanceType
    ami_parameter: str

    @property
    def spec(self) -> PoolSpec:
        """What the pool component builds."""
        return pool_spec(self.config)


@dataclass(frozen=True)
class DeployPlan:
    """ECS deployment percentages chosen for the pool's headroom."""

    minimum_healthy_percent: int
    maximum_percent: int
    note: str


@dataclass(frozen=True)
class ModelPlan:
    name: str
    config: ModelConfig
    pool: PoolPlan
    image: str | None  # None: built by the stack (images.build), see Plan.builds
    launch: VllmLaunch | NeuronLaunch | SglangLaunch | TgiLaunch | CustomLaunch
    fit: sizing.GpuFit | sizing.NeuronFit | presets.DeclaredFit
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
    efs: efs.EfsWeights | None = None
    """Weights on EFS: the file system (store name or id) and directory; None: S3 or none."""
    weights_note: str | None = None
    """The weight-load estimate line (EFS against S3), when the weights are on EFS."""

    @property
    def port(self) -> int:
        return self.launch.port

    @property
    def spec(self) -> ModelServiceSpec:
        """What the model service component builds (image None: the stack's own build)."""
        cfg = self.config
        return ModelServiceSpec(
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
            scale_out_cooldown=cfg.autoscaling.scale_out_cooldown_seconds,
            scale_in_cooldown=cfg.autoscaling.scale_in_cooldown_seconds,
            health_check_grace_period_seconds=self.grace.seconds,
            deregistration_delay_seconds=self.deregistration.seconds,
            deployment_minimum_healthy_percent=self.deploy.minimum_healthy_percent,
            deployment_maximum_percent=self.deploy.maximum_percent,
            one_task_per_instance=self.one_task_per_instance,
            environment=dict(cfg.environment),
            secrets=dict(cfg.secrets),
            log_retention_days=cfg.log_retention_days,
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

    @property
    def port(self) -> int:
        return reranker_contract.PORT

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
            alb_idle_timeout_seconds=self.idle_timeout_seconds,
            environment=dict(cfg.environment),
            secrets=dict(cfg.secrets),
            log_retention_days=cfg.log_retention_days,
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

    def decisions(self) -> dict[str, list[str]]:
        """Human-readable decisions, keyed by subject (printed by the preview, exported)."""
        out: dict[str, list[str]] = {"endpoint": [self.idle_timeout.summary()]}
        for name, pool in self.pools.items():
            out[f"pool {name}"] = [pool.instance.describe(), f"AMI from SSM {pool.ami_parameter}"]
        for name, m in self.models.items():
            out[f"model {name}"] = [
                m.fit.summary(),
                f"task reservation {m.task_cpu} CPU units / {m.task_memory_mib} MiB"
                + (f", shared memory {m.shm_size_mib} MiB" if m.shm_size_mib else ""),
                m.grace.summary(),
                m.deregistration.summary(),
                m.deploy.note,
                *([m.weights_note] if m.weights_note else []),
            ]
        for name, r in self.rerankers.items():
            out[f"reranker {name}"] = [r.size.summary(), r.deregistration.summary()]
        for image, platforms in self.builds.items():
            out[f"image {image}"] = [
                f"built from {image_build.IMAGES_DIR}/{image} for {', '.join(platforms)}, "
                "pushed to the stack's ECR repository, run by digest"
            ]
        return out


# Placeholder until build_plan has seen every service on the pool; never reaches a resource.
_UNDECIDED = DeployPlan(100, 200, "deploy: undecided")


def choose_deploy(
    min_count: int, max_count: int, tasks_per_instance: int, capacity_instances: int
) -> DeployPlan:
    """Deployment percentages with which a rolling deploy makes progress at every task count
    autoscaling may reach (min_count..max_count).

    Prefer a surge (min 100 %, max 200 %: no capacity lost during the deploy) when, even at
    max_count, the pool can still place one more task. Otherwise replace in place (max 100 %),
    stopping at most one task of the smallest count at a time; for a single task that means a
    short outage, stated in the note so a reviewer sees it in the preview. `capacity_instances`
    is how many instances of the pool this service may occupy: its own steady-state instances
    plus the pool's free ones.
    """
    headroom = sizing.deploy_headroom(max_count, tasks_per_instance, 100, 200, capacity_instances)
    if headroom.can_surge:
        return DeployPlan(100, 200, f"deploy: surge (min 100 %, max 200 %); {headroom.summary()}")
    smallest = max(min_count, 1)
    if smallest > 1:
        min_healthy = math.floor(100 * (smallest - 1) / smallest)
        return DeployPlan(
            min_healthy,
            100,
            f"deploy: no instance headroom at {max_count} task(s), so replace in place "
            f"(min {min_healthy} %, max 100 %: at most one task of {smallest} down at a time)",
        )
    return DeployPlan(
        0,
        100,
        "deploy: WARNING the pool has no room for another copy at the maximum task count, so a "
        "deploy stops a running task first (min 0 %, max 100 %; with one task that is an "
        "outage); raise the pool's maxSize by one to deploy without downtime",
    )


def pool_spec(cfg: PoolConfig) -> PoolSpec:
    """The spec of one pool, from its config section."""
    warm = cfg.warm_pool
    return PoolSpec(
        instance_type=cfg.instance_type,
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


def _pool_plans(
    cfg: StackConfig, platform_name: str, issues: list[ConfigIssue]
) -> dict[str, PoolPlan]:
    pools: dict[str, PoolPlan] = {}
    sections: tuple[tuple[str, Literal["gpu", "neuron"], catalog.Accelerator], ...] = (
        ("gpuPools", "gpu", "nvidia"),
        ("neuronPools", "neuron", "neuron"),
    )
    for section, kind, accel in sections:
        for name, pool in (cfg.gpu_pools if kind == "gpu" else cfg.neuron_pools).items():
            base = f"platform.{section}.{name}"
            problems = pool_problems(
                pool_resource_name(platform_name, name), pool_spec(pool), accel
            )
            for key, message in problems:
                issues.append(ConfigIssue(base if key == "name" else f"{base}.{key}", message))
            if problems:
                continue
            inst = catalog.instance(pool.instance_type)
            pools[name] = PoolPlan(name, kind, pool, inst, catalog.ECS_AMI_SSM_PARAMETERS[accel])
    return pools


def _task_reservation(inst: catalog.InstanceType, tasks_per_instance: int) -> tuple[int, int]:
    cpu = (inst.vcpu * 1024) // tasks_per_instance
    memory = int(inst.memory_gib * 1024 * (1 - HOST_MEMORY_RESERVE_FRACTION)) // tasks_per_instance
    return cpu, memory


def _shm_size(tp_size: int, task_memory_mib: int) -> int:
    wanted = SHM_SINGLE_GPU_MIB + SHM_PER_EXTRA_GPU_MIB * (tp_size - 1)
    return min(wanted, SHM_MAX_MIB, task_memory_mib // 4)


def _model_plan(
    name: str,
    model: ModelConfig,
    pool: PoolPlan,
    cfg: StackConfig,
    priority: int,
    idle: sizing.IdleTimeout,
    region: str | None,
) -> ModelPlan:
    """Size one model on its pool. The deploy strategy depends on every service sharing the
    pool, so `build_plan` decides it afterwards."""
    params = model.parameters
    explicit = params.model_dump(exclude_none=True) if params else {}
    image = model.image or (None if model.engine == "custom" else getattr(cfg.images, model.engine))
    served = model.served_model_name or name
    if model.engine in ("sglang", "tgi", "custom"):
        return _preset_model_plan(name, model, cfg, pool, image, served, priority, idle, region)
    assert model.weights_uri is not None  # vllm and neuron: required by the schema
    if model.engine == "vllm":
        need = sizing.gpu_memory_need(
            model.architecture,
            dtype=model.dtype,
            kv_cache_dtype=model.kv_cache_dtype,
            max_model_len=model.context_length,
            max_concurrent_sequences=model.max_concurrent_sequences,
            overhead_fraction=model.memory_overhead_fraction,
            **explicit,
        )
        fit: sizing.GpuFit | sizing.NeuronFit = sizing.choose_tensor_parallel(
            need,
            pool.instance,
            model.gpu_memory_utilization,
            tensor_parallel_size=model.tensor_parallel_size,
        )
        cpu, memory = _task_reservation(pool.instance, fit.tasks_per_instance)
        launch: VllmLaunch | NeuronLaunch = VllmLaunch(
            served_model_name=served,
            weights_uri=model.weights_uri,
            max_model_len=model.context_length,
            tensor_parallel_size=fit.tp_size,
            gpu_memory_utilization=model.gpu_memory_utilization,
            max_num_seqs=model.max_concurrent_sequences,
            dtype=_vllm_dtype(model.dtype),
            kv_cache_dtype=model.kv_cache_dtype,
            quantization=model.dtype if model.dtype in ("awq", "gptq", "fp8") else None,
            alb_idle_timeout_seconds=idle.seconds,
            aws_region=region,
            extra_args=presets.check_extra_args(
                f"platform.models.{name}",
                model.extra_args,
                flag_table.load(VLLM_FLAG_TABLE),
                VLLM_MANAGED_FLAGS,
            ),
        )
        gpu_count, devices, shm = fit.tp_size, (), _shm_size(fit.tp_size, memory)
        weights_gib = need.weights_gib
    else:
        assert model.neuron is not None
        arch = sizing.resolve_architecture(model.architecture, **explicit)
        fit = sizing.neuron_fit(
            model.neuron.tp_degree,
            model.neuron.batch_size,
            model.neuron.sequence_length,
            pool.instance,
            arch,
            model.dtype,
            overhead_fraction=model.memory_overhead_fraction,
        )
        cpu, memory = _task_reservation(pool.instance, 1)
        launch = NeuronLaunch(
            served_model_name=served,
            artifact_uri=model.weights_uri,
            batch_size=model.neuron.batch_size,
            sequence_length=model.neuron.sequence_length,
            tp_degree=model.neuron.tp_degree,
            num_devices=fit.devices_mapped,
            target=pool.instance.family if pool.instance.family in ("inf2", "trn1") else None,
            alb_idle_timeout_seconds=idle.seconds,
            aws_region=region,
            extra_args=presets.check_extra_args(
                f"platform.models.{name}",
                model.extra_args,
                flag_table.load(NEURON_FLAG_TABLE),
                NEURON_MANAGED_FLAGS,
            ),
        )
        gpu_count, devices, shm = 0, tuple(fit.device_paths), 0
        weights_gib = fit.weights_gib

    grace = sizing.health_check_grace_period(
        model.startup.image_gib,
        weights_gib,
        image_pull_mib_per_second=model.startup.image_pull_mib_per_second,
        weight_load_mib_per_second=model.startup.weight_load_mib_per_second,
        warmup_seconds=model.startup.warmup_seconds,
        override=model.health_check_grace_period_seconds,
    )
    bucket, prefix = iam.split_s3_uri(model.weights_uri)
    return ModelPlan(
        name=name,
        config=model,
        pool=pool,
        image=image,
        launch=launch,
        fit=fit,
        priority=priority,
        task_cpu=cpu,
        task_memory_mib=memory,
        gpu_count=gpu_count,
        neuron_devices=devices,
        shm_size_mib=shm,
        one_task_per_instance=model.engine == "neuron",
        deregistration=_deregistration(model.max_generation_seconds, idle),
        grace=grace,
        deploy=_UNDECIDED,
        weights_bucket=bucket,
        weights_prefix=prefix,
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
        engine_streams_from_s3=model.engine == "sglang",
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


def _preset_model_plan(
    name: str,
    model: ModelConfig,
    cfg: StackConfig,
    pool: PoolPlan,
    image: str | None,
    served: str,
    priority: int,
    idle: sizing.IdleTimeout,
    region: str | None,
) -> ModelPlan:
    """SGLang, TGI and custom services: size on the pool, then derive the launch
    (`components.services.engine_presets`); every error names its config path."""
    where = f"platform.models.{name}"
    params = model.parameters
    explicit = params.model_dump(exclude_none=True) if params else {}
    custom = model.custom
    sized = model.architecture is not None or bool(explicit)
    fit: sizing.GpuFit | sizing.NeuronFit | presets.DeclaredFit
    need_gib = 0.0
    if sized and pool.kind == "gpu":
        need = sizing.gpu_memory_need(
            model.architecture,
            dtype=model.dtype,
            kv_cache_dtype=model.kv_cache_dtype,
            max_model_len=model.max_model_len,
            max_concurrent_sequences=model.max_concurrent_sequences,
            overhead_fraction=model.memory_overhead_fraction,
            **explicit,
        )
        pinned = custom.gpus if custom is not None else model.tensor_parallel_size
        fit = presets.engine_fit(
            where,
            model.engine,
            need,
            pool.instance.name,
            model.gpu_memory_utilization,
            tensor_parallel_size=pinned,
        )
        devices = fit.tp_size
        need_gib = need.weights_gib
    else:
        if custom is None or custom.accelerator_memory_gib is None:
            raise PresetError(
                f"{where}.custom.acceleratorMemoryGiB: a Neuron custom service is sized from its "
                "declared accelerator memory"
            )
        devices = custom.gpus or custom.neuron_devices
        fit = presets.declared_fit(
            where,
            served,
            custom.accelerator_memory_gib,
            devices,
            pool.instance,
            model.gpu_memory_utilization,
            key="gpus" if custom.gpus else "neuronDevices",
        )
        need_gib = custom.accelerator_memory_gib
    bucket, prefix, location, engine_uri, note, load_rate = _weights(name, model, cfg, need_gib)
    launch: SglangLaunch | TgiLaunch | CustomLaunch
    if model.engine == "sglang":
        assert engine_uri is not None and model.max_model_len is not None
        launch = SglangLaunch(
            where,
            served,
            engine_uri,
            context_length=model.max_model_len,
            tensor_parallel_size=devices,
            gpu_memory_utilization=model.gpu_memory_utilization,
            overhead_fraction=model.memory_overhead_fraction,
            max_running_requests=model.max_concurrent_sequences,
            # the proxy's keep-alive: the usual 15 s, or half an unusually short idle timeout
            keepalive_seconds=max(1, min(15, idle.seconds // 2)),
            dtype=_vllm_dtype(model.dtype),
            kv_cache_dtype=_sglang_kv_dtype(model.kv_cache_dtype),
            quantization=model.dtype if model.dtype in ("awq", "gptq", "fp8") else None,
            alb_idle_timeout_seconds=idle.seconds,
            extra_args=tuple(model.extra_args),
        )
    elif model.engine == "tgi":
        assert engine_uri is not None and model.max_model_len is not None
        launch = TgiLaunch.from_plan(
            where,
            served,
            engine_uri,
            context_length=model.max_model_len,
            tensor_parallel_size=devices,
            gpu_memory_utilization=model.gpu_memory_utilization,
            max_concurrent_sequences=model.max_concurrent_sequences,
            dtype=model.dtype,
            kv_cache_dtype=model.kv_cache_dtype,
            alb_idle_timeout_seconds=idle.seconds,
            max_input_tokens=model.max_input_tokens,
            extra_args=model.extra_args,
        )
    else:
        assert custom is not None and model.image is not None
        launch = CustomLaunch(
            where,
            model.image,
            served,
            command=tuple(custom.command),
            port=custom.port,
            health_path=custom.health_path,
            gpus=custom.gpus,
            neuron_devices=custom.neuron_devices,
            accelerator_memory_gib=custom.accelerator_memory_gib,
            weights_uri=engine_uri,
            environment=dict(model.environment),
            secrets=dict(model.secrets),
            sse_keepalive_seconds=custom.sse_keep_alive_seconds,
            max_generation_seconds=model.max_generation_seconds,
            alb_idle_timeout_seconds=idle.seconds,
            warmup_seconds=float(custom.warmup_seconds),
            settings_path=f"{where}.custom",
        )
    del region  # the presets' images take the region from the task's own metadata
    on_gpu = pool.kind == "gpu"
    cpu, memory = _task_reservation(pool.instance, fit.tasks_per_instance)
    grace = sizing.health_check_grace_period(
        model.startup.image_gib,
        need_gib,
        image_pull_mib_per_second=model.startup.image_pull_mib_per_second,
        weight_load_mib_per_second=load_rate,
        warmup_seconds=presets.warmup_seconds(launch),
        override=model.health_check_grace_period_seconds,
    )
    return ModelPlan(
        name=name,
        config=model,
        pool=pool,
        image=image,
        launch=launch,
        fit=fit,
        priority=priority,
        task_cpu=cpu,
        task_memory_mib=memory,
        gpu_count=devices if on_gpu else 0,
        neuron_devices=(tuple(f"/dev/neuron{i}" for i in range(devices)) if not on_gpu else ()),
        shm_size_mib=_shm_size(devices, memory) if on_gpu else 0,
        one_task_per_instance=not on_gpu,
        deregistration=_deregistration(model.max_generation_seconds, idle),
        grace=grace,
        deploy=_UNDECIDED,
        weights_bucket=bucket,
        weights_prefix=prefix,
        efs=location,
        weights_note=note,
    )


def _sglang_kv_dtype(kv_cache_dtype: str) -> str:
    """SGLang's `--kv-cache-dtype` for the config's engine-neutral name."""
    return {"fp8": "fp8_e4m3", "bf16": "bfloat16", "fp16": "auto"}.get(kv_cache_dtype, "auto")


def _deregistration(own_seconds: int, idle: sizing.IdleTimeout) -> sizing.DeregistrationDelay:
    """At least the service's own longest request, raised to the ALB idle timeout (ELB maximum
    3600 s): a connection the ALB still holds open may be mid-stream for that long, and ELB ends
    deregistration as soon as a target has no request in flight, so the longer bound costs a
    drained task nothing."""
    ceiling = min(idle.seconds, aws_limits.TARGET_GROUP_DEREGISTRATION_DELAY_MAX)
    return sizing.deregistration_delay(own_seconds, margin=max(0, ceiling - own_seconds))


def _vllm_dtype(dtype: str) -> str:
    """The `--dtype` vLLM takes: activations dtype; quantised weights keep auto."""
    return {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}.get(dtype, "auto")


def _reranker_plan(
    name: str, rr: RerankerConfig, cfg: StackConfig, priority: int, idle: sizing.IdleTimeout
) -> RerankerPlan:
    if rr.cpu is not None:
        size = sizing.fargate_size(rr.cpu, rr.memory_mib)
    else:
        size = sizing.fargate_size(
            need_memory_mib=rr.need_memory_mib or DEFAULT_RERANKER_NEED_MIB,
            need_vcpu=rr.need_vcpu or DEFAULT_RERANKER_NEED_VCPU,
        )
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
        size=size,
        priority=priority,
        deregistration=_deregistration(rr.max_request_seconds, idle),
        model_bucket=bucket,
        model_prefix=prefix,
        idle_timeout_seconds=idle.seconds,
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
    pools = _pool_plans(config, platform_name, issues)
    services = config.service_names()
    quota = config.endpoint.listener_rule_quota
    if len(services) * RULES_PER_SERVICE > quota:
        issues.append(
            ConfigIssue(
                "platform.models",
                f"{len(services)} services need {len(services) * RULES_PER_SERVICE} listener "
                f"rules but the ALB quota is {quota} (endpoint.listenerRuleQuota): at most "
                f"{quota // RULES_PER_SERVICE} services per stack; split the stack or raise the "
                "quota with AWS first",
            )
        )

    longest = [m.max_generation_seconds for m in config.models.values()]
    longest += [r.max_request_seconds for r in config.rerankers.values()]
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
        if pool is None:
            continue  # already reported against the pool
        try:
            models[name] = _model_plan(name, model, pool, config, priorities[name], idle, region)
        except (sizing.SizingError, EngineLaunchError) as exc:
            issues.append(ConfigIssue(f"platform.models.{name}", str(exc)))
        except PresetError as exc:
            # The message starts with the config path of the setting to fix.
            path, _, message = str(exc).partition(": ")
            issues.append(ConfigIssue(path, message))

    # Deploy headroom is a property of the pool: every service on it shares its maxSize.
    for pool in pools.values():
        on_pool = [m for m in models.values() if m.pool.name == pool.name]
        needs = {
            m.name: math.ceil(m.config.desired_count / m.fit.tasks_per_instance) for m in on_pool
        }
        steady = sum(needs.values())
        section = "gpuPools" if pool.kind == "gpu" else "neuronPools"
        if steady > pool.config.max_size:
            issues.append(
                ConfigIssue(
                    f"platform.{section}.{pool.name}.maxSize",
                    f"the services on this pool ({', '.join(needs)}) need {steady} instance(s) at "
                    f"their desired counts but maxSize is {pool.config.max_size}; raise maxSize "
                    "or lower desiredCount",
                )
            )
            continue
        free = pool.config.max_size - steady
        for m in on_pool:
            try:
                deploy = choose_deploy(
                    m.config.min_count,
                    m.config.max_count,
                    m.fit.tasks_per_instance,
                    needs[m.name] + free,
                )
            except sizing.SizingError as exc:
                # maxCount beyond what the pool can ever hold: a config error, not a traceback.
                issues.append(
                    ConfigIssue(
                        f"platform.models.{m.name}.maxCount",
                        f"{exc}; lower maxCount or raise platform.{section}.{pool.name}.maxSize",
                    )
                )
                continue
            models[m.name] = replace(m, deploy=deploy)

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
    )


def _image_builds(config: StackConfig, issues: list[ConfigIssue]) -> dict[str, tuple[str, ...]]:
    """Images to build (`images.build`) and their platforms: vLLM and Neuron for x86_64, the
    re-ranker for every Fargate cpuArchitecture of the services that run the built image."""
    builds: dict[str, tuple[str, ...]] = {}
    for image, users in images_to_build(config).items():
        if image == "reranker":
            archs = [config.rerankers[u].cpu_architecture for u in users]
            try:
                builds[image] = image_build.reranker_platforms(archs)
            except image_build.ImageBuildError as exc:
                issues.append(ConfigIssue("platform.images.build", str(exc)))
        else:
            builds[image] = image_build.IMAGE_PLATFORMS[image]
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
        auth=AuthSpec(
            existing_user_pool_id=auth.existing_user_pool_id,
            existing_user_pool_domain=auth.existing_user_pool_domain,
            domain_prefix=auth.domain_prefix or default_prefix,
            api_scopes=tuple(auth.api_scopes),
            session_timeout_seconds=auth.session_timeout_seconds,
            access_token_validity_minutes=auth.access_token_validity_minutes,
        ),
    )
