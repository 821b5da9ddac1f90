"""Metrics sidecar: the cost of one scrape step, against prometheus_client's own text parser.

The sidecar parses the engine's whole `/metrics` body and derives the published values every
`DEFAULT_INTERVAL_SECONDS`. The body is vLLM 0.33.0's real exposition (every family of its
`PrometheusStatLogger`, rendered by prometheus_client, with observations in every histogram);
the baseline is `prometheus_client.parser.text_string_to_metric_families` on the same text,
parsing only. Interleaved repeats, medians; the figure is a ratio (sidecar step / baseline
parse) plus the step's share of one CPU at the scrape interval.

    python -m bench.metrics_sidecar_bench [--repeats 15]
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import statistics
import sys
import time
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from ecs_inference.contracts import metrics as contract
from tests.operations.engine_metrics import FakeEngine
from tools.sources import vllm as vllm_source

REPO = Path(__file__).resolve().parent.parent
DOC = REPO / "docs" / "benchmarks.md"


def _sidecar():
    spec = importlib.util.spec_from_file_location(
        "emf_sidecar", REPO / "images" / "metrics" / "emf_sidecar.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["emf_sidecar"] = module
    spec.loader.exec_module(module)
    return module


def _body(engines: int) -> str:
    engine = FakeEngine(vllm_source.VLLM_GPU, engines=engines)
    for i in range(engines):
        for name in (
            "vllm:time_to_first_token_seconds",
            "vllm:inter_token_latency_seconds",
            "vllm:e2e_request_latency_seconds",
        ):
            engine.observe(name, [0.05, 0.3, 2.0, 9.0] * 25, engine=i)
        engine.inc("vllm:generation_tokens", 1000, engine=i)
    return engine.text()


def _time(fn, loops: int) -> float:
    start = time.perf_counter()
    for _ in range(loops):
        fn()
    return (time.perf_counter() - start) / loops


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--no-record", action="store_true")
    args = parser.parse_args(argv)
    sidecar = _sidecar()
    spec = sidecar.Spec.from_json(contract.scrape_spec("vllm"))
    rows = []
    for engines in (1, 4):
        body = _body(engines)
        deriver = sidecar.Deriver(spec)
        wanted = spec.sample_names
        deriver.derive(sidecar.parse_exposition(body, wanted))

        def step(body: str = body, deriver=deriver, wanted=wanted) -> None:
            deriver.derive(sidecar.parse_exposition(body, wanted))

        def baseline(body: str = body) -> None:
            for _ in text_string_to_metric_families(body):
                pass

        ours, theirs = [], []
        for _ in range(args.repeats):  # interleaved: a noisy neighbour hits both alike
            ours.append(_time(step, 5))
            theirs.append(_time(baseline, 5))
        o, t = statistics.median(ours), statistics.median(theirs)
        share = o / contract.DEFAULT_INTERVAL_SECONDS
        rows.append((engines, len(body), o, t, o / t, share))
        print(
            f"{engines} engine(s), {len(body):,} B body: sidecar step {o * 1000:.2f} ms, "
            f"prometheus_client parse {t * 1000:.2f} ms, ratio {o / t:.2f}x; "
            f"{share:.4%} of a CPU at a {contract.DEFAULT_INTERVAL_SECONDS} s interval"
        )
    if not args.no_record:
        today = datetime.date.today().isoformat()
        lines = [
            "",
            f"## Metrics sidecar scrape step ({today}, {args.repeats} interleaved repeats, "
            "medians)",
            "",
            "| engines | /metrics body | sidecar parse + derive | prometheus_client parse only "
            "| ratio | CPU share at the interval |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        lines += [
            f"| {e} | {b:,} B | {o * 1000:.2f} ms | {t * 1000:.2f} ms | {r:.2f}x | {s:.3%} |"
            for e, b, o, t, r, s in rows
        ]
        with DOC.open("a") as handle:
            handle.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
