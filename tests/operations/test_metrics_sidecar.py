"""The metrics sidecar against `/metrics` bodies produced from the pinned engines' real metric
definitions: the values it publishes, the EMF it prints, and what it does when the engine
misbehaves (missing families, NaN, counter resets, an engine that stops answering).

Needs the pinned engine wheels in `.cache/engines` (`make test` fetches them).
"""

from __future__ import annotations

import importlib.util
import json
import math
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ecs_inference.contracts import metrics as contract
from tests.operations.engine_metrics import FakeEngine, bucket_bounds, families
from tools.sources import vllm as vllm_source

ROOT = Path(__file__).resolve().parents[2]
SIDECAR_PATH = ROOT / "images" / "metrics" / "emf_sidecar.py"


def _load_sidecar():
    spec = importlib.util.spec_from_file_location("emf_sidecar", SIDECAR_PATH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["emf_sidecar"] = module
    spec.loader.exec_module(module)
    return module


sidecar = _load_sidecar()
RELEASES = {"vllm": vllm_source.VLLM_GPU, "neuron": vllm_source.VLLM_NEURON}


def _spec(kind: str):
    return sidecar.Spec.from_json(contract.scrape_spec(kind))


def _check_emf(doc: dict[str, Any], spec) -> None:
    """What CloudWatch requires of an EMF event (the embedded metric format specification)."""
    text = json.dumps(doc, allow_nan=False)  # NaN/Infinity are not JSON and not extracted
    assert len(text.encode()) < 1_048_576
    directive = doc["_aws"]
    assert isinstance(directive["Timestamp"], int)
    (block,) = directive["CloudWatchMetrics"]
    assert block["Namespace"] == contract.NAMESPACE
    assert not block["Namespace"].startswith("AWS/")
    assert 1 <= len(block["Metrics"]) <= contract.EMF_MAX_METRICS_PER_DOCUMENT
    for dims in block["Dimensions"]:
        assert 1 <= len(dims) <= 30
        for d in dims:
            assert isinstance(doc[d], str) and doc[d]
    for metric in block["Metrics"]:
        value = doc[metric["Name"]]
        assert isinstance(value, (int, float)) and math.isfinite(value)
        assert metric["Unit"] in {"Count", "Percent", "Milliseconds", "Seconds", "None"}


# ------------------------------------------------------------------------------------------------
# the contract names are the engines' names
# ------------------------------------------------------------------------------------------------

KIND_OF = {
    "gauge": "gauge",
    "counter": "counter",
    "histogram_quantile": "histogram",
    "histogram_mean": "histogram",
}


@pytest.mark.parametrize("kind", ["vllm", "neuron"])
def test_every_published_vllm_metric_exists_in_the_pinned_release(kind):
    defined = families(RELEASES[kind])
    assert len(defined) > 20, "the loggers.py reader found too few families"
    for m in contract.METRICS_BY_KIND[kind]:
        assert m.source in defined, f"{m.source} is not defined by {RELEASES[kind]}"
        assert defined[m.source].kind == KIND_OF[m.kind], m


def test_the_issue_s_engine_signals_are_all_published():
    names = set(contract.published_names("vllm"))
    wanted = {
        contract.REQUESTS_WAITING, contract.REQUESTS_RUNNING, contract.KV_CACHE_USAGE,
        contract.TTFT_P50, contract.TTFT_P99, contract.ITL_P99, contract.E2E_P99,
        contract.PROMPT_TOKENS, contract.GENERATION_TOKENS, contract.ENGINE_UP,
    }  # fmt: skip
    assert wanted <= names


def test_spec_is_stable_json_within_emf_limits():
    for kind in contract.METRICS_BY_KIND:
        text = contract.scrape_spec(kind)
        assert text == contract.scrape_spec(kind)
        spec = sidecar.Spec.from_json(text)
        assert len(spec.metrics) + 1 <= contract.EMF_MAX_METRICS_PER_DOCUMENT
        assert len({m.name for m in spec.metrics}) == len(spec.metrics)


# ------------------------------------------------------------------------------------------------
# values from real /metrics text
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["vllm", "neuron"])
def test_values_from_real_exposition_with_two_engines(kind):
    release = RELEASES[kind]
    engine = FakeEngine(release, engines=2)
    deriver = sidecar.Deriver(_spec(kind))
    first = deriver.derive(sidecar.parse_exposition(engine.text()))
    # first scrape: gauges yes, interval figures no (a baseline is not an interval)
    assert first[contract.REQUESTS_WAITING] == 0
    assert contract.PROMPT_TOKENS not in first and contract.TTFT_P99 not in first

    engine.set("vllm:num_requests_waiting", 3, engine=0)
    engine.set("vllm:num_requests_waiting", 2, engine=1)
    engine.set("vllm:num_requests_running", 8, engine=0)
    engine.set("vllm:num_requests_running", 7, engine=1)
    engine.set("vllm:kv_cache_usage_perc", 0.5, engine=0)
    engine.set("vllm:kv_cache_usage_perc", 0.7, engine=1)
    engine.inc("vllm:prompt_tokens", 1000, engine=0)
    engine.inc("vllm:prompt_tokens", 500, engine=1)
    engine.inc("vllm:generation_tokens", 250, engine=1)
    engine.inc("vllm:request_success", 4, engine=0)
    engine.observe("vllm:time_to_first_token_seconds", [0.12] * 98 + [3.3] * 2, engine=0)
    engine.observe("vllm:e2e_request_latency_seconds", [7.0] * 10, engine=1)
    doc = deriver.derive(sidecar.parse_exposition(engine.text()))

    assert doc[contract.REQUESTS_WAITING] == 5
    assert doc[contract.REQUESTS_RUNNING] == 15
    assert doc[contract.KV_CACHE_USAGE] == pytest.approx(60.0)
    assert doc[contract.PROMPT_TOKENS] == 1500
    assert doc[contract.GENERATION_TOKENS] == 250
    assert doc[contract.REQUESTS_FINISHED] == 4
    ttft = families(release)["vllm:time_to_first_token_seconds"].buckets
    assert ttft is not None
    lo, hi = bucket_bounds(ttft, 0.12)
    assert lo * 1000 <= doc[contract.TTFT_P50] <= hi * 1000
    lo, hi = bucket_bounds(ttft, 3.3)
    assert lo * 1000 <= doc[contract.TTFT_P99] <= hi * 1000
    e2e = families(release)["vllm:e2e_request_latency_seconds"].buckets
    assert e2e is not None
    lo, hi = bucket_bounds(e2e, 7.0)
    assert lo <= doc[contract.E2E_P99] <= hi
    # no inter-token observations in this interval: no value, not zero
    assert contract.ITL_P50 not in doc

    # the next interval counts only what happened since
    engine.inc("vllm:prompt_tokens", 10, engine=0)
    engine.observe("vllm:time_to_first_token_seconds", [3.3] * 10, engine=1)
    doc = deriver.derive(sidecar.parse_exposition(engine.text()))
    assert doc[contract.PROMPT_TOKENS] == 10
    assert doc[contract.GENERATION_TOKENS] == 0
    low3, high3 = bucket_bounds(ttft, 3.3)
    assert low3 * 1000 <= doc[contract.TTFT_P50] <= high3 * 1000


