"""`platform.models`: the LLM services, each served by an engine on an accelerator pool."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import AfterValidator, Field, model_validator

from ecs_inference.config.base import S3_URI_PATTERN, Name, Section
from ecs_inference.config.services import ServiceConfig, vllm_api_key_message
from ecs_inference.contracts import aws_limits
from ecs_inference.contracts.vllm import ENV_API_KEY as VLLM_API_KEY
from ecs_inference.specs.service import ModelServiceSpec


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


class ArchitectureConfig(Section):
    """Explicit model shape, for models not in the catalog (or to override catalog values)."""

    params_billion: float | None = Field(None, gt=0, le=2000)
    """Parameter count in billions (all experts for MoE models)."""
    layers: int | None = Field(None, gt=0, le=1000)
    """Transformer layers."""
    attention_heads: int | None = Field(None, gt=0, le=1024)
    """Query attention heads (tensor parallel size must divide them)."""
    kv_heads: int | None = Field(None, gt=0, le=1024)
    """Key/value heads (grouped-query attention); equals attentionHeads without GQA."""
    head_dim: int | None = Field(None, gt=0, le=4096)
    """Dimension of each attention head."""
    max_position_embeddings: int | None = Field(None, gt=0)
    """Longest context the model supports; maxModelLen may not exceed it."""


class NeuronCompileConfig(Section):
    """The shape the Neuron artifact was compiled for; serving must match it exactly."""

    batch_size: int = Field(gt=0, le=256)
    """Batch size the artifact was compiled for."""
    sequence_length: int = Field(gt=0, le=1_048_576)
    """Sequence length the artifact was compiled for."""
    tp_degree: int = Field(gt=0, le=64)
    """Tensor parallel degree (NeuronCores) the artifact was compiled for."""


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
    target_requests_per_target: float = Field(ModelServiceSpec.target_requests_per_target, gt=0)
    """`albRequests` target (requests per task per minute)."""
    scale_out_cooldown_seconds: int | None = Field(None, ge=0, le=3600)
    """Wait after a scale-out before the next one; unset: the health-check grace period."""
    scale_in_cooldown_seconds: int = Field(300, ge=0, le=86_400)
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


class CustomEngineConfig(Section):
    """A bring-your-own serving image (`engine: custom`); the contract it must meet is in
    docs/engines.md."""

    command: list[str] = Field(default_factory=list)
    """Container command (exec form); empty: the image's CMD."""
    port: int = Field(8000, ge=1024, le=65535)
    """Port the image listens on (all interfaces); non-root, so 1024 or above."""
    health_path: str = Field("/health", min_length=1, max_length=aws_limits.HEALTH_CHECK_PATH_MAX)
    """Path that answers 200 once the image can serve (the ALB's health check)."""
    gpus: int = Field(0, ge=0, le=16)
    """GPUs the task reserves (on a gpuPools pool); give this or `neuronDevices`."""
    neuron_devices: int = Field(0, ge=0, le=16)
    """Neuron devices mapped into the task (on a neuronPools pool)."""
    accelerator_memory_gib: float | None = Field(None, gt=0, alias="acceleratorMemoryGiB")
    """The model's whole accelerator-memory need, when no `architecture`/`parameters` sizes it."""
    sse_keep_alive_seconds: int | None = Field(None, ge=1)
    """Longest silence the image allows itself during a stream; unset: none, so the endpoint's
    idle timeout must cover `maxGenerationSeconds`."""
    warmup_seconds: int = Field(120, ge=0, le=3600)
    """Time from weights loaded to ready (grace-period input)."""


GPU_ENGINES = ("vllm", "sglang", "tgi")
"""Engines that run on a gpuPools pool (custom: when it declares gpus)."""


