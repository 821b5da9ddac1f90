"""Data tables the sizing code and the components read: accelerator instance types, well-known
model architectures, the Fargate task-size grid and the ECS-optimized AMI SSM parameters.

Why a hand-written table instead of a DescribeInstanceTypes call: sizing must fail at
``pulumi preview`` (and in the offline preview, which has no AWS credentials), so every fact it
needs has to be available without a cloud call. Everything here is plain data (frozen
dataclasses, the architectures' frozen models and dicts); there is no Pulumi import, so tests
read it without mocks.

Sources (checked when the table was written; extend only after checking the same sources):
- instance shapes: the EC2 accelerated-computing instance pages (vCPU, memory, accelerator count);
- GPU memory: the total each device reports to CUDA / ``nvidia-smi`` (see the convention below);
- model architectures: each model's ``config.json`` on its official Hugging Face repository;
- Fargate grid: the ECS developer guide "Task size" table (and the seed document for 32 vCPU);
- prices and where each type is offered: `components.sizing.offerings` (its dated source).

GPU memory convention
---------------------
Sizing compares GiB (2**30 bytes) with GiB. Vendors quote GPU memory in marketing "GB" (A10G
"24 GB"), but what an engine can use is what the driver reports, and vLLM multiplies exactly
that total by ``gpu_memory_utilization``. So ``accelerator_memory_gib`` is the ``nvidia-smi``
total converted to GiB (A10G 23028 MiB = 22.49 GiB, not 24), and ``accelerator_memory_gb`` keeps
the marketing figure for display only. For Neuron devices AWS publishes no driver-visible figure;
Inferentia2 / Trainium HBM is 32 GiB per chip (HBM stacks come in binary sizes, as the A100's
exact 40960 MiB shows) and the sizing overhead fraction covers the runtime's reservation.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal, TypeVar

from pydantic import Field

from ecs_inference.config.base import Section
from ecs_inference.sizing import offerings

Accelerator = Literal["nvidia", "neuron"]
_Found = TypeVar("_Found")

_MIB_PER_GIB = 1024


class CatalogLookupError(KeyError):
    """A name that is not in one of the catalog tables (a KeyError with a readable message)."""

    def __init__(self, message: str, name: str, close_matches: tuple[str, ...]) -> None:
        super().__init__(message)
        self.message = message
        self.name = name
        self.close_matches = close_matches

    def __str__(self) -> str:  # KeyError's default str() wraps the message in quotes
        return self.message


class UnknownInstanceTypeError(CatalogLookupError):
    """Raised by :func:`instance` for an instance type the catalog does not describe."""


class UnknownArchitectureError(CatalogLookupError):
    """Raised by :func:`architecture` for a model id the catalog does not describe."""


@dataclass(frozen=True)
class InstanceType:
    """One EC2 instance type with accelerators.

    ``accelerator_memory_gib`` is per device (GPU or Neuron chip), in GiB as the driver reports it;
    ``neuron_cores`` is per instance (0 for NVIDIA types); ``on_demand_usd_hour`` is the us-east-1
    On-Demand price (`offerings.ranking_usd_per_hour`), what ranks types when no region is given.
    """

    name: str
    family: str
    accelerator: Accelerator
    accelerator_name: str
    accelerator_count: int
    accelerator_memory_gib: float
    neuron_cores: int
    vcpu: int
    memory_gib: int
    on_demand_usd_hour: float
    accelerator_memory_gb: int  # marketing figure, for display only

    @property
    def is_gpu(self) -> bool:
        return self.accelerator == "nvidia"

    @property
    def is_neuron(self) -> bool:
        return self.accelerator == "neuron"

    def describe(self) -> str:
        """Short human description, e.g. ``g6e.12xlarge (4 x L40S 45.0 GiB each, $10.49/h)``."""
        if self.is_neuron:
            return (
                f"{self.name} ({self.accelerator_count} x {self.accelerator_name}, "
                f"{self.neuron_cores} NeuronCores, {self.accelerator_memory_gib:g} GiB each, "
                f"~${self.on_demand_usd_hour:.2f}/h)"
            )
        return (
            f"{self.name} ({self.accelerator_count} x {self.accelerator_name} "
            f"{self.accelerator_memory_gib:.1f} GiB each, ~${self.on_demand_usd_hour:.2f}/h)"
        )


@dataclass(frozen=True)
class _Device:
    name: str
    memory_gib: float
    memory_gb: int


# Driver-reported totals (nvidia-smi "MiB" column) for the devices AWS ships in these families.
_A10G = _Device("A10G", 23028 / _MIB_PER_GIB, 24)
_L4 = _Device("L4", 23034 / _MIB_PER_GIB, 24)
_L40S = _Device("L40S", 46068 / _MIB_PER_GIB, 48)
_A100_40 = _Device("A100 40GB", 40960 / _MIB_PER_GIB, 40)
_A100_80 = _Device("A100 80GB", 81920 / _MIB_PER_GIB, 80)
_H100 = _Device("H100", 81559 / _MIB_PER_GIB, 80)
_H200 = _Device("H200", 143771 / _MIB_PER_GIB, 141)
_INFERENTIA2 = _Device("Inferentia2", 32.0, 32)
_TRAINIUM = _Device("Trainium", 32.0, 32)

#: NeuronCores per Inferentia2 / Trainium (v1) chip; each core owns half the chip's HBM.
NEURON_CORES_PER_DEVICE = 2
#: HBM per Inferentia2 / Trainium chip, in GiB.
NEURON_DEVICE_MEMORY_GIB = 32.0


def _instance(
    accelerator: Accelerator, name: str, device: _Device, count: int, vcpu: int, memory_gib: int
) -> InstanceType:
    return InstanceType(
        name=name,
        family=name.split(".")[0],
        accelerator=accelerator,
        accelerator_name=device.name,
        accelerator_count=count,
        accelerator_memory_gib=device.memory_gib,
        neuron_cores=count * NEURON_CORES_PER_DEVICE if accelerator == "neuron" else 0,
        vcpu=vcpu,
        memory_gib=memory_gib,
        on_demand_usd_hour=offerings.ranking_usd_per_hour(name),
        accelerator_memory_gb=device.memory_gb,
    )


def _gpu(name: str, device: _Device, count: int, vcpu: int, memory_gib: int) -> InstanceType:
    return _instance("nvidia", name, device, count, vcpu, memory_gib)


def _neuron(name: str, device: _Device, chips: int, vcpu: int, memory_gib: int) -> InstanceType:
    return _instance("neuron", name, device, chips, vcpu, memory_gib)


# Each type's `on_demand_usd_hour` is its us-east-1 Linux On-Demand price from the dated offerings
# table (`components.sizing.offerings`), or that module's labelled estimate where the source lists
# no On-Demand price.
_INSTANCES: tuple[InstanceType, ...] = (
    # g5: NVIDIA A10G
    _gpu("g5.xlarge", _A10G, 1, 4, 16),
    _gpu("g5.2xlarge", _A10G, 1, 8, 32),
    _gpu("g5.4xlarge", _A10G, 1, 16, 64),
    _gpu("g5.8xlarge", _A10G, 1, 32, 128),
    _gpu("g5.16xlarge", _A10G, 1, 64, 256),
    _gpu("g5.12xlarge", _A10G, 4, 48, 192),
    _gpu("g5.24xlarge", _A10G, 4, 96, 384),
    _gpu("g5.48xlarge", _A10G, 8, 192, 768),
    # g6: NVIDIA L4
    _gpu("g6.xlarge", _L4, 1, 4, 16),
    _gpu("g6.2xlarge", _L4, 1, 8, 32),
    _gpu("g6.4xlarge", _L4, 1, 16, 64),
    _gpu("g6.8xlarge", _L4, 1, 32, 128),
    _gpu("g6.16xlarge", _L4, 1, 64, 256),
    _gpu("g6.12xlarge", _L4, 4, 48, 192),
    _gpu("g6.24xlarge", _L4, 4, 96, 384),
    _gpu("g6.48xlarge", _L4, 8, 192, 768),
    # g6e: NVIDIA L40S
    _gpu("g6e.xlarge", _L40S, 1, 4, 32),
    _gpu("g6e.2xlarge", _L40S, 1, 8, 64),
    _gpu("g6e.4xlarge", _L40S, 1, 16, 128),
    _gpu("g6e.8xlarge", _L40S, 1, 32, 256),
    _gpu("g6e.16xlarge", _L40S, 1, 64, 512),
    _gpu("g6e.12xlarge", _L40S, 4, 48, 384),
    _gpu("g6e.24xlarge", _L40S, 4, 96, 768),
    _gpu("g6e.48xlarge", _L40S, 8, 192, 1536),
    # p4d / p4de: NVIDIA A100 40 GB / 80 GB
    _gpu("p4d.24xlarge", _A100_40, 8, 96, 1152),
    _gpu("p4de.24xlarge", _A100_80, 8, 96, 1152),
    # p5 / p5e: NVIDIA H100 / H200 (p5.4xlarge is the single-H100 size AWS added in 2025)
    _gpu("p5.4xlarge", _H100, 1, 16, 256),
    _gpu("p5.48xlarge", _H100, 8, 192, 2048),
    _gpu("p5e.48xlarge", _H200, 8, 192, 2048),
    # inf2: AWS Inferentia2 (2 NeuronCores-v2 and 32 GiB HBM per chip)
    _neuron("inf2.xlarge", _INFERENTIA2, 1, 4, 16),
    _neuron("inf2.8xlarge", _INFERENTIA2, 1, 32, 128),
    _neuron("inf2.24xlarge", _INFERENTIA2, 6, 96, 384),
    _neuron("inf2.48xlarge", _INFERENTIA2, 12, 192, 768),
    # trn1: AWS Trainium (2 NeuronCores-v2 and 32 GiB HBM per chip)
    _neuron("trn1.2xlarge", _TRAINIUM, 1, 8, 32),
    _neuron("trn1.32xlarge", _TRAINIUM, 16, 128, 512),
)

#: Every catalogued instance type, by name.
INSTANCE_TYPES: dict[str, InstanceType] = {i.name: i for i in _INSTANCES}

# Network interfaces the DEFAULT network card (index 0) of each type takes: EC2
# DescribeInstanceTypes `NetworkInfo.NetworkCards[DefaultNetworkCardIndex]
# .MaximumNetworkInterfaces`, as generated into aws/amazon-vpc-resource-controller-k8s
# pkg/aws/vpc/limits.go (generated 2026-03-20). ECS attaches awsvpc task ENIs to the default card,
# so on multi-card types (g6e.24xlarge and up, p4d, p5, trn1.32xlarge) only that card's share
# counts. ECS awsvpc trunking (the `awsvpcTrunking` account setting, which this stack does not
# enable) raises the limit per ECS's own table; it is not catalogued.
DEFAULT_CARD_ENIS: dict[str, int] = {
    "g5.xlarge": 4, "g5.2xlarge": 4, "g5.4xlarge": 8, "g5.8xlarge": 8, "g5.16xlarge": 8,
    "g5.12xlarge": 15, "g5.24xlarge": 15, "g5.48xlarge": 7,
    "g6.xlarge": 4, "g6.2xlarge": 4, "g6.4xlarge": 8, "g6.8xlarge": 8, "g6.16xlarge": 15,
    "g6.12xlarge": 8, "g6.24xlarge": 15, "g6.48xlarge": 15,
    "g6e.xlarge": 4, "g6e.2xlarge": 4, "g6e.4xlarge": 8, "g6e.8xlarge": 8, "g6e.16xlarge": 15,
    "g6e.12xlarge": 10, "g6e.24xlarge": 10, "g6e.48xlarge": 10,
    "p4d.24xlarge": 15, "p4de.24xlarge": 15,
    "p5.4xlarge": 4, "p5.48xlarge": 2, "p5e.48xlarge": 2,
    "inf2.xlarge": 4, "inf2.8xlarge": 8, "inf2.24xlarge": 15, "inf2.48xlarge": 15,
    "trn1.2xlarge": 4, "trn1.32xlarge": 5,
}  # fmt: skip


def awsvpc_task_limit(instance_type: str) -> int:
    """awsvpc tasks one instance can run without ENI trunking: its default network card's
    interfaces minus the primary ENI the instance itself uses."""
    return DEFAULT_CARD_ENIS[instance_type] - 1


def _lookup(
    table: Mapping[str, _Found], kind: str, name: str, error: type[CatalogLookupError]
) -> _Found:
    """`table`'s entry called `name` (case-insensitive); raises `error` naming up to three
    close matches."""
    found = table.get(name.strip().lower())
    if found is None:
        close = tuple(difflib.get_close_matches(name.lower(), sorted(table), n=3, cutoff=0.6))
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise error(f"{kind} '{name}' is not in the catalog{hint}", name, close)
    return found


def instance(name: str) -> InstanceType:
    """The catalogued instance type called ``name`` (case-insensitive).

    Raises :class:`UnknownInstanceTypeError` (a KeyError) naming up to three close matches.
    """
    return _lookup(INSTANCE_TYPES, "instance type", name, UnknownInstanceTypeError)


def gpu_instances() -> tuple[InstanceType, ...]:
    """All NVIDIA instance types, in catalog order."""
    return tuple(i for i in _INSTANCES if i.is_gpu)


def neuron_instances() -> tuple[InstanceType, ...]:
    """All Inferentia2 / Trainium instance types, in catalog order."""
    return tuple(i for i in _INSTANCES if i.is_neuron)


class ArchitectureShape(Section):
    """The numbers the VRAM method needs, from a model's ``config.json``; None: not given (a
    model's `parameters` override the catalogued architecture's field by field)."""

    params_billion: float | None = Field(None, gt=0, le=2000)
    """Parameter count in billions (all experts for MoE models)."""
    layers: int | None = Field(None, gt=0, le=1000)
    """Transformer layers."""
    attention_heads: int | None = Field(None, gt=0, le=1024)
    """Query attention heads (tensor parallel size must divide them)."""
    kv_heads: int | None = Field(None, gt=0, le=1024)
    """Key/value heads (grouped-query attention); equals attentionHeads without GQA."""
    head_dim: int | None = Field(None, gt=0, le=4096)
    """Dimension of each attention head."""
    max_position_embeddings: int | None = Field(None, gt=0)
    """Longest context the model supports; maxModelLen may not exceed it."""


class ModelArchitecture(ArchitectureShape):
    """A model's whole shape, every number given: a catalogued one, or one resolved from a
    model's `parameters` (`sizing.memory.resolve_architecture`).

    ``params_billion`` counts every parameter that is resident in accelerator memory (for a
    mixture-of-experts model that is all experts, not the active ones). ``kv_heads`` is
    ``num_key_value_heads`` (equal to ``attention_heads`` without grouped-query attention) and
    ``head_dim`` is the per-head width (``hidden_size / num_attention_heads`` unless the config
    sets ``head_dim`` explicitly, as Gemma 2 does). ``native_dtype`` is the checkpoint's
    ``torch_dtype``, what vLLM's ``--dtype auto`` loads.
    """

    # Sections are frozen (`Section.model_config`), so narrowing the base's optional numbers is
    # sound; pyright reads frozenness only from class keywords, which Section's subclasses lack.
    name: str
    params_billion: float  # pyright: ignore[reportIncompatibleVariableOverride]
    layers: int  # pyright: ignore[reportIncompatibleVariableOverride]
    attention_heads: int  # pyright: ignore[reportIncompatibleVariableOverride]
    kv_heads: int  # pyright: ignore[reportIncompatibleVariableOverride]
    head_dim: int  # pyright: ignore[reportIncompatibleVariableOverride]
    max_position_embeddings: int  # pyright: ignore[reportIncompatibleVariableOverride]
    native_dtype: str = "bfloat16"
    notes: str = ""


def _arch(
    name: str,
    params_billion: float,
    layers: int,
    heads: int,
    kv_heads: int,
    head_dim: int,
    max_pos: int,
    native_dtype: str = "bfloat16",
    notes: str = "",
) -> ModelArchitecture:
    return ModelArchitecture(
        name=name,
        params_billion=params_billion,
        layers=layers,
        attention_heads=heads,
        kv_heads=kv_heads,
        head_dim=head_dim,
        max_position_embeddings=max_pos,
        native_dtype=native_dtype,
        notes=notes,
    )


# Parameter counts are the totals the model cards publish (embeddings included); the rest is the
# official config.json of each repository (meta-llama/*, mistralai/*, Qwen/*-Instruct, google/*,
# microsoft/*).
_ARCHITECTURES: tuple[ModelArchitecture, ...] = (
    _arch("llama-3.2-1b", 1.24, 16, 32, 8, 64, 131072),
    _arch("llama-3.2-3b", 3.21, 28, 24, 8, 128, 131072),
    _arch("llama-3-8b", 8.03, 32, 32, 8, 128, 8192),
    _arch("llama-3.1-8b", 8.03, 32, 32, 8, 128, 131072),
    _arch("llama-3-70b", 70.55, 80, 64, 8, 128, 8192),
    _arch("llama-3.1-70b", 70.55, 80, 64, 8, 128, 131072),
    _arch("llama-3.3-70b", 70.55, 80, 64, 8, 128, 131072),
    _arch("llama-2-7b", 6.74, 32, 32, 32, 128, 4096, "float16"),
    _arch("llama-2-13b", 13.02, 40, 40, 40, 128, 4096, "float16"),
    _arch("llama-2-70b", 68.98, 80, 64, 8, 128, 4096, "float16"),
    _arch("mistral-7b", 7.25, 32, 32, 8, 128, 32768),
    _arch(
        "mixtral-8x7b",
        46.70,
        32,
        32,
        8,
        128,
        32768,
        notes="mixture of experts: all 8 experts stay resident, only 2 run per token",
    ),
    _arch("qwen2.5-7b", 7.62, 28, 28, 4, 128, 32768),
    _arch("qwen2.5-14b", 14.77, 48, 40, 8, 128, 32768),
    _arch("qwen2.5-32b", 32.76, 64, 40, 8, 128, 32768),
    _arch("qwen2.5-72b", 72.71, 80, 64, 8, 128, 32768),
    _arch("gemma-2-9b", 9.24, 42, 16, 8, 256, 8192, notes="head_dim 256 set explicitly"),
    _arch("gemma-2-27b", 27.23, 46, 32, 16, 128, 8192, notes="head_dim 128 set explicitly"),
    _arch("phi-3-mini-4k", 3.82, 32, 32, 32, 96, 4096),
    _arch("phi-3-mini-128k", 3.82, 32, 32, 32, 96, 131072),
)

#: Every catalogued model architecture, by lowercase id.
MODEL_ARCHITECTURES: dict[str, ModelArchitecture] = {a.name: a for a in _ARCHITECTURES}


def architecture(name: str) -> ModelArchitecture:
    """The catalogued architecture with id ``name`` (case-insensitive), e.g. ``"llama-3.1-8b"``.

    Raises :class:`UnknownArchitectureError` (a KeyError) naming up to three close matches.
    """
    return _lookup(MODEL_ARCHITECTURES, "model architecture", name, UnknownArchitectureError)


#: Fargate Linux/ARM64 On-Demand list prices, us-east-1 (USD): per vCPU-hour and per GB-hour
#: (Fargate bills memory per GB of the task's MiB / 1024). Used only to pick the cheapest size.
FARGATE_ARM64_USD_PER_VCPU_HOUR = 0.03238
FARGATE_ARM64_USD_PER_GB_HOUR = 0.00356

#: SSM public parameters holding the current ECS-optimized Amazon Linux 2023 AMI ids: the GPU
#: variant ships the NVIDIA driver and container toolkit, the Neuron variant the Neuron driver.
ECS_GPU_AMI_SSM_PARAMETER = (
    "/aws/service/ecs/optimized-ami/amazon-linux-2023/gpu/recommended/image_id"
)
ECS_NEURON_AMI_SSM_PARAMETER = (
    "/aws/service/ecs/optimized-ami/amazon-linux-2023/neuron/recommended/image_id"
)
ECS_AMI_SSM_PARAMETERS: dict[Accelerator, str] = {
    "nvidia": ECS_GPU_AMI_SSM_PARAMETER,
    "neuron": ECS_NEURON_AMI_SSM_PARAMETER,
}
