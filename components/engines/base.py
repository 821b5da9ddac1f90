"""What every engine module provides, and the checks the engines share.

An engine module (`vllm.py`, `neuron.py`, ...) defines a frozen launch dataclass (how its image
is started: a `Launch` reading the service's decisions, validated on construction, every
error naming the setting to fix) and an `Engine` subclass that the plan asks for everything
else; `components.engines` finds the modules and registers them by name. Pure code: no Pulumi
import.

The container contract each launch writes (the `ENGINE_*` environment its image's entrypoint
reads) lives in `contracts/<engine>.py`, which the images copy; the launches refer to it.
"""

from __future__ import annotations

import abc
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, ClassVar, Literal, Protocol, TypeVar

from pydantic import BaseModel

from ecs_inference import sizing
from ecs_inference.config.base import Section
from ecs_inference.contracts import flag_table
from ecs_inference.contracts.engine import (
    DEFAULT_PORT,
    ENV_EXTRA_ARGS,
    ENV_HF_HUB_OFFLINE,
    ENV_PORT,
    ENV_REGION_VARIABLES,
    ENV_SERVED_MODEL_NAME,
)
from ecs_inference.sizing import lora as lora_sizing
from ecs_inference.sizing.gpu import NeedSettings
from ecs_inference.sizing.instance_types import DeclaredFit, Demand, GpuDemand

KEEPALIVE_MARGIN_SECONDS = 5
"""A target's own HTTP keep-alive outlasts the ALB idle timeout by this much (else 502s)."""

_SERVED_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/\-]{0,127}")


class EngineLaunchError(ValueError):
    """A launch setting is invalid; the message names the field and the offending value."""


class PresetError(ValueError):
    """A launch setting is invalid; the message starts with the config path to fix."""


# --------------------------------------------------------------------------------------------
# what components and specs read from a launch
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MetricsTarget:
    """What the metrics sidecar scrapes: a `contracts.metrics` family on a loopback port."""

    kind: str
    """Scrape-spec family (`contracts.metrics.METRICS_BY_KIND` key)."""
    port: int
    """Port of the engine's Prometheus `/metrics` inside the task."""


# --------------------------------------------------------------------------------------------
# shared container pieces
# --------------------------------------------------------------------------------------------


def env_list(pairs: Mapping[str, str | None]) -> list[dict[str, str]]:
    """ECS `environment` entries sorted by name; None values are left out."""
    return [{"name": k, "value": v} for k, v in sorted(pairs.items()) if v is not None]


def extra_args_json(extra_args: Sequence[str]) -> str | None:
    """`ENGINE_EXTRA_ARGS`: a JSON list, or None (unset) when there are none."""
    return json.dumps(list(extra_args)) if extra_args else None


def port_mappings(port: int) -> list[dict[str, object]]:
    """`portMappings` for awsvpc networking (containerPort only; hostPort equals it)."""
    return [{"containerPort": port, "protocol": "tcp", "name": "http"}]


def visible_cores(cores: int) -> str:
    """`NEURON_RT_VISIBLE_CORES` for the first `cores` NeuronCores (`0`, `0-3`)."""
    return f"0-{cores - 1}" if cores > 1 else "0"


