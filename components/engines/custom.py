"""Bring-your-own serving image (`engine: custom`): your image, run as it is.

The platform derives everything around the container as for the built-in engines (capacity,
sizing, auth, idle timeout, deregistration delay, grace period, autoscaling) and tells the
container what it needs through the environment of `contracts/custom.py`; `docs/engines.md`
states the contract for image authors. The service declares its port, health path, GPUs or
Neuron devices, keep-alive and warm-up.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from pydantic import Field

from ecs_inference.config.base import Section
from ecs_inference.contracts import custom as contract
from ecs_inference.contracts.engine import ENV_REGION_VARIABLES
from ecs_inference.engines.base import (
    Engine,
    LaunchDefaults,
    LaunchInputs,
    ModelSettings,
    PresetError,
    TaskArgsError,
    TaskShape,
    check_gpus_match,
    check_weights_store,
    env_list,
    fail,
    gpu_demand,
    keepalive_for,
    neuron_device_mappings,
    no_devices,
    sized,
    visible_cores,
)
from ecs_inference.engines.registry import register
from ecs_inference.sizing.catalog import NEURON_CORES_PER_DEVICE
from ecs_inference.sizing.instance_types import DeclaredDemand, Demand

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SECRET_ARN = re.compile(r"^arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:\d{12}:secret:.+$")


@dataclass(frozen=True)
class CustomLaunch(LaunchDefaults):
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
    port: int = contract.DEFAULT_PORT
    health_path: str = contract.DEFAULT_HEALTH_PATH
    gpus: int = 0
    neuron_devices: int = 0
    accelerator_memory_gib: float | None = None
    weights_uri: str | None = None
    environment: Mapping[str, str] = field(default_factory=dict)
    secrets: Mapping[str, str] = field(default_factory=dict)
    sse_keepalive_seconds: int | None = None
    max_generation_seconds: int = 300
    alb_idle_timeout_seconds: int = 60
    warmup_seconds: float = contract.DEFAULT_WARMUP_SECONDS
    settings_path: str | None = None

    def __post_init__(self) -> None:
        where = self.where
        block = self.settings_path or where
        # Before the tuple: a string would become its characters.
        if isinstance(self.command, str) or not all(isinstance(c, str) for c in self.command):
            raise fail(block, "command", "must be a list of strings (exec form, no shell)")
        object.__setattr__(self, "command", tuple(self.command))
        path = self.health_path
        if (
            not isinstance(path, str)
            or not path.startswith("/")
            or len(path) > contract.HEALTH_PATH_MAX_LENGTH
            or any(c.isspace() or c in "?#" for c in path)
        ):
            raise fail(
                block,
                "healthPath",
                f"{path!r} must be an absolute path of at most "
                f"{contract.HEALTH_PATH_MAX_LENGTH} characters without query or spaces "
                "(the ALB health check requests exactly it)",
            )
        if self.gpus and self.neuron_devices:
            raise fail(block, "gpus", "give GPUs or Neuron devices, not both (one pool type)")
        if self.accelerator_memory_gib is not None and not self.gpus and not self.neuron_devices:
            raise fail(
                block, "acceleratorMemoryGiB", "is only meaningful with gpus or neuronDevices"
            )
        self._check_environment()
        keepalive_for(block, self.alb_idle_timeout_seconds, self.sse_keepalive_seconds)
        if self.sse_keepalive_seconds is None and (
            self.alb_idle_timeout_seconds < self.max_generation_seconds
        ):
            raise fail(
                block,
                "sseKeepAliveSeconds",
                f"not set, so a stream may be silent for its whole {self.max_generation_seconds}"
                f" s, longer than the ALB idle timeout of {self.alb_idle_timeout_seconds} s; "
                "declare the image's keep-alive interval or raise the endpoint's idle timeout",
            )

    def _check_environment(self) -> None:
        where = self.where
        for key, values in (("environment", self.environment), ("secrets", self.secrets)):
            if not isinstance(values, Mapping):
                raise fail(where, key, "must be a mapping of NAME: value")
            for name, value in values.items():
                if not isinstance(name, str) or not _ENV_NAME.match(name):
                    raise fail(where, f"{key}.{name}", "is not a valid environment name")
                if name in contract.PLATFORM_ENV or name.startswith(contract.RESERVED_ENV_PREFIXES):
                    raise fail(
                        where,
                        f"{key}.{name}",
                        "is reserved: the platform or ECS sets it (ENGINE_*, AWS_*, ECS_*)",
                    )
                if not isinstance(value, str):
                    raise fail(where, f"{key}.{name}", "must be a string")
                if key == "secrets" and not _SECRET_ARN.match(value):
                    raise fail(
                        where, f"secrets.{name}", f"must be a Secrets Manager ARN, got {value!r}"
                    )
                if key == "environment" and any(
                    marker in name.upper() for marker in contract.SECRET_NAME_MARKERS
                ):
                    raise fail(
                        where,
                        f"environment.{name}",
                        "looks like a credential: put its Secrets Manager ARN under `secrets`",
                    )
        both = set(self.environment) & set(self.secrets)
        if both:
            raise fail(where, "secrets", f"{sorted(both)} also set in environment")

    @property
    def accelerator(self) -> Literal["gpu", "neuron", "none"]:
        """Which pool type the service needs."""
        if self.gpus:
            return "gpu"
        return "neuron" if self.neuron_devices else "none"

    @property
    def neuron_device_count(self) -> int:
        """Neuron devices the task maps (`neuron_devices`)."""
        return self.neuron_devices

    def container_environment(self, region: str | None = None) -> list[dict[str, str]]:
        """The container's `environment`: the service's own, then the platform's contract
        (sorted; secrets go in `secrets`)."""
        cores = self.neuron_devices * NEURON_CORES_PER_DEVICE
        platform: dict[str, str | None] = {
            contract.ENV_PORT: str(self.port),
            contract.ENV_SERVED_MODEL_NAME: self.served_model_name,
            contract.ENV_WEIGHTS_URI: self.weights_uri,
            contract.ENV_MAX_GENERATION_SECONDS: str(self.max_generation_seconds),
            contract.ENV_NEURON_VISIBLE_CORES: visible_cores(cores) if cores else None,
            **{variable: region for variable in ENV_REGION_VARIABLES},
        }
        return env_list({**self.environment, **platform})

    def container_secrets(self) -> list[dict[str, str]]:
        """The container's `secrets` (`valueFrom` Secrets Manager ARNs)."""
        return [{"name": k, "valueFrom": v} for k, v in sorted(self.secrets.items())]

    def container_command(self) -> list[str]:
        """The service's own `command` (exec form), or empty for the image's CMD."""
        return list(self.command)

    def managed_environment(self) -> list[str]:
        """The platform's variables: the service's own `environment` is part of the launch."""
        return [n for n in super().managed_environment() if n not in self.environment]

    def device_mappings(self) -> list[dict[str, object]]:
        """`linuxParameters.devices` for a Neuron image: `/dev/neuron0..N-1`."""
        return neuron_device_mappings(self.neuron_devices)

    def device_paths(self, where: str, given: Sequence[str]) -> list[str]:
        """`given` as the plan mapped them (checked by `check_task`)."""
        if not self.neuron_devices:
            return no_devices(where, given)
        return list(given)

    def check_task(self, where: str, task: TaskShape) -> None:
        """GPUs reserved as declared; exactly the declared Neuron devices, one task per
        instance; weights (if any) on S3 or EFS."""
        check_gpus_match(where, task, self.gpus)
        if self.neuron_devices:
            if len(task.neuron_devices) != self.neuron_devices or not task.one_task_per_instance:
                raise TaskArgsError(
                    f"{where}: a Neuron custom service maps exactly its {self.neuron_devices} "
                    "device(s) and runs one task per instance"
                )
        else:
            no_devices(where, task.neuron_devices)
        check_weights_store(where, task)

    def accelerator_fit(
        self,
        accelerator_memory_gib_each: float,
        accelerators_on_instance: int,
        instance_name: str,
        utilization: float = 0.9,
    ) -> float:
        """Check the declared `acceleratorMemoryGiB` against one instance type.

        The declared figure is the whole model's need (weights + KV + overhead, as the VRAM
        method sums it), split evenly over the task's GPUs or Neuron devices. Returns the GiB
        per device; raises PresetError naming the config path when it does not fit in
        `utilization` (default 0.9) of each device, or the task asks for more devices than the
        instance has.
        """
        devices = self.gpus or self.neuron_devices
        key = "gpus" if self.gpus else "neuronDevices"
        block = self.settings_path or self.where
        if not devices or self.accelerator_memory_gib is None:
            raise fail(block, "acceleratorMemoryGiB", "needs gpus or neuronDevices and a value")
        if devices > accelerators_on_instance:
            raise fail(
                block,
                key,
                f"{devices} exceeds the {accelerators_on_instance} device(s) of {instance_name}",
            )
        per_device = self.accelerator_memory_gib / devices
        usable = accelerator_memory_gib_each * utilization
        if per_device > usable:
            raise fail(
                block,
                "acceleratorMemoryGiB",
                f"{self.accelerator_memory_gib:g} GiB over {devices} device(s) is "
                f"{per_device:.1f} GiB each, but {instance_name} offers {usable:.1f} usable GiB "
                f"per device ({utilization:g} of {accelerator_memory_gib_each:g}); use more "
                "devices or a larger instance type",
            )
        return per_device


