"""`platform.models`: the LLM services, each served by an engine on an accelerator pool."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    Field,
    ModelWrapValidatorHandler,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import InitErrorDetails

from ecs_inference import engines
from ecs_inference.config.base import (
    S3_URI_PATTERN,
    Name,
    Section,
    error_details,
    validate_taking,
    value_error,
)
from ecs_inference.contracts.aws_limits import SCALING_COOLDOWN_MAX_SECONDS
from ecs_inference.contracts.vllm import ENV_API_KEY as VLLM_API_KEY
from ecs_inference.engines import Engine
from ecs_inference.engines.base import served_name_problem
from ecs_inference.services.input import ServedModelConfig, vllm_api_key_message
from ecs_inference.sizing.catalog import ArchitectureShape
from ecs_inference.sizing.lora import TransformerShape


def _weights_uri(value: str) -> str:
    if value.startswith("efs://"):
        # The file system and path are resolved against `weightStores` by the stack's checks.
        return value
    if not S3_URI_PATTERN.match(value):
        raise ValueError(
            "must be an S3 URI like s3://my-bucket/models/llama-3.1-8b/ or an EFS location "
            "like efs://<file-system>/models/llama-3.1-8b"
        )
    return value


WeightsUri = Annotated[str, AfterValidator(_weights_uri)]


class ArchitectureConfig(TransformerShape, ArchitectureShape):
    """Explicit model shape, for models not in the catalog (or to override catalog values)."""


class AutoscalingConfig(Section):
    """Target tracking on the engine's own load. Unless set, the scale-out cooldown is the
    health-check grace period (a new task serves only after it) and the scale-in cooldown at
    least twice that. Scale out fast (a late task costs latency), scale in slow (a warm model is
    expensive to reload).
    """

    metric: Literal["engineLoad", "kvCache", "albRequests"] = "engineLoad"
    """`engineLoad`: requests waiting + running per task (metric math) against the batch the
    engine runs at once; `kvCache`: KV-cache usage per task (long contexts fill memory before
    the batch); `albRequests`: ALBRequestCountPerTarget (blind to tokens per request). The
    first two need the metrics sidecar (`operations.metricsSidecar`)."""
    target_utilization: float = Field(0.8, gt=0, le=1)
    """Share of the engine's capacity (batch size or KV cache) at which to add a task."""
    target_requests_per_target: float = Field(30.0, gt=0)
    """`albRequests` target (requests per task per minute)."""
    scale_out_cooldown_seconds: int | None = Field(None, ge=0, le=3600)
    """Wait after a scale-out before the next one; unset: the health-check grace period."""
    scale_in_cooldown_seconds: int = Field(300, ge=0, le=SCALING_COOLDOWN_MAX_SECONDS)
    """Least wait after a scale-in (raised to twice the scale-out cooldown)."""

    @model_validator(mode="after")
    def _asymmetric(self) -> AutoscalingConfig:
        out = self.scale_out_cooldown_seconds
        if out is not None and self.scale_in_cooldown_seconds < out:
            raise ValueError(
                "scaleInCooldownSeconds must be >= scaleOutCooldownSeconds: scale out fast, "
                "scale in slow"
            )
        return self


class StartupConfig(Section):
    """Inputs of the health-check grace period estimate for a cold instance (the worst case a
    scale-out meets): image pull + weight load + warm-up, times a safety factor."""

    image_gib: float = Field(10.0, gt=0, le=100)
    """Compressed image size."""
    image_pull_mib_per_second: float = Field(100.0, gt=0)
    """Image pull + extraction rate on a cold instance: on the EC2 launch type the whole image
    is downloaded and its layers decompressed, single-threaded per layer, before the container
    starts."""
    weight_load_mib_per_second: float = Field(500.0, gt=0)
    """Weight streaming rate from S3 (through the gateway endpoint) to accelerator memory."""
    warmup_seconds: int = Field(120, ge=0, le=3600)
    """Engine warm-up after the weights are loaded (memory profiling, CUDA-graph capture or
    Neuron model load, first request)."""


def _registered(value: str) -> str:
    if value not in engines.names():
        raise ValueError(f"must be one of {', '.join(engines.names())} (got {value!r})")
    return value


EngineName = Annotated[str, AfterValidator(_registered)]
"""A registered engine's name (`components.engines.names()`)."""