class ModelConfig(ServiceConfig):
    """An LLM served by vLLM, SGLang or TGI on a GPU pool, optimum-neuron on an Inferentia pool,
    or your own image (`custom`)."""

    SERVES_MODEL: ClassVar[bool] = True

    engine: Literal["vllm", "neuron", "sglang", "tgi", "custom"]
    """`vllm`, `sglang` or `tgi` on a GPU pool, `neuron` (optimum-neuron) on an
    Inferentia/Trainium pool, or `custom` (your image, settings under `custom`)."""
    pool: Name
    """Key of a `gpuPools` or `managedInstancePools` entry (vllm, sglang, tgi, custom with gpus)
    or a `neuronPools` entry (neuron, custom with neuronDevices)."""
    weights_uri: WeightsUri | None = None
    """Where the weights are: an S3 prefix (vllm, sglang: streamed; tgi: staged to disk; neuron:
    the precompiled artifact) or `efs://<file-system>/<path>` (sglang, tgi, custom: read in place
    from a `weightStores` file system or an existing one by id). Required except for custom.
    Nothing is downloaded from a model hub."""
    extra_args: list[str] = Field(default_factory=list)
    """Extra engine flags (not for custom), each checked against the pinned release's real
    flags; flags the platform sets from the service's own settings are refused."""
    max_input_tokens: int | None = Field(None, gt=0)
    """tgi: longest prompt; unset: maxModelLen - 1."""
    custom: CustomEngineConfig | None = None
    """Required for engine custom: how the image runs."""
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
    """Longest prompt + completion in tokens. Required for vllm; for neuron it defaults to
    (and may not exceed) the compiled `neuron.sequenceLength`."""
    max_concurrent_sequences: int = Field(16, gt=0, le=4096)
    """Sequences in flight per task (vLLM --max-num-seqs); sizes the KV cache."""
    gpu_memory_utilization: float = Field(0.9, gt=0.3, le=0.98)
    """Fraction of each GPU's memory vLLM may use."""
    tensor_parallel_size: int | None = Field(None, gt=0, le=64)
    """Override of the derived tensor parallel size (vllm)."""
    memory_overhead_fraction: float = Field(0.15, ge=0.05, le=0.5)
    """Activations/CUDA context/fragmentation headroom on weights + KV cache."""
    neuron: NeuronCompileConfig | None = None
    """Required for engine neuron: the compiled batch size, sequence length and tp degree."""
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

    @model_validator(mode="after")
    def _engine_fields(self) -> ModelConfig:
        declared = self.custom is not None and self.custom.accelerator_memory_gib is not None
        if self.architecture is None and self.parameters is None and not declared:
            raise ValueError(
                "give `architecture` (a catalog id) or `parameters` (explicit shape)"
                + (" or `custom.acceleratorMemoryGiB`" if self.engine == "custom" else "")
            )
        if self.engine == "custom":
            if self.custom is None:
                raise ValueError(
                    "engine custom needs `custom: {port, healthPath, gpus or neuronDevices, ...}`"
                )
            if self.image is None:
                raise ValueError("engine custom needs `image` (your serving image)")
            if bool(self.custom.gpus) == bool(self.custom.neuron_devices):
                raise ValueError(
                    "engine custom needs exactly one of custom.gpus, custom.neuronDevices"
                )
        elif self.custom is not None:
            raise ValueError("`custom` settings only apply to engine custom")
        elif self.weights_uri is None:
            raise ValueError(f"engine {self.engine} needs `weightsUri`")
        if self.extra_args and self.engine == "custom":
            raise ValueError("`extraArgs` does not apply to engine custom: set `custom.command`")
        if self.max_input_tokens is not None and self.engine != "tgi":
            raise ValueError("`maxInputTokens` applies to engine tgi")
        efs = self.weights_uri is not None and self.weights_uri.startswith("efs://")
        if efs and self.engine in ("vllm", "neuron"):
            raise ValueError(
                f"engine {self.engine} loads weights from S3 only; use an s3:// weightsUri "
                "or engine sglang/tgi/custom for EFS"
            )
        if self.engine in ("sglang", "tgi") and self.max_model_len is None:
            raise ValueError(
                f"engine {self.engine} needs `maxModelLen` (longest prompt + completion)"
            )
        if self.engine == "neuron" and self.neuron is None:
            raise ValueError(
                "engine neuron needs `neuron: {batchSize, sequenceLength, tpDegree}` matching "
                "the precompiled artifact"
            )
        if self.engine == "vllm" and self.max_model_len is None:
            raise ValueError("engine vllm needs `maxModelLen` (longest prompt + completion)")
        if (
            self.neuron is not None
            and self.max_model_len is not None
            and self.max_model_len > self.neuron.sequence_length
        ):
            raise ValueError(
                f"maxModelLen ({self.max_model_len}) exceeds the compiled neuron.sequenceLength "
                f"({self.neuron.sequence_length}); recompile the artifact or lower maxModelLen"
            )
        if self.engine != "neuron" and self.neuron is not None:
            raise ValueError("`neuron` settings only apply to engine neuron")
        if VLLM_API_KEY in self.secrets:
            # vLLM and Neuron serve through vLLM, which then demands its own bearer key; the
            # other engines never read it, so the name there is a mistake either way.
            raise ValueError(vllm_api_key_message("secrets"))
        if self.engine == "neuron" and self.tensor_parallel_size is not None:
            raise ValueError("engine neuron takes its tp degree from `neuron.tpDegree`")
        if self.tensor_parallel_size is not None and self.tensor_parallel_size & (
            self.tensor_parallel_size - 1
        ):
            raise ValueError("tensorParallelSize must be a power of two")
        return self

    @property
    def context_length(self) -> int:
        """Tokens per sequence the service is sized for."""
        if self.max_model_len is not None:
            return self.max_model_len
        if self.neuron is None:
            raise ValueError(f"engine {self.engine} has no maxModelLen")
        return self.neuron.sequence_length

    @property
    def on_gpu(self) -> bool:
        """Runs on a gpuPools pool (else a neuronPools pool)."""
        if self.engine == "custom":
            return self.custom is not None and self.custom.gpus > 0
        return self.engine in GPU_ENGINES
