"""Reduced precision: the retrieval task, the ranking metrics, the quality gate, the kernels.

The metrics are checked against values worked out by hand and against scipy; the gate is run
end to end on real bundles: one whose reduced variant scores exactly like fp32 (it must ship)
and one whose reduced variant is another model (it must be refused).
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import spearmanr

ROOT = Path(__file__).resolve().parents[3]
for path in (ROOT / "images" / "reranker", ROOT / "bench"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

import precision  # noqa: E402
import retrieval_task  # noqa: E402
from app import kernels  # noqa: E402


def test_ndcg_at_10_of_one_relevant_candidate():
    # Ranks worked out by hand: 1 -> 1, 3 -> 1/log2(4) = 0.5, 11 -> outside the cut.
    assert precision.ndcg_at_k([0.9, 0.1, 0.2], relevant=0) == 1.0
    assert precision.ndcg_at_k([0.3, 0.2, 0.1, 0.9, 0.8], relevant=0) == pytest.approx(0.5)
    scores = list(np.linspace(1.0, 0.0, 12))
    assert precision.ndcg_at_k(scores, relevant=10) == 0.0
    # A tie keeps input order (the service's ranking is a stable sort too).
    assert precision.ndcg_at_k([0.5, 0.5], relevant=1) == pytest.approx(1 / np.log2(3))


def test_spearman_matches_scipy_with_ties():
    rng = np.random.default_rng(3)
    a = rng.normal(size=30)
    b = a + rng.normal(scale=0.3, size=30)
    b[:4] = b[4]  # ties
    assert precision.spearman(a, b) == pytest.approx(spearmanr(a, b).statistic)
    assert precision.spearman(a, -a) == pytest.approx(-1.0)


def _queries(n: int, seed: int = 0) -> tuple[list[list[float]], list[int]]:
    rng = np.random.default_rng(seed)
    scores = [sorted(rng.uniform(size=30).tolist(), reverse=True) for _ in range(n)]
    return scores, [0] * n


def test_gate_passes_identical_rankings_and_the_boundary():
    scores, relevant = _queries(40)
    report = precision.compare(scores, scores, relevant)
    assert report.top10_identical == 1.0 and report.ndcg_drop == 0.0
    assert report.spearman_min == pytest.approx(1.0)
    assert precision.QualityGate().problems(report) == []
    # 2 of 40 queries with ranks 2 and 3 swapped: 95 % identical, the bar itself, passes.
    moved = [list(s) for s in scores]
    for s in moved[:2]:
        s[1], s[2] = s[2], s[1]
    at_bar = precision.compare(scores, moved, relevant)
    assert at_bar.top10_identical == pytest.approx(0.95)
    assert precision.QualityGate().problems(at_bar) == []


def test_gate_refuses_reordered_top10_and_a_lower_ndcg():
    scores, relevant = _queries(40)
    moved = [list(s) for s in scores]
    for s in moved[:3]:  # 3 of 40 reordered: 92.5 % identical
        s[4], s[5] = s[5], s[4]
    problems = precision.QualityGate().problems(precision.compare(scores, moved, relevant))
    assert len(problems) == 1 and "92.5% of 40 queries" in problems[0]
    # The relevant candidate demoted from rank 1 to 2 on one query: nDCG drops 0.92 %.
    demoted = [list(s) for s in scores]
    demoted[0][0], demoted[0][1] = demoted[0][1], demoted[0][0]
    report = precision.compare(scores, demoted, relevant)
    assert report.ndcg_drop == pytest.approx((1 - 1 / np.log2(3)) / 40)
    assert any("below fp32" in p for p in precision.QualityGate().problems(report))


def test_choose_default_takes_the_first_variant_that_passes():
    scores, relevant = _queries(20)
    same = precision.compare(scores, scores, relevant)
    reversed_ = precision.compare(scores, [s[::-1] for s in scores], relevant)
    gate = precision.QualityGate()
    assert precision.choose_default({"int8": reversed_}, gate, ["int8"])[0] == "fp32"
    chosen, record = precision.choose_default({"int8": same}, gate, ["int8"])
    assert chosen == "int8" and record["candidates"]["int8"]["problems"] == []


X86_CPUINFO = "processor\t: 0\nflags\t\t: fpu sse2 avx2 avx512f avx512bw avx512_vnni amx_tile\n"
ARM_CPUINFO = "processor\t: 0\nFeatures\t: fp asimd asimddp sve i8mm bf16\n"


def test_cpu_flags_and_the_int8_kernel_mlas_picks():
    flags = kernels.cpu_flags(X86_CPUINFO, "x86_64")
    assert flags == ["amx_tile", "avx512_vnni", "avx512bw", "avx512f", "avx2"]
    # AMX needs both AMX-TILE and AMX-INT8 (MLAS platform.cpp); without INT8, VNNI runs.
    assert kernels.int8_gemm_kernel(flags, "x86_64") == "AVX512-VNNI"
    assert kernels.int8_gemm_kernel([*flags, "amx_int8"], "x86_64").startswith("AMX-INT8")
    assert kernels.int8_gemm_kernel(["avx2"], "x86_64") == "AVX2"
    arm = kernels.cpu_flags(ARM_CPUINFO, "aarch64")
    assert arm == ["i8mm", "asimddp", "bf16", "sve"]
    assert kernels.int8_gemm_kernel(arm, "aarch64") == "I8MM (ummla)"
    assert kernels.int8_gemm_kernel(["asimddp"], "aarch64") == "dot product (udot)"
    assert kernels.int8_gemm_kernel([], "aarch64") == "NEON"


def test_retrieval_task_is_deterministic_and_split_by_module():
    pairs = retrieval_task.all_pairs()
    train, validation, test = retrieval_task.split(pairs)
    assert len(train) > 350 and len(validation) > 60 and len(test) > 100
    modules = [{p.module for p in part} for part in (train, validation, test)]
    assert not (modules[0] & modules[1] or modules[0] & modules[2] or modules[1] & modules[2])
    first = retrieval_task.ranking_queries(test, seed=1, limit=20)
    assert first == retrieval_task.ranking_queries(test, seed=1, limit=20)
    passages = {p.query: p.passage for p in test}
    for q in first:
        assert len(q.candidates) == retrieval_task.NEGATIVES + 1
        assert q.candidates[q.relevant] == passages[q.text]
        assert len(set(q.candidates)) == len(q.candidates)


#: A recipe that quantises no op type the graph has: its "int8" file scores exactly like fp32.
EXACT = precision.Int8Recipe("exact (nothing quantised)", op_types=("NoSuchOp",))
#: A recipe the tests make wrong (`_other_model_as_int8`): its file is another model.
WRONG = precision.Int8Recipe("wrong")


@pytest.fixture
def other_model_onnx(tiny_cross_encoder, tmp_path) -> Path:
    """The fp32 graph of another (re-seeded) model of the tiny cross-encoder's shape."""
    import prepare
    import torch
    from transformers import BertForSequenceClassification

    other_dir = tmp_path / "other-ce"
    shutil.copytree(tiny_cross_encoder, other_dir)
    torch.manual_seed(1)
    config = BertForSequenceClassification.config_class.from_pretrained(tiny_cross_encoder)
    BertForSequenceClassification(config).eval().save_pretrained(other_dir)
    prepare.prepare(other_dir, tmp_path / "other-bundle")
    return tmp_path / "other-bundle" / "model.onnx"