def test_missing_families_are_left_out_not_zeroed():
    engine = FakeEngine(vllm_source.VLLM_GPU)
    kept = "\n".join(
        line
        for line in engine.text().splitlines()
        if "kv_cache_usage_perc" not in line and "vllm:prompt_tokens" not in line
    )
    spec = _spec("vllm")
    deriver = sidecar.Deriver(spec)
    deriver.derive(sidecar.parse_exposition(kept))
    values = deriver.derive(sidecar.parse_exposition(kept))
    assert contract.KV_CACHE_USAGE not in values and contract.PROMPT_TOKENS not in values
    assert values[contract.REQUESTS_RUNNING] == 0 and values[contract.GENERATION_TOKENS] == 0
    doc = sidecar.emf_document(spec, {**values, "EngineUp": 1.0}, _dims(), 1)
    _check_emf(doc, spec)
    listed = {m["Name"] for m in doc["_aws"]["CloudWatchMetrics"][0]["Metrics"]}
    assert contract.KV_CACHE_USAGE not in listed and contract.REQUESTS_RUNNING in listed


def test_nan_and_infinite_values_are_not_published():
    text = (
        '# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting{engine="0"} NaN\n'
        'vllm:num_requests_running{engine="0"} +Inf\n'
        'vllm:kv_cache_usage_perc{engine="0"} 0.25\nvllm:kv_cache_usage_perc{engine="1"} NaN\n'
    )
    spec = _spec("vllm")
    values = sidecar.Deriver(spec).derive(sidecar.parse_exposition(text))
    assert contract.REQUESTS_WAITING not in values
    assert contract.REQUESTS_RUNNING not in values
    assert values[contract.KV_CACHE_USAGE] == 25.0  # the NaN engine is skipped, not averaged
    _check_emf(sidecar.emf_document(spec, {**values, "EngineUp": 1.0}, _dims(), 1), spec)


