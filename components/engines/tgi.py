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

from dataclasses import dataclass

from pydantic import Field

from ecs_inference.config.base import Section
from ecs_inference.contracts import flag_table
from ecs_inference.contracts import tgi as contract
from ecs_inference.engines.base import (
    Engine,
    Launch,
    ModelSettings,
    check_flag_values,
    check_port,
    env_list,
    fail,
)
from ecs_inference.engines.registry import register

# TGI's `--dtype` has no `auto`; the plan's dtype names map to the launcher's where one exists.
DTYPES = {"fp16": "float16", "float16": "float16", "bf16": "bfloat16", "bfloat16": "bfloat16"}
QUANTIZE = {"awq": "awq", "gptq": "gptq", "fp8": "fp8", "int8": "eetq"}
KV_DTYPES = {"fp8": "fp8_e4m3fn", "fp8_e4m3fn": "fp8_e4m3fn", "fp8_e5m2": "fp8_e5m2"}


@dataclass(frozen=True)
class TgiLaunch(Launch):
    """One TGI model server (GPU): the model's settings, mapped to TGI's names, on the GPUs its
    fit chose. Validated on construction."""

    flags = contract.FLAG_TABLE
    managed_flags = contract.MANAGED_FLAGS

    def __post_init__(self) -> None:
        where, name = self.where, self.served_model_name
        if "/" in name or name.startswith("."):
            raise fail(
                where,
                "servedModelName",
                f"{name!r}: TGI reports its model directory's path, so the served name must be "
                "one path component (no '/', not starting with '.')",
            )
        total, max_input = self.context_length, self.max_input_tokens
        if total < 2:
            raise fail(where, "maxModelLen", "TGI needs at least 2 tokens (prompt + one)")
        # launcher/src/main.rs: "`max_input_tokens` must be < `max_total_tokens`".
        if max_input >= total:
            raise fail(
                where,
                "maxInputTokens",
                f"{max_input} must be below maxModelLen {total} (TGI refuses to start otherwise)",
            )
        idle = self.alb_idle_timeout_seconds
        if idle < 2 * contract.SSE_KEEPALIVE_SECONDS:
            raise fail(
                where,
                "engine",
                f"TGI sends SSE keep-alives every {contract.SSE_KEEPALIVE_SECONDS} s (fixed), "
                f"so the ALB idle timeout of {idle} s must be at least "
                f"{2 * contract.SSE_KEEPALIVE_SECONDS} s; raise the endpoint's idle timeout",
            )
        check_port(where, "port", self.port)
        dtype = self.model.dtype
        if self.quantize is None and self.dtype is None:
            raise fail(
                where,
                "dtype",
                f"{dtype!r} has no TGI equivalent (float16, bfloat16, or quantised awq, gptq, "
                "fp8, int8 as eetq)",
            )
        kv_cache_dtype = self.model.kv_cache_dtype
        if kv_cache_dtype not in ("auto", "fp16", "bf16", *KV_DTYPES):
            raise fail(where, "kvCacheDtype", f"{kv_cache_dtype!r} has no TGI equivalent")
        rows = (
            ("dtype", "--dtype", self.dtype),
            ("quantization", "--quantize", self.quantize),
            ("kvCacheDtype", "--kv-cache-dtype", self.kv_cache_dtype),
        )
        check_flag_values(where, flag_table.load(contract.FLAG_TABLE), rows)
        super().__post_init__()

    @property
    def max_input_tokens(self) -> int:
        """`--max-input-tokens`: `maxInputTokens`, default the context length (TGI's
        `--max-total-tokens`) - 1, as TGI requires it strictly smaller."""
        settings = self.model.engine_settings
        given = settings.max_input_tokens if isinstance(settings, TgiSettings) else None
        return self.context_length - 1 if given is None else given

    @property
    def num_shard(self) -> int:
        """`--num-shard`: the GPUs the fit chose."""
        return self.inputs.accelerators

    @property
    def dtype(self) -> str | None:
        """`--dtype` for the model's (None: the checkpoint's, for quantised weights)."""
        return DTYPES.get(self.model.dtype)

    @property
    def quantize(self) -> str | None:
        """`--quantize`: the method a quantised dtype names (`int8` as eetq); None: none."""
        return QUANTIZE.get(self.model.dtype)

    @property
    def kv_cache_dtype(self) -> str | None:
        """`--kv-cache-dtype`: set only for fp8 (else TGI keeps the KV cache in the model
        dtype)."""
        return KV_DTYPES.get(self.model.kv_cache_dtype)

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
        model = self.model
        return env_list(
            self.engine_environment(region)
            | {
                contract.ENV_WEIGHTS_URI: self.weights_uri,
                contract.ENV_NUM_SHARD: str(self.num_shard),
                contract.ENV_MAX_INPUT_TOKENS: str(self.max_input_tokens),
                contract.ENV_MAX_TOTAL_TOKENS: str(self.context_length),
                contract.ENV_CUDA_MEMORY_FRACTION: repr(float(model.gpu_memory_utilization)),
                contract.ENV_MAX_CONCURRENT_REQUESTS: str(model.max_concurrent_sequences),
                contract.ENV_DTYPE: self.dtype,
                contract.ENV_KV_CACHE_DTYPE: self.kv_cache_dtype,
                contract.ENV_QUANTIZE: self.quantize,
            }
        )


class TgiSettings(Section):
    """TGI's own keys, beside the model's others."""

    max_input_tokens: int | None = Field(None, gt=0)
    """tgi: longest prompt; unset: maxModelLen - 1."""


class Tgi(Engine):
    """Text Generation Inference on NVIDIA GPUs; weights staged from S3 or read from EFS."""

    name = "tgi"
    description = "Text Generation Inference on a GPU pool (image images/tgi)"
    settings_model = TgiSettings
    launch_class = TgiLaunch

    def warmup_seconds(self, model: ModelSettings) -> float:
        """A prefill at `--max-batch-prefill-tokens` to size the KV cache, then CUDA graphs."""
        del model
        return contract.WARMUP_SECONDS


ENGINE = register(Tgi())
