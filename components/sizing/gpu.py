"""GPU sizing (the VRAM method): weights + KV cache + overhead, then the tensor-parallel size."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

from ecs_inference.sizing import catalog
from ecs_inference.sizing.catalog import InstanceType, ModelArchitecture
from ecs_inference.sizing.lora import LoraNeed
from ecs_inference.sizing.memory import (
    GIB,
    AcceleratorFit,
    ModelMemory,
    SizingError,
    bytes_per_param,
    check_overhead,
    kv_cache_bytes,
    memory_sum,
    normalize_dtype,
    positive_int,
    resolve_architecture,
)

# --------------------------------------------------------------------------------------------
# GPU: the VRAM method
# --------------------------------------------------------------------------------------------


class NeedSettings(Protocol):
    """The model's settings the VRAM method reads (`models.input.ModelConfig`)."""

    @property
    def dtype(self) -> str: ...
    @property
    def kv_cache_dtype(self) -> str: ...
    @property
    def max_model_len(self) -> int | None: ...
    @property
    def max_concurrent_sequences(self) -> int: ...
    @property
    def memory_overhead_fraction(self) -> float: ...


@dataclass(frozen=True)
class MemoryNeed(ModelMemory):
    """Accelerator memory one copy of a model needs, before it is split across GPUs: the
    `model`'s architecture under its `settings`.

    ``weights_gib = params × bytes(dtype)``;
    ``kv_cache_gib = seqs × len × 2 (K and V) × layers × kv_heads × head_dim × bytes(kv dtype)``;
    ``overhead_gib = overhead_fraction × (weights + KV)`` for activations, the CUDA context,
    the engine's CUDA graphs and allocator fragmentation; plus, with LoRA adapters, the
    buffers vLLM preallocates for them on each GPU (``lora``, `sizing.lora`; None: no LoRA),
    exact allocations without overhead. ``total_gib`` counts them at one GPU.
    """

    model: ModelArchitecture
    settings: NeedSettings
    lora: LoraNeed | None = None

    @property
    def dtype(self) -> str:
        """The weights' dtype; "auto" is the checkpoint's native one."""
        dtype = normalize_dtype(self.settings.dtype)
        return normalize_dtype(self.model.native_dtype) if dtype == "auto" else dtype

    @property
    def kv_cache_dtype(self) -> str:
        return normalize_dtype(self.settings.kv_cache_dtype)

    @property
    def max_model_len(self) -> int:
        """The context each sequence holds; default the model's maximum."""
        given = self.settings.max_model_len
        return int(self.model.max_position_embeddings if given is None else given)

    @property
    def max_concurrent_sequences(self) -> int:
        return int(self.settings.max_concurrent_sequences)

    @property
    def overhead_fraction(self) -> float:
        return float(self.settings.memory_overhead_fraction)

    @property
    def total_gib(self) -> float:
        return super().total_gib + self.lora_per_gpu_gib(1)

    def with_lora(self, lora: LoraNeed) -> MemoryNeed:
        """This need with `lora`'s buffers on top."""
        return replace(self, lora=lora)

    def lora_per_gpu_gib(self, tp_size: int) -> float:
        """The LoRA buffers on each of ``tp_size`` GPUs (0 without LoRA)."""
        return self.lora.per_gpu_gib(tp_size) if self.lora is not None else 0.0

    def kv_cache_per_gpu_gib(self, tp_size: int) -> float:
        """KV cache one GPU holds at tensor parallel ``tp_size``.

        vLLM shards KV heads across GPUs; when ``tp_size`` exceeds the KV-head count each GPU
        still holds one whole KV head (replicated), so the cache stops shrinking at ``kv_heads``.
        """
        kv_heads = self.model.kv_heads
        return self.kv_cache_gib * max(kv_heads / tp_size, 1.0) / kv_heads

    def per_gpu_gib(self, tp_size: int) -> float:
        """Memory each of ``tp_size`` GPUs needs: its weight shard and KV share plus overhead."""
        shard = self.weights_gib / tp_size + self.kv_cache_per_gpu_gib(tp_size)
        return shard * (1 + self.overhead_fraction) + self.lora_per_gpu_gib(tp_size)

    def summary(self) -> str:
        lora = self.lora
        adapters = (
            f" + LoRA {lora.per_gpu_gib(1):.2f} GiB ({lora.slots.max_loras} slots x rank "
            f"{lora.slots.max_lora_rank})"
            if lora is not None
            else ""
        )
        return (
            f"{self.model.name}: weights {self.weights_gib:.1f} GiB "
            f"({self.model.params_billion:g}B x {self.dtype}) + KV cache "
            f"{self.kv_cache_gib:.1f} GiB ({self.max_concurrent_sequences}"
            f" seqs x {self.max_model_len} tokens, {self.kv_cache_dtype}) + overhead "
            f"{self.overhead_gib:.1f} GiB ({self.overhead_fraction:.0%}){adapters} = "
            f"{self.total_gib:.1f} GiB"
        )


