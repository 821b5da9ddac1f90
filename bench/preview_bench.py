"""Offline preview and policy evaluation cost, against a floor measured in the same run.

    python -m bench.preview_bench [--repeats 5] [--no-record]

1. prod stack: the real preview (program under mocks + the real pack over gRPC), in one view and
   in the default views (`new` and `update`), against a floor
   that registers the same resources (types, names, parents, inputs) as bare SDK resources
   under the same mocks and analyses them with an empty pack. Each run is a fresh interpreter
   (bench/preview_probe.py), alternating real and floor so machine noise hits both alike.
   Reported: min/median of import, program and policy time, and the median of the paired
   real/floor ratios.
2. scaling: generated stacks with 5, 10, 25 and 50 model services (plus a pool per five
   models, a Neuron pool and one re-ranker per five models): program and policy time per
   resource, and the 50/5 ratio, to catch anything quadratic (a stack rule that compares every
   pair of resources would show up here).
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
    return run["import"] + run["program"] + run.get("fidelity", 0.0) + run["policy"]


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


def bench_prod(repeats: int, tmp: Path) -> dict:
    dump = tmp / "prod.json"
    probe("real", "--stack", "prod", "--dump-resources", str(dump))  # warm-up + resource list
    real, default, floor = [], [], []
    for _ in range(repeats):
        real.append(probe("real", "--stack", "prod", "--resources", str(dump)))
        default.append(
            probe("real", "--stack", "prod", "--resources", str(dump), "--views", "new,update")
        )
        floor.append(probe("floor", "--resources", str(dump)))
    out = {"resources": real[0]["resources"], "repeats": repeats}
    # The default preview (`make preview`: views new and update, the checks once) against the
    # floor of one view, paired with the same floor run.
    out["default_total"] = stats(default, total)
    out["ratio_default"] = statistics.median(
        total(d) / total(f) for d, f in zip(default, floor, strict=True)
    )
    for part in ("import", "program", "fidelity", "policy"):
        out[f"real_{part}"] = stats(real, lambda r, p=part: r.get(p, 0.0))
        out[f"floor_{part}"] = stats(floor, lambda r, p=part: r.get(p, 0.0))
    out["real_total"] = stats(real, total)
    out["floor_total"] = stats(floor, total)
    # Runs alternate real/floor, so each pair saw the same machine state: the median of the
    # per-pair ratios is robust to a noisy neighbour in a way a ratio of medians is not.
    out["ratio_total"] = statistics.median(
        total(r) / total(f) for r, f in zip(real, floor, strict=True)
    )
    out["ratio_total_of_mins"] = out["real_total"][0] / out["floor_total"][0]
    n = out["resources"]
    out["policy_per_resource_ms"] = (
        1000 * (out["real_policy"][1] - out["floor_policy"][1]) / n,
        1000 * out["floor_policy"][1] / n,
    )
    out["ratio_policy"] = statistics.median(
        r["policy"] / f["policy"] for r, f in zip(real, floor, strict=True)
    )
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
        policy = stats(runs, lambda r: r["policy"])
        n = runs[0]["resources"]
        rows.append(
            {
                "services": services,
                "resources": n,
                "program": program,
                "policy": policy,
                "program_ms_per_resource": 1000 * program[1] / n,
                "policy_ms_per_resource": 1000 * policy[1] / n,
                "total": stats(runs, lambda r: r["program"] + r["policy"]),
            }
        )
    return rows


def render(prod: dict, scaling: list[dict]) -> str:
    def mm(pair: tuple[float, float]) -> str:
        return f"{pair[0]:.2f} / {pair[1]:.2f}"

    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    lines = [
        f"## Offline preview and policy cost — {stamp}",
        "",
        f"Machine: {machine()}. Versions: {versions()}.",
        f"Reproduce: `make bench` (or `.venv/bin/python -m bench.preview_bench`). Seconds, "
        f"min / median of {prod['repeats']} fresh-interpreter runs, real and floor alternated.",
        "",
        f"### prod stack ({prod['resources']} resources) against the floor",
        "",
        "| part | preview (ours) | floor | ratio of medians |",
        "|---|---|---|---|",
    ]
    for part in ("import", "program", "fidelity", "policy", "total"):
        real, floor = prod[f"real_{part}"], prod[f"floor_{part}"]
        ratio = f"{real[1] / floor[1]:.2f}×" if floor[1] else "(the floor does none)"
        lines.append(f"| {part} | {mm(real)} | {mm(floor)} | {ratio} |")
    lines += [
        "",
        f"One view (`update`): **{prod['ratio_total']:.2f}× the floor** (median of paired runs; "
        f"{prod['ratio_total_of_mins']:.2f}× comparing the fastest runs; target ≤ 1.5×). The "
        f"default preview (views `new` and `update`, {mm(prod['default_total'])} s): "
        f"**{prod['ratio_default']:.2f}× the floor of one view** (target ≤ 2×). Policy "
        f"analysis: **{prod['ratio_policy']:.2f}× the empty pack** (target ≤ 2×); per resource "
        f"the rules add {prod['policy_per_resource_ms'][0]:.2f} ms on top of the empty pack's "
        f"{prod['policy_per_resource_ms'][1]:.2f} ms (which is mostly the pack process start).",
        "",
        "### scaling with the number of model services",
        "",
        "| services | resources | program s (min / median) | policy s | program ms/resource "
        "| policy ms/resource |",
        "|---|---|---|---|---|---|",
    ]
    for row in scaling:
        lines.append(
            f"| {row['services']} | {row['resources']} | {mm(row['program'])} | "
            f"{mm(row['policy'])} | {row['program_ms_per_resource']:.2f} | "
            f"{row['policy_ms_per_resource']:.2f} |"
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
        "| step | program ms/resource | policy ms/resource |",
        "|---|---|---|",
    ]
    for a, b in steps:
        lines.append(
            f"| {a['services']} → {b['services']} services | {slope(a, b, 'program'):.2f} "
            f"| {slope(a, b, 'policy'):.2f} |"
        )
    lines += [
        "",
        f"50-service preview (program + policy) is **{growth:.1f}× the 5-service one** for "
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
