"""docs/api.md opens with examples/quickstart: the docs show that file, it is at most 20 lines,
it previews offline with its decisions and no policy finding, and the same program asking more
of its GPU than it holds fails the preview with the message a stack file gets."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.stack_config import issues_of, mutate, plan_of, reference
from tools.preview import EXIT_CONFIG

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "quickstart"
MAX_LINES = 20


def preview(program_dir: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tools.preview", "--cwd", str(program_dir), *extra],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_the_docs_open_with_the_quickstart_program() -> None:
    docs = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    first = re.search(r"```python\n(.*?)```", docs, re.S)
    assert first is not None
    program = (EXAMPLE / "__main__.py").read_text(encoding="utf-8")
    assert first.group(1) == program
    assert docs.index(first.group(0)) < docs.index("## ")  # before the reference sections
    assert len(program.splitlines()) <= MAX_LINES


@pytest.fixture(scope="module")
def previewed() -> dict[str, Any]:
    proc = preview(EXAMPLE, "--json")
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout)


def test_the_quickstart_previews_with_its_decisions(previewed: dict[str, Any]) -> None:
    lines = previewed["outputs"]["decisions"]["model llama"]
    assert any("on g6e.xlarge: tensor parallel 1" in line for line in lines), lines
    assert any(line.startswith("task reservation") for line in lines), lines
    assert not [f for f in previewed["findings"] if f.get("enforcementLevel") == "mandatory"]


def test_the_program_decides_as_a_stack_file(previewed: dict[str, Any]) -> None:
    """The dev stack's llama given the program's keys, on a pool of the program's type and
    size, is decided line for line as the program's service."""
    raw = reference("dev")
    raw = mutate(raw, "gpuPools.l40s", {"instanceType": "g6e.xlarge", "maxSize": 2})
    raw = mutate(
        raw,
        "models.llama",
        {
            "engine": "vllm",
            "pool": "l40s",
            "architecture": "llama-3.1-8b",
            "weightsUri": "s3://my-models/llama-3.1-8b/",
            "maxModelLen": 8192,
        },
    )
    stack = plan_of(raw, "dev").decisions["model llama"]
    assert previewed["outputs"]["decisions"]["model llama"] == stack


def test_a_program_over_its_gpu_fails_with_the_stack_files_message(tmp_path: Path) -> None:
    """64 sequences of 8192 tokens of llama-3.1-8b on one L4 (g6.xlarge): the program and the
    stack file (the dev stack's llama on the same type) name the same model path and message."""
    text = (EXAMPLE / "__main__.py").read_text(encoding="utf-8")
    program = text.replace('instance_type="g6e.xlarge"', 'instance_type="g6.xlarge"').replace(
        '"maxModelLen": 8192', '"maxModelLen": 8192, "maxConcurrentSequences": 64'
    )
    assert program.count("g6.xlarge") == 1 and "64" in program
    (tmp_path / "__main__.py").write_text(program, encoding="utf-8")
    (tmp_path / "Pulumi.yaml").write_text(
        (EXAMPLE / "Pulumi.yaml").read_text(encoding="utf-8"), encoding="utf-8"
    )
    raw = mutate(reference("dev"), "gpuPools.l40s.instanceType", "g6.xlarge")
    raw = mutate(raw, "models.llama.maxConcurrentSequences", 64)
    [stack_issue] = [i for i in issues_of(raw, "dev") if i.path == "platform.models.llama"]

    proc = preview(tmp_path)
    assert proc.returncode == EXIT_CONFIG, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert f"{stack_issue.path}: {stack_issue.message}" in proc.stdout + proc.stderr
