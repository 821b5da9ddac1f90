"""The model services' plan: what each model needs from an instance type, and then, on the types
its pool chose, the service's spec: the engine's launch, the task's reservation and devices, the
grace period, deregistration delay, deploy percentages and scaling policy."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from ecs_inference import iam, sizing
from ecs_inference.config.issues import Issues
from ecs_inference.config.models import ModelConfig
from ecs_inference.config.stack import StackConfig
from ecs_inference.contracts import flag_table
from ecs_inference.engines import Launch
from ecs_inference.engines import neuron as neuron_engine
from ecs_inference.engines import vllm as vllm_engine
from ecs_inference.engines.base import EngineLaunchError, PresetError, check_extra_args
from ecs_inference.engines.custom import CustomLaunch
from ecs_inference.engines.neuron import NeuronLaunch
from ecs_inference.engines.sglang import SglangLaunch, kv_cache_dtype_flag
from ecs_inference.engines.tgi import TgiLaunch
from ecs_inference.engines.vllm import VllmLaunch
from ecs_inference.plan.pools import Placed, PoolChoice
from ecs_inference.plan.services import METRICS_NOTE, deregistration, service_issue
from ecs_inference.sizing import instance_types
from ecs_inference.sizing import weights as weight_load
from ecs_inference.sizing.headroom import DeployChoice
from ecs_inference.sizing.instance_types import (
    DeclaredDemand,
    DeclaredFit,
    Demand,
    GpuDemand,
    NeuronDemand,
)
from ecs_inference.specs import operations as ops_specs
from ecs_inference.specs import weights as efs
from ecs_inference.specs.mixed_instances import spot_interruption_notes
from ecs_inference.specs.pool import PoolSpec
from ecs_inference.specs.service import ModelServiceSpec, ServiceArgsError, validate_model_service

# Host memory ECS and the OS keep for themselves on an accelerator instance: the task
# reservation must stay below what the agent registers or the task never places.
HOST_MEMORY_RESERVE_FRACTION = 0.10
# vLLM's engine core and tensor-parallel workers exchange tensors through /dev/shm.
SHM_SINGLE_GPU_MIB, SHM_PER_EXTRA_GPU_MIB, SHM_MAX_MIB = 2048, 2048, 16384
# Stands for the ALB/target-group label in an albRequests spec; the component uses the real one.
_ALB_LABEL_PLACEHOLDER = "app/alb/0/targetgroup/tg/0"

UNDECIDED_DEPLOY = DeployChoice(100, 200, "deploy: undecided")


# --------------------------------------------------------------------------------------------
# what a model needs from an instance type
# --------------------------------------------------------------------------------------------


def demands(cfg: StackConfig, issues: Issues) -> dict[str, Demand]:
    """Every model's demand on an instance type; a model that cannot be sized is an issue."""
    found: dict[str, Demand] = {}
    for name, model in cfg.models.items():
        try:
            found[name] = _demand(name, model)
        except sizing.SizingError as exc:
            issues.add(f"platform.models.{name}", str(exc))
        except PresetError as exc:
            path, _, message = str(exc).partition(": ")
            issues.add(path, message)
    return found


