"""GPU memory vLLM sets aside for LoRA adapters, from the base model's shape.

vLLM 0.33.0 (`--enable-lora`) wraps every supported layer of the base model when it loads it
and preallocates, per layer, one stacked A and B buffer per projection with a slot for each of
`--max-loras` adapters at `--max-lora-rank` (`vllm/lora/layers/base_linear.py`,
`column_parallel_linear.py`, `row_parallel_linear.py`, `vocab_parallel_embedding.py`,
`logits_processor.py`: `create_lora_weights`). The buffers are zeros of the LoRA dtype (the
model's activations dtype unless `--lora-dtype` says otherwise) and stay allocated whatever the
adapters' own ranks: they come out of the memory vLLM would otherwise give the KV cache.

Per slot, on each of `tp` GPUs (the default, not `--fully-sharded-loras`), with rank `r`,
hidden size `h`, query width `q = heads x head_dim`, key/value width per GPU
`kv = max(kv_heads / tp, 1) x head_dim`, intermediate size `i` and vocabulary `V`:

- `qkv_proj` (column parallel, 3 slices): A `3 x r x h`, B `r x (q / tp + 2 kv)`
- `o_proj` (row parallel): A `r x q / tp`, B `h x r`
- `gate_up_proj` (column parallel, 2 slices): A `2 x r x h`, B `r x 2 i / tp`
- `down_proj` (row parallel): A `r x i / tp`, B `h x r`
- once per model: `embed_tokens` A `V x r` + B `h x r`; `lm_head` A `r x h` + B `V x r`

so bytes per GPU = `max_loras x bytes(dtype) x r x (layers x (7 h + (2 q + 3 i) / tp + 2 kv) +
2 (V + h))`. Dense decoder models only: a mixture-of-experts model adds per-expert buffers
(`fused_moe.py`) this formula does not count, so its shape is not in `SHAPES`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from pydantic import Field

from ecs_inference.config.base import Section
from ecs_inference.sizing.catalog import ModelArchitecture
from ecs_inference.sizing.memory import GIB, SizingError

MAX_LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)
"""The `--max-lora-rank` values vLLM 0.33.0 accepts (`vllm/config/lora.py` `MaxLoRARanks`;
also the flag's `choices` in `contracts/flags/vllm-0.33.0.json`)."""
DEFAULT_MAX_LORA_RANK = 16
"""vLLM 0.33.0's `LoRAConfig.max_lora_rank` default."""
DEFAULT_MAX_LORAS = 1
"""vLLM 0.33.0's `LoRAConfig.max_loras` default (adapters in one batch)."""


class TransformerShape(Section):
    """A transformer's widths beyond the VRAM method's shape (its `config.json`): what the LoRA
    buffers depend on, and what an encoder's size follows from. None: not given."""

    hidden_size: int | None = Field(None, gt=0, le=65536)
    """Model width (`hidden_size`); sizes LoRA buffers (vllm `adapters`) with the next two."""
    intermediate_size: int | None = Field(None, gt=0, le=262144)
    """MLP width (`intermediate_size`); sizes LoRA buffers."""
    vocab_size: int | None = Field(None, gt=0, le=1_048_576)
    """Vocabulary (`vocab_size`); sizes the embedding and lm_head LoRA buffers."""

    def widths(self) -> tuple[int, int, int] | None:
        """(hidden, intermediate, vocabulary) when all three are given, else None."""
        h, i, v = self.hidden_size, self.intermediate_size, self.vocab_size
        return None if h is None or i is None or v is None else (h, i, v)


def _shape(hidden_size: int, intermediate_size: int, vocab_size: int) -> TransformerShape:
    return TransformerShape(
        hidden_size=hidden_size, intermediate_size=intermediate_size, vocab_size=vocab_size
    )


# config.json of each repository (meta-llama/*, Qwen/*-Instruct, google/*, microsoft/*); the
# catalog's dense architectures whose shape is published. Mixture-of-experts models are absent
# on purpose (module docstring).
SHAPES: dict[str, TransformerShape] = {
    "llama-3.2-1b": _shape(2048, 8192, 128256),
    "llama-3.2-3b": _shape(3072, 8192, 128256),
    "llama-3-8b": _shape(4096, 14336, 128256),
    "llama-3.1-8b": _shape(4096, 14336, 128256),
    "llama-3-70b": _shape(8192, 28672, 128256),
    "llama-3.1-70b": _shape(8192, 28672, 128256),
    "llama-3.3-70b": _shape(8192, 28672, 128256),
    "llama-2-7b": _shape(4096, 11008, 32000),
    "llama-2-13b": _shape(5120, 13824, 32000),
    "llama-2-70b": _shape(8192, 28672, 32000),
    "qwen2.5-7b": _shape(3584, 18944, 152064),
    "qwen2.5-14b": _shape(5120, 13824, 152064),
    "qwen2.5-32b": _shape(5120, 27648, 152064),
    "qwen2.5-72b": _shape(8192, 29568, 152064),
    "gemma-2-9b": _shape(3584, 14336, 256000),
    "gemma-2-27b": _shape(4608, 36864, 256000),
    "phi-3-mini-4k": _shape(3072, 8192, 32064),
    "phi-3-mini-128k": _shape(3072, 8192, 32064),
}


class LoraSlots(Protocol):
    """The adapters a service serves and the GPU slots vLLM keeps for them
    (`engines.vllm.VllmSettings`)."""

    @property
    def adapters(self) -> Sequence[object]: ...
    @property
    def max_loras(self) -> int: ...
    @property
    def max_lora_rank(self) -> int: ...


@dataclass(frozen=True)
class LoraNeed:
    """The adapters' buffers of one service: its `slots` (`max_loras` at `max_lora_rank`) on
    the base `model`'s shape (from the VRAM method) and `shape` (from `SHAPES` or the service's
    `parameters`), `dtype_bytes` per element (2: the 16-bit activations)."""

    slots: LoraSlots
    model: ModelArchitecture
    shape: tuple[int, int, int]
    """(hidden, intermediate, vocabulary): `TransformerShape.widths`."""
    dtype_bytes: int = 2

    def per_gpu_gib(self, tp_size: int) -> float:
        """GiB of LoRA buffers on each of `tp_size` GPUs (module docstring)."""
        h, i, vocab = self.shape
        m = self.model
        q = m.attention_heads * m.head_dim
        kv = max(m.kv_heads / tp_size, 1.0) * m.head_dim
        per_layer = 7 * h + (2 * q + 3 * i) / tp_size + 2 * kv
        elements = self.slots.max_lora_rank * (m.layers * per_layer + 2 * (vocab + h))
        return self.slots.max_loras * self.dtype_bytes * elements / GIB

    def summary(self, tp_size: int) -> str:
        """One decision line: what the adapters take per GPU."""
        slots = self.slots
        return (
            f"LoRA: {len(slots.adapters)} adapter(s), {slots.max_loras} GPU slot(s) at rank "
            f"{slots.max_lora_rank} take {self.per_gpu_gib(tp_size):.2f} GiB per GPU from the "
            f"KV cache (vLLM preallocates A/B buffers for every slot in all {self.model.layers} "
            "layers)"
        )


def lora_shape(architecture: str | None, given: object) -> tuple[int, int, int]:
    """The LoRA shape's widths: `given` (the service's `parameters`) when it has all three,
    else the catalogued ones. Raises `SizingError` when neither is known."""
    if isinstance(given, TransformerShape) and (widths := given.widths()) is not None:
        return widths
    if architecture is not None and (found := SHAPES.get(architecture.strip().lower())):
        widths = found.widths()
        assert widths is not None
        return widths
    known = ", ".join(sorted(SHAPES))
    raise SizingError(
        f"the LoRA buffers of {architecture or 'this model'} cannot be sized: give "
        f"parameters.hiddenSize, parameters.intermediateSize and parameters.vocabSize (from its "
        f"config.json; dense models only), or use an architecture whose shape is known ({known})"
    )
