#!/usr/bin/env python3
"""Container entrypoint of the TGI image: task environment → weights on disk → TGI launcher.

The ECS task definition only sets environment variables (names in `contracts/engine.py` and
`contracts/tgi.py`); this
script validates them, puts the weights where TGI can read them, and execs
`text-generation-launcher` (TGI 3.3.7) so that the launcher is PID 1's only process and ECS's
SIGTERM reaches it directly (it drains the router, then stops the shards).

Weights: TGI reads a local directory only. `ENGINE_WEIGHTS_URI` is either
- `s3://bucket/prefix/`: every object under the prefix is downloaded with boto3 to
  `ENGINE_MODEL_ROOT/<served name>` (files already there with the same size are kept), or
- an absolute directory on the task's EFS mount, read in place.
Either way the directory must hold `config.json` and safetensors (or .bin) weights; nothing
comes from a model hub (`HF_HUB_OFFLINE=1`).

SSE keep-alives: TGI's router writes them itself every 15 s (axum `KeepAlive::default()`), so
there is no proxy. Every managed setting is passed as a flag because the launcher also reads
each flag from an environment variable of its name, and Docker sets `HOSTNAME`.

Usage: `entrypoint.py` (stage and exec) or `entrypoint.py --print-command` (print the argv as
JSON and exit). Exit 2 on an invalid environment, 1 when the weights cannot be served; one
`entrypoint:` line on stderr. Standard library only (boto3 is imported only to stage).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path

# The image copies the repository's stdlib-only contracts/ next to this file; in a checkout it
# is two directories up.
_HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(_HERE if (_HERE / "contracts").is_dir() else _HERE.parents[1]))

from contracts.envparse import (  # noqa: E402
    ConfigError,
    log,
    positive_int,
    required,
    string_list,
)
from contracts.staging import WeightsError, check_weights_dir, stage_s3_prefix  # noqa: E402
from contracts.tgi import (  # noqa: E402
    COMMAND,
    DEFAULT_MODEL_ROOT,
    DEFAULT_PORT,
    ENV_CUDA_MEMORY_FRACTION,
    ENV_DTYPE,
    ENV_EXTRA_ARGS,
    ENV_KV_CACHE_DTYPE,
    ENV_MAX_CONCURRENT_REQUESTS,
    ENV_MAX_INPUT_TOKENS,
    ENV_MAX_TOTAL_TOKENS,
    ENV_MODEL_ROOT,
    ENV_NUM_SHARD,
    ENV_PORT,
    ENV_QUANTIZE,
    ENV_SERVED_MODEL_NAME,
    ENV_WEIGHTS_URI,
    READS,
)

__all__ = ["READS", "ConfigError", "Settings", "main"]


class Settings:
    """The validated task environment."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self.served_model_name = required(env, ENV_SERVED_MODEL_NAME)
        if "/" in self.served_model_name or self.served_model_name.startswith("."):
            raise ConfigError(f"{ENV_SERVED_MODEL_NAME} must be one path component")
        self.weights_uri = required(env, ENV_WEIGHTS_URI)
        root = env.get(ENV_MODEL_ROOT, "").strip() or DEFAULT_MODEL_ROOT
        if self.weights_uri.startswith("s3://"):
            self.model_dir = Path(root) / self.served_model_name
        elif self.weights_uri.startswith("/") and ".." not in self.weights_uri.split("/"):
            self.model_dir = Path(self.weights_uri)
        else:
            raise ConfigError(
                f"{ENV_WEIGHTS_URI} must be s3://bucket/prefix/ or an absolute EFS directory, "
                f"got {self.weights_uri!r}"
            )
        self.port = positive_int(env, ENV_PORT, DEFAULT_PORT)
        self.num_shard = positive_int(env, ENV_NUM_SHARD, 1)
        self.max_total_tokens = positive_int(env, ENV_MAX_TOTAL_TOKENS)
        self.max_input_tokens = positive_int(env, ENV_MAX_INPUT_TOKENS, self.max_total_tokens - 1)
        if self.max_input_tokens >= self.max_total_tokens:
            raise ConfigError(
                f"{ENV_MAX_INPUT_TOKENS} ({self.max_input_tokens}) must be below "
                f"{ENV_MAX_TOTAL_TOKENS} ({self.max_total_tokens})"
            )
        fraction = env.get(ENV_CUDA_MEMORY_FRACTION, "").strip() or "0.9"
        try:
            if not 0 < float(fraction) <= 1:
                raise ValueError
        except ValueError:
            raise ConfigError(
                f"{ENV_CUDA_MEMORY_FRACTION} must be a number in (0, 1], got {fraction!r}"
            ) from None
        self.cuda_memory_fraction = fraction
        self.max_concurrent_requests = positive_int(env, ENV_MAX_CONCURRENT_REQUESTS, 16)
        self.dtype = env.get(ENV_DTYPE, "").strip() or None
        self.kv_cache_dtype = env.get(ENV_KV_CACHE_DTYPE, "").strip() or None
        self.quantize = env.get(ENV_QUANTIZE, "").strip() or None
        self.extra_args = string_list(env, ENV_EXTRA_ARGS)

    def command(self) -> list[str]:
        """The `text-generation-launcher` argv."""
        argv = [
            *COMMAND,
            "--model-id",
            str(self.model_dir),
            "--num-shard",
            str(self.num_shard),
            "--max-input-tokens",
            str(self.max_input_tokens),
            "--max-total-tokens",
            str(self.max_total_tokens),
            "--cuda-memory-fraction",
            self.cuda_memory_fraction,
            "--max-concurrent-requests",
            str(self.max_concurrent_requests),
        ]
        for flag, value in (
            ("--dtype", self.dtype),
            ("--kv-cache-dtype", self.kv_cache_dtype),
            ("--quantize", self.quantize),
        ):
            if value:
                argv += [flag, value]
        argv += [
            # awsvpc: the task ENI is the only interface the ALB reaches; bind all of them.
            "--hostname",
            "0.0.0.0",
            "--port",
            str(self.port),
            # private subnets: no telemetry to Hugging Face
            "--usage-stats",
            "off",
            "--json-output",
        ]
        return argv + self.extra_args


def stage(uri: str, model_dir: Path) -> int:
    """Download every object under the S3 prefix `uri` into `model_dir`; return files fetched."""
    # the image installs a pinned boto3; imported here so tests (and pyright) need none
    import boto3  # pyright: ignore[reportMissingImports]

    return stage_s3_prefix(boto3.client("s3"), uri, model_dir)


def main(argv: list[str]) -> int:
    """Validate the environment, then print the command or stage and exec TGI."""
    try:
        settings = Settings(os.environ)
        command = settings.command()
        if argv[1:] == ["--print-command"]:
            print(json.dumps(command))
            return 0
        if argv[1:]:
            raise ConfigError(f"unexpected arguments {argv[1:]} (only --print-command)")
        if settings.weights_uri.startswith("s3://"):
            settings.model_dir.mkdir(parents=True, exist_ok=True)
            fetched = stage(settings.weights_uri, settings.model_dir)
            log(f"staged {fetched} files to {settings.model_dir}")
        check_weights_dir(settings.model_dir)
    except ConfigError as exc:
        log(str(exc))
        return 2
    except WeightsError as exc:
        log(str(exc))
        return 1
    log(f"exec {json.dumps(command)}")
    os.execvp(command[0], command)
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main(sys.argv))
