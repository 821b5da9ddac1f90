"""optimum-neuron 0.4.5 on Inferentia2/Trainium (`optimum-cli neuron serve`, image
`images/neuron`), which runs vLLM 0.11.0 with optimum-neuron's platform plugin.

The precompiled artifact is staged from S3 to local disk; the entrypoint refuses to start
unless its `neuron_config.json` matches the configured batch size, sequence length and tensor
parallel degree, because a mismatch makes optimum-neuron look for another compiled variant or
recompile — minutes to hours on the instance. vLLM 0.11.0 has no SSE keep-alive, so the
entrypoint runs the engine on loopback and a small stdlib reverse proxy on the service port that
injects `: keep-alive` comments into idle event streams (`contracts/sse_proxy.py`).

Neuron devices are not an ECS resource type: the task maps `/dev/neuron0..N-1` and the service
places one task per instance. The task environment the image reads is `contracts/neuron.py`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import Field

from ecs_inference import sizing
from ecs_inference.config.base import Section
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
from ecs_inference.engines.base import (
    Engine,
    EngineLaunchError,
    MetricsTarget,
    ModelSettings,
    env_list,
    settings_of,
    visible_cores,
    vram_shape,
)
from ecs_inference.engines.registry import register
from ecs_inference.engines.vllm import VllmServed
from ecs_inference.sizing.instance_types import Demand
from ecs_inference.sizing.neuron import NeuronDemand

OPTIMUM_NEURON_VERSION = "0.4.5"
"""optimum-neuron release of the Neuron image (AWS DLC `huggingface-vllm-inference-neuronx`)."""
VLLM_VERSION = "0.11.0"
"""vLLM release optimum-neuron 0.4.5 runs on (its `vllm==0.11.0` extra); flags forwarded to it
must exist there."""
FLAG_TABLE = f"optimum-neuron-{OPTIMUM_NEURON_VERSION}"
"""The committed flags of `optimum-cli neuron serve` and the vLLM flags it forwards."""
METRICS_KIND = "neuron"
"""The sidecar's scrape spec of the vLLM families the Neuron image serves (`contracts.metrics`)."""

# optimum-neuron records the compilation target normalised by `INSTANCE_VALUE_MAP`
# (optimum/neuron/utils/instance.py): Inferentia2 and Trainium1 share the `trn1` target.
# trn2 is left out: 4 logical cores per device breaks the 2-cores-per-device device mapping.
TARGETS = {"inf2": "trn1", "trn1": "trn1", "trn1n": "trn1"}
"""Instance family -> the compilation target optimum-neuron records for it."""