class ModelConfig(ServedModelConfig):
    """An LLM served by one of the registered engines (`components.engines`, docs/engines.md)
    on a GPU or Inferentia/Trainium pool. The engine's own settings (its section, or its own
    keys) are validated by the engine's schema."""

    engine: EngineName
    """The serving engine (docs/engines.md): it decides the pool kind, the image and the
    settings below that apply."""
    pool: Name
    """Key of a `gpuPools` or `managedInstancePools` entry (GPU engines) or a `neuronPools`
    entry (Neuron engines)."""
    weights_uri: WeightsUri | None = None
    """Where the weights are: an S3 prefix (streamed, or staged to disk, as the engine reads it;
    for a Neuron engine the precompiled artifact) or `efs://<file-system>/<path>` (engines that
    read EFS: in place, from a `weightStores` file system or an existing one by id). Required
    unless the engine says otherwise. Nothing is downloaded from a model hub."""
    extra_args: list[str] = Field(default_factory=list)
    """Extra engine flags (engines with a flag table), each checked against the pinned
    release's real flags; flags the platform sets from the service's own settings are
    refused."""
    architecture: str | None = None
    """Catalog id of a known architecture (e.g. llama-3.1-8b)."""
    parameters: ArchitectureConfig | None = None
    """Explicit shape; overrides catalog values field by field."""
    served_model_name: str | None = None
    """Name clients pass as `model`; unset: the service key."""
    dtype: Literal["fp32", "fp16", "bf16", "fp8", "int8", "int4", "awq", "gptq"] = "bf16"
    """Weight dtype / quantisation (sets bytes per parameter in sizing)."""
    kv_cache_dtype: Literal["auto", "fp8", "fp16", "bf16"] = "auto"
    """KV cache dtype; `auto` = 16-bit activations."""
    max_model_len: int | None = Field(None, gt=0, le=1_048_576)
    """Longest prompt + completion in tokens. Required by most engines; a Neuron artifact's
    defaults to (and may not exceed) its compiled sequence length."""
    max_concurrent_sequences: int = Field(16, gt=0, le=4096)
    """Sequences in flight per task (vLLM --max-num-seqs); sizes the KV cache."""
    gpu_memory_utilization: float = Field(0.9, gt=0.3, le=0.98)
    """Fraction of each GPU's memory vLLM may use."""
    tensor_parallel_size: int | None = Field(None, gt=0, le=64)
    """Override of the derived tensor parallel size (GPU engines)."""
    memory_overhead_fraction: float = Field(0.15, ge=0.05, le=0.5)
    """Activations/CUDA context/fragmentation headroom on weights + KV cache."""
    max_generation_seconds: int = Field(300, ge=1, le=3600)
    """Longest request (prompt + streamed completion) the service must keep open."""
    health_check_grace_period_seconds: int | None = Field(None, ge=0, le=7200)
    """Override of the estimate from `startup`."""
    startup: StartupConfig = Field(default_factory=lambda: StartupConfig.model_validate({}))
    """Inputs of the health-check grace period estimate."""
    autoscaling: AutoscalingConfig = Field(
        default_factory=lambda: AutoscalingConfig.model_validate({})
    )
    """Target tracking on the engine's load or on ALB requests per target."""

    _engine_settings: Section | None = PrivateAttr(default=None)

    @field_validator("served_model_name")
    @classmethod
    def _served_name(cls, value: str | None) -> str | None:
        if value is not None and (problem := served_name_problem(value)) is not None:
            raise ValueError(problem)
        return value

    @model_validator(mode="wrap")
    @classmethod
    def _engine_fields(cls, data: Any, handler: ModelWrapValidatorHandler[ModelConfig]) -> Any:
        """The engine's own settings, validated by its schema, then the engine's rules."""
        model, settings = validate_taking(cls.__name__, data, handler, _take_engine_settings)
        if not isinstance(settings, _Taken):
            return model
        model._engine_settings = settings.settings
        settings.engine.check_config(model)
        if VLLM_API_KEY in model.secrets:
            # vLLM-served engines then demand their own bearer key; the other engines never
            # read it, so the name there is a mistake either way.
            raise ValueError(vllm_api_key_message("secrets"))
        tp = model.tensor_parallel_size
        if tp is not None and tp & (tp - 1):
            raise ValueError("tensorParallelSize must be a power of two")
        return model

    @classmethod
    def registered_keys(cls) -> dict[str, type[BaseModel] | None]:
        """Every registered engine's own keys: its section (with its schema) or its keys."""
        return {
            key: engine.settings_model if engine.settings_key == key else None
            for key, engine in engine_keys().items()
        }

    @property
    def engine_settings(self) -> Section | None:
        """The engine's own settings (its `settings_model`), or None when it has none."""
        return self._engine_settings

    @property
    def context_length(self) -> int:
        """Tokens per sequence the service is sized for."""
        return engines.get(self.engine).context_length(self)

    @property
    def on_gpu(self) -> bool:
        """Runs on a gpuPools or managedInstancePools pool (else a neuronPools pool)."""
        return engines.get(self.engine).accelerator(self) == "gpu"


