"""Re-ranker benchmark (bench/reranker_bench.py): the servers under test, the load they get, the
processes' CPU and memory, and how many requests each cell can afford."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from reranker_bench_data import (
    DOC_COUNTS,
    IMAGE_DIR,
    MAX_LENGTH,
)

# --- servers and load ----------------------------------------------------------------------------


def free_port() -> int:
    """A free loopback TCP port."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def process_tree(pid: int) -> list[int]:
    """A process and its live descendants (Linux /proc)."""
    found, stack = [], [pid]
    while stack:
        p = stack.pop()
        if p in found:
            continue
        found.append(p)
        try:
            for task in Path(f"/proc/{p}/task").iterdir():
                stack.extend(int(c) for c in (task / "children").read_text().split())
        except OSError:
            continue
    return found


def tree_rss_bytes(pid: int) -> int:
    """Resident memory of a process and its descendants."""
    total = 0
    for p in process_tree(pid):
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
        except OSError:
            continue
    return total


def tree_cpu_seconds(pid: int) -> float:
    """CPU time (user + system, all threads) a process and its descendants have used.

    Pairs per CPU-second is what a shared host cannot distort the way it distorts pairs per
    second: under load the scheduler shares the cores per runnable thread, so a target running
    8 threads gets several times the CPU of one running 2, and wall-clock ratios measure that.
    """
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for p in process_tree(pid):
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / tick  # utime, stime
    return total


@dataclass
class Cell:
    """One (mix, concurrency) measurement of one target in one repeat."""

    pairs_per_s: float
    latencies: list[tuple[int, float]]
    #: CPU seconds the target used during the cell per wall second (vCPUs kept busy).
    cpu_busy: float = float("nan")
    #: Pairs scored per CPU second the target used.
    pairs_per_cpu_s: float = float("nan")


@dataclass
class Target:
    """One server under test."""

    name: str
    cmd: list[str]
    env: dict[str, str]
    path: str = "/v1/rerank"
    cwd: Path = IMAGE_DIR
    port: int = 0
    proc: subprocess.Popen | None = None
    cells: dict[tuple[str, int], list[Cell]] = field(default_factory=dict)
    rankings: dict[tuple[str, int], list[int]] = field(default_factory=dict)
    #: The last 200 answer of /health (the service's carries the kernels it runs).
    health: dict = field(default_factory=dict)
    rss_peak: int = 0
    note: str = ""

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, log_dir: Path, timeout: float = 600) -> None:
        import httpx

        self.port = free_port()
        cmd = [part.replace("{port}", str(self.port)) for part in self.cmd]
        log = open(log_dir / f"{self.name.replace(' ', '_')}.log", "wb")  # noqa: SIM115
        self.proc = subprocess.Popen(
            cmd,
            cwd=self.cwd,
            env={**os.environ, "HF_HUB_OFFLINE": "1", **self.env, "PORT": str(self.port)},
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                tail = Path(log.name).read_text(errors="replace")[-600:]
                raise RuntimeError(f"{self.name} exited: {tail}")
            try:
                r = httpx.get(self.url + "/health", timeout=2)
                if r.status_code == 200:
                    self.health = r.json()
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.5)
        raise RuntimeError(f"{self.name} did not become healthy in {timeout:.0f}s")

    @property
    def pid(self) -> int:
        assert self.proc is not None, f"{self.name} is not running"
        return self.proc.pid

    def sample_rss(self) -> None:
        if self.proc is not None:
            self.rss_peak = max(self.rss_peak, tree_rss_bytes(self.proc.pid))

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


async def drive(
    target: Target, requests: Sequence[tuple[int, dict]], concurrency: int
) -> tuple[float, list[tuple[int, float]], dict[int, list[int]]]:
    """Send `requests` from `concurrency` clients; returns (seconds, latencies, rankings)."""
    import httpx

    todo = list(requests)
    latencies: list[tuple[int, float]] = []
    rankings: dict[int, list[int]] = {}
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)

    async def client_loop(client: httpx.AsyncClient) -> None:
        while todo:
            idx, body = todo.pop(0)
            t0 = time.perf_counter()
            r = await client.post(target.url + target.path, json=body)
            elapsed = time.perf_counter() - t0
            if r.status_code != 200:
                raise RuntimeError(f"{target.name}: HTTP {r.status_code}: {r.text[:300]}")
            latencies.append((len(body["documents"]), elapsed))
            rankings[idx] = [x["index"] for x in r.json()["results"]]

    async with httpx.AsyncClient(timeout=900, limits=limits) as client:
        t0 = time.perf_counter()
        await asyncio.gather(*(client_loop(client) for _ in range(concurrency)))
        return time.perf_counter() - t0, latencies, rankings


def torch_reference(
    ce_dir: Path, requests: dict[str, list[dict]], keys: set[tuple[str, int]]
) -> dict[tuple[str, int], list]:
    """Rankings of CrossEncoder.predict (torch, in-process) for the requests named by `keys`."""
    from sentence_transformers import CrossEncoder

    model = CrossEncoder(str(ce_dir), max_length=MAX_LENGTH, device="cpu")
    out = {}
    for mix, i in sorted(keys):
        body = requests[mix][i]
        pairs = [(body["query"], d) for d in body["documents"]]
        scores = np.asarray(model.predict(pairs, show_progress_bar=False))
        out[(mix, i)] = np.argsort(-scores, kind="stable").tolist()
    return out


# --- sizing the run ------------------------------------------------------------------------------

#: Fewest requests per cell at concurrency 1, 4, 16: a multiple of len(DOC_COUNTS) (every size
#: equally often) and at least the concurrency (every client has a request).
MIN_CELLS = {1: 3, 4: 6, 16: 18}
#: Margin on the calibrated estimate: concurrency, short pairs (less efficient per FLOP than the
#: calibration's realistic ones) and a neighbour's burst all cost more than the estimate says.
PLAN_MARGIN = 1.25


def run_seconds(
    cells: dict[int, int], seconds_per_pair: float, pair_cost: dict[str, float], repeats: int
) -> float:
    """Estimated seconds to run every cell `repeats` times on every target.

    `seconds_per_pair` is the sum over targets of their calibrated seconds per realistic pair;
    `pair_cost` is each mix's FLOPs per pair relative to the realistic mix.
    """
    docs = float(np.mean(DOC_COUNTS))
    pairs = sum(n * docs for n in cells.values())
    return PLAN_MARGIN * repeats * pairs * seconds_per_pair * sum(pair_cost.values())


def plan_cells(
    levels: Sequence[int],
    seconds_per_pair: float,
    pair_cost: dict[str, float],
    repeats: int,
    budget_s: float,
) -> dict[int, int]:
    """Requests per cell so that every repeat of every cell fits in `budget_s` seconds.

    Every concurrency gets the same factor over MIN_CELLS (rounded down to whole multiples of
    len(DOC_COUNTS)): more requests per cell average out more of the host's noise. When even
    MIN_CELLS does not fit, MIN_CELLS is returned and the run's budget stops it early.
    """
    smallest = {c: MIN_CELLS[c] for c in levels}
    estimate = run_seconds(smallest, seconds_per_pair, pair_cost, repeats)
    factor = max(1.0, budget_s / estimate) if estimate > 0 else 1.0
    step = len(DOC_COUNTS)
    return {c: max(n, step * int(n * factor / step)) for c, n in smallest.items()}
