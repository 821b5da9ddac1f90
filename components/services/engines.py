"""How a model-serving container is launched: the contract between task definitions and images.

Pure data and functions (no Pulumi): `ModelService` turns a `VllmLaunch` or `NeuronLaunch` into
the container definition's `environment`, `command`, port mapping and health check; the image
entrypoints (`images/vllm/entrypoint.py`, `images/neuron/entrypoint.py`) read exactly the
environment variables named here and build the engine command line. Tests run the real
entrypoints on the environment produced here and check every flag against the pinned engine
releases' own argument definitions (`tools/engine_flags.py`).

Engines:
- GPU: vLLM 0.33.0 (`vllm serve`). Weights stream from S3 with the Run:ai model streamer
  (`--load-format runai_streamer`, model `s3://bucket/prefix/`); vLLM itself pulls the small
  config/tokenizer files from the same prefix, so nothing comes from a model hub
  (`HF_HUB_OFFLINE=1` makes any accidental hub lookup fail fast instead of downloading).
  vLLM 0.33.0 sends SSE keep-alive comments itself (`--sse-keep-alive-interval`).
- Inferentia/Trainium: optimum-neuron 0.4.5 (`optimum-cli neuron serve`, which runs vLLM 0.11.0
  with optimum-neuron's platform plugin). The precompiled artifact is staged from S3 to local
  disk; the entrypoint refuses to start unless its `neuron_config.json` matches the configured
  batch size, sequence length and tensor parallel degree, because a mismatch makes
  optimum-neuron look for another compiled variant or recompile — minutes to hours on the
  instance. vLLM 0.11.0 has no SSE keep-alive, so the entrypoint runs the engine on loopback and
  a small stdlib reverse proxy on the service port that injects `: keep-alive` comments into
  idle event streams.

Why keep-alives at all: an ALB closes a connection on which no byte moved for its idle timeout
(1–4000 s). A long prefill, a queued request or a slow generation can be silent for longer than
that; an SSE comment line is ignored by clients but resets the timer.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from ecs_inference.contracts import aws_limits

# The task environment both images read is stated once, in contracts/ (the images copy it).
from ecs_inference.contracts.engine import (
    DEFAULT_PORT,
    DEFAULT_SSE_KEEPALIVE_SECONDS,
    ENV_EXTRA_ARGS,
    ENV_HF_HUB_OFFLINE,
    ENV_PORT,
    ENV_SERVED_MODEL_NAME,
    ENV_SSE_KEEPALIVE_SECONDS,
)
from ecs_inference.contracts.engine import HEALTH_PATH as HEALTH_PATH
from ecs_inference.contracts.neuron import (
    ENV_ARTIFACT_URI,
    ENV_BATCH_SIZE,
    ENV_MODEL_DIR,
    ENV_NEURON_RT_VISIBLE_CORES,
    ENV_NEURON_TARGET,
    ENV_SEQUENCE_LENGTH,
    ENV_TP_DEGREE,
    ENV_UPSTREAM_PORT,
)
from ecs_inference.contracts.vllm import ENV_API_KEY as ENV_API_KEY
from ecs_inference.contracts.vllm import (
    ENV_DTYPE,
    ENV_GPU_MEMORY_UTILIZATION,
    ENV_KV_CACHE_DTYPE,
    ENV_MAX_MODEL_LEN,
    ENV_MAX_NUM_SEQS,
    ENV_QUANTIZATION,
    ENV_TENSOR_PARALLEL_SIZE,
    ENV_WEIGHTS_URI,
)
from ecs_inference.contracts.vllm import ENV_HTTP_KEEPALIVE as ENV_VLLM_HTTP_KEEPALIVE
from ecs_inference.contracts.vllm import ENV_NO_USAGE_STATS as ENV_VLLM_NO_USAGE_STATS
from ecs_inference.sizing.catalog import NEURON_CORES_PER_DEVICE

VLLM_VERSION = "0.33.0"
"""vLLM release of the GPU image (base `vllm/vllm-openai:v0.33.0`)."""
VLLM_BASE_IMAGE = f"vllm/vllm-openai:v{VLLM_VERSION}"
"""Pinned upstream image the GPU Dockerfile builds on."""
OPTIMUM_NEURON_VERSION = "0.4.5"
"""optimum-neuron release of the Neuron image (AWS DLC `huggingface-vllm-inference-neuronx`)."""
NEURON_VLLM_VERSION = "0.11.0"
"""vLLM release optimum-neuron 0.4.5 runs on (its `vllm==0.11.0` extra); flags forwarded to it
must exist there."""
VLLM_FLAG_TABLE = f"vllm-{VLLM_VERSION}"
"""The committed flags of `vllm serve` (`contracts/flags/<name>.json`, from the wheel)."""
NEURON_FLAG_TABLE = f"optimum-neuron-{OPTIMUM_NEURON_VERSION}"
"""The committed flags of `optimum-cli neuron serve` and the vLLM flags it forwards."""


KEEPALIVE_MARGIN_SECONDS = 5
"""Target keep-alive exceeds the ALB idle timeout by this much."""

_S3_URI = aws_limits.S3_URI
_VLLM_DTYPES = ("auto", "half", "float16", "bfloat16", "float", "float32")
# optimum-neuron records the compilation target normalised by `INSTANCE_VALUE_MAP`
# (optimum/neuron/utils/instance.py): Inferentia2 and Trainium1 share the `trn1` target.
# trn2 is left out: 4 logical cores per device breaks the 2-cores-per-device device mapping.
_NEURON_TARGETS = {"inf2": "trn1", "trn1": "trn1", "trn1n": "trn1"}
_CORES_PER_DEVICE = NEURON_CORES_PER_DEVICE  # Inferentia2 and Trainium1: 2 NeuronCores a chip

_VLLM_MANAGED_FLAGS = frozenset(
    {
        "--model",
        "--served-model-name",
        "--load-format",
        "--tensor-parallel-size",
        "-tp",
        "--max-model-len",
        "--gpu-memory-utilization",
        "--max-num-seqs",
        "--dtype",
        "--kv-cache-dtype",
        "--quantization",
        "-q",
        "--sse-keep-alive-interval",
        "--host",
        "--port",
        "--download-dir",
        "--trust-remote-code",
    }
)
_NEURON_MANAGED_FLAGS = frozenset(
    {
        "--model",
        "-m",
        "--served-model-name",
        "--batch-size",
        "--sequence-length",
        "--tensor-parallel-size",
        "-tp",
        "--port",
        "--host",
        "--max-num-seqs",
        "--max-model-len",
        # would let optimum-neuron compile on the instance when the artifact does not match
        "--allow-non-cached-model",
        "--trust-remote-code",
    }
)


VLLM_MANAGED_FLAGS = _VLLM_MANAGED_FLAGS
"""Flags the vLLM launch sets itself; `extraArgs` may not."""
NEURON_MANAGED_FLAGS = _NEURON_MANAGED_FLAGS
"""Flags the Neuron launch sets itself; `extraArgs` may not."""


class EngineLaunchError(ValueError):
    """A launch setting is invalid; the message names the field and the offending value."""


def _check_extra_args(extra_args: tuple[str, ...], managed: frozenset[str], where: str) -> None:
    if isinstance(extra_args, str) or not all(isinstance(a, str) for a in extra_args):
        raise EngineLaunchError(f"{where}.extra_args must be a list of strings")
    for arg in extra_args:
        if not arg.strip() or "\n" in arg or "\x00" in arg:
            raise EngineLaunchError(f"{where}.extra_args contains an empty or multi-line item")
        if arg.startswith("-"):
            option = arg.split("=", 1)[0].replace("_", "-")
            if option in managed or option.removeprefix("--no-") in {
                m.removeprefix("--") for m in managed
            }:
                raise EngineLaunchError(
                    f"{where}.extra_args sets {option}, which the launch already controls; "
                    "set the dedicated field instead"
                )
    if extra_args and not extra_args[0].startswith("--"):
        raise EngineLaunchError(
            f"{where}.extra_args must start with a --flag, got {extra_args[0]!r}"
        )


def _check_common(
    where: str, launch: VllmLaunch | NeuronLaunch, uri_field: str, positive: Sequence[str]
) -> None:
    """The checks both launches share, in order: `extra_args` frozen to a tuple, the served
    name, the ALB idle timeout and keep-alive, the port, the S3 URI in `uri_field` and the
    fields in `positive` (positive integers)."""
    object.__setattr__(launch, "extra_args", tuple(launch.extra_args))
    served_model_name = launch.served_model_name
    keepalive_seconds = launch.keepalive_seconds
    port = launch.port
    idle_timeout = launch.alb_idle_timeout_seconds
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._:/\-]{0,127}", served_model_name):
        raise EngineLaunchError(
            f"{where}.served_model_name {served_model_name!r} must be 1-128 characters of "
            "letters, digits and ._:/-"
        )
    idle_min, idle_max = aws_limits.ALB_IDLE_TIMEOUT_RANGE
    if not idle_min <= idle_timeout <= idle_max:
        raise EngineLaunchError(
            f"{where}.alb_idle_timeout_seconds {idle_timeout} outside the ALB range "
            f"{idle_min}-{idle_max}"
        )
    # "Well inside": at least two keep-alives fit in one idle period, so one delayed write
    # (GC pause, event-loop stall during a long prefill) does not cost the stream.
    if not 1 <= keepalive_seconds <= idle_timeout // 2:
        raise EngineLaunchError(
            f"{where}.keepalive_seconds {keepalive_seconds} must be between 1 and half the "
            f"ALB idle timeout ({idle_timeout // 2} s of {idle_timeout} s)"
        )
    if not 1024 <= port <= 65535:
        raise EngineLaunchError(f"{where}.port {port} must be an unprivileged port 1024-65535")
    uri = getattr(launch, uri_field)
    if not _S3_URI.match(uri):
        raise EngineLaunchError(f"{where}.{uri_field} {uri!r} must be an s3://bucket/prefix/ URI")
    for name in positive:
        _pos_int(where, name, getattr(launch, name))


def _pos_int(where: str, name: str, value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise EngineLaunchError(f"{where}.{name} must be a positive integer, got {value!r}")


@dataclass(frozen=True)
class VllmLaunch:
    """Settings of one vLLM (GPU) model server. Validated on construction."""

    served_model_name: str
    """Model id clients send in the OpenAI `model` field."""
    weights_uri: str
    """`s3://bucket/prefix/` with safetensors weights, config.json and tokenizer files."""
    max_model_len: int
    """Context length (prompt + generation) the KV cache is sized for."""
    tensor_parallel_size: int = 1
    """GPUs the model is sharded over."""
    gpu_memory_utilization: float = 0.9
    """Fraction of each GPU's memory vLLM may use."""
    max_num_seqs: int = 256
    """Maximum concurrent sequences."""
    dtype: str = "auto"
    """Weight/activation dtype vLLM takes (`auto`, `bfloat16`, ...)."""
    kv_cache_dtype: str = "auto"
    """KV cache dtype."""
    quantization: str | None = None
    """Quantization method; None: none or auto-detected."""
    keepalive_seconds: int = DEFAULT_SSE_KEEPALIVE_SECONDS
    """SSE keep-alive interval; at most half the ALB idle timeout."""
    alb_idle_timeout_seconds: int = aws_limits.ALB_IDLE_TIMEOUT_DEFAULT
    """The endpoint's idle timeout (pass the real value); the HTTP keep-alive is set above it."""
    port: int = DEFAULT_PORT
    """Container port."""
    aws_region: str | None = None
    """Region of the weights bucket for the S3 streamer; None: the SDK's own resolution."""
    extra_args: tuple[str, ...] = field(default_factory=tuple)
    """Extra `vllm serve` flags; flags the fields above control are rejected."""

    def __post_init__(self) -> None:
        where = "VllmLaunch"
        _check_common(
            where, self, "weights_uri", ("max_model_len", "tensor_parallel_size", "max_num_seqs")
        )
        tp = self.tensor_parallel_size
        if tp & (tp - 1):
            raise EngineLaunchError(f"{where}.tensor_parallel_size {tp} must be a power of two")
        if not 0 < self.gpu_memory_utilization <= 1:
            raise EngineLaunchError(
                f"{where}.gpu_memory_utilization {self.gpu_memory_utilization} must be in (0, 1]"
            )
        if self.dtype not in _VLLM_DTYPES:
            raise EngineLaunchError(f"{where}.dtype {self.dtype!r} not one of {_VLLM_DTYPES}")
        for name in ("kv_cache_dtype", "quantization"):
            value = getattr(self, name)
            if value is not None and not re.fullmatch(r"[a-z0-9_\-]+", value):
                raise EngineLaunchError(f"{where}.{name} {value!r} is not a method name")
        _check_extra_args(self.extra_args, _VLLM_MANAGED_FLAGS, where)

    @property
    def gpus(self) -> int:
        """GPUs the task must reserve (`resourceRequirements` type GPU)."""
        return self.tensor_parallel_size