def gpu_memory_need(
    model: ModelArchitecture | str | None, settings: NeedSettings, **shape: float | None
) -> MemoryNeed:
    """The VRAM method for one copy of a model under its `settings` (the model's config).

    ``model`` is a catalogued architecture (or its id); explicit numbers (``shape``) override
    its fields (see :func:`resolve_architecture`) and are required when ``model`` is None, except
    ``max_position_embeddings``, which then defaults to ``max_model_len``. A ``dtype`` of
    ``"auto"`` is the checkpoint's native dtype (bf16 for explicit shapes); for
    ``kv_cache_dtype`` see :func:`kv_cache_bytes`; ``max_model_len`` None is the model's
    maximum context; ``memory_overhead_fraction`` is the usual 10–20 % rule of thumb.
    """
    if model is None and shape.get("max_position_embeddings") is None:
        if settings.max_model_len is None:
            raise SizingError("max_model_len is required when no known model architecture is named")
        shape["max_position_embeddings"] = settings.max_model_len
    arch = resolve_architecture(model, **shape)
    given_len = settings.max_model_len
    max_len = positive_int(
        arch.max_position_embeddings if given_len is None else given_len, "max_model_len"
    )
    if max_len > arch.max_position_embeddings:
        # vLLM refuses a max_model_len beyond the model's derived maximum context.
        raise SizingError(
            f"max_model_len {max_len} exceeds {arch.name}'s maximum context of "
            f"{arch.max_position_embeddings} tokens"
        )
    seqs = positive_int(settings.max_concurrent_sequences, "max_concurrent_sequences")
    check_overhead(settings.memory_overhead_fraction)
    dtype = arch.native_dtype if normalize_dtype(settings.dtype) == "auto" else settings.dtype
    weights, kv, overhead = memory_sum(
        arch, dtype, settings.kv_cache_dtype, seqs, max_len, settings.memory_overhead_fraction
    )
    return MemoryNeed(weights, kv, overhead, arch, settings)