def test_counter_and_histogram_resets_count_from_zero():
    spec = _spec("vllm")
    deriver = sidecar.Deriver(spec)
    engine = FakeEngine(vllm_source.VLLM_GPU)
    engine.inc("vllm:generation_tokens", 5000)
    engine.observe("vllm:time_to_first_token_seconds", [9.0] * 50)
    deriver.derive(sidecar.parse_exposition(engine.text()))
    # the engine process restarted: a fresh registry, lower counters and buckets
    restarted = FakeEngine(vllm_source.VLLM_GPU)
    restarted.inc("vllm:generation_tokens", 40)
    restarted.observe("vllm:time_to_first_token_seconds", [0.05] * 3)
    values = deriver.derive(sidecar.parse_exposition(restarted.text()))
    assert values[contract.GENERATION_TOKENS] == 40
    buckets = families(vllm_source.VLLM_GPU)["vllm:time_to_first_token_seconds"].buckets
    assert buckets is not None
    lo, hi = bucket_bounds(buckets, 0.05)
    assert lo * 1000 <= values[contract.TTFT_P99] <= hi * 1000


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(min_value=0, max_value=1e15, allow_nan=False), min_size=2, max_size=8))
def test_counter_increase_is_never_negative(readings):
    spec = sidecar.Spec.from_json(contract.scrape_spec("vllm"))
    deriver = sidecar.Deriver(spec)
    for i, value in enumerate(readings):
        text = f'vllm:generation_tokens_total{{engine="0"}} {value!r}\n'
        out = deriver.derive(sidecar.parse_exposition(text))
        if i == 0:
            assert contract.GENERATION_TOKENS not in out
        else:
            previous = readings[i - 1]
            expected = value - previous if value >= previous else value
            assert out[contract.GENERATION_TOKENS] == pytest.approx(expected, rel=1e-6, abs=1e-6)
            assert out[contract.GENERATION_TOKENS] >= 0


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=400))
def test_parser_and_deriver_never_raise_on_garbage(text):
    deriver = sidecar.Deriver(_spec("reranker"))
    deriver.derive(sidecar.parse_exposition(text))
    values = deriver.derive(sidecar.parse_exposition(text))
    assert all(math.isfinite(v) for v in values.values())


def test_label_values_with_escapes_parse():
    (sample,) = sidecar.parse_exposition('m{a="x\\"y",b="1\\\\2",c="l\\nm"} 3 1700000000000')
    assert dict(sample.labels) == {"a": 'x"y', "b": "1\\2", "c": "l\nm"}
    assert sample.value == 3


@pytest.mark.parametrize(
    ("q", "buckets", "expected"),
    [
        (0.5, [(1.0, 0), (2.0, 10), (math.inf, 10)], 1.5),
        (0.99, [(1.0, 5), (2.0, 5), (math.inf, 10)], 2.0),  # rank in +Inf: highest finite bound
        (0.5, [(1.0, 0), (math.inf, 0)], None),
        (0.0, [(1.0, 4), (math.inf, 4)], 0.0),
    ],
)
def test_bucket_quantile_follows_prometheus(q, buckets, expected):
    assert sidecar.bucket_quantile(q, buckets) == expected


# ------------------------------------------------------------------------------------------------
# the re-ranker's own families
# ------------------------------------------------------------------------------------------------


