"""Sizing decisions made before any resource exists, so that a model that cannot run fails
``pulumi preview`` with the numbers instead of failing at 3 a.m. with CUDA out-of-memory.

Pure functions over the tables in :mod:`.catalog`; no Pulumi import. Every result is a
frozen dataclass whose ``summary()`` is the line the (offline) preview prints. Every failure is a
:class:`SizingError` whose message is one readable sentence; the config layer prefixes it with the
offending config path.

What is sized here:
- GPU memory (the VRAM method): weights + KV cache + overhead, then the tensor-parallel size;
- Neuron: NeuronCores, devices to map into the task and the HBM of the cores used;
- Fargate: a (cpu, memory) pair on the Fargate grid, or the cheapest one for a need;
- timeouts: ALB idle timeout, target-group deregistration delay, ECS health-check grace period;
- rolling-deploy headroom on an accelerator Auto Scaling group.

Units: memory in GiB (2**30 bytes) throughout, except Fargate memory, which ECS takes in MiB.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from components.sizing import catalog
from components.sizing.catalog import InstanceType, ModelArchitecture
from contracts.aws_limits import (
    ALB_IDLE_TIMEOUT_DEFAULT,
    ALB_IDLE_TIMEOUT_RANGE,
    ECS_GRACE_PERIOD_MAX,
    FARGATE_PLATFORM_1_4_MIN_CPU,
    FARGATE_TASK_SIZES,
    TARGET_GROUP_DEREGISTRATION_DELAY_MAX,
)

GIB = 2**30


class SizingError(ValueError):
    """A configuration that cannot work; the message is one sentence without a config path."""


# --------------------------------------------------------------------------------------------
# dtypes
# --------------------------------------------------------------------------------------------

_WEIGHT_BYTES: dict[str, float] = {
    "float32": 4,
    "fp32": 4,
    "float16": 2,
    "fp16": 2,
    "half": 2,
    "bfloat16": 2,
    "bf16": 2,
    "fp8": 1,
    "int8": 1,
    "int4": 0.5,
    "awq": 0.5,
    "gptq": 0.5,
}

_KV_BYTES: dict[str, float] = {
    "float32": 4,
    "fp32": 4,
    "float16": 2,
    "fp16": 2,
    "bfloat16": 2,
    "bf16": 2,
    "fp8": 1,
    "fp8_e4m3": 1,
    "fp8_e5m2": 1,
}


def _norm(name: str) -> str:
    return str(name).strip().lower()


def bytes_per_param(dtype: str) -> float:
    """Bytes one weight occupies in accelerator memory for ``dtype``.

    fp32 4; fp16 / bf16 2; fp8 / int8 1; int4 / awq / gptq 0.5 (group-wise scales add a few
    percent, which the overhead fraction covers).
    """
    key = _norm(dtype)
    if key not in _WEIGHT_BYTES:
        valid = ", ".join(sorted(_WEIGHT_BYTES))
        raise SizingError(f"unknown weight dtype '{dtype}'; valid dtypes: {valid}")
    return _WEIGHT_BYTES[key]


def kv_cache_bytes(kv_cache_dtype: str, dtype: str) -> float:
    """Bytes per KV-cache element for ``kv_cache_dtype`` given the weight ``dtype``.

    ``"auto"`` (vLLM's default) stores the cache in the model's activation dtype, which is fp16 or
    bf16 even for int8 / int4 / fp8 *weights* (quantised weights are dequantised into 16-bit
    activations), so it is 2 bytes unless the model runs in fp32. ``"fp8"`` (and the explicit
    e4m3 / e5m2 variants) halve it to 1 byte.
    """
    key = _norm(kv_cache_dtype)
    if key == "auto":
        return 4 if bytes_per_param(dtype) == 4 else 2
    if key not in _KV_BYTES:
        valid = ", ".join(["auto", *sorted(_KV_BYTES)])
        raise SizingError(
            f"unknown KV cache dtype '{kv_cache_dtype}'; valid KV cache dtypes: {valid}"
        )
    return _KV_BYTES[key]


def _positive_int(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise SizingError(f"{what} must be a positive whole number, got {value!r}")
    if isinstance(value, float):
        if not value.is_integer():
            raise SizingError(f"{what} must be a positive whole number, got {value!r}")
        value = int(value)
    if value < 1:
        raise SizingError(f"{what} must be a positive whole number, got {value!r}")
    return value


def _non_negative_int(value: object, what: str) -> int:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise SizingError(f"{what} must be a whole number of at least 0, got {value!r}")
    return value


def _non_negative(value: object, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise SizingError(f"{what} must be a number of at least 0, got {value!r}")
    return float(value)


_ARCH_FIELDS = (
    "params_billion",
    "layers",
    "attention_heads",
    "kv_heads",
    "head_dim",
    "max_position_embeddings",
)


def resolve_architecture(
    model: ModelArchitecture | str | None = None,
    *,
    params_billion: float | None = None,
    layers: int | None = None,
    attention_heads: int | None = None,
    kv_heads: int | None = None,
    head_dim: int | None = None,
    max_position_embeddings: int | None = None,
) -> ModelArchitecture:
    """A model shape from a catalog id (or architecture) with explicit numbers overriding it
    field by field; every field is required when ``model`` is None (the name is then "model")."""
    base: ModelArchitecture | None
    if model is None or isinstance(model, ModelArchitecture):
        base = model
    else:
        try:
            base = catalog.architecture(model)
        except catalog.UnknownArchitectureError as err:
            raise SizingError(
                f"{err.message} (known: {', '.join(sorted(catalog.MODEL_ARCHITECTURES))}); "
                "give params_billion, layers, attention_heads, kv_heads and head_dim instead"
            ) from None
    given = {
        "params_billion": params_billion,
        "layers": layers,
        "attention_heads": attention_heads,
        "kv_heads": kv_heads,
        "head_dim": head_dim,
        "max_position_embeddings": max_position_embeddings,
    }
    values: dict[str, object] = {}
    for field in _ARCH_FIELDS:
        value = given[field] if given[field] is not None else getattr(base, field, None)
        if value is None:
            raise SizingError(
                f"{field} is required when no known model architecture is named "
                f"(known: {', '.join(sorted(catalog.MODEL_ARCHITECTURES))})"
            )
        values[field] = value
    name = base.name if base is not None else "model"
    params = values["params_billion"]
    if isinstance(params, bool) or not isinstance(params, (int, float)) or params <= 0:
        raise SizingError(f"params_billion of {name} must be a positive number, got {params!r}")
    heads = _positive_int(values["attention_heads"], "attention_heads")
    kv = _positive_int(values["kv_heads"], "kv_heads")
    if heads % kv:
        raise SizingError(
            f"{name} has {heads} attention heads, which is not a multiple of its {kv} KV heads"
        )
    return ModelArchitecture(
        name=name,
        params_billion=float(params),
        layers=_positive_int(values["layers"], "layers"),
        attention_heads=heads,
        kv_heads=kv,
        head_dim=_positive_int(values["head_dim"], "head_dim"),
        max_position_embeddings=_positive_int(
            values["max_position_embeddings"], "max_position_embeddings"
        ),
        native_dtype=base.native_dtype if base is not None else "bfloat16",
        notes=base.notes if base is not None else "",
    )


# --------------------------------------------------------------------------------------------
# GPU: the VRAM method
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MemoryNeed:
    """Accelerator memory one copy of a model needs, before it is split across GPUs.

    ``weights_gib = params × bytes(dtype)``;
    ``kv_cache_gib = seqs × len × 2 (K and V) × layers × kv_heads × head_dim × bytes(kv dtype)``;
    ``overhead_gib = overhead_fraction × (weights + KV)`` for activations, the CUDA context,
    the engine's CUDA graphs and allocator fragmentation.
    """

    model: str
    dtype: str
    kv_cache_dtype: str
    params_billion: float
    layers: int
    attention_heads: int
    kv_heads: int
    head_dim: int
    max_model_len: int
    max_concurrent_sequences: int
    overhead_fraction: float
    weights_gib: float
    kv_cache_gib: float
    overhead_gib: float
    total_gib: float

    def kv_cache_per_gpu_gib(self, tp_size: int) -> float:
        """KV cache one GPU holds at tensor parallel ``tp_size``.

        vLLM shards KV heads across GPUs; when ``tp_size`` exceeds the KV-head count each GPU
        still holds one whole KV head (replicated), so the cache stops shrinking at ``kv_heads``.
        """
        heads_per_gpu = max(self.kv_heads / tp_size, 1.0)
        return self.kv_cache_gib * heads_per_gpu / self.kv_heads

    def per_gpu_gib(self, tp_size: int) -> float:
        """Memory each of ``tp_size`` GPUs needs: its weight shard and KV share plus overhead."""
        shard = self.weights_gib / tp_size + self.kv_cache_per_gpu_gib(tp_size)
        return shard * (1 + self.overhead_fraction)

    def summary(self) -> str:
        return (
            f"{self.model}: weights {self.weights_gib:.1f} GiB ({self.params_billion:g}B x "
            f"{self.dtype}) + KV cache {self.kv_cache_gib:.1f} GiB ({self.max_concurrent_sequences}"
            f" seqs x {self.max_model_len} tokens, {self.kv_cache_dtype}) + overhead "
            f"{self.overhead_gib:.1f} GiB ({self.overhead_fraction:.0%}) = {self.total_gib:.1f} GiB"
        )


def gpu_memory_need(
    model: ModelArchitecture | str | None = None,
    *,
    dtype: str = "auto",
    kv_cache_dtype: str = "auto",
    max_model_len: int | None = None,
    max_concurrent_sequences: int = 1,
    overhead_fraction: float = 0.15,
    params_billion: float | None = None,
    layers: int | None = None,
    attention_heads: int | None = None,
    kv_heads: int | None = None,
    head_dim: int | None = None,
    max_position_embeddings: int | None = None,
) -> MemoryNeed:
    """The VRAM method for one copy of a model.

    ``model`` is a catalogued architecture (or its id); explicit numbers override its fields
    (see :func:`resolve_architecture`) and are required when ``model`` is None, except
    ``max_position_embeddings``, which then defaults to ``max_model_len``. ``dtype`` defaults to
    ``"auto"`` (the checkpoint's native dtype; bf16 for explicit shapes); ``kv_cache_dtype``
    defaults to ``"auto"`` (see :func:`kv_cache_bytes`); ``max_model_len`` defaults to the
    model's maximum context; ``max_concurrent_sequences`` defaults to 1; ``overhead_fraction``
    defaults to 0.15 (the usual 10–20 % rule of thumb).
    """
    if model is None and max_position_embeddings is None:
        if max_model_len is None:
            raise SizingError("max_model_len is required when no known model architecture is named")
        max_position_embeddings = max_model_len
    arch = resolve_architecture(
        model,
        params_billion=params_billion,
        layers=layers,
        attention_heads=attention_heads,
        kv_heads=kv_heads,
        head_dim=head_dim,
        max_position_embeddings=max_position_embeddings,
    )
    if _norm(dtype) == "auto":
        dtype = arch.native_dtype
    weight_bytes = bytes_per_param(dtype)
    kv_bytes = kv_cache_bytes(kv_cache_dtype, dtype)
    max_len = _positive_int(
        arch.max_position_embeddings if max_model_len is None else max_model_len,
        "max_model_len",
    )
    if max_len > arch.max_position_embeddings:
        # vLLM refuses a max_model_len beyond the model's derived maximum context.
        raise SizingError(
            f"max_model_len {max_len} exceeds {arch.name}'s maximum context of "
            f"{arch.max_position_embeddings} tokens"
        )
    seqs = _positive_int(max_concurrent_sequences, "max_concurrent_sequences")
    _check_overhead(overhead_fraction)

    weights = arch.params_billion * 1e9 * weight_bytes / GIB
    kv = seqs * max_len * 2 * arch.layers * arch.kv_heads * arch.head_dim * kv_bytes / GIB
    overhead = overhead_fraction * (weights + kv)
    return MemoryNeed(
        model=arch.name,
        dtype=_norm(dtype),
        kv_cache_dtype=_norm(kv_cache_dtype),
        params_billion=arch.params_billion,
        layers=arch.layers,
        attention_heads=arch.attention_heads,
        kv_heads=arch.kv_heads,
        head_dim=arch.head_dim,
        max_model_len=max_len,
        max_concurrent_sequences=seqs,
        overhead_fraction=float(overhead_fraction),
        weights_gib=weights,
        kv_cache_gib=kv,
        overhead_gib=overhead,
        total_gib=weights + kv + overhead,
    )


def _check_overhead(overhead_fraction: float) -> None:
    if (
        isinstance(overhead_fraction, bool)
        or not isinstance(overhead_fraction, (int, float))
        or not 0 <= overhead_fraction < 1
    ):
        raise SizingError(f"overhead_fraction must be from 0 up to 1, got {overhead_fraction!r}")


@dataclass(frozen=True)
class GpuFit:
    """How one copy of a model sits on a GPU instance."""

    model: str
    instance: InstanceType
    tp_size: int
    gpus_used: int
    per_gpu_gib: float
    usable_per_gpu_gib: float
    gpu_memory_utilization: float
    tasks_per_instance: int
    need: MemoryNeed

    @property
    def headroom_per_gpu_gib(self) -> float:
        """Usable memory left on each GPU used, which vLLM hands to extra KV-cache blocks."""
        return self.usable_per_gpu_gib - self.per_gpu_gib

    def summary(self) -> str:
        inst = self.instance
        return (
            f"{self.need.summary()}; on {inst.name}: tensor parallel {self.tp_size} "
            f"({self.gpus_used} of {inst.accelerator_count} {inst.accelerator_name}), "
            f"{self.per_gpu_gib:.1f} of {self.usable_per_gpu_gib:.1f} usable GiB per GPU "
            f"({self.gpu_memory_utilization:.0%} of {inst.accelerator_memory_gib:.1f}), "
            f"{self.tasks_per_instance} task(s) per instance"
        )


def tp_allowed(tp_size: int, attention_heads: int, kv_heads: int) -> bool:
    """Whether vLLM accepts tensor parallel ``tp_size`` for this head layout.

    vLLM (QKVParallelLinear, ModelConfig.verify_with_parallel_config) requires the attention heads
    to divide evenly across GPUs, and the KV heads either to divide evenly (tp < kv_heads) or to be
    replicated a whole number of times (tp >= kv_heads, tp a multiple of kv_heads).
    """
    if attention_heads % tp_size:
        return False
    return kv_heads % tp_size == 0 or tp_size % kv_heads == 0


def _powers_of_two_up_to(limit: int) -> list[int]:
    out, tp = [], 1
    while tp <= limit:
        out.append(tp)
        tp *= 2
    return out


def _usable_per_gpu(instance: InstanceType, gpu_memory_utilization: float) -> float:
    return instance.accelerator_memory_gib * gpu_memory_utilization


def _fit_at(
    need: MemoryNeed, instance: InstanceType, tp: int, gpu_memory_utilization: float
) -> GpuFit:
    return GpuFit(
        model=need.model,
        instance=instance,
        tp_size=tp,
        gpus_used=tp,
        per_gpu_gib=need.per_gpu_gib(tp),
        usable_per_gpu_gib=_usable_per_gpu(instance, gpu_memory_utilization),
        gpu_memory_utilization=gpu_memory_utilization,
        tasks_per_instance=instance.accelerator_count // tp,
        need=need,
    )


def _try_fit(
    need: MemoryNeed,
    instance: InstanceType,
    gpu_memory_utilization: float,
    attention_heads: int,
) -> GpuFit | None:
    usable = _usable_per_gpu(instance, gpu_memory_utilization)
    for tp in _powers_of_two_up_to(instance.accelerator_count):
        if tp_allowed(tp, attention_heads, need.kv_heads) and need.per_gpu_gib(tp) <= usable:
            return _fit_at(need, instance, tp, gpu_memory_utilization)
    return None


def _check_utilization(gpu_memory_utilization: float) -> float:
    if isinstance(gpu_memory_utilization, bool) or not 0 < gpu_memory_utilization <= 1:
        raise SizingError(
            f"gpu_memory_utilization must be above 0 and at most 1, got {gpu_memory_utilization!r}"
        )
    return float(gpu_memory_utilization)


def cheapest_fitting(
    need: MemoryNeed,
    *,
    gpu_memory_utilization: float = 0.9,
    attention_heads: int | None = None,
    limit: int = 3,
    candidates: Iterable[InstanceType] | None = None,
) -> tuple[GpuFit, ...]:
    """The ``limit`` cheapest GPU instance types (default 3) that hold one copy of the model.

    Ordered by approximate On-Demand price, then by fewer GPUs used. ``candidates`` defaults to
    every NVIDIA type in the catalog; ``gpu_memory_utilization`` defaults to 0.9 (vLLM's default).
    """
    util = _check_utilization(gpu_memory_utilization)
    heads = attention_heads if attention_heads is not None else need.attention_heads
    pool = catalog.gpu_instances() if candidates is None else tuple(candidates)
    fits = [f for i in pool if i.is_gpu and (f := _try_fit(need, i, util, heads)) is not None]
    fits.sort(key=lambda f: (f.instance.on_demand_usd_hour, f.tp_size, f.instance.name))
    return tuple(fits[:limit])


def _suggestions(fits: Sequence[GpuFit]) -> str:
    if not fits:
        return (
            "no catalog type fits; lower max_model_len or max_concurrent_sequences, use an fp8 "
            "KV cache, or quantise the weights"
        )
    parts = [
        f"{f.instance.name} (tp {f.tp_size}, ~${f.instance.on_demand_usd_hour:.2f}/h)" for f in fits
    ]
    return "cheapest catalog types that fit: " + ", ".join(parts)


def choose_tensor_parallel(
    need: MemoryNeed,
    instance: InstanceType | str,
    gpu_memory_utilization: float = 0.9,
    attention_heads: int | None = None,
    *,
    tensor_parallel_size: int | None = None,
) -> GpuFit:
    """Pick (or check) the tensor-parallel size for one copy of the model on ``instance``.

    Chooses the smallest power of two, at most the instance's GPU count, that vLLM accepts for the
    head layout (:func:`tp_allowed`) and for which each GPU's share fits in
    ``gpu_memory × gpu_memory_utilization`` (default 0.9, vLLM's default). ``attention_heads``
    defaults to the need's. ``tensor_parallel_size`` (default None: choose) checks a pinned size
    instead. Raises :class:`SizingError` naming the model, the GiB required, what the instance
    offers and the three cheapest catalog types that fit.
    """
    inst = catalog.instance(instance) if isinstance(instance, str) else instance
    util = _check_utilization(gpu_memory_utilization)
    heads = attention_heads if attention_heads is not None else need.attention_heads
    if not inst.is_gpu:
        raise SizingError(
            f"{inst.name} has {inst.accelerator_name} devices, not NVIDIA GPUs; "
            "serve the model on a GPU pool or size it with the Neuron fit"
        )
    usable = _usable_per_gpu(inst, util)
    offer = (
        f"{inst.name} offers {inst.accelerator_count} x {inst.accelerator_name} with "
        f"{usable:.1f} usable GiB each ({util:g} of {inst.accelerator_memory_gib:.1f} GiB)"
    )

    if tensor_parallel_size is not None:
        tp = _positive_int(tensor_parallel_size, "tensor_parallel_size")
        if tp > inst.accelerator_count:
            raise SizingError(
                f"tensor parallel size {tp} for {need.model} exceeds the "
                f"{inst.accelerator_count} GPU(s) of {inst.name}"
            )
        if not tp_allowed(tp, heads, need.kv_heads):
            raise SizingError(
                f"tensor parallel size {tp} does not divide {need.model}'s {heads} attention heads"
                f" and {need.kv_heads} KV heads the way vLLM requires"
            )
        if need.per_gpu_gib(tp) > usable:
            fits = cheapest_fitting(need, gpu_memory_utilization=util, attention_heads=heads)
            raise SizingError(
                f"{need.model} needs {need.per_gpu_gib(tp):.1f} GiB per GPU at tensor parallel {tp}"
                f" ({need.total_gib:.1f} GiB in total) but {offer}; {_suggestions(fits)}"
            )
        return _fit_at(need, inst, tp, util)

    fit = _try_fit(need, inst, util, heads)
    if fit is not None:
        return fit
    allowed = [
        tp
        for tp in _powers_of_two_up_to(inst.accelerator_count)
        if tp_allowed(tp, heads, need.kv_heads)
    ]
    best = max(allowed) if allowed else 1
    fits = cheapest_fitting(need, gpu_memory_utilization=util, attention_heads=heads)
    raise SizingError(
        f"{need.model} needs {need.total_gib:.1f} GiB (weights {need.weights_gib:.1f} + KV cache "
        f"{need.kv_cache_gib:.1f} + overhead {need.overhead_gib:.1f}), "
        f"{need.per_gpu_gib(best):.1f} GiB per GPU even at tensor parallel {best}, but {offer}"
        f" (tensor parallel sizes allowed by {heads} attention heads and {need.kv_heads} KV heads: "
        f"{', '.join(map(str, allowed)) or 'none'}); {_suggestions(fits)}"
    )


# --------------------------------------------------------------------------------------------
# Neuron
# --------------------------------------------------------------------------------------------

_NEURON_CORE_GIB = catalog.NEURON_DEVICE_MEMORY_GIB / catalog.NEURON_CORES_PER_DEVICE
# tp degrees the Neuron SDK's LLM guides compile for (NxD pads heads that do not divide evenly).
_NEURON_TP_DEGREES = (1, 2, 4, 8, 16, 24, 32)


@dataclass(frozen=True)
class NeuronFit:
    """How one precompiled model sits on an Inferentia2 / Trainium instance.

    Neuron devices are not an ECS resource: the task maps ``device_paths`` through
    ``linuxParameters.devices``. Because a task definition maps fixed paths, a second task on the
    same instance would map the same devices and fail to acquire its NeuronCores, so
    ``tasks_per_instance`` is 1; ``copies_per_instance`` says how many copies the instance's
    devices could hold (the rest are ``idle_devices``), to choose a smaller instance or a
    larger tp degree.
    """

    model: str
    instance: InstanceType
    tp_degree: int
    batch_size: int
    sequence_length: int
    dtype: str
    weights_gib: float
    kv_cache_gib: float
    overhead_gib: float
    total_gib: float
    per_core_gib: float
    hbm_per_core_gib: float
    devices_mapped: int
    device_paths: tuple[str, ...]
    copies_per_instance: int
    tasks_per_instance: int
    idle_devices: int

    @property
    def cores_used(self) -> int:
        return self.tp_degree

    def summary(self) -> str:
        inst = self.instance
        idle = f", {self.idle_devices} device(s) idle" if self.idle_devices else ""
        return (
            f"{self.model} (Neuron, tp {self.tp_degree}, batch {self.batch_size}, sequence "
            f"{self.sequence_length}, {self.dtype}): weights {self.weights_gib:.1f} GiB + KV cache "
            f"{self.kv_cache_gib:.1f} GiB + overhead {self.overhead_gib:.1f} GiB = "
            f"{self.total_gib:.1f} GiB; on {inst.name}: {self.tp_degree} of {inst.neuron_cores} "
            f"NeuronCores, {self.per_core_gib:.1f} of {self.hbm_per_core_gib:.0f} GiB per core, "
            f"maps {self.devices_mapped} of {inst.accelerator_count} device(s) "
            f"({', '.join(self.device_paths)}){idle}"
        )


def _neuron_need(
    arch: ModelArchitecture,
    tp: int,
    batch: int,
    seq: int,
    dtype: str,
    overhead_fraction: float,
) -> tuple[float, float, float, float]:
    weights = arch.params_billion * 1e9 * bytes_per_param(dtype) / GIB
    kv_bytes = kv_cache_bytes("auto", dtype)
    kv = batch * seq * 2 * arch.layers * arch.kv_heads * arch.head_dim * kv_bytes / GIB
    # Like vLLM, NxD replicates KV heads when the tp degree exceeds the KV-head count.
    kv_per_core = kv * max(arch.kv_heads / tp, 1.0) / arch.kv_heads
    per_core = (weights / tp + kv_per_core) * (1 + overhead_fraction)
    return weights, kv, overhead_fraction * (weights + kv), per_core


def neuron_fit(
    tp_degree: int,
    batch_size: int,
    sequence_length: int,
    instance: InstanceType | str,
    arch: ModelArchitecture | str,
    dtype: str = "bf16",
    *,
    overhead_fraction: float = 0.15,
) -> NeuronFit:
    """Check a precompiled Neuron model (its tp degree, batch size and sequence length) against
    an Inferentia2 / Trainium instance.

    Each chip has 2 NeuronCores and 32 GiB of HBM (16 GiB per core). The tp degree must not exceed
    the instance's NeuronCores; the task maps ``ceil(tp / 2)`` devices; each core used must hold
    its shard of the weights and KV cache plus ``overhead_fraction`` (default 0.15) for the
    runtime's scratchpad and the compiled graphs. ``dtype`` defaults to bf16, what optimum-neuron
    compiles by default.
    """
    inst = catalog.instance(instance) if isinstance(instance, str) else instance
    model = arch if isinstance(arch, ModelArchitecture) else resolve_architecture(arch)
    tp = _positive_int(tp_degree, "tp_degree")
    batch = _positive_int(batch_size, "batch_size")
    seq = _positive_int(sequence_length, "sequence_length")
    _check_overhead(overhead_fraction)
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
    if tp > inst.neuron_cores:
        bigger = sorted(
            (i for i in catalog.neuron_instances() if i.neuron_cores >= tp),
            key=lambda i: i.on_demand_usd_hour,
        )
        names = ", ".join(i.name for i in bigger[:3]) or "none in the catalog"
        raise SizingError(
            f"{model.name} was compiled for tp degree {tp} but {inst.name} has only "
            f"{inst.neuron_cores} NeuronCores; instances with at least {tp} cores: {names}"
        )

    weights, kv, overhead, per_core = _neuron_need(model, tp, batch, seq, dtype, overhead_fraction)
    if per_core > _NEURON_CORE_GIB:
        options: list[str] = []
        suggested: set[str] = set()
        for cand_tp in _NEURON_TP_DEGREES:
            if _neuron_need(model, cand_tp, batch, seq, dtype, overhead_fraction)[3] > (
                _NEURON_CORE_GIB
            ):
                continue
            for cand in sorted(catalog.neuron_instances(), key=lambda i: i.on_demand_usd_hour):
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
        tp_degree=tp,
        batch_size=batch,
        sequence_length=seq,
        dtype=_norm(dtype),
        weights_gib=weights,
        kv_cache_gib=kv,
        overhead_gib=overhead,
        total_gib=weights + kv + overhead,
        per_core_gib=per_core,
        hbm_per_core_gib=_NEURON_CORE_GIB,
        devices_mapped=devices,
        device_paths=tuple(f"/dev/neuron{i}" for i in range(devices)),
        copies_per_instance=inst.accelerator_count // devices,
        tasks_per_instance=1,
        idle_devices=inst.accelerator_count - devices,
    )


# --------------------------------------------------------------------------------------------
# Fargate
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FargateSize:
    """A task size on the Fargate grid; ``cpu`` in CPU units (1024 = 1 vCPU), memory in MiB."""

    cpu: int
    memory_mib: int
    needs_platform_1_4: bool
    usd_per_hour: float

    @property
    def vcpu(self) -> float:
        return self.cpu / 1024

    def summary(self) -> str:
        platform = ", needs platform 1.4.0+" if self.needs_platform_1_4 else ""
        return (
            f"Fargate {self.vcpu:g} vCPU / {self.memory_mib / 1024:g} GB (cpu {self.cpu}, memory "
            f"{self.memory_mib} MiB), ~${self.usd_per_hour:.4f}/h on ARM64{platform}"
        )


def _fargate_price(cpu: int, memory_mib: int) -> float:
    return (
        cpu / 1024 * catalog.FARGATE_ARM64_USD_PER_VCPU_HOUR
        + memory_mib / 1024 * catalog.FARGATE_ARM64_USD_PER_GB_HOUR
    )


def _fargate(cpu: int, memory_mib: int) -> FargateSize:
    return FargateSize(
        cpu=cpu,
        memory_mib=memory_mib,
        needs_platform_1_4=cpu >= FARGATE_PLATFORM_1_4_MIN_CPU,
        usd_per_hour=_fargate_price(cpu, memory_mib),
    )


def describe_fargate_memory(cpu: int) -> str:
    """The memory values Fargate accepts with ``cpu``, compactly (ranges with their step)."""
    values = FARGATE_TASK_SIZES[cpu]
    steps = {b - a for a, b in itertools.pairwise(values)}
    if len(values) > 3 and len(steps) == 1:
        return f"{values[0]}–{values[-1]} MiB in {steps.pop()} MiB steps"
    return ", ".join(str(v) for v in values) + " MiB"


def fargate_size(
    cpu: int | None = None,
    memory_mib: int | None = None,
    *,
    need_memory_mib: int | None = None,
    need_vcpu: float | None = None,
) -> FargateSize:
    """Validate a Fargate (cpu, memory) pair, or choose the cheapest size that meets a need.

    With both ``cpu`` and ``memory_mib``: the pair must be on the grid (and meet any need given).
    Otherwise the cheapest grid size at ARM64 list prices is chosen among those matching whichever
    of ``cpu`` / ``memory_mib`` is given and having at least ``need_memory_mib`` MiB and
    ``need_vcpu`` vCPUs. All arguments default to None; at least one must be given.
    """
    grid = FARGATE_TASK_SIZES
    if cpu is not None:
        cpu = _positive_int(cpu, "Fargate cpu")
        if cpu not in grid:
            raise SizingError(
                f"Fargate cpu {cpu} is not a valid task size; valid cpu values: "
                f"{', '.join(map(str, grid))}"
            )
    if memory_mib is not None:
        memory_mib = _positive_int(memory_mib, "Fargate memory")
        if cpu is not None and memory_mib not in grid[cpu]:
            raise SizingError(
                f"Fargate cpu {cpu} does not accept memory {memory_mib} MiB; valid memory for cpu "
                f"{cpu}: {describe_fargate_memory(cpu)}"
            )
        if cpu is None and not any(memory_mib in mems for mems in grid.values()):
            raise SizingError(
                f"Fargate memory {memory_mib} MiB is not on the Fargate grid for any cpu value"
            )
    need_mem = 0 if need_memory_mib is None else _non_negative(need_memory_mib, "need_memory_mib")
    need_cpu = 0.0 if need_vcpu is None else _non_negative(need_vcpu, "need_vcpu")
    if cpu is None and memory_mib is None and need_memory_mib is None and need_vcpu is None:
        raise SizingError("give Fargate cpu and memory, or the memory / vCPU the task needs")

    if cpu is not None and memory_mib is not None:
        if memory_mib < need_mem or cpu / 1024 < need_cpu:
            raise SizingError(
                f"Fargate cpu {cpu} / memory {memory_mib} MiB is smaller than the need of "
                f"{need_cpu:g} vCPU and {need_mem:g} MiB"
            )
        return _fargate(cpu, memory_mib)

    candidates = [
        (c, m)
        for c, mems in grid.items()
        for m in mems
        if (cpu is None or c == cpu)
        and (memory_mib is None or m == memory_mib)
        and m >= need_mem
        and c / 1024 >= need_cpu
    ]
    if not candidates:
        if cpu is not None:
            raise SizingError(
                f"Fargate cpu {cpu} offers at most {grid[cpu][-1]} MiB, less than the "
                f"{need_mem:g} MiB needed; valid memory for cpu {cpu}: "
                f"{describe_fargate_memory(cpu)}"
            )
        largest_cpu = max(grid)
        raise SizingError(
            f"no Fargate task size has {need_cpu:g} vCPU and {need_mem:g} MiB"
            + (f" with memory {memory_mib} MiB" if memory_mib is not None else "")
            + f"; the largest is cpu {largest_cpu} with {grid[largest_cpu][-1]} MiB"
        )
    best = min(candidates, key=lambda cm: (_fargate_price(*cm), cm[0], cm[1]))
    return _fargate(*best)


# --------------------------------------------------------------------------------------------
# Timeouts
# --------------------------------------------------------------------------------------------

ALB_IDLE_TIMEOUT_MIN, ALB_IDLE_TIMEOUT_MAX = ALB_IDLE_TIMEOUT_RANGE


@dataclass(frozen=True)
class IdleTimeout:
    """The ALB idle timeout: ``seconds`` and how it was reached."""

    seconds: int
    longest_generation_seconds: int
    margin_seconds: int
    source: str  # "derived", "clamped", "override" or "default"

    def summary(self) -> str:
        how = {
            "derived": f"longest generation {self.longest_generation_seconds} s + margin "
            f"{self.margin_seconds} s",
            "clamped": f"longest generation {self.longest_generation_seconds} s + margin, capped at"
            f" the ALB maximum {ALB_IDLE_TIMEOUT_MAX} s",
            "override": f"override, longest generation {self.longest_generation_seconds} s",
            "default": "ALB default, no routed service declares a generation time",
        }[self.source]
        return f"ALB idle timeout {self.seconds} s ({how})"


def _seconds_list(values: Iterable[object], what: str) -> list[int]:
    out = []
    for v in values:
        s = _non_negative(v, what)
        out.append(math.ceil(s))
    return out


def alb_idle_timeout(
    max_generation_seconds_list: Iterable[float],
    margin: int = 30,
    override: int | None = None,
) -> IdleTimeout:
    """ALB idle timeout for the services routed through one load balancer.

    A non-streaming completion sends nothing until it is done, so the connection must survive
    the longest generation any routed service allows: ``max(max_generation_seconds) + margin``
    (margin default 30 s), capped at the ALB maximum of 4000 s. With no services the ALB
    default (60 s) stands. ``override`` (default None) must be 1–4000 and not shorter than the
    longest generation.
    """
    gens = _seconds_list(max_generation_seconds_list, "max_generation_seconds")
    margin_s = math.ceil(_non_negative(margin, "idle timeout margin"))
    longest = max(gens, default=0)
    if override is not None:
        value = _positive_int(override, "idle timeout override")
        if value > ALB_IDLE_TIMEOUT_MAX:
            raise SizingError(
                f"idle timeout override {value} s is above the ALB maximum of "
                f"{ALB_IDLE_TIMEOUT_MAX} s"
            )
        if value < longest:
            raise SizingError(
                f"idle timeout override {value} s is shorter than the longest generation a routed "
                f"service allows ({longest} s); raise it to at least {longest} s or lower "
                "maxGenerationSeconds"
            )
        return IdleTimeout(value, longest, margin_s, "override")
    if not gens:
        return IdleTimeout(ALB_IDLE_TIMEOUT_DEFAULT, 0, margin_s, "default")
    if longest > ALB_IDLE_TIMEOUT_MAX:
        raise SizingError(
            f"the longest generation a routed service allows ({longest} s) exceeds the ALB's "
            f"maximum idle timeout of {ALB_IDLE_TIMEOUT_MAX} s; lower maxGenerationSeconds or "
            "require streaming for long generations"
        )
    wanted = max(longest + margin_s, ALB_IDLE_TIMEOUT_MIN)
    if wanted > ALB_IDLE_TIMEOUT_MAX:
        return IdleTimeout(ALB_IDLE_TIMEOUT_MAX, longest, margin_s, "clamped")
    return IdleTimeout(wanted, longest, margin_s, "derived")


@dataclass(frozen=True)
class DeregistrationDelay:
    seconds: int
    max_generation_seconds: int

    def summary(self) -> str:
        if self.seconds > self.max_generation_seconds:
            return (
                f"deregistration delay {self.seconds} s (covers the service's "
                f"{self.max_generation_seconds} s longest request and every connection the ALB "
                "may still hold open)"
            )
        return (
            f"deregistration delay {self.seconds} s (covers a {self.max_generation_seconds} s "
            "generation in flight when the task is deregistered)"
        )


def deregistration_delay(max_generation_seconds: float, margin: int = 0) -> DeregistrationDelay:
    """Target-group deregistration delay for a service.

    On a deploy or scale-in ECS deregisters the task and waits out this delay before SIGTERM;
    after SIGTERM only the container stopTimeout (at most 120 s on Fargate) is left. So the delay
    must be at least the service's longest generation (plus ``margin``, default 0 s), and the ALB
    allows at most 3600 s.
    """
    gen = math.ceil(_non_negative(max_generation_seconds, "max_generation_seconds"))
    value = gen + math.ceil(_non_negative(margin, "deregistration delay margin"))
    if value > TARGET_GROUP_DEREGISTRATION_DELAY_MAX:
        raise SizingError(
            f"a deregistration delay of {value} s (to cover a {gen} s generation) is above the "
            f"ALB maximum of {TARGET_GROUP_DEREGISTRATION_DELAY_MAX} s; lower maxGenerationSeconds"
        )
    return DeregistrationDelay(value, gen)


@dataclass(frozen=True)
class GracePeriod:
    seconds: int
    image_pull_seconds: float
    weight_load_seconds: float
    warmup_seconds: float
    safety_factor: float
    overridden: bool

    def summary(self) -> str:
        if self.overridden:
            return f"health-check grace period {self.seconds} s (override)"
        return (
            f"health-check grace period {self.seconds} s (image pull {self.image_pull_seconds:.0f}"
            f" s + weight load {self.weight_load_seconds:.0f} s + warm-up "
            f"{self.warmup_seconds:.0f} s, x {self.safety_factor:g})"
        )


def health_check_grace_period(
    image_gib: float,
    weights_gib: float,
    *,
    image_pull_mib_per_second: float = 100.0,
    weight_load_mib_per_second: float = 500.0,
    warmup_seconds: float = 120.0,
    safety_factor: float = 1.5,
    cap_seconds: int = 3600,
    override: int | None = None,
) -> GracePeriod:
    """ECS health-check grace period: how long a new task may fail health checks while loading.

    Estimate for a cold instance (the worst case a scale-out meets; prefer-cached pulls make warm
    instances faster): image pull at ``image_pull_mib_per_second`` (default 100 MiB/s: on the
    EC2 launch type the whole image is downloaded and its layers decompressed, single-threaded
    per layer, before the container starts) + weight load at ``weight_load_mib_per_second``
    (default 500 MiB/s: streaming from S3 through the gateway endpoint into accelerator
    memory) + ``warmup_seconds`` (default 120 s: engine memory profiling, CUDA-graph capture or
    Neuron model load, first request), times ``safety_factor`` (default 1.5). An estimate
    above ``cap_seconds`` (default 3600 s) is an error: such a model needs a warm pool or faster
    storage, or an explicit ``override`` (default None), which may be 0 up to ECS's maximum of
    2147483647 s.
    """
    if override is not None:
        if isinstance(override, bool) or not isinstance(override, (int, float)):
            raise SizingError(
                f"health-check grace period override must be seconds, got {override!r}"
            )
        if not 0 <= override <= ECS_GRACE_PERIOD_MAX or float(override) != int(override):
            raise SizingError(
                f"health-check grace period override {override!r} must be a whole number of "
                f"seconds from 0 to {ECS_GRACE_PERIOD_MAX}"
            )
        return GracePeriod(int(override), 0.0, 0.0, 0.0, 1.0, True)
    image = _non_negative(image_gib, "image_gib")
    weights = _non_negative(weights_gib, "weights_gib")
    pull_rate = _non_negative(image_pull_mib_per_second, "image_pull_mib_per_second")
    load_rate = _non_negative(weight_load_mib_per_second, "weight_load_mib_per_second")
    if pull_rate == 0 or load_rate == 0:
        raise SizingError("image pull and weight load rates must be above 0 MiB/s")
    warmup = _non_negative(warmup_seconds, "warmup_seconds")
    factor = _non_negative(safety_factor, "safety_factor")
    if factor < 1:
        raise SizingError(f"safety_factor must be at least 1, got {safety_factor!r}")
    pull_s = image * 1024 / pull_rate
    load_s = weights * 1024 / load_rate
    estimate = math.ceil((pull_s + load_s + warmup) * factor)
    if estimate > cap_seconds:
        raise SizingError(
            f"the estimated load time of {estimate} s (image pull {pull_s:.0f} s + weight load "
            f"{load_s:.0f} s + warm-up {warmup:.0f} s, x {factor:g}) is above the {cap_seconds} s "
            "cap; use a warm pool or faster weight storage, or set the grace period explicitly"
        )
    return GracePeriod(estimate, pull_s, load_s, warmup, factor, False)


# --------------------------------------------------------------------------------------------
# Rolling-deploy headroom
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DeployHeadroom:
    """What a rolling deploy of one service asks of its accelerator Auto Scaling group."""

    desired_count: int
    tasks_per_instance: int
    steady_instances: int
    peak_tasks: int
    peak_instances: int
    extra_instances: int
    asg_max_size: int
    min_running_tasks: int
    can_surge: bool
    can_replace_in_place: bool

    @property
    def needs_extra_instances(self) -> bool:
        return self.extra_instances > 0

    @property
    def fits_asg_max(self) -> bool:
        """Whether the ASG may grow to the instances the full surge wants."""
        return self.peak_instances <= self.asg_max_size

    @property
    def will_progress(self) -> bool:
        """Whether the deploy can make progress at all within the ASG maximum."""
        return self.can_surge or self.can_replace_in_place

    def summary(self) -> str:
        if not self.will_progress:
            return (
                f"rolling deploy of {self.desired_count} task(s) cannot progress: no room above "
                f"the ASG maximum of {self.asg_max_size} and minimum healthy keeps every old task"
            )
        if self.needs_extra_instances:
            note = "" if self.fits_asg_max else f" (ASG max {self.asg_max_size} limits the surge)"
            return (
                f"rolling deploy peaks at {self.peak_tasks} task(s) on {self.peak_instances} "
                f"instance(s): {self.extra_instances} more than the steady "
                f"{self.steady_instances}{note}"
            )
        return (
            f"rolling deploy fits the steady {self.steady_instances} instance(s) "
            f"(peak {self.peak_tasks} task(s))"
        )


def deploy_headroom(
    desired_count: int,
    tasks_per_instance: int,
    minimum_healthy_percent: int = 100,
    maximum_percent: int = 200,
    asg_max_size: int = 1,
) -> DeployHeadroom:
    """How many extra instances a rolling deploy needs, and whether it can run at all.

    ECS keeps at least ``ceil(desired × minimum_healthy_percent / 100)`` tasks running (default
    100 %) and runs at most ``floor(desired × maximum_percent / 100)`` (default 200 %). New tasks
    need free accelerators; a deploy progresses if the ASG can grow to hold at least one extra
    task (surge) or if ECS may stop an old task first (minimum healthy below 100 %). A GPU pool
    whose ASG max has no room and minimum healthy 100 % stalls every deploy. ``asg_max_size``
    defaults to 1.
    """
    desired = _non_negative_int(desired_count, "desired_count")
    per_instance = _positive_int(tasks_per_instance, "tasks_per_instance")
    min_pct = _non_negative(minimum_healthy_percent, "minimum_healthy_percent")
    max_pct = _non_negative(maximum_percent, "maximum_percent")
    asg_max = _non_negative_int(asg_max_size, "asg_max_size")
    if min_pct > 100:
        raise SizingError(f"minimum_healthy_percent must be at most 100, got {min_pct:g}")
    if max_pct < 100:
        raise SizingError(f"maximum_percent must be at least 100, got {max_pct:g}")

    min_running = math.ceil(desired * min_pct / 100)
    peak = max(math.floor(desired * max_pct / 100), desired)
    steady_instances = math.ceil(desired / per_instance)
    peak_instances = math.ceil(peak / per_instance)
    if steady_instances > asg_max:
        raise SizingError(
            f"{desired} task(s) at {per_instance} per instance need {steady_instances} "
            f"instance(s) but the ASG maximum is {asg_max}"
        )
    slots_at_max = asg_max * per_instance
    can_surge = peak > desired and slots_at_max > desired
    can_replace = min_running < desired
    return DeployHeadroom(
        desired_count=desired,
        tasks_per_instance=per_instance,
        steady_instances=steady_instances,
        peak_tasks=peak,
        peak_instances=peak_instances,
        extra_instances=peak_instances - steady_instances,
        asg_max_size=asg_max,
        min_running_tasks=min_running,
        can_surge=can_surge,
        can_replace_in_place=can_replace,
    )