@dataclass(frozen=True)
class GpuFit(AcceleratorFit):
    """How one copy of a model sits on a GPU instance."""

    tp_size: int
    """Tensor parallel size: the GPUs one copy uses."""
    per_gpu_gib: float
    usable_per_gpu_gib: float
    gpu_memory_utilization: float
    need: MemoryNeed

    def summary(self) -> str:
        inst = self.instance
        return (
            f"{self.need.summary()}; on {inst.name}: tensor parallel {self.tp_size} "
            f"({self.tp_size} of {inst.accelerator_count} {inst.accelerator_name}), "
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


def _usable_per_gpu(instance: InstanceType, gpu_memory_utilization: float) -> float:
    return instance.accelerator_memory_gib * gpu_memory_utilization


def _fit_at(
    need: MemoryNeed, instance: InstanceType, tp: int, gpu_memory_utilization: float
) -> GpuFit:
    return GpuFit(
        model=need.model.name,
        instance=instance,
        tp_size=tp,
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
    for tp in _allowed(instance, attention_heads, need):
        if need.per_gpu_gib(tp) <= usable:
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
    heads = attention_heads if attention_heads is not None else need.model.attention_heads
    pool = catalog.gpu_instances() if candidates is None else tuple(candidates)
    fits = [f for i in pool if i.is_gpu and (f := _try_fit(need, i, util, heads)) is not None]
    fits.sort(key=lambda f: (f.instance.on_demand_usd_hour, f.tp_size, f.instance.name))
    return tuple(fits[:limit])


def _suggestions(
    need: MemoryNeed, inst: InstanceType, util: float, heads: int, pinned_tp: int | None = None
) -> str:
    """What to change: the model's settings that make it fit `inst` (each alone, `fit_changes`)
    first, then the cheapest catalog types that hold it as configured."""
    usable = _usable_per_gpu(inst, util)
    changes = fit_changes(need, usable, _allowed(inst, heads, need), pinned_tp=pinned_tp)
    fits = cheapest_fitting(need, gpu_memory_utilization=util, attention_heads=heads)
    parts = [
        f"{f.instance.name} (tp {f.tp_size}, ~${f.instance.on_demand_usd_hour:.2f}/h)" for f in fits
    ]
    bigger = (
        "cheapest catalog types that fit as configured: " + ", ".join(parts)
        if parts
        else "no catalog type fits as configured"
    )
    if not changes:
        return f"no setting of the model alone makes it fit {inst.name}; or else {bigger}"
    change = "; ".join(c.summary() for c in changes)
    return f"to fit {inst.name}, change one of: {change}; or else {bigger}"


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
    name, kv_heads = need.model.name, need.model.kv_heads
    heads = attention_heads if attention_heads is not None else need.model.attention_heads
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
        tp = positive_int(tensor_parallel_size, "tensor_parallel_size")
        if tp > inst.accelerator_count:
            raise SizingError(
                f"tensor parallel size {tp} for {name} exceeds the "
                f"{inst.accelerator_count} GPU(s) of {inst.name}"
            )
        if not tp_allowed(tp, heads, kv_heads):
            raise SizingError(
                f"tensor parallel size {tp} does not divide {name}'s {heads} attention heads"
                f" and {kv_heads} KV heads the way vLLM requires"
            )
        if need.per_gpu_gib(tp) > usable:
            raise SizingError(
                f"{name} needs {need.per_gpu_gib(tp):.1f} GiB per GPU at tensor parallel {tp}"
                f" ({need.total_gib:.1f} GiB in total{_lora_part(need)}) but {offer}; "
                f"{_suggestions(need, inst, util, heads, tp)}"
            )
        return _fit_at(need, inst, tp, util)

    fit = _try_fit(need, inst, util, heads)
    if fit is not None:
        return fit
    allowed = _allowed(inst, heads, need)
    best = max(allowed) if allowed else 1
    raise SizingError(
        f"{name} needs {need.total_gib:.1f} GiB (weights {need.weights_gib:.1f} + KV cache "
        f"{need.kv_cache_gib:.1f} + overhead {need.overhead_gib:.1f}"
        f"{_lora_part(need)}), "
        f"{need.per_gpu_gib(best):.1f} GiB per GPU even at tensor parallel {best}, but {offer}"
        f" (tensor parallel sizes allowed by {heads} attention heads and {kv_heads} KV heads: "
        f"{', '.join(map(str, allowed)) or 'none'}); {_suggestions(need, inst, util, heads)}"
    )


def _lora_part(need: MemoryNeed) -> str:
    """The LoRA buffers' share of a fit error's sum (empty without LoRA)."""
    lora = need.lora
    if lora is None:
        return ""
    return (
        f" + LoRA {lora.per_gpu_gib(1):.1f}: {lora.slots.max_loras} adapter slots at rank "
        f"{lora.slots.max_lora_rank}"
    )


def _allowed(instance: InstanceType, attention_heads: int, need: MemoryNeed) -> list[int]:
    """The tensor parallel sizes `instance` offers (powers of two up to its GPU count) that vLLM
    accepts for the head layout, smallest first."""
    powers = (2**k for k in range(instance.accelerator_count.bit_length()))
    return [tp for tp in powers if tp_allowed(tp, attention_heads, need.model.kv_heads)]


# --------------------------------------------------------------------------------------------
# What makes a misfit fit
# --------------------------------------------------------------------------------------------
# What makes a model that does not fit a GPU type fit it after all: the settings of the model
# that, each changed alone, bring its memory within the type's GPUs, with the numbers. Offered
# before bigger instance types: a smaller `maxConcurrentSequences` with an fp8 KV cache often fits
# the GPU the pool already has.
#
# The arithmetic is the VRAM method's (above): per GPU at tensor parallel `tp`,
# ``(weights / tp + KV share(tp)) × (1 + overhead)`` must stay within the usable memory, where the
# KV cache grows linearly with sequences × tokens and with the KV dtype's bytes. Each change is
# checked by that same inequality, so following one makes the model fit.

QUANTISED = (("fp8", "an FP8 checkpoint"), ("awq", "an AWQ int4 checkpoint"))
"""Weight dtypes to offer, smallest saving first, with what `weightsUri` must then hold."""
LENGTH_STEP = 256
"""`maxModelLen` suggestions are rounded down to a multiple of this (from 256 tokens)."""


@dataclass(frozen=True)
class FitChange:
    """Settings of `platform.models.<name>` that, changed together, make the model fit."""

    settings: dict[str, int | str] = field(default_factory=dict)
    """Config key -> the value to set."""
    note: str = ""
    """The numbers behind it."""

    def summary(self) -> str:
        change = " with ".join(f"{k} {v}" for k, v in self.settings.items())
        return f"{change} ({self.note})" if self.note else change


@dataclass(frozen=True)
class _Shape:
    """The need in the terms the changes vary."""

    need: MemoryNeed
    usable_gib: float
    tps: tuple[int, ...]

    def weights_gib(self, weight_bytes: float) -> float:
        return self.need.model.params_billion * 1e9 * weight_bytes / GIB

    def kv_per_token_gib(self, tp: int, kv_scale: float = 1.0) -> float:
        """KV cache per sequence-token one GPU holds at `tp` (KV heads split, at least one)."""
        need = self.need
        tokens = need.max_concurrent_sequences * need.max_model_len
        return need.kv_cache_per_gpu_gib(tp) / tokens * kv_scale

    def room_gib(self, tp: int, weight_bytes: float) -> float:
        """What one GPU has for its KV share once its weight shard is in."""
        # LoRA buffers are exact allocations: they come off the top, without overhead.
        usable = self.usable_gib - self.need.lora_per_gpu_gib(tp)
        return usable / (1 + self.need.overhead_fraction) - self.weights_gib(weight_bytes) / tp

    def fits(self, *, weight_bytes: float, kv_scale: float = 1.0, tokens: int) -> int | None:
        """The smallest tensor parallel size at which `tokens` (sequences × length) fit."""
        for tp in self.tps:
            need = self.kv_per_token_gib(tp, kv_scale) * tokens
            if need <= self.room_gib(tp, weight_bytes) * (1 - 1e-9):
                return tp
        return None

    def most_tokens(self, weight_bytes: float, kv_scale: float = 1.0) -> int:
        """The most sequence-tokens that fit at any of the tensor parallel sizes."""
        best = 0
        for tp in self.tps:
            room = self.room_gib(tp, weight_bytes) * (1 - 1e-9)
            if room > 0:
                best = max(best, math.floor(room / self.kv_per_token_gib(tp, kv_scale)))
        return best


def fit_changes(
    need: MemoryNeed,
    usable_per_gpu_gib: float,
    tensor_parallel_sizes: Sequence[int],
    *,
    pinned_tp: int | None = None,
) -> list[FitChange]:
    """The changes that make `need` fit GPUs of `usable_per_gpu_gib` at one of
    `tensor_parallel_sizes` (those the type and the heads allow; with `pinned_tp`, the size
    the config pins), each alone: fewer sequences, an fp8 KV cache (with fewer sequences if
    needed), a shorter context, quantised weights, another tensor parallel size. Empty when
    none does (the weights alone are too big)."""
    tps = (pinned_tp,) if pinned_tp is not None else tuple(tensor_parallel_sizes)
    shape = _Shape(need, usable_per_gpu_gib, tps)
    wbytes = bytes_per_param(need.dtype)
    kv_bytes = kv_cache_bytes(need.kv_cache_dtype, need.dtype)
    seqs, length = need.max_concurrent_sequences, need.max_model_len
    changes: list[FitChange] = []
    most = shape.most_tokens(wbytes)
    if 1 <= most // length < seqs:
        n = most // length
        changes.append(
            FitChange({"maxConcurrentSequences": n}, f"from {seqs}: KV cache {_kv(need, n)}")
        )
    if kv_bytes > 1:
        scale = 1 / kv_bytes
        if shape.fits(weight_bytes=wbytes, kv_scale=scale, tokens=seqs * length):
            changes.append(FitChange({"kvCacheDtype": "fp8"}, f"KV cache {_kv(need, seqs, scale)}"))
        elif (n := shape.most_tokens(wbytes, scale) // length) >= 1:
            changes.append(
                FitChange(
                    {"kvCacheDtype": "fp8", "maxConcurrentSequences": n},
                    f"KV cache {_kv(need, n, scale)}",
                )
            )
    shorter = most // seqs
    if shorter >= LENGTH_STEP:
        shorter -= shorter % LENGTH_STEP
    if 1 <= shorter < length:
        changes.append(FitChange({"maxModelLen": shorter}, f"from {length} tokens"))
    for dtype, checkpoint in QUANTISED:
        smaller = bytes_per_param(dtype)
        if smaller < wbytes and shape.fits(weight_bytes=smaller, tokens=seqs * length):
            weights = shape.weights_gib(smaller)
            changes.append(
                FitChange(
                    {"dtype": dtype}, f"{checkpoint} at weightsUri: weights {weights:.1f} GiB"
                )
            )
            break
    if pinned_tp is not None:
        other = _Shape(need, usable_per_gpu_gib, tuple(t for t in tensor_parallel_sizes))
        tp = other.fits(weight_bytes=wbytes, tokens=seqs * length)
        if tp is not None and tp != pinned_tp:
            changes.append(FitChange({"tensorParallelSize": tp}, f"from {pinned_tp}"))
    return changes


def _kv(need: MemoryNeed, seqs: int, scale: float = 1.0) -> str:
    kv = need.kv_cache_gib * seqs / need.max_concurrent_sequences * scale
    return f"{need.kv_cache_gib:.1f} -> {kv:.1f} GiB"
