#!/usr/bin/env python3
"""Container entrypoint of the Neuron image: stage a precompiled model, check it, serve it.

Steps (task environment names in `contracts/engine.py` and `contracts/neuron.py`):
1. Stage the artifact `ENGINE_ARTIFACT_URI` (an `optimum-cli export neuron` output directory
   on S3) to `ENGINE_MODEL_DIR` with boto3. That directory is in the container's own writable
   layer (the task mounts no volume), so every new task stages the artifact afresh; files
   already present with the same size are skipped only when the entrypoint runs again inside
   the same container.
2. Check the artifact's `neuron_config.json` (written by optimum-neuron's `NeuronConfig`)
   against `ENGINE_BATCH_SIZE`, `ENGINE_SEQUENCE_LENGTH`, `ENGINE_TP_DEGREE` and, when set,
   `ENGINE_NEURON_TARGET`; also that the compiled graph (`model.pt`) and the weights are there.
   Any mismatch exits 1 with one `entrypoint:` line. Never compile: with a matching
   `neuron_config.json` optimum-neuron loads the compiled model; without one it would search
   the hub cache or export (compile) the model, which must not happen on a serving instance.
3. Run `optimum-cli neuron serve` (vLLM 0.11.0 + the optimum-neuron plugin) on loopback
   `ENGINE_UPSTREAM_PORT`, and the SSE keep-alive proxy (`contracts/sse_proxy.py`) on `ENGINE_PORT`.
   SIGTERM from ECS is forwarded to the engine; the container exits with the engine's status.

Usage: `entrypoint.py`, `entrypoint.py --print-command` (print the engine argv as JSON), or
`entrypoint.py --check-artifact DIR` (run step 2 on a local directory, e.g. in CI before an
artifact is uploaded). Exit 2 on an invalid environment. Standard library only (boto3 is
imported only to stage); Python 3.10-compatible (the Neuron DLC's interpreter).
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

from contracts.engine import (  # noqa: E402
    DEFAULT_PORT,
    DEFAULT_SSE_KEEPALIVE_SECONDS,
    ENV_EXTRA_ARGS,
    ENV_PORT,
    ENV_SERVED_MODEL_NAME,
    ENV_SSE_KEEPALIVE_SECONDS,
)
from contracts.envparse import (  # noqa: E402
    ConfigError,
    log,
    positive_int,
    required,
    string_list,
)
from contracts.neuron import (  # noqa: E402
    ENV_ARTIFACT_URI,
    ENV_BATCH_SIZE,
    ENV_MODEL_DIR,
    ENV_NEURON_TARGET,
    ENV_SEQUENCE_LENGTH,
    ENV_TP_DEGREE,
    ENV_UPSTREAM_PORT,
)
from contracts.sse_proxy import LOOPBACK, serve_behind_proxy  # noqa: E402
from contracts.staging import WeightsError, stage_s3_prefix  # noqa: E402

NEURON_CONFIG_FILE = "neuron_config.json"
"""optimum-neuron's `NEURON_CONFIG_NAME`: the export's compile settings."""
COMPILED_MODEL_FILE = "model.pt"
"""`NxDPreTrainedModel.COMPILED_MODEL_FILE_NAME`: the traced, compiled graphs."""
CHECKPOINT_DIR = "checkpoint"
"""`NxDPreTrainedModel.CHECKPOINT_DIR`: pre-sharded weights saved by the export."""
SERIALIZED_KEY = "NxDNeuronConfig"
"""The only NeuronConfig class optimum-neuron's vLLM backend serves (decoder models, NxD)."""


class ArtifactMismatchError(RuntimeError):
    """The staged artifact cannot be served as configured (exit 1)."""


