"""Every encoder family the image serves is exported, checked and served like torch scores it.

For each family of `contracts.reranker.FAMILIES` a tiny random-weight model of that architecture
(`families.py`, built here, no hub) goes through prepare.py; the bundle is then scored as the
service scores it (the Rust tokenizer from tokenizer.json, length-bucketed ONNX runs padded with
the model's pad id) and over HTTP by the service itself on loopback, against the torch model fed
by transformers' own tokenizer: scores within tolerance, identical rankings.
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import numpy as np
import pytest

from bench.encoder_families import MAX_LENGTH, build
from contracts import reranker as c
from tests.images.reranker.conftest import start_server

#: Largest |ONNX - torch| relevance score difference accepted (sigmoid of fp32 logits).
SCORE_TOLERANCE = 1e-4
_WORDS = [
    "the",
    "service",
    "scores",
    "every",
    "query",
    "and",
    "document",
    "pair",
    "with",
    "the",
    "model",
    "it",
    "was",
    "given",
    "while",
    "fargate",
    "tasks",
    "pull",
    "images",
    "through",
    "private",
    "endpoints",
    "and",
    "paris",
    "is",
    "the",
    "capital",
    "of",
    "france",
]
QUERIES = ["what is the capital of france?", "how do fargate tasks pull images", "long"]
# 1 to 90 words: short pairs, pairs past ModernBERT's local window, pairs cut at MAX_LENGTH.
DOCUMENTS = [
    " ".join(_WORDS[i % 7 :] * (n // len(_WORDS) + 1))[: n * 6]
    for i, n in enumerate((1, 4, 9, 15, 30, 60, 90))
]


def torch_scores(model_dir: Path, max_length: int, query: str, docs: list[str]) -> np.ndarray:
    """Sigmoid of the torch model's logits, one pair at a time (no padding at all)."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
    model = AutoModelForSequenceClassification.from_pretrained(
        str(model_dir), attn_implementation="eager"
    ).eval()
    logits = []
    with torch.inference_mode():
        for doc in docs:
            enc = tokenizer(
                query, doc, truncation="longest_first", max_length=max_length, return_tensors="pt"
            )
            logits.append(float(model(**enc).logits[0, 0]))
    return 1.0 / (1.0 + np.exp(-np.asarray(logits, dtype=np.float64)))


@pytest.fixture(scope="module")
def bundles(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Path]]:
    """family -> (model dir, prepared bundle), built once for the module."""
    import prepare

    made = {}
    for family in c.FAMILIES:
        model_dir = build(family, tmp_path_factory.mktemp(family))
        bundle = tmp_path_factory.mktemp(f"{family}-bundle")
        prepare.prepare(model_dir, bundle, int8=True)
        made[family] = (model_dir, bundle)
    return made


@pytest.mark.parametrize("family", list(c.FAMILIES))
def test_each_family_scores_like_torch_in_the_engine_and_over_http(family, bundles, tmp_path):
    from app.engine import Engine

    model_dir, bundle = bundles[family]
    doc = json.loads((bundle / c.MODEL_CONFIG_FILE).read_text())
    assert doc["model_type"] == family
    assert doc["max_length"] == MAX_LENGTH
    engine = Engine(bundle, threads=2)
    expected = {q: torch_scores(model_dir, MAX_LENGTH, q, DOCUMENTS) for q in QUERIES}
    try:
        for query in QUERIES:
            got = engine.score([(query, d) for d in DOCUMENTS])
            np.testing.assert_allclose(got, expected[query], atol=SCORE_TOLERANCE, rtol=0)
            assert list(np.argsort(-got)) == list(np.argsort(-expected[query]))
    finally:
        engine.close()
    server = start_server({"MODEL_DIR": str(bundle), "MODEL_NAME": family}, tmp_path / "log")
    try:
        for query in QUERIES:
            body = {"model": family, "query": query, "documents": DOCUMENTS}
            results = httpx.post(server.url + c.RERANK_PATH, json=body, timeout=30).json()
            want = expected[query]
            assert [r["index"] for r in results["results"]] == list(np.argsort(-want))
            for r in results["results"]:
                assert abs(r["relevance_score"] - want[r["index"]]) <= SCORE_TOLERANCE
    finally:
        server.proc.kill()
        server.proc.wait(10)


@pytest.mark.parametrize("family", list(c.FAMILIES))
def test_each_family_quantises_to_int8_keeping_its_head_and_its_rankings(family, bundles):
    """Dynamic int8 handles each family's graph (fused or not): integer ops run, the head after
    the last encoder layer stays fp32, and the scores stay close to fp32's. Whether int8 is
    the default is the quality gate's call per model (test_reranker_precision.py)."""
    import onnx
    import precision
    from app.engine import Engine
    from app.kernels import QUANTISED_OPS

    _, bundle = bundles[family]
    record = json.loads((bundle / c.MODEL_CONFIG_FILE).read_text())["precision"]
    assert record["default"] == "fp32" and record["chosen_by"] == "not judged"
    assert set(record["kernels"]["int8"]["ops_after_ort"]) & QUANTISED_OPS
    head = set(precision.head_nodes(bundle / c.MODEL_VARIANTS["fp32"]))
    assert head
    int8_nodes = onnx.load(str(bundle / c.MODEL_VARIANTS["int8"])).graph.node
    kept = [n for n in int8_nodes if n.name in head]
    assert kept and not {n.op_type for n in kept} & QUANTISED_OPS
    engines = [Engine(bundle, v) for v in ("fp32", "int8")]
    try:
        for query in QUERIES:
            fp32, int8 = (e.score([(query, d) for d in DOCUMENTS]) for e in engines)
            assert np.max(np.abs(fp32 - int8)) < 0.05
    finally:
        for e in engines:
            e.close()


def test_segment_ids_are_fed_only_to_families_that_embed_them(bundles):
    inputs = {
        f: json.loads((b / c.MODEL_CONFIG_FILE).read_text())["inputs"]
        for f, (_, b) in bundles.items()
    }
    with_types = {f for f, names in inputs.items() if "token_type_ids" in names}
    assert with_types == {"bert", "electra"}


def test_the_stack_model_section_prepare_writes_is_what_the_preview_accepts(bundles):
    from ecs_inference.rerankers.input import RerankerModelConfig

    for _, bundle in bundles.values():
        section = json.loads((bundle / c.MODEL_CONFIG_FILE).read_text())["stack_model"]
        model = RerankerModelConfig.model_validate(section).encoder()
        assert model.max_length == MAX_LENGTH


def test_prepare_refuses_a_family_the_image_does_not_serve_and_lists_those_it_does(tmp_path):
    import prepare

    (tmp_path / "config.json").write_text(json.dumps({"model_type": "gpt2"}))
    with pytest.raises(RuntimeError) as err:
        prepare.prepare(tmp_path, tmp_path / "out")
    for family in c.FAMILIES:
        assert family in str(err.value)
    assert not (tmp_path / "out").exists()


def test_positions_reserved_before_the_first_token_shorten_the_usable_length(bundles):
    """XLM-R's table has MAX_LENGTH + 2 rows and pad id 1: positions start at 2, so the longest
    input is MAX_LENGTH (asserted in the family test, whose longest pairs reach it)."""
    import prepare
    from transformers import AutoConfig

    model_dir, _ = bundles["xlm-roberta"]
    config = AutoConfig.from_pretrained(str(model_dir))
    assert config.max_position_embeddings == MAX_LENGTH + 2
    assert prepare.usable_positions(config) == MAX_LENGTH
