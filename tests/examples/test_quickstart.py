"""docs/api.md opens with examples/quickstart: the docs show that file, it is at most 20 lines,
it previews offline with the decisions and the cost its components record (the program exports
neither) and no policy finding, the same numbers as the equivalent stack file, and the same
program asking more of its GPU or its instance than they hold fails the preview with the message
a stack file gets."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

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
    program = (EXAMPLE / "__main__.py").read_text(encoding="utf-8")
    assert "pulumi.export" not in program  # what the preview prints, the components recorded
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


def _program_variant(tmp_path: Path, instance_type: str, model_keys: str) -> Path:
    """The quickstart on pool type `instance_type`, its model given `model_keys` (JSON) too."""
    text = (EXAMPLE / "__main__.py").read_text(encoding="utf-8")
    program = text.replace('instance_type="g6e.xlarge"', f'instance_type="{instance_type}"')
    program = program.replace('"maxModelLen": 8192', f'"maxModelLen": 8192, {model_keys}')
    assert program.count(instance_type) == 1 and model_keys in program
    (tmp_path / "__main__.py").write_text(program, encoding="utf-8")
    (tmp_path / "Pulumi.yaml").write_text(
        (EXAMPLE / "Pulumi.yaml").read_text(encoding="utf-8"), encoding="utf-8"
    )
    return tmp_path


@pytest.mark.parametrize(
    ("instance_type", "keys", "values"),
    [
        # 64 sequences of 8192 tokens of llama-3.1-8b on one L4: the KV cache outgrows the GPU.
        ("g6.xlarge", '"maxConcurrentSequences": 64', {"maxConcurrentSequences": 64}),
        # llama-3.1-70b's 141 GB of bf16 weights on one 48 GB L40S: the model outgrows the
        # instance's accelerator memory.
        (
            "g6e.xlarge",
            '"architecture": "llama-3.1-70b", "maxConcurrentSequences": 16',
            {"architecture": "llama-3.1-70b", "maxConcurrentSequences": 16},
        ),
    ],
    ids=["sequences", "memory"],
)
def test_a_program_over_its_instance_fails_with_the_stack_files_message(
    tmp_path: Path, instance_type: str, keys: str, values: dict[str, Any]
) -> None:
    """The program and the stack file (the dev stack's llama on the same type, given the same
    keys) name the same model path and message."""
    program = _program_variant(tmp_path, instance_type, keys)
    raw = mutate(reference("dev"), "gpuPools.l40s.instanceType", instance_type)
    for key, value in values.items():
        raw = mutate(raw, f"models.llama.{key}", value)
    [stack_issue] = [i for i in issues_of(raw, "dev") if i.path == "platform.models.llama"]

    proc = preview(program)
    assert proc.returncode == EXIT_CONFIG, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert f"{stack_issue.path}: {stack_issue.message}" in proc.stdout + proc.stderr


# AWS's published memory of the instance type (aws.amazon.com/ec2/instance-types/g6): the figure
# the task reservation must stay under, not the catalog the reservation is computed from.
G6_XLARGE_MEMORY_MIB = 16 * 1024


def test_a_program_cannot_reserve_more_task_memory_than_its_instance(tmp_path: Path) -> None:
    """The model service sizes its task from its instance: a program states no task memory,
    so the 30,000 MiB on a 16 GiB g6.xlarge of issue #32 cannot be written; what it reserves
    stays under the instance's memory."""
    program = _program_variant(tmp_path, "g6.xlarge", '"maxConcurrentSequences": 2')
    proc = preview(program, "--json", "--no-policy")
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = json.loads(proc.stdout)["outputs"]["decisions"]["model llama"]
    [reserved] = [line for line in lines if line.startswith("task reservation")]
    mib = int(re.search(r"/ (\d+) MiB", reserved).group(1))  # type: ignore[union-attr]
    assert 0 < mib < G6_XLARGE_MEMORY_MIB, reserved


def _equivalent_stack_file(tmp_path: Path) -> Path:
    """Pulumi.example.yaml given the program's region, pool name and model keys."""
    data = yaml.safe_load((ROOT / "Pulumi.example.yaml").read_text(encoding="utf-8"))
    config = data["config"]
    config["aws:region"] = "us-west-2"
    platform = config["ecs-inference:platform"]
    platform["gpuPools"] = {"gpu": platform["gpuPools"].pop("l40s")}
    platform["models"]["llama"] = {
        "engine": "vllm",
        "pool": "gpu",
        "architecture": "llama-3.1-8b",
        "weightsUri": "s3://my-models/llama-3.1-8b/",
        "maxModelLen": 8192,
    }
    path = tmp_path / "Pulumi.quickstart.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


MONITORING = "monitoring"
"""The one cost category an Operations component adds to (alarms, dashboard, alarm key)."""


def test_the_program_costs_what_the_stack_file_costs(
    previewed: dict[str, Any], tmp_path: Path
) -> None:
    """The same instances, volumes, NAT, load balancer, endpoints, logs and metric series, to
    the cent, at every scale point; the stack file's Operations (which the program does not
    build) adds its alarms, dashboard and key to monitoring only, and the program says so."""
    stack_file = _equivalent_stack_file(tmp_path)
    proc = subprocess.run(
        [sys.executable, "-m", "tools.preview", "--stack-file", str(stack_file),
         "--stack", "quickstart", "--no-policy", "--json"],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    stack = json.loads(proc.stdout)
    program_cost, stack_cost = previewed["cost"], stack["cost"]
    assert program_cost is not None and stack_cost is not None
    assert (
        previewed["outputs"]["decisions"]["model llama"]
        == (stack["outputs"]["decisions"]["model llama"])
    )
    for point, at in stack_cost["points"].items():
        mine = program_cost["points"][point]
        assert [line for line in mine["lines"] if line["category"] != MONITORING] == [
            line for line in at["lines"] if line["category"] != MONITORING
        ], point
        [own] = [line for line in mine["lines"] if line["category"] == MONITORING]
        [theirs] = [line for line in at["lines"] if line["category"] == MONITORING]
        assert own["quantity"] == theirs["quantity"]  # the same metric series
        assert own["item"].endswith("0 alarm metrics, 0 dashboard, 0 KMS key"), own
        assert theirs["usd_per_hour"] > own["usd_per_hour"]
    assert any("no Operations component" in n for n in program_cost["notes"])
    steady = program_cost["points"]["steady"]["usdPerMonth"]
    assert steady > 1000  # a GPU instance all month
