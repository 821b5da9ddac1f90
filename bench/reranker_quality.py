"""Baselines on the held-out retrieval split, so a reader sees whether the trained head learned.

The quality gate (images/reranker/precision.py) compares a reduced precision with fp32 of the
same model; that says nothing about whether the model ranks well. These rank the same test
queries (the same candidates, the same relevant passage) without the trained cross-encoder:

- random order: the expected nDCG@10 of one relevant passage placed uniformly among n
  (exact, no sampling);
- BM25 (k1 1.2, b 0.75, the Lucene defaults), document frequencies over the split's passages;
- the shipped all-MiniLM-L6-v2 as the bi-encoder it was trained to be (mean-pooled,
  normalised embeddings, cosine similarity): the frozen base the cross-encoder starts from.

Run: .venv/bin/python bench/reranker_quality.py [--queries N]   (prints JSON)
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
IMAGE_DIR = ROOT / "images" / "reranker"
if str(IMAGE_DIR) not in sys.path:
    sys.path.insert(0, str(IMAGE_DIR))

import precision  # noqa: E402

#: BM25's term-frequency saturation and length normalisation (Lucene's defaults).
BM25_K1 = 1.2
BM25_B = 0.75
_TOKEN = re.compile(r"\w+")


def terms(text: str) -> list[str]:
    """Lower-cased word tokens."""
    return _TOKEN.findall(text.lower())


def random_ndcg(candidates: int, k: int = precision.TOP_K) -> float:
    """Expected nDCG@k of one relevant item at a uniformly random rank among `candidates`."""
    return sum(1.0 / math.log2(r + 1) for r in range(1, min(k, candidates) + 1)) / candidates


def bm25_scores(query: str, docs: Sequence[str], df: Counter[str], n_docs: int) -> list[float]:
    """BM25 of `query` against each of `docs`, with document frequencies `df` over `n_docs`."""
    tokenised = [terms(d) for d in docs]
    avg = sum(len(t) for t in tokenised) / max(1, len(tokenised))
    q_terms = set(terms(query))
    out = []
    for toks in tokenised:
        tf = Counter(toks)
        norm = BM25_K1 * (1 - BM25_B + BM25_B * len(toks) / max(avg, 1e-9))
        score = 0.0
        for term in q_terms & tf.keys():
            idf = math.log(1 + (n_docs - df[term] + 0.5) / (df[term] + 0.5))
            score += idf * tf[term] * (BM25_K1 + 1) / (tf[term] + norm)
        out.append(score)
    return out


def bi_encoder_scores(queries: Sequence[Any], model_dir: str) -> list[list[float]]:
    """Cosine similarity of mean-pooled, normalised embeddings of the base model."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModel.from_pretrained(model_dir).eval()
    texts = sorted({t for q in queries for t in (q.text, *q.candidates)})
    vectors: dict[str, np.ndarray] = {}
    with torch.inference_mode():
        for start in range(0, len(texts), 32):
            batch = texts[start : start + 32]
            enc = tokenizer(batch, padding=True, truncation=True, return_tensors="pt")
            hidden = model(**enc).last_hidden_state
            mask = enc["attention_mask"].unsqueeze(-1).float()
            pooled = (hidden * mask).sum(1) / mask.sum(1)
            pooled = torch.nn.functional.normalize(pooled, dim=-1).numpy()
            vectors.update(zip(batch, pooled, strict=True))
    return [[float(vectors[q.text] @ vectors[d]) for d in q.candidates] for q in queries]


def baselines(queries: Sequence[Any], base_dir: str | None = None) -> dict[str, float]:
    """Mean nDCG@10 of each baseline on `queries` (`retrieval_task.Query`)."""
    passages = {d for q in queries for d in q.candidates}
    df: Counter[str] = Counter(t for d in passages for t in set(terms(d)))
    relevant = [q.relevant for q in queries]

    def mean(scores: Sequence[Sequence[float]]) -> float:
        return float(
            np.mean([precision.ndcg_at_k(s, r) for s, r in zip(scores, relevant, strict=True)])
        )

    out = {
        "random order (expected)": float(
            np.mean([random_ndcg(len(q.candidates)) for q in queries])
        ),
        "BM25": mean([bm25_scores(q.text, q.candidates, df, len(passages)) for q in queries]),
    }
    if base_dir is not None:
        out["bi-encoder (frozen base, cosine)"] = mean(bi_encoder_scores(queries, base_dir))
    return out


def main(argv: list[str] | None = None) -> int:
    """CLI; see the module docstring."""
    import reranker_train

    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--queries", type=int, default=None, help="test queries (default all)")
    args = parser.parse_args(argv)
    queries = precision.held_out_queries(args.queries, "test")
    result = baselines(queries, reranker_train.base_model_dir())
    print(json.dumps({"queries": len(queries), **result}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
