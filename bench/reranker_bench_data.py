"""Re-ranker benchmark (bench/reranker_bench.py): the model, the requests, the machine's peak and
the peers' virtualenvs."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
IMAGE_DIR = ROOT / "images" / "reranker"
PEERS_DIR = ROOT / "bench" / "peers"
PEER_VENVS = ROOT / ".cache" / "reranker-peers"
sys.path.insert(0, str(IMAGE_DIR))
sys.path.insert(0, str(ROOT / "bench"))
import reranker_precision as rp  # noqa: E402
import reranker_train  # noqa: E402

SEED = 2026
MAX_LENGTH = 512
GEMM_N = 2048
DOC_COUNTS = (20, 50, 100)
CONCURRENCY = (1, 4, 16)
#: Document lengths in words per mix. The corpus draws whole vocabulary words, each one token,
#: so a pair is (query words + document words + 3 special tokens) long.
MIXES = {"short": (30, 90), "realistic": (20, 200)}
OURS = rp.FP32
#: Held-out queries a split that pick and judge int8 (prepare.py: all by default; fewer here,
#: because a loaded 2-vCPU host scores about 10 realistic pairs a second).
JUDGE_QUERIES: int | None = 40


# --- model and data ------------------------------------------------------------------------------


def build_cross_encoder(out: Path, trained: Path | None = None) -> Path:
    """all-MiniLM-L6-v2 trained as a cross-encoder (bench/reranker_train.py, its defaults; or a
    copy of its earlier output `trained`), saved as a HF directory with the tokenizer declaring
    MAX_LENGTH."""
    if trained is None:
        reranker_train.build(out)
    else:
        shutil.copytree(trained, out)
    save_tokenizer(reranker_train.base_model_dir(), out)
    return out


def save_tokenizer(src: str, out: Path) -> None:
    """Save `src`'s tokenizer to `out`, declaring MAX_LENGTH wherever a peer may read a length.

    The packaged all-MiniLM-L6-v2 (a bi-encoder) ships a tokenizer.json that truncates and pads
    to 128; transformers carries that into tokenizer_config.json as `max_length: 128` beside
    `model_max_length`. fastembed truncates to the smaller of the two, so without this it scored
    pairs cut at 128 tokens while every other target saw up to 512 (its top-10 then matched
    torch's on no request of the realistic mix).
    """
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(src, model_max_length=MAX_LENGTH, max_length=MAX_LENGTH)
    tok.backend_tokenizer.enable_truncation(MAX_LENGTH, strategy="longest_first")
    tok.backend_tokenizer.no_padding()
    tok.save_pretrained(out)
    lengths = {k: v for k, v in declared_max_lengths(out).items() if "padding" not in k or v}
    if set(lengths.values()) != {MAX_LENGTH}:
        raise RuntimeError(f"{out}: the saved tokenizer declares {lengths}, not {MAX_LENGTH}")


def declared_max_lengths(model_dir: Path) -> dict[str, int | None]:
    """Every maximum sequence length a tokenizer directory declares, by where it says so
    (a fixed padding length counts: it truncates nothing but pads every pair to it)."""
    config = json.loads((model_dir / "tokenizer_config.json").read_text())
    backend = json.loads((model_dir / "tokenizer.json").read_text())
    strategy = (backend.get("padding") or {}).get("strategy")
    return {
        "tokenizer_config model_max_length": config.get("model_max_length"),
        "tokenizer_config max_length": config.get("max_length"),
        "tokenizer.json truncation": (backend.get("truncation") or {}).get("max_length"),
        "tokenizer.json padding": strategy.get("Fixed") if isinstance(strategy, dict) else None,
    }


def onnx_export_dir(ce_dir: Path, out: Path) -> Path:
    """The cross-encoder plus a plain (unfused) ONNX export, as a hub repository ships one:
    `onnx/model.onnx` (sentence-transformers), `model.onnx` (fastembed, infinity)."""
    import prepare
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    shutil.copytree(ce_dir, out)
    model = AutoModelForSequenceClassification.from_pretrained(
        str(ce_dir), attn_implementation="eager"
    ).eval()
    length = min(MAX_LENGTH, prepare.usable_positions(model.config))
    sample = prepare.check_feeds(
        AutoTokenizer.from_pretrained(str(ce_dir)), prepare.input_names(model), length
    )
    (out / "onnx").mkdir()
    prepare.export_onnx(model, out / "onnx" / "model.onnx", prepare.DEFAULT_OPSET, sample)
    shutil.copy(out / "onnx" / "model.onnx", out / "model.onnx")
    return out


def infinity_onnx_dir(export_dir: Path, out: Path) -> Path:
    """The export with its one ONNX file at the root, for infinity's optimum engine.

    infinity 0.0.78 globs a local model directory for `*.onnx` and hands optimum the path it
    found as `file_name`; optimum 2.1 looks that name up *inside* the directory, so an absolute
    path is never found. Served as model id `.` from this directory (the bench sets the cwd),
    the glob yields the relative `model.onnx` and the model loads offline.
    """
    out.mkdir()
    for f in export_dir.iterdir():
        if f.is_file():
            shutil.copy(f, out / f.name)
    if sorted(p.name for p in out.glob("**/*.onnx")) != ["model.onnx"]:
        raise RuntimeError(f"{out} must hold exactly one ONNX file")
    return out


def vocabulary_words(tokenizer_file: Path) -> list[str]:
    """Whole-word vocabulary entries: each is exactly one token."""
    from tokenizers import Tokenizer

    vocab = Tokenizer.from_file(str(tokenizer_file)).get_vocab()
    return sorted(w for w in vocab if w.isalpha() and w.isascii() and len(w) >= 3)


def make_requests(words: Sequence[str], mix: str, n: int, seed: int) -> list[dict]:
    """`n` requests of the mix: sizes cycle through DOC_COUNTS, documents of the mix's length."""
    lo, hi = MIXES[mix]
    rng = np.random.default_rng(seed)

    def text(n_words: int) -> str:
        return " ".join(rng.choice(words, size=n_words))

    return [
        {
            "query": text(int(rng.integers(4, 13))),
            "documents": [
                text(int(rng.integers(lo, hi + 1))) for _ in range(DOC_COUNTS[i % len(DOC_COUNTS)])
            ],
        }
        for i in range(n)
    ]


def pair_lengths(tokenizer_file: Path, requests: Sequence[dict]) -> list[int]:
    """Token length of every (query, document) pair after truncation to MAX_LENGTH."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(tokenizer_file))
    tok.no_padding()
    tok.enable_truncation(MAX_LENGTH, strategy="longest_first")
    return [
        len(e.ids)
        for req in requests
        for e in tok.encode_batch([(req["query"], d) for d in req["documents"]])
    ]


# --- machine peak --------------------------------------------------------------------------------


def gemm_peak(threads: int, reps: int = 5) -> dict[str, float]:
    """fp32 GEMM FLOP/s of numpy, torch (MKL) and ONNX Runtime MatMul: fastest of `reps`."""
    import onnxruntime as ort
    import torch
    from onnx import TensorProto, helper

    n = GEMM_N
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n), dtype=np.float32)
    b = rng.standard_normal((n, n), dtype=np.float32)

    def fastest(fn: Callable[[], object]) -> float:
        fn()
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
        return 2.0 * n**3 / min(times)

    graph = helper.make_graph(
        [helper.make_node("MatMul", ["a", "b"], ["y"])],
        "g",
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, [n, n]) for x in "ab"],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [n, n])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    sess = ort.InferenceSession(model.SerializeToString(), opts, ["CPUExecutionProvider"])
    torch.set_num_threads(threads)
    ta, tb = torch.from_numpy(a), torch.from_numpy(b)
    return {
        "numpy": fastest(lambda: a @ b),
        "torch": fastest(lambda: torch.mm(ta, tb)),
        "onnxruntime": fastest(lambda: sess.run(None, {"a": a, "b": b})),
    }


# --- peers' virtualenvs --------------------------------------------------------------------------


def peer_venv(name: str, log: Callable[[str], None]) -> Path | None:
    """Python of the peer venv `name`, created from bench/peers/<name>.txt when missing.

    Returns None (the peer is skipped, and the report says why) if it cannot be created, e.g.
    without access to the package index.
    """
    lock = PEERS_DIR / f"{name}.txt"
    venv = PEER_VENVS / name
    python = venv / "bin" / "python"
    stamp = venv / ".installed"
    if python.exists() and stamp.exists() and stamp.read_text() == lock.read_text():
        return python
    log(f"creating peer venv {venv} from {lock.relative_to(ROOT)} ...")
    shutil.rmtree(venv, ignore_errors=True)
    steps = [
        [sys.executable, "-m", "venv", str(venv)],
        [
            str(python),
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "-r",
            str(lock),
        ],
    ]
    for cmd in steps:
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            log(f"  failed: {' '.join(cmd[:4])}: {done.stderr.strip()[-400:]}")
            return None
    stamp.write_text(lock.read_text())
    return python
