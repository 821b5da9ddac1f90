#!/usr/bin/env python3
"""Container entrypoint of the vLLM (GPU) image: task environment → `vllm serve` command.

The ECS task definition only sets environment variables (names in `contracts/engine.py` and
`contracts/vllm.py`);
this script validates them and execs vLLM 0.33.0 so that the engine is PID 1's only child
(signals from ECS reach it directly). Weights stream from S3 with the Run:ai model streamer:
vLLM copies the small config/tokenizer files from the same prefix and streams the safetensors
into GPU memory, so the image never contacts a model hub (`HF_HUB_OFFLINE=1`). LoRA adapters
(`ENGINE_LORA_ADAPTERS`) are staged from their S3 prefixes to local disk before vLLM starts
(vLLM loads an adapter from a directory), each checked against the rank the service was sized
for.

Usage: `entrypoint.py` (stage the adapters, exec vLLM) or `entrypoint.py --print-command`
(print the argv as JSON and exit, staging nothing; used by the tests). Exit status 2 with one
`entrypoint:` line on stderr when the environment is invalid, 1 when an adapter cannot be
served. Standard library only (boto3, which the base image ships for vLLM's own S3 reads, is
imported only to stage).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import cast

# The image copies the repository's stdlib-only contracts/ next to this file; in a checkout it
# is two directories up.
_HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(_HERE if (_HERE / "contracts").is_dir() else _HERE.parents[1]))

from contracts.engine import (  # noqa: E402
    DEFAULT_PORT,
    DEFAULT_SSE_KEEPALIVE_SECONDS,
    ENV_EXTRA_ARGS,
    ENV_PORT,
    ENV_SERVED_MODEL_NAME,
    ENV_SSE_KEEPALIVE_SECONDS,
    HEALTH_PATH,
)
from contracts.envparse import (  # noqa: E402
    ConfigError,
    json_list,
    log,
    positive_int,
    required,
    string_list,
)
from contracts.staging import (  # noqa: E402
    S3Client,
    WeightsError,
    check_runai_streamer,
    stage_s3_prefix,
)
from contracts.vllm import (  # noqa: E402
    ADAPTERS_DIR,
    ENV_DTYPE,
    ENV_GPU_MEMORY_UTILIZATION,
    ENV_KV_CACHE_DTYPE,
    ENV_LORA_ADAPTERS,
    ENV_MAX_CPU_LORAS,
    ENV_MAX_LORA_RANK,
    ENV_MAX_LORAS,
    ENV_MAX_MODEL_LEN,
    ENV_MAX_NUM_SEQS,
    ENV_QUANTIZATION,
    ENV_TENSOR_PARALLEL_SIZE,
    ENV_WEIGHTS_URI,
)


def adapters(env: Mapping[str, str]) -> list[dict[str, object]]:
    """`ENGINE_LORA_ADAPTERS` as a list of `{"name", "source", "rank"}` ([] when unset)."""
    value = json_list(env, ENV_LORA_ADAPTERS)
    shape = {"name": str, "source": str, "rank": int}
    if not all(
        isinstance(a, dict)
        and a.keys() == shape.keys()
        and all(isinstance(a[k], t) for k, t in shape.items())
        for a in value
    ):
        raise ConfigError(
            f'{ENV_LORA_ADAPTERS} must be a JSON list of {{"name", "source", "rank"}}'
        )
    found = cast("list[dict[str, object]]", value)
    for adapter in found:
        if not str(adapter["source"]).startswith("s3://"):
            raise ConfigError(f"{ENV_LORA_ADAPTERS}: source {adapter['source']!r} is not s3://")
    return found


def lora_arguments(env: Mapping[str, str], served_name: str) -> list[str]:
    """vLLM's LoRA flags for the staged adapters ([] without adapters): every adapter after one
    `--lora-modules` (vLLM keeps only the last occurrence's list), in the JSON form that names
    the base model the adapter is listed under."""
    found = adapters(env)
    if not found:
        return []
    modules = [
        json.dumps(
            {"name": a["name"], "path": f"{ADAPTERS_DIR}/{i}", "base_model_name": served_name},
            separators=(",", ":"),
        )
        for i, a in enumerate(found)
    ]
    max_loras = positive_int(env, ENV_MAX_LORAS)
    return [
        "--enable-lora",
        "--max-loras",
        str(max_loras),
        "--max-lora-rank",
        str(positive_int(env, ENV_MAX_LORA_RANK)),
        "--max-cpu-loras",
        str(positive_int(env, ENV_MAX_CPU_LORAS, max_loras)),
        "--lora-modules",
        *modules,
    ]


def stage_adapters(env: Mapping[str, str], s3: S3Client, root: Path = Path(ADAPTERS_DIR)) -> int:
    """Stage every adapter's S3 prefix to `<root>/<index>` (default `ADAPTERS_DIR`, where
    `lora_arguments` points vLLM) with the S3 client `s3` and
    check it is the adapter the service was sized for: a PEFT `adapter_config.json` whose `r`
    is the declared rank (vLLM's buffers are sized from the declared ranks). Returns the files
    fetched; raises WeightsError."""
    fetched = 0
    for i, adapter in enumerate(adapters(env)):
        directory = root / str(i)
        fetched += stage_s3_prefix(s3, str(adapter["source"]), directory)
        config = directory / "adapter_config.json"
        try:
            rank = json.loads(config.read_text())["r"]
        except (OSError, ValueError, KeyError) as exc:
            raise WeightsError(
                f"adapter {adapter['name']} at {adapter['source']} has no readable PEFT "
                f"adapter_config.json with its rank r ({exc})"
            ) from None
        if rank != adapter["rank"]:
            raise WeightsError(
                f"adapter {adapter['name']} at {adapter['source']} has rank {rank}, but the "
                f"service declares rank {adapter['rank']}: fix its `rank`"
            )
    return fetched


def build_command(env: Mapping[str, str]) -> list[str]:
    """The `vllm serve` argv for this environment (raises ConfigError)."""
    weights = required(env, ENV_WEIGHTS_URI)
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
        required(env, ENV_SERVED_MODEL_NAME),
        "--load-format",
        "runai_streamer",
        "--tensor-parallel-size",
        str(positive_int(env, ENV_TENSOR_PARALLEL_SIZE, 1)),
        "--max-model-len",
        str(positive_int(env, ENV_MAX_MODEL_LEN)),
        "--gpu-memory-utilization",
        utilization,
        "--max-num-seqs",
        str(positive_int(env, ENV_MAX_NUM_SEQS, 256)),
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
        str(positive_int(env, ENV_SSE_KEEPALIVE_SECONDS, DEFAULT_SSE_KEEPALIVE_SECONDS)),
        # awsvpc: the task ENI is the only interface the ALB reaches; bind all of them.
        "--host",
        "0.0.0.0",
        "--port",
        str(positive_int(env, ENV_PORT, DEFAULT_PORT)),
        # ALB health checks every few seconds would dominate the CloudWatch log volume.
        "--disable-access-log-for-endpoints",
        f"{HEALTH_PATH},/metrics",
    ]
    argv += lora_arguments(env, required(env, ENV_SERVED_MODEL_NAME))
    return argv + string_list(env, ENV_EXTRA_ARGS)


def main(argv: list[str]) -> int:
    """Validate the environment, then print or exec the vLLM command."""
    try:
        command = build_command(os.environ)
        if argv[1:] == ["--print-command"]:
            print(json.dumps(command))
            return 0
        if argv[1:]:
            raise ConfigError(f"unexpected arguments {argv[1:]} (only --print-command)")
        check_runai_streamer()
    except ConfigError as exc:
        log(str(exc))
        return 2
    if adapters(os.environ):
        # the base image's, which vLLM's own S3 reads use; imported here so tests need none
        import boto3  # pyright: ignore[reportMissingImports]

        try:
            log(f"staged {stage_adapters(os.environ, boto3.client('s3'))} adapter files")
        except WeightsError as exc:
            log(str(exc))
            return 1
    log(f"exec {json.dumps(command)}")
    os.execvp(command[0], command)
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main(sys.argv))
