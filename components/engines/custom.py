"""Bring-your-own serving image (`engine: custom`): your image, run as it is.

The platform derives everything around the container as for the built-in engines (capacity,
sizing, auth, idle timeout, deregistration delay, grace period, autoscaling) and tells the
container what it needs through the environment of `contracts/custom.py`; `docs/engines.md`
states the contract for image authors. The service declares its port, health path, GPUs or
Neuron devices, keep-alive and warm-up.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from pydantic import Field, field_validator

from ecs_inference.config.base import Section, raise_problems
from ecs_inference.contracts import custom as contract
from ecs_inference.contracts.engine import ENV_REGION_VARIABLES
from ecs_inference.engines.base import (
    Engine,
    Launch,
    LaunchInputs,
    ModelSettings,
    PresetError,
    env_list,
    fail,
    gpu_demand,
    keepalive_for,
    settings_of,
    sized,
    visible_cores,
)
from ecs_inference.engines.registry import register
from ecs_inference.sizing.catalog import NEURON_CORES_PER_DEVICE
from ecs_inference.sizing.instance_types import DeclaredDemand, Demand

_SECRET_ARN = re.compile(r"^arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:\d{12}:secret:.+$")


@dataclass(frozen=True)
class CustomLaunch(Launch):
    """A bring-your-own serving image (`engine: custom`), started from what its service
    decided (`inputs`): its `custom` section, image, environment and secrets are read from the
    model as the schema validated them (`Custom.check_config`), its port is the section's.
    Construction checks what depends on the endpoint: the image's keep-alive against the ALB
    idle timeout."""

    def __post_init__(self) -> None:
        block = f"{self.where}.custom"
        idle, keepalive = self.alb_idle_timeout_seconds, self.sse_keepalive_seconds
        keepalive_for(block, idle, keepalive)
        longest = self.model.max_generation_seconds
        if keepalive is None and idle < longest:
            raise fail(
                block,
                "sseKeepAliveSeconds",
                f"not set, so a stream may be silent for its whole {longest} s, longer than the "
                f"ALB idle timeout of {idle} s; declare the image's keep-alive interval or raise "
                "the endpoint's idle timeout",
            )

    @property
    def own(self) -> CustomEngineConfig:
        """The service's `custom` section."""
        return settings_of(self.model, CustomEngineConfig)

    @property
    def health_path(self) -> str:
        return self.own.health_path

    @property
    def sse_keepalive_seconds(self) -> int | None:
        return self.own.sse_keep_alive_seconds

    @property
    def environment(self) -> Mapping[str, str]:
        return self.model.environment

    @property
    def neuron_device_count(self) -> int:
        """Neuron devices the task maps (`custom.neuronDevices`)."""
        return self.own.neuron_devices

    def container_environment(self, region: str | None = None) -> list[dict[str, str]]:
        """The container's `environment`: the service's own, then the platform's contract
        (sorted; secrets go in `secrets`)."""
        cores = self.neuron_device_count * NEURON_CORES_PER_DEVICE
        platform: dict[str, str | None] = {
            contract.ENV_PORT: str(self.port),
            contract.ENV_SERVED_MODEL_NAME: self.served_model_name,
            contract.ENV_WEIGHTS_URI: self.inputs.weights_uri,
            contract.ENV_MAX_GENERATION_SECONDS: str(self.model.max_generation_seconds),
            contract.ENV_NEURON_VISIBLE_CORES: visible_cores(cores) if cores else None,
            **{variable: region for variable in ENV_REGION_VARIABLES},
        }
        return env_list({**self.environment, **platform})

    def container_command(self) -> list[str]:
        """The service's own `command` (exec form), or empty for the image's CMD."""
        return list(self.own.command)

    def managed_environment(self) -> list[str]:
        """The platform's variables: the service's own `environment` is part of the launch."""
        return [n for n in super().managed_environment() if n not in self.environment]


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

    @field_validator("health_path")
    @classmethod
    def _health_path(cls, path: str) -> str:
        if not path.startswith("/") or any(c.isspace() or c in "?#" for c in path):
            raise ValueError(
                f"{path!r} must be an absolute path of at most "
                f"{contract.HEALTH_PATH_MAX_LENGTH} characters without query or spaces "
                "(the ALB health check requests exactly it)"
            )
        return path


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

    def check_config(self, model: ModelSettings) -> None:
        """The base rules, then: an image, exactly one kind of accelerator, and variables the
        platform does not set itself (secrets as Secrets Manager ARNs)."""
        super().check_config(model)
        if model.image is None:
            raise ValueError("engine custom needs `image` (your serving image)")
        own = settings_of(model, CustomEngineConfig)
        if bool(own.gpus) == bool(own.neuron_devices):
            raise ValueError("engine custom needs exactly one of custom.gpus, custom.neuronDevices")
        problems: list[tuple[tuple[str | int, ...], str | None]] = []
        for key, values in (("environment", model.environment), ("secrets", model.secrets)):
            for name, value in values.items():
                if name in contract.PLATFORM_ENV or name.startswith(contract.RESERVED_ENV_PREFIXES):
                    why = "is reserved: the platform or ECS sets it (ENGINE_*, AWS_*, ECS_*)"
                    problems.append(((key, name), why))
                elif key == "secrets" and not _SECRET_ARN.match(value):
                    why = f"must be a Secrets Manager ARN, got {value!r}"
                    problems.append(((key, name), why))
        raise_problems(type(self).__name__, problems)

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
        return "gpu" if settings_of(model, CustomEngineConfig).gpus else "neuron"

    def demand(self, name: str, model: ModelSettings) -> Demand:
        """The VRAM method with its GPU count fixed to `custom.gpus` when a shape is given,
        else the declared accelerator memory. Raises `PresetError` when it gives neither."""
        own = settings_of(model, CustomEngineConfig)
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
        return CustomLaunch(inputs, settings_of(inputs.model, CustomEngineConfig).port)

    def warmup_seconds(self, model: ModelSettings) -> float:
        """`custom.warmupSeconds`."""
        return float(settings_of(model, CustomEngineConfig).warmup_seconds)


ENGINE = register(Custom())
