"""The reduced-precision part of the re-ranker benchmark's report (bench/reranker_bench.py).

Three things the issue asks the record to say, each from this run:
- the trained head's quality at fp32 and at the reduced precision on the held-out split of the
  interpreter's retrieval task, and the quality gate's verdict (prepare.py's `precision` record);
- the reduced-precision service's pairs/s against the best peer of every (mix, concurrency)
  cell: the median of per-repeat ratios (same repeat, adjacent in time) with min-max;
- the kernels each service ran, as its /health reported them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

FP32 = "onnx service fp32"
INT8 = "onnx service int8"
SERVICES = (FP32, INT8)
#: The issue's bar: the reduced-precision default against the best peer (realistic mix).
TARGET_RATIO = 1.5


def _median_range(values: Sequence[float]) -> str:
    arr = np.asarray(values, dtype=float)
    return f"{np.median(arr):.2f}x ({arr.min():.2f}-{arr.max():.2f})"


def _verdict_row(name: str, v: Mapping[str, Any]) -> str:
    verdict = "passes" if not v["problems"] else "refused: " + "; ".join(v["problems"])
    return (
        f"| {name} | {v['queries']} | {v['ndcg_reference']:.4f} | {v['ndcg_candidate']:.4f} "
        f"| {v['ndcg_drop']:.2%} | {v['top10_identical']:.1%} | "
        f"{v['spearman_median']:.4f} ({v['spearman_min']:.4f}) | {verdict} |"
    )


def quality_table(record: Mapping[str, Any]) -> str:
    """Markdown tables: each int8 recipe tried on the validation split, then the chosen one's
    verdict on the test split, with the gate's bounds."""
    gate = record.get("gate", {})
    head = [
        "| int8 recipe | queries | nDCG@10 fp32 | nDCG@10 | drop | top-10 identical to fp32 | "
        "Spearman per query, median (min) | gate |",
        "|---|---|---|---|---|---|---|---|",
    ]
    recipe = record.get("int8_recipe", {}).get("name", "-")
    lines = [
        f"Default precision chosen by prepare.py: **{record['default']}** "
        f"({record['chosen_by']}; gate: nDCG@10 at most {gate.get('max_ndcg_drop', 0):.1%} "
        f"below fp32, top-10 identical on at least {gate.get('min_top10_identical', 0):.0%} "
        f"of queries). The int8 file is the recipe *{recipe}*.",
        "",
        "Validation split (picks the recipe: the first that passes, fastest first):",
        "",
        *head,
        *(_verdict_row(n, v) for n, v in record.get("recipes_on_validation", {}).items()),
        "",
        "Test split (the verdict):",
        "",
        *head,
        *(_verdict_row(recipe, v) for v in record.get("candidates", {}).values()),
    ]
    return "\n".join(lines)


def best_peer(targets: Sequence[Any], mix: str, c: int) -> Any | None:
    """The peer (not this service) with the highest median pairs/s in the cell."""
    peers = [t for t in targets if t.name not in SERVICES and t.cells.get((mix, c))]
    if not peers:
        return None
    return max(peers, key=lambda t: float(np.median([x.pairs_per_s for x in t.cells[(mix, c)]])))


def speed_table(targets: Sequence[Any], mixes: Sequence[str], levels: Sequence[int]) -> str:
    """Markdown table: int8 and fp32 service pairs/s against the best peer of every cell."""
    by_name = {t.name: t for t in targets}
    int8, fp32 = by_name.get(INT8), by_name.get(FP32)
    lines = [
        "| mix | c | int8 pairs/s (min-max) | best peer | its pairs/s | int8 / best peer | "
        "int8 / fp32 service |",
        "|---|---|---|---|---|---|---|",
    ]
    for mix in mixes:
        for c in levels:
            mine = int8.cells.get((mix, c), []) if int8 else []
            peer = best_peer(targets, mix, c)
            if not mine or peer is None:
                continue
            theirs = peer.cells[(mix, c)]
            mine_ps = [x.pairs_per_s for x in mine]
            own = fp32.cells.get((mix, c), []) if fp32 else []
            vs_fp32 = [a.pairs_per_s / b.pairs_per_s for a, b in zip(mine, own, strict=False)]
            lines.append(
                f"| {mix} | {c} | {np.median(mine_ps):.1f} ({min(mine_ps):.1f}-{max(mine_ps):.1f})"
                f" | {peer.name} | {np.median([x.pairs_per_s for x in theirs]):.1f} | "
                + _median_range(
                    [a.pairs_per_s / b.pairs_per_s for a, b in zip(mine, theirs, strict=False)]
                )
                + " | "
                + (_median_range(vs_fp32) if vs_fp32 else "-")
                + " |"
            )
    return "\n".join(lines)


def kernel_lines(targets: Sequence[Any]) -> list[str]:
    """One line per service: what its /health said it runs."""
    lines = []
    for t in targets:
        k = (getattr(t, "health", None) or {}).get("kernels")
        if t.name in SERVICES and k:
            lines.append(
                f"- kernels of {t.name}: variant {k['variant']}, ONNX Runtime {k['onnxruntime']} "
                f"{'/'.join(k['providers'])}, int8 GEMM kernel {k['int8_kernel'] or 'none (fp32)'}"
                f", quantised ops {k['quantised_ops'] or 'none'}, CPU flags "
                f"{' '.join(k['cpu_flags'])}"
            )
    return lines


def render(
    record: Mapping[str, Any],
    targets: Sequence[Any],
    mixes: Sequence[str],
    levels: Sequence[int],
) -> str:
    """The report section: quality, speed against the best peer, kernels."""
    return "\n\n".join(
        [
            "### Reduced precision: quality on the held-out retrieval split, speed against the "
            "best peer",
            quality_table(record),
            speed_table(targets, mixes, levels),
            "\n".join(kernel_lines(targets)),
        ]
    )
