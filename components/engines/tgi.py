"""Text Generation Inference 3.3.7 on NVIDIA GPUs (`text-generation-launcher`, image
`images/tgi`).

Weights are staged from S3 to local disk (TGI cannot stream from S3) or read in place from an
EFS mount. TGI's router sends SSE keep-alives itself at a fixed 15 s, so the ALB idle timeout
must hold two of them. The task environment the image reads is `contracts/tgi.py`; flags are
checked against `contracts/flags/tgi-3.3.7.json` (from `launcher/src/main.rs` at the tag).

Memory: TGI's `--cuda-memory-fraction` caps everything TGI allocates, like vLLM's utilisation,
so it equals the sizing's `gpu_memory_utilization`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from pydantic import Field

from ecs_inference.config.base import Section
from ecs_inference.contracts import flag_table
from ecs_inference.contracts import tgi as contract
from ecs_inference.contracts.engine import ENV_REGION_VARIABLES
from ecs_inference.engines.base import (
    Engine,
    LaunchDefaults,
    LaunchInputs,
    ModelSettings,
    TaskShape,
    check_extra_args,
    check_gpu_service,
    check_port,
    env_list,
    extra_args_json,
    fail,
    keepalive_for,
    pos_int,
)
from ecs_inference.engines.registry import register

# TGI's `--dtype` has no `auto`; the plan's dtype names map to the launcher's where one exists.
DTYPES = {"fp16": "float16", "float16": "float16", "bf16": "bfloat16", "bfloat16": "bfloat16"}
QUANTIZE = {"awq": "awq", "gptq": "gptq", "fp8": "fp8", "int8": "eetq"}
KV_DTYPES = {"fp8": "fp8_e4m3fn", "fp8_e4m3fn": "fp8_e4m3fn", "fp8_e5m2": "fp8_e5m2"}


@dataclass(frozen=True)
class TgiLaunch(LaunchDefaults):
    """One TGI model server (GPU). Validated on construction.

    Required: `where`, `served_model_name`, `weights_uri` (S3 prefix staged to local disk, or an
    EFS mount directory), `max_total_tokens` (the context length).
    Defaults: `max_input_tokens` max_total_tokens - 1 (TGI requires it strictly smaller),
    `num_shard` 1, `cuda_memory_fraction` 0.9, `max_concurrent_requests` 16, `dtype` None (the
    checkpoint's), `quantize` None, `kv_cache_dtype` None, `alb_idle_timeout_seconds` 60
    (at least 30: TGI's fixed 15 s keep-alive must fit twice), `port` 8000, `extra_args` ().
    """

    where: str
    served_model_name: str
    weights_uri: str
    max_total_tokens: int
    max_input_tokens: int | None = None
    num_shard: int = 1
    cuda_memory_fraction: float = 0.9
    max_concurrent_requests: int = 16
    dtype: str | None = None
    quantize: str | None = None
    kv_cache_dtype: str | None = None
    alb_idle_timeout_seconds: int = 60
    port: int = contract.DEFAULT_PORT
    extra_args: tuple[str, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        where = self.where
        table = flag_table.load(contract.FLAG_TABLE)
        if "/" in self.served_model_name or self.served_model_name.startswith("."):
            raise fail(
                where,
                "servedModelName",
                f"{self.served_model_name!r}: TGI reports its model directory's path, so the "
                "served name must be one path component (no '/', not starting with '.')",
            )
        total = self.max_total_tokens
        if total < 2:
            raise fail(where, "maxModelLen", "TGI needs at least 2 tokens (prompt + one)")
        max_input = total - 1 if self.max_input_tokens is None else self.max_input_tokens
        object.__setattr__(self, "max_input_tokens", max_input)
        # launcher/src/main.rs: "`max_input_tokens` must be < `max_total_tokens`".
        if max_input >= total:
            raise fail(
                where,
                "maxInputTokens",
                f"{max_input} must be below maxModelLen {total} (TGI refuses to start otherwise)",
            )
        pos_int(where, "tensorParallelSize", self.num_shard)
        keepalive_for(where, self.alb_idle_timeout_seconds, None)
        if self.alb_idle_timeout_seconds < 2 * contract.SSE_KEEPALIVE_SECONDS:
            raise fail(
                where,
                "engine",
                f"TGI sends SSE keep-alives every {contract.SSE_KEEPALIVE_SECONDS} s (fixed), "
                f"so the ALB idle timeout of {self.alb_idle_timeout_seconds} s must be at least "
                f"{2 * contract.SSE_KEEPALIVE_SECONDS} s; raise the endpoint's idle timeout",
            )
        check_port(where, "port", self.port)
        for key, flag, value in (
            ("dtype", "--dtype", self.dtype),
            ("quantization", "--quantize", self.quantize),
            ("kvCacheDtype", "--kv-cache-dtype", self.kv_cache_dtype),
        ):
            choices = table.flags[flag].choices
            if value is not None and choices is not None and value not in choices:
                raise fail(
                    where, key, f"{value!r} is not a TGI {flag} value ({', '.join(choices)})"
                )
        if self.num_shard > 1 and self.quantize == "exl2":
            raise fail(where, "quantization", "TGI cannot shard exl2 models (num_shard > 1)")
        object.__setattr__(
            self,
            "extra_args",
            check_extra_args(where, self.extra_args, table, contract.MANAGED_FLAGS),
        )

    @classmethod
    def from_plan(
        cls,
        where: str,
        served_model_name: str,
        weights_uri: str,
        *,
        context_length: int,
        tensor_parallel_size: int,
        gpu_memory_utilization: float,
        max_concurrent_sequences: int,
        dtype: str,
        kv_cache_dtype: str,
        alb_idle_timeout_seconds: int,
        max_input_tokens: int | None = None,
        extra_args: Sequence[str] = (),
    ) -> TgiLaunch:
        """Map the plan's engine-neutral names (`bf16`, `awq`, `fp8` KV) to TGI's flags."""
        quantize = QUANTIZE.get(dtype)
        tgi_dtype = DTYPES.get(dtype)
        if quantize is None and tgi_dtype is None:
            raise fail(
                where,
                "dtype",
                f"{dtype!r} has no TGI equivalent (float16, bfloat16, or quantised awq, gptq, "
                "fp8, int8 as eetq)",
            )
        if kv_cache_dtype in ("auto", "fp16", "bf16"):
            kv = None  # TGI keeps the KV cache in the model dtype unless told fp8
        elif kv_cache_dtype in KV_DTYPES:
            kv = KV_DTYPES[kv_cache_dtype]
        else:
            raise fail(where, "kvCacheDtype", f"{kv_cache_dtype!r} has no TGI equivalent")
        return cls(
            where=where,
            served_model_name=served_model_name,
            weights_uri=weights_uri,
            max_total_tokens=context_length,
            max_input_tokens=max_input_tokens,
            num_shard=tensor_parallel_size,
            cuda_memory_fraction=gpu_memory_utilization,
            max_concurrent_requests=max_concurrent_sequences,
            dtype=tgi_dtype,
            quantize=quantize,
            kv_cache_dtype=kv,
            alb_idle_timeout_seconds=alb_idle_timeout_seconds,
            extra_args=tuple(extra_args),
        )

    @property
    def gpus(self) -> int:
        """GPUs the task reserves (`resourceRequirements` GPU)."""
        return self.num_shard

    @property
    def health_path(self) -> str:
        """TGI's router `/health`."""
        return contract.HEALTH_PATH

    @property
    def sse_keepalive_seconds(self) -> int | None:
        """TGI's router sends keep-alives at a fixed interval."""
        return contract.SSE_KEEPALIVE_SECONDS

    def container_environment(self, region: str | None = None) -> list[dict[str, str]]:
        """The container's `environment` (sorted; secrets go in `secrets`)."""
        return env_list(
            {
                contract.ENV_SERVED_MODEL_NAME: self.served_model_name,
                contract.ENV_PORT: str(self.port),
                contract.ENV_EXTRA_ARGS: extra_args_json(self.extra_args),
                contract.ENV_WEIGHTS_URI: self.weights_uri,
                contract.ENV_NUM_SHARD: str(self.num_shard),
                contract.ENV_MAX_INPUT_TOKENS: str(self.max_input_tokens),
                contract.ENV_MAX_TOTAL_TOKENS: str(self.max_total_tokens),
                contract.ENV_CUDA_MEMORY_FRACTION: repr(float(self.cuda_memory_fraction)),
                contract.ENV_MAX_CONCURRENT_REQUESTS: str(self.max_concurrent_requests),
                contract.ENV_DTYPE: self.dtype,
                contract.ENV_KV_CACHE_DTYPE: self.kv_cache_dtype,
                contract.ENV_QUANTIZE: self.quantize,
                contract.ENV_HF_HUB_OFFLINE: "1",
                **{variable: region for variable in ENV_REGION_VARIABLES},
            }
        )

    def check_task(self, where: str, task: TaskShape) -> None:
        """GPUs reserved = shards; weights on S3 or EFS."""
        check_gpu_service(where, task, self.gpus)


class TgiSettings(Section):
    """TGI's own keys, beside the model's others."""

    max_input_tokens: int | None = Field(None, gt=0)
    """tgi: longest prompt; unset: maxModelLen - 1."""


class Tgi(Engine):
    """Text Generation Inference on NVIDIA GPUs; weights staged from S3 or read from EFS."""

    name = "tgi"
    description = "Text Generation Inference on a GPU pool (image images/tgi)"
    settings_model = TgiSettings

    def launch(self, inputs: LaunchInputs) -> TgiLaunch:
        """TGI on the GPUs the fit chose; every error names its config path."""
        model = inputs.model
        settings = self.settings(model)
        assert inputs.weights_uri is not None and isinstance(settings, TgiSettings)
        return TgiLaunch.from_plan(
            inputs.where,
            inputs.served_model_name,
            inputs.weights_uri,
            context_length=self.context_length(model),
            tensor_parallel_size=inputs.accelerators,
            gpu_memory_utilization=model.gpu_memory_utilization,
            max_concurrent_sequences=model.max_concurrent_sequences,
            dtype=model.dtype,
            kv_cache_dtype=model.kv_cache_dtype,
            alb_idle_timeout_seconds=inputs.idle_timeout_seconds,
            max_input_tokens=settings.max_input_tokens,
            extra_args=model.extra_args,
        )

    def warmup_seconds(self, model: ModelSettings) -> float:
        """A prefill at `--max-batch-prefill-tokens` to size the KV cache, then CUDA graphs."""
        del model
        return contract.WARMUP_SECONDS


ENGINE = register(Tgi())
