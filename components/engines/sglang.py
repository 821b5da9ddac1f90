"""SGLang 0.5.23 on NVIDIA GPUs (`python3 -m sglang.launch_server`, image `images/sglang`).

Weights stream from S3 with the Run:ai streamer or are read in place from an EFS mount. SGLang
writes nothing while a request waits, so the image runs it on loopback behind the SSE keep-alive
proxy (`contracts/sse_proxy.py`, shared with the Neuron image). The task environment the image
reads is `contracts/sglang.py`; flags are checked against `contracts/flags/sglang-0.5.23.json`.

Memory: SGLang's `--mem-fraction-static` is the share for weights + KV cache *only*; activations
and CUDA graphs live in the rest. The VRAM method sized `(weights + KV) × (1 + overhead)` to fit
in `utilization × memory`, so the static pool is `utilization / (1 + overhead)`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ecs_inference.contracts import flag_table
from ecs_inference.contracts import sglang as contract
from ecs_inference.engines.base import (
    Engine,
    Launch,
    ModelSettings,
    PresetError,
    check_flag_values,
    check_port,
    env_list,
    fail,
    keepalive_for,
    quantization_method,
    torch_dtype,
)
from ecs_inference.engines.registry import register


def mem_fraction_static(gpu_memory_utilization: float, overhead_fraction: float) -> float:
    """`--mem-fraction-static` for a service sized at `utilization` with `overhead` headroom.

    `utilization / (1 + overhead)`, rounded down to 3 decimals so the static pool never exceeds
    what the sizing reserved for weights + KV cache.
    """
    if not 0 < gpu_memory_utilization <= 1:
        raise PresetError(f"gpu_memory_utilization {gpu_memory_utilization} must be in (0, 1]")
    if not 0 <= overhead_fraction < 1:
        raise PresetError(f"overhead_fraction {overhead_fraction} must be in [0, 1)")
    return math.floor(gpu_memory_utilization / (1 + overhead_fraction) * 1000) / 1000


def kv_cache_dtype_flag(config_kv_cache_dtype: str) -> str:
    """SGLang's `--kv-cache-dtype` for the config's engine-neutral name (default `auto`)."""
    return {"fp8": "fp8_e4m3", "bf16": "bfloat16", "fp16": "auto"}.get(
        config_kv_cache_dtype, "auto"
    )


@dataclass(frozen=True)
class SglangLaunch(Launch):
    """One SGLang model server (GPU): the model's settings on the GPUs its fit chose, behind
    the keep-alive proxy on `port`. Validated on construction."""

    flags = contract.FLAG_TABLE
    managed_flags = contract.MANAGED_FLAGS

    upstream_port: int | None = None
    """Loopback port of the engine behind the proxy; None: port + 1."""

    def __post_init__(self) -> None:
        where = self.where
        keepalive_for(where, self.alb_idle_timeout_seconds, self.keepalive_seconds)
        check_port(where, "port", self.port)
        if self.upstream_port is None:
            object.__setattr__(self, "upstream_port", self.port + 1)
        upstream = check_port(where, "upstreamPort", self.upstream_port)
        if upstream == self.port:
            raise fail(where, "upstreamPort", f"{upstream} must differ from port {self.port}")
        rows = (
            ("dtype", "--dtype", self.dtype),
            ("kvCacheDtype", "--kv-cache-dtype", self.kv_cache_dtype),
            ("quantization", "--quantization", self.quantization),
        )
        check_flag_values(where, flag_table.load(contract.FLAG_TABLE), rows)
        super().__post_init__()

    @property
    def tensor_parallel_size(self) -> int:
        """GPUs the model is sharded over (the fit's)."""
        return self.inputs.accelerators

    @property
    def keepalive_seconds(self) -> int:
        """The proxy's keep-alive: the usual 15 s, or half an unusually short idle timeout."""
        return max(1, min(15, self.alb_idle_timeout_seconds // 2))

    @property
    def dtype(self) -> str:
        """`--dtype`: the torch dtype of the model's (`auto` for quantised weights)."""
        return torch_dtype(self.model.dtype)

    @property
    def kv_cache_dtype(self) -> str:
        """`--kv-cache-dtype` for the model's `kvCacheDtype`."""
        return kv_cache_dtype_flag(self.model.kv_cache_dtype)

    @property
    def quantization(self) -> str | None:
        """`--quantization`: the method a quantised dtype names; None: none."""
        return quantization_method(self.model.dtype)

    @property
    def mem_fraction_static(self) -> float:
        """The derived `--mem-fraction-static`."""
        model = self.model
        return mem_fraction_static(model.gpu_memory_utilization, model.memory_overhead_fraction)

    @property
    def health_path(self) -> str:
        """SGLang's `/health` (503 while starting, 200 once a one-token generation works)."""
        return contract.HEALTH_PATH

    @property
    def sse_keepalive_seconds(self) -> int | None:
        """The keep-alive proxy's interval."""
        return self.keepalive_seconds

    def container_environment(self, region: str | None = None) -> list[dict[str, str]]:
        """The container's `environment` (sorted; secrets go in `secrets`)."""
        model = self.model
        return env_list(
            self.engine_environment(region)
            | {
                contract.ENV_UPSTREAM_PORT: str(self.upstream_port),
                contract.ENV_SSE_KEEPALIVE_SECONDS: str(self.keepalive_seconds),
                contract.ENV_WEIGHTS_URI: self.weights_uri,
                contract.ENV_TENSOR_PARALLEL_SIZE: str(self.tensor_parallel_size),
                contract.ENV_CONTEXT_LENGTH: str(self.context_length),
                contract.ENV_MEM_FRACTION_STATIC: repr(self.mem_fraction_static),
                contract.ENV_MAX_RUNNING_REQUESTS: str(model.max_concurrent_sequences),
                contract.ENV_DTYPE: self.dtype,
                contract.ENV_KV_CACHE_DTYPE: self.kv_cache_dtype,
                contract.ENV_QUANTIZATION: self.quantization,
            }
        )


class Sglang(Engine):
    """SGLang on NVIDIA GPUs; weights streamed from S3 or read from EFS."""

    name = "sglang"
    description = "SGLang on a GPU pool (image images/sglang)"
    streams_from_s3 = True
    launch_class = SglangLaunch

    def warmup_seconds(self, model: ModelSettings) -> float:
        """Memory profiling and CUDA-graph capture for decode and prefill batch sizes."""
        del model
        return contract.WARMUP_SECONDS


ENGINE = register(Sglang())