def scaling_metric_problem(model: ModelConfig, metrics_sidecar: bool) -> str | None:
    """Why the model's `autoscaling.metric` cannot work, or None: engine-load and KV-cache
    scaling read what the metrics sidecar publishes, so only for the engines it scrapes, and only
    with the sidecar on (`operations.metricsSidecar`)."""
    metric = model.autoscaling.metric
    if metric == "albRequests":
        return None
    if engines.get(model.engine).metrics_kind is None:
        if "metric" not in model.autoscaling.model_fields_set:
            return None  # the engine's default: ALB requests
        scraped = ", ".join(e.name for e in engines.registered() if e.metrics_kind is not None)
        return (
            f"{metric} scaling reads engine metrics the metrics sidecar cannot scrape from engine "
            f"{model.engine} (it knows those of {scraped}); set `albRequests`, the default for "
            "this engine"
        )
    if metrics_sidecar:
        return None
    return (
        f"{metric} scaling reads the engine's metrics, which the metrics sidecar publishes; set "
        "`albRequests` or turn `operations.metricsSidecar` on"
    )


def _engine_named(value: object) -> Engine | None:
    return engines.get(value) if isinstance(value, str) and value in engines.names() else None


def engine_keys() -> dict[str, Engine]:
    """Model keys that belong to one engine: its section's key, or its own top-level keys (by
    config name and field name)."""
    keys: dict[str, Engine] = {}
    for engine in engines.registered():
        schema = engine.settings_model
        if schema is None:
            continue
        if engine.settings_key is not None:
            keys[engine.settings_key] = engine
            continue
        for name, field in schema.model_fields.items():
            keys[name] = engine
            keys[field.alias or name] = engine
    return keys


@dataclass(frozen=True)
class _Taken:
    engine: Engine
    settings: Section | None


def _take_engine_settings(rest: dict[str, Any]) -> tuple[_Taken | None, list[InitErrorDetails]]:
    """Take the engine-owned keys out of `rest`; validate the model's engine's with its schema.
    Another engine's key is an error (when the model's engine is known)."""
    engine = _engine_named(rest.get("engine"))
    settings, errors = _engine_settings(rest, engine)
    return (_Taken(engine, settings) if engine is not None else None), errors


def _engine_settings(
    rest: dict[str, Any], engine: Engine | None
) -> tuple[Section | None, list[InitErrorDetails]]:
    """The model's engine's settings, validated, and the errors of every engine-owned key."""
    own: dict[str, Any] = {}
    errors: list[InitErrorDetails] = []
    for key, owner in engine_keys().items():
        if key not in rest:
            continue
        value = rest.pop(key)
        if owner is engine:
            own[key] = value
        elif engine is not None:
            what = "settings only apply" if owner.settings_key else "applies"
            message = f"`{key}` {what} to engine {owner.name}, not {engine.name}"
            errors.append({**value_error(message), "loc": (key,)})
    schema = engine.settings_model if engine is not None else None
    if engine is None or schema is None:
        return None, errors
    loc: tuple[str, ...] = ()
    raw: Any = own
    if engine.settings_key is not None:
        raw, loc = own.get(engine.settings_key), (engine.settings_key,)
        if raw is None:
            return None, errors
    try:
        return schema.model_validate(raw), errors
    except ValidationError as exc:
        return None, errors + [error_details(e, loc) for e in exc.errors()]
