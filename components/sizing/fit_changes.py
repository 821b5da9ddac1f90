"""What makes a model that does not fit a GPU type fit it after all: the settings of the model
that, each changed alone, bring its memory within the type's GPUs, with the numbers. Offered
before bigger instance types: a smaller `maxConcurrentSequences` with an fp8 KV cache often fits
the GPU the pool already has.

The arithmetic is the VRAM method's (`sizing.gpu`): per GPU at tensor parallel `tp`,
``(weights / tp + KV share(tp)) × (1 + overhead)`` must stay within the usable memory, where the
KV cache grows linearly with sequences × tokens and with the KV dtype's bytes. Each change is
checked by that same inequality, so following one makes the model fit.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from ecs_inference.sizing.catalog import ModelArchitecture
from ecs_inference.sizing.memory import GIB, bytes_per_param, kv_cache_bytes


class MemoryNeed(Protocol):
    """What the changes read of `sizing.gpu.MemoryNeed`."""

    @property
    def dtype(self) -> str: ...
    @property
    def kv_cache_dtype(self) -> str: ...
    @property
    def model(self) -> ModelArchitecture: ...
    @property
    def max_model_len(self) -> int: ...
    @property
    def max_concurrent_sequences(self) -> int: ...
    @property
    def overhead_fraction(self) -> float: ...
    @property
    def kv_cache_gib(self) -> float: ...

    def kv_cache_per_gpu_gib(self, tp_size: int) -> float: ...

    def lora_per_gpu_gib(self, tp_size: int) -> float: ...


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


def describe(changes: Sequence[FitChange], instance: str) -> str:
    """The changes as the clause of a sizing error."""
    if not changes:
        return f"no setting of the model alone makes it fit {instance}"
    return f"to fit {instance}, change one of: " + "; ".join(c.summary() for c in changes)
