"""`make bench`: run every benchmark; each prints its figures and appends to docs/benchmarks.md.

Sized to finish within about a quarter of an hour on this project's 2-vCPU machine while other
sessions share it: the preview benchmark with 5 paired repeats of each prod run (2 of each
scaling stack), the pack benchmark with 5 repeats, and the re-ranker at concurrency 1 on the
realistic mix (the mix its targets are set on) against the torch baseline and the fastest peer
(infinity's ONNX engine), and the service's int8 variant with its quality gate on a trained
head, 3 repeats within a 7-minute budget (it says how many ran). The
re-ranker against every peer at every concurrency is its own 45-minute run
(`bench/reranker_bench.py` with its defaults).
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

BENCHMARKS = (
    [sys.executable, "-m", "bench.preview_bench", "--repeats", "5"],
    [sys.executable, "-m", "bench.policy_bench", "--repeats", "5"],
    [
        sys.executable,
        "bench/reranker_bench.py",
        "--budget-minutes",
        "7",
        "--repeats",
        "3",
        "--mixes",
        "realistic",
        "--concurrency",
        "1",
        "--cells",
        "3,6,18",
        "--targets",
        "onnx service fp32,onnx service int8,torch baseline,infinity onnx",
    ],
    [sys.executable, "-m", "bench.metrics_sidecar_bench"],
)


def main() -> int:
    failed = 0
    for command in BENCHMARKS:
        print(f"\n$ {' '.join(command[1:])}", flush=True)
        start = time.perf_counter()
        code = subprocess.run(command, cwd=REPO, check=False).returncode
        print(
            f"({command[1] if command[1] != '-m' else command[2]}: exit {code}, "
            f"{time.perf_counter() - start:.0f} s)",
            flush=True,
        )
        failed |= code != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
