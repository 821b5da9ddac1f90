"""A synthetic engine, `synth`, registered only by the tests that ask for it.

It is everything an engine module declares (its contract, launch, settings section, sizing,
scrape family, warm-up) in one test-only module, so that registering it shows a new engine
reaching config, plan, the model service's task definition, operations and cost without an
edit anywhere else.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from pydantic import Field

from ecs_inference import engines
from ecs_inference.config.base import Section
from ecs_inference.contracts.engine import ENV_REGION_VARIABLES
from ecs_inference.engines.base import (
    Engine,
    Launch,
    MetricsTarget,
    ModelSettings,
    check_port,
    env_list,
)

NAME = "synth"
"""The `engine` value (a name nothing outside this module knows)."""

# --- its image's contract (a real engine keeps this in contracts/<engine>.py) -------------------
ENV_PORT = "SYNTH_PORT"
ENV_MODEL = "SYNTH_MODEL"
ENV_WEIGHTS = "SYNTH_WEIGHTS"
ENV_CONTEXT = "SYNTH_CONTEXT"
ENV_GPUS = "SYNTH_GPUS"
ENV_GREETING = "SYNTH_GREETING"
HEALTH_PATH = "/synth/ready"
COMMAND = ("synth-serve", "--from-env")
PORT = 9100
WARMUP_SECONDS = 42.0


class SynthSettings(Section):
    """The synthetic engine's own section (`models.<name>.synth`)."""

    greeting: str = Field("hello", min_length=1, max_length=32)
    """What the server says first."""


@dataclass(frozen=True)
class SynthLaunch(Launch):
    """One synthetic model server on GPUs: the service's decisions (`inputs`, from
    `Launch`) give its settings, its own section its greeting."""

    port: int = PORT

    def __post_init__(self) -> None:
        check_port(self.where, "port", self.port)
        super().__post_init__()

    @property
    def greeting(self) -> str:
        settings = self.model.engine_settings
        return settings.greeting if isinstance(settings, SynthSettings) else "hello"

    @property
    def health_path(self) -> str:
        return HEALTH_PATH

    @property
    def sse_keepalive_seconds(self) -> int | None:
        return min(15, self.alb_idle_timeout_seconds // 2)

    def container_environment(self, region: str | None = None) -> list[dict[str, str]]:
        return env_list(
            {
                ENV_PORT: str(self.port),
                ENV_MODEL: self.served_model_name,
                ENV_WEIGHTS: self.weights_uri,
                ENV_CONTEXT: str(self.model.max_model_len),
                ENV_GPUS: str(self.gpus),
                ENV_GREETING: self.greeting,
                **{variable: region for variable in ENV_REGION_VARIABLES},
            }
        )

    def container_command(self) -> list[str]:
        return list(COMMAND)

    def metrics_target(self) -> MetricsTarget | None:
        # It serves vLLM's Prometheus families, so the sidecar scrapes it as vLLM.
        return MetricsTarget("vllm", self.port)


class Synth(Engine):
    """The synthetic engine: GPUs, weights streamed from S3, vLLM's metric families."""

    name = NAME
    description = "a synthetic engine for the registry's tests"
    settings_key = NAME
    settings_model = SynthSettings
    launch_class = SynthLaunch
    streams_from_s3 = True
    metrics_kind = "vllm"

    def warmup_seconds(self, model: ModelSettings) -> float:
        del model
        return WARMUP_SECONDS


@contextmanager
def registered() -> Iterator[Synth]:
    """The synthetic engine, registered for the duration of the block."""
    engine = engines.register(Synth())
    try:
        yield engine
    finally:
        engines.unregister(NAME)
