"""The re-ranker HTTP service: Cohere/Jina style `POST /v1/rerank`, `/health`, `/metrics`.

The model loads on a background thread after the server starts listening, so `/health` can say
503 ("loading") while the bundle is staged from S3 and the ONNX session is built, and the ALB
only routes to the task once it answers 200. On SIGTERM uvicorn stops accepting connections and
waits (up to DRAIN_TIMEOUT_SECONDS) for in-flight requests; the lifespan shutdown then stops the
batch worker, and the process exits 0 before ECS's stop timeout escalates to SIGKILL.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Sequence
from contextlib import asynccontextmanager
from typing import Any

import contract as c
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

from app.batcher import MicroBatcher, OverloadedError
from app.engine import BatchStats, Engine
from app.settings import Settings, available_cpus
from app.staging import missing_files, stage_from_s3

LOG = logging.getLogger("reranker")


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


def request_problems(req: RerankRequest, settings: Settings) -> list[str]:
    """Return the human-readable reasons `req` is unacceptable (empty when it is fine)."""
    problems = []
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
    if req.model and req.model != settings.model_name:
        problems.append(f"unknown model {req.model!r}; this service serves {settings.model_name!r}")
    return problems


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
        self.pending = Gauge("reranker_queue_pairs", "Pairs admitted, not yet scored", registry=r)
        self.in_flight = Gauge("reranker_in_flight_requests", "Requests in progress", registry=r)
        self.ready = Gauge("reranker_ready", "1 once the model is loaded", registry=r)


class State:
    """Mutable service state shared between the loader thread and request handlers."""

    def __init__(self) -> None:
        self.engine: Engine | None = None
        self.batcher: MicroBatcher | None = None
        self.error: str | None = None
        self.draining = False
        self.loaded = threading.Event()


def _error(status: int, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"message": message}, status_code=status, headers=headers)


def create_app(settings: Settings | None = None) -> FastAPI:
    """Build the ASGI app (default settings: from the environment)."""
    settings = settings or Settings.from_env()
    metrics = Metrics()
    state = State()

    def load() -> None:
        try:
            if settings.model_s3_uri:
                stage_from_s3(settings.model_s3_uri, settings.model_dir, settings.model_variant)
            missing = missing_files(settings.model_dir, settings.model_variant)
            if missing:
                raise FileNotFoundError(f"{settings.model_dir} lacks {missing}")
            threads = settings.inference_threads or available_cpus()
            engine = Engine(
                settings.model_dir,
                settings.model_variant,
                threads=threads,
                parallelism=settings.parallelism,
                max_length=settings.max_length,
                max_batch=settings.max_batch,
                max_batch_tokens=settings.max_batch_tokens,
            )
            engine.score([("warm up", "the first run allocates ORT arenas")])

            def score(pairs: Sequence[tuple[str, str]]) -> np.ndarray:
                stats = BatchStats()
                out = engine.score(pairs, stats)
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
                window_s=settings.batch_window_s,
                queue_limit=settings.queue_limit,
                on_batch=on_batch,
            )
            batcher.start()
            metrics.pending.set_function(lambda: batcher.pending_pairs)
            state.engine, state.batcher = engine, batcher
            metrics.ready.set(1)
            LOG.info(
                "model ready: %s (%s, max_length=%d, %d threads, parallelism=%s)",
                settings.model_dir,
                settings.model_variant,
                engine.max_length,
                threads,
                settings.parallelism,
            )
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
        details = []
        for err in exc.errors():
            loc = ".".join(str(p) for p in err.get("loc", ()) if p != "body")
            details.append(f"{loc or 'body'}: {err.get('msg', 'invalid')}")
        metrics.requests.labels("422").inc()
        return JSONResponse(
            {"message": "invalid request: " + "; ".join(details), "detail": details},
            status_code=422,
        )

    @app.get(c.HEALTH_PATH)
    async def health() -> JSONResponse:
        if state.error:
            return JSONResponse({"status": "failed", "error": state.error}, status_code=503)
        if state.batcher is None:
            return JSONResponse({"status": "loading"}, status_code=503)
        if state.draining:
            return JSONResponse({"status": "draining"}, status_code=503)
        return JSONResponse({"status": "ok", "model": settings.model_name})

    @app.get(c.METRICS_PATH)
    async def prometheus() -> Response:
        return Response(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)

    @app.post(c.RERANK_PATH)
    async def rerank(req: RerankRequest) -> JSONResponse:
        t0 = time.perf_counter()
        metrics.in_flight.inc()
        try:
            response = await _rerank(req)
        finally:
            metrics.in_flight.dec()
        metrics.requests.labels(str(response.status_code)).inc()
        metrics.latency.observe(time.perf_counter() - t0)
        return response

    async def _rerank(req: RerankRequest) -> JSONResponse:
        problems = request_problems(req, settings)
        if problems:
            return JSONResponse(
                {"message": "; ".join(problems), "detail": problems}, status_code=422
            )
        batcher = state.batcher
        if batcher is None:
            return _error(503, state.error or "model is loading", {"Retry-After": "5"})
        texts = [d if isinstance(d, str) else d.text for d in req.documents]
        try:
            scores = await batcher.submit([(req.query, t) for t in texts])
        except OverloadedError as exc:
            return _error(
                429,
                f"server busy: {exc.pending} pairs queued; retry after {exc.retry_after}s",
                {"Retry-After": str(exc.retry_after)},
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