@dataclass(frozen=True)
class Launch(abc.ABC):
    """How one model server starts: what the task definition's serving container gets. The
    model service component reads nothing else, so it never needs to know which engine it runs.

    It holds the decisions of the service it starts (`inputs`: its model input, its fit, the
    weights, the endpoint's idle timeout, the region) and its port. An engine's launch
    subclasses it, reads its settings from `inputs` (it copies none), answers the abstract
    members and overrides what differs from the defaults: no Neuron devices, no command, one
    `http` port, no scrape target, every variable of its environment managed, `extraArgs`
    checked against `flags` on construction.
    """

    inputs: LaunchInputs
    """The service's decisions (`Engine.launch` gets them from the plan)."""
    port: int = DEFAULT_PORT
    """Container port the ALB targets (default 8000)."""

    flags: ClassVar[str | None] = None
    """The committed flag table (`contracts/flags/<name>.json`) `extraArgs` is checked against
    (None: the engine takes none)."""
    managed_flags: ClassVar[frozenset[str]] = frozenset()
    """Flags the launch sets itself, which `extraArgs` may not."""

    def __post_init__(self) -> None:
        """Check `extraArgs` (a subclass checks its own settings first, then calls this)."""
        _ = self.extra_args  # raises PresetError at `extraArgs`

    @property
    def model(self) -> ModelSettings:
        """The model's input (`ModelConfig`)."""
        return self.inputs.model

    @property
    def where(self) -> str:
        """Config path of the model (`platform.models.<name>`), for error messages."""
        return self.inputs.where

    @property
    def served_model_name(self) -> str:
        """Model id clients send in the OpenAI `model` field (default the service key)."""
        return self.inputs.served_model_name

    @property
    def weights_uri(self) -> str:
        """What the engine reads: the S3 URI or the EFS mount path ("" for none)."""
        return self.inputs.weights_uri or ""

    @property
    def alb_idle_timeout_seconds(self) -> int:
        """The endpoint's idle timeout."""
        return self.inputs.idle_timeout_seconds

    @property
    def aws_region(self) -> str | None:
        """The stack's region (None: the SDK's own resolution)."""
        return self.inputs.region

    @property
    def gpus(self) -> int:
        """GPUs the task reserves (`resourceRequirements` GPU): the fit's (`reserved_gpus`)."""
        return reserved_gpus(self.inputs.fit)

    @property
    def context_length(self) -> int:
        """Tokens per sequence (prompt + generation): `maxModelLen`, which the config requires
        of an engine that reads it (`Engine.needs_max_model_len`)."""
        length = self.model.max_model_len
        assert length is not None
        return length

    @cached_property
    def extra_args(self) -> tuple[str, ...]:
        """`extraArgs`, checked against the engine's real flags (`check_extra_args`)."""
        args = self.model.extra_args
        if self.flags is None:
            return tuple(args)
        return check_extra_args(self.where, args, flag_table.load(self.flags), self.managed_flags)

    def engine_environment(self, region: str | None) -> dict[str, str | None]:
        """The variables every engine image reads (None: unset): served name, port, extra
        args, the hub switched off, the region."""
        return {
            ENV_SERVED_MODEL_NAME: self.served_model_name,
            ENV_PORT: str(self.port),
            ENV_EXTRA_ARGS: extra_args_json(self.extra_args),
            ENV_HF_HUB_OFFLINE: "1",
            **{variable: region for variable in ENV_REGION_VARIABLES},
        }

    @property
    @abc.abstractmethod
    def health_path(self) -> str:
        """Path the target group's health check requests."""

    @property
    @abc.abstractmethod
    def sse_keepalive_seconds(self) -> int | None:
        """Interval of the SSE keep-alive the service sends while a stream is silent (None:
        it sends none, so the ALB idle timeout must cover the longest generation)."""

    @abc.abstractmethod
    def container_environment(self, region: str | None = None) -> list[dict[str, str]]:
        """The container's `environment`, sorted by name; `region` is the stack's (None: left
        out, or the launch's own where it carries one)."""

    @property
    def neuron_device_count(self) -> int:
        """Neuron devices the task maps (`linuxParameters.devices`); default 0."""
        return 0

    def container_command(self) -> list[str]:
        """The container's `command`; default empty: the image's ENTRYPOINT reads the
        environment and its CMD is reset."""
        return []

    def managed_environment(self) -> list[str]:
        """Variables the platform sets from the launch, which a service's own `environment`
        and `secrets` may not set; default every variable of the launch's environment."""
        return [e["name"] for e in self.container_environment()]

    def port_mappings(self) -> list[dict[str, object]]:
        """`portMappings` for awsvpc (containerPort only)."""
        return port_mappings(self.port)

    def metrics_target(self) -> MetricsTarget | None:
        """What the metrics sidecar scrapes; default None: it knows none of the engine's
        families."""
        return None

    @property
    def adapter_prefixes(self) -> tuple[str, ...]:
        """Key prefixes of the weights' bucket the engine also reads (its adapters), which the
        task role must grant; default () for none."""
        return ()

    @property
    def adapter_names(self) -> tuple[str, ...]:
        """Model names the server answers to besides `served_model_name` (its LoRA adapters,
        which the gateway routes too); default () for none."""
        return ()


