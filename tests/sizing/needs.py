"""Hand-built sizing inputs for the tests: a model's settings as `models.input.ModelConfig`
gives them to the VRAM method, and a compiled Neuron shape as `engines.neuron` gives it."""

from __future__ import annotations

from dataclasses import dataclass

from ecs_inference import sizing
from ecs_inference.sizing.catalog import InstanceType, ModelArchitecture
from ecs_inference.sizing.neuron import NeuronDemand


@dataclass(frozen=True)
class Settings:
    """The settings `sizing.gpu.NeedSettings` reads, with the VRAM method's own defaults."""

    dtype: str = "auto"
    kv_cache_dtype: str = "auto"
    max_model_len: int | None = None
    max_concurrent_sequences: int = 1
    memory_overhead_fraction: float = 0.15


def memory_need(
    model: ModelArchitecture | str | None = None,
    *,
    dtype: str = "auto",
    kv_cache_dtype: str = "auto",
    max_model_len: int | None = None,
    max_concurrent_sequences: int = 1,
    overhead_fraction: float = 0.15,
    **shape: float | None,
) -> sizing.MemoryNeed:
    settings = Settings(
        dtype, kv_cache_dtype, max_model_len, max_concurrent_sequences, overhead_fraction
    )
    return sizing.gpu_memory_need(model, settings, **shape)


@dataclass(frozen=True)
class Compiled:
    """What `sizing.neuron.CompiledShape` reads (`engines.neuron.NeuronCompileConfig`)."""

    batch_size: int
    sequence_length: int
    tp_degree: int


def neuron_demand(
    tp: int,
    batch: int,
    seq: int,
    arch: ModelArchitecture | str,
    dtype: str = "bf16",
    name: str | None = None,
) -> NeuronDemand:
    """The demand of service `name` (default: the architecture's name)."""
    model = arch if isinstance(arch, ModelArchitecture) else sizing.resolve_architecture(arch)
    return NeuronDemand(name or model.name, model, Compiled(batch, seq, tp), dtype)


def neuron_fit(
    tp: int,
    batch: int,
    seq: int,
    instance: InstanceType | str,
    arch: ModelArchitecture | str,
    dtype: str = "bf16",
) -> sizing.NeuronFit:
    return sizing.neuron_fit(neuron_demand(tp, batch, seq, arch, dtype), instance)