class CustomEngineConfig(Section):
    """A bring-your-own serving image (`engine: custom`); the contract it must meet is in
    docs/engines.md."""

    command: list[str] = Field(default_factory=list)
    """Container command (exec form); empty: the image's CMD."""
    port: int = Field(contract.DEFAULT_PORT, ge=contract.MIN_PORT, le=contract.MAX_PORT)
    """Port the image listens on (all interfaces); non-root, so 1024 or above."""
    health_path: str = Field(
        contract.DEFAULT_HEALTH_PATH, min_length=1, max_length=contract.HEALTH_PATH_MAX_LENGTH
    )
    """Path that answers 200 once the image can serve (the ALB's health check)."""
    gpus: int = Field(0, ge=0, le=16)
    """GPUs the task reserves (on a gpuPools pool); give this or `neuronDevices`."""
    neuron_devices: int = Field(0, ge=0, le=16)
    """Neuron devices mapped into the task (on a neuronPools pool)."""
    accelerator_memory_gib: float | None = Field(None, gt=0, alias="acceleratorMemoryGiB")
    """The model's whole accelerator-memory need, when no `architecture`/`parameters` sizes it."""
    sse_keep_alive_seconds: int | None = Field(None, ge=1)
    """Longest silence the image allows itself during a stream; unset: none, so the endpoint's
    idle timeout must cover `maxGenerationSeconds`."""
    warmup_seconds: int = Field(int(contract.DEFAULT_WARMUP_SECONDS), ge=0, le=3600)
    """Time from weights loaded to ready (grace-period input)."""


