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

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from pydantic import Field

from ecs_inference import sizing
from ecs_inference.config.base import Section
from ecs_inference.contracts import aws_limits, flag_table
from ecs_inference.contracts.engine import DEFAULT_PORT, DEFAULT_SSE_KEEPALIVE_SECONDS
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
    LaunchInputs,
    MetricsTarget,
    ModelSettings,
    TaskArgsError,
    TaskShape,
    check_extra_args,
    check_s3_source,
    checked_device_paths,
    env_list,
    neuron_device_mappings,
    visible_cores,
    vram_shape,
)
from ecs_inference.engines.registry import register
from ecs_inference.engines.vllm import (
    ServerDefaults,
    check_server,
    positive_int,
    server_environment,
)
from ecs_inference.sizing.catalog import NEURON_CORES_PER_DEVICE
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
class NeuronLaunch(ServerDefaults):
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
        object.__setattr__(self, "extra_args", tuple(self.extra_args))
        check_server(where, self)
        positive_int(where, "tp_degree", self.tp_degree)
        devices = self.num_devices
        if devices is None:
            devices = math.ceil(self.tp_degree / NEURON_CORES_PER_DEVICE)
            object.__setattr__(self, "num_devices", devices)
        positive_int(where, "num_devices", devices)
        if devices * NEURON_CORES_PER_DEVICE < self.tp_degree:
            raise EngineLaunchError(
                f"{where}.num_devices {devices} gives "
                f"{devices * NEURON_CORES_PER_DEVICE} NeuronCores, fewer than tp_degree "
                f"{self.tp_degree}"
            )
        if self.target is not None and self.target not in TARGETS:
            raise EngineLaunchError(f"{where}.target {self.target!r} not one of {sorted(TARGETS)}")
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

    @property
    def gpus(self) -> int:
        """No GPUs: Neuron devices are mapped."""
        return 0

    @property
    def neuron_device_count(self) -> int:
        """The devices that hold `tp_degree` NeuronCores."""
        return self.num_devices or 0  # set by __post_init__

    def container_environment(self, region: str | None = None) -> list[dict[str, str]]:
        """The container's `environment` (sorted; no secrets). The region is the launch's own
        (`aws_region`), so `region` is not read."""
        del region
        return env_list(
            server_environment(self)
            | {
                ENV_ARTIFACT_URI: self.artifact_uri,
                ENV_MODEL_DIR: self.model_dir,
                ENV_BATCH_SIZE: str(self.batch_size),
                ENV_SEQUENCE_LENGTH: str(self.sequence_length),
                ENV_TP_DEGREE: str(self.tp_degree),
                ENV_NEURON_TARGET: TARGETS[self.target] if self.target else None,
                ENV_UPSTREAM_PORT: str(self.upstream_port),
                ENV_NEURON_RT_VISIBLE_CORES: visible_cores(self.tp_degree),
            }
        )

    def device_mappings(self) -> list[dict[str, object]]:
        """`linuxParameters.devices` mapping exactly the Neuron devices the model needs."""
        return neuron_device_mappings(self.neuron_device_count)

    def metrics_target(self) -> MetricsTarget | None:
        """The engine's own `/metrics` on loopback, not the keep-alive proxy."""
        return MetricsTarget(METRICS_KIND, self.upstream_port or self.port)

    def device_paths(self, where: str, given: Sequence[str]) -> list[str]:
        """`given`, checked against the tp degree, or `/dev/neuron0..N-1`."""
        wanted = self.neuron_device_count
        return checked_device_paths(
            where,
            wanted,
            given,
            f"tp degree {self.tp_degree} needs {wanted} Neuron device(s) "
            f"({NEURON_CORES_PER_DEVICE} NeuronCores each)",
        )

    def check_task(self, where: str, task: TaskShape) -> None:
        """No GPUs, the devices of the tp degree, one task per instance, the artifact read from
        the task role's S3 prefix."""
        if task.gpu_count:
            raise TaskArgsError(
                f"{where}: gpu_count {task.gpu_count} given for a Neuron model; Neuron "
                "devices are mapped through neuron_devices"
            )
        self.device_paths(where, task.neuron_devices)
        if not task.one_task_per_instance:
            raise TaskArgsError(
                f"{where}: a Neuron service needs one_task_per_instance=True: devices are not "
                "an ECS resource, so ECS would place a second task on the same devices"
            )
        check_s3_source(where, task, self.artifact_uri)


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

    def compiled(self, model: ModelSettings) -> NeuronCompileConfig:
        """The model's `neuron` section (required)."""
        settings = self.settings(model)
        assert isinstance(settings, NeuronCompileConfig)
        return settings

    def check_config(self, model: ModelSettings) -> None:
        """The base rules, then: `maxModelLen` within the compiled sequence length."""
        super().check_config(model)
        compiled = self.compiled(model)
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
        return self.compiled(model).sequence_length

    def demand(self, name: str, model: ModelSettings) -> Demand:
        """The precompiled artifact's NeuronCores and memory."""
        return NeuronDemand(
            name,
            sizing.resolve_architecture(model.architecture, **vram_shape(model.parameters)),
            self.compiled(model),
            model.dtype,
            model.memory_overhead_fraction,
        )

    def launch(self, inputs: LaunchInputs) -> NeuronLaunch:
        """optimum-neuron on the devices the fit maps, checked against the compiled shape."""
        fit, family = inputs.fit, inputs.instance_family
        assert isinstance(fit, sizing.NeuronFit) and inputs.weights_uri is not None
        return NeuronLaunch(
            served_model_name=inputs.served_model_name,
            artifact_uri=inputs.weights_uri,
            batch_size=fit.batch_size,
            sequence_length=fit.sequence_length,
            tp_degree=fit.tp_degree,
            num_devices=fit.devices_mapped,
            target=family if family in ("inf2", "trn1") else None,
            alb_idle_timeout_seconds=inputs.idle_timeout_seconds,
            aws_region=inputs.region,
            extra_args=check_extra_args(
                inputs.where, inputs.model.extra_args, flag_table.load(FLAG_TABLE), MANAGED_FLAGS
            ),
        )

    def max_concurrency(self, model: ModelSettings) -> int:
        """The compiled batch size."""
        return self.compiled(model).batch_size


ENGINE = register(Neuron())
