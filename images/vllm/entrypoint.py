#!/usr/bin/env python3
"""Container entrypoint of the vLLM (GPU) image: task environment → `vllm serve` command.

The ECS task definition only sets environment variables (names in `components/engines.py`);
this script validates them and execs vLLM 0.33.0 so that the engine is PID 1's only child
(signals from ECS reach it directly). Weights stream from S3 with the Run:ai model streamer:
vLLM copies the small config/tokenizer files from the same prefix and streams the safetensors
into GPU memory, so the image never contacts a model hub (`HF_HUB_OFFLINE=1`).

Usage: `entrypoint.py` (exec vLLM) or `entrypoint.py --print-command` (print the argv as JSON
and exit; used by the tests). Exit status 2 with one `entrypoint:` line on stderr when the
environment is invalid. Standard library only: runs on the base image's Python.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import sys
from collections.abc import Mapping

ENV_SERVED_MODEL_NAME = "ENGINE_SERVED_MODEL_NAME"
ENV_PORT = "ENGINE_PORT"
ENV_SSE_KEEPALIVE_SECONDS = "ENGINE_SSE_KEEPALIVE_SECONDS"
ENV_EXTRA_ARGS = "ENGINE_EXTRA_ARGS"
ENV_WEIGHTS_URI = "ENGINE_WEIGHTS_URI"
ENV_TENSOR_PARALLEL_SIZE = "ENGINE_TENSOR_PARALLEL_SIZE"
ENV_MAX_MODEL_LEN = "ENGINE_MAX_MODEL_LEN"
ENV_GPU_MEMORY_UTILIZATION = "ENGINE_GPU_MEMORY_UTILIZATION"
ENV_MAX_NUM_SEQS = "ENGINE_MAX_NUM_SEQS"
ENV_DTYPE = "ENGINE_DTYPE"
ENV_KV_CACHE_DTYPE = "ENGINE_KV_CACHE_DTYPE"
ENV_QUANTIZATION = "ENGINE_QUANTIZATION"

READS = (
    ENV_SERVED_MODEL_NAME,
    ENV_PORT,
    ENV_SSE_KEEPALIVE_SECONDS,
    ENV_EXTRA_ARGS,
    ENV_WEIGHTS_URI,
    ENV_TENSOR_PARALLEL_SIZE,
    ENV_MAX_MODEL_LEN,
    ENV_GPU_MEMORY_UTILIZATION,
    ENV_MAX_NUM_SEQS,
    ENV_DTYPE,
    ENV_KV_CACHE_DTYPE,
    ENV_QUANTIZATION,
)
"""Every variable this entrypoint reads (the task definition must set no other ENGINE_*)."""

HEALTH_PATH = "/health"


class ConfigError(ValueError):
    """Invalid task environment; the message names the variable."""


def _required(env: Mapping[str, str], name: str) -> str:
    value = env.get(name, "").strip()
    if not value:
        raise ConfigError(f"{name} is required")
    return value


def _int(env: Mapping[str, str], name: str, default: int | None = None) -> int:
    raw = env.get(name, "").strip()
    if not raw and default is not None:
        return default
    if not re.fullmatch(r"[0-9]+", raw) or int(raw) < 1:
        raise ConfigError(f"{name} must be a positive integer, got {raw!r}")
    return int(raw)


def _extra_args(env: Mapping[str, str]) -> list[str]:
    raw = env.get(ENV_EXTRA_ARGS, "").strip()
    if not raw:
        return []
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{ENV_EXTRA_ARGS} is not a JSON list: {exc}") from None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{ENV_EXTRA_ARGS} must be a JSON list of strings")
    return value


def build_command(env: Mapping[str, str]) -> list[str]:
    """The `vllm serve` argv for this environment (raises ConfigError)."""
    weights = _required(env, ENV_WEIGHTS_URI)
    if not weights.startswith("s3://"):
        raise ConfigError(f"{ENV_WEIGHTS_URI} must be an s3:// URI, got {weights!r}")
    # The streamer lists objects under the prefix; a missing slash would also match siblings
    # (s3://b/llama-8b matches s3://b/llama-8b-old/...).
    weights = weights.rstrip("/") + "/"
    utilization = env.get(ENV_GPU_MEMORY_UTILIZATION, "0.9").strip()
    try:
        if not 0 < float(utilization) <= 1:
            raise ValueError
    except ValueError:
        raise ConfigError(
            f"{ENV_GPU_MEMORY_UTILIZATION} must be a number in (0, 1], got {utilization!r}"
        ) from None
    argv = [
        "vllm",
        "serve",
        "--model",
        weights,
        "--served-model-name",
        _required(env, ENV_SERVED_MODEL_NAME),
        "--load-format",
        "runai_streamer",
        "--tensor-parallel-size",
        str(_int(env, ENV_TENSOR_PARALLEL_SIZE, 1)),
        "--max-model-len",
        str(_int(env, ENV_MAX_MODEL_LEN)),
        "--gpu-memory-utilization",
        utilization,
        "--max-num-seqs",
        str(_int(env, ENV_MAX_NUM_SEQS, 256)),
        "--dtype",
        env.get(ENV_DTYPE, "").strip() or "auto",
        "--kv-cache-dtype",
        env.get(ENV_KV_CACHE_DTYPE, "").strip() or "auto",
    ]
    quantization = env.get(ENV_QUANTIZATION, "").strip()
    if quantization:
        argv += ["--quantization", quantization]
    argv += [
        "--sse-keep-alive-interval",
        str(_int(env, ENV_SSE_KEEPALIVE_SECONDS, 15)),
        # awsvpc: the task ENI is the only interface the ALB reaches; bind all of them.
        "--host",
        "0.0.0.0",
        "--port",
        str(_int(env, ENV_PORT, 8000)),
        # ALB health checks every few seconds would dominate the CloudWatch log volume.
        "--disable-access-log-for-endpoints",
        f"{HEALTH_PATH},/metrics",
    ]
    return argv + _extra_args(env)


def preflight() -> None:
    """Checks that only make sense inside the image (fail with one line, not a traceback)."""
    if importlib.util.find_spec("runai_model_streamer") is None:
        raise ConfigError(
            "runai_model_streamer is not installed in this image; "
            "--load-format runai_streamer cannot stream weights from S3"
        )


def main(argv: list[str]) -> int:
    """Validate the environment, then print or exec the vLLM command."""
    try:
        command = build_command(os.environ)
        if argv[1:] == ["--print-command"]:
            print(json.dumps(command))
            return 0
        if argv[1:]:
            raise ConfigError(f"unexpected arguments {argv[1:]} (only --print-command)")
        preflight()
    except ConfigError as exc:
        print(f"entrypoint: {exc}", file=sys.stderr)
        return 2
    print(f"entrypoint: exec {json.dumps(command)}", file=sys.stderr, flush=True)
    os.execvp(command[0], command)
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main(sys.argv))
