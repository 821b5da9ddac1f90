"""vLLM 0.33.0 on NVIDIA GPUs (`vllm serve`, image `images/vllm`).

Weights stream from S3 with the Run:ai model streamer (`--load-format runai_streamer`, model
`s3://bucket/prefix/`); vLLM itself pulls the small config/tokenizer files from the same prefix,
so nothing comes from a model hub (`HF_HUB_OFFLINE=1` makes any accidental hub lookup fail fast
instead of downloading). vLLM 0.33.0 sends SSE keep-alive comments itself
(`--sse-keep-alive-interval`).

LoRA adapters (`adapters`, the engine's own keys): served beside the base model under their own
names, staged from S3 by the entrypoint before vLLM starts, their GPU buffers counted by the fit
(`sizing.lora`). The adapter list is part of the task definition: vLLM's runtime loading
(`/v1/load_lora_adapter`, `VLLM_ALLOW_RUNTIME_LORA_UPDATING`) is an unauthenticated admin
endpoint on the serving port, which the ALB and the gateway would expose to every caller.

Why keep-alives at all: an ALB closes a connection on which no byte moved for its idle timeout
(1–4000 s). A long prefill, a queued request or a slow generation can be silent for longer than
that; an SSE comment line is ignored by clients but resets the timer.

The task environment the image reads is `contracts/vllm.py`; `images/vllm/entrypoint.py` turns it
into the command line, and the tests check every flag against the pinned release's own argument
definitions (`tools/engine_flags.py`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Literal, Protocol

from pydantic import Field, model_validator

from ecs_inference import iam, sizing
from ecs_inference.config.base import S3Uri, Section, raise_problems
from ecs_inference.contracts import aws_limits, flag_table
from ecs_inference.contracts.engine import (
    DEFAULT_PORT,
    DEFAULT_SSE_KEEPALIVE_SECONDS,
    ENV_EXTRA_ARGS,
    ENV_HF_HUB_OFFLINE,
    ENV_PORT,
    ENV_SERVED_MODEL_NAME,
    ENV_SSE_KEEPALIVE_SECONDS,
    HEALTH_PATH,
)
from ecs_inference.contracts.vllm import (
    ENV_DTYPE,
    ENV_GPU_MEMORY_UTILIZATION,
    ENV_HTTP_KEEPALIVE,
    ENV_KV_CACHE_DTYPE,
    ENV_LORA_ADAPTERS,
    ENV_MAX_CPU_LORAS,
    ENV_MAX_LORA_RANK,
    ENV_MAX_LORAS,
    ENV_MAX_MODEL_LEN,
    ENV_MAX_NUM_SEQS,
    ENV_NO_USAGE_STATS,
    ENV_QUANTIZATION,
    ENV_TENSOR_PARALLEL_SIZE,
    ENV_WEIGHTS_URI,
)
from ecs_inference.engines.base import (
    KEEPALIVE_MARGIN_SECONDS,
    Engine,
    EngineLaunchError,
    LaunchDefaults,
    LaunchInputs,
    MetricsTarget,
    ModelSettings,
    TaskArgsError,
    TaskShape,
    check_extra_args,
    check_s3_source,
    env_list,
    extra_args_json,
    gpu_demand,
    quantization_method,
    s3_readable,
    served_name_problem,
    torch_dtype,
)
from ecs_inference.engines.registry import register
from ecs_inference.sizing import lora as lora_sizing
from ecs_inference.sizing.instance_types import Demand, GpuDemand

VERSION = "0.33.0"
"""vLLM release of the GPU image (base `vllm/vllm-openai:v0.33.0`)."""
BASE_IMAGE = f"vllm/vllm-openai:v{VERSION}"
"""Pinned upstream image the GPU Dockerfile builds on."""
FLAG_TABLE = f"vllm-{VERSION}"
"""The committed flags of `vllm serve` (`contracts/flags/<name>.json`, from the wheel)."""
METRICS_KIND = "vllm"
"""The sidecar's scrape spec of vLLM's Prometheus families (`contracts.metrics`)."""

MANAGED_FLAGS = frozenset(
    {
        "--model",
        "--served-model-name",
        "--load-format",
        "--tensor-parallel-size",
        "-tp",
        "--max-model-len",
        "--gpu-memory-utilization",
        "--max-num-seqs",
        "--dtype",
        "--kv-cache-dtype",
        "--quantization",
        "-q",
        "--sse-keep-alive-interval",
        "--host",
        "--port",
        "--download-dir",
        "--trust-remote-code",
        "--enable-lora",
        "--lora-modules",
        "--max-loras",
        "--max-lora-rank",
        "--max-cpu-loras",
    }
)
"""Flags the vLLM launch sets itself; `extraArgs` may not."""


MaxLoraRank = Literal[1, 8, 16, 32, 64, 128, 256, 320, 512]
"""vLLM 0.33.0's `MaxLoRARanks` (`vllm/config/lora.py`), the `--max-lora-rank` choices;
`lora_sizing.MAX_LORA_RANKS` is the same set, checked against the flag table by the tests."""


class LoraAdapterConfig(Section):
    """One LoRA adapter of the service's base model, served under its own name."""

    name: str
    """Name clients pass as `model` (and the gateway routes); 1-128 of letters, digits and
    ._:/-, distinct from the service's servedModelName and the other adapters'."""
    source: S3Uri
    """S3 prefix of the PEFT adapter (`adapter_config.json` + `adapter_model.safetensors`), in
    the weights' bucket; staged to the task's disk at start, never fetched from a hub."""
    base_model: str
    """The weightsUri the adapter was trained on: must equal the service's `weightsUri` (an
    adapter applied to other weights loads but answers wrongly)."""
    rank: int = Field(gt=0, le=max(lora_sizing.MAX_LORA_RANKS))
    """The adapter's LoRA rank (`r` in its adapter_config.json, checked at start); at most the
    service's maxLoraRank."""

    @model_validator(mode="after")
    def _name(self) -> LoraAdapterConfig:
        raise_problems(type(self).__name__, [(("name",), served_name_problem(self.name))])
        return self


