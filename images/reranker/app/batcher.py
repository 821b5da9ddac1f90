"""Micro-batching across concurrent requests, with a bounded queue measured in pairs.

A single worker thread owns the `Engine` (ONNX Runtime already uses every vCPU per run). Requests
are queued as jobs; the worker takes everything waiting (plus whatever arrives within a short
collection window, capped at `max_batch` pairs), scores it as one length-bucketed batch and hands
each request its slice. Under load the queue fills while the previous batch runs, so batching
costs no added latency then; when idle the window is a couple of milliseconds.

Admission is counted in pairs, not requests, because a 1000-document request costs 30x a
32-document one. A request that would push the backlog over `queue_limit` is refused with a
Retry-After estimated from the measured throughput, so a client (or the ALB's retry) backs off
instead of piling up latency that the caller would time out on anyway.
"""

from __future__ import annotations

import asyncio
import logging
import math
import queue
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

LOG = logging.getLogger("reranker.batcher")


class OverloadedError(Exception):
    """The backlog is full; `retry_after` is a whole number of seconds (>= 1)."""

    def __init__(self, retry_after: int, pending: int) -> None:
        super().__init__(f"queue full ({pending} pairs pending)")
        self.retry_after = retry_after
        self.pending = pending


def retry_after_seconds(pending_pairs: int, pairs_per_second: float, cap: int = 30) -> int:
    """Seconds a refused client should wait: time to clear the backlog, within [1, cap]."""
    if pairs_per_second <= 0:
        return cap
    return int(min(cap, max(1, math.ceil(pending_pairs / pairs_per_second))))


class Admission:
    """Thread-safe pending-pairs counter enforcing `limit` (an idle server admits any request)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.pending = 0
        self.pairs_per_second = 0.0
        self._lock = threading.Lock()

    def acquire(self, n: int) -> None:
        """Reserve `n` pairs or raise OverloadedError."""
        with self._lock:
            if self.pending > 0 and self.pending + n > self.limit:
                raise OverloadedError(
                    retry_after_seconds(self.pending, self.pairs_per_second), self.pending
                )
            self.pending += n

    def release(self, n: int) -> None:
        """Return `n` pairs once they have been scored (or abandoned)."""
        with self._lock:
            self.pending -= n

    def observe(self, pairs: int, seconds: float, alpha: float = 0.2) -> None:
        """Fold one batch's throughput into the moving estimate used for Retry-After."""
        if seconds <= 0 or pairs <= 0:
            return
        rate = pairs / seconds
        with self._lock:
            if self.pairs_per_second == 0.0:
                self.pairs_per_second = rate
            else:
                self.pairs_per_second += alpha * (rate - self.pairs_per_second)


@dataclass(eq=False)
class Job:
    """One request's pairs and where to deliver its scores."""

    pairs: list[tuple[str, str]]
    future: asyncio.Future
    loop: asyncio.AbstractEventLoop
    enqueued: float = field(default_factory=time.perf_counter)


def _deliver(future: asyncio.Future, value: object, error: BaseException | None) -> None:
    if future.done():  # client went away and the handler was cancelled
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(value)


class MicroBatcher:
    """Collects jobs from the event loop and scores them on one worker thread."""

    def __init__(
        self,
        score: Callable[[Sequence[tuple[str, str]]], np.ndarray],
        *,
        max_batch: int = 256,
        window_s: float = 0.002,
        queue_limit: int = 2048,
        on_batch: Callable[[int, int, float, float], None] | None = None,
    ) -> None:
        """`score` maps pairs to scores; `on_batch(jobs, pairs, queue_wait_s, run_s)` observes.

        Defaults: up to 256 pairs per batch, a 2 ms collection window, 2048 pairs of backlog.
        """
        self._score = score
        self.max_batch = max_batch
        self.window_s = window_s
        self.admission = Admission(queue_limit)
        self._on_batch = on_batch
        self._queue: queue.SimpleQueue[Job | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="reranker-worker", daemon=True)
        self._started = False

    def start(self) -> None:
        """Start the worker thread (idempotent)."""
        if not self._started:
            self._started = True
            self._thread.start()

    def stop(self, timeout: float | None = None) -> None:
        """Finish queued jobs, then stop the worker thread."""
        if self._started:
            self._queue.put(None)
            self._thread.join(timeout)

    @property
    def pending_pairs(self) -> int:
        """Pairs admitted but not yet scored."""
        return self.admission.pending

    async def submit(self, pairs: list[tuple[str, str]]) -> np.ndarray:
        """Score `pairs` in a shared batch; raises OverloadedError when the backlog is full."""
        n = len(pairs)
        self.admission.acquire(n)
        loop = asyncio.get_running_loop()
        job = Job(pairs, loop.create_future(), loop)
        self._queue.put(job)
        return await job.future

    def _collect(self, first: Job) -> tuple[list[Job], bool]:
        jobs, total = [first], len(first.pairs)
        deadline = time.perf_counter() + self.window_s
        while total < self.max_batch:
            remaining = deadline - time.perf_counter()
            try:
                job = (
                    self._queue.get(timeout=remaining)
                    if remaining > 0
                    else self._queue.get_nowait()
                )
            except queue.Empty:
                break
            if job is None:
                return jobs, True
            jobs.append(job)
            total += len(job.pairs)
        return jobs, False

    def _run(self) -> None:
        stopping = False
        while not stopping:
            first = self._queue.get()
            if first is None:
                break
            jobs, stopping = self._collect(first)
            live = []
            for job in jobs:
                if job.future.done():  # cancelled while queued: do not spend CPU on it
                    self.admission.release(len(job.pairs))
                else:
                    live.append(job)
            if not live:
                continue
            pairs = [p for j in live for p in j.pairs]
            t0 = time.perf_counter()
            try:
                scores, error = self._score(pairs), None
            except Exception as exc:  # delivered to every waiting request as a 500
                LOG.exception("scoring failed")
                scores, error = None, exc
            run_s = time.perf_counter() - t0
            self.admission.observe(len(pairs), run_s)
            offset = 0
            for job in live:
                n = len(job.pairs)
                part = None if scores is None else scores[offset : offset + n]
                offset += n
                self.admission.release(n)
                job.loop.call_soon_threadsafe(_deliver, job.future, part, error)
            if self._on_batch is not None:
                wait = t0 - min(j.enqueued for j in live)
                self._on_batch(len(live), len(pairs), wait, run_s)
        # Drain anything still queued after the stop marker (nothing normally: uvicorn has
        # waited for in-flight requests before the lifespan shutdown stops us).
        while True:
            try:
                job = self._queue.get_nowait()
            except queue.Empty:
                return
            if job is not None:
                self.admission.release(len(job.pairs))
                job.loop.call_soon_threadsafe(
                    _deliver, job.future, None, RuntimeError("service is shutting down")
                )