def _demand(name: str, model: ModelConfig) -> Demand:
    """What `model` needs from an instance type: the VRAM method (vLLM, SGLang, TGI, and a
    custom GPU service sized by its architecture, its GPU count fixed to `custom.gpus`), the
    Neuron artifact, or a custom service's declared accelerator memory. Raises `PresetError`
    (path first) for a custom service that gives neither."""
    params = model.parameters
    explicit = params.model_dump(exclude_none=True) if params else {}
    custom = model.custom
    sized = model.architecture is not None or bool(explicit)
    if model.engine in ("vllm", "sglang", "tgi") or (custom and custom.gpus and sized):
        need = sizing.gpu_memory_need(
            model.architecture,
            dtype=model.dtype,
            kv_cache_dtype=model.kv_cache_dtype,
            max_model_len=model.context_length if model.engine == "vllm" else model.max_model_len,
            max_concurrent_sequences=model.max_concurrent_sequences,
            overhead_fraction=model.memory_overhead_fraction,
            **explicit,
        )
        pinned = custom.gpus if custom is not None else model.tensor_parallel_size
        return GpuDemand(name, need, model.gpu_memory_utilization, pinned)
    if custom is not None:
        if custom.accelerator_memory_gib is None:
            raise PresetError(
                f"platform.models.{name}.custom.acceleratorMemoryGiB: a custom service is sized "
                "from its architecture (GPU only) or its declared accelerator memory; give one"
            )
        return DeclaredDemand(
            name,
            "nvidia" if custom.gpus else "neuron",
            custom.accelerator_memory_gib,
            custom.gpus or custom.neuron_devices,
            model.gpu_memory_utilization,
            "gpus" if custom.gpus else "neuronDevices",
            model.served_model_name or name,
        )
    assert model.neuron is not None
    return NeuronDemand(
        name,
        sizing.resolve_architecture(model.architecture, **explicit),
        model.neuron.tp_degree,
        model.neuron.batch_size,
        model.neuron.sequence_length,
        model.dtype,
        model.memory_overhead_fraction,
    )


def configured_image(cfg: StackConfig, model: ModelConfig) -> str | None:
    """The model's image reference: its own, else its engine's in `images`; None: the stack's
    own build (images.build)."""
    if model.image is not None or model.engine == "custom":
        return model.image
    image: str | None = getattr(cfg.images, model.engine)
    return image


def placed(cfg: StackConfig, pools: Mapping[str, PoolChoice]) -> dict[str, list[Placed]]:
    """Pool name -> the models that fit it (a model its pool could not take is already an
    issue), in config order."""
    out: dict[str, list[Placed]] = {name: [] for name in pools}
    for name, model in cfg.models.items():
        pool = pools.get(model.pool)
        if pool is None or name not in pool.types.fits:
            continue
        out[pool.name].append(
            Placed(
                name,
                model,
                pool.types.tasks_per_instance(name),
                pool.types.layouts[name].devices_per_task,
                configured_image(cfg, model),
            )
        )
    return out


# --------------------------------------------------------------------------------------------
# the service
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ModelInputs:
    """What one model service is planned from: its config, its pool (choice and spec), the
    deploy its pool leaves it, and the stack-wide settings it depends on."""

    name: str
    model: ModelConfig
    demand: Demand
    pool: PoolChoice
    pool_spec: PoolSpec | None
    """None on a Managed Instances pool."""
    deploy: DeployChoice
    """Undecided (`UNDECIDED_DEPLOY`) when the pool cannot hold its services: the model is
    still planned, so its own problems are reported too."""
    priority: int
    idle_timeout_seconds: int
    region: str | None
    stack: str


@dataclass(frozen=True)
class _Weights:
    """Where the weights are and how fast they load."""

    bucket: str | None
    prefix: str | None
    efs: efs.EfsWeights | None
    engine_uri: str | None
    """The URI the engine reads: the S3 URI, or the EFS mount path in the container."""
    note: str | None
    """The weight-load estimate (EFS against S3), when the weights are on EFS."""
    load_mib_per_second: float


def _weights(name: str, model: ModelConfig, cfg: StackConfig, need_gib: float) -> _Weights:
    uri = model.weights_uri
    rate = model.startup.weight_load_mib_per_second
    if uri is None:
        return _Weights(None, None, None, None, None, rate)
    if not uri.startswith(efs.SCHEME):
        bucket, prefix = iam.split_s3_uri(uri)
        return _Weights(bucket, prefix, None, uri, None, rate)
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
    return _Weights(
        None,
        None,
        location,
        efs.container_path(name),
        compared.summary(),
        compared.efs.mib_per_second,
    )


