"""Cross-encoder scoring with the Rust tokenizer and ONNX Runtime, batched by length.

Why it is shaped this way (2 vCPU Fargate tasks, ~22M-parameter BERT-class models):
- The forward pass is GEMM-bound, so the only large wins left once the graph is fused are
  doing fewer FLOPs: pairs are sorted by token length and cut into chunks that are padded to
  their own longest member, instead of padding a whole request to its longest document.
- One ONNX session owned by one worker thread (`batcher.MicroBatcher`). By default that thread
  fans a batch's chunks out to one single-threaded run per vCPU (ORT sessions accept concurrent
  runs): small, cache-resident runs without a thread barrier after every operator, which on
  2 vCPUs beats splitting each operator across threads ("intra" mode, also available).
- Truncation is the tokenizer's `longest_first` pair strategy at the model's max length, the
  same one Hugging Face tokenizers apply for `truncation=True`, so scores match the reference.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from app.kernels import runtime_report
from contracts import reranker as c

#: Within a chunk, stop adding (shorter) pairs once they would carry more than this share of
#: padding relative to the chunk's longest pair; a new, shorter chunk is cheaper then.
PAD_SLACK = 0.2
#: Chunks are not split below this many rows: tiny GEMMs lose more to per-run overhead than
#: they save in padding.
MIN_CHUNK_ROWS = 8


@dataclass(frozen=True)
class ModelInfo:
    """Facts from reranker.json that serving (and FLOP accounting) needs."""

    max_length: int
    activation: str
    hidden_size: int
    num_layers: int
    intermediate_size: int
    variants: dict[str, str]
    pad_token_id: int = 0
    """Id padded rows carry: RoBERTa-style models derive position ids from it."""
    #: The precision prepare.py chose (its quality gate), served for MODEL_VARIANT=auto.
    default_variant: str = "fp32"
    #: Per variant, the op counts prepare.py recorded (in the file and as ORT runs them).
    recorded_kernels: dict[str, dict] = field(default_factory=dict)

    @classmethod
    def load(cls, model_dir: Path) -> ModelInfo:
        """Read `model_dir/reranker.json` (written by prepare.py)."""
        path = model_dir / c.MODEL_CONFIG_FILE
        doc = json.loads(path.read_text())
        if int(doc.get("num_labels", 1)) != 1:
            raise ValueError(f"{path}: a re-ranker needs a single-logit head")
        return cls(
            max_length=int(doc["max_length"]),
            activation=str(doc.get("activation", "sigmoid")),
            hidden_size=int(doc["hidden_size"]),
            num_layers=int(doc["num_layers"]),
            intermediate_size=int(doc["intermediate_size"]),
            variants=dict(doc.get("variants", {"fp32": c.MODEL_VARIANTS["fp32"]})),
            pad_token_id=int(doc.get("pad_token_id", 0)),
            default_variant=str(doc.get("precision", {}).get("default", "fp32")),
            recorded_kernels=dict(doc.get("precision", {}).get("kernels", {})),
        )

    @property
    def shape(self) -> c.EncoderShape:
        """The encoder's cost shape (for admission in work tokens and FLOP accounting)."""
        return c.EncoderShape(self.hidden_size, self.num_layers, self.intermediate_size)


