"""Offline preview and policy evaluation cost, against a floor measured in the same run.

    python -m bench.preview_bench [--repeats 5] [--no-record]

1. prod stack: the real preview (program under mocks, the fidelity checks, the runtime
   rehearsal and the real pack over gRPC: what `make preview` runs), in one view and in the
   default views (`new` and `update`), against a floor that registers the same resources
   (types, names, parents, inputs) as bare SDK resources under the same mocks and analyses them
   with an empty pack. Each run is a fresh interpreter (bench/preview_probe.py), real and floor
   alternated so that machine noise hits both alike. Reported: min/median of each part and of
   the whole wall time, and the median of the paired real/floor ratios.
2. scaling: generated stacks with 5, 10, 25 and 50 model services (plus a pool per five
   models, a Neuron pool and one re-ranker per five models): program time and the time after
   it (checks, rehearsal, pack) per resource, and the 50/5 ratio, to catch anything quadratic
   (a stack rule that compares every pair of resources would show up here).
Results are printed and appended to docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import itertools
import json
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "docs" / "benchmarks.md"
SCALES = (5, 10, 25, 50)


def probe(*args: str) -> dict:
    proc = subprocess.run(
        [sys.executable, "-m", "bench.preview_probe", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if proc.returncode != 0:
        raise SystemExit(f"probe {' '.join(args)} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def total(run: dict) -> float:
    """The run's wall time, interpreter start to the report."""
    return run["total"]


def load() -> float:
    """The host's 1-minute load average (other sessions share these cores)."""
    import os

    return os.getloadavg()[0]


def stats(runs: list[dict], key) -> tuple[float, float]:
    values = [key(r) for r in runs]
    return min(values), statistics.median(values)


def generated_platform(services: int) -> dict:
    """A stack with `services` model services: 4 of 5 vLLM on a GPU pool per five models, 1 of 5
    on a shared Neuron pool, and one Fargate re-ranker per five models."""
    base = yaml.safe_load((REPO / "Pulumi.prod.yaml").read_text())["config"][
        "ecs-inference:platform"
    ]
    groups = (services + 4) // 5
    # Each model service scales to its default maxCount of 2 tasks, one instance each, and a
    # pool must hold every task its services can ask for (the shared-pool check): four vLLM
    # models per GPU pool, one Neuron model per group.
    max_tasks = 2
    platform_cfg = {
        "network": base["network"],
        "endpoint": {**base["endpoint"], "listenerRuleQuota": 2 * (services + groups)},
        "images": base["images"],
        "gpuPools": {
            f"gpu{g}": {"instanceType": "g6e.xlarge", "minSize": 0, "maxSize": 4 * max_tasks}
            for g in range(groups)
        },
        "neuronPools": {
            "inf": {"instanceType": "inf2.8xlarge", "minSize": 0, "maxSize": groups * max_tasks}
        },
        "models": {},
        "rerankers": {},
    }
    for i in range(services):
        if i % 5 == 4:
            platform_cfg["models"][f"m{i}"] = {
                "engine": "neuron",
                "pool": "inf",
                "architecture": "llama-3.1-8b",
                "weightsUri": f"s3://bench-models/m{i}/",
                "neuron": {"batchSize": 4, "sequenceLength": 4096, "tpDegree": 2},
            }
        else:
            platform_cfg["models"][f"m{i}"] = {
                "engine": "vllm",
                "pool": f"gpu{i // 5}",
                "architecture": "llama-3.1-8b",
                "weightsUri": f"s3://bench-models/m{i}/",
                "maxModelLen": 8192,
                "maxConcurrentSequences": 8,
            }
    for g in range(groups):
        platform_cfg["rerankers"][f"r{g}"] = {
            "modelUri": f"s3://bench-models/r{g}/",
            "cpu": 1024,
            "memoryMib": 2048,
        }
    return platform_cfg


def machine() -> str:
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    import os

    return f"{platform.machine()}, {os.cpu_count()} vCPU, {cpu}, Python {platform.python_version()}"


def versions() -> str:
    from importlib.metadata import version

    names = ("pulumi", "pulumi-aws", "pulumi-awsx", "pulumi-policy", "grpcio")
    return ", ".join(f"{n} {version(n)}" for n in names)


REAL_PARTS = ("import", "program", "checks")
"""Parts of a real run that add up to its wall time (`checks`: after the program)."""
FLOOR_PARTS = ("import", "program", "policy")
THREAD_PARTS = ("fidelity", "rehearsal", "policy")
"""Each part's own duration in a real run (the rehearsal and the pack run in the background)."""


def bench_prod(repeats: int, tmp: Path) -> dict:
    dump = tmp / "prod.json"
    probe("real", "--stack", "prod", "--dump-resources", str(dump))  # warm-up + resource list
    real, default, floor, loads = [], [], [], [load()]
    for _ in range(repeats):
        real.append(probe("real", "--stack", "prod", "--resources", str(dump)))
        default.append(
            probe("real", "--stack", "prod", "--resources", str(dump), "--views", "new,update")
        )
        floor.append(probe("floor", "--resources", str(dump)))
        loads.append(load())
    out = {"resources": real[0]["resources"], "repeats": repeats, "load": loads}
    for part in (*REAL_PARTS, *THREAD_PARTS, "total"):
        out[f"real_{part}"] = stats(real, lambda r, p=part: r[p])
        out[f"default_{part}"] = stats(default, lambda r, p=part: r[p])
    for part in (*FLOOR_PARTS, "total"):
        out[f"floor_{part}"] = stats(floor, lambda r, p=part: r[p])
    # Runs alternate real/floor, so each pair saw the same machine state: the median of the
    # per-pair ratios is robust to a noisy neighbour in a way a ratio of medians is not. The
    # default preview (`make preview`: views new and update, the checks once) is paired with
    # the same floor run: the floor of one view.
    out["ratio_total"] = statistics.median(
        total(r) / total(f) for r, f in zip(real, floor, strict=True)
    )
    out["ratio_default"] = statistics.median(
        total(d) / total(f) for d, f in zip(default, floor, strict=True)
    )
    out["ratio_total_of_mins"] = out["real_total"][0] / out["floor_total"][0]
    return out