@dataclass(frozen=True)
class _Engine:
    """What the engine decides about the task: its launch, devices, warm-up and metrics."""

    launch: Launch
    gpu_count: int
    neuron_devices: tuple[str, ...]
    shm_size_mib: int
    one_task_per_instance: bool
    weights_gib: float
    warmup_seconds: float
    metrics_sidecar: bool
    max_concurrency: int
    """The batch the engine runs at once (the engine-load scaling target's base)."""


def _shm_size(tp_size: int, task_memory_mib: int) -> int:
    wanted = SHM_SINGLE_GPU_MIB + SHM_PER_EXTRA_GPU_MIB * (tp_size - 1)
    return min(wanted, SHM_MAX_MIB, task_memory_mib // 4)


def _vllm_dtype(dtype: str) -> str:
    """The `--dtype` vLLM takes: activations dtype; quantised weights keep auto."""
    return {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}.get(dtype, "auto")


def _quantization(dtype: str) -> str | None:
    return dtype if dtype in ("awq", "gptq", "fp8") else None


def _vllm(
    m: ModelInputs, fit: sizing.GpuFit, weights: _Weights, memory: int, sidecar: bool
) -> _Engine:
    model = m.model
    assert isinstance(m.demand, GpuDemand) and weights.engine_uri is not None
    launch = VllmLaunch(
        served_model_name=model.served_model_name or m.name,
        weights_uri=weights.engine_uri,
        max_model_len=model.context_length,
        tensor_parallel_size=fit.tp_size,
        gpu_memory_utilization=model.gpu_memory_utilization,
        max_num_seqs=model.max_concurrent_sequences,
        dtype=_vllm_dtype(model.dtype),
        kv_cache_dtype=model.kv_cache_dtype,
        quantization=_quantization(model.dtype),
        alb_idle_timeout_seconds=m.idle_timeout_seconds,
        aws_region=m.region,
        extra_args=check_extra_args(
            f"platform.models.{m.name}",
            model.extra_args,
            flag_table.load(vllm_engine.FLAG_TABLE),
            vllm_engine.MANAGED_FLAGS,
        ),
    )
    # Managed Instances refuses linuxParameters.sharedMemorySize (one GPU there: the plan
    # refuses tensor parallelism on it).
    shm = 0 if m.pool.kind == "managed" else _shm_size(fit.tp_size, memory)
    return _Engine(
        launch,
        fit.tp_size,
        (),
        shm,
        False,
        m.demand.need.weights_gib,
        model.startup.warmup_seconds,
        sidecar,
        model.max_concurrent_sequences,
    )


def _neuron(m: ModelInputs, fit: sizing.NeuronFit, weights: _Weights, sidecar: bool) -> _Engine:
    model = m.model
    assert isinstance(m.demand, NeuronDemand) and weights.engine_uri is not None
    family = m.pool.types.cheapest.family
    launch = NeuronLaunch(
        served_model_name=model.served_model_name or m.name,
        artifact_uri=weights.engine_uri,
        batch_size=m.demand.batch_size,
        sequence_length=m.demand.sequence_length,
        tp_degree=m.demand.tp_degree,
        num_devices=fit.devices_mapped,
        target=family if family in ("inf2", "trn1") else None,
        alb_idle_timeout_seconds=m.idle_timeout_seconds,
        aws_region=m.region,
        extra_args=check_extra_args(
            f"platform.models.{m.name}",
            model.extra_args,
            flag_table.load(neuron_engine.FLAG_TABLE),
            neuron_engine.MANAGED_FLAGS,
        ),
    )
    return _Engine(
        launch,
        0,
        tuple(fit.device_paths),
        0,
        True,
        fit.weights_gib,
        model.startup.warmup_seconds,
        sidecar,
        m.demand.batch_size,
    )


def _preset_launch(
    m: ModelInputs, devices: int, weights: _Weights
) -> SglangLaunch | TgiLaunch | CustomLaunch:
    """SGLang, TGI and custom launches (`components.engines`); every error names its config
    path. Their images take the region from the task's own metadata."""
    model, where = m.model, f"platform.models.{m.name}"
    served = model.served_model_name or m.name
    idle = m.idle_timeout_seconds
    if model.engine == "sglang":
        assert weights.engine_uri is not None and model.max_model_len is not None
        return SglangLaunch(
            where,
            served,
            weights.engine_uri,
            context_length=model.max_model_len,
            tensor_parallel_size=devices,
            gpu_memory_utilization=model.gpu_memory_utilization,
            overhead_fraction=model.memory_overhead_fraction,
            max_running_requests=model.max_concurrent_sequences,
            # the proxy's keep-alive: the usual 15 s, or half an unusually short idle timeout
            keepalive_seconds=max(1, min(15, idle // 2)),
            dtype=_vllm_dtype(model.dtype),
            kv_cache_dtype=kv_cache_dtype_flag(model.kv_cache_dtype),
            quantization=_quantization(model.dtype),
            alb_idle_timeout_seconds=idle,
            extra_args=tuple(model.extra_args),
        )
    if model.engine == "tgi":
        assert weights.engine_uri is not None and model.max_model_len is not None
        return TgiLaunch.from_plan(
            where,
            served,
            weights.engine_uri,
            context_length=model.max_model_len,
            tensor_parallel_size=devices,
            gpu_memory_utilization=model.gpu_memory_utilization,
            max_concurrent_sequences=model.max_concurrent_sequences,
            dtype=model.dtype,
            kv_cache_dtype=model.kv_cache_dtype,
            alb_idle_timeout_seconds=idle,
            max_input_tokens=model.max_input_tokens,
            extra_args=model.extra_args,
        )
    custom = model.custom
    assert custom is not None and model.image is not None
    return CustomLaunch(
        where,
        model.image,
        served,
        command=tuple(custom.command),
        port=custom.port,
        health_path=custom.health_path,
        gpus=custom.gpus,
        neuron_devices=custom.neuron_devices,
        accelerator_memory_gib=custom.accelerator_memory_gib,
        weights_uri=weights.engine_uri,
        environment=dict(model.environment),
        secrets=dict(model.secrets),
        sse_keepalive_seconds=custom.sse_keep_alive_seconds,
        max_generation_seconds=model.max_generation_seconds,
        alb_idle_timeout_seconds=idle,
        warmup_seconds=float(custom.warmup_seconds),
        settings_path=f"{where}.custom",
    )


def _preset(
    m: ModelInputs, fit: sizing.GpuFit | DeclaredFit, weights: _Weights, memory: int
) -> _Engine:
    """SGLang, TGI and custom services on the fit their pool chose (`_demand` says how each is
    sized). The metrics sidecar's scrape spec (`contracts.metrics`) knows the vLLM, Neuron and
    re-ranker families only: these engines run without it and scale on ALB requests (the config
    refuses an explicit engineLoad or kvCache for them)."""
    if isinstance(fit, DeclaredFit):
        assert isinstance(m.demand, DeclaredDemand)
        devices, need_gib = fit.devices, m.demand.accelerator_memory_gib
    else:
        assert isinstance(m.demand, GpuDemand)
        devices, need_gib = fit.tp_size, m.demand.need.weights_gib
    launch = _preset_launch(m, devices, weights)
    on_gpu = m.pool.kind != "neuron"
    return _Engine(
        launch,
        devices if on_gpu else 0,
        () if on_gpu else tuple(f"/dev/neuron{i}" for i in range(devices)),
        # Managed Instances refuses linuxParameters.sharedMemorySize (one GPU there).
        _shm_size(devices, memory) if on_gpu and m.pool.kind != "managed" else 0,
        not on_gpu,
        need_gib,
        launch.warmup_seconds,
        False,
        m.model.max_concurrent_sequences,
    )


def _engine_scaling(
    m: ModelInputs, engine: _Engine, grace_seconds: int
) -> ops_specs.ScalingPolicySpec:
    """The target-tracking policy of the service, with the rest of its `autoscaling` config; a
    policy AWS would refuse is a SizingError naming the config path. Engines the metrics
    sidecar cannot scrape scale on ALB requests."""
    scaling = m.model.autoscaling
    scraped = m.model.engine in ("vllm", "neuron")
    metric = scaling.metric if scraped else "albRequests"
    try:
        policy = ops_specs.engine_scaling_policy(
            stack=m.stack,
            service=m.name,
            engine=m.model.engine,
            max_concurrency=engine.max_concurrency,
            grace_seconds=grace_seconds,
            metric=metric,
            target_utilization=scaling.target_utilization,
            scale_in_floor=scaling.scale_in_cooldown_seconds,
            scale_out_cooldown=scaling.scale_out_cooldown_seconds,
            # albRequests: the label is the component's (deploy-time ARNs); this one only
            # lets the spec state the policy.
            alb_resource_label=_ALB_LABEL_PLACEHOLDER,
            requests_per_target=scaling.target_requests_per_target,
            where=f"platform.models.{m.name}.autoscaling",
        )
    except ops_specs.ObservabilityError as exc:
        raise sizing.SizingError(str(exc)) from None
    if scraped:
        return policy
    return replace(
        policy,
        note=f"{policy.note}; engine {m.model.engine}: no metrics sidecar (it scrapes only the "
        "vLLM, Neuron and re-ranker metric families), so no engine-load scaling",
    )


def _engine(
    m: ModelInputs,
    fit: sizing.GpuFit | sizing.NeuronFit | DeclaredFit,
    weights: _Weights,
    memory: int,
    cfg: StackConfig,
) -> _Engine:
    if m.model.engine == "vllm":
        assert isinstance(fit, sizing.GpuFit)
        return _vllm(m, fit, weights, memory, cfg.operations.metrics_sidecar)
    if m.model.engine == "neuron":
        assert isinstance(fit, sizing.NeuronFit)
        return _neuron(m, fit, weights, cfg.operations.metrics_sidecar)
    assert not isinstance(fit, sizing.NeuronFit)
    return _preset(m, fit, weights, memory)


def model_service(m: ModelInputs, cfg: StackConfig) -> tuple[ModelServiceSpec, list[str]]:
    """The service's spec and decision lines. Raises `sizing.SizingError`, `EngineLaunchError`
    or `PresetError` for what cannot work (the caller names the path)."""
    model = m.model
    fits = m.pool.types.fits[m.name]
    # The task must place on every chosen type: the smallest share of CPU and memory.
    cpu, memory = instance_types.task_reservation(fits.values(), HOST_MEMORY_RESERVE_FRACTION)
    fit = fits[m.pool.types.cheapest.name].fit
    need = m.demand.need.weights_gib if isinstance(m.demand, GpuDemand) else 0.0
    if isinstance(m.demand, DeclaredDemand):
        need = m.demand.accelerator_memory_gib
    weights = _weights(m.name, model, cfg, need)
    engine = _engine(m, fit, weights, memory, cfg)
    grace = sizing.health_check_grace_period(
        model.startup.image_gib,
        engine.weights_gib,
        image_pull_mib_per_second=model.startup.image_pull_mib_per_second,
        weight_load_mib_per_second=weights.load_mib_per_second,
        warmup_seconds=engine.warmup_seconds,
        override=model.health_check_grace_period_seconds,
    )
    scaling = _engine_scaling(m, engine, grace.seconds)
    delay = deregistration(model.max_generation_seconds)
    image = configured_image(cfg, model)
    spec = ModelServiceSpec(
        compatibility="MANAGED_INSTANCES" if m.pool.kind == "managed" else "EC2",
        service=m.name,
        priority=m.priority,
        image=image,
        launch=engine.launch,
        weights_bucket=weights.bucket,
        weights_prefix=weights.prefix,
        efs_file_system=weights.efs.file_system if weights.efs else None,
        efs_path=weights.efs.path if weights.efs else None,
        task_cpu=cpu,
        task_memory_mib=memory,
        gpu_count=engine.gpu_count,
        neuron_devices=engine.neuron_devices,
        shm_size_mib=engine.shm_size_mib,
        desired_count=model.desired_count,
        min_count=model.min_count,
        max_count=model.max_count,
        target_requests_per_target=model.autoscaling.target_requests_per_target,
        scale_out_cooldown=scaling.scale_out_cooldown,
        scale_in_cooldown=scaling.scale_in_cooldown,
        health_check_grace_period_seconds=grace.seconds,
        deregistration_delay_seconds=delay.seconds,
        max_request_seconds=delay.max_generation_seconds,
        deployment_minimum_healthy_percent=m.deploy.minimum_healthy_percent,
        deployment_maximum_percent=m.deploy.maximum_percent,
        one_task_per_instance=engine.one_task_per_instance,
        environment=dict(model.environment),
        secrets=dict(model.secrets),
        weights_kms_key_arn=model.kms_key_arns.weights,
        secrets_kms_key_arns=tuple(model.kms_key_arns.secrets),
        execute_command=cfg.cluster.execute_command,
        execute_command_logging=cfg.cluster.execute_command_logging,
        log_retention_days=model.log_retention_days,
        # ALBRequestCountPerTarget needs the target group's label, known only at deploy
        # time: the component builds that one from target_requests_per_target.
        scaling_configuration=None if scaling.metric == "albRequests" else scaling.configuration,
        metrics_sidecar=engine.metrics_sidecar,
        metrics_image=cfg.images.metrics if engine.metrics_sidecar else None,
    )
    prepulled = m.pool_spec is not None and image in m.pool_spec.prepull_images
    lines = [
        fit.summary(),
        f"task reservation {cpu} CPU units / {memory} MiB"
        + (f", shared memory {engine.shm_size_mib} MiB" if engine.shm_size_mib else ""),
        grace.summary(),
        *([grace.warm_start_summary()] if prepulled else []),
        delay.summary(),
        m.deploy.note,
        *([weights.note] if weights.note else []),
        scaling.note,
        *_spot_notes(m, spec),
        *([METRICS_NOTE] if engine.metrics_sidecar else []),
    ]
    return spec, lines


def _spot_notes(m: ModelInputs, spec: ModelServiceSpec) -> list[str]:
    """What a Spot reclaim means for this service (none when its pool buys no Spot)."""
    pool = m.pool_spec
    if pool is None or pool.mixed is None or not pool.mixed.uses_spot:
        return []
    return spot_interruption_notes(
        pool.mixed,
        service=m.name,
        min_count=spec.min_count,
        tasks_per_instance=m.pool.types.tasks_per_instance(m.name),
        replacement_seconds=spec.health_check_grace_period_seconds,
        instance_warmup_seconds=pool.instance_warmup_seconds,
        deregistration_delay_seconds=spec.deregistration_delay_seconds,
        max_generation_seconds=m.model.max_generation_seconds,
    )


def plan_model(
    m: ModelInputs, cfg: StackConfig, issues: Issues
) -> tuple[ModelServiceSpec, list[str]] | None:
    """One model service, checked as its component would check it; None (and its issues)
    when it cannot be built."""
    path = f"platform.models.{m.name}"
    try:
        spec, lines = model_service(m, cfg)
    except (sizing.SizingError, EngineLaunchError) as exc:
        issues.add(path, str(exc))
        return None
    except PresetError as exc:
        # The message starts with the config path of the setting to fix.
        where, _, message = str(exc).partition(": ")
        issues.add(where, message)
        return None
    try:
        validate_model_service(path, spec)
    except (ServiceArgsError, ValueError) as exc:
        issues.extend([service_issue(path, exc)])
        return None
    return spec, lines