# --------------------------------------------------------------------------------------------
# shared launch checks (path-first messages)
# --------------------------------------------------------------------------------------------


def fail(where: str, key: str, message: str) -> PresetError:
    """A `PresetError` for config path `where.key`."""
    return PresetError(f"{where}.{key}: {message}")


def pos_int(where: str, key: str, value: object) -> int:
    """`value` as a positive integer, else a `PresetError` at `where.key`."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise fail(where, key, f"must be a positive integer, got {value!r}")
    return value


def served_name_problem(name: object) -> str | None:
    """Why `name` cannot be a served model name, or None: 1-128 characters of letters, digits
    and ._:/- (the config schema raises it at `servedModelName`)."""
    if isinstance(name, str) and _SERVED_NAME.fullmatch(name):
        return None
    return (
        f"{name!r} must be 1-128 characters of letters, digits and ._:/- (it is a path "
        "component and a flag value)"
    )


def check_port(where: str, key: str, port: object) -> int:
    """An unprivileged port, 1024-65535 (the images run as non-root)."""
    if isinstance(port, bool) or not isinstance(port, int) or not 1024 <= port <= 65535:
        raise fail(where, key, f"{port!r} must be an unprivileged port 1024-65535 (non-root)")
    return port


def keepalive_for(
    where: str, idle_timeout_seconds: int, keepalive_seconds: int | None
) -> int | None:
    """Check an SSE keep-alive interval against the ALB idle timeout (None: none sent).

    "Well inside" the timeout means at least two keep-alives fit in one idle period, so one
    delayed write (GC pause, event-loop stall during a long prefill) does not cost the stream.
    """
    if keepalive_seconds is None:
        return None
    pos_int(where, "sseKeepAliveSeconds", keepalive_seconds)
    if keepalive_seconds > idle_timeout_seconds // 2:
        raise fail(
            where,
            "sseKeepAliveSeconds",
            f"{keepalive_seconds} s must be at most half the ALB idle timeout "
            f"({idle_timeout_seconds // 2} s of {idle_timeout_seconds} s)",
        )
    return keepalive_seconds


def check_flag_values(
    where: str, table: flag_table.FlagTable, rows: Sequence[tuple[str, str, str | None]]
) -> None:
    """Each `(key, flag, value)`: the value a launch maps the config's `key` to is among the
    pinned release's choices for `flag` (None: the flag is left out), else a `PresetError`."""
    for key, flag, value in rows:
        choices = table.flags[flag].choices
        if value is not None and choices is not None and value not in choices:
            engine = f"{table.engine} {table.version}"
            raise fail(
                where, key, f"{value!r} is not a {engine} {flag} value ({', '.join(choices)})"
            )


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


# --------------------------------------------------------------------------------------------
# the engine
# --------------------------------------------------------------------------------------------

Fit = sizing.GpuFit | sizing.NeuronFit | DeclaredFit
"""How a model fits one instance type: the VRAM method, a Neuron artifact, or declared memory."""


