"""Pure logic of the re-ranker image: contract, settings, batching plan, admission, staging."""

from __future__ import annotations

import ast
import asyncio
import io
import itertools
import json
import math
import re
import threading
from pathlib import Path

import numpy as np
import pytest
from app.batcher import Admission, Job, MicroBatcher, OverloadedError, plan_round
from app.engine import activate, encoder_flops, plan_chunks
from app.server import RerankRequest, rank, request_problems, split_advice
from app.settings import Settings, cgroup_cpu_limit, cgroup_cpu_quota
from app.staging import MARKER, local_path, missing_files, parse_s3_uri, stage_from_s3
from hypothesis import given
from hypothesis import strategies as st

from contracts import reranker as contract
from contracts.reranker import retry_after_seconds

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
    assert imported <= {"__future__", "dataclasses", "math", "types", "typing"}, imported
    from ecs_inference.contracts import reranker as via_package  # how components/ imports it

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
    with pytest.raises(ValueError, match="MAX_REQUEST_TOKENS"):
        Settings.from_env({"QUEUE_TOKENS": "1000", "MAX_REQUEST_TOKENS": "2000"})
    assert s.queue_tokens is None and s.request_timeout_s == contract.REQUEST_TIMEOUT_SECONDS
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
    assert math.ceil(cgroup_cpu_quota(cpu_max, online)) == expected


def test_cgroup_cpu_quota_keeps_fractions():
    assert cgroup_cpu_quota("25000 100000", 2) == 0.25
    assert cgroup_cpu_quota("max 100000", 2) == 2.0


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
    a = Admission(limit=100, tokens_per_second=50.0)
    a.acquire(150)  # idle server: a large request must still be served
    with pytest.raises(OverloadedError) as err:
        a.acquire(1)
    assert err.value.retry_after >= 1 and err.value.pending == 150
    a.release(150)
    a.acquire(60)
    a.acquire(40)
    with pytest.raises(OverloadedError):
        a.acquire(1)
    assert a.rate == 50.0  # nominal until measured
    a.observe(100, 0.5)
    assert a.rate == pytest.approx(200.0)


def test_micro_batcher_merges_concurrent_requests_and_returns_each_slice():
    calls: list[int] = []
    gate = threading.Event()

    def score(pairs):
        gate.wait(5)
        calls.append(len(pairs))
        return np.array([float(len(d)) for _, d in pairs])

    batcher = MicroBatcher(score, max_batch=1000, window_s=0.05, queue_tokens=1000)
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
    assert batcher.pending_tokens == 0


def test_micro_batcher_refuses_when_backlog_full_and_propagates_errors():
    release = threading.Event()

    def score(pairs):
        release.wait(5)
        if pairs[0][1] == "boom":
            raise RuntimeError("engine failure")
        return np.zeros(len(pairs))

    batcher = MicroBatcher(score, max_batch=8, window_s=0.0, queue_tokens=10)
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
    assert batcher.pending_tokens == 0


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


# --- admission limits (contract) --------------------------------------------------------------


@given(
    vcpus=st.sampled_from([0.25, 0.5, 1, 2, 4, 8, 16]),
    request_timeout=st.floats(1, 600),
    drain=st.floats(1, 110),
    gflops=st.floats(1, 500),
    hidden=st.sampled_from([128, 256, 384, 768, 1024]),
    layers=st.integers(1, 24),
)
def test_admitted_work_fits_the_drain_and_the_request_timeout(
    vcpus, request_timeout, drain, gflops, hidden, layers
):
    shape = contract.EncoderShape(hidden=hidden, layers=layers, intermediate=4 * hidden)
    limits = contract.admission_limits(
        vcpus,
        request_timeout_seconds=request_timeout,
        drain_timeout_seconds=drain,
        gflops_per_vcpu=gflops,
        encoder=shape,
    )
    one_long_pair = shape.work_tokens(512)
    assert limits.request_tokens <= limits.queue_tokens
    assert limits.queue_tokens >= one_long_pair  # something can always be served
    # The whole admitted backlog takes at most half of the shorter deadline at the stated rate
    # (unless even one maximal pair needs more, which is then the floor).
    seconds = limits.queue_tokens / limits.tokens_per_second
    if limits.queue_tokens > one_long_pair + 1:
        assert seconds <= contract.WORK_HEADROOM * min(request_timeout, drain) + 1e-9
    # Twice the vCPUs, (at least nearly) twice the admitted work.
    doubled = contract.admission_limits(
        vcpus * 2,
        request_timeout_seconds=request_timeout,
        drain_timeout_seconds=drain,
        gflops_per_vcpu=gflops,
        encoder=shape,
    )
    assert doubled.queue_tokens >= limits.queue_tokens