class VllmSettings(Section):
    """vLLM's own keys, beside the model's others: LoRA adapters (docs/engines.md)."""

    adapters: list[LoraAdapterConfig] = Field(default_factory=list[LoraAdapterConfig])
    """vllm: LoRA adapters served beside the base model (default none: LoRA off). The list is
    part of the task definition: changing it is a normal deploy of the service."""
    max_loras: int = Field(lora_sizing.DEFAULT_MAX_LORAS, gt=0, le=256)
    """vllm: adapters in one batch (`--max-loras`, vLLM's default 1): the GPU slots the fit
    counts. Requests for more adapters than this wait for a slot; set it to the number of
    adapters to serve them all at once."""
    max_lora_rank: MaxLoraRank = lora_sizing.DEFAULT_MAX_LORA_RANK
    """vllm: rank of each GPU slot (`--max-lora-rank`, vLLM's default 16; one of 1, 8, 16, 32,
    64, 128, 256, 320, 512); every adapter's rank must be at most this."""
    max_cpu_loras: int | None = Field(None, gt=0, le=4096)
    """vllm: adapters cached in host memory (`--max-cpu-loras`); unset: maxLoras (vLLM's
    default); at least maxLoras."""

    def problems(
        self, weights_uri: str, served_model_name: str | None
    ) -> list[tuple[tuple[str | int, ...], str | None]]:
        """Every problem of the adapters on a service of `weights_uri` (an S3 URI) served as
        `served_model_name` (None: its key), each at its path below the model: a rank above
        maxLoraRank, another base model, a source outside the weights' bucket (the task role
        reads one bucket, with the weights' KMS key), a name taken; maxCpuLoras below
        maxLoras."""
        bucket = iam.split_s3_uri(weights_uri)[0]
        taken = {served_model_name}
        problems: list[tuple[tuple[str | int, ...], str | None]] = []
        for i, a in enumerate(self.adapters):
            at = ("adapters", i)
            if a.rank > self.max_lora_rank:
                problems.append(
                    (
                        (*at, "rank"),
                        f"rank {a.rank} is above maxLoraRank {self.max_lora_rank}: vLLM sizes "
                        "every adapter slot at maxLoraRank and refuses a larger adapter; raise "
                        "maxLoraRank to at least the rank",
                    )
                )
            if a.base_model.rstrip("/") != weights_uri.rstrip("/"):
                problems.append(
                    (
                        (*at, "baseModel"),
                        f"{a.base_model!r} is not this service's model ({weights_uri}): an "
                        "adapter only works on the weights it was trained on; serve it from a "
                        "service of that model",
                    )
                )
            if iam.split_s3_uri(a.source)[0] != bucket:
                problems.append(
                    (
                        (*at, "source"),
                        f"must be in the weights' bucket {bucket} (the task role reads one "
                        "bucket, with the weights' KMS key); copy the adapter there",
                    )
                )
            if a.name in taken:
                problems.append(
                    ((*at, "name"), f"{a.name!r} is already the name of this service's model")
                )
            taken.add(a.name)
        cpu = self.max_cpu_loras
        if cpu is not None and cpu < self.max_loras:
            problems.append(
                (("maxCpuLoras",), f"{cpu} is below maxLoras {self.max_loras} (vLLM refuses it)")
            )
        return problems

    def lora_need(
        self, need: sizing.MemoryNeed, architecture: str | None, shape: object
    ) -> lora_sizing.LoraNeed | None:
        """The adapters' GPU buffers on `need`'s model (None without adapters); `shape`: the
        service's `parameters` (their hiddenSize, intermediateSize, vocabSize if all given)."""
        if not self.adapters:
            return None
        shaped = lora_sizing.lora_shape(architecture, shape)
        return lora_sizing.LoraNeed(self, need.model, shaped)


