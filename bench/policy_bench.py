"""Policy pack cost on a 1,000-resource stack: this pack against an empty pack (and the pack
at other git revisions, ``--against main`` by default, when git can provide them), same
resources, same run.

The stack is the policy corpus (``tests/policy/corpus.py``: every exposure and GPU-on-Fargate
class, both providers) repeated under distinct names until it holds at least 1,000 resources,
so every rule has work to do. Each pack runs as its own process over the analyzer gRPC
protocol, as the CLI drives it; the packs are measured in alternation (``Analyze`` for every
resource, then ``AnalyzeStack``), and the figures are medians of the interleaved repeats and
of the paired ratios. Process start is reported apart: it does not grow with the stack.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO)]

from bench.preview_probe import empty_pack  # noqa: E402
from tests.policy.corpus import Case, IntegrationTarget, Ref, build, cases  # noqa: E402
from tests.policy.policy_stacks import Res  # noqa: E402
from tools.analyzer_client import PolicyPackProcess  # noqa: E402

RESULTS = REPO / "docs" / "benchmarks.md"
TARGET = 1000


def big_stack(target: int = TARGET) -> list[Res]:
    """At least ``target`` resources: every corpus case, preview and literal, copy ``k``
    renamed ``c<k><p|l><case>-...`` (references and literal ARNs too, so names are unique and
    copies never cross-link)."""
    out: list[Res] = []
    copy = 0
    while len(out) < target:
        for index, case in enumerate(cases()):
            for literal in (False, True):
                prefix = f"c{copy}{'l' if literal else 'p'}{index}-"
                out.extend(build(_renamed(case, prefix), literal=literal))
        copy += 1
    return out


def _renamed(case: Case, prefix: str) -> Case:
    def walk(value: Any) -> Any:
        if isinstance(value, Ref):
            return Ref(prefix + value.name, value.attr)
        if isinstance(value, IntegrationTarget):
            return IntegrationTarget(prefix + value.name)
        if isinstance(value, dict):
            return {k: walk(v) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v) for v in value]
        return value

    resources = [(t, prefix + n, walk(i)) for t, n, i in case.resources]
    return Case(prefix + case.title, case.expect, resources, case.notes)


def pack_at(revision: str, directory: Path) -> Path | None:
    """The ``policy/`` directory at git ``revision``, or None when git cannot provide it."""
    try:
        archive = subprocess.run(
            ["git", "archive", revision, "policy"], cwd=REPO, capture_output=True, check=True
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(directory, filter="data")
    return directory / "policy"


def timed(pack: PolicyPackProcess, resources: list[Res]) -> float:
    start = time.perf_counter()
    pack.analyze(resources)
    return time.perf_counter() - start


def run(repeats: int, against: list[str]) -> dict[str, Any]:
    resources = big_stack()
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "empty").mkdir()
        packs = {"empty": empty_pack(Path(tmp) / "empty"), "this": REPO / "policy"}
        for index, revision in enumerate(against):
            old = pack_at(revision, Path(tmp) / f"rev{index}")
            if old is not None:
                packs[revision] = old
        starts: dict[str, float] = {}
        procs: dict[str, PolicyPackProcess] = {}
        for name, directory in packs.items():
            begin = time.perf_counter()
            procs[name] = PolicyPackProcess(directory).__enter__()
            starts[name] = time.perf_counter() - begin
        try:
            for proc in procs.values():  # warm-up: imports, first gRPC connection
                timed(proc, resources)
            times: dict[str, list[float]] = {name: [] for name in procs}
            for _ in range(repeats):
                for name, proc in procs.items():
                    times[name].append(timed(proc, resources))
        finally:
            for proc in procs.values():
                proc.__exit__(None, None, None)
    empty = times["empty"]
    out = {
        "resources": len(resources),
        "repeats": repeats,
        "start": starts,
        "median": {name: statistics.median(t) for name, t in times.items()},
        "ratio": {
            name: statistics.median(a / b for a, b in zip(t, empty, strict=True))
            for name, t in times.items()
            if name != "empty"
        },
    }
    return out


def render(result: dict[str, Any]) -> str:
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    n = result["resources"]
    lines = [
        f"## Policy pack cost on {n} resources — {stamp}",
        "",
        f"`bench/policy_bench.py`: the policy corpus repeated to {n} resources (both providers, "
        "preview and literal shapes), analysed over gRPC (Analyze per resource + AnalyzeStack) "
        f"by each pack in alternation, {result['repeats']} repeats after one warm-up.",
        "",
        "| pack | median analysis s | per resource ms | × empty pack (median of paired ratios) "
        "| process start s |",
        "|---|---|---|---|---|",
    ]
    for name in result["median"]:
        ratio = "1" if name == "empty" else f"{result['ratio'][name]:.2f}"
        label = {"empty": "empty (one no-op rule)", "this": "this pack"}.get(
            name, f"pack at `{name}`"
        )
        lines.append(
            f"| {label} | {result['median'][name]:.2f} | {1000 * result['median'][name] / n:.2f} "
            f"| {ratio} | {result['start'][name]:.2f} |"
        )
    lines += [
        "",
        f"This pack: **{result['ratio']['this']:.2f}× the empty pack** (target ≤ 2×).",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--against",
        action="append",
        metavar="REV",
        help="also measure the pack at this git revision (repeatable; default: main)",
    )
    parser.add_argument("--no-record", action="store_true", help="do not append to docs/")
    args = parser.parse_args(argv)
    report = render(run(args.repeats, args.against or ["main"]))
    print(report)
    if not args.no_record:
        with RESULTS.open("a") as fh:
            fh.write("\n" + report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