def bench_scaling(repeats: int, tmp: Path) -> list[dict]:
    rows = []
    for services in SCALES:
        stack_file = tmp / f"Pulumi.scale{services}.yaml"
        stack_file.write_text(
            yaml.safe_dump(
                {
                    "config": {
                        "aws:region": "us-east-1",
                        "ecs-inference:platform": generated_platform(services),
                    }
                }
            )
        )
        runs = [
            probe("real", "--stack", f"scale{services}", "--stack-file", str(stack_file))
            for _ in range(repeats)
        ]
        program = stats(runs, lambda r: r["program"])
        checks = stats(runs, lambda r: r["checks"])
        n = runs[0]["resources"]
        rows.append(
            {
                "services": services,
                "resources": n,
                "program": program,
                "checks": checks,
                "pack": stats(runs, lambda r: r["policy"]),
                "program_ms_per_resource": 1000 * program[1] / n,
                "checks_ms_per_resource": 1000 * checks[1] / n,
                "total": stats(runs, lambda r: r["program"] + r["checks"]),
            }
        )
    return rows


def render(prod: dict, scaling: list[dict]) -> str:
    def mm(pair: tuple[float, float]) -> str:
        return f"{pair[0]:.2f} / {pair[1]:.2f}"

    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    loads = prod["load"]
    lines = [
        f"## Offline preview and policy cost — {stamp}",
        "",
        f"Machine: {machine()}; load average {min(loads):.1f}–{max(loads):.1f} during the prod "
        f"runs (other sessions share these cores). Versions: {versions()}.",
        f"Reproduce: `make bench` (or `.venv/bin/python -m bench.preview_bench`). Seconds, "
        f"min / median of {prod['repeats']} fresh-interpreter runs, real, default and floor "
        "alternated.",
        "",
        f"### prod stack ({prod['resources']} resources) against the floor",
        "",
        "| part | one view (`update`) | default (`new`, `update`) | floor |",
        "|---|---|---|---|",
    ]
    rows = (
        ("import", "import", "import"),
        ("program (`new` and `update` runs in the default)", "program", "program"),
        ("after the program: checks, rehearsal, pack (floor: empty pack)", "checks", "policy"),
        ("**total (wall)**", "total", "total"),
    )
    for label, real_part, floor_part in rows:
        lines.append(
            f"| {label} | {mm(prod[f'real_{real_part}'])} | {mm(prod[f'default_{real_part}'])} "
            f"| {mm(prod[f'floor_{floor_part}'])} |"
        )
    lines.append(
        "| each on its own thread: fidelity checks / rehearsal / pack analysis | "
        + " / ".join(f"{prod[f'real_{p}'][1]:.2f}" for p in THREAD_PARTS)
        + " | "
        + " / ".join(f"{prod[f'default_{p}'][1]:.2f}" for p in THREAD_PARTS)
        + " | |"
    )
    lines += [
        "",
        f"One view (`update`): **{prod['ratio_total']:.2f}× the floor** (median of paired runs; "
        f"{prod['ratio_total_of_mins']:.2f}× comparing the fastest runs; target ≤ 1.5×). The "
        f"default preview: **{prod['ratio_default']:.2f}× the floor of one view** (target ≤ "
        "2×). The pack against an empty pack is `bench/policy_bench.py`'s figure (1,000+ "
        "resources).",
        "",
        "### scaling with the number of model services",
        "",
        "| services | resources | program s (min / median) | after the program s | pack s "
        "| program ms/resource | after ms/resource |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in scaling:
        lines.append(
            f"| {row['services']} | {row['resources']} | {mm(row['program'])} | "
            f"{mm(row['checks'])} | {mm(row['pack'])} | {row['program_ms_per_resource']:.2f} | "
            f"{row['checks_ms_per_resource']:.2f} |"
        )
    first, last = scaling[0], scaling[-1]
    growth = last["total"][1] / first["total"][1]

    def slope(a: dict, b: dict, key: str) -> float:
        return 1000 * (b[key][1] - a[key][1]) / (b["resources"] - a["resources"])

    steps = list(itertools.pairwise(scaling))
    lines += [
        "",
        "Marginal cost of each added resource (ms, from one stack size to the next; a quadratic "
        "step would make the later slopes grow):",
        "",
        "| step | program ms/resource | after the program ms/resource |",
        "|---|---|---|",
    ]
    for a, b in steps:
        lines.append(
            f"| {a['services']} → {b['services']} services | {slope(a, b, 'program'):.2f} "
            f"| {slope(a, b, 'checks'):.2f} |"
        )
    lines += [
        "",
        f"50-service preview (program and what follows) is **{growth:.1f}× the 5-service one** for "
        f"{last['resources'] / first['resources']:.1f}× the resources (target ≤ 12×).",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--no-record", action="store_true", help="do not append to docs/")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        prod = bench_prod(args.repeats, Path(tmp))
        scaling = bench_scaling(max(2, args.repeats // 2), Path(tmp))
    report = render(prod, scaling)
    print(report)
    if not args.no_record:
        RESULTS.parent.mkdir(exist_ok=True)
        header = "" if RESULTS.exists() else "# Benchmarks\n\n"
        with RESULTS.open("a") as fh:
            fh.write(header + report + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