def _judged(bundle: Path, out: Path, recipes, other: Path, monkeypatch) -> dict:
    """A copy of `bundle` whose int8 variant is chosen among `recipes` on 12 queries a split;
    WRONG writes `other` as its "quantised" file (the defect a broken quantiser would be)."""
    shutil.copytree(bundle, out)
    real = precision.quantize_int8

    def quantize(src, dst, recipe=precision.RECIPES[0]):
        if recipe == WRONG:
            shutil.copy(other, dst)
        else:
            real(src, dst, recipe)

    monkeypatch.setattr(precision, "quantize_int8", quantize)
    files = json.loads((out / "reranker.json").read_text())["variants"]
    return precision.choose_for_bundle(out, files, judge_queries=12, recipes=recipes)


def test_the_gate_ships_an_exact_variant_and_refuses_another_model(
    tiny_bundle, other_model_onnx, tmp_path, monkeypatch
):
    exact = _judged(tiny_bundle, tmp_path / "exact", [EXACT], other_model_onnx, monkeypatch)
    assert exact["default"] == "int8" and exact["chosen_by"] == "quality gate"
    assert exact["candidates"]["int8"]["top10_identical"] == 1.0
    assert exact["int8_recipe"]["name"] == EXACT.name
    # The defect put back: a "reduced precision" that is another model ranks differently.
    refused = _judged(tiny_bundle, tmp_path / "refused", [WRONG], other_model_onnx, monkeypatch)
    assert refused["default"] == "fp32"
    assert any("top-10" in p for p in refused["candidates"]["int8"]["problems"])
    assert refused["recipes_on_validation"][WRONG.name]["problems"]


def test_the_recipe_is_picked_on_validation_and_the_first_passing_one_is_kept(
    tiny_bundle, other_model_onnx, tmp_path, monkeypatch
):
    record = _judged(
        tiny_bundle, tmp_path / "b", [WRONG, EXACT, WRONG], other_model_onnx, monkeypatch
    )
    assert list(record["recipes_on_validation"]) == [WRONG.name, EXACT.name]
    assert record["int8_recipe"]["name"] == EXACT.name and record["default"] == "int8"
    # The test split's verdict is on other queries than the validation split's choice.
    validation = {q.text for q in precision.held_out_queries(12, "validation")}
    assert not validation & {q.text for q in precision.held_out_queries(12, "test")}
    # None passes: the first (fastest) recipe's file stays, for explicit use only.
    none = _judged(tiny_bundle, tmp_path / "n", [WRONG], other_model_onnx, monkeypatch)
    assert none["int8_recipe"]["name"] == WRONG.name and none["default"] == "fp32"


