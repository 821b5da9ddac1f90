"""Neuron sizing: NeuronCores, the devices to map into the task, the HBM of the cores used."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal, Protocol

from ecs_inference.sizing import catalog
from ecs_inference.sizing.catalog import InstanceType, ModelArchitecture
from ecs_inference.sizing.memory import (
    AcceleratorFit,
    ModelMemory,
    SizingError,
    check_overhead,
    memory_sum,
    normalize_dtype,
    positive_int,
)

# --------------------------------------------------------------------------------------------
# Neuron
# --------------------------------------------------------------------------------------------

_NEURON_CORE_GIB = catalog.NEURON_DEVICE_MEMORY_GIB / catalog.NEURON_CORES_PER_DEVICE
# tp degrees the Neuron SDK's LLM guides compile for (NxD pads heads that do not divide evenly).
_NEURON_TP_DEGREES = (1, 2, 4, 8, 16, 24, 32)


class CompiledShape(Protocol):
    """The shape a Neuron artifact was compiled for (`engines.neuron.NeuronCompileConfig`)."""

    @property
    def batch_size(self) -> int: ...
    @property
    def sequence_length(self) -> int: ...
    @property
    def tp_degree(self) -> int: ...


@dataclass(frozen=True)
class NeuronDemand:
    """One precompiled Neuron model placed on an Inferentia/Trainium pool: its `architecture`
    as `compiled`.

    dtype defaults to bf16, what optimum-neuron compiles by default; overhead_fraction to 0.15
    (the runtime's scratchpad and the compiled graphs).
    """

    model: str
    architecture: ModelArchitecture
    compiled: CompiledShape
    dtype: str = "bf16"
    overhead_fraction: float = 0.15

    accelerator: Literal["neuron"] = "neuron"


@dataclass(frozen=True)
class NeuronFit(AcceleratorFit, ModelMemory):
    """How one precompiled model (its `demand`) sits on an Inferentia2 / Trainium instance.

    Neuron devices are not an ECS resource: the task maps ``device_paths`` through
    ``linuxParameters.devices``. Because a task definition maps fixed paths, a second task on the
    same instance would map the same devices and fail to acquire its NeuronCores, so
    ``tasks_per_instance`` is 1; ``copies_per_instance`` says how many copies the instance's
    devices could hold (the rest are ``idle_devices``), to choose a smaller instance or a
    larger tp degree.
    """

    demand: NeuronDemand
    per_core_gib: float
    hbm_per_core_gib: float
    devices_mapped: int
    device_paths: tuple[str, ...]
    copies_per_instance: int
    idle_devices: int

    def summary(self) -> str:
        inst, shape = self.instance, self.demand.compiled
        idle = f", {self.idle_devices} device(s) idle" if self.idle_devices else ""
        return (
            f"{self.model} (Neuron, tp {shape.tp_degree}, batch {shape.batch_size}, sequence "
            f"{shape.sequence_length}, {normalize_dtype(self.demand.dtype)}): weights "
            f"{self.weights_gib:.1f} GiB + KV cache {self.kv_cache_gib:.1f} GiB + overhead "
            f"{self.overhead_gib:.1f} GiB = {self.total_gib:.1f} GiB; on {inst.name}: "
            f"{shape.tp_degree} of {inst.neuron_cores} NeuronCores, {self.per_core_gib:.1f} of "
            f"{self.hbm_per_core_gib:.0f} GiB per core, maps {self.devices_mapped} of "
            f"{inst.accelerator_count} device(s) ({', '.join(self.device_paths)}){idle}"
        )


def neuron_fit(demand: NeuronDemand, instance: InstanceType | str) -> NeuronFit:
    """Check a precompiled Neuron model (its tp degree, batch size and sequence length) against
    an Inferentia2 / Trainium instance.

    Each chip has 2 NeuronCores and 32 GiB of HBM (16 GiB per core). The tp degree must not exceed
    the instance's NeuronCores; the task maps ``ceil(tp / 2)`` devices; each core used must hold
    its shard of the weights and KV cache plus the demand's ``overhead_fraction``.
    """
    inst = catalog.instance(instance) if isinstance(instance, str) else instance
    model, dtype, overhead_fraction = demand.architecture, demand.dtype, demand.overhead_fraction
    tp = positive_int(demand.compiled.tp_degree, "tp_degree")
    batch = positive_int(demand.compiled.batch_size, "batch_size")
    seq = positive_int(demand.compiled.sequence_length, "sequence_length")
    check_overhead(overhead_fraction)
    if not inst.is_neuron:
        raise SizingError(
            f"{inst.name} has NVIDIA GPUs, not Neuron devices; "
            "serve the Neuron model on an inf2 or trn1 pool"
        )
    if seq > model.max_position_embeddings:
        raise SizingError(
            f"sequence_length {seq} exceeds {model.name}'s maximum context of "
            f"{model.max_position_embeddings} tokens"
        )
    by_price = sorted(catalog.neuron_instances(), key=lambda i: i.on_demand_usd_hour)
    if tp > inst.neuron_cores:
        bigger = [i.name for i in by_price if i.neuron_cores >= tp]
        names = ", ".join(bigger[:3]) or "none in the catalog"
        raise SizingError(
            f"{model.name} was compiled for tp degree {tp} but {inst.name} has only "
            f"{inst.neuron_cores} NeuronCores; instances with at least {tp} cores: {names}"
        )

    weights, kv, overhead = memory_sum(model, dtype, "auto", batch, seq, overhead_fraction)

    def per_core_at(tp: int) -> float:
        # Like vLLM, NxD replicates KV heads when the tp degree exceeds the KV-head count.
        kv_per_core = kv * max(model.kv_heads / tp, 1.0) / model.kv_heads
        return (weights / tp + kv_per_core) * (1 + overhead_fraction)

    per_core = per_core_at(tp)
    if per_core > _NEURON_CORE_GIB:
        options: list[str] = []
        suggested: set[str] = set()
        for cand_tp in _NEURON_TP_DEGREES:
            if per_core_at(cand_tp) > _NEURON_CORE_GIB:
                continue
            for cand in by_price:
                if cand.neuron_cores >= cand_tp and cand.name not in suggested:
                    suggested.add(cand.name)
                    options.append(
                        f"tp {cand_tp} on {cand.name} (~${cand.on_demand_usd_hour:.2f}/h)"
                    )
                    break
            if len(options) == 2:
                break
        hint = (
            "recompile with " + " or ".join(options)
            if options
            else "no catalog Neuron instance holds it; lower batch size or sequence length"
        )
        raise SizingError(
            f"{model.name} needs {per_core:.1f} GiB per NeuronCore at tp degree {tp} "
            f"({weights + kv + overhead:.1f} GiB in total: weights {weights:.1f} + KV cache "
            f"{kv:.1f} + overhead {overhead:.1f}) but a NeuronCore has {_NEURON_CORE_GIB:.0f} GiB "
            f"of HBM; {hint}"
        )

    devices = math.ceil(tp / catalog.NEURON_CORES_PER_DEVICE)
    return NeuronFit(
        model=model.name,
        instance=inst,
        tasks_per_instance=1,
        weights_gib=weights,
        kv_cache_gib=kv,
        overhead_gib=overhead,
        demand=demand,
        per_core_gib=per_core,
        hbm_per_core_gib=_NEURON_CORE_GIB,
        devices_mapped=devices,
        device_paths=tuple(f"/dev/neuron{i}" for i in range(devices)),
        copies_per_instance=inst.accelerator_count // devices,
        idle_devices=inst.accelerator_count - devices,
    )
