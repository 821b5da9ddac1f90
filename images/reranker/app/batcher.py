"""Fair micro-batching across concurrent requests, with admission bounded by work.

A single worker thread owns the `Engine` (which fans each batch out over the vCPUs). Requests
are queued as jobs of already tokenised pairs, each pair with its cost in work tokens
(`contract.EncoderShape.work_tokens`). The worker runs in rounds of about `schedule_tokens`
work tokens: each round it picks the waiting request with the least work left, takes as many of
its pairs as fit, then the next one, and so on (shortest remaining work first). So a 20-document
request never waits behind the whole of a 100-document one, even when it arrives later. A large
request is never starved: once it has waited `max_wait_s`, it ranks ahead of every request that
has not, in arrival order. Rounds still merge many requests, so length bucketing keeps padding
low.

Admission is counted in work tokens, not pairs, because a 512-token pair costs 5x a 120-token
one. A request that would push the backlog over `queue_tokens` is refused with a Retry-After
estimated from the measured throughput, so a client backs off instead of piling up latency that
would outlive the drain window or its own timeout.

Fault isolation: if a round that merged several requests fails, each request's share is scored
again on its own, so only the request that really fails gets the error.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from contracts import reranker as c

LOG = logging.getLogger("reranker.batcher")


class OverloadedError(Exception):
    """The backlog is full; `retry_after` is a whole number of seconds (>= 1)."""

    def __init__(self, retry_after: int, pending: float) -> None:
        super().__init__(f"queue full ({pending:.0f} work tokens pending)")
        self.retry_after = retry_after
        self.pending = pending


class Admission:
    """Thread-safe pending-work counter enforcing `limit` work tokens.

    An idle server admits any request (the server refuses requests above its per-request cap
    before they get here, and that cap is at most `limit`). `tokens_per_second` is the nominal
    rate until batches have been measured.
    """

    def __init__(self, limit: float, tokens_per_second: float) -> None:
        self.limit = limit
        self.pending = 0.0
        self.nominal_rate = tokens_per_second
        self.measured_rate = 0.0
        self._lock = threading.Lock()

    @property
    def rate(self) -> float:
        """Measured work tokens per second (the nominal rate before the first batch)."""
        return self.measured_rate or self.nominal_rate

    def acquire(self, cost: float) -> None:
        """Reserve `cost` work tokens or raise OverloadedError."""
        with self._lock:
            if self.pending > 0 and self.pending + cost > self.limit:
                raise OverloadedError(c.retry_after_seconds(self.pending, self.rate), self.pending)
            self.pending += cost

    def release(self, cost: float) -> None:
        """Return `cost` work tokens once they have been scored (or abandoned)."""
        with self._lock:
            self.pending = max(0.0, self.pending - cost)

    def observe(self, tokens: float, seconds: float, alpha: float = 0.2) -> None:
        """Fold one batch's throughput into the moving estimate (Retry-After, ordering)."""
        if seconds <= 0 or tokens <= 0:
            return
        rate = tokens / seconds
        with self._lock:
            if self.measured_rate == 0.0:
                self.measured_rate = rate
            else:
                self.measured_rate += alpha * (rate - self.measured_rate)


@dataclass(eq=False)
class Job:
    """One request's items (what `score` takes), their costs and where to deliver scores."""

    items: Sequence[Any]
    costs: Sequence[float]
    future: asyncio.Future
    loop: asyncio.AbstractEventLoop
    enqueued: float = field(default_factory=time.perf_counter)
    next: int = 0
    remaining: float = 0.0
    scores: np.ndarray = field(default_factory=lambda: np.empty(0))

    def __post_init__(self) -> None:
        self.remaining = float(sum(self.costs))
        self.scores = np.empty(len(self.items), dtype=np.float64)

    def rank(self, now: float, max_wait_s: float) -> tuple[int, float, float]:
        """Sort key: overdue jobs first by arrival, then the rest by least remaining work."""
        if now - self.enqueued >= max_wait_s:
            return (0, self.enqueued, 0.0)
        return (1, self.remaining, self.enqueued)


@dataclass(frozen=True)
class Slice:
    """Items [start, end) of one job, scored in one round."""

    job: Job
    start: int
    end: int

    @property
    def cost(self) -> float:
        return float(sum(self.job.costs[self.start : self.end]))


def plan_round(
    jobs: Sequence[Job], now: float, max_wait_s: float, budget: float, max_items: int
) -> list[Slice]:
    """Pick the slices of one round: jobs by `Job.rank`, each taking what fits in `budget`.

    The first slice always gets at least one item, so a pair larger than the budget still runs.
    """
    picked: list[Slice] = []
    used, count = 0.0, 0
    for job in sorted(jobs, key=lambda j: j.rank(now, max_wait_s)):
        if used >= budget or count >= max_items:
            break
        end = job.next
        while end < len(job.items) and count < max_items:
            cost = job.costs[end]
            if used + cost > budget and (picked or end > job.next):
                break
            used += cost
            count += 1
            end += 1
        if end > job.next:
            picked.append(Slice(job, job.next, end))
    return picked


def _deliver(future: asyncio.Future, value: object, error: BaseException | None) -> None:
    if future.done():  # client went away and the handler was cancelled
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(value)