@dataclass(frozen=True)
class NeuronLaunch:
    """Settings of one optimum-neuron (Inferentia/Trainium) model server. Validated on
    construction; `batch_size`, `sequence_length` and `tp_degree` are the values the artifact
    was compiled with."""

    served_model_name: str
    """Model id clients send in the OpenAI `model` field."""
    artifact_uri: str
    """`s3://bucket/prefix/` of an `optimum-cli export neuron` output (neuron_config.json,
    config.json, model.pt, weights, tokenizer)."""
    batch_size: int
    """Batch size the artifact was compiled for."""
    sequence_length: int
    """Sequence length the artifact was compiled for."""
    tp_degree: int
    """Tensor parallel degree (NeuronCores) the artifact was compiled for."""
    num_devices: int | None = None
    """Neuron devices to map; None: ceil(tp_degree / NeuronCores per device)."""
    target: str | None = None
    """The pool's instance family (`inf2`, `trn1`, `trn1n`) whose compilation target the
    artifact must record; None skips the check."""
    model_dir: str = "/models/artifact"
    """Local directory the artifact is staged to."""
    keepalive_seconds: int = DEFAULT_SSE_KEEPALIVE_SECONDS
    """SSE keep-alive interval of the proxy; at most half the ALB idle timeout."""
    alb_idle_timeout_seconds: int = aws_limits.ALB_IDLE_TIMEOUT_DEFAULT
    """The endpoint's idle timeout (pass the real value)."""
    port: int = DEFAULT_PORT
    """Container port (the keep-alive proxy)."""
    upstream_port: int | None = None
    """Loopback port of the engine behind the proxy; None: port + 1."""
    aws_region: str | None = None
    """Region of the artifact bucket; None: the SDK's own resolution."""
    extra_args: tuple[str, ...] = field(default_factory=tuple)
    """Flags forwarded to vLLM 0.11.0; flags the fields above control are rejected."""

    def __post_init__(self) -> None:
        where = "NeuronLaunch"
        _check_common(where, self, "artifact_uri", ("batch_size", "sequence_length", "tp_degree"))
        devices = self.num_devices
        if devices is None:
            devices = math.ceil(self.tp_degree / _CORES_PER_DEVICE)
            object.__setattr__(self, "num_devices", devices)
        _pos_int(where, "num_devices", devices)
        if devices * _CORES_PER_DEVICE < self.tp_degree:
            raise EngineLaunchError(
                f"{where}.num_devices {devices} gives "
                f"{devices * _CORES_PER_DEVICE} NeuronCores, fewer than tp_degree "
                f"{self.tp_degree}"
            )
        if self.target is not None and self.target not in _NEURON_TARGETS:
            raise EngineLaunchError(
                f"{where}.target {self.target!r} not one of {sorted(_NEURON_TARGETS)}"
            )
        if not self.model_dir.startswith("/") or any(c.isspace() for c in self.model_dir):
            raise EngineLaunchError(f"{where}.model_dir {self.model_dir!r} must be absolute")
        upstream = self.upstream_port
        if upstream is None:
            upstream = self.port + 1
            object.__setattr__(self, "upstream_port", upstream)
        if not 1024 <= upstream <= 65535 or upstream == self.port:
            raise EngineLaunchError(
                f"{where}.upstream_port {self.upstream_port} must be 1024-65535 and differ "
                f"from port {self.port}"
            )
        _check_extra_args(self.extra_args, _NEURON_MANAGED_FLAGS, where)