def test_reranker_throttles_and_queue_from_its_exposition():
    from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

    registry = CollectorRegistry()
    requests = Counter("reranker_requests_total", "", ["status"], registry=registry)
    latency = Histogram("reranker_request_seconds", "", registry=registry)
    batch = Histogram("reranker_batch_pairs", "", buckets=(1, 8, 32, 256), registry=registry)
    queue = Gauge("reranker_queue_work_tokens", "", registry=registry)
    requests.labels("200").inc(10)
    spec = _spec("reranker")
    deriver = sidecar.Deriver(spec)
    deriver.derive(sidecar.parse_exposition(generate_latest(registry).decode()))
    requests.labels("200").inc(5)
    values = deriver.derive(sidecar.parse_exposition(generate_latest(registry).decode()))
    assert values[contract.RERANKER_THROTTLED] == 0  # no 429 series yet: none happened
    requests.labels("429").inc(3)
    requests.labels("200").inc(1)
    queue.set(120)
    latency.observe(0.02)
    batch.observe(16)
    batch.observe(48)
    values = deriver.derive(sidecar.parse_exposition(generate_latest(registry).decode()))
    assert values[contract.RERANKER_THROTTLED] == 3
    assert values[contract.RERANKER_REQUESTS] == 4
    assert values[contract.RERANKER_QUEUE_WORK_TOKENS] == 120
    assert values[contract.RERANKER_BATCH_PAIRS] == 32
    assert 10 <= values[contract.RERANKER_LATENCY_P50] <= 25


# ------------------------------------------------------------------------------------------------
# the loop against a real HTTP engine that goes away
# ------------------------------------------------------------------------------------------------


def _dims() -> dict[str, str]:
    return {"Stack": "dev", "Service": "llama", "Task": "0123456789abcdef"}


class _Engine:
    def __init__(self, body: str) -> None:
        self.body = body.encode()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path == "/task":
                    payload = json.dumps(
                        {"TaskARN": "arn:aws:ecs:us-east-1:123456789012:task/c/0123456789abcdef"}
                    ).encode()
                else:
                    payload = outer.body
                self.send_response(200)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _sidecar(url: str, grace: float, clock: list[float], metadata: str | None = None):
    lines: list[str] = []
    errors: list[str] = []
    car = sidecar.Sidecar(
        spec=_spec("vllm"),
        url=url,
        stack="dev",
        service="llama",
        interval=15,
        startup_grace=grace,
        metadata_uri=metadata,
        timeout=1.0,
        out=lines.append,
        err=errors.append,
        clock=lambda: clock[0],
        wall_ms=lambda: 1_700_000_000_000,
    )
    return car, lines, errors


def test_engine_up_then_down_is_published_as_zero():
    engine = _Engine(FakeEngine(vllm_source.VLLM_GPU).text())
    clock = [0.0]
    base = f"http://127.0.0.1:{engine.port}"
    car, lines, errors = _sidecar(f"{base}/metrics", grace=600, clock=clock, metadata=base)
    try:
        up = car.step()
        assert up is not None and up["EngineUp"] == 1.0 and up["Task"] == "0123456789abcdef"
        _check_emf(up, car.spec)
    finally:
        engine.stop()
    clock[0] = 30.0  # well inside the startup grace, but the engine had answered: it is down
    down = car.step()
    assert down is not None and down["EngineUp"] == 0.0
    assert contract.REQUESTS_RUNNING not in down  # no stale load figures from a dead engine
    _check_emf(down, car.spec)
    car.step()
    assert len(errors) == 1  # reported once, not every interval
    assert [json.loads(line)["EngineUp"] for line in lines] == [1.0, 0.0, 0.0]


def test_unreachable_engine_waits_out_the_startup_grace_then_reports_down():
    with_socket = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    port = with_socket.server_address[1]
    with_socket.server_close()  # nothing listens there now: connection refused
    clock = [0.0]
    car, lines, _ = _sidecar(f"http://127.0.0.1:{port}/metrics", grace=600, clock=clock)
    assert car.step() is None and lines == []  # loading weights is not an outage
    clock[0] = 601.0
    doc = car.step()
    assert doc is not None and doc["EngineUp"] == 0.0 and doc["Task"] == "unknown"
    _check_emf(doc, car.spec)


def test_run_loop_survives_a_failing_step_and_stops_on_event():
    clock = [0.0]
    car, _, errors = _sidecar("http://127.0.0.1:1/metrics", grace=0, clock=clock)
    calls = []

    def boom():
        calls.append(1)
        if len(calls) >= 3:
            car.stop.set()
        raise RuntimeError("unexpected")

    car.step = boom  # type: ignore[method-assign]
    car.interval = 0
    car.run()
    assert len(calls) == 3 and all("unexpected" in e for e in errors)


