#!/usr/bin/env python3
"""Container entrypoint of the SGLang image: task environment → SGLang behind a keep-alive proxy.

The ECS task definition only sets environment variables (names in `contracts/engine.py` and
`contracts/sglang.py`);
this script validates them, builds the `python3 -m sglang.launch_server` command line, runs
SGLang 0.5.23 on loopback and the SSE keep-alive proxy (`contracts/sse_proxy.py`, shared with
the Neuron image) on the service port: SGLang's event streams have no keep-alive comments of
their own.

Weights: `ENGINE_WEIGHTS_URI` is either `s3://bucket/prefix/` — streamed into GPU memory with the
Run:ai model streamer (`--load-format runai_streamer`; SGLang copies config and tokenizer from
the same prefix) — or an absolute directory on the task's EFS mount, read in place. Nothing
comes from a model hub (`HF_HUB_OFFLINE=1`).

Usage: `entrypoint.py` (serve) or `entrypoint.py --print-command` (print the argv as JSON, the
API key masked, and exit; used by the tests). Exit 2 with one `entrypoint:` line on stderr when
the environment is invalid, 1 when the EFS directory holds no model. SIGTERM from ECS is
forwarded to SGLang; the container exits with its status. Standard library only.
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

from contracts.engine import DEFAULT_SSE_KEEPALIVE_SECONDS  # noqa: E402
from contracts.envparse import (  # noqa: E402
    ConfigError,
    log,
    positive_int,
    required,
    string_list,
)
from contracts.sglang import (  # noqa: E402
    COMMAND,
    DEFAULT_PORT,
    ENV_API_KEY,
    ENV_CONTEXT_LENGTH,
    ENV_DTYPE,
    ENV_EXTRA_ARGS,
    ENV_KV_CACHE_DTYPE,
    ENV_MAX_RUNNING_REQUESTS,
    ENV_MEM_FRACTION_STATIC,
    ENV_PORT,
    ENV_QUANTIZATION,
    ENV_SERVED_MODEL_NAME,
    ENV_SSE_KEEPALIVE_SECONDS,
    ENV_TENSOR_PARALLEL_SIZE,
    ENV_UPSTREAM_PORT,
    ENV_WEIGHTS_URI,
    READS,
)
from contracts.sse_proxy import LOOPBACK, serve_behind_proxy  # noqa: E402
from contracts.staging import (  # noqa: E402
    WeightsError,
    check_runai_streamer,
    check_weights_dir,
)

__all__ = ["READS", "ConfigError", "Settings", "main"]

MASK = "***"


class Settings:
    """The validated task environment."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self.served_model_name = required(env, ENV_SERVED_MODEL_NAME)
        weights = required(env, ENV_WEIGHTS_URI)
        if weights.startswith("s3://"):
            # The streamer lists objects under the prefix; without the slash it would also
            # match siblings (s3://b/llama-8b matches s3://b/llama-8b-old/...).
            self.weights = weights.rstrip("/") + "/"
            self.load_format = "runai_streamer"
        elif weights.startswith("/") and ".." not in weights.split("/"):
            self.weights = weights.rstrip("/") or "/"
            self.load_format = "auto"
        else:
            raise ConfigError(
                f"{ENV_WEIGHTS_URI} must be s3://bucket/prefix/ or an absolute EFS directory, "
                f"got {weights!r}"
            )
        self.port = positive_int(env, ENV_PORT, DEFAULT_PORT)
        self.upstream_port = positive_int(env, ENV_UPSTREAM_PORT, self.port + 1)
        if self.upstream_port == self.port or max(self.port, self.upstream_port) > 65535:
            raise ConfigError(f"{ENV_UPSTREAM_PORT} must differ from {ENV_PORT}, both <= 65535")
        self.keepalive_seconds = positive_int(
            env, ENV_SSE_KEEPALIVE_SECONDS, DEFAULT_SSE_KEEPALIVE_SECONDS
        )
        self.tp = positive_int(env, ENV_TENSOR_PARALLEL_SIZE, 1)
        self.context_length = positive_int(env, ENV_CONTEXT_LENGTH)
        fraction = env.get(ENV_MEM_FRACTION_STATIC, "").strip() or "0.8"
        try:
            if not 0 < float(fraction) < 1:
                raise ValueError
        except ValueError:
            raise ConfigError(
                f"{ENV_MEM_FRACTION_STATIC} must be a number in (0, 1), got {fraction!r}"
            ) from None
        self.mem_fraction_static = fraction
        self.max_running_requests = positive_int(env, ENV_MAX_RUNNING_REQUESTS, 16)
        self.dtype = env.get(ENV_DTYPE, "").strip() or "auto"
        self.kv_cache_dtype = env.get(ENV_KV_CACHE_DTYPE, "").strip() or "auto"
        self.quantization = env.get(ENV_QUANTIZATION, "").strip() or None
        self.api_key = env.get(ENV_API_KEY, "").strip() or None
        self.extra_args = string_list(env, ENV_EXTRA_ARGS)

    def command(self, mask_secrets: bool = False) -> list[str]:
        """The SGLang argv (the API key replaced by `***` when `mask_secrets`)."""
        argv = [
            *COMMAND,
            "--model-path",
            self.weights,
            "--load-format",
            self.load_format,
            "--served-model-name",
            self.served_model_name,
            "--tp-size",
            str(self.tp),
            "--context-length",
            str(self.context_length),
            "--mem-fraction-static",
            self.mem_fraction_static,
            "--max-running-requests",
            str(self.max_running_requests),
            "--dtype",
            self.dtype,
            "--kv-cache-dtype",
            self.kv_cache_dtype,
        ]
        if self.quantization:
            argv += ["--quantization", self.quantization]
        if self.api_key:
            argv += ["--api-key", MASK if mask_secrets else self.api_key]
        # Only the keep-alive proxy may reach the engine.
        argv += ["--host", LOOPBACK, "--port", str(self.upstream_port)]
        return argv + self.extra_args


def preflight(settings: Settings) -> None:
    """Checks that only make sense inside the image (one line, not a traceback)."""
    if settings.load_format == "runai_streamer":
        check_runai_streamer()
    else:
        check_weights_dir(Path(settings.weights))


def main(argv: list[str]) -> int:
    """Validate the environment, then print the command or serve."""
    try:
        settings = Settings(os.environ)
        if argv[1:] == ["--print-command"]:
            print(json.dumps(settings.command(mask_secrets=True)))
            return 0
        if argv[1:]:
            raise ConfigError(f"unexpected arguments {argv[1:]} (only --print-command)")
        preflight(settings)
    except ConfigError as exc:
        log(str(exc))
        return 2
    except WeightsError as exc:
        log(str(exc))
        return 1
    log(
        f"exec {json.dumps(settings.command(mask_secrets=True))} behind keep-alive proxy "
        f"on :{settings.port}"
    )
    return serve_behind_proxy(
        settings.command(), settings.port, settings.upstream_port, settings.keepalive_seconds
    )


if __name__ == "__main__":
    sys.exit(main(sys.argv))
