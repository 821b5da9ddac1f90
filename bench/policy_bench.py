"""Policy pack cost on a 3,000+ resource stack: this pack against an empty pack (and the pack
at other git revisions, ``--against main`` by default, when git can provide them), same
resources, same run; then this pack and the empty one on twice the stack, to show the cost
per resource stays flat.

The stack is the policy corpus (``tests/policy/corpus.py``: every exposure and GPU-on-Fargate
class, both providers, preview and literal shapes) copied under distinct names: each copy of
a case carries its own resource names and the names it gives AWS (task definition families,
clusters, functions), as a real stack does, so copies do not cross-link
(``tests/policy/test_bench_stack.py``) and every rule has work to do. Each pack runs as its
own process over the analyzer gRPC protocol, as the CLI drives it; the packs are measured in
alternation (``Analyze`` for every resource, then ``AnalyzeStack``), and the figures are
medians of the interleaved repeats and of the paired ratios. Process start is reported apart:
it does not grow with the stack.
"""

from __future__ import annotations

import argparse
import os
import re
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
    renamed ``c<k><p|l><case>-...`` (resource names, references, literal ARNs and the names
    the resources carry, see `_renamed`), so no two copies or cases share an identity, as in a
    real stack."""
    out: list[Res] = []
    copy = 0
    while len(out) < target:
        out.extend(corpus_copy(copy))
        copy += 1
    return out


def corpus_copy(copy: int) -> list[Res]:
    """Copy ``copy`` of the corpus: every case, preview and literal, renamed apart."""
    out: list[Res] = []
    for index, case in enumerate(cases()):
        for literal in (False, True):
            prefix = f"c{copy}{'l' if literal else 'p'}{index}-"
            out.extend(build(_renamed(case, prefix), literal=literal))
    return out


#: Inputs that name a resource in AWS (a task definition family, a cluster, a function...):
#: one case's names are another case's too (``worker``, ``model``), and a stack does not hold
#: two task definition families of one name, so each copy carries its own.
NAME_INPUTS = (
    "family",
    "name",
    "clusterName",
    "functionName",
    "jobDefinitionName",
    "jobQueueName",
    "computeEnvironmentName",
)


def _renamed(case: Case, prefix: str) -> Case:
    """``case`` with every resource name and every name it gives AWS prefixed, and each
    occurrence of such a name in its inputs (whole, or as a token in a definition, ARN or
    image text: ``"TaskDefinition": "worker"``, ``task-definition/worker:3``) renamed alike."""
    names = {
        form
        for _, _, inputs in case.resources
        for key in NAME_INPUTS
        if isinstance(value := inputs.get(key), str) and value
        for form in (value, value.rstrip("."))  # a DNS name with and without its root dot
    }
    token = (
        re.compile(
            r"(?<![\w.-])("
            + "|".join(map(re.escape, sorted(names, key=len, reverse=True)))
            + r")(?![\w.-])"
        )
        if names
        else None
    )

    def walk(value: Any) -> Any:
        if isinstance(value, Ref):
            return Ref(prefix + value.name, value.attr)
        if isinstance(value, IntegrationTarget):
            return IntegrationTarget(prefix + value.name)
        if isinstance(value, str) and token is not None:
            return token.sub(lambda m: prefix + m.group(1), value)
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


def _cpu(pack: PolicyPackProcess) -> float:
    """CPU seconds used so far by this process (the client) and by the pack's process."""
    fields = Path(f"/proc/{pack._process.pid}/stat").read_text().rsplit(")", 1)[1].split()  # pyright: ignore[reportPrivateUsage, reportOptionalMemberAccess]
    server = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime
    return time.process_time() + server