def reserved_gpus(fit: Fit) -> int:
    """The GPUs a task of `fit` reserves (`resourceRequirements` GPU): the tensor parallel size
    the VRAM method chose, or the declared GPUs; 0 on Neuron (its devices are mapped)."""
    if isinstance(fit, sizing.GpuFit):
        return fit.tp_size
    return fit.devices if isinstance(fit, DeclaredFit) and fit.kind == "gpus" else 0


SettingsT = TypeVar("SettingsT", bound=Section)


def settings_of(model: ModelSettings, kind: type[SettingsT]) -> SettingsT:
    """The model's engine settings, which its engine requires and validated as a `kind`."""
    settings = model.engine_settings
    assert isinstance(settings, kind)
    return settings


class StartupSettings(Protocol):
    """The grace-period inputs an engine reads (`models.<name>.startup`)."""

    @property
    def warmup_seconds(self) -> float: ...


class ModelSettings(NeedSettings, Protocol):
    """What an engine reads from a model's config (`components.models.input.ModelConfig`),
    besides what its memory need is sized from (`NeedSettings`)."""

    @property
    def engine(self) -> str: ...
    @property
    def engine_settings(self) -> Section | None: ...
    @property
    def image(self) -> str | None: ...
    @property
    def served_model_name(self) -> str | None: ...
    @property
    def weights_uri(self) -> str | None: ...
    @property
    def extra_args(self) -> Sequence[str]: ...
    @property
    def architecture(self) -> str | None: ...
    @property
    def parameters(self) -> BaseModel | None: ...
    @property
    def gpu_memory_utilization(self) -> float: ...
    @property
    def tensor_parallel_size(self) -> int | None: ...
    @property
    def max_generation_seconds(self) -> int: ...
    @property
    def environment(self) -> Mapping[str, str]: ...
    @property
    def secrets(self) -> Mapping[str, str]: ...
    @property
    def startup(self) -> StartupSettings: ...


@dataclass(frozen=True)
class LaunchInputs:
    """What an engine's launch is built from: the plan's decisions for one model service."""

    name: str
    """The service key (`platform.models.<name>`)."""
    model: ModelSettings
    """The model's config (`ModelConfig`)."""
    fit: Fit
    """How it fits the pool's cheapest chosen type (every chosen type has the same layout)."""
    weights_uri: str | None
    """What the engine reads: the S3 URI, or the EFS mount path in the container; None when
    the service declares no weights."""
    instance_family: str
    """Family of the pool's cheapest chosen type (`g6e`, `inf2`, ...)."""
    idle_timeout_seconds: int
    """The endpoint's idle timeout."""
    region: str | None
    """The stack's region, for engines that stream from S3 with it; None: the SDK's own."""

    @property
    def where(self) -> str:
        """Config path of the model (`platform.models.<name>`), for error messages."""
        return f"platform.models.{self.name}"

    @property
    def served_model_name(self) -> str:
        """The model id clients send: `servedModelName`, default the service key."""
        return self.model.served_model_name or self.name

    @property
    def accelerators(self) -> int:
        """GPUs (tensor parallel size) or Neuron devices the fit gives a task."""
        fit = self.fit
        if isinstance(fit, sizing.GpuFit):
            return fit.tp_size
        if isinstance(fit, sizing.NeuronFit):
            return fit.devices_mapped
        return fit.devices


def gpu_demand(name: str, model: ModelSettings, pinned: int | None) -> GpuDemand:
    """The VRAM method's demand of a GPU service (`pinned`: a fixed GPU count, None: choose)."""
    need = sizing.gpu_memory_need(model.architecture, model, **vram_shape(model.parameters))
    return GpuDemand(name, need, model.gpu_memory_utilization, pinned)


def torch_dtype(dtype: str) -> str:
    """The `--dtype` torch-based engines take for the config's weight dtype: the activations'
    dtype; quantised weights keep `auto`."""
    return {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}.get(dtype, "auto")


def quantization_method(dtype: str) -> str | None:
    """The quantisation method a quantised weight dtype names (`awq`, `gptq`, `fp8`), else None."""
    return dtype if dtype in ("awq", "gptq", "fp8") else None


