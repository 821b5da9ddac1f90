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
from dataclasses import dataclass, field

from ecs_inference.contracts import flag_table
from ecs_inference.contracts import sglang as contract
from ecs_inference.contracts.engine import ENV_REGION_VARIABLES
from ecs_inference.engines.base import (
    Engine,
    LaunchDefaults,
    LaunchInputs,
    ModelSettings,
    PresetError,
    TaskShape,
    check_extra_args,
    check_gpu_service,
    check_port,
    env_list,
    extra_args_json,
    fail,
    keepalive_for,
    pos_int,
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
class SglangLaunch(LaunchDefaults):
    """One SGLang model server (GPU). Validated on construction.

    Required: `where` (config path for errors), `served_model_name`, `weights_uri` (S3 prefix
    streamed with the Run:ai streamer, or an EFS mount directory), `context_length`.
    Defaults: `tensor_parallel_size` 1, `gpu_memory_utilization` 0.9, `overhead_fraction` 0.15
    (`--mem-fraction-static` = 0.9 / 1.15 → 0.782), `max_running_requests` 16, `dtype` "auto",
    `kv_cache_dtype` "auto", `quantization` None, `keepalive_seconds` 15 (the proxy's),
    `alb_idle_timeout_seconds` 60, `port` 8000, `upstream_port` port + 1, `extra_args` ().
    """

    where: str
    served_model_name: str
    weights_uri: str
    context_length: int
    tensor_parallel_size: int = 1
    gpu_memory_utilization: float = 0.9
    overhead_fraction: float = 0.15
    max_running_requests: int = 16
    dtype: str = "auto"
    kv_cache_dtype: str = "auto"
    quantization: str | None = None
    keepalive_seconds: int = 15
    alb_idle_timeout_seconds: int = 60
    port: int = contract.DEFAULT_PORT
    upstream_port: int | None = None
    extra_args: tuple[str, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        where = self.where
        table = flag_table.load(contract.FLAG_TABLE)
        tp = pos_int(where, "tensorParallelSize", self.tensor_parallel_size)
        if tp & (tp - 1):
            raise fail(where, "tensorParallelSize", f"{tp} must be a power of two")
        keepalive_for(where, self.alb_idle_timeout_seconds, self.keepalive_seconds)
        check_port(where, "port", self.port)
        if self.upstream_port is None:
            object.__setattr__(self, "upstream_port", self.port + 1)
        upstream = check_port(where, "upstreamPort", self.upstream_port)
        if upstream == self.port:
            raise fail(where, "upstreamPort", f"{upstream} must differ from port {self.port}")
        try:
            mem_fraction_static(self.gpu_memory_utilization, self.overhead_fraction)
        except PresetError as exc:
            raise fail(where, "gpuMemoryUtilization", str(exc)) from None
        for key, flag, value in (
            ("dtype", "--dtype", self.dtype),
            ("kvCacheDtype", "--kv-cache-dtype", self.kv_cache_dtype),
            ("quantization", "--quantization", self.quantization),
        ):
            choices = table.flags[flag].choices
            if value is not None and choices is not None and value not in choices:
                raise fail(
                    where, key, f"{value!r} is not an SGLang {flag} value ({', '.join(choices)})"
                )
        object.__setattr__(
            self,
            "extra_args",
            check_extra_args(where, self.extra_args, table, contract.MANAGED_FLAGS),
        )

    @property
    def gpus(self) -> int:
        """GPUs the task reserves (`resourceRequirements` GPU)."""
        return self.tensor_parallel_size

    @property
    def mem_fraction_static(self) -> float:
        """The derived `--mem-fraction-static`."""
        return mem_fraction_static(self.gpu_memory_utilization, self.overhead_fraction)

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
        return env_list(
            {
                contract.ENV_SERVED_MODEL_NAME: self.served_model_name,
                contract.ENV_PORT: str(self.port),
                contract.ENV_UPSTREAM_PORT: str(self.upstream_port),
                contract.ENV_SSE_KEEPALIVE_SECONDS: str(self.keepalive_seconds),
                contract.ENV_EXTRA_ARGS: extra_args_json(self.extra_args),
                contract.ENV_WEIGHTS_URI: self.weights_uri,
                contract.ENV_TENSOR_PARALLEL_SIZE: str(self.tensor_parallel_size),
                contract.ENV_CONTEXT_LENGTH: str(self.context_length),
                contract.ENV_MEM_FRACTION_STATIC: repr(self.mem_fraction_static),
                contract.ENV_MAX_RUNNING_REQUESTS: str(self.max_running_requests),
                contract.ENV_DTYPE: self.dtype,
                contract.ENV_KV_CACHE_DTYPE: self.kv_cache_dtype,
                contract.ENV_QUANTIZATION: self.quantization,
                contract.ENV_HF_HUB_OFFLINE: "1",
                **{variable: region for variable in ENV_REGION_VARIABLES},
            }
        )

    def check_task(self, where: str, task: TaskShape) -> None:
        """GPUs reserved = tensor parallel size; weights on S3 or EFS."""
        check_gpu_service(where, task, self.gpus)


class Sglang(Engine):
    """SGLang on NVIDIA GPUs; weights streamed from S3 or read from EFS."""

    name = "sglang"
    description = "SGLang on a GPU pool (image images/sglang)"
    streams_from_s3 = True

    def launch(self, inputs: LaunchInputs) -> SglangLaunch:
        """SGLang on the GPUs the fit chose; every error names its config path."""
        model, idle = inputs.model, inputs.idle_timeout_seconds
        assert inputs.weights_uri is not None
        return SglangLaunch(
            inputs.where,
            inputs.served_model_name,
            inputs.weights_uri,
            context_length=self.context_length(model),
            tensor_parallel_size=inputs.accelerators,
            gpu_memory_utilization=model.gpu_memory_utilization,
            overhead_fraction=model.memory_overhead_fraction,
            max_running_requests=model.max_concurrent_sequences,
            # the proxy's keep-alive: the usual 15 s, or half an unusually short idle timeout
            keepalive_seconds=max(1, min(15, idle // 2)),
            dtype=torch_dtype(model.dtype),
            kv_cache_dtype=kv_cache_dtype_flag(model.kv_cache_dtype),
            quantization=quantization_method(model.dtype),
            alb_idle_timeout_seconds=idle,
            extra_args=tuple(model.extra_args),
        )

    def warmup_seconds(self, model: ModelSettings) -> float:
        """Memory profiling and CUDA-graph capture for decode and prefill batch sizes."""
        del model
        return contract.WARMUP_SECONDS


ENGINE = register(Sglang())
