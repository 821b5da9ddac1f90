"""SGLang, TGI and bring-your-own (`custom`) model servers: plan values → container settings.

Pure functions and frozen dataclasses (no Pulumi), the counterpart of `components/engines.py`
for the engines added beside vLLM and optimum-neuron. Each launch dataclass is validated on
construction and every error names the config path of the offending setting (`where`, e.g.
`platform.models.chat`), so a bad stack fails at preview with one line, before any resource.

What is derived here, per engine:
- the engine flags the entrypoint will pass (through the `ENGINE_*` environment of the
  contracts in `contracts/sglang.py`, `contracts/tgi.py`): tensor parallel size, context length,
  memory fraction, port, served name;
- the health path, the SSE keep-alive behaviour against the ALB idle timeout, and the warm-up
  input of the grace-period estimate;
- `extraArgs`: passed through verbatim, but only flags the pinned release really has (the flag
  tables under `contracts/flags/`, extracted from the engines' own argument definitions) and
  none that the launch already controls.

Memory fractions mean different things per engine, so they are derived from the one sizing
input, `gpu_memory_utilization` (the share of each GPU the service may use, as for vLLM):
- SGLang's `--mem-fraction-static` is the share for weights + KV cache *only*; activations and
  CUDA graphs live in the rest. The VRAM method sized `(weights + KV) × (1 + overhead)` to fit in
  `utilization × memory`, so the static pool is `utilization / (1 + overhead)`.
- TGI's `--cuda-memory-fraction` caps everything TGI allocates, like vLLM's utilisation: equal.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from ecs_inference import sizing
from ecs_inference.contracts import aws_limits, flag_table
from ecs_inference.contracts import custom as custom_contract
from ecs_inference.contracts import sglang as sglang_contract
from ecs_inference.contracts import tgi as tgi_contract
from ecs_inference.contracts.engine import ENV_REGION_VARIABLES

ALB_IDLE_TIMEOUT_MAX = aws_limits.ALB_IDLE_TIMEOUT_RANGE[1]
KEEPALIVE_MARGIN_SECONDS = 5
"""A target's own keep-alive must outlast the ALB's idle timeout by this much (else 502s)."""

_S3_URI = re.compile(r"^s3://[a-z0-9][a-z0-9.\-]{1,61}[a-z0-9](/[^\s]*)?$")
_MOUNT_PATH = re.compile(r"^/[A-Za-z0-9._\-/]*$")
_SERVED_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/\-]{0,127}")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SECRET_ARN = re.compile(r"^arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:\d{12}:secret:.+$")
_IMAGE = re.compile(r"^[a-z0-9][a-z0-9._/:-]*(@sha256:[a-f0-9]{64})?$")


class PresetError(ValueError):
    """A launch setting is invalid; the message starts with the config path to fix."""


# --------------------------------------------------------------------------------------------
# Shared checks
# --------------------------------------------------------------------------------------------


def _fail(where: str, key: str, message: str) -> PresetError:
    return PresetError(f"{where}.{key}: {message}")


def _pos_int(where: str, key: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise _fail(where, key, f"must be a positive integer, got {value!r}")
    return value


def _check_served_name(where: str, name: str) -> None:
    if not isinstance(name, str) or not _SERVED_NAME.fullmatch(name):
        raise _fail(
            where,
            "servedModelName",
            f"{name!r} must be 1-128 characters of letters, digits and ._:/- (it is a path "
            "component and a flag value)",
        )


def _check_port(where: str, key: str, port: object) -> int:
    if isinstance(port, bool) or not isinstance(port, int) or not 1024 <= port <= 65535:
        raise _fail(where, key, f"{port!r} must be an unprivileged port 1024-65535 (non-root)")
    return port


def check_weights_uri(where: str, uri: str) -> str:
    """Accept `s3://bucket/prefix` or an absolute path on the task's EFS mount.

    The config's `efs://<file-system>/<path>` form is resolved to the mount path before the
    launch is built (the mount point is the platform's, not the user's, choice).
    """
    if isinstance(uri, str) and _S3_URI.match(uri):
        return uri
    if isinstance(uri, str) and _MOUNT_PATH.match(uri) and ".." not in uri.split("/"):
        return uri
    raise _fail(
        where, "weightsUri", f"{uri!r} must be s3://bucket/prefix/ or efs://<file-system>/<path>"
    )


def keepalive_for(
    where: str, idle_timeout_seconds: int, keepalive_seconds: int | None
) -> int | None:
    """Check an SSE keep-alive interval against the ALB idle timeout (None: none sent).

    "Well inside" the timeout means at least two keep-alives fit in one idle period, so one
    delayed write (GC pause, event-loop stall during a long prefill) does not cost the stream.
    """
    low, high = aws_limits.ALB_IDLE_TIMEOUT_RANGE
    if isinstance(idle_timeout_seconds, bool) or not low <= idle_timeout_seconds <= high:
        raise _fail(
            where,
            "albIdleTimeoutSeconds",
            f"{idle_timeout_seconds!r} outside the ALB range 1-{ALB_IDLE_TIMEOUT_MAX}",
        )
    if keepalive_seconds is None:
        return None
    _pos_int(where, "sseKeepAliveSeconds", keepalive_seconds)
    if keepalive_seconds > idle_timeout_seconds // 2:
        raise _fail(
            where,
            "sseKeepAliveSeconds",
            f"{keepalive_seconds} s must be at most half the ALB idle timeout "
            f"({idle_timeout_seconds // 2} s of {idle_timeout_seconds} s)",
        )
    return keepalive_seconds


def check_extra_args(
    where: str,
    extra_args: Sequence[str],
    table: flag_table.FlagTable,
    managed: frozenset[str],
) -> tuple[str, ...]:
    """Validate `extraArgs` against the engine's real flags; return them as a tuple.

    Rejects: non-strings and multi-line items; a first item that is not a `--flag`; flags the
    pinned release does not have, values outside a flag's choices, a switch given a value or a
    valued flag given none (as the engine's parser would, at container start); and flags the
    launch controls, including their aliases (`--tensor-parallel-size` is `--tp-size`).
    """
    path = f"{where}.extraArgs"
    if isinstance(extra_args, str) or not all(isinstance(a, str) for a in extra_args):
        raise PresetError(f"{path}: must be a list of strings")
    args = tuple(extra_args)
    for arg in args:
        if not arg.strip() or "\n" in arg or "\x00" in arg:
            raise PresetError(f"{path}: contains an empty or multi-line item")
    if args and not args[0].startswith("--"):
        raise PresetError(f"{path}: must start with a --flag, got {args[0]!r}")
    for arg in args:
        if not arg.startswith("--"):
            continue
        option = arg.split("=", 1)[0]
        known = table.lookup(option)
        aliases = set(known.options) if known is not None else {option}
        if option.startswith("--no-"):
            aliases.add("--" + option[5:])
        if aliases & managed:
            raise PresetError(
                f"{path}: {option} is set by the platform from the service's own settings; "
                "set the dedicated field instead"
            )
    problems = table.problems(args)
    if problems:
        raise PresetError(
            f"{path}: {'; '.join(problems)} (flags of {table.engine} {table.version}: "
            f"{table.source})"
        )
    return args


def _extra_json(extra_args: Sequence[str]) -> str | None:
    return json.dumps(list(extra_args)) if extra_args else None


def _env(pairs: Mapping[str, str | None]) -> list[dict[str, str]]:
    return [{"name": k, "value": v} for k, v in sorted(pairs.items()) if v is not None]


# --------------------------------------------------------------------------------------------
# SGLang
# --------------------------------------------------------------------------------------------


def sglang_mem_fraction_static(gpu_memory_utilization: float, overhead_fraction: float) -> float:
    """`--mem-fraction-static` for a service sized at `utilization` with `overhead` headroom.

    `utilization / (1 + overhead)`, rounded down to 3 decimals so the static pool never exceeds
    what the sizing reserved for weights + KV cache.
    """
    if not 0 < gpu_memory_utilization <= 1:
        raise PresetError(f"gpu_memory_utilization {gpu_memory_utilization} must be in (0, 1]")
    if not 0 <= overhead_fraction < 1:
        raise PresetError(f"overhead_fraction {overhead_fraction} must be in [0, 1)")
    return math.floor(gpu_memory_utilization / (1 + overhead_fraction) * 1000) / 1000


@dataclass(frozen=True)
class SglangLaunch:
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
    port: int = sglang_contract.DEFAULT_PORT
    upstream_port: int | None = None
    extra_args: tuple[str, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        where = self.where
        table = flag_table.load(sglang_contract.FLAG_TABLE)
        _check_served_name(where, self.served_model_name)
        check_weights_uri(where, self.weights_uri)
        _pos_int(where, "maxModelLen", self.context_length)
        tp = _pos_int(where, "tensorParallelSize", self.tensor_parallel_size)
        if tp & (tp - 1):
            raise _fail(where, "tensorParallelSize", f"{tp} must be a power of two")
        _pos_int(where, "maxConcurrentSequences", self.max_running_requests)
        keepalive_for(where, self.alb_idle_timeout_seconds, self.keepalive_seconds)
        _check_port(where, "port", self.port)
        if self.upstream_port is None:
            object.__setattr__(self, "upstream_port", self.port + 1)
        upstream = _check_port(where, "upstreamPort", self.upstream_port)
        if upstream == self.port:
            raise _fail(where, "upstreamPort", f"{upstream} must differ from port {self.port}")
        try:
            sglang_mem_fraction_static(self.gpu_memory_utilization, self.overhead_fraction)
        except PresetError as exc:
            raise _fail(where, "gpuMemoryUtilization", str(exc)) from None
        for key, flag, value in (
            ("dtype", "--dtype", self.dtype),
            ("kvCacheDtype", "--kv-cache-dtype", self.kv_cache_dtype),
            ("quantization", "--quantization", self.quantization),
        ):
            choices = table.flags[flag].choices
            if value is not None and choices is not None and value not in choices:
                raise _fail(
                    where, key, f"{value!r} is not an SGLang {flag} value ({', '.join(choices)})"
                )
        object.__setattr__(
            self,
            "extra_args",
            check_extra_args(where, self.extra_args, table, sglang_contract.MANAGED_FLAGS),
        )

    @property
    def gpus(self) -> int:
        """GPUs the task reserves (`resourceRequirements` GPU)."""
        return self.tensor_parallel_size

    @property
    def mem_fraction_static(self) -> float:
        """The derived `--mem-fraction-static`."""
        return sglang_mem_fraction_static(self.gpu_memory_utilization, self.overhead_fraction)


# --------------------------------------------------------------------------------------------
# TGI
# --------------------------------------------------------------------------------------------

# TGI's `--dtype` has no `auto`; the plan's dtype names map to the launcher's where one exists.
_TGI_DTYPES = {"fp16": "float16", "float16": "float16", "bf16": "bfloat16", "bfloat16": "bfloat16"}
_TGI_QUANTIZE = {"awq": "awq", "gptq": "gptq", "fp8": "fp8", "int8": "eetq"}
_TGI_KV_DTYPES = {"fp8": "fp8_e4m3fn", "fp8_e4m3fn": "fp8_e4m3fn", "fp8_e5m2": "fp8_e5m2"}


@dataclass(frozen=True)
class TgiLaunch:
    """One TGI model server (GPU). Validated on construction.

    Required: `where`, `served_model_name`, `weights_uri` (S3 prefix staged to local disk, or an
    EFS mount directory), `max_total_tokens` (the context length).
    Defaults: `max_input_tokens` max_total_tokens - 1 (TGI requires it strictly smaller),
    `num_shard` 1, `cuda_memory_fraction` 0.9, `max_concurrent_requests` 16, `dtype` None (the
    checkpoint's), `quantize` None, `kv_cache_dtype` None, `alb_idle_timeout_seconds` 60
    (at least 30: TGI's fixed 15 s keep-alive must fit twice), `port` 8000, `extra_args` ().
    """

    where: str
    served_model_name: str
    weights_uri: str
    max_total_tokens: int
    max_input_tokens: int | None = None
    num_shard: int = 1
    cuda_memory_fraction: float = 0.9
    max_concurrent_requests: int = 16
    dtype: str | None = None
    quantize: str | None = None
    kv_cache_dtype: str | None = None
    alb_idle_timeout_seconds: int = 60
    port: int = tgi_contract.DEFAULT_PORT
    extra_args: tuple[str, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        where = self.where
        table = flag_table.load(tgi_contract.FLAG_TABLE)
        _check_served_name(where, self.served_model_name)
        if "/" in self.served_model_name or self.served_model_name.startswith("."):
            raise _fail(
                where,
                "servedModelName",
                f"{self.served_model_name!r}: TGI reports its model directory's path, so the "
                "served name must be one path component (no '/', not starting with '.')",
            )
        check_weights_uri(where, self.weights_uri)
        total = _pos_int(where, "maxModelLen", self.max_total_tokens)
        if total < 2:
            raise _fail(where, "maxModelLen", "TGI needs at least 2 tokens (prompt + one)")
        if self.max_input_tokens is None:
            object.__setattr__(self, "max_input_tokens", total - 1)
        max_input = _pos_int(where, "maxInputTokens", self.max_input_tokens)
        # launcher/src/main.rs: "`max_input_tokens` must be < `max_total_tokens`".
        if max_input >= total:
            raise _fail(
                where,
                "maxInputTokens",
                f"{max_input} must be below maxModelLen {total} (TGI refuses to start otherwise)",
            )
        _pos_int(where, "tensorParallelSize", self.num_shard)
        _pos_int(where, "maxConcurrentSequences", self.max_concurrent_requests)
        if not 0 < self.cuda_memory_fraction <= 1:
            raise _fail(
                where, "gpuMemoryUtilization", f"{self.cuda_memory_fraction} must be in (0, 1]"
            )
        keepalive_for(where, self.alb_idle_timeout_seconds, None)
        if self.alb_idle_timeout_seconds < 2 * tgi_contract.SSE_KEEPALIVE_SECONDS:
            raise _fail(
                where,
                "engine",
                f"TGI sends SSE keep-alives every {tgi_contract.SSE_KEEPALIVE_SECONDS} s (fixed), "
                f"so the ALB idle timeout of {self.alb_idle_timeout_seconds} s must be at least "
                f"{2 * tgi_contract.SSE_KEEPALIVE_SECONDS} s; raise the endpoint's idle timeout",
            )
        _check_port(where, "port", self.port)
        for key, flag, value in (
            ("dtype", "--dtype", self.dtype),
            ("quantization", "--quantize", self.quantize),
            ("kvCacheDtype", "--kv-cache-dtype", self.kv_cache_dtype),
        ):
            choices = table.flags[flag].choices
            if value is not None and choices is not None and value not in choices:
                raise _fail(
                    where, key, f"{value!r} is not a TGI {flag} value ({', '.join(choices)})"
                )
        if self.num_shard > 1 and self.quantize == "exl2":
            raise _fail(where, "quantization", "TGI cannot shard exl2 models (num_shard > 1)")
        object.__setattr__(
            self,
            "extra_args",
            check_extra_args(where, self.extra_args, table, tgi_contract.MANAGED_FLAGS),
        )

    @classmethod
    def from_plan(
        cls,
        where: str,
        served_model_name: str,
        weights_uri: str,
        *,
        context_length: int,
        tensor_parallel_size: int,
        gpu_memory_utilization: float,
        max_concurrent_sequences: int,
        dtype: str,
        kv_cache_dtype: str,
        alb_idle_timeout_seconds: int,
        max_input_tokens: int | None = None,
        extra_args: Sequence[str] = (),
    ) -> TgiLaunch:
        """Map the plan's engine-neutral names (`bf16`, `awq`, `fp8` KV) to TGI's flags."""
        quantize = _TGI_QUANTIZE.get(dtype)
        tgi_dtype = _TGI_DTYPES.get(dtype)
        if quantize is None and tgi_dtype is None:
            raise _fail(
                where,
                "dtype",
                f"{dtype!r} has no TGI equivalent (float16, bfloat16, or quantised awq, gptq, "
                "fp8, int8 as eetq)",
            )
        if kv_cache_dtype in ("auto", "fp16", "bf16"):
            kv = None  # TGI keeps the KV cache in the model dtype unless told fp8
        elif kv_cache_dtype in _TGI_KV_DTYPES:
            kv = _TGI_KV_DTYPES[kv_cache_dtype]
        else:
            raise _fail(where, "kvCacheDtype", f"{kv_cache_dtype!r} has no TGI equivalent")
        return cls(
            where=where,
            served_model_name=served_model_name,
            weights_uri=weights_uri,
            max_total_tokens=context_length,
            max_input_tokens=max_input_tokens,
            num_shard=tensor_parallel_size,
            cuda_memory_fraction=gpu_memory_utilization,
            max_concurrent_requests=max_concurrent_sequences,
            dtype=tgi_dtype,
            quantize=quantize,
            kv_cache_dtype=kv,
            alb_idle_timeout_seconds=alb_idle_timeout_seconds,
            extra_args=tuple(extra_args),
        )

    @property
    def gpus(self) -> int:
        """GPUs the task reserves (`resourceRequirements` GPU)."""
        return self.num_shard


# --------------------------------------------------------------------------------------------
# custom
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CustomLaunch:
    """A bring-your-own serving image (`engine: custom`). Validated on construction.

    Required: `where`, `image` (pinned by tag or digest), `served_model_name`.
    Defaults: `command` () (the image's own CMD), `port` 8000, `health_path` "/health",
    `gpus` 0 and `neuron_devices` 0 (at most one of them non-zero; both 0 is a CPU service),
    `accelerator_memory_gib` None (sizing then needs `architecture`/`parameters`),
    `weights_uri` None, `environment` {}, `secrets` {} (name → Secrets Manager ARN),
    `sse_keepalive_seconds` None (the image sends none: the ALB idle timeout must then cover
    `max_generation_seconds`), `max_generation_seconds` 300, `alb_idle_timeout_seconds` 60,
    `warmup_seconds` 120, `settings_path` None (the config path of the block holding the
    image's own settings — command, port, healthPath, gpus, neuronDevices,
    acceleratorMemoryGiB, sseKeepAliveSeconds, warmupSeconds — for error messages; None: `where`).
    """

    where: str
    image: str
    served_model_name: str
    command: tuple[str, ...] = ()
    port: int = custom_contract.DEFAULT_PORT
    health_path: str = custom_contract.DEFAULT_HEALTH_PATH
    gpus: int = 0
    neuron_devices: int = 0
    accelerator_memory_gib: float | None = None
    weights_uri: str | None = None
    environment: Mapping[str, str] = field(default_factory=dict)
    secrets: Mapping[str, str] = field(default_factory=dict)
    sse_keepalive_seconds: int | None = None
    max_generation_seconds: int = 300
    alb_idle_timeout_seconds: int = 60
    warmup_seconds: float = custom_contract.DEFAULT_WARMUP_SECONDS
    settings_path: str | None = None

    def __post_init__(self) -> None:
        where = self.where
        block = self.settings_path or where
        image = self.image
        if (
            not isinstance(image, str)
            or not _IMAGE.match(image)
            or ":latest" in image
            or (":" not in image.rsplit("/", 1)[-1] and "@" not in image)
        ):
            raise _fail(where, "image", f"{image!r} must be an image pinned by tag or digest")
        _check_served_name(where, self.served_model_name)
        if isinstance(self.command, str) or not all(isinstance(c, str) for c in self.command):
            raise _fail(block, "command", "must be a list of strings (exec form, no shell)")
        object.__setattr__(self, "command", tuple(self.command))
        _check_port(block, "port", self.port)
        path = self.health_path
        if (
            not isinstance(path, str)
            or not path.startswith("/")
            or len(path) > custom_contract.HEALTH_PATH_MAX_LENGTH
            or any(c.isspace() or c in "?#" for c in path)
        ):
            raise _fail(
                block,
                "healthPath",
                f"{path!r} must be an absolute path of at most "
                f"{custom_contract.HEALTH_PATH_MAX_LENGTH} characters without query or spaces "
                "(the ALB health check requests exactly it)",
            )
        for key in ("gpus", "neuronDevices"):
            value = self.gpus if key == "gpus" else self.neuron_devices
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise _fail(block, key, f"must be a whole number >= 0, got {value!r}")
        if self.gpus and self.neuron_devices:
            raise _fail(block, "gpus", "give GPUs or Neuron devices, not both (one pool type)")
        if self.accelerator_memory_gib is not None:
            if isinstance(self.accelerator_memory_gib, bool) or not (
                isinstance(self.accelerator_memory_gib, (int, float))
                and self.accelerator_memory_gib > 0
            ):
                raise _fail(
                    block,
                    "acceleratorMemoryGiB",
                    f"must be > 0, got {self.accelerator_memory_gib!r}",
                )
            if not self.gpus and not self.neuron_devices:
                raise _fail(
                    block, "acceleratorMemoryGiB", "is only meaningful with gpus or neuronDevices"
                )
        if self.weights_uri is not None:
            check_weights_uri(where, self.weights_uri)
        self._check_environment()
        _pos_int(where, "maxGenerationSeconds", self.max_generation_seconds)
        keepalive_for(block, self.alb_idle_timeout_seconds, self.sse_keepalive_seconds)
        if self.sse_keepalive_seconds is None and (
            self.alb_idle_timeout_seconds < self.max_generation_seconds
        ):
            raise _fail(
                block,
                "sseKeepAliveSeconds",
                f"not set, so a stream may be silent for its whole {self.max_generation_seconds}"
                f" s, longer than the ALB idle timeout of {self.alb_idle_timeout_seconds} s; "
                "declare the image's keep-alive interval or raise the endpoint's idle timeout",
            )
        if self.warmup_seconds < 0:
            raise _fail(block, "warmupSeconds", f"must be >= 0, got {self.warmup_seconds!r}")

    def _check_environment(self) -> None:
        where = self.where
        for key, values in (("environment", self.environment), ("secrets", self.secrets)):
            if not isinstance(values, Mapping):
                raise _fail(where, key, "must be a mapping of NAME: value")
            for name, value in values.items():
                if not isinstance(name, str) or not _ENV_NAME.match(name):
                    raise _fail(where, f"{key}.{name}", "is not a valid environment name")
                if name in custom_contract.PLATFORM_ENV or name.startswith(
                    custom_contract.RESERVED_ENV_PREFIXES
                ):
                    raise _fail(
                        where,
                        f"{key}.{name}",
                        "is reserved: the platform or ECS sets it (ENGINE_*, AWS_*, ECS_*)",
                    )
                if not isinstance(value, str):
                    raise _fail(where, f"{key}.{name}", "must be a string")
                if key == "secrets" and not _SECRET_ARN.match(value):
                    raise _fail(
                        where, f"secrets.{name}", f"must be a Secrets Manager ARN, got {value!r}"
                    )
                if key == "environment" and any(
                    marker in name.upper() for marker in custom_contract.SECRET_NAME_MARKERS
                ):
                    raise _fail(
                        where,
                        f"environment.{name}",
                        "looks like a credential: put its Secrets Manager ARN under `secrets`",
                    )
        both = set(self.environment) & set(self.secrets)
        if both:
            raise _fail(where, "secrets", f"{sorted(both)} also set in environment")

    @property
    def accelerator(self) -> Literal["gpu", "neuron", "none"]:
        """Which pool type the service needs."""
        if self.gpus:
            return "gpu"
        return "neuron" if self.neuron_devices else "none"


# --------------------------------------------------------------------------------------------
# Container settings
# --------------------------------------------------------------------------------------------

Launch = SglangLaunch | TgiLaunch | CustomLaunch


def container_environment(launch: Launch, aws_region: str | None = None) -> list[dict[str, str]]:
    """The container definition's `environment` (sorted by name; secrets go in `secrets`)."""
    region = {variable: aws_region for variable in ENV_REGION_VARIABLES}
    if isinstance(launch, SglangLaunch):
        c = sglang_contract
        return _env(
            {
                c.ENV_SERVED_MODEL_NAME: launch.served_model_name,
                c.ENV_PORT: str(launch.port),
                c.ENV_UPSTREAM_PORT: str(launch.upstream_port),
                c.ENV_SSE_KEEPALIVE_SECONDS: str(launch.keepalive_seconds),
                c.ENV_EXTRA_ARGS: _extra_json(launch.extra_args),
                c.ENV_WEIGHTS_URI: launch.weights_uri,
                c.ENV_TENSOR_PARALLEL_SIZE: str(launch.tensor_parallel_size),
                c.ENV_CONTEXT_LENGTH: str(launch.context_length),
                c.ENV_MEM_FRACTION_STATIC: repr(launch.mem_fraction_static),
                c.ENV_MAX_RUNNING_REQUESTS: str(launch.max_running_requests),
                c.ENV_DTYPE: launch.dtype,
                c.ENV_KV_CACHE_DTYPE: launch.kv_cache_dtype,
                c.ENV_QUANTIZATION: launch.quantization,
                c.ENV_HF_HUB_OFFLINE: "1",
                **region,
            }
        )
    if isinstance(launch, TgiLaunch):
        t = tgi_contract
        return _env(
            {
                t.ENV_SERVED_MODEL_NAME: launch.served_model_name,
                t.ENV_PORT: str(launch.port),
                t.ENV_EXTRA_ARGS: _extra_json(launch.extra_args),
                t.ENV_WEIGHTS_URI: launch.weights_uri,
                t.ENV_NUM_SHARD: str(launch.num_shard),
                t.ENV_MAX_INPUT_TOKENS: str(launch.max_input_tokens),
                t.ENV_MAX_TOTAL_TOKENS: str(launch.max_total_tokens),
                t.ENV_CUDA_MEMORY_FRACTION: repr(float(launch.cuda_memory_fraction)),
                t.ENV_MAX_CONCURRENT_REQUESTS: str(launch.max_concurrent_requests),
                t.ENV_DTYPE: launch.dtype,
                t.ENV_KV_CACHE_DTYPE: launch.kv_cache_dtype,
                t.ENV_QUANTIZE: launch.quantize,
                t.ENV_HF_HUB_OFFLINE: "1",
                **region,
            }
        )
    u = custom_contract
    cores = launch.neuron_devices * 2  # Inferentia2/Trainium1: 2 NeuronCores per device
    platform: dict[str, str | None] = {
        u.ENV_PORT: str(launch.port),
        u.ENV_SERVED_MODEL_NAME: launch.served_model_name,
        u.ENV_WEIGHTS_URI: launch.weights_uri,
        u.ENV_MAX_GENERATION_SECONDS: str(launch.max_generation_seconds),
        u.ENV_NEURON_VISIBLE_CORES: (f"0-{cores - 1}" if cores > 1 else "0") if cores else None,
        **region,
    }
    return _env({**launch.environment, **platform})


def container_secrets(launch: CustomLaunch) -> list[dict[str, str]]:
    """The container definition's `secrets` (`valueFrom` Secrets Manager ARNs)."""
    return [{"name": k, "valueFrom": v} for k, v in sorted(launch.secrets.items())]


def container_command(launch: Launch) -> list[str]:
    """The container definition's `command`: the user's for `custom`, else empty (the
    SGLang and TGI images' ENTRYPOINT reads the environment and their CMD is reset)."""
    return list(launch.command) if isinstance(launch, CustomLaunch) else []


def port_mappings(launch: Launch) -> list[dict[str, object]]:
    """`portMappings` for awsvpc (containerPort only; hostPort equals it)."""
    return [{"containerPort": launch.port, "protocol": "tcp", "name": "http"}]


def health_path(launch: Launch) -> str:
    """Path the target group's health check requests."""
    if isinstance(launch, SglangLaunch):
        return sglang_contract.HEALTH_PATH
    if isinstance(launch, TgiLaunch):
        return tgi_contract.HEALTH_PATH
    return launch.health_path


def warmup_seconds(launch: Launch) -> float:
    """Grace-period input: engine warm-up after the weights are in accelerator memory."""
    if isinstance(launch, SglangLaunch):
        return sglang_contract.WARMUP_SECONDS
    if isinstance(launch, TgiLaunch):
        return tgi_contract.WARMUP_SECONDS
    return float(launch.warmup_seconds)


def sse_keepalive_seconds(launch: Launch) -> int | None:
    """Interval of the SSE keep-alive the service sends (None: it sends none)."""
    if isinstance(launch, SglangLaunch):
        return launch.keepalive_seconds
    if isinstance(launch, TgiLaunch):
        return tgi_contract.SSE_KEEPALIVE_SECONDS
    return launch.sse_keepalive_seconds


def target_keepalive_seconds(launch: Launch) -> int:
    """How long the container keeps idle client connections: above the ALB idle timeout.

    The ALB reuses target connections for up to its idle timeout; a target that closes them
    sooner races the ALB and shows up as sporadic 502s. The keep-alive proxy (SGLang) is
    configured from this; TGI's axum server keeps connections until the client closes them.
    """
    return launch.alb_idle_timeout_seconds + KEEPALIVE_MARGIN_SECONDS


def gpu_resource_requirements(launch: Launch) -> list[dict[str, str]]:
    """`resourceRequirements` of the container (GPUs only; Neuron devices are mapped)."""
    return [{"type": "GPU", "value": str(launch.gpus)}] if launch.gpus else []


def neuron_devices(launch: CustomLaunch) -> list[dict[str, object]]:
    """`linuxParameters.devices` for a custom Neuron image: `/dev/neuron0..N-1`."""
    return [
        {
            "hostPath": f"/dev/neuron{i}",
            "containerPath": f"/dev/neuron{i}",
            "permissions": ["read", "write"],
        }
        for i in range(launch.neuron_devices)
    ]


def custom_accelerator_fit(
    launch: CustomLaunch,
    accelerator_memory_gib_each: float,
    accelerators_on_instance: int,
    instance_name: str,
    utilization: float = 0.9,
) -> float:
    """Check a custom service's declared `acceleratorMemoryGiB` against its pool's instance.

    The declared figure is the whole model's need (weights + KV + overhead, as the VRAM method
    sums it), split evenly over the task's GPUs or Neuron devices. Returns the GiB per device;
    raises PresetError naming the config path when it does not fit in `utilization` (default
    0.9) of each device, or the task asks for more devices than the instance has.
    """
    devices = launch.gpus or launch.neuron_devices
    key = "gpus" if launch.gpus else "neuronDevices"
    block = launch.settings_path or launch.where
    if not devices or launch.accelerator_memory_gib is None:
        raise _fail(block, "acceleratorMemoryGiB", "needs gpus or neuronDevices and a value")
    if devices > accelerators_on_instance:
        raise _fail(
            block,
            key,
            f"{devices} exceeds the {accelerators_on_instance} device(s) of {instance_name}",
        )
    per_device = launch.accelerator_memory_gib / devices
    usable = accelerator_memory_gib_each * utilization
    if per_device > usable:
        raise _fail(
            block,
            "acceleratorMemoryGiB",
            f"{launch.accelerator_memory_gib:g} GiB over {devices} device(s) is "
            f"{per_device:.1f} GiB each, but {instance_name} offers {usable:.1f} usable GiB per "
            f"device ({utilization:g} of {accelerator_memory_gib_each:g}); use more devices or a "
            "larger instance type",
        )
    return per_device


def engine_fit(
    where: str,
    engine: str,
    need: sizing.MemoryNeed,
    instance_type: str,
    gpu_memory_utilization: float,
    tensor_parallel_size: int | None = None,
) -> sizing.GpuFit:
    """The VRAM method for an SGLang, TGI or custom GPU service, failing with its config path.

    One method serves all engines because each caps the same quantity: SGLang's static pool
    (`utilization / (1 + overhead)`, see `sglang_mem_fraction_static`) holds weights + KV and
    leaves the overhead to activations; TGI's `--cuda-memory-fraction` caps weights + KV +
    overhead like vLLM's utilisation. `tensor_parallel_size` (default None: choose) pins the
    number of GPUs.
    """
    try:
        return sizing.choose_tensor_parallel(
            need,
            instance_type,
            gpu_memory_utilization,
            tensor_parallel_size=tensor_parallel_size,
        )
    except sizing.SizingError as exc:
        raise PresetError(f"{where}: the {engine} model does not fit: {exc}") from None
