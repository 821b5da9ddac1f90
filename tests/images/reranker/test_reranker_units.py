"""Pure logic of the re-ranker image: contract, settings, batching plan, admission, staging."""

from __future__ import annotations

import ast
import asyncio
import io
import itertools
import json
import threading
from pathlib import Path

import contract
import numpy as np
import pytest
from app.batcher import Admission, MicroBatcher, OverloadedError, retry_after_seconds
from app.engine import activate, encoder_flops, plan_chunks
from app.server import RerankRequest, rank, request_problems
from app.settings import Settings, cgroup_cpu_limit
from app.staging import MARKER, local_path, missing_files, parse_s3_uri, stage_from_s3

# --- contract ---------------------------------------------------------------------------------


def test_contract_drain_fits_inside_stop_timeout():
    assert contract.DRAIN_TIMEOUT_SECONDS < contract.STOP_TIMEOUT_SECONDS <= 120
    assert contract.HEALTH_PATH == "/health" and contract.PORT == 8080


def test_contract_is_stdlib_only_and_importable_by_the_pulumi_program():
    source = Path(contract.__file__).read_text()
    imported = {
        (node.module if isinstance(node, ast.ImportFrom) else alias.name).split(".")[0]
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    }
    assert imported <= {"__future__", "types", "typing"}, imported
    from images.reranker import contract as via_package  # how components/ imports it

    assert via_package.ENV_DEFAULTS == contract.ENV_DEFAULTS


def test_container_environment_merges_and_validates():
    env = {e["name"]: e["value"] for e in contract.container_environment({"MAX_BATCH": "64"})}
    assert env["MAX_BATCH"] == "64"
    assert env["PORT"] == "8080"
    assert "MODEL_S3_URI" not in env  # empty defaults are left out
    with pytest.raises(KeyError, match="MAX_BACTH"):
        contract.container_environment({"MAX_BACTH": "64"})
    with pytest.raises(ValueError, match="MODEL_VARIANT"):
        contract.container_environment({"MODEL_VARIANT": "fp16"})


def test_every_contract_variable_is_read_by_the_service():
    defaults = Settings.from_env({})
    for name in contract.ENV_DEFAULTS:
        if name in ("MODEL_S3_URI", "MODEL_DIR", "MODEL_VARIANT", "MODEL_NAME", "LOG_LEVEL"):
            continue
        # A non-numeric value must be rejected, naming the variable: proof that it is parsed.
        with pytest.raises(ValueError, match=name):
            Settings.from_env({name: "not-a-number"})
    assert defaults.port == contract.PORT
    assert defaults.drain_timeout_s == contract.DRAIN_TIMEOUT_SECONDS


# --- settings ---------------------------------------------------------------------------------


def test_settings_defaults_and_errors():
    s = Settings.from_env({"BATCH_WINDOW_MS": "5", "MAX_LENGTH": "256"})
    assert s.batch_window_s == pytest.approx(0.005)
    assert s.max_length == 256 and s.model_dir == Path("/opt/model")
    assert Settings.from_env({}).max_length is None
    with pytest.raises(ValueError, match="QUEUE_LIMIT"):
        Settings.from_env({"QUEUE_LIMIT": "10", "MAX_DOCUMENTS": "100"})
    with pytest.raises(ValueError, match="s3://"):
        Settings.from_env({"MODEL_S3_URI": "https://bucket/model"})
    with pytest.raises(ValueError, match="PORT"):
        Settings.from_env({"PORT": "70000"})


@pytest.mark.parametrize(
    ("cpu_max", "online", "expected"),
    [
        (None, 4, 4),
        ("max 100000", 4, 4),
        ("200000 100000", 8, 2),
        ("150000 100000", 8, 2),
        ("50000 100000", 8, 1),
        ("800000 100000", 2, 2),
        ("garbage", 3, 3),
    ],
)
def test_cgroup_cpu_limit(cpu_max, online, expected):
    assert cgroup_cpu_limit(cpu_max, online) == expected


# --- engine math ------------------------------------------------------------------------------


def test_plan_chunks_covers_everything_in_order_within_limits():
    rng = np.random.default_rng(1)
    lengths = np.sort(rng.integers(5, 256, 300))[::-1]
    chunks = plan_chunks(lengths, max_rows=64, max_tokens=4096)
    assert chunks[0][0] == 0 and chunks[-1][1] == len(lengths)
    assert all(a[1] == b[0] for a, b in itertools.pairwise(chunks))
    for start, end in chunks:
        assert end - start <= 64
        assert (end - start) * lengths[start] <= 4096 or end - start == 1
    padded = sum((e - s) * lengths[s] for s, e in chunks)
    # Sorting + slack keeps padding small (one request padded to its max would be ~2x).
    assert padded <= 1.25 * lengths.sum()