class ServerSettings(Protocol):
    """The settings every vLLM-served image shares (this one and the Neuron image, which runs
    vLLM 0.11.0 under optimum-neuron)."""

    @property
    def served_model_name(self) -> str: ...
    @property
    def keepalive_seconds(self) -> int: ...
    @property
    def alb_idle_timeout_seconds(self) -> int: ...
    @property
    def port(self) -> int: ...
    @property
    def aws_region(self) -> str | None: ...
    @property
    def extra_args(self) -> tuple[str, ...]: ...


def check_server(where: str, launch: ServerSettings) -> None:
    """What every vLLM-served launch decides, checked: the keep-alive inside the ALB idle
    timeout and the port."""
    keepalive_seconds = launch.keepalive_seconds
    port = launch.port
    idle_timeout = launch.alb_idle_timeout_seconds
    # "Well inside": at least two keep-alives fit in one idle period, so one delayed write
    # (GC pause, event-loop stall during a long prefill) does not cost the stream.
    if not 1 <= keepalive_seconds <= idle_timeout // 2:
        raise EngineLaunchError(
            f"{where}.keepalive_seconds {keepalive_seconds} must be between 1 and half the "
            f"ALB idle timeout ({idle_timeout // 2} s of {idle_timeout} s)"
        )
    if not 1024 <= port <= 65535:
        raise EngineLaunchError(f"{where}.port {port} must be an unprivileged port 1024-65535")