class MicroBatcher:
    """Collects jobs from the event loop and scores them fairly on one worker thread."""

    def __init__(
        self,
        score: Callable[[Sequence[Any]], np.ndarray],
        *,
        max_batch: int = 256,
        schedule_tokens: float = 4096,
        window_s: float = 0.002,
        queue_tokens: float = 2048,
        tokens_per_second: float = 1000.0,
        max_wait_s: float = 10.0,
        on_batch: Callable[[int, int, float, float], None] | None = None,
    ) -> None:
        """`score` maps items to scores; `on_batch(jobs, pairs, queue_wait_s, run_s)` observes.

        Defaults: rounds of up to 256 pairs and 4096 work tokens, a 2 ms collection window
        when idle, 2048 work tokens of backlog, a nominal 1000 work tokens/s until measured,
        small requests may overtake a large one for up to 10 s (the server passes the
        admission budget: the backlog plus that wait fit the request timeout).
        """
        self.max_wait_s = max_wait_s
        self._score = score
        self.max_batch = max_batch
        self.schedule_tokens = schedule_tokens
        self.window_s = window_s
        self.admission = Admission(queue_tokens, tokens_per_second)
        self._on_batch = on_batch
        self._incoming: queue.SimpleQueue[Job | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="reranker-worker", daemon=True)
        self._started = False

    def start(self) -> None:
        """Start the worker thread (idempotent)."""
        if not self._started:
            self._started = True
            self._thread.start()

    def stop(self, timeout: float | None = None) -> None:
        """Finish every admitted job, then stop the worker thread (waits up to `timeout`)."""
        if self._started:
            self._incoming.put(None)
            self._thread.join(timeout)

    @property
    def pending_tokens(self) -> float:
        """Work tokens admitted but not yet scored."""
        return self.admission.pending

    async def submit(self, items: Sequence[Any], costs: Sequence[float] | None = None) -> Any:
        """Score `items` (cost 1 each unless given); raises OverloadedError when full."""
        costs = [1.0] * len(items) if costs is None else costs
        if not items:
            return np.empty(0)
        loop = asyncio.get_running_loop()
        job = Job(items, costs, loop.create_future(), loop)
        self.admission.acquire(job.remaining)
        self._incoming.put(job)
        return await job.future

    # --- worker thread ---------------------------------------------------------------------

    def _take_incoming(self, active: list[Job], block: bool) -> bool:
        """Move arrivals into `active`; returns True once the stop marker was seen."""
        stop = False
        if block:
            first = self._incoming.get()
            if first is None:
                return True
            active.append(first)
            deadline = time.perf_counter() + self.window_s
            while (remaining := deadline - time.perf_counter()) > 0:
                try:
                    job = self._incoming.get(timeout=remaining)
                except queue.Empty:
                    break
                if job is None:
                    stop = True
                    break
                active.append(job)
        while True:
            try:
                job = self._incoming.get_nowait()
            except queue.Empty:
                return stop
            if job is None:
                stop = True
            else:
                active.append(job)

    def _abandon(self, job: Job, error: BaseException | None) -> None:
        self.admission.release(job.remaining)
        job.remaining = 0.0
        job.next = len(job.items)
        if error is not None:
            job.loop.call_soon_threadsafe(_deliver, job.future, None, error)

    def _run_round(self, slices: list[Slice]) -> None:
        items = [it for s in slices for it in s.job.items[s.start : s.end]]
        t0 = time.perf_counter()
        failed: dict[int, BaseException] = {}
        try:
            scores = self._score(items)
            offset = 0
            for s in slices:
                n = s.end - s.start
                s.job.scores[s.start : s.end] = scores[offset : offset + n]
                offset += n
        except Exception as exc:
            if len(slices) == 1:
                LOG.exception("scoring failed")
                failed[id(slices[0].job)] = exc
            else:
                # Score each request's share alone: only a request that fails by itself fails.
                LOG.warning(
                    "a merged batch of %d requests failed; retrying one by one", len(slices)
                )
                for s in slices:
                    try:
                        s.job.scores[s.start : s.end] = self._score(s.job.items[s.start : s.end])
                    except Exception as own:
                        LOG.exception("scoring one request failed")
                        failed[id(s.job)] = own
        run_s = time.perf_counter() - t0
        cost = sum(s.cost for s in slices)
        if not failed:
            self.admission.observe(cost, run_s)
        for s in slices:
            job = s.job
            if id(job) in failed:
                self._abandon(job, failed[id(job)])
                continue
            job.next = s.end
            job.remaining = max(0.0, job.remaining - s.cost)
            self.admission.release(s.cost)
            if job.next == len(job.items):
                job.loop.call_soon_threadsafe(_deliver, job.future, job.scores, None)
        if self._on_batch is not None:
            wait = t0 - min(s.job.enqueued for s in slices)
            self._on_batch(len(slices), len(items), wait, run_s)

    def _refuse_leftovers(self) -> None:
        # Nothing normally: uvicorn has waited for in-flight requests before the lifespan
        # shutdown stops us, so no job arrives after the stop marker.
        while True:
            try:
                job = self._incoming.get_nowait()
            except queue.Empty:
                return
            if job is not None:
                self._abandon(job, RuntimeError("service is shutting down"))

    def _run(self) -> None:
        try:
            self._loop()
        except BaseException:  # never leave requests waiting on a dead worker silently
            LOG.critical("batch worker died", exc_info=True)
            raise

    def _loop(self) -> None:
        active: list[Job] = []
        stopping = False
        while True:
            if not stopping:
                stopping = self._take_incoming(active, block=not active)
            # Requests whose client went away (handler cancelled) cost no CPU.
            for job in [j for j in active if j.future.done()]:
                self._abandon(job, None)
            active = [j for j in active if j.next < len(j.items)]
            if not active:
                if stopping:
                    self._refuse_leftovers()
                    return
                continue
            slices = plan_round(
                active, time.perf_counter(), self.max_wait_s, self.schedule_tokens, self.max_batch
            )
            self._run_round(slices)
            active = [j for j in active if j.next < len(j.items)]
