"""`make bench`: run every benchmark; each prints its figures and appends to docs/benchmarks.md."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

BENCHMARKS = (
    [sys.executable, "-m", "bench.preview_bench"],
    [sys.executable, "-m", "bench.policy_bench"],
    [sys.executable, "bench/reranker_bench.py"],
    [sys.executable, "-m", "bench.metrics_sidecar_bench"],
)


def main() -> int:
    failed = 0
    for command in BENCHMARKS:
        print(f"\n$ {' '.join(command[1:])}", flush=True)
        failed |= subprocess.run(command, cwd=REPO, check=False).returncode != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