def _env(pairs: dict[str, str | None]) -> list[dict[str, str]]:
    return [{"name": k, "value": v} for k, v in sorted(pairs.items()) if v is not None]


def _common_env(launch: VllmLaunch | NeuronLaunch) -> dict[str, str | None]:
    return {
        ENV_SERVED_MODEL_NAME: launch.served_model_name,
        ENV_PORT: str(launch.port),
        ENV_SSE_KEEPALIVE_SECONDS: str(launch.keepalive_seconds),
        ENV_EXTRA_ARGS: json.dumps(list(launch.extra_args)) if launch.extra_args else None,
        ENV_HF_HUB_OFFLINE: "1",
        ENV_VLLM_NO_USAGE_STATS: "1",
        ENV_VLLM_HTTP_KEEPALIVE: str(launch.alb_idle_timeout_seconds + KEEPALIVE_MARGIN_SECONDS),
        "AWS_REGION": launch.aws_region,
        "AWS_DEFAULT_REGION": launch.aws_region,
    }


def container_environment(launch: VllmLaunch | NeuronLaunch) -> list[dict[str, str]]:
    """The container definition's `environment` (sorted by name; no secrets)."""
    env = _common_env(launch)
    if isinstance(launch, VllmLaunch):
        env |= {
            ENV_WEIGHTS_URI: launch.weights_uri,
            ENV_TENSOR_PARALLEL_SIZE: str(launch.tensor_parallel_size),
            ENV_MAX_MODEL_LEN: str(launch.max_model_len),
            ENV_GPU_MEMORY_UTILIZATION: repr(float(launch.gpu_memory_utilization)),
            ENV_MAX_NUM_SEQS: str(launch.max_num_seqs),
            ENV_DTYPE: launch.dtype,
            ENV_KV_CACHE_DTYPE: launch.kv_cache_dtype,
            ENV_QUANTIZATION: launch.quantization,
        }
    else:
        last_core = launch.tp_degree - 1
        env |= {
            ENV_ARTIFACT_URI: launch.artifact_uri,
            ENV_MODEL_DIR: launch.model_dir,
            ENV_BATCH_SIZE: str(launch.batch_size),
            ENV_SEQUENCE_LENGTH: str(launch.sequence_length),
            ENV_TP_DEGREE: str(launch.tp_degree),
            ENV_NEURON_TARGET: _NEURON_TARGETS[launch.target] if launch.target else None,
            ENV_UPSTREAM_PORT: str(launch.upstream_port),
            ENV_NEURON_RT_VISIBLE_CORES: f"0-{last_core}" if last_core else "0",
        }
    return _env(env)


def container_command(launch: VllmLaunch | NeuronLaunch) -> list[str]:
    """The container definition's `command`: always empty.

    The image's ENTRYPOINT reads everything from the environment and both Dockerfiles reset
    the base image's CMD, so an empty list and an omitted `command` behave the same; this
    function exists so the task definition's contract with the image is stated in one place.
    """
    del launch
    return []


def port_mappings(launch: VllmLaunch | NeuronLaunch) -> list[dict[str, object]]:
    """`portMappings` for awsvpc networking (containerPort only; hostPort equals it)."""
    return [{"containerPort": launch.port, "protocol": "tcp", "name": "http"}]


def neuron_devices(launch: NeuronLaunch) -> list[dict[str, object]]:
    """`linuxParameters.devices` mapping exactly the Neuron devices the model needs.

    Neuron devices are not an ECS resource type; the task maps `/dev/neuron0..N-1` and the
    service places one task per instance (distinctInstance) so devices are never shared.
    """
    return [
        {
            "hostPath": f"/dev/neuron{i}",
            "containerPath": f"/dev/neuron{i}",
            "permissions": ["read", "write"],
        }
        for i in range(launch.num_devices or 0)  # set by __post_init__
    ]
