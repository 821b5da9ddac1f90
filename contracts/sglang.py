"""Launch contract of the SGLang image (`images/sglang/`): what the task definition sets.

The task sets only environment variables; `images/sglang/entrypoint.py` reads exactly the
`ENGINE_*` names below and builds the `python3 -m sglang.launch_server` command line. Standard
library only: the image's entrypoint, the flag derivation and the tests all import this.

Facts about SGLang 0.5.23 this contract relies on (read from the PyPI wheel):
- flags come from `ServerArgs.add_cli_args` (`contracts/flags/sglang-0.5.23.json`);
- `--load-format runai_streamer` with an `s3://` model path streams safetensors from S3
  (`sglang/srt/utils/runai_utils.py`), config and tokenizer files included, so no hub;
- `/health` answers 503 while the server starts and 200 once a one-token generation succeeds
  (`SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION`, default on);
- event streams are FastAPI `StreamingResponse`s with no keep-alive comments, so the image
  runs the engine on loopback behind the same SSE keep-alive proxy as the Neuron image;
- uvicorn's idle keep-alive is `SGLANG_TIMEOUT_KEEP_ALIVE` (default 5 s).
"""

from __future__ import annotations

from . import engine
from .engine import (
    COMMON_READS,
    DEFAULT_PORT,
    ENV_EXTRA_ARGS,
    ENV_HF_HUB_OFFLINE,
    ENV_PORT,
    ENV_SERVED_MODEL_NAME,
    ENV_SSE_KEEPALIVE_SECONDS,
    HEALTH_PATH,
)

__all__ = [
    "DEFAULT_PORT",
    "ENV_EXTRA_ARGS",
    "ENV_HF_HUB_OFFLINE",
    "ENV_PORT",
    "ENV_SERVED_MODEL_NAME",
    "ENV_SSE_KEEPALIVE_SECONDS",
    "HEALTH_PATH",
]

SGLANG_VERSION = "0.5.23"
"""SGLang release of the image; the flag table and the base image tag follow it."""
BASE_IMAGE = f"lmsysorg/sglang:v{SGLANG_VERSION}"
"""Pinned upstream image the Dockerfile builds on (never `latest`)."""
FLAG_TABLE = f"sglang-{SGLANG_VERSION}"
"""Name of the committed flag table (`contracts/flags/<name>.json`)."""
COMMAND = ("python3", "-m", "sglang.launch_server")
"""The engine's launcher; flags follow."""
SOURCE_RELEASE = ("sglang", SGLANG_VERSION)
"""The PyPI distribution whose source the flag and environment tables are read from."""

WARMUP_SECONDS = 180.0
"""Grace-period input: after weights are in GPU memory SGLang profiles memory, captures CUDA
graphs for every decode batch size up to `--cuda-graph-max-bs` and runs a warm-up request
before `/health` turns 200; longer than vLLM's because both decode and prefill graphs are
captured by default in 0.5.x."""

# --- environment the entrypoint reads (besides contracts.engine's common names: served name,
# port, SSE keep-alive seconds, extra args) ---------------------------------------------------
ENV_UPSTREAM_PORT = "ENGINE_UPSTREAM_PORT"
"""Loopback port of SGLang behind the proxy (default port + 1)."""
ENVIRONMENT_TABLE = f"sglang-{SGLANG_VERSION}"
"""The release whose environment names the `ENV_PREFIXES` variables must be
(`contracts/env_table.py`)."""
ENV_PREFIXES = ("SGLANG_", "SGL_")
"""SGLang's own names (`sglang/srt/environ.py` `Envs`): any a task sets must be in its table."""
ENV_WEIGHTS_URI = engine.ENV_WEIGHTS_URI
"""`s3://bucket/prefix/` (streamed with the Run:ai streamer) or an absolute directory on the
task's EFS mount (read in place)."""
ENV_TENSOR_PARALLEL_SIZE = "ENGINE_TENSOR_PARALLEL_SIZE"
"""GPUs the model is sharded over (`--tp-size`; equals the task's GPU reservation)."""
ENV_CONTEXT_LENGTH = "ENGINE_CONTEXT_LENGTH"
"""Context length, prompt + generation (`--context-length`)."""
ENV_MEM_FRACTION_STATIC = "ENGINE_MEM_FRACTION_STATIC"
"""Fraction of GPU memory for weights + KV cache pool (`--mem-fraction-static`, 0 < x < 1)."""
ENV_MAX_RUNNING_REQUESTS = "ENGINE_MAX_RUNNING_REQUESTS"
"""Maximum concurrent requests (`--max-running-requests`; the sizing's concurrency)."""
ENV_DTYPE = "ENGINE_DTYPE"
"""`--dtype` (`auto`, `bfloat16`, `float16`, ...)."""
ENV_KV_CACHE_DTYPE = "ENGINE_KV_CACHE_DTYPE"
"""`--kv-cache-dtype` (`auto`, `fp8_e5m2`, `fp8_e4m3`, ...)."""
ENV_QUANTIZATION = "ENGINE_QUANTIZATION"
"""`--quantization`; unset means none / read from the checkpoint."""
ENV_API_KEY = "ENGINE_API_KEY"
"""Bearer key SGLang requires when set (`--api-key`). Inject from Secrets Manager through the
container's `secrets`, never `environment`."""

READS = (
    *COMMON_READS,
    ENV_UPSTREAM_PORT,
    ENV_WEIGHTS_URI,
    ENV_TENSOR_PARALLEL_SIZE,
    ENV_CONTEXT_LENGTH,
    ENV_MEM_FRACTION_STATIC,
    ENV_MAX_RUNNING_REQUESTS,
    ENV_DTYPE,
    ENV_KV_CACHE_DTYPE,
    ENV_QUANTIZATION,
    ENV_API_KEY,
)
"""Every variable the entrypoint reads."""

# --- variables SGLang itself reads ---------------------------------------------------------
ENV_TIMEOUT_KEEP_ALIVE = "SGLANG_TIMEOUT_KEEP_ALIVE"
"""uvicorn idle keep-alive (s). Only the loopback proxy connects to SGLang, on a fresh
connection per request, so the default is kept; the proxy keeps ALB connections open."""

MANAGED_FLAGS = frozenset(
    {
        "--model-path",
        "--model",
        "--served-model-name",
        "--load-format",
        "--tp-size",
        "--tensor-parallel-size",
        "--context-length",
        "--mem-fraction-static",
        "--max-running-requests",
        "--dtype",
        "--kv-cache-dtype",
        "--quantization",
        "--host",
        "--port",
        "--api-key",
        "--download-dir",
        "--trust-remote-code",
        "--config",
    }
)
"""Flags the launch sets itself (or forbids: remote code, hub downloads, a config file that
would override everything); `extraArgs` may not set them."""
