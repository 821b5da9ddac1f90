"""Re-ranker benchmark (bench/reranker_bench.py): statistics over the repeats and the markdown
report."""

from __future__ import annotations

import os
import platform
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from reranker_bench_data import (
    CONCURRENCY,
    DOC_COUNTS,
    OURS,
)
from reranker_bench_load import (
    Cell,
    Target,
)

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