def test_plan_chunks_splits_on_length_drop_but_not_below_min_rows():
    assert plan_chunks([100] * 8 + [10] * 8, 64, 10_000) == [(0, 8), (8, 16)]
    assert plan_chunks([100, 10, 10], 64, 10_000) == [(0, 3)]  # too few rows to split
    assert plan_chunks([300], 64, 100) == [(0, 1)]  # one over-long row still runs


def test_encoder_flops_matches_hand_count():
    h, ff, layers, n = 384, 1536, 6, 128
    per_layer = 2 * n * (4 * h * h + 2 * h * ff) + 4 * n * n * h
    assert encoder_flops([n], h, layers, ff) == pytest.approx(layers * per_layer)
    assert encoder_flops([], h, layers, ff) == 0


def test_activate():
    np.testing.assert_allclose(activate(np.array([0.0, 100.0]), "sigmoid"), [0.5, 1.0])
    np.testing.assert_allclose(activate(np.array([-2.0]), "none"), [-2.0])


def test_rank_orders_by_score_and_keeps_ties_stable():
    scores = np.array([0.1, 0.9, 0.5, 0.9])
    assert rank(scores, None) == [1, 3, 2, 0]
    assert rank(scores, 2) == [1, 3]
    assert rank(scores, 10) == [1, 3, 2, 0]


# --- request validation -----------------------------------------------------------------------


def test_request_problems_name_each_limit():
    s = Settings.from_env({"MAX_DOCUMENTS": "3", "MAX_DOCUMENT_CHARS": "10", "MODEL_NAME": "m"})

    def problems(**body):
        return " | ".join(request_problems(RerankRequest(**body), s))

    assert problems(query="q", documents=["a"]) == ""
    assert "query must not be empty" in problems(query="  ", documents=["a"])
    assert "at least one document" in problems(query="q", documents=[])
    assert "too many documents: 4; the limit is 3" in problems(query="q", documents=["a"] * 4)
    assert "documents[1] is 11 characters" in problems(query="q", documents=["a", "b" * 11])
    assert "documents[0] is 11" in problems(query="q", documents=[{"text": "c" * 11}])
    assert "unknown model 'x'" in problems(query="q", documents=["a"], model="x")


# --- admission and micro-batching ---------------------------------------------------------------


def test_retry_after_seconds_bounds():
    assert retry_after_seconds(1000, 500.0) == 2
    assert retry_after_seconds(1, 500.0) == 1
    assert retry_after_seconds(10**9, 1.0) == 30
    assert retry_after_seconds(10, 0.0) == 30


def test_admission_limits_backlog_but_admits_on_idle():
    a = Admission(limit=100)
    a.acquire(150)  # idle server: a large request must still be served
    with pytest.raises(OverloadedError) as err:
        a.acquire(1)
    assert err.value.retry_after >= 1 and err.value.pending == 150
    a.release(150)
    a.acquire(60)
    a.acquire(40)
    with pytest.raises(OverloadedError):
        a.acquire(1)
    a.observe(100, 0.5)
    assert a.pairs_per_second == pytest.approx(200.0)


def test_micro_batcher_merges_concurrent_requests_and_returns_each_slice():
    calls: list[int] = []
    gate = threading.Event()

    def score(pairs):
        gate.wait(5)
        calls.append(len(pairs))
        return np.array([float(len(d)) for _, d in pairs])

    batcher = MicroBatcher(score, max_batch=1000, window_s=0.05, queue_limit=1000)
    batcher.start()

    async def main():
        tasks = [
            asyncio.create_task(batcher.submit([("q", "x" * (i + 1))] * (i + 1))) for i in range(5)
        ]
        await asyncio.sleep(0.01)
        gate.set()
        return await asyncio.gather(*tasks)

    try:
        results = asyncio.run(main())
    finally:
        batcher.stop(5)
    assert [r.tolist() for r in results] == [[float(i + 1)] * (i + 1) for i in range(5)]
    assert calls == [15]  # one merged batch of 1+2+3+4+5 pairs
    assert batcher.pending_pairs == 0