def plan_chunks(
    lengths_desc: Sequence[int] | np.ndarray,
    max_rows: int,
    max_tokens: int,
    slack: float = PAD_SLACK,
) -> list[tuple[int, int]]:
    """Cut pairs sorted by descending length into [start, end) chunks.

    A chunk is padded to its first (longest) member. It closes when it reaches `max_rows`, when
    one more row would exceed `max_tokens` padded tokens, or (once it has MIN_CHUNK_ROWS rows) when
    the next pair is more than `slack` shorter than the chunk's padded length.
    """
    chunks: list[tuple[int, int]] = []
    n = len(lengths_desc)
    start = 0
    while start < n:
        pad = max(1, int(lengths_desc[start]))
        cap = max(1, min(max_rows, max_tokens // pad))
        end = start + 1
        while end < n and end - start < cap:
            if end - start >= MIN_CHUNK_ROWS and lengths_desc[end] < pad * (1.0 - slack):
                break
            end += 1
        chunks.append((start, end))
        start = end
    return chunks


def encoder_flops(lengths: Sequence[int], hidden: int, layers: int, intermediate: int) -> float:
    """Useful (unpadded) FLOPs of a BERT encoder over sequences of these lengths
    (`contract.EncoderShape.sequence_flops` summed)."""
    shape = c.EncoderShape(hidden=hidden, layers=layers, intermediate=intermediate)
    return sum(shape.sequence_flops(int(n)) for n in lengths)


def activate(logits: np.ndarray, activation: str) -> np.ndarray:
    """Map raw logits to relevance scores (`sigmoid` like CrossEncoder, or `none`)."""
    logits = logits.astype(np.float64, copy=False)
    if activation == "sigmoid":
        return 1.0 / (1.0 + np.exp(-logits))
    return logits


@dataclass
class BatchStats:
    """What one `Engine.score` call did (for metrics and the benchmark)."""

    pairs: int = 0
    runs: int = 0
    real_tokens: int = 0
    padded_tokens: int = 0
    seconds: float = 0.0


class Engine:
    """Owns the tokenizer and the ONNX session. Not thread-safe: one caller thread at a time."""

    def __init__(
        self,
        model_dir: Path,
        variant: str = "fp32",
        *,
        threads: int = 1,
        parallelism: str = "chunks",
        max_length: int | None = None,
        max_batch: int = 256,
        max_batch_tokens: int = 256,
    ) -> None:
        """Load `model_dir` (see prepare.py).

        `variant` "auto" serves the bundle's recorded default. Defaults: fp32, 1 thread, chunk
        parallelism, the model's max length, runs of <= 256 rows and <= 256 padded tokens (a
        single longer pair still runs alone).
        """
        import onnxruntime as ort
        from tokenizers import Tokenizer

        self.info = ModelInfo.load(model_dir)
        if variant == c.VARIANT_AUTO:
            variant = self.info.default_variant
        if variant not in self.info.variants:
            raise ValueError(
                f"variant {variant!r} not in {model_dir} (has {sorted(self.info.variants)})"
            )
        self.max_length = min(max_length or self.info.max_length, self.info.max_length)
        self.max_batch = max_batch
        self.max_batch_tokens = max_batch_tokens
        self.tokenizer = Tokenizer.from_file(str(model_dir / c.TOKENIZER_FILE))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(self.max_length, strategy="longest_first")

        opts = ort.SessionOptions()
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        if parallelism not in ("chunks", "intra"):
            raise ValueError(f"parallelism must be 'chunks' or 'intra', got {parallelism!r}")
        opts.intra_op_num_threads = threads if parallelism == "intra" else 1
        opts.inter_op_num_threads = 1
        # Spinning workers would keep burning the vCPUs between runs that the event loop and
        # the tokenizer need; with batched runs the wake-up latency is negligible.
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session = ort.InferenceSession(
            str(model_dir / self.info.variants[variant]),
            sess_options=opts,
            providers=["CPUExecutionProvider"],
        )
        self.input_names = {i.name for i in self.session.get_inputs()}
        self.variant = variant
        #: What runs (providers, quantised ops, CPU flags, MLAS int8 kernel): /health, the log.
        self.kernels = runtime_report(
            variant,
            self.info.recorded_kernels.get(variant, {}),
            self.session.get_providers(),
            ort.__version__,
        )
        self._pool = (
            ThreadPoolExecutor(threads, thread_name_prefix="onnx-run")
            if parallelism == "chunks" and threads > 1
            else None
        )

    def close(self) -> None:
        """Stop the chunk thread pool (if any)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True)

    def tokenize(self, pairs: Sequence[tuple[str, str]]) -> list:
        """Encode (query, document) pairs with special tokens, truncated, unpadded."""
        return self.tokenizer.encode_batch(list(pairs), add_special_tokens=True)

    def truncate(self, texts: Sequence[str], max_tokens: int) -> list[str]:
        """Each text cut after its first `max_tokens` tokens (Cohere v2's `max_tokens_per_doc`),
        at the character where the last kept token ends."""
        encodings = self.tokenizer.encode_batch(list(texts), add_special_tokens=False)
        return [
            text if len(enc.offsets) <= max_tokens else text[: enc.offsets[max_tokens - 1][1]]
            for text, enc in zip(texts, encodings, strict=True)
        ]

    def score(
        self, pairs: Sequence[tuple[str, str]], stats: BatchStats | None = None
    ) -> np.ndarray:
        """Return one relevance score per pair, in input order."""
        return self.score_encoded(self.tokenize(pairs), stats)

    def score_encoded(self, encodings: Sequence, stats: BatchStats | None = None) -> np.ndarray:
        """Return one relevance score per encoding from `tokenize`, in input order."""
        t0 = time.perf_counter()
        n_pairs = len(encodings)
        lengths = np.fromiter((len(e.ids) for e in encodings), dtype=np.int64, count=n_pairs)
        order = np.argsort(-lengths, kind="stable")
        sorted_lengths = lengths[order]
        logits = np.empty(n_pairs, dtype=np.float32)

        def run(span: tuple[int, int]) -> int:
            start, end = span
            idx = order[start:end]
            width = int(sorted_lengths[start])
            ids = np.full((end - start, width), self.info.pad_token_id, dtype=np.int64)
            types = np.zeros_like(ids)
            mask = np.zeros_like(ids)
            for row, i in enumerate(idx):
                enc = encodings[i]
                n = len(enc.ids)
                ids[row, :n] = enc.ids
                types[row, :n] = enc.type_ids
                mask[row, :n] = 1
            feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
            feeds = {k: v for k, v in feeds.items() if k in self.input_names}
            logits[idx] = np.asarray(self.session.run(["logits"], feeds)[0])[:, 0]
            return ids.size

        chunks = plan_chunks(sorted_lengths, self.max_batch, self.max_batch_tokens)
        if self._pool is not None and len(chunks) > 1:
            padded_sizes = list(self._pool.map(run, chunks))
        else:
            padded_sizes = [run(span) for span in chunks]
        runs, padded = len(chunks), sum(padded_sizes)
        if stats is not None:
            stats.pairs += n_pairs
            stats.runs += runs
            stats.real_tokens += int(lengths.sum())
            stats.padded_tokens += padded
            stats.seconds += time.perf_counter() - t0
        return activate(logits, self.info.activation)

    def flops(self, lengths: Sequence[int]) -> float:
        """Useful encoder FLOPs for sequences of these token lengths."""
        i = self.info
        return encoder_flops(lengths, i.hidden_size, i.num_layers, i.intermediate_size)