MANAGED_FLAGS = frozenset(
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
"""Flags the Neuron launch sets itself; `extraArgs` may not."""


@dataclass(frozen=True)
class NeuronLaunch(VllmServed):
    """One optimum-neuron (Inferentia/Trainium) model server: the model's precompiled artifact
    (`neuron` section: batch size, sequence length, tp degree) on the devices its fit maps.
    Validated on construction."""

    flags = FLAG_TABLE
    managed_flags = MANAGED_FLAGS

    model_dir: str = "/models/artifact"
    """Local directory the artifact is staged to."""
    upstream_port: int | None = None
    """Loopback port of the engine behind the keep-alive proxy (`port`); None: port + 1."""

    def __post_init__(self) -> None:
        where = "NeuronLaunch"
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
        super().__post_init__()

    @property
    def compiled(self) -> NeuronCompileConfig:
        """The shape the artifact was compiled for (the model's `neuron` section)."""
        return settings_of(self.model, NeuronCompileConfig)

    @property
    def target(self) -> str | None:
        """The pool's instance family whose compilation target the artifact must record
        (`inf2`, `trn1`); None skips the check."""
        family = self.inputs.instance_family
        return family if family in ("inf2", "trn1") else None

    @property
    def neuron_device_count(self) -> int:
        """The devices that hold `tp_degree` NeuronCores (the fit's)."""
        return self.inputs.accelerators

    def container_environment(self, region: str | None = None) -> list[dict[str, str]]:
        """The container's `environment` (sorted; no secrets). The region is the launch's own
        (`aws_region`), so `region` is not read."""
        del region
        compiled, target = self.compiled, self.target
        return env_list(
            self.server_environment()
            | {
                ENV_ARTIFACT_URI: self.weights_uri,
                ENV_MODEL_DIR: self.model_dir,
                ENV_BATCH_SIZE: str(compiled.batch_size),
                ENV_SEQUENCE_LENGTH: str(compiled.sequence_length),
                ENV_TP_DEGREE: str(compiled.tp_degree),
                ENV_NEURON_TARGET: TARGETS[target] if target else None,
                ENV_UPSTREAM_PORT: str(self.upstream_port),
                ENV_NEURON_RT_VISIBLE_CORES: visible_cores(compiled.tp_degree),
            }
        )

    def metrics_target(self) -> MetricsTarget | None:
        """The engine's own `/metrics` on loopback, not the keep-alive proxy."""
        return MetricsTarget(METRICS_KIND, self.upstream_port or self.port)


class NeuronCompileConfig(Section):
    """The shape the Neuron artifact was compiled for; serving must match it exactly."""

    batch_size: int = Field(gt=0, le=256)
    """Batch size the artifact was compiled for."""
    sequence_length: int = Field(gt=0, le=1_048_576)
    """Sequence length the artifact was compiled for."""
    tp_degree: int = Field(gt=0, le=64)
    """Tensor parallel degree (NeuronCores) the artifact was compiled for."""


class Neuron(Engine):
    """optimum-neuron on Inferentia2/Trainium; the precompiled artifact staged from S3."""

    name = "neuron"
    description = "optimum-neuron on an Inferentia/Trainium pool (image images/neuron)"
    # The AWS Deep Learning Containers account images/neuron/Dockerfile builds FROM.
    base_image_account = "763104351884"
    settings_key = "neuron"
    settings_model = NeuronCompileConfig
    launch_class = NeuronLaunch
    settings_required = (
        "engine neuron needs `neuron: {batchSize, sequenceLength, tpDegree}` matching the "
        "precompiled artifact"
    )
    reads_efs = False
    needs_max_model_len = False
    takes_tensor_parallel_size = False
    tensor_parallel_refused = "engine neuron takes its tp degree from `neuron.tpDegree`"
    metrics_kind = METRICS_KIND
    kv_cache_per_sequence = True
    # optimum-neuron serves vLLM's OpenAI API.
    gateway_provider = "hosted_vllm"
    names_itself_when_too_big = False

    def check_config(self, model: ModelSettings) -> None:
        """The base rules, then: `maxModelLen` within the compiled sequence length."""
        super().check_config(model)
        compiled = settings_of(model, NeuronCompileConfig)
        if model.max_model_len is not None and model.max_model_len > compiled.sequence_length:
            raise ValueError(
                f"maxModelLen ({model.max_model_len}) exceeds the compiled neuron.sequenceLength "
                f"({compiled.sequence_length}); recompile the artifact or lower maxModelLen"
            )

    def accelerator(self, model: ModelSettings) -> Literal["gpu", "neuron"]:
        """Inferentia/Trainium."""
        del model
        return "neuron"

    def context_length(self, model: ModelSettings) -> int:
        """`maxModelLen`, default the compiled sequence length."""
        if model.max_model_len is not None:
            return model.max_model_len
        return settings_of(model, NeuronCompileConfig).sequence_length

    def demand(self, name: str, model: ModelSettings) -> Demand:
        """The precompiled artifact's NeuronCores and memory."""
        return NeuronDemand(
            name,
            sizing.resolve_architecture(model.architecture, **vram_shape(model.parameters)),
            settings_of(model, NeuronCompileConfig),
            model.dtype,
            model.memory_overhead_fraction,
        )

    def max_concurrency(self, model: ModelSettings) -> int:
        """The compiled batch size."""
        return settings_of(model, NeuronCompileConfig).batch_size


ENGINE = register(Neuron())