def timed(pack: PolicyPackProcess, resources: list[Res]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of client and pack) of one analysis."""
    start, cpu = time.perf_counter(), _cpu(pack)
    pack.analyze(resources)
    return time.perf_counter() - start, _cpu(pack) - cpu


def _start(packs: dict[str, Path]) -> tuple[dict[str, PolicyPackProcess], dict[str, float]]:
    starts: dict[str, float] = {}
    procs: dict[str, PolicyPackProcess] = {}
    for name, directory in packs.items():
        begin = time.perf_counter()
        procs[name] = PolicyPackProcess(directory).__enter__()
        starts[name] = time.perf_counter() - begin
    return procs, starts


def _interleaved(
    procs: dict[str, PolicyPackProcess], resources: list[Res], repeats: int
) -> dict[str, dict[str, list[float]]]:
    """Each pack's analysis times ("wall", "cpu"), the packs alternated within each repeat
    after a warm-up."""
    for proc in procs.values():  # warm-up: imports, first gRPC connection, caches
        timed(proc, resources)
    times: dict[str, dict[str, list[float]]] = {"wall": {}, "cpu": {}}
    for _ in range(repeats):
        for name, proc in procs.items():
            wall, cpu = timed(proc, resources)
            times["wall"].setdefault(name, []).append(wall)
            times["cpu"].setdefault(name, []).append(cpu)
    return times


def _figures(times: dict[str, list[float]]) -> dict[str, Any]:
    empty = times["empty"]
    return {
        "median": {name: statistics.median(t) for name, t in times.items()},
        "range": {name: (min(t), max(t)) for name, t in times.items()},
        "ratios": {
            name: [a / b for a, b in zip(t, empty, strict=True)]
            for name, t in times.items()
            if name != "empty"
        },
    }


def run(repeats: int, against: list[str], sizes: list[int]) -> dict[str, Any]:
    """Every pack on a stack of ``sizes[0]`` copies of the corpus; this pack and the empty
    one on each further size (the per-resource cost at each size says whether the pack is
    linear)."""
    load = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "empty").mkdir()
        packs = {"empty": empty_pack(Path(tmp) / "empty"), "this": REPO / "policy"}
        for index, revision in enumerate(against):
            old = pack_at(revision, Path(tmp) / f"rev{index}")
            if old is not None:
                packs[revision] = old
        procs, starts = _start(packs)
        runs = []
        try:
            for position, size in enumerate(sizes):
                resources = [r for copy in range(size) for r in corpus_copy(copy)]
                chosen = procs if position == 0 else {k: procs[k] for k in ("empty", "this")}
                times = _interleaved(chosen, resources, repeats)
                runs.append(
                    {"resources": len(resources), **{m: _figures(t) for m, t in times.items()}}
                )
                load.append(os.getloadavg()[0])
        finally:
            for proc in procs.values():
                proc.__exit__(None, None, None)
    return {"repeats": repeats, "start": starts, "runs": runs, "load": (min(load), max(load))}


def _ratio(figures: dict[str, Any], name: str) -> str:
    ratios = figures["ratios"].get(name)
    if ratios is None:
        return "1"
    return f"{statistics.median(ratios):.2f} ({min(ratios):.2f}–{max(ratios):.2f})"


def render(result: dict[str, Any]) -> str:
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    first = result["runs"][0]
    n = first["resources"]
    lines = [
        f"## Policy pack cost on {n} resources — {stamp}",
        "",
        f"`bench/policy_bench.py`: the policy corpus repeated to {n} resources (both providers, "
        "preview and literal shapes, each copy renamed apart), analysed over gRPC (Analyze per "
        "resource + AnalyzeStack) by each pack in alternation, "
        f"{result['repeats']} repeats after one warm-up; load average "
        f"{result['load'][0]:.1f}–{result['load'][1]:.1f}. CPU: seconds of the client and the "
        "pack's process together (what a loaded host does not inflate).",
        "",
        "| resources | pack | median wall s (min–max) | × empty, wall: median of paired ratios "
        "(min–max) | median CPU s (min–max) | × empty, CPU | CPU ms per resource "
        "| process start s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for run in result["runs"]:
        size = run["resources"]
        wall, cpu = run["wall"], run["cpu"]
        for name, median in wall["median"].items():
            low, high = wall["range"][name]
            clow, chigh = cpu["range"][name]
            label = {"empty": "empty (one no-op rule)", "this": "this pack"}.get(
                name, f"pack at `{name}`"
            )
            lines.append(
                f"| {size} | {label} | {median:.2f} ({low:.2f}–{high:.2f}) | {_ratio(wall, name)} "
                f"| {cpu['median'][name]:.2f} ({clow:.2f}–{chigh:.2f}) | {_ratio(cpu, name)} "
                f"| {1000 * cpu['median'][name] / size:.2f} | {result['start'][name]:.2f} |"
            )
    lines += [
        "",
        f"This pack: **{statistics.median(first['wall']['ratios']['this']):.2f}× the empty pack** "
        f"in wall time, {statistics.median(first['cpu']['ratios']['this']):.2f}× in CPU "
        "(target ≤ 1.25×).",
    ]
    if len(result["runs"]) > 1:
        extra = [
            1000 * (r["cpu"]["median"]["this"] - r["cpu"]["median"]["empty"]) / r["resources"]
            for r in result["runs"]
        ]
        sizes = " / ".join(str(r["resources"]) for r in result["runs"])
        shown = " / ".join(f"{e:.3f}" for e in extra)
        lines.append(
            f"Linear: the pack's own CPU (median less the empty pack's) per resource at "
            f"{sizes} resources: {shown} ms."
        )
    lines.append("")
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
    parser.add_argument(
        "--copies",
        default="1,2",
        help="stack sizes in copies of the corpus (one is 3,000+ resources), comma-separated",
    )
    parser.add_argument("--no-record", action="store_true", help="do not append to docs/")
    args = parser.parse_args(argv)
    sizes = [int(size) for size in args.copies.split(",")]
    report = render(run(args.repeats, args.against or ["main"], sizes))
    print(report)
    if not args.no_record:
        with RESULTS.open("a") as fh:
            fh.write("\n" + report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
