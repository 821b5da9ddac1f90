"""Turn a Hugging Face cross-encoder directory into the ONNX bundle the re-ranker image serves.

Run at build/prepare time (CI or a workstation with torch), never in the container: the runtime
image carries ONNX Runtime + tokenizers only, so torch must not be needed to start a task. The
output directory is what gets uploaded to the S3 prefix named by MODEL_S3_URI:

    model.onnx        fp32, graph-fused for ONNX Runtime (attention, layer norm, GELU fusions)
    model.int8.onnx   dynamic int8 quantisation of the fused fp32 graph (precision.py), unless
                      --precision fp32
    tokenizer.json    the fast (Rust `tokenizers`) tokenizer, so serving needs no transformers
    reranker.json     max_length, inputs, padding id, activation and shape facts the service and
                      benchmarks read, `stack_model` (the `model` section of the stack file), and
                      the default precision with the quality gate's figures (precision.py)

Usage:
    python images/reranker/prepare.py --model-dir ./cross-encoder --out ./bundle [--precision
        auto|fp32|int8] [--judge-queries N]

The encoder families of `contracts.reranker.FAMILIES` (BERT, XLM-RoBERTa, ModernBERT,
DeBERTa-v2/v3, ELECTRA) with a one-logit sequence-classification head are supported. Steps, in
order: load (transformers), export (TorchScript ONNX exporter), fuse (ONNX Runtime's transformer
fusions, kept only when the check passes on the fused graph), check against torch, write the
variants (fp32, and int8 quantised from the checked fp32 graph so it starts from a graph known to
match torch), the tokenizer, reranker.json, then the precision choice (`precision`).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any

# The repository root, for the stdlib contracts the service shares (contracts/reranker.py).
ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import precision  # noqa: E402

from contracts.reranker import (  # noqa: E402
    FAMILIES,
    MODEL_CONFIG_FILE,
    MODEL_VARIANTS,
    TOKENIZER_FILE,
    family_problem,
)

LOG = logging.getLogger("reranker.prepare")
#: Opset 17 has LayerNormalization as a standard op; ORT 1.16+ runs it everywhere we deploy.
DEFAULT_OPSET = 17
#: Largest fp32 |ONNX - torch| logit difference accepted by the built-in check.
FP32_TOLERANCE = 1e-3
#: The check's longest pair is cut to at most this many tokens: enough to reach the position
#: table's end for the usual 512-token models without an 8k-token eager attention in torch.
CHECK_MAX_TOKENS = 512
_CHECK_PAIRS = [
    ("what is the capital of france?", "Paris is the capital and largest city of France."),
    ("what is the capital of france?", "The Eiffel Tower was completed in 1889."),
    ("how do fargate tasks pull images?", "Private subnets need ECR interface endpoints or NAT."),
    # Longer than any max length checked: truncation, the last positions and padding run.
    ("long document", " ".join(["the re-ranker scores every position of a long document"] * 400)),
]


def usable_positions(hf_config: Any) -> int:
    """Longest input the model's position table embeds: `max_position_embeddings`, less the
    rows RoBERTa-style models reserve before their first position (`pad_token_id + 1`)."""
    positions = int(hf_config.max_position_embeddings)
    if FAMILIES[hf_config.model_type].positions_after_padding:
        positions -= int(hf_config.pad_token_id) + 1
    return positions


def input_names(model: Any) -> list[str]:
    """The graph's inputs: ids and mask, plus segment ids where the model embeds them (a
    token-type table of at least 2 rows: BERT, ELECTRA; XLM-R has 1 row, DeBERTa-v3 and
    ModernBERT none, so feeding them would only cost a gather)."""
    import inspect

    names = ["input_ids", "attention_mask"]
    takes = "token_type_ids" in inspect.signature(model.forward).parameters
    if takes and int(getattr(model.config, "type_vocab_size", 0) or 0) >= 2:
        names.append("token_type_ids")
    return names


def resolve_max_length(requested: int | None, tokenizer_max: int | None, positions: int) -> int:
    """Return the max sequence length to truncate to.

    Defaults to the tokenizer's `model_max_length` capped by the model's position embeddings
    (tokenizers often report a sentinel like 1e30 when unset). An explicit request above the
    position table is an error: the model cannot embed those positions.
    """
    if requested is not None:
        if not 8 <= requested <= positions:
            raise ValueError(f"--max-length must be within [8, {positions}], got {requested}")
        return requested
    if tokenizer_max is None or tokenizer_max <= 0 or tokenizer_max > positions:
        return positions
    return int(tokenizer_max)


def bundle_config(
    hf_config: Any, max_length: int, variants: list[str], source: str, inputs: list[str]
) -> dict:
    """Build the reranker.json document from a transformers config (pure, for tests)."""
    num_labels = int(hf_config.num_labels)
    return {
        "format": 1,
        "source": source,
        "model_type": hf_config.model_type,
        "max_length": max_length,
        "inputs": inputs,
        "pad_token_id": int(hf_config.pad_token_id or 0),
        "num_labels": num_labels,
        # sentence-transformers' CrossEncoder applies a sigmoid to single-logit heads; keeping the
        # same activation makes relevance_score comparable with it (and bounded like Cohere's).
        "activation": "sigmoid" if num_labels == 1 else "none",
        "hidden_size": int(hf_config.hidden_size),
        "num_layers": int(hf_config.num_hidden_layers),
        "num_heads": int(hf_config.num_attention_heads),
        "intermediate_size": int(hf_config.intermediate_size),
        "vocab_size": int(hf_config.vocab_size),
        "variants": {name: MODEL_VARIANTS[name] for name in variants},
        # The stack file's `platform.rerankers.<name>.model` section, which sizes the task.
        "stack_model": {
            "name": source,
            "modelType": hf_config.model_type,
            "numHiddenLayers": int(hf_config.num_hidden_layers),
            "hiddenSize": int(hf_config.hidden_size),
            "numAttentionHeads": int(hf_config.num_attention_heads),
            "intermediateSize": int(hf_config.intermediate_size),
            "vocabSize": int(hf_config.vocab_size),
            "maxLength": max_length,
        },
    }


def export_onnx(model: Any, path: Path, opset: int, sample: dict[str, Any]) -> None:
    """Export with dynamic batch and sequence axes via the TorchScript exporter.

    `sample`: real tokenized pairs (numpy arrays by input name, the graph's inputs in order), so
    the trace follows the ids a served request has (RoBERTa's position ids depend on them). The
    TorchScript path (dynamo=False) emits the MatMul/Softmax/LayerNorm patterns that ONNX
    Runtime's transformer fusions recognise; the result is fused in `optimize_onnx`.
    """
    import torch

    names = list(sample)
    axes = {0: "batch", 1: "sequence"}
    # The tracer warns about Python-side shape checks in transformers' mask helpers; they are
    # no-ops for encoder-only models, and check_against_torch verifies the exported graph.
    with torch.inference_mode(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            model,
            (),
            str(path),
            kwargs={k: torch.from_numpy(v) for k, v in sample.items()},
            dynamo=False,
            input_names=names,
            output_names=["logits"],
            dynamic_axes={**{k: axes for k in names}, "logits": {0: "batch"}},
            opset_version=opset,
            do_constant_folding=True,
        )


def optimize_onnx(
    src: Path, dst: Path, num_heads: int, hidden_size: int, *, fuse: bool = True
) -> dict[str, int]:
    """Apply ONNX Runtime's offline transformer fusions (none with `fuse` False: the graph is
    only re-saved); return the fused-operator counts. A graph past protobuf's 2 GiB limit
    (XLM-R large and up at fp32) is saved with its weights in an external data file beside it."""
    from onnxruntime.transformers.fusion_options import FusionOptions
    from onnxruntime.transformers.optimizer import optimize_model

    options = FusionOptions("bert")
    if not fuse:
        for name in vars(options):
            if name.startswith("enable_"):
                setattr(options, name, False)
    optimized = optimize_model(
        str(src),
        model_type="bert",
        num_heads=num_heads,
        hidden_size=hidden_size,
        opt_level=1,
        optimization_options=options,
    )
    large = optimized.model.ByteSize() >= 2**31 - 1
    optimized.save_model_to_file(str(dst), use_external_data_format=large)
    return {k: int(v) for k, v in optimized.get_fused_operator_statistics().items() if v}


def check_feeds(tokenizer: Any, names: list[str], max_length: int) -> dict[str, Any]:
    """The check pairs as the service feeds them: truncated (`longest_first`) to the smaller of
    `max_length` and CHECK_MAX_TOKENS, padded with the model's pad id, int64."""
    import numpy as np

    enc = tokenizer(
        [q for q, _ in _CHECK_PAIRS],
        [d for _, d in _CHECK_PAIRS],
        padding=True,
        truncation="longest_first",
        max_length=min(max_length, CHECK_MAX_TOKENS),
        return_tensors="np",
        return_token_type_ids="token_type_ids" in names,
    )
    return {k: enc[k].astype(np.int64) for k in names}


def check_against_torch(model: Any, feeds: dict[str, Any], onnx_path: Path) -> float:
    """Return max |logit difference| between the ONNX file and torch on `feeds`."""
    import numpy as np
    import onnxruntime as ort
    import torch

    session = ort.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    onnx_logits = session.run(["logits"], feeds)[0]
    with torch.inference_mode():
        torch_logits = model(**{k: torch.from_numpy(v) for k, v in feeds.items()}).logits.numpy()
    return float(np.max(np.abs(onnx_logits - torch_logits)))


def export_checked(model: Any, feeds: dict[str, Any], dst: Path, opset: int) -> dict[str, Any]:
    """Export `model` to `dst`, fused when the fused graph still matches torch on `feeds`.

    ONNX Runtime's fusions are pattern matches written for BERT; on another family a pattern
    may match a subgraph that computes something else, so the check decides: the fused graph
    ships only within FP32_TOLERANCE, else the plain export (ONNX Runtime's own load-time
    optimisations still run on it). Raises RuntimeError when neither matches torch.
    """
    cfg = model.config
    with tempfile.TemporaryDirectory() as tmp:
        raw = Path(tmp) / "raw.onnx"
        export_onnx(model, raw, opset, feeds)
        fused = optimize_onnx(raw, dst, cfg.num_attention_heads, cfg.hidden_size)
        drift = check_against_torch(model, feeds, dst)
        if drift <= FP32_TOLERANCE:
            return {"fused_operators": fused, "fp32_max_logit_drift": drift}
        LOG.warning("fused graph differs from torch by %.2e; keeping the unfused export", drift)
        fused_drift = drift
        optimize_onnx(raw, dst, cfg.num_attention_heads, cfg.hidden_size, fuse=False)
        drift = check_against_torch(model, feeds, dst)
    if drift > FP32_TOLERANCE:
        raise RuntimeError(f"fp32 ONNX logits differ from torch by {drift:.2e}")
    return {"fused_operators": {}, "fp32_max_logit_drift": drift, "fused_drift": fused_drift}


def prepare(
    model_dir: Path,
    out_dir: Path,
    *,
    int8: bool = False,
    max_length: int | None = None,
    opset: int = DEFAULT_OPSET,
    judge_queries: int | None = 0,
    default_variant: str | None = None,
) -> dict:
    """Export `model_dir` into `out_dir`; return the reranker.json content written.

    Defaults: fp32 only, max_length from the tokenizer (capped by the usable positions), opset
    17. With `int8`, the default variant is `default_variant` if given, else the quality gate's
    choice: the int8 recipe picked on `judge_queries` validation queries, judged on as many
    test queries (`precision.choose_for_bundle`; 0: fp32, not judged; None: whole splits).
    Raises RuntimeError for a family the image does not
    serve or fp32 ONNX logits that drift from torch beyond FP32_TOLERANCE.
    """
    import torch
    from transformers import AutoConfig, AutoModelForSequenceClassification, AutoTokenizer

    model_type = AutoConfig.from_pretrained(str(model_dir)).model_type
    if (problem := family_problem(model_type)) is not None:
        raise RuntimeError(f"{model_dir}: {problem}")
    out_dir.mkdir(parents=True, exist_ok=True)
    tokenizer = AutoTokenizer.from_pretrained(str(model_dir), use_fast=True)
    if not getattr(tokenizer, "is_fast", False):
        raise RuntimeError(f"{model_dir} has no fast tokenizer; the service needs tokenizer.json")
    # Eager attention exports the plain MatMul/Softmax graph that ORT's attention fusion matches.
    model = AutoModelForSequenceClassification.from_pretrained(
        str(model_dir), attn_implementation="eager"
    ).eval()
    cfg = model.config
    length = resolve_max_length(max_length, tokenizer.model_max_length, usable_positions(cfg))
    names = input_names(model)
    feeds = check_feeds(tokenizer, names, length)

    torch.manual_seed(0)
    checked = export_checked(model, feeds, out_dir / MODEL_VARIANTS["fp32"], opset)
    LOG.info("fused operators: %s", checked["fused_operators"])
    variants = ["fp32"]
    if int8:  # written by precision.choose_for_bundle, by the recipe it picks
        variants.append("int8")
    tokenizer.backend_tokenizer.save(str(out_dir / TOKENIZER_FILE))
    doc = bundle_config(cfg, length, variants, source=model_dir.name, inputs=names) | checked
    config = out_dir / MODEL_CONFIG_FILE
    config.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    doc["precision"] = precision.choose_for_bundle(
        out_dir, doc["variants"], judge_queries, default_variant
    )
    LOG.info("default precision: %(default)s (%(chosen_by)s)", doc["precision"])
    config.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    return doc


def main(argv: list[str] | None = None) -> int:
    """CLI entry point; see the module docstring."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--model-dir", type=Path, required=True, help="HF cross-encoder dir")
    parser.add_argument("--out", type=Path, required=True, help="bundle output directory")
    parser.add_argument(
        "--precision",
        choices=("auto", "fp32", "int8"),
        default="auto",
        help="auto: also write int8 (the first recipe passing the quality gate on validation "
        "queries) and make it the default if it passes on held-out test queries; fp32: fp32 "
        "only; int8: int8 default, not judged",
    )
    parser.add_argument(
        "--judge-queries",
        type=int,
        default=None,
        help="for auto: validation queries that pick the int8 recipe and test queries that "
        "judge it (default: all of each split)",
    )
    parser.add_argument("--max-length", type=int, default=None, help="default: tokenizer's")
    parser.add_argument("--opset", type=int, default=DEFAULT_OPSET)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    doc = prepare(
        args.model_dir,
        args.out,
        int8=args.precision != "fp32",
        max_length=args.max_length,
        opset=args.opset,
        judge_queries=args.judge_queries if args.precision == "auto" else 0,
        default_variant="int8" if args.precision == "int8" else None,
    )
    print(json.dumps(doc, indent=2, sort_keys=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