class Custom(Engine):
    """Your own image, on GPUs or Neuron devices, with the platform's contract around it."""

    name = "custom"
    description = "your own image (settings under `custom`)"
    settings_key = "custom"
    settings_model = CustomEngineConfig
    settings_required = (
        "engine custom needs `custom: {port, healthPath, gpus or neuronDevices, ...}`"
    )
    default_image = False
    needs_weights = False
    needs_max_model_len = False
    takes_extra_args = False
    extra_args_refused = "`extraArgs` does not apply to engine custom: set `custom.command`"
    # A custom image's API is its own: routed only when gateway.routes names it.
    routed_by_default = False

    def own(self, model: ModelSettings) -> CustomEngineConfig:
        """The model's `custom` section (required)."""
        settings = self.settings(model)
        assert isinstance(settings, CustomEngineConfig)
        return settings

    def check_config(self, model: ModelSettings) -> None:
        """The base rules, then: an image, and exactly one kind of accelerator."""
        super().check_config(model)
        if model.image is None:
            raise ValueError("engine custom needs `image` (your serving image)")
        own = self.own(model)
        if bool(own.gpus) == bool(own.neuron_devices):
            raise ValueError("engine custom needs exactly one of custom.gpus, custom.neuronDevices")

    def declares_memory(self, model: ModelSettings) -> bool:
        """`custom.acceleratorMemoryGiB` sizes it instead of a shape."""
        settings = self.settings(model)
        return isinstance(settings, CustomEngineConfig) and (
            settings.accelerator_memory_gib is not None
        )

    def sizing_alternative(self) -> str:
        return " or `custom.acceleratorMemoryGiB`"

    def accelerator(self, model: ModelSettings) -> Literal["gpu", "neuron"]:
        """GPUs with `custom.gpus`, else Neuron devices."""
        return "gpu" if self.own(model).gpus else "neuron"

    def demand(self, name: str, model: ModelSettings) -> Demand:
        """The VRAM method with its GPU count fixed to `custom.gpus` when a shape is given,
        else the declared accelerator memory. Raises `PresetError` when it gives neither."""
        own = self.own(model)
        if own.gpus and sized(model):
            return gpu_demand(name, model, own.gpus)
        if own.accelerator_memory_gib is None:
            raise PresetError(
                f"platform.models.{name}.custom.acceleratorMemoryGiB: a custom service is sized "
                "from its architecture (GPU only) or its declared accelerator memory; give one"
            )
        return DeclaredDemand(
            name,
            "nvidia" if own.gpus else "neuron",
            own.accelerator_memory_gib,
            own.gpus or own.neuron_devices,
            model.gpu_memory_utilization,
            "gpus" if own.gpus else "neuronDevices",
            model.served_model_name or name,
        )

    def launch(self, inputs: LaunchInputs) -> CustomLaunch:
        """The image as declared; every error names its config path."""
        model = inputs.model
        own = self.own(model)
        assert model.image is not None
        return CustomLaunch(
            inputs.where,
            model.image,
            inputs.served_model_name,
            command=tuple(own.command),
            port=own.port,
            health_path=own.health_path,
            gpus=own.gpus,
            neuron_devices=own.neuron_devices,
            accelerator_memory_gib=own.accelerator_memory_gib,
            weights_uri=inputs.weights_uri,
            environment=dict(model.environment),
            secrets=dict(model.secrets),
            sse_keepalive_seconds=own.sse_keep_alive_seconds,
            max_generation_seconds=model.max_generation_seconds,
            alb_idle_timeout_seconds=inputs.idle_timeout_seconds,
            warmup_seconds=float(own.warmup_seconds),
            settings_path=f"{inputs.where}.custom",
        )

    def warmup_seconds(self, model: ModelSettings) -> float:
        """`custom.warmupSeconds`."""
        return float(self.own(model).warmup_seconds)


ENGINE = register(Custom())