def test_admission_limits_default_task_and_environment():
    limits = contract.admission_limits(2)
    # A 2-vCPU task with the 30 s request and 20 s drain timeouts: 10 s of work admitted.
    assert limits.budget_seconds == 10
    assert limits.queue_tokens == pytest.approx(limits.tokens_per_second * 10, abs=1)
    env = limits.environment()
    assert env["QUEUE_TOKENS"] == str(limits.queue_tokens)
    assert set(env) <= set(contract.ENV_DEFAULTS)
    assert "429" in limits.summary() and "413" in limits.summary()
    # The worst case: 1000 documents of 512 tokens is far above one request's share.
    assert 1000 * contract.REFERENCE_ENCODER.work_tokens(512) > 10 * limits.request_tokens
    with pytest.raises(ValueError, match="vcpus"):
        contract.admission_limits(0)
    with pytest.raises(ValueError, match="timeouts"):
        contract.admission_limits(1, drain_timeout_seconds=0)


def test_work_tokens_count_attention():
    shape = contract.REFERENCE_ENCODER
    assert shape.work_tokens(120) == pytest.approx(120 * (1 + 120 / (2 * 384 + 1536)))
    assert shape.work_tokens(512) / 512 > shape.work_tokens(64) / 64 > 1
    assert encoder_flops([64, 512], 384, 6, 1536) == pytest.approx(
        shape.sequence_flops(64) + shape.sequence_flops(512)
    )


def test_settings_admission_derives_then_applies_overrides():
    shape = contract.REFERENCE_ENCODER
    derived = Settings.from_env({}).admission(2, shape)
    assert derived == contract.admission_limits(2)
    pinned = Settings.from_env({"QUEUE_TOKENS": "5000", "MAX_REQUEST_TOKENS": "800"})
    limits = pinned.admission(2, shape)
    assert (limits.queue_tokens, limits.request_tokens) == (5000, 800)
    # Only a queue given: a request may still use all of it.
    assert Settings.from_env({"QUEUE_TOKENS": "900"}).admission(2, shape).request_tokens == 900


@given(
    costs=st.lists(st.floats(1, 700), min_size=1, max_size=300),
    limit=st.floats(700, 20_000),
)
def test_split_advice_names_a_split_that_always_fits(costs, limit):
    advice = split_advice(costs, limit)
    m = re.search(r"at least (\d+) requests of at most (\d+) documents", advice)
    assert m, advice
    parts, k = int(m.group(1)), int(m.group(2))
    chunks = [costs[i : i + k] for i in range(0, len(costs), k)]
    assert len(chunks) == parts
    assert all(sum(chunk) <= limit + 1e-6 for chunk in chunks)
    if k < len(costs):  # and k is the largest such count
        assert any(sum(costs[i : i + k + 1]) > limit for i in range(len(costs) - k))


def test_split_advice_when_one_document_is_too_large():
    assert "documents[1] alone costs 900" in split_advice([10.0, 900.0, 5.0], 800)


def test_request_problems_reject_lone_surrogates_naming_the_index():
    s = Settings.from_env({})

    def problems(**body):
        return " | ".join(request_problems(RerankRequest(**body), s))

    assert "documents[2] holds the lone UTF-16 surrogate U+D800" in problems(
        query="q", documents=["a", "b", "bad \ud800 text"]
    )
    assert "documents[0] holds the lone UTF-16 surrogate U+DFFF" in problems(
        query="q", documents=[{"text": "\udfff"}]
    )
    assert "query holds the lone" in problems(query="q\udc00", documents=["a"])
    # Astral characters (valid surrogate *pairs* in JSON) are real characters and fine.
    assert problems(query="q", documents=["emoji \U0001f600", "\ufffe nonchar"]) == ""


# --- fair scheduling ------------------------------------------------------------------------------


def _job(n: int, enqueued: float, cost: float = 1.0) -> Job:
    loop = asyncio.new_event_loop()
    try:
        return Job(list(range(n)), [cost] * n, loop.create_future(), loop, enqueued=enqueued)
    finally:
        loop.close()


