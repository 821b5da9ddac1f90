"""The Neuron entrypoint's full run path: stage from "S3", check, start the engine, proxy, stop.

Stand-ins, so no AWS, Neuron device or engine is needed: a `boto3` module on PYTHONPATH that
serves a local directory as the bucket, and an `optimum-cli` on PATH that records its argv and
answers like vLLM's server (a `/health` route and a slow SSE completion). Everything else —
environment from `components/engines/neuron.py`, staging, the artifact check, the subprocess, signal
forwarding and the keep-alive proxy — is the real code.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from ecs_inference.engines import neuron as neuron_engine
from ecs_inference.engines.neuron import NeuronLaunch
from tests.engines.checks import inputs_of

REPO = Path(__file__).resolve().parents[2]
ENTRYPOINT = REPO / "images" / "neuron" / "entrypoint.py"

FAKE_BOTO3 = """
import os, shutil
from pathlib import Path

ROOT = Path(os.environ["FAKE_S3_ROOT"])


class _Paginator:
    def paginate(self, Bucket, Prefix):
        base = ROOT / Bucket
        keys = sorted(str(p.relative_to(base)) for p in base.rglob("*") if p.is_file())
        yield {"Contents": [
            {"Key": k, "Size": (base / k).stat().st_size} for k in keys if k.startswith(Prefix)
        ]}


class _S3:
    def get_paginator(self, name):
        assert name == "list_objects_v2"
        return _Paginator()

    def download_file(self, Bucket, Key, Filename):
        shutil.copyfile(ROOT / Bucket / Key, Filename)


def client(name):
    assert name == "s3"
    return _S3()
"""

FAKE_OPTIMUM_CLI = r"""#!PYTHON
import asyncio, json, os, signal, sys

args = sys.argv[1:]
with open(os.environ["FAKE_ARGV_OUT"], "w") as out:
    json.dump(args, out)
host, port = args[args.index("--host") + 1], int(args[args.index("--port") + 1])


async def handle(reader, writer):
    head = (await reader.readuntil(b"\r\n\r\n")).decode()
    length = [l for l in head.split("\r\n") if l.lower().startswith("content-length:")]
    await reader.readexactly(int(length[0].split(":")[1]) if length else 0)
    if " /health " in head.split("\r\n")[0] + " ":
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n")
    else:
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                     b"transfer-encoding: chunked\r\n\r\n")
        await writer.drain()
        await asyncio.sleep(2.5)
        for event in (b'data: {"text": "hi"}\n\n', b"data: [DONE]\n\n"):
            writer.write(b"%x\r\n%b\r\n" % (len(event), event))
        writer.write(b"0\r\n\r\n")
    await writer.drain()
    writer.close()


async def main():
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    server = await asyncio.start_server(handle, host, port)
    await stop.wait()
    server.close()

asyncio.run(main())
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def write_artifact(root: Path, batch_size: int) -> None:
    root.mkdir(parents=True)
    (root / "neuron_config.json").write_text(
        json.dumps(
            {
                "batch_size": batch_size,
                "sequence_length": 2048,
                "tp_degree": 2,
                "target": "trn1",
                "checkpoint_id": None,
                "_serialized_key": "NxDNeuronConfig",
                "optimum_neuron_version": neuron_engine.OPTIMUM_NEURON_VERSION,
                "neuronxcc_version": "2.21.33363.0",
            }
        )
    )
    (root / "config.json").write_text("{}")
    (root / "model.pt").write_bytes(b"\0" * 64)
    (root / "model.safetensors").write_bytes(b"\0" * 128)


@pytest.fixture
def world(tmp_path: Path) -> dict[str, object]:
    fakes = tmp_path / "fakes"
    (fakes / "boto3").mkdir(parents=True)
    (fakes / "boto3" / "__init__.py").write_text(FAKE_BOTO3)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    cli = bin_dir / "optimum-cli"
    cli.write_text(FAKE_OPTIMUM_CLI.replace("PYTHON", sys.executable, 1))
    cli.chmod(0o755)
    return {"tmp": tmp_path, "fakes": fakes, "bin": bin_dir}


def start(world: dict[str, object], batch_size: int) -> tuple[subprocess.Popen[str], int, Path]:
    tmp: Path = world["tmp"]  # type: ignore[assignment]
    write_artifact(tmp / "s3" / "models-bucket" / "neuron" / "llama", batch_size)
    port = free_port()
    inputs = inputs_of(
        "neuron",
        "inf2.xlarge",
        name="llama",
        weightsUri="s3://models-bucket/neuron/llama/",
        maxModelLen=2048,
        neuron={"batchSize": 4, "sequenceLength": 2048, "tpDegree": 2},
    )
    launch = NeuronLaunch(
        inputs,
        model_dir=str(tmp / "models" / "llama"),
        keepalive_seconds=1,
        port=port,
        upstream_port=free_port(),
    )
    env = {item["name"]: item["value"] for item in launch.container_environment()}
    env |= {
        "PATH": f"{world['bin']}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPATH": str(world["fakes"]),
        "FAKE_S3_ROOT": str(tmp / "s3"),
        "FAKE_ARGV_OUT": str(tmp / "engine-argv.json"),
    }
    proc = subprocess.Popen(
        [sys.executable, str(ENTRYPOINT)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    return proc, port, Path(launch.model_dir)


def wait_healthy(port: int, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as resp:
                if resp.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError):
            pass
        time.sleep(0.05)
    raise AssertionError("proxy never reported the engine healthy")


def test_stages_checks_serves_with_keepalives_and_stops_on_sigterm(world):
    proc, port, model_dir = start(world, batch_size=4)
    try:
        wait_healthy(port, proc)
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/v1/completions",
            data=json.dumps({"model": "llama", "prompt": "hi", "stream": True}).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=10) as resp:
            body = resp.read()
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=15)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, stderr
    assert body.count(b": keep-alive\n\n") >= 2
    assert body.endswith(b'data: {"text": "hi"}\n\ndata: [DONE]\n\n')
    staged = sorted(p.name for p in model_dir.iterdir())
    assert staged == ["config.json", "model.pt", "model.safetensors", "neuron_config.json"]
    argv = json.loads((world["tmp"] / "engine-argv.json").read_text())
    assert argv[:2] == ["neuron", "serve"]
    assert argv[argv.index("--model") + 1] == str(model_dir)
    assert argv[argv.index("--batch-size") + 1] == "4"
    assert "staged 4 files" in stderr


def test_mismatched_artifact_never_starts_the_engine(world):
    proc, _, _ = start(world, batch_size=8)
    _, stderr = proc.communicate(timeout=15)
    assert proc.returncode == 1
    assert "compiled for batch_size=8" in stderr and "configured for batch_size=4" in stderr
    assert not (world["tmp"] / "engine-argv.json").exists()
