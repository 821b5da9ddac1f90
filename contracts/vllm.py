"""The vLLM (GPU) image's task environment: what the task sets and the entrypoint reads."""

from __future__ import annotations

from . import engine
from .engine import COMMON_READS

ENVIRONMENT_TABLE = "vllm-0.33.0"
"""The release whose environment names `VLLM_*` variables must be (`contracts/env_table.py`)."""
ENV_PREFIXES = ("VLLM_",)
"""vLLM's own names (`vllm/envs.py`): any a task sets must be in its table."""
ENV_WEIGHTS_URI = engine.ENV_WEIGHTS_URI
"""`s3://bucket/prefix/` holding safetensors weights, config and tokenizer files."""
ENV_TENSOR_PARALLEL_SIZE = "ENGINE_TENSOR_PARALLEL_SIZE"
"""GPUs the model is sharded over (equals the task's GPU resourceRequirement)."""
ENV_MAX_MODEL_LEN = "ENGINE_MAX_MODEL_LEN"
"""Context length (prompt + generation) the KV cache is sized for."""
ENV_GPU_MEMORY_UTILIZATION = "ENGINE_GPU_MEMORY_UTILIZATION"
"""Fraction of each GPU's memory vLLM may use (0 < x ≤ 1)."""
ENV_MAX_NUM_SEQS = "ENGINE_MAX_NUM_SEQS"
"""Maximum concurrent sequences (the sizing's max concurrency)."""
ENV_DTYPE = "ENGINE_DTYPE"
"""Weight/activation dtype (`auto`, `bfloat16`, `float16`, ...)."""
ENV_KV_CACHE_DTYPE = "ENGINE_KV_CACHE_DTYPE"
"""KV cache dtype (`auto`, `fp8`, ...)."""
ENV_QUANTIZATION = "ENGINE_QUANTIZATION"
"""Quantization method (`awq`, `gptq`, `fp8`, ...); unset means none/auto-detected."""
ENV_LORA_ADAPTERS = engine.ENV_LORA_ADAPTERS
"""LoRA adapters, a JSON list of `{"name", "source", "rank"}` (served name, `s3://` prefix,
LoRA rank); unset: LoRA off. The entrypoint stages each prefix to `ADAPTERS_DIR/<index>` before
vLLM starts and checks its `adapter_config.json`."""
ENV_MAX_LORAS = "ENGINE_MAX_LORAS"
"""Adapters in one batch (`--max-loras`); with adapters only."""
ENV_MAX_LORA_RANK = "ENGINE_MAX_LORA_RANK"
"""Rank of the GPU buffers every adapter must fit (`--max-lora-rank`); with adapters only."""
ENV_MAX_CPU_LORAS = "ENGINE_MAX_CPU_LORAS"
"""Adapters kept in host memory (`--max-cpu-loras`); with adapters only."""
ADAPTERS_DIR = "/home/vllm/adapters"
"""Where the entrypoint stages the adapters (the image user's home, on the task's disk)."""

READS = (
    *COMMON_READS,
    ENV_WEIGHTS_URI,
    ENV_TENSOR_PARALLEL_SIZE,
    ENV_MAX_MODEL_LEN,
    ENV_GPU_MEMORY_UTILIZATION,
    ENV_MAX_NUM_SEQS,
    ENV_DTYPE,
    ENV_KV_CACHE_DTYPE,
    ENV_QUANTIZATION,
    ENV_LORA_ADAPTERS,
    ENV_MAX_LORAS,
    ENV_MAX_LORA_RANK,
    ENV_MAX_CPU_LORAS,
)
"""Every ENGINE_* variable the vLLM entrypoint reads (the task must set no other)."""

# Variables vLLM itself reads.
ENV_HTTP_KEEPALIVE = "VLLM_HTTP_TIMEOUT_KEEP_ALIVE"
"""uvicorn idle keep-alive of client connections, seconds (default 5). The ALB reuses target
connections for up to its idle timeout; a target that closes them sooner races the ALB and
shows up as sporadic 502s, so it is set above the idle timeout."""
ENV_NO_USAGE_STATS = "VLLM_NO_USAGE_STATS"
"""`1` disables usage reporting to vLLM's collector (private subnets, no phoning home)."""
ENV_API_KEY = "VLLM_API_KEY"
"""NEVER set by this stack, and rejected in a model's `environment` and `secrets`: when set,
vLLM requires `Authorization: Bearer <that key>` on `/v1/*`, but the ALB authenticates callers
itself and forwards their `Authorization: Bearer <Cognito JWT>` header unchanged, so vLLM would
answer 401 to every request. Authentication is the ALB's (jwt-validation, Cognito)."""
