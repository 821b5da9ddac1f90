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
from dataclasses import dataclass
from typing import Literal

from pydantic import Field, model_validator

from ecs_inference import iam, sizing
from ecs_inference.config.base import S3Uri, Section, raise_problems
from ecs_inference.contracts.engine import (
    DEFAULT_SSE_KEEPALIVE_SECONDS,
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
    Launch,
    MetricsTarget,
    ModelSettings,
    env_list,
    gpu_demand,
    quantization_method,
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


def lora_settings(model: ModelSettings) -> VllmSettings:
    """The model's LoRA settings (vLLM's defaults and no adapter when it gives none)."""
    settings = model.engine_settings
    return settings if isinstance(settings, VllmSettings) else VllmSettings.model_validate({})


@dataclass(frozen=True)
class VllmServed(Launch):
    """What every vLLM-served launch shares (this one and the Neuron image's, which runs vLLM
    0.11.0 under optimum-neuron): its SSE keep-alive, vLLM's health path and environment."""

    keepalive_seconds: int = DEFAULT_SSE_KEEPALIVE_SECONDS
    """SSE keep-alive interval (default 15 s); at most half the ALB idle timeout."""

    def __post_init__(self) -> None:
        where, keepalive = type(self).__name__, self.keepalive_seconds
        idle = self.alb_idle_timeout_seconds
        # "Well inside": at least two keep-alives fit in one idle period, so one delayed write
        # (GC pause, event-loop stall during a long prefill) does not cost the stream.
        if not 1 <= keepalive <= idle // 2:
            raise EngineLaunchError(
                f"{where}.keepalive_seconds {keepalive} must be between 1 and half the "
                f"ALB idle timeout ({idle // 2} s of {idle} s)"
            )
        if not 1024 <= self.port <= 65535:
            raise EngineLaunchError(
                f"{where}.port {self.port} must be an unprivileged port 1024-65535"
            )
        super().__post_init__()

    @property
    def health_path(self) -> str:
        """vLLM's `/health`: 200 once the engine is ready (a keep-alive proxy in front of it
        forwards it unchanged)."""
        return HEALTH_PATH

    @property
    def sse_keepalive_seconds(self) -> int | None:
        """vLLM's own `--sse-keep-alive-interval`, or the keep-alive proxy's."""
        return self.keepalive_seconds

    def server_environment(self) -> dict[str, str | None]:
        """The variables every vLLM-served image reads (None: unset); the region is the
        launch's own (`aws_region`, the stack's), which the S3 streamer needs."""
        idle = self.alb_idle_timeout_seconds
        return self.engine_environment(self.aws_region) | {
            ENV_SSE_KEEPALIVE_SECONDS: str(self.keepalive_seconds),
            ENV_NO_USAGE_STATS: "1",
            ENV_HTTP_KEEPALIVE: str(idle + KEEPALIVE_MARGIN_SECONDS),
        }


@dataclass(frozen=True)
class VllmLaunch(VllmServed):
    """One vLLM (GPU) model server: the model's settings on the GPUs its fit chose. Validated
    on construction."""

    flags = FLAG_TABLE
    managed_flags = MANAGED_FLAGS

    @property
    def tensor_parallel_size(self) -> int:
        """GPUs the model is sharded over (the fit's)."""
        return self.inputs.accelerators

    @property
    def max_num_seqs(self) -> int:
        """`--max-num-seqs`: `maxConcurrentSequences`."""
        return self.model.max_concurrent_sequences

    @property
    def dtype(self) -> str:
        """`--dtype`: the torch dtype of the model's (`auto` for quantised weights)."""
        return torch_dtype(self.model.dtype)

    @property
    def quantization(self) -> str | None:
        """`--quantization`: the method a quantised dtype names; None: none."""
        return quantization_method(self.model.dtype)

    @property
    def lora(self) -> VllmSettings:
        """The LoRA adapters and their slots (default none: LoRA off); the entrypoint stages
        the adapters."""
        return lora_settings(self.model)

    def container_environment(self, region: str | None = None) -> list[dict[str, str]]:
        """The container's `environment` (sorted; no secrets). The region is the launch's own
        (`aws_region`), so `region` is not read."""
        del region
        model = self.model
        return env_list(
            self.server_environment()
            | {
                ENV_WEIGHTS_URI: self.weights_uri,
                ENV_TENSOR_PARALLEL_SIZE: str(self.tensor_parallel_size),
                ENV_MAX_MODEL_LEN: str(self.context_length),
                ENV_GPU_MEMORY_UTILIZATION: repr(float(model.gpu_memory_utilization)),
                ENV_MAX_NUM_SEQS: str(self.max_num_seqs),
                ENV_DTYPE: self.dtype,
                ENV_KV_CACHE_DTYPE: model.kv_cache_dtype,
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
    launch_class = VllmLaunch

    def check_config(self, model: ModelSettings) -> None:
        """The shared rules, then the adapters against the service (`VllmSettings.problems`),
        all reported together at their paths."""
        super().check_config(model)
        if model.weights_uri is not None:
            problems = lora_settings(model).problems(model.weights_uri, model.served_model_name)
            raise_problems(type(self).__name__, problems)

    def demand(self, name: str, model: ModelSettings) -> Demand:
        """The VRAM method's demand, with the adapters' GPU buffers (`sizing.lora`)."""
        demand = gpu_demand(name, model, model.tensor_parallel_size)
        lora = lora_settings(model).lora_need(demand.need, model.architecture, model.parameters)
        if lora is None:
            return demand
        return GpuDemand(
            name,
            demand.need.with_lora(lora),
            model.gpu_memory_utilization,
            model.tensor_parallel_size,
        )


ENGINE = register(Vllm())