def test_micro_batcher_refuses_when_backlog_full_and_propagates_errors():
    release = threading.Event()

    def score(pairs):
        release.wait(5)
        if pairs[0][1] == "boom":
            raise RuntimeError("engine failure")
        return np.zeros(len(pairs))

    batcher = MicroBatcher(score, max_batch=8, window_s=0.0, queue_limit=10)
    batcher.start()

    async def main():
        first = asyncio.create_task(batcher.submit([("q", "d")] * 10))
        await asyncio.sleep(0.01)
        with pytest.raises(OverloadedError):
            await batcher.submit([("q", "d")])
        release.set()
        await first
        with pytest.raises(RuntimeError, match="engine failure"):
            await batcher.submit([("q", "boom")])

    try:
        asyncio.run(main())
    finally:
        batcher.stop(5)
    assert batcher.pending_pairs == 0


# --- S3 staging ---------------------------------------------------------------------------------


def test_parse_s3_uri_and_local_path(tmp_path):
    assert parse_s3_uri("s3://b/models/ce/") == ("b", "models/ce/")
    assert parse_s3_uri("s3://b") == ("b", "")
    with pytest.raises(ValueError):
        parse_s3_uri("s3:///x")
    assert local_path(tmp_path, "p/", "p/model.onnx") == tmp_path / "model.onnx"
    assert local_path(tmp_path, "p/", "p/sub/") is None
    assert local_path(tmp_path, "p/", "p/../../etc/passwd") is None


class _FakeS3:
    """Just the botocore S3 calls staging uses, over an in-memory bucket."""

    def __init__(self, objects: dict[str, bytes]) -> None:
        self.objects = objects
        self.gets: list[str] = []

    def get_paginator(self, name):
        assert name == "list_objects_v2"
        objects = self.objects

        class _Pages:
            def paginate(self, Bucket, Prefix):  # noqa: N803 - botocore's parameter names
                keys = sorted(k for k in objects if k.startswith(Prefix))
                yield {"Contents": [{"Key": k} for k in keys[:2]]}
                yield {"Contents": [{"Key": k} for k in keys[2:]]}

        return _Pages()

    def get_object(self, Bucket, Key):  # noqa: N803
        self.gets.append(Key)
        return {"Body": io.BytesIO(self.objects[Key])}


def test_stage_from_s3_downloads_bundle_once(tmp_path):
    bundle = {
        "m/model.onnx": b"onnx" * 1000,
        "m/tokenizer.json": b"{}",
        "m/reranker.json": json.dumps({"max_length": 8}).encode(),
        "m/extra/notes.txt": b"n",
        "other/model.onnx": b"not ours",
    }
    s3 = _FakeS3(bundle)
    written = stage_from_s3("s3://bucket/m", tmp_path, "fp32", client=s3)
    assert {p.relative_to(tmp_path).as_posix() for p in written} == {
        "model.onnx",
        "tokenizer.json",
        "reranker.json",
        "extra/notes.txt",
    }
    assert (tmp_path / "model.onnx").read_bytes() == bundle["m/model.onnx"]
    assert (tmp_path / MARKER).exists() and missing_files(tmp_path, "fp32") == []
    before = len(s3.gets)
    assert stage_from_s3("s3://bucket/m", tmp_path, "fp32", client=s3) == []  # restart: no I/O
    assert len(s3.gets) == before


def test_stage_from_s3_fails_clearly_on_incomplete_bundle(tmp_path):
    s3 = _FakeS3({"m/model.onnx": b"x", "m/tokenizer.json": b"{}", "m/reranker.json": b"{}"})
    with pytest.raises(FileNotFoundError, match=r"model\.int8\.onnx"):
        stage_from_s3("s3://bucket/m", tmp_path, "int8", client=s3)
    assert not (tmp_path / MARKER).exists()


def test_engine_matches_itself_across_chunking(tiny_bundle):
    """Bucketing must not change scores: one pair at a time == one big sorted batch."""
    from app.engine import Engine

    docs = [("a query", "word " * n) for n in (1, 3, 50, 7, 120, 2, 33, 90, 5, 60, 11, 4)]
    engine = Engine(tiny_bundle, "fp32", threads=1, max_batch=3, max_batch_tokens=200)
    together = engine.score(docs)
    alone = np.array([engine.score([p])[0] for p in docs])
    np.testing.assert_allclose(together, alone, rtol=0, atol=1e-6)
    for mode in ("chunks", "intra"):
        parallel = Engine(tiny_bundle, "fp32", threads=2, parallelism=mode, max_batch_tokens=200)
        try:
            np.testing.assert_allclose(parallel.score(docs * 3), np.tile(alone, 3), atol=1e-6)
        finally:
            parallel.close()
    with pytest.raises(ValueError, match="parallelism"):
        Engine(tiny_bundle, "fp32", parallelism="gpu")