def positive_int(where: str, name: str, value: int) -> None:
    """`value` is a positive integer, else an `EngineLaunchError` naming `where.name`."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise EngineLaunchError(f"{where}.{name} must be a positive integer, got {value!r}")


def server_environment(launch: ServerSettings) -> dict[str, str | None]:
    """The variables every vLLM-served image reads (None: unset)."""
    return {
        ENV_SERVED_MODEL_NAME: launch.served_model_name,
        ENV_PORT: str(launch.port),
        ENV_SSE_KEEPALIVE_SECONDS: str(launch.keepalive_seconds),
        ENV_EXTRA_ARGS: extra_args_json(launch.extra_args),
        ENV_HF_HUB_OFFLINE: "1",
        ENV_NO_USAGE_STATS: "1",
        ENV_HTTP_KEEPALIVE: str(launch.alb_idle_timeout_seconds + KEEPALIVE_MARGIN_SECONDS),
        "AWS_REGION": launch.aws_region,
        "AWS_DEFAULT_REGION": launch.aws_region,
    }


class ServerDefaults(LaunchDefaults):
    """What every vLLM-served launch shares besides `LaunchDefaults`."""

    keepalive_seconds: int

    @property
    def health_path(self) -> str:
        """vLLM's `/health`: 200 once the engine is ready (a keep-alive proxy in front of it
        forwards it unchanged)."""
        return HEALTH_PATH

    @property
    def sse_keepalive_seconds(self) -> int | None:
        """vLLM's own `--sse-keep-alive-interval`, or the keep-alive proxy's."""
        return self.keepalive_seconds


@dataclass(frozen=True)
class VllmLaunch(ServerDefaults):
    """Settings of one vLLM (GPU) model server. Validated on construction."""

    served_model_name: str
    """Model id clients send in the OpenAI `model` field."""
    weights_uri: str
    """`s3://bucket/prefix/` with safetensors weights, config.json and tokenizer files."""
    max_model_len: int
    """Context length (prompt + generation) the KV cache is sized for."""
    tensor_parallel_size: int = 1
    """GPUs the model is sharded over."""
    gpu_memory_utilization: float = 0.9
    """Fraction of each GPU's memory vLLM may use."""
    max_num_seqs: int = 256
    """Maximum concurrent sequences."""
    dtype: str = "auto"
    """Weight/activation dtype vLLM takes (`auto`, `bfloat16`, ...)."""
    kv_cache_dtype: str = "auto"
    """KV cache dtype."""
    quantization: str | None = None
    """Quantization method; None: none or auto-detected."""
    keepalive_seconds: int = DEFAULT_SSE_KEEPALIVE_SECONDS
    """SSE keep-alive interval; at most half the ALB idle timeout."""
    alb_idle_timeout_seconds: int = aws_limits.ALB_IDLE_TIMEOUT_DEFAULT
    """The endpoint's idle timeout (pass the real value); the HTTP keep-alive is set above it."""
    port: int = DEFAULT_PORT
    """Container port."""
    aws_region: str | None = None
    """Region of the weights bucket for the S3 streamer; None: the SDK's own resolution."""
    extra_args: tuple[str, ...] = field(default_factory=tuple)
    """Extra `vllm serve` flags; flags the fields above control are rejected."""
    lora: VllmSettings = field(default_factory=lambda: VllmSettings.model_validate({}))
    """The LoRA adapters and their slots, as the service's settings validated them (default
    none: LoRA off); the entrypoint stages the adapters."""

    def __post_init__(self) -> None:
        where = "VllmLaunch"
        object.__setattr__(self, "extra_args", tuple(self.extra_args))
        check_server(where, self)
        tp = self.tensor_parallel_size
        positive_int(where, "tensor_parallel_size", tp)
        if tp & (tp - 1):
            raise EngineLaunchError(f"{where}.tensor_parallel_size {tp} must be a power of two")

    @property
    def gpus(self) -> int:
        """GPUs the task must reserve (`resourceRequirements` type GPU)."""
        return self.tensor_parallel_size

    def container_environment(self, region: str | None = None) -> list[dict[str, str]]:
        """The container's `environment` (sorted; no secrets). The region is the launch's own
        (`aws_region`), so `region` is not read."""
        del region
        return env_list(
            server_environment(self)
            | {
                ENV_WEIGHTS_URI: self.weights_uri,
                ENV_TENSOR_PARALLEL_SIZE: str(self.tensor_parallel_size),
                ENV_MAX_MODEL_LEN: str(self.max_model_len),
                ENV_GPU_MEMORY_UTILIZATION: repr(float(self.gpu_memory_utilization)),
                ENV_MAX_NUM_SEQS: str(self.max_num_seqs),
                ENV_DTYPE: self.dtype,
                ENV_KV_CACHE_DTYPE: self.kv_cache_dtype,
                ENV_QUANTIZATION: self.quantization,
                **self._lora_environment(),
            }
        )

    def _lora_environment(self) -> dict[str, str | None]:
        """The adapters' variables (none without adapters)."""
        lora = self.lora
        if not lora.adapters:
            return {}
        modules = [{"name": a.name, "source": a.source, "rank": a.rank} for a in lora.adapters]
        return {
            ENV_LORA_ADAPTERS: json.dumps(modules, separators=(",", ":")),
            ENV_MAX_LORAS: str(lora.max_loras),
            ENV_MAX_LORA_RANK: str(lora.max_lora_rank),
            ENV_MAX_CPU_LORAS: str(lora.max_cpu_loras or lora.max_loras),
        }

    @property
    def adapter_names(self) -> tuple[str, ...]:
        """The adapters' served names."""
        return tuple(a.name for a in self.lora.adapters)

    @property
    def adapter_prefixes(self) -> tuple[str, ...]:
        """The S3 key prefixes of the adapters (the task role reads them too)."""
        return tuple(iam.split_s3_uri(a.source)[1] for a in self.lora.adapters)

    def metrics_target(self) -> MetricsTarget | None:
        """vLLM's `/metrics` on the serving port."""
        return MetricsTarget(METRICS_KIND, self.port)

    def check_task(self, where: str, task: TaskShape) -> None:
        """GPUs reserved = tensor parallel size; weights read from the task role's S3 prefix."""
        if task.gpu_count != self.tensor_parallel_size:
            raise TaskArgsError(
                f"{where}: gpu_count {task.gpu_count} must equal the tensor parallel size "
                f"{self.tensor_parallel_size} (vLLM shards the model over exactly that many "
                "GPUs, and ECS must reserve them)"
            )
        if task.neuron_devices:
            raise TaskArgsError(f"{where}: neuron_devices only apply to a NeuronLaunch")
        check_s3_source(where, task, self.weights_uri)
        readable = [task.weights_prefix or "", *task.adapter_prefixes]
        for adapter in self.lora.adapters:
            if not s3_readable(adapter.source, task.weights_bucket, readable):
                raise TaskArgsError(
                    f"{where}: adapter {adapter.name} is read from {adapter.source} but the task "
                    f"role may only read s3://{task.weights_bucket}/ under {readable}"
                )


