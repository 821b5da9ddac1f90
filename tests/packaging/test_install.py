"""`pip install .` into a fresh venv: `ecs_inference` imports from outside the repository, every
module of it loads, and the example program previews with the installed package.

Offline: the wheel is built once from a clean copy of the working tree (no build isolation, no
index; setuptools reuses a stale `build/` of the checkout otherwise), installed
with `--no-deps`, and the venv sees the project's installed dependencies through a path entry
(the repository .venv's site-packages, whose editable finder it does not run).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "gpu-endpoint"
QUICKSTART = ROOT / "examples" / "quickstart"


def _run(*cmd: str | Path, cwd: Path, env: dict[str, str] | None = None) -> str:
    proc = subprocess.run(
        [str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    return proc.stdout


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("wheel")
    source = root / "source"
    # What .gitignore keeps out of a clone, plus the IAM evaluator's node_modules.
    ignored = (".venv", ".cache", ".git", "build", "*.egg-info", "__pycache__", "node_modules",
               ".hypothesis", ".pytest_cache", ".ruff_cache", ".out", "venv")  # fmt: skip
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(*ignored), symlinks=True)
    _run(
        sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
        "--quiet", "-w", root, source, cwd=root,
    )  # fmt: skip
    (built,) = root.glob("ecs_inference-*.whl")
    return built


def test_the_wheel_ships_the_components_and_nothing_of_the_tools(wheel: Path) -> None:
    """Only `ecs_inference` is installed: the preview's tools, and with them the AGPL-licensed
    IAM evaluator of the runtime rehearsal (tools/rehearsal/iam/, installed by npm for
    development only), are not part of the package (docs/fidelity.md "The IAM evaluator")."""
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/", 1)[0] for n in names}
    assert tops == {"ecs_inference", wheel.name.split("-py")[0] + ".dist-info"}, tops
    shipped = [n for n in names if "node_modules" in n or n.endswith((".mjs", ".js"))]
    assert not shipped, shipped
    assert not [n for n in names if "cloud-copilot" in n or "iam-simulate" in n]


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory, wheel: Path) -> Path:
    root = tmp_path_factory.mktemp("install")
    venv = root / "venv"
    _run(sys.executable, "-m", "venv", venv, cwd=root)
    python = venv / "bin" / "python"
    _run(python, "-m", "pip", "install", "--no-deps", "--no-index", "--quiet", wheel, cwd=root)
    site = _run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])", cwd=root)
    (Path(site.strip()) / "project-dependencies.pth").write_text(
        sysconfig.get_paths()["purelib"] + "\n"
    )
    return venv


def _clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return {**env, **extra}


def test_every_module_imports_from_the_installed_package(venv: Path, tmp_path: Path) -> None:
    code = (
        "import importlib, json, pkgutil, ecs_inference\n"
        "found = pkgutil.walk_packages(ecs_inference.__path__, 'ecs_inference.')\n"
        # The preview's tools load as `tools` through their console script (tested below).
        "names = [m.name for m in found if not m.name.startswith('ecs_inference.preview')]\n"
        "for name in names: importlib.import_module(name)\n"
        "from ecs_inference.contracts import flag_table\n"
        "print(json.dumps({'file': ecs_inference.__file__, 'modules': names}))\n"
    )
    out = json.loads(_run(venv / "bin" / "python", "-c", code, cwd=tmp_path, env=_clean_env()))
    assert Path(out["file"]).is_relative_to(venv), out["file"]
    modules = set(out["modules"])
    for name in (
        "ecs_inference.platform",
        "ecs_inference.capacity.asg_pool",
        "ecs_inference.models.service",
        "ecs_inference.endpoint.service",
        "ecs_inference.contracts.aws_limits",
    ):
        assert name in modules


def test_the_example_previews_with_the_installed_package(venv: Path, tmp_path: Path) -> None:
    python = venv / "bin" / "python"
    env = _clean_env(PYTHONPATH=str(ROOT))  # the offline preview (tools/), not the package
    where = _run(
        python, "-c", "import ecs_inference; print(ecs_inference.__file__)", cwd=tmp_path, env=env
    )
    assert Path(where.strip()).is_relative_to(venv)
    out = _run(
        python, "-m", "tools.preview", "--cwd", EXAMPLE, "--no-policy", "--json",
        cwd=tmp_path, env=env,
    )  # fmt: skip
    types = {r["type"] for r in json.loads(out)["resources"]}
    assert {
        "ecs-inference:compute:GpuAsgPool",
        "ecs-inference:serving:ModelService",
        "ecs-inference:ingress:Endpoint",
    } <= types


def test_the_wheel_ships_the_preview_and_its_data_tables(wheel: Path) -> None:
    """What the installed preview reads besides code: the engines' flag and environment tables,
    the CloudWatch agent's schema table, the provider's output table, and the console script."""
    archive = zipfile.ZipFile(wheel)
    names = set(archive.namelist())
    for folder in ("flags", "env", "agent"):
        here = {p.name for p in (ROOT / "contracts" / folder).glob("*.json")}
        prefix = f"ecs_inference/contracts/{folder}/"
        shipped = {n.removeprefix(prefix) for n in names if n.startswith(prefix)}
        assert here and here <= shipped, folder
    assert "ecs_inference/preview/views/provider_outputs.json" in names
    assert "ecs_inference/preview/launch.py" in names
    [entry_points] = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
    scripts = archive.read(entry_points).decode()
    assert "ecs-inference-preview = ecs_inference.preview.launch:main" in scripts


def test_the_console_script_previews_a_program_outside_the_checkout(
    venv: Path, tmp_path: Path
) -> None:
    """A user's repository: a copy of examples/quickstart in a temporary folder, the installed
    `ecs-inference-preview` run there with no path to this checkout; it prints the decisions
    and the cost its components recorded."""
    repo = tmp_path / "my-inference"
    repo.mkdir()
    for name in ("__main__.py", "Pulumi.yaml"):
        (repo / name).write_text((QUICKSTART / name).read_text(encoding="utf-8"))
    env = _clean_env()
    out = _run(venv / "bin" / "ecs-inference-preview", cwd=repo, env=env)
    decided = "Decisions:\n  endpoint:\n    - ALB idle timeout 330 s (longest generation 300 s"
    assert decided in out, out[-3000:]
    assert "  model llama:\n    - llama-3.1-8b: weights 15.0 GiB" in out, out[-3000:]
    assert re.search(r"total per month +\$[\d,]+", out), out[-3000:]
    assert "the runtime rehearsal did not run" in out
    assert "the policy pack did not run" in out  # the package ships none
    doc = json.loads(_run(venv / "bin" / "ecs-inference-preview", "--json", cwd=repo, env=env))
    assert doc["exitCode"] == 0 and doc["cost"]["points"]["steady"]["usdPerMonth"] > 0
    assert doc["outputs"]["decisions"]["model llama"]
