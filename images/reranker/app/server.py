"""The re-ranker HTTP service: `POST /v1/rerank` (Cohere v1 and Jina's shape), `POST /v2/rerank`
(Cohere v2's), `/health`, `/metrics`.

The model loads on a background thread after the server starts listening, so `/health` can say
503 ("loading") while the bundle is staged from S3 and the ONNX session is built, and the ALB
only routes to the task once it answers 200. On SIGTERM uvicorn stops accepting connections and
waits (up to DRAIN_TIMEOUT_SECONDS) for in-flight requests; the lifespan shutdown then stops the
batch worker, and the process exits 0 before ECS's stop timeout escalates to SIGKILL.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import math
import re
import threading
import time
import uuid
from collections.abc import Sequence
from contextlib import asynccontextmanager
from typing import Any

import numpy as np
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException as StarletteHTTPException

from app.batcher import MicroBatcher, OverloadedError
from app.engine import BatchStats, Engine, ModelInfo
from app.settings import Settings, available_cpus, available_vcpus
from app.staging import missing_files, stage_from_s3
from contracts import reranker as c

LOG = logging.getLogger("reranker")
#: UTF-16 surrogates: valid in JSON escapes ("\\ud800") and in a Python str, but not Unicode
#: scalar values, so they cannot be UTF-8 encoded and the tokenizer raises on them. They are the
#: only code points a str can hold that the tokenizer cannot take.
_SURROGATE = re.compile("[\ud800-\udfff]")


class DocumentObject(BaseModel):
    """A document given as an object (Cohere v1 / Jina); only `text` is used."""

    model_config = ConfigDict(extra="allow")
    text: str


class RerankRequest(BaseModel):
    """Request body; unknown fields (e.g. `rank_fields`, `max_chunks_per_doc`) are ignored."""

    model_config = ConfigDict(extra="ignore")
    query: str
    documents: list[str | DocumentObject]
    top_n: int | None = Field(default=None, ge=1)
    return_documents: bool = False
    model: str | None = None


class RerankV2Request(BaseModel):
    """Cohere v2's request: `model` required, documents are strings, no `return_documents`;
    `max_tokens_per_doc` cuts each document to that many tokens before pairing (Cohere's
    default, 4096, is above every served model's max length). `relevant_spans` and `priority`
    are ignored: one model serves every request, in admission order."""

    model_config = ConfigDict(extra="ignore")
    model: str
    query: str
    documents: list[str]
    top_n: int | None = Field(default=None, ge=1)
    max_tokens_per_doc: int | None = Field(default=None, ge=1)


def _invalid_code_point(text: str) -> str | None:
    match = _SURROGATE.search(text)
    if match is None:
        return None
    return (
        f"holds the lone UTF-16 surrogate U+{ord(match.group()):04X} at character "
        f"{match.start()}, which is not a Unicode character; send valid UTF-8 text"
    )


def request_problems(req: RerankRequest, settings: Settings) -> list[str]:
    """Return the human-readable reasons `req` is unacceptable (empty when it is fine)."""
    problems = []
    bad_query = _invalid_code_point(req.query)
    if bad_query:
        problems.append(f"query {bad_query}")
    if not req.query.strip():
        problems.append("query must not be empty")
    elif len(req.query) > settings.max_query_chars:
        problems.append(
            f"query is {len(req.query)} characters long; the limit is {settings.max_query_chars}"
        )
    if not req.documents:
        problems.append("documents must contain at least one document")
    elif len(req.documents) > settings.max_documents:
        problems.append(
            f"too many documents: {len(req.documents)}; the limit is {settings.max_documents}"
        )
    else:
        for i, doc in enumerate(req.documents):
            text = doc if isinstance(doc, str) else doc.text
            if len(text) > settings.max_document_chars:
                problems.append(
                    f"documents[{i}] is {len(text)} characters long; "
                    f"the limit is {settings.max_document_chars}"
                )
                break
            bad = _invalid_code_point(text)
            if bad:
                problems.append(f"documents[{i}] {bad}")
                break
    if req.model and req.model != settings.model_name:
        problems.append(f"unknown model {req.model!r}; this service serves {settings.model_name!r}")
    return problems


_ROUNDING = 1e-6
"""Work tokens a prefix-sum difference may be off by through float rounding."""


def split_advice(costs: Sequence[float], limit: float) -> str:
    """How to split a request whose documents cost `costs` work tokens so each part is <= limit.

    The advice is a document count k such that every run of k consecutive documents fits, so
    cutting the request in order into parts of k documents always works.
    """
    if max(costs) > limit:
        worst = max(range(len(costs)), key=lambda i: costs[i])
        return (
            f"documents[{worst}] alone costs {costs[worst]:.0f}: send shorter documents "
            "(or a smaller max length)"
        )
    prefix = list(itertools.accumulate(costs, initial=0.0))

    def fits(k: int) -> bool:
        # A difference of prefix sums can exceed the run's own sum by a rounding step
        # (1.9 + 100 + 700 + 700 - 1.9 > 1500), which would refuse a run that fits.
        return all(
            prefix[i + k] - prefix[i] <= limit + _ROUNDING for i in range(len(costs) - k + 1)
        )

    lo, hi = 1, len(costs)  # fits(1) holds; find the largest k that fits
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid - 1)
    return (
        f"split it into at least {math.ceil(len(costs) / lo)} requests of at most {lo} "
        "documents each, in order, and merge the rankings"
    )


def rank(scores: np.ndarray, top_n: int | None) -> list[int]:
    """Indices by descending score (ties keep input order), cut to `top_n` when given."""
    order = np.argsort(-scores, kind="stable")
    return order[: top_n if top_n else len(order)].tolist()


class Metrics:
    """Prometheus metrics on a private registry (no default process collectors to clash)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.requests = Counter(
            "reranker_requests_total", "Rerank requests by HTTP status", ["status"], registry=r
        )
        self.latency = Histogram(
            "reranker_request_seconds",
            "Rerank request latency",
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
            registry=r,
        )
        self.pairs = Counter("reranker_pairs_total", "Query-document pairs scored", registry=r)
        self.batch_pairs = Histogram(
            "reranker_batch_pairs",
            "Pairs per micro-batch",
            buckets=(1, 8, 16, 32, 64, 128, 256, 512, 1024),
            registry=r,
        )
        self.batch_requests = Histogram(
            "reranker_batch_requests",
            "Requests merged per micro-batch",
            buckets=(1, 2, 4, 8, 16, 32),
            registry=r,
        )
        self.queue_wait = Histogram(
            "reranker_queue_wait_seconds", "Time a batch's oldest request waited", registry=r
        )
        self.inference = Histogram(
            "reranker_inference_seconds", "Tokenise + ONNX time per micro-batch", registry=r
        )
        self.tokens = Counter("reranker_tokens_total", "Real (unpadded) tokens", registry=r)
        self.padded_tokens = Counter(
            "reranker_padded_tokens_total", "Tokens fed to the model incl. padding", registry=r
        )
        self.pending = Gauge(
            "reranker_queue_work_tokens", "Work tokens admitted, not yet scored", registry=r
        )
        self.in_flight = Gauge("reranker_in_flight_requests", "Requests in progress", registry=r)
        self.ready = Gauge("reranker_ready", "1 once the model is loaded", registry=r)


class State:
    """Mutable service state shared between the loader thread and request handlers."""

    def __init__(self) -> None:
        self.engine: Engine | None = None
        self.batcher: MicroBatcher | None = None
        self.limits: c.AdmissionLimits | None = None
        self.error: str | None = None
        self.draining = False
        self.loaded = threading.Event()


def _error(
    code: int, message: str, headers: dict[str, str] | None = None, **extra: Any
) -> JSONResponse:
    """Every error the service answers has this one shape: `{"message": ..., ...}`."""
    return JSONResponse({"message": message, **extra}, status_code=code, headers=headers)


def _validation_message(err: dict[str, Any]) -> str:
    loc = ".".join(str(p) for p in err.get("loc", ()) if p != "body")
    if err.get("type") == "json_invalid":
        ctx = err.get("ctx") or {}
        return f"request body is not valid JSON: {ctx.get('error', err.get('msg'))}" + (
            f" at character {loc}" if loc else ""
        )
    return f"{loc or 'body'}: {err.get('msg', 'invalid')}"


def _untokenizable(engine: Engine, pairs: list[tuple[str, str]]) -> tuple[int, str]:
    """The first pair the tokenizer rejects on its own, and why (-1 if none does alone)."""
    for i, pair in enumerate(pairs):
        try:
            engine.tokenize([pair])
        except Exception as exc:
            return i, f"{type(exc).__name__}: {exc}"
    return -1, "the tokenizer rejected the batch"


def create_app(settings: Settings | None = None) -> FastAPI:
    """Build the ASGI app (default settings: from the environment)."""
    settings = settings or Settings.from_env()
    metrics = Metrics()
    state = State()

    def load() -> None:
        try:
            if settings.model_s3_uri:
                stage_from_s3(settings.model_s3_uri, settings.model_dir, settings.model_variant)
            variant = settings.model_variant
            if variant == c.VARIANT_AUTO and not missing_files(settings.model_dir, variant):
                variant = ModelInfo.load(settings.model_dir).default_variant
            missing = missing_files(settings.model_dir, variant)
            if missing:
                raise FileNotFoundError(f"{settings.model_dir} lacks {missing}")
            threads = settings.inference_threads or available_cpus()
            engine = Engine(
                settings.model_dir,
                variant,
                threads=threads,
                parallelism=settings.parallelism,
                max_length=settings.max_length,
                max_batch=settings.max_batch,
                max_batch_tokens=settings.max_batch_tokens,
            )
            engine.score([("warm up", "the first run allocates ORT arenas")])
            limits = settings.admission(min(float(threads), available_vcpus()), engine.info.shape)

            def score(encodings: Sequence[Any]) -> np.ndarray:
                stats = BatchStats()
                out = engine.score_encoded(encodings, stats)
                metrics.tokens.inc(stats.real_tokens)
                metrics.padded_tokens.inc(stats.padded_tokens)
                return out

            def on_batch(jobs: int, pairs: int, wait_s: float, run_s: float) -> None:
                metrics.batch_requests.observe(jobs)
                metrics.batch_pairs.observe(pairs)
                metrics.queue_wait.observe(wait_s)
                metrics.inference.observe(run_s)
                metrics.pairs.inc(pairs)

            batcher = MicroBatcher(
                score,
                max_batch=settings.max_batch,
                schedule_tokens=settings.schedule_tokens,
                window_s=settings.batch_window_s,
                queue_tokens=limits.queue_tokens,
                tokens_per_second=limits.tokens_per_second,
                max_wait_s=limits.budget_seconds,
                on_batch=on_batch,
            )
            batcher.start()
            metrics.pending.set_function(lambda: batcher.pending_tokens)
            state.engine, state.limits, state.batcher = engine, limits, batcher
            metrics.ready.set(1)
            LOG.info(
                "model ready: %s (%s, max_length=%d, %d threads, parallelism=%s)",
                settings.model_dir,
                engine.variant,
                engine.max_length,
                threads,
                settings.parallelism,
            )
            LOG.info("%s", limits.summary())
            LOG.info("kernels: %s", json.dumps(engine.kernels, sort_keys=True))
        except Exception as exc:  # surfaced through /health so the ALB never routes here
            LOG.exception("model load failed")
            state.error = f"{type(exc).__name__}: {exc}"
        finally:
            state.loaded.set()

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        loader = threading.Thread(target=load, name="reranker-loader", daemon=True)
        loader.start()
        yield
        state.draining = True
        if state.batcher is not None:
            state.batcher.stop(timeout=settings.drain_timeout_s)
        if state.engine is not None:
            state.engine.close()
        LOG.info("drained, exiting")

    app = FastAPI(title="reranker", version="1", lifespan=lifespan, docs_url=None, redoc_url=None)
    app.state.reranker = state
    app.state.settings = settings

    @app.exception_handler(RequestValidationError)
    async def invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        details = [_validation_message(err) for err in exc.errors()]
        status = 400 if any(e.get("type") == "json_invalid" for e in exc.errors()) else 422
        metrics.requests.labels(str(status)).inc()
        return _error(status, "invalid request: " + "; ".join(details), detail=details)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        # 404/405 from routing and 400 from body parsing (e.g. JSON nested too deeply).
        message = exc.detail if isinstance(exc.detail, str) else json.dumps(exc.detail)
        if exc.status_code == 400 and "parsing the body" in message:
            message = "request body could not be parsed as JSON (malformed or nested too deeply)"
        return _error(exc.status_code, message, dict(exc.headers or {}) or None)

    @app.exception_handler(Exception)
    async def crashed(_: Request, exc: Exception) -> JSONResponse:
        LOG.exception("unhandled error")
        metrics.requests.labels("500").inc()
        return _error(500, f"internal error: {type(exc).__name__}")

    @app.get(c.HEALTH_PATH)
    async def health() -> JSONResponse:
        if state.error:
            return _error(
                503, f"model failed to load: {state.error}", status="failed", error=state.error
            )
        if state.batcher is None:
            return _error(503, "model is loading", {"Retry-After": "5"}, status="loading")
        if state.draining:
            return _error(503, "shutting down", status="draining")
        engine = state.engine
        kernels = engine.kernels if engine is not None else None
        return JSONResponse({"status": "ok", "model": settings.model_name, "kernels": kernels})

    @app.get(c.METRICS_PATH)
    async def prometheus() -> Response:
        return Response(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)

    @app.post(c.RERANK_PATH)
    async def rerank(req: RerankRequest) -> JSONResponse:
        return await _measured(req)

    @app.post(c.RERANK_V2_PATH)
    async def rerank_v2(req: RerankV2Request) -> JSONResponse:
        v1 = RerankRequest(query=req.query, documents=list(req.documents), top_n=req.top_n)
        return await _measured(v1.model_copy(update={"model": req.model}), req.max_tokens_per_doc)

    async def _measured(req: RerankRequest, max_tokens_per_doc: int | None = None) -> JSONResponse:
        t0 = time.perf_counter()
        metrics.in_flight.inc()
        try:
            response = await _rerank(req, max_tokens_per_doc)
        finally:
            metrics.in_flight.dec()
        metrics.requests.labels(str(response.status_code)).inc()
        metrics.latency.observe(time.perf_counter() - t0)
        return response

    async def _rerank(req: RerankRequest, max_tokens_per_doc: int | None) -> JSONResponse:
        problems = request_problems(req, settings)
        if problems:
            return _error(422, "; ".join(problems), detail=problems)
        batcher, engine, limits = state.batcher, state.engine, state.limits
        if batcher is None or engine is None or limits is None:
            return _error(503, state.error or "model is loading", {"Retry-After": "5"})
        if state.draining:
            return _error(503, "shutting down", {"Retry-After": "1"})
        texts = [d if isinstance(d, str) else d.text for d in req.documents]
        try:
            if max_tokens_per_doc is not None:
                texts = await asyncio.to_thread(engine.truncate, texts, max_tokens_per_doc)
            pairs = [(req.query, t) for t in texts]
            encodings = await asyncio.to_thread(engine.tokenize, pairs)
        except Exception:
            pairs = [(req.query, t) for t in texts]
            index, reason = await asyncio.to_thread(_untokenizable, engine, pairs)
            return _error(422, f"documents[{index}] cannot be tokenized: {reason}")
        shape = engine.info.shape
        costs = [shape.work_tokens(len(e.ids)) for e in encodings]
        total = sum(costs)
        if total > limits.request_tokens:
            return _error(
                413,
                f"request too large: {len(texts)} documents are {total:.0f} work tokens "
                f"(tokens plus attention cost, after truncation to {engine.max_length}); this "
                f"service scores at most {limits.request_tokens} per request within its "
                f"{limits.budget_seconds:g} s work budget: "
                + split_advice(costs, limits.request_tokens),
            )
        try:
            scores = await asyncio.wait_for(
                batcher.submit(encodings, costs), settings.request_timeout_s
            )
        except OverloadedError as exc:
            return _error(
                429,
                f"server busy: {exc.pending:.0f} work tokens queued; retry after "
                f"{exc.retry_after}s",
                {"Retry-After": str(exc.retry_after)},
            )
        except TimeoutError:
            return _error(
                503,
                f"not scored within the service's request timeout of "
                f"{settings.request_timeout_s:g} s; retry later",
                {"Retry-After": "1"},
            )
        results: list[dict[str, Any]] = []
        for i in rank(scores, req.top_n):
            item: dict[str, Any] = {"index": i, "relevance_score": float(scores[i])}
            if req.return_documents:
                item["document"] = {"text": texts[i]}
            results.append(item)
        return JSONResponse(
            {
                "id": str(uuid.uuid4()),
                "model": settings.model_name,
                "results": results,
                "meta": {"billed_units": {"search_units": 1}},
            }
        )

    return app