def test_plan_round_prefers_the_job_nearest_to_done_and_respects_the_budget():
    big, small = _job(100, enqueued=0.0), _job(20, enqueued=0.01)
    slices = plan_round([big, small], now=0.5, max_wait_s=10, budget=50, max_items=1000)
    assert [(s.job, s.start, s.end) for s in slices] == [(small, 0, 20), (big, 0, 30)]
    assert sum(s.cost for s in slices) == 50
    # A job larger than the budget still makes progress alone.
    huge = _job(3, enqueued=0.0, cost=500.0)
    assert [(s.start, s.end) for s in plan_round([huge], 0.0, 10, 50, 10)] == [(0, 1)]
    # max_items caps a round.
    assert sum(s.end - s.start for s in plan_round([big, small], 0.0, 10, 10_000, 64)) == 64


def test_plan_round_ages_an_old_large_job_ahead_of_newer_small_ones():
    old_big, new_small = _job(100, enqueued=0.0), _job(5, enqueued=2.0)
    first = plan_round([old_big, new_small], now=2.5, max_wait_s=3, budget=10, max_items=1000)
    assert first[0].job is new_small  # the big job has waited 2.5 s < 3 s: still overtaken
    first = plan_round([old_big, new_small], now=3.0, max_wait_s=3, budget=10, max_items=1000)
    assert first[0].job is old_big  # overdue: ahead of everything younger
    older_big = _job(100, enqueued=-1.0)
    first = plan_round([old_big, older_big], now=9, max_wait_s=3, budget=10, max_items=1000)
    assert first[0].job is older_big  # overdue jobs in arrival order


def test_small_requests_are_not_held_behind_large_ones_under_mixed_load():
    """p50 of 20-pair requests is well below that of 100-pair ones sent at the same time.

    The scorer takes time proportional to its pairs (like the engine), so the outcome depends
    only on the order the scheduler picks, not on this machine's speed.
    """
    import time

    def score(items):
        time.sleep(0.0004 * len(items))
        return np.array([float(x) for x in items])

    batcher = MicroBatcher(
        score,
        max_batch=256,
        schedule_tokens=32,
        window_s=0.0,
        queue_tokens=10**6,
        tokens_per_second=2500.0,
    )
    batcher.start()

    async def timed(n: int, delay: float) -> tuple[int, float]:
        await asyncio.sleep(delay)
        t0 = time.perf_counter()
        out = await batcher.submit(list(range(n)))
        assert out.tolist() == [float(x) for x in range(n)]
        return n, time.perf_counter() - t0

    async def main():
        # Waves of 4 large + 4 small requests, each wave arriving while the last is in flight.
        sizes = [100, 20] * 4
        tasks = [
            timed(n, wave * 0.05 + i * 0.001) for wave in range(4) for i, n in enumerate(sizes)
        ]
        return await asyncio.gather(*tasks)

    try:
        results = asyncio.run(main())
    finally:
        batcher.stop(10)
    small = float(np.median([t for n, t in results if n == 20]))
    large = float(np.median([t for n, t in results if n == 100]))
    assert small < 0.5 * large, (small, large)


def test_a_failing_merged_batch_fails_only_the_culprit():
    gate = threading.Event()
    calls: list[int] = []

    def score(items):
        gate.wait(5)
        calls.append(len(items))
        if "poison" in items:
            raise ValueError("tokenizer-like failure")
        return np.array([float(len(x)) for x in items])

    batcher = MicroBatcher(score, max_batch=1000, window_s=0.05, queue_tokens=1000)
    batcher.start()

    async def main():
        bodies = [["a", "bb"], ["ccc", "poison"], ["dddd"], ["e"] * 3]
        tasks = [asyncio.create_task(batcher.submit(b)) for b in bodies]
        await asyncio.sleep(0.02)
        gate.set()
        return await asyncio.gather(*tasks, return_exceptions=True)

    try:
        results = asyncio.run(main())
    finally:
        batcher.stop(5)
    assert isinstance(results[1], ValueError)
    assert [r.tolist() for i, r in enumerate(results) if i != 1] == [[1.0, 2.0], [4.0], [1.0] * 3]
    assert calls[0] == 8  # merged first, then each request alone
    assert sorted(calls[1:]) == [1, 2, 2, 3]
    assert batcher.pending_tokens == 0