def test_recipes_keep_the_last_layers_and_the_embeddings_in_fp32(tiny_bundle, tmp_path):
    import onnx

    fp32 = tiny_bundle / "model.onnx"
    layers = {name: layer for name, layer in precision.node_layers(fp32)}
    assert {0, 1, None} == set(layers.values())
    assert layers["Attention_1"] == 1  # a fused node takes the layer of the nodes after it
    keep = precision.Int8Recipe("k", op_types=("MatMul", "Attention"), keep_last_layers=1)
    precision.quantize_int8(fp32, tmp_path / "k.onnx", keep)
    nodes = onnx.load(str(tmp_path / "k.onnx")).graph.node
    ops = {n.name: n.op_type for n in nodes}
    assert ops["/bert/encoder/layer.1/output/dense/MatMul"] == "MatMul"
    assert ops["Attention_1"] == "Attention"
    assert ops["EmbedLayerNormalization_0"] == "EmbedLayerNormalization"
    assert any(n.op_type == "QAttention" for n in nodes)  # layer 0 is quantised
    assert "/bert/encoder/layer.0/output/dense/MatMul_quant" in ops


def test_this_onnx_runtime_has_no_bf16_gemm_on_the_cpu():
    """Why bf16 is not offered: ORT's CPU provider has no bf16 MatMul kernel (when a version
    adds one, this fails and bf16 can be judged like int8)."""
    import onnxruntime as ort
    from onnx import TensorProto, helper

    spec = [helper.make_tensor_value_info(n, TensorProto.BFLOAT16, [2, 2]) for n in "abc"]
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["a", "b"], ["c"])], "g", spec[:2], spec[2:]
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(Exception, match="NOT_IMPLEMENTED"):
        ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])


def test_prepare_records_ops_and_int8_scores_stay_close(tiny_bundle):
    from app.engine import Engine

    doc = json.loads((tiny_bundle / "reranker.json").read_text())
    record = doc["precision"]
    assert record["default"] == "fp32" and record["chosen_by"] == "not judged"
    int8_ops = record["kernels"]["int8"]["ops_after_ort"]
    assert int8_ops.get("DynamicQuantizeMatMul", 0) > 0 and "QAttention" in int8_ops
    assert not set(record["kernels"]["fp32"]["ops"]) & kernels.QUANTISED_OPS
    query = precision.held_out_queries(1)[0]
    pairs = [(query.text, d) for d in query.candidates]
    fp32 = Engine(tiny_bundle, "fp32").score(pairs)
    int8 = Engine(tiny_bundle, "int8").score(pairs)
    assert np.max(np.abs(fp32 - int8)) < 0.05
    assert precision.spearman(fp32, int8) > 0.9


def test_training_is_seeded_and_trains_only_the_top_layers(tiny_cross_encoder, tmp_path):
    """Whether training helps is measured on the real model (docs/benchmarks.md: the trained
    head's nDCG@10 against BM25 and the frozen bi-encoder); a 32-wide random model's loss is
    too noisy to assert on."""
    import reranker_train
    import torch
    from safetensors.torch import load_file

    base = str(tiny_cross_encoder)
    a = reranker_train.build(tmp_path / "a", queries=16, epochs=2, base=base, layers=1)
    b = reranker_train.build(tmp_path / "b", queries=16, epochs=2, base=base, layers=1)
    # Same model and summary; only the wall-clock time it took may differ.
    assert {k: v for k, v in a.items() if k != "seconds"} == {
        k: v for k, v in b.items() if k != "seconds"
    }
    wa = load_file(str(tmp_path / "a" / "model.safetensors"))
    wb = load_file(str(tmp_path / "b" / "model.safetensors"))
    assert all(torch.equal(wa[k], wb[k]) for k in wa)
    w0 = load_file(str(tiny_cross_encoder / "model.safetensors"))
    changed = {k for k in wa if k in w0 and not torch.equal(wa[k], w0[k])}
    assert any(k.startswith("bert.encoder.layer.1.") for k in changed)
    assert any(k.startswith("classifier.") for k in changed)
    assert not any(k.startswith(("bert.encoder.layer.0.", "bert.embeddings.")) for k in changed)


def test_int8_keeps_the_pooler_and_classifier_in_fp32(tiny_bundle):
    import onnx

    nodes = onnx.load(str(tiny_bundle / "model.int8.onnx")).graph.node
    head = [n for n in nodes if n.name.startswith(("/bert/pooler", "/classifier"))]
    assert head and not {n.op_type for n in head} & kernels.QUANTISED_OPS
    assert {"MatMul", "Add"} <= {n.op_type for n in head}
