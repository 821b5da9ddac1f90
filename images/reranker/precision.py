"""Reduced precision for the re-ranker: quantise, judge the rankings, choose, and say what runs.

Past fp32 the only large win left on a CPU is doing the same GEMMs in int8: ONNX Runtime's MLAS
multiplies uint8 activations by int8 weights with the widest integer dot product the CPU has.
Which one is decided per host when ORT starts (MLAS `platform.cpp`): on x86-64 AMX-INT8 tiles
(with the OS's tile permission), else AVX512-VNNI, else AVX-VNNI, else AVX512 or AVX2
multiply-add; on Arm64 I8MM (`ummla`), else the dot product (`udot`), else plain NEON. The
weights are quantised ahead of time (here, at prepare time); activations are quantised per run
(dynamic quantisation), so no calibration set can be wrong for a user's traffic.

A precision only ships as the default if it keeps the answers: on a held-out retrieval task
(`retrieval_task`) the candidate's nDCG@10 stays within `QualityGate.max_ndcg_drop` of fp32's
and its top-10 is identical (same documents, same order) to fp32's on at least
`QualityGate.min_top10_identical` of the queries. The gate's verdict and its figures are written
into reranker.json, and the service serves that default unless MODEL_VARIANT names another.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

#: Ranks whose order the gate compares, and the cut of nDCG.
TOP_K = 10


def graph_op_counts(model_path: Path) -> dict[str, int]:
    """Op type -> node count of an ONNX file (top-level graph), without loading weights."""
    import onnx

    model = onnx.load(str(model_path), load_external_data=False)
    return dict(sorted(Counter(node.op_type for node in model.graph.node).items()))


@dataclass(frozen=True)
class Int8Recipe:
    """Which nodes of the fused fp32 graph dynamic int8 quantisation touches.

    The head (pooler, classifier) always stays fp32 (`head_nodes`). Defaults: int8 weights per
    output channel, every op type ONNX Runtime's dynamic quantiser handles (MatMul, fused
    Attention, the embedding lookups), no encoder layer kept in fp32.
    """

    name: str
    per_channel: bool = True
    #: Op types quantised; empty: every type ORT's dynamic quantiser handles.
    op_types: tuple[str, ...] = ()
    #: The encoder's last layers kept whole in fp32 (their rounding errors reach the score
    #: with the fewest layers left to average them out).
    keep_last_layers: int = 0


#: The recipes the prepare step tries, fastest (most quantised) first. The first that passes the
#: gate on the validation split is the int8 variant; none passing: the first (explicit use only).
RECIPES: tuple[Int8Recipe, ...] = (
    Int8Recipe("all ops, per channel"),
    Int8Recipe("all ops, per tensor", per_channel=False),
    Int8Recipe("matmuls only (embeddings fp32)", op_types=("MatMul", "Attention")),
    Int8Recipe("matmuls, last layer fp32", op_types=("MatMul", "Attention"), keep_last_layers=1),
    Int8Recipe("matmuls, last 2 layers fp32", op_types=("MatMul", "Attention"), keep_last_layers=2),
)

#: An encoder layer's index in the node names the TorchScript exporter gives every family
#: (`/bert/encoder/layer.5/...`, `/model/layers.21/...`).
_LAYER = re.compile(r"/layers?\.(\d+)/")
#: Node types the dynamic quantiser may replace (the Gemm of a head is rewritten as a MatMul).
_QUANTISABLE = ("MatMul", "Gemm", "Attention", "EmbedLayerNormalization", "Gather")


def node_layers(model_path: Path) -> list[tuple[str, int | None]]:
    """(name, encoder layer) of every quantisable node, in graph order. A node whose name has
    no layer (ORT's fused `Attention_5`) belongs to the layer of the next one that has; nodes
    after the last layered one are the head (None)."""
    import onnx

    nodes = onnx.load(str(model_path), load_external_data=False).graph.node
    named = [(n.name, _LAYER.search(n.name)) for n in nodes if n.op_type in _QUANTISABLE]
    out: list[tuple[str, int | None]] = []
    following: int | None = None
    for name, match in reversed(named):
        following = int(match.group(1)) if match else following
        out.append((name, following))
    return out[::-1]


def head_nodes(model_path: Path) -> list[str]:
    """Nodes after the encoder's last layer (pooler, classifier, a prediction head): tiny, and
    the last place a rounding error could move a score, so they stay fp32. Without layer names,
    the nodes after the last LayerNorm.

    ORT's quantiser rewrites each Gemm as a MatMul named `<gemm>_MatMul` (plus an Add) before
    it picks nodes, so both names are given.
    """
    import onnx

    layered = node_layers(model_path)
    if any(layer is not None for _, layer in layered):
        names = [name for name, layer in layered if layer is None]
    else:
        nodes = onnx.load(str(model_path), load_external_data=False).graph.node
        norms = [i for i, n in enumerate(nodes) if "LayerNorm" in n.op_type]
        last = norms[-1] if norms else len(nodes)
        names = [n.name for n in nodes[last + 1 :] if n.op_type in ("MatMul", "Gemm")]
    return names + [f"{n}_MatMul" for n in names if n.endswith("Gemm")]


def excluded_nodes(model_path: Path, recipe: Int8Recipe) -> list[str]:
    """The nodes `recipe` keeps in fp32: the head, and its last encoder layers."""
    layered = node_layers(model_path)
    layers = sorted({layer for _, layer in layered if layer is not None})
    kept = (
        set(layers[len(layers) - recipe.keep_last_layers :]) if recipe.keep_last_layers else set()
    )
    return head_nodes(model_path) + [name for name, layer in layered if layer in kept]


def quantize_int8(src: Path, dst: Path, recipe: Int8Recipe = RECIPES[0]) -> None:
    """Dynamic int8 quantisation of the weights (activations quantised per run) by `recipe`.

    Done ahead of time because quantising at container start would add tens of seconds to every
    Fargate task start and need the `onnx` package in the runtime image.
    """
    from onnx import TensorProto
    from onnxruntime.quantization import QuantType, quantize_dynamic

    # Shape inference cannot type the outputs of ORT's contrib (fused) ops; every activation in
    # this graph is fp32, so say so instead of letting the quantiser give up.
    quantize_dynamic(
        str(src),
        str(dst),
        weight_type=QuantType.QInt8,
        per_channel=recipe.per_channel,
        op_types_to_quantize=list(recipe.op_types) or None,
        nodes_to_exclude=excluded_nodes(src, recipe),
        extra_options={"DefaultTensorType": TensorProto.FLOAT},
    )


# --- quality ------------------------------------------------------------------------------------


def ndcg_at_k(scores: Sequence[float], relevant: int, k: int = TOP_K) -> float:
    """nDCG@k of one query with one relevant candidate: 1/log2(rank + 1) if it ranks in the
    top k (rank 1 is best), else 0. Ties are broken by candidate order (stable)."""
    order = np.argsort(-np.asarray(scores, dtype=np.float64), kind="stable")
    rank = int(np.nonzero(order == relevant)[0][0]) + 1
    return 1.0 / math.log2(rank + 1) if rank <= k else 0.0


def spearman(a: Sequence[float], b: Sequence[float]) -> float:
    """Spearman's rank correlation of two score lists (average ranks for ties)."""

    def ranks(x: Sequence[float]) -> np.ndarray:
        arr = np.asarray(x, dtype=np.float64)
        order = np.argsort(arr, kind="stable")
        r = np.empty(len(arr))
        r[order] = np.arange(len(arr), dtype=np.float64)
        for value in np.unique(arr):
            tied = arr == value
            r[tied] = r[tied].mean()
        return r

    ra, rb = ranks(a), ranks(b)
    if ra.std() == 0 or rb.std() == 0:
        return 1.0 if np.array_equal(ra, rb) else 0.0
    return float(np.corrcoef(ra, rb)[0, 1])


def top_k(scores: Sequence[float], k: int = TOP_K) -> list[int]:
    """Indices of the k best scores, best first (stable for ties)."""
    return np.argsort(-np.asarray(scores, dtype=np.float64), kind="stable")[:k].tolist()


@dataclass(frozen=True)
class QualityReport:
    """A candidate precision's rankings against fp32's on the same queries."""

    queries: int
    ndcg_reference: float
    ndcg_candidate: float
    #: (reference - candidate) / reference; negative when the candidate ranks better.
    ndcg_drop: float
    top10_identical: float
    spearman_median: float
    spearman_min: float


def compare(
    reference: Sequence[Sequence[float]],
    candidate: Sequence[Sequence[float]],
    relevant: Sequence[int],
) -> QualityReport:
    """Per-query scores of fp32 (`reference`) and a candidate precision, with the relevant
    candidate's index per query: mean nDCG@10 of each, the share of queries whose top-10 is
    identical in order, and the per-query Spearman correlation (median and worst)."""
    if not (len(reference) == len(candidate) == len(relevant)) or not reference:
        raise ValueError("compare needs the same non-empty set of queries on both sides")
    ref = float(np.mean([ndcg_at_k(s, r) for s, r in zip(reference, relevant, strict=True)]))
    cand = float(np.mean([ndcg_at_k(s, r) for s, r in zip(candidate, relevant, strict=True)]))
    same = [top_k(a) == top_k(b) for a, b in zip(reference, candidate, strict=True)]
    rho = [spearman(a, b) for a, b in zip(reference, candidate, strict=True)]
    return QualityReport(
        queries=len(reference),
        ndcg_reference=ref,
        ndcg_candidate=cand,
        ndcg_drop=(ref - cand) / ref if ref > 0 else 0.0,
        top10_identical=float(np.mean(same)),
        spearman_median=float(np.median(rho)),
        spearman_min=float(np.min(rho)),
    )


@dataclass(frozen=True)
class QualityGate:
    """When a reduced precision may be the default.

    Defaults: nDCG@10 at most 0.5 % below fp32's (relative), top-10 identical to fp32's on at
    least 95 % of queries.
    """

    max_ndcg_drop: float = 0.005
    min_top10_identical: float = 0.95

    def problems(self, report: QualityReport) -> list[str]:
        """Why `report` fails the gate (empty: it passes)."""
        found = []
        if report.ndcg_drop > self.max_ndcg_drop:
            found.append(
                f"nDCG@10 {report.ndcg_candidate:.4f} is {report.ndcg_drop:.2%} below fp32's "
                f"{report.ndcg_reference:.4f} (at most {self.max_ndcg_drop:.2%} allowed)"
            )
        if report.top10_identical < self.min_top10_identical:
            found.append(
                f"top-10 identical to fp32 on {report.top10_identical:.1%} of "
                f"{report.queries} queries (at least {self.min_top10_identical:.0%} needed)"
            )
        return found


ScoreFn = Callable[[str, Sequence[str]], Sequence[float]]


def score_queries(score: ScoreFn, queries: Sequence[Any]) -> list[list[float]]:
    """Scores of every query's candidates (`retrieval_task.Query`-like: text, candidates)."""
    return [list(map(float, score(q.text, q.candidates))) for q in queries]


def choose_default(
    reports: Mapping[str, QualityReport], gate: QualityGate, preference: Sequence[str]
) -> tuple[str, dict[str, Any]]:
    """The first variant of `preference` that passes `gate` (fp32 if none), and the record of
    every verdict for reranker.json."""
    verdicts = {
        name: {**asdict(report), "problems": gate.problems(report)}
        for name, report in reports.items()
    }
    chosen = next((v for v in preference if v in verdicts and not verdicts[v]["problems"]), "fp32")
    return chosen, {"default": chosen, "gate": asdict(gate), "candidates": verdicts}


# --- the prepare step's choice ------------------------------------------------------------------


def optimized_op_counts(model_path: Path) -> dict[str, int]:
    """Op type -> count of the graph ONNX Runtime actually runs (after its own fusions, e.g.
    MatMulInteger + scales -> DynamicQuantizeMatMul), from a session that saves it."""
    import tempfile

    import onnxruntime as ort

    with tempfile.TemporaryDirectory() as tmp:
        opts = ort.SessionOptions()
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        opts.optimized_model_filepath = str(Path(tmp) / "optimized.onnx")
        ort.InferenceSession(str(model_path), opts, providers=["CPUExecutionProvider"])
        return graph_op_counts(Path(opts.optimized_model_filepath))


def held_out_queries(limit: int | None, part: str = "test", seed: int = 0) -> list[Any]:
    """The retrieval task's `part` split ("validation" or "test") as ranking queries (the
    first `limit`; None: all)."""
    import retrieval_task

    _, validation, test = retrieval_task.split(retrieval_task.all_pairs())
    pairs = {"validation": validation, "test": test}[part]
    return retrieval_task.ranking_queries(pairs, seed, limit=limit)


def bundle_scores(
    bundle: Path, variants: Sequence[str], queries: Sequence[Any], threads: int = 2
) -> dict[str, list[list[float]]]:
    """Each variant's scores for every query, from the service's own engine on `bundle`."""
    from app.engine import Engine

    out = {}
    for variant in variants:
        engine = Engine(bundle, variant, threads=threads)
        try:
            out[variant] = score_queries(
                lambda q, docs, e=engine: e.score([(q, d) for d in docs]).tolist(), queries
            )
        finally:
            engine.close()
    return out


def _judge(bundle: Path, queries: Sequence[Any], reference: list[list[float]]) -> QualityReport:
    """The bundle's current int8 file against fp32's `reference` scores on `queries`."""
    scores = bundle_scores(bundle, ["int8"], queries)["int8"]
    return compare(reference, scores, [q.relevant for q in queries])


def pick_recipe(
    bundle: Path, judge_queries: int | None, gate: QualityGate, recipes: Sequence[Int8Recipe]
) -> tuple[Int8Recipe, dict[str, Any]]:
    """Quantise `bundle`'s fp32 graph by each recipe in turn, judged on the validation split
    (never the test split, whose figures must stay an unbiased verdict); return the first
    recipe that passes `gate` (none: the first, the fastest) and every recipe's figures. The
    bundle's int8 file is left as the chosen recipe made it."""
    from app.engine import ModelInfo

    fp32, int8 = bundle / ModelInfo.load(bundle).variants["fp32"], bundle / "model.int8.onnx"
    queries = held_out_queries(judge_queries, "validation")
    reference = bundle_scores(bundle, ["fp32"], queries)["fp32"]
    tried: dict[str, Any] = {}
    chosen = None
    for recipe in recipes:
        quantize_int8(fp32, int8, recipe)
        report = _judge(bundle, queries, reference)
        tried[recipe.name] = {**asdict(report), "problems": gate.problems(report)}
        if not tried[recipe.name]["problems"]:
            chosen = recipe
            break
    if chosen is None:
        chosen = recipes[0]
        quantize_int8(fp32, int8, chosen)
    return chosen, tried


def choose_for_bundle(
    bundle: Path,
    files: Mapping[str, str],
    judge_queries: int | None,
    forced: str | None = None,
    gate: QualityGate | None = None,
    recipes: Sequence[Int8Recipe] = RECIPES,
) -> dict[str, Any]:
    """Write the int8 variant and return the `precision` record of reranker.json: the int8
    recipe, every variant's ops (in the file and as ORT runs them), and the default.

    The default is `forced` if given (int8 by the first recipe, not judged); with
    `judge_queries` 0, fp32 (not judged); else the recipe is picked on `judge_queries`
    validation queries (`pick_recipe`; None: all) and the gate's verdict on as many test
    queries decides whether int8 is the default. `bundle` must already hold the fp32 graph,
    the tokenizer and a reranker.json listing both variants.
    """
    gate = gate or QualityGate()
    fp32 = bundle / files["fp32"]
    record: dict[str, Any] = {}
    if forced is not None or judge_queries == 0 or "int8" not in files:
        if "int8" in files:
            quantize_int8(fp32, bundle / files["int8"], recipes[0])
            record["int8_recipe"] = asdict(recipes[0])
        record |= {"default": forced or "fp32", "chosen_by": "operator (not judged)"}
        if forced is None:
            record["chosen_by"] = "not judged"
    else:
        recipe, tried = pick_recipe(bundle, judge_queries, gate, recipes)
        queries = held_out_queries(judge_queries, "test")
        reference = bundle_scores(bundle, ["fp32"], queries)["fp32"]
        default, verdicts = choose_default(
            {"int8": _judge(bundle, queries, reference)}, gate, ["int8"]
        )
        record |= {
            **verdicts,
            "int8_recipe": asdict(recipe),
            "recipes_on_validation": tried,
            "default": default,
            "chosen_by": "quality gate",
        }
    record["kernels"] = {
        name: {
            "ops": graph_op_counts(bundle / file),
            "ops_after_ort": optimized_op_counts(bundle / file),
        }
        for name, file in files.items()
    }
    return record