class Settings:
    """The validated task environment."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self.served_model_name = required(env, ENV_SERVED_MODEL_NAME)
        self.artifact_uri = required(env, ENV_ARTIFACT_URI)
        if not self.artifact_uri.startswith("s3://"):
            raise ConfigError(f"{ENV_ARTIFACT_URI} must be an s3:// URI")
        self.model_dir = env.get(ENV_MODEL_DIR, "").strip() or "/models/artifact"
        self.batch_size = positive_int(env, ENV_BATCH_SIZE)
        self.sequence_length = positive_int(env, ENV_SEQUENCE_LENGTH)
        self.tp_degree = positive_int(env, ENV_TP_DEGREE)
        self.target = env.get(ENV_NEURON_TARGET, "").strip() or None
        self.port = positive_int(env, ENV_PORT, DEFAULT_PORT)
        self.upstream_port = positive_int(env, ENV_UPSTREAM_PORT, self.port + 1)
        if self.upstream_port == self.port:
            raise ConfigError(f"{ENV_UPSTREAM_PORT} must differ from {ENV_PORT}")
        self.keepalive_seconds = positive_int(
            env, ENV_SSE_KEEPALIVE_SECONDS, DEFAULT_SSE_KEEPALIVE_SECONDS
        )
        self.extra_args = string_list(env, ENV_EXTRA_ARGS)

    def command(self) -> list[str]:
        """The `optimum-cli neuron serve` argv; unknown flags are forwarded to vLLM 0.11.0."""
        return [
            "optimum-cli",
            "neuron",
            "serve",
            "--model",
            self.model_dir,
            "--served-model-name",
            self.served_model_name,
            "--batch-size",
            str(self.batch_size),
            "--sequence-length",
            str(self.sequence_length),
            "--tensor-parallel-size",
            str(self.tp_degree),
            "--port",
            str(self.upstream_port),
            # Only the keep-alive proxy may reach the engine.
            "--host",
            LOOPBACK,
            *self.extra_args,
        ]


def check_artifact(model_dir: Path, settings: Settings, installed_version: str | None) -> None:
    """Raise ArtifactMismatchError unless `model_dir` can be served without compiling."""
    config_path = model_dir / NEURON_CONFIG_FILE
    where = f"artifact {settings.artifact_uri}"
    if not config_path.is_file():
        raise ArtifactMismatchError(
            f"{where} has no {NEURON_CONFIG_FILE}: it is not an optimum-neuron export and "
            "would be compiled on this instance; export it with `optimum-cli export neuron` first"
        )
    try:
        config = json.loads(config_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ArtifactMismatchError(f"{where}: unreadable {NEURON_CONFIG_FILE}: {exc}") from None
    if not isinstance(config, dict):
        raise ArtifactMismatchError(f"{where}: {NEURON_CONFIG_FILE} is not a JSON object")
    if config.get("_serialized_key") != SERIALIZED_KEY:
        raise ArtifactMismatchError(
            f"{where} is a {config.get('_serialized_key')!r} export; the vLLM server only "
            f"serves {SERIALIZED_KEY} (decoder) exports"
        )
    expected = {
        "batch_size": settings.batch_size,
        "sequence_length": settings.sequence_length,
        "tp_degree": settings.tp_degree,
    }
    compiled = {key: config.get(key) for key in expected}
    if compiled != expected:
        have = ", ".join(f"{k}={v}" for k, v in compiled.items())
        want = ", ".join(f"{k}={v}" for k, v in expected.items())
        raise ArtifactMismatchError(
            f"{where} was compiled for {have} but the service is configured for {want}; "
            "refusing to start instead of recompiling — re-export the model with the configured "
            "values or change the service's batch_size/sequence_length/tp_degree"
        )
    if settings.target is not None and config.get("target") != settings.target:
        raise ArtifactMismatchError(
            f"{where} was compiled for target {config.get('target')!r}, this service's "
            f"instances need target {settings.target!r}"
        )
    version = config.get("optimum_neuron_version")
    if installed_version is not None and version != installed_version:
        raise ArtifactMismatchError(
            f"{where} was exported with optimum-neuron {version}, the image has "
            f"{installed_version}; optimum-neuron refuses to load it"
        )
    if not (model_dir / COMPILED_MODEL_FILE).is_file():
        raise ArtifactMismatchError(f"{where} has no compiled graph {COMPILED_MODEL_FILE}")
    has_weights = (model_dir / CHECKPOINT_DIR).is_dir() or any(model_dir.glob("*.safetensors"))
    if not has_weights:
        # Without local weights optimum-neuron fetches `checkpoint_id` from the Hugging Face hub.
        raise ArtifactMismatchError(
            f"{where} has no weights ({CHECKPOINT_DIR}/ or *.safetensors); they would be "
            f"downloaded from the hub ({config.get('checkpoint_id')!r}), which this image forbids"
        )


def installed_optimum_neuron() -> str | None:
    """Version of optimum-neuron in this image (None outside the image)."""
    from importlib import metadata

    try:
        return metadata.version("optimum-neuron")
    except metadata.PackageNotFoundError:
        return None


def stage(uri: str, model_dir: Path) -> int:
    """Download every object under the S3 prefix `uri` into `model_dir`; return files fetched."""
    # The image installs a pinned boto3; imported here so the tests need none.
    import boto3  # pyright: ignore[reportMissingImports]

    return stage_s3_prefix(boto3.client("s3"), uri, model_dir)


def main(argv: list[str]) -> int:
    """Dispatch the three modes; see the module docstring."""
    try:
        settings = Settings(os.environ)
        command = settings.command()
        if argv[1:] == ["--print-command"]:
            print(json.dumps(command))
            return 0
        if len(argv) == 3 and argv[1] == "--check-artifact":
            check_artifact(Path(argv[2]), settings, installed_optimum_neuron())
            log(f"{argv[2]} matches the configured compilation")
            return 0
        if argv[1:]:
            raise ConfigError(f"unexpected arguments {argv[1:]}")
        model_dir = Path(settings.model_dir)
        model_dir.mkdir(parents=True, exist_ok=True)
        log(f"staged {stage(settings.artifact_uri, model_dir)} files to {model_dir}")
        check_artifact(model_dir, settings, installed_optimum_neuron())
    except ConfigError as exc:
        log(str(exc))
        return 2
    except (ArtifactMismatchError, WeightsError) as exc:
        log(str(exc))
        return 1
    log(f"exec {json.dumps(command)} behind keep-alive proxy on :{settings.port}")
    return serve_behind_proxy(
        command, settings.port, settings.upstream_port, settings.keepalive_seconds
    )


if __name__ == "__main__":
    sys.exit(main(sys.argv))