def test_environment_errors_name_the_variable():
    with pytest.raises(ValueError, match="METRICS_SPEC, METRICS_STACK"):
        sidecar.from_environment({"METRICS_TARGET_URL": "http://127.0.0.1:8000/metrics"})
    env = {
        "METRICS_TARGET_URL": "http://127.0.0.1:8000/metrics",
        "METRICS_SPEC": contract.scrape_spec("neuron"),
        "METRICS_STACK": "prod",
        "METRICS_SERVICE": "llama",
    }
    assert sidecar.from_environment(env).interval == contract.DEFAULT_INTERVAL_SECONDS
    with pytest.raises(ValueError, match="METRICS_INTERVAL_SECONDS"):
        sidecar.from_environment({**env, "METRICS_INTERVAL_SECONDS": "soon"})
    with pytest.raises(ValueError, match="METRICS_SPEC is not a valid"):
        sidecar.from_environment({**env, "METRICS_SPEC": '{"metrics": [{"kind": "bogus"}]}'})


def test_sidecar_defaults_match_the_contract():
    source = SIDECAR_PATH.read_text()
    for name in (
        contract.ENV_TARGET_URL, contract.ENV_SPEC, contract.ENV_STACK, contract.ENV_SERVICE,
        contract.ENV_INTERVAL_SECONDS, contract.ENV_STARTUP_GRACE_SECONDS,
        contract.ENV_METADATA_URI,
    ):  # fmt: skip
        assert f'"{name}"' in source, name
    assert sidecar.ENGINE_UP == contract.ENGINE_UP
    car = sidecar.Sidecar(spec=_spec("vllm"), url="u", stack="s", service="v", interval=1,
                          startup_grace=0)  # fmt: skip
    assert car.timeout == contract.SCRAPE_TIMEOUT_SECONDS
    assert car.max_bytes == contract.MAX_SCRAPE_BYTES
    assert sidecar.DIMENSIONS == (contract.DIM_STACK, contract.DIM_SERVICE, contract.DIM_TASK)


@pytest.mark.parametrize("kind", ["vllm", "neuron"])
def test_filtering_unpublished_families_changes_no_value(kind):
    engine = FakeEngine(RELEASES[kind], engines=2)
    spec = _spec(kind)
    full, filtered = sidecar.Deriver(spec), sidecar.Deriver(spec)
    for step in range(3):
        engine.inc("vllm:generation_tokens", 10 + step, engine=step % 2)
        engine.observe("vllm:time_to_first_token_seconds", [0.3 * (step + 1)] * 7)
        engine.set("vllm:num_requests_running", step)
        text = engine.text()
        kept = sidecar.parse_exposition(text, spec.sample_names)
        assert len(kept) < len(sidecar.parse_exposition(text)) / 2
        assert filtered.derive(kept) == full.derive(sidecar.parse_exposition(text))


def test_the_process_prints_emf_lines_and_exits_0_on_sigterm():
    """The image's entrypoint end to end: a real process, a real HTTP engine, SIGTERM."""
    import os
    import signal
    import subprocess
    import time

    engine = _Engine(FakeEngine(vllm_source.VLLM_GPU).text())
    env = {
        "PATH": os.environ.get("PATH", ""),
        contract.ENV_TARGET_URL: f"http://127.0.0.1:{engine.port}/metrics",
        contract.ENV_SPEC: contract.scrape_spec("vllm"),
        contract.ENV_STACK: "dev",
        contract.ENV_SERVICE: "llama",
        contract.ENV_INTERVAL_SECONDS: "1",
        contract.ENV_METADATA_URI: f"http://127.0.0.1:{engine.port}",
    }
    proc = subprocess.Popen(
        [sys.executable, "-S", str(SIDECAR_PATH)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 20
        first = proc.stdout.readline() if proc.stdout else ""
        assert first, proc.stderr.read() if proc.stderr else ""
        while time.monotonic() < deadline and proc.stdout and not proc.stdout.readline():
            pass
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=15)
    finally:
        if proc.poll() is None:
            proc.kill()
        engine.stop()
    assert proc.returncode == 0, err
    doc = json.loads(first)
    _check_emf(doc, _spec("vllm"))
    assert doc["EngineUp"] == 1.0 and doc["Task"] == "0123456789abcdef"
    for line in out.splitlines():
        _check_emf(json.loads(line), _spec("vllm"))


def test_the_process_refuses_a_missing_configuration_with_exit_2():
    import subprocess

    proc = subprocess.run(
        [sys.executable, "-S", str(SIDECAR_PATH)],
        env={"PATH": ""},
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.returncode == 2
    assert "METRICS_TARGET_URL" in proc.stderr and "Traceback" not in proc.stderr