def sized(model: ModelSettings) -> bool:
    """Whether the model's shape is given (`architecture` or `parameters`)."""
    params = model.parameters
    return model.architecture is not None or bool(vram_shape(params))


def vram_shape(parameters: BaseModel | None) -> dict[str, Any]:
    """The model's explicit shape (`parameters`) as the VRAM method takes it: the given fields,
    without those only the LoRA buffers read (`sizing.lora.TransformerShape`)."""
    if parameters is None:
        return {}
    return parameters.model_dump(
        exclude_none=True, exclude=set(lora_sizing.TransformerShape.model_fields)
    )


class Engine(abc.ABC):
    """One serving engine, as the config, the plan, operations and cost ask for it.

    A subclass lives in the engine's module and is registered under `name` (the value of a
    model's `engine` setting). The class attributes state facts; the methods decide.
    """

    name: ClassVar[str]
    """The `engine` value that selects it (`platform.models.<name>.engine`)."""
    launch_class: ClassVar[type[Launch]]
    """How its image starts (a `Launch` subclass), built from the plan's decisions."""
    description: ClassVar[str]
    """One line for the configuration reference (what it is, which accelerators)."""
    settings_key: ClassVar[str | None] = None
    """The model key of the engine's own section (`custom`, `neuron`); None: its settings, if
    any, are keys of the model itself."""
    settings_model: ClassVar[type[Section] | None] = None
    """Schema of the engine's own settings; None: it has none."""
    settings_required: ClassVar[str | None] = None
    """With a section: why it is required (the message when it is missing); None: optional."""
    default_image: ClassVar[bool] = True
    """Whether `images.<name>` gives a default image (built from `images/<name>`); else every
    service names its own `image`."""
    image_platforms: ClassVar[tuple[str, ...]] = ("linux/amd64",)
    """Docker platforms the stack builds its image for (GPU and Neuron hosts are x86_64)."""
    base_image_account: ClassVar[str | None] = None
    """AWS account of a private ECR registry the image's Dockerfile builds FROM (an AWS Deep
    Learning Container), which the build logs in to; None: a public base."""
    needs_weights: ClassVar[bool] = True
    """Whether `weightsUri` is required."""
    reads_efs: ClassVar[bool] = True
    """Whether the weights may be on EFS (`efs://...`), read in place; else S3 only."""
    streams_from_s3: ClassVar[bool] = False
    """Whether S3 weights stream into accelerator memory (else they are staged on disk first):
    the weight-load estimate compares EFS against this path."""
    needs_max_model_len: ClassVar[bool] = True
    """Whether `maxModelLen` is required."""
    takes_extra_args: ClassVar[bool] = True
    """Whether `extraArgs` applies; else `extra_args_refused` says why."""
    extra_args_refused: ClassVar[str] = ""
    """The message when `extraArgs` is given to an engine that takes none."""
    takes_tensor_parallel_size: ClassVar[bool] = True
    """Whether `tensorParallelSize` applies; else `tensor_parallel_refused` says why."""
    tensor_parallel_refused: ClassVar[str] = ""
    """The message when `tensorParallelSize` is given to an engine that takes none."""
    metrics_kind: ClassVar[str | None] = None
    """The metrics sidecar's scrape family (`contracts.metrics.METRICS_BY_KIND` key); None: the
    sidecar knows none of the engine's metrics, so the service runs without it and scales on
    ALB requests."""
    kv_cache_per_sequence: ClassVar[bool] = False
    """Whether the engine allocates the KV cache per whole sequence (KV-cache usage then moves
    in steps of one sequence)."""
    gateway_provider: ClassVar[str] = "openai"
    """LiteLLM provider the gateway routes to it with (any OpenAI-compatible server: `openai`)."""
    routed_by_default: ClassVar[bool] = True
    """Whether the gateway routes to its services unless `gateway.routes` says otherwise."""
    smoke_prompt: ClassVar[str] = "Reply with the single word: ready"
    """The smoke test's chat prompt for this engine's services before a new revision takes
    production traffic (`rollout.smoke.prompt` overrides it): short, answerable by any
    instruction-tuned model, and streamed through the engine's OpenAI chat endpoint."""
    names_itself_when_too_big: ClassVar[bool] = True
    """Whether a model that does not fit its pool is reported as "the <engine> model does not
    fit: ..." (else the sizing message alone)."""

    def settings(self, model: ModelSettings) -> Section | None:
        """The model's validated engine settings (`settings_model`), or None."""
        return model.engine_settings

    def check_config(self, model: ModelSettings) -> None:
        """The engine's rules on a model's config, beyond its keys' own shapes; raises
        ValueError with the message the config error shows. Subclasses add their own after
        these."""
        if (
            model.architecture is None
            and model.parameters is None
            and not (self.declares_memory(model))
        ):
            raise ValueError(
                "give `architecture` (a catalog id) or `parameters` (explicit shape)"
                + self.sizing_alternative()
            )
        if self.settings_required and self.settings(model) is None:
            raise ValueError(self.settings_required)
        if self.needs_weights and model.weights_uri is None:
            raise ValueError(f"engine {self.name} needs `weightsUri`")
        if model.extra_args and not self.takes_extra_args:
            raise ValueError(self.extra_args_refused)
        if (
            model.weights_uri is not None
            and model.weights_uri.startswith("efs://")
            and not self.reads_efs
        ):
            raise ValueError(
                f"engine {self.name} loads weights from S3 only; use an s3:// weightsUri or an "
                "engine that reads EFS"
            )
        if self.needs_max_model_len and model.max_model_len is None:
            raise ValueError(
                f"engine {self.name} needs `maxModelLen` (longest prompt + completion)"
            )
        if model.tensor_parallel_size is not None and not self.takes_tensor_parallel_size:
            raise ValueError(self.tensor_parallel_refused)

    def declares_memory(self, model: ModelSettings) -> bool:
        """Whether the model declares its accelerator memory instead of a shape (no engine
        but `custom` lets it)."""
        del model
        return False

    def sizing_alternative(self) -> str:
        """What the "give architecture or parameters" message adds (another way to size)."""
        return ""

    def accelerator(self, model: ModelSettings) -> Literal["gpu", "neuron"]:
        """The pool kind the model runs on: GPU (gpuPools, managedInstancePools) or Neuron
        (neuronPools)."""
        del model
        return "gpu"

    def context_length(self, model: ModelSettings) -> int:
        """Tokens per sequence the service is sized for: `maxModelLen`."""
        if model.max_model_len is None:
            raise ValueError(f"engine {self.name} has no maxModelLen")
        return model.max_model_len

    def demand(self, name: str, model: ModelSettings) -> Demand:
        """What the model needs from an instance type: by default the VRAM method on GPUs,
        `tensorParallelSize` pinning the GPU count. Raises `sizing.SizingError`, or
        `PresetError` (path first) for settings that cannot be sized."""
        return gpu_demand(name, model, model.tensor_parallel_size)

    def launch(self, inputs: LaunchInputs) -> Launch:
        """The service's launch: its `launch_class` of `inputs`, validated on construction.
        Raises `EngineLaunchError` (field first) or `PresetError` (config path first)."""
        return self.launch_class(inputs)

    def warmup_seconds(self, model: ModelSettings) -> float:
        """Grace-period input: warm-up after the weights are loaded (`startup.warmupSeconds`)."""
        return float(model.startup.warmup_seconds)

    def max_concurrency(self, model: ModelSettings) -> int:
        """The batch the engine runs at once (the engine-load scaling target's base):
        `maxConcurrentSequences`."""
        return model.max_concurrent_sequences