class Vllm(Engine):
    """vLLM on NVIDIA GPUs; weights streamed from S3."""

    name = "vllm"
    description = "vLLM on a GPU pool (image images/vllm)"
    reads_efs = False
    streams_from_s3 = True
    metrics_kind = METRICS_KIND
    gateway_provider = "hosted_vllm"
    names_itself_when_too_big = False
    settings_model = VllmSettings

    def check_config(self, model: ModelSettings) -> None:
        """The shared rules, then the adapters against the service (`VllmSettings.problems`),
        all reported together at their paths."""
        super().check_config(model)
        if model.weights_uri is not None:
            problems = self.lora_settings(model).problems(
                model.weights_uri, model.served_model_name
            )
            raise_problems(type(self).__name__, problems)

    def demand(self, name: str, model: ModelSettings) -> Demand:
        """The VRAM method's demand, with the adapters' GPU buffers (`sizing.lora`)."""
        demand = gpu_demand(name, model, model.tensor_parallel_size)
        lora = self.lora_settings(model).lora_need(
            demand.need, model.architecture, model.parameters
        )
        if lora is None:
            return demand
        return GpuDemand(
            name,
            demand.need.with_lora(lora),
            model.gpu_memory_utilization,
            model.tensor_parallel_size,
        )

    def launch(self, inputs: LaunchInputs) -> VllmLaunch:
        """vLLM on the GPUs the fit chose, its flags checked against the pinned release."""
        model, fit = inputs.model, inputs.fit
        assert isinstance(fit, sizing.GpuFit) and inputs.weights_uri is not None
        return VllmLaunch(
            served_model_name=inputs.served_model_name,
            weights_uri=inputs.weights_uri,
            max_model_len=self.context_length(model),
            tensor_parallel_size=fit.tp_size,
            gpu_memory_utilization=model.gpu_memory_utilization,
            max_num_seqs=model.max_concurrent_sequences,
            dtype=torch_dtype(model.dtype),
            kv_cache_dtype=model.kv_cache_dtype,
            quantization=quantization_method(model.dtype),
            alb_idle_timeout_seconds=inputs.idle_timeout_seconds,
            aws_region=inputs.region,
            extra_args=check_extra_args(
                inputs.where, model.extra_args, flag_table.load(FLAG_TABLE), MANAGED_FLAGS
            ),
            lora=self.lora_settings(model),
        )

    def lora_settings(self, model: ModelSettings) -> VllmSettings:
        """The model's LoRA settings (vLLM's defaults and no adapter when it gives none)."""
        settings = self.settings(model)
        return settings if isinstance(settings, VllmSettings) else VllmSettings.model_validate({})


ENGINE = register(Vllm())
