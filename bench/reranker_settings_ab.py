"""A/B of the re-ranker service's own settings: interleaved repeats, medians, CPU accounting.

Starts one service per variant (the same fp32 bundle as bench/reranker_bench.py, each variant
only changing environment variables), then per repeat drives every variant with the same
requests of the realistic mix at each concurrency, the variant order rotating. Reports per
variant and concurrency: pairs/s and pairs per CPU-second (median and min-max), the median
ratio to the first variant of each (per repeat, so both ran adjacent in time), the vCPUs the
service kept busy, and from its /metrics how many requests each scheduling round merged, its
pairs and the padding overhead. Prints only; record conclusions in docs/benchmarks.md.

Run: .venv/bin/python bench/reranker_settings_ab.py \
       --variant default= --variant sched16k=SCHEDULE_TOKENS=16384 \
       --variant intra=PARALLELISM=intra [--concurrency 1,4] [--repeats 5] [--requests 6]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import reranker_bench as rb


def parse_variant(text: str) -> tuple[str, dict[str, str]]:
    """`name=VAR=value,VAR2=value2` (or `name=` for the defaults) -> (name, environment)."""
    name, _, spec = text.partition("=")
    env: dict[str, str] = {}
    for item in filter(None, spec.split(",")):
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValueError(f"variant {text!r}: expected VAR=value, got {item!r}")
        env[key] = value
    if not name:
        raise ValueError(f"variant {text!r} has no name")
    return name, env


def service_metrics(target: rb.Target) -> dict[str, float]:
    """The service's /metrics samples (name with labels -> value)."""
    import httpx

    out: dict[str, float] = {}
    for line in httpx.get(target.url + "/metrics", timeout=10).text.splitlines():
        if line and not line.startswith("#"):
            key, _, value = line.rpartition(" ")
            out[key] = float(value)
    return out


def main(argv: list[str] | None = None) -> int:
    """Run the A/B; see the module docstring."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--variant", action="append", default=[], help="name=VAR=value,...")
    parser.add_argument("--concurrency", default="1,4")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--requests", type=int, default=6, help="requests per cell (20/50/100)")
    args = parser.parse_args(argv)
    try:
        variants = [parse_variant(v) for v in args.variant or ["default="]]
    except ValueError as exc:
        parser.error(str(exc))
    levels = [int(c) for c in args.concurrency.split(",") if c]
    import prepare

    with tempfile.TemporaryDirectory(prefix="reranker-ab-") as tmp:
        work = Path(tmp)
        ce_dir = rb.build_cross_encoder(work / "cross-encoder")
        bundle = work / "bundle"
        prepare.prepare(ce_dir, bundle, int8=False, max_length=rb.MAX_LENGTH)
        words = rb.vocabulary_words(bundle / "tokenizer.json")
        requests = list(enumerate(rb.make_requests(words, "realistic", args.requests, rb.SEED)))
        warmup = list(enumerate(rb.make_requests(words, "realistic", 1, rb.SEED - 1)))
        base = rb.build_targets(bundle, ce_dir, ce_dir, ce_dir, {rb.OURS}, print)[0][0]
        targets = [
            rb.Target(name, base.cmd, {**base.env, **env}, cwd=base.cwd) for name, env in variants
        ]
        cells: dict[tuple[str, int], list[rb.Cell]] = {}
        try:
            for t in targets:
                t.start(work)
                asyncio.run(rb.drive(t, warmup, 1))
            for rep in range(args.repeats):
                order = targets[rep % len(targets) :] + targets[: rep % len(targets)]
                for c in levels if rep % 2 == 0 else levels[::-1]:
                    for t in order:
                        cpu0 = rb.tree_cpu_seconds(t.pid)
                        seconds, lat, _ = asyncio.run(rb.drive(t, requests, c))
                        cpu = rb.tree_cpu_seconds(t.pid) - cpu0
                        pairs = sum(n for n, _ in lat)
                        cell = rb.Cell(pairs / seconds, lat, cpu / seconds, pairs / max(cpu, 0.01))
                        cells.setdefault((t.name, c), []).append(cell)
                print(f"repeat {rep + 1}/{args.repeats}, load {os.getloadavg()[0]:.1f}", flush=True)
            rounds = {t.name: service_metrics(t) for t in targets}
        finally:
            for t in targets:
                t.stop()
    first = targets[0].name
    print("\n| variant | c | pairs/s | vs first | pairs/CPU-s | vs first | vCPUs busy |")
    print("|---|---|---|---|---|---|---|")
    for t in targets:
        for c in levels:
            mine, ref = cells[(t.name, c)], cells[(first, c)]
            row = [t.name, str(c)]
            for attr in ("pairs_per_s", "pairs_per_cpu_s"):
                med, lo, hi = rb.median_range([getattr(x, attr) for x in mine])
                ratio = np.median(
                    [getattr(a, attr) / getattr(b, attr) for a, b in zip(mine, ref, strict=True)]
                )
                row += [f"{med:.1f} ({lo:.1f}-{hi:.1f})", f"{ratio:.2f}x"]
            row.append(f"{rb.median_range([x.cpu_busy for x in mine])[0]:.2f}")
            print("| " + " | ".join(row) + " |")
    print("\n| variant | rounds | requests per round | pairs per round | padded / real tokens |")
    print("|---|---|---|---|---|")
    for name, m in rounds.items():
        n = max(m.get("reranker_batch_requests_count", 0.0), 1.0)
        merged = m.get("reranker_batch_requests_sum", 0.0) / n
        pairs = m.get("reranker_batch_pairs_sum", 0.0) / n
        padding = m.get("reranker_padded_tokens_total", 0.0) / max(
            m.get("reranker_tokens_total", 1.0), 1.0
        )
        print(f"| {name} | {n:.0f} | {merged:.2f} | {pairs:.1f} | {padding:.3f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
