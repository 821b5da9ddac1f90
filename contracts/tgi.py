"""Launch contract of the TGI image (`images/tgi/`): what the task definition sets.

The task sets only environment variables; `images/tgi/entrypoint.py` reads exactly the
`ENGINE_*` names below, stages the weights when they are on S3, and execs
`text-generation-launcher`. Standard library only.

Facts about TGI 3.3.7 (tag `v3.3.7`, commit dfb3fbe78e0d1d69251bd33065591c61bafdfaa8 of
huggingface/text-generation-inference) this contract relies on:
- the launcher's flags are `struct Args` in `launcher/src/main.rs`
  (`contracts/flags/tgi-3.3.7.json`); every flag is also read from an upper-case environment
  variable of its name (`MODEL_ID`, `PORT`, `HOSTNAME`, `API_KEY`, ...), so the task must not set
  those names by accident, and the entrypoint passes every managed value as a flag (a flag
  wins over its variable; Docker sets `HOSTNAME` to the container id);
- `--model-id` may be a local directory, but TGI has no object-store loader: weights on S3 are
  staged to local disk first; on an EFS mount they are read in place;
- the router sends SSE keep-alives itself: `Sse::new(..).keep_alive(KeepAlive::default())` in
  `router/src/server.rs` (generate_stream, completions, chat), axum's default interval 15 s, not
  configurable — so no proxy, but the ALB idle timeout must be at least twice that;
- there is no `--served-model-name`: TGI accepts any OpenAI `model` value and reports its
  `--model-id` in `/v1/models`, so the staging directory is named after the served name;
- `/health` is 200 once the shards are up and the router's health check passed.
"""

from __future__ import annotations

from . import engine
from .engine import (
    DEFAULT_PORT,
    ENV_EXTRA_ARGS,
    ENV_HF_HUB_OFFLINE,
    ENV_PORT,
    ENV_SERVED_MODEL_NAME,
    HEALTH_PATH,
)

__all__ = [
    "DEFAULT_PORT",
    "ENV_EXTRA_ARGS",
    "ENV_HF_HUB_OFFLINE",
    "ENV_PORT",
    "ENV_SERVED_MODEL_NAME",
    "HEALTH_PATH",
]

TGI_VERSION = "3.3.7"
"""TGI release of the image; the flag table and base tag follow it."""
TGI_TAG_COMMIT = "dfb3fbe78e0d1d69251bd33065591c61bafdfaa8"
"""Commit of tag v3.3.7 the flag table was extracted from."""
BASE_IMAGE = f"ghcr.io/huggingface/text-generation-inference:{TGI_VERSION}"
"""Pinned upstream image the Dockerfile builds on."""
FLAG_TABLE = f"tgi-{TGI_VERSION}"
"""Name of the committed flag table (`contracts/flags/<name>.json`)."""
COMMAND = ("text-generation-launcher",)
"""The engine's launcher; flags follow."""

SSE_KEEPALIVE_SECONDS = 15
"""axum `KeepAlive::default()` interval: TGI writes an SSE comment after 15 s of silence."""
WARMUP_SECONDS = 150.0
"""Grace-period input: TGI's `warmup` runs a prefill at `--max-batch-prefill-tokens` to size the
KV cache, then captures CUDA graphs for the default batch sizes 1-32 before `/health` is 200."""
DEFAULT_MODEL_ROOT = "/models"
"""Local directory S3 weights are staged under (`<root>/<served name>`)."""

# --- environment the entrypoint reads (besides contracts.engine's served name, port and extra
# args; the served name names the staging directory, hence the id `/v1/models` reports) -------
ENV_WEIGHTS_URI = engine.ENV_WEIGHTS_URI
"""`s3://bucket/prefix/` (staged to `ENGINE_MODEL_ROOT`) or an absolute EFS directory."""
ENV_MODEL_ROOT = "ENGINE_MODEL_ROOT"
"""Local directory S3 weights are staged under (default `/models`)."""
ENV_NUM_SHARD = "ENGINE_NUM_SHARD"
"""`--num-shard`: GPUs the model is sharded over (the task's GPU reservation)."""
ENV_MAX_INPUT_TOKENS = "ENGINE_MAX_INPUT_TOKENS"
"""`--max-input-tokens`: longest prompt."""
ENV_MAX_TOTAL_TOKENS = "ENGINE_MAX_TOTAL_TOKENS"
"""`--max-total-tokens`: prompt + generation, the context length."""
ENV_CUDA_MEMORY_FRACTION = "ENGINE_CUDA_MEMORY_FRACTION"
"""`--cuda-memory-fraction`: share of each GPU TGI may use (0 < x <= 1)."""
ENV_MAX_CONCURRENT_REQUESTS = "ENGINE_MAX_CONCURRENT_REQUESTS"
"""`--max-concurrent-requests`: the sizing's concurrency; more are refused with 429."""
ENV_DTYPE = "ENGINE_DTYPE"
"""`--dtype` (`float16` or `bfloat16`); unset: the checkpoint's."""
ENV_KV_CACHE_DTYPE = "ENGINE_KV_CACHE_DTYPE"
"""`--kv-cache-dtype` (`fp8_e4m3fn`, `fp8_e5m2`); unset: the model dtype."""
ENV_QUANTIZE = "ENGINE_QUANTIZE"
"""`--quantize`; unset: read from the checkpoint's config."""

READS = (
    ENV_SERVED_MODEL_NAME,
    ENV_PORT,
    ENV_EXTRA_ARGS,
    ENV_WEIGHTS_URI,
    ENV_MODEL_ROOT,
    ENV_NUM_SHARD,
    ENV_MAX_INPUT_TOKENS,
    ENV_MAX_TOTAL_TOKENS,
    ENV_CUDA_MEMORY_FRACTION,
    ENV_MAX_CONCURRENT_REQUESTS,
    ENV_DTYPE,
    ENV_KV_CACHE_DTYPE,
    ENV_QUANTIZE,
)
"""Every variable the entrypoint reads."""

# --- variables TGI itself reads ------------------------------------------------------------
ENV_API_KEY = "API_KEY"
"""The launcher's `--api-key` variable: bearer key required on every route when set. Inject it
from Secrets Manager through the container's `secrets`."""

MANAGED_FLAGS = frozenset(
    {
        "--model-id",
        "--revision",
        "--num-shard",
        "--sharded",
        "--max-input-tokens",
        "--max-input-length",
        "--max-total-tokens",
        "--cuda-memory-fraction",
        "--max-concurrent-requests",
        "--dtype",
        "--kv-cache-dtype",
        "--quantize",
        "--hostname",
        "--port",
        "--api-key",
        "--usage-stats",
        "--trust-remote-code",
        "--huggingface-hub-cache",
        "--weights-cache-override",
        "--ngrok",
        "--ngrok-authtoken",
        "--ngrok-edge",
    }
)
"""Flags the launch sets itself or forbids (remote code, hub caches, ngrok tunnels out of a
private subnet); `extraArgs` may not set them."""
