"""What the engine image tests share: run an entrypoint on exactly a task environment, read
what a Dockerfile copies, lint it."""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

from ecs_inference.contracts import engine as engine_contract

REPO = Path(__file__).resolve().parents[2]
IMAGES = REPO / "images"
CONTRACTS = REPO / "contracts"
HADOLINT = REPO / ".venv" / "bin" / "hadolint"
ENGINE_IMAGES = ("vllm", "neuron", "sglang", "tgi")
"""The images whose ENTRYPOINT is `images/<image>/entrypoint.py` reading `contracts/`."""


def run_entrypoint(
    script: Path, env: list[dict[str, str]], *args: str
) -> subprocess.CompletedProcess[str]:
    """Run an entrypoint with only the task environment (plus PATH) set."""
    clean = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    clean |= {item["name"]: item["value"] for item in env}
    return subprocess.run(
        [sys.executable, str(script), *args],
        env=clean,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def printed_command(script: Path, env: list[dict[str, str]]) -> list[str]:
    """The argv an entrypoint prints with `--print-command` (it must exit 0)."""
    proc = run_entrypoint(script, env, "--print-command")
    assert proc.returncode == 0, f"{script.parent.name} entrypoint rejected the task: {proc.stderr}"
    return json.loads(proc.stdout)


def value_after(argv: list[str], flag: str) -> str:
    """The value following `flag` in `argv` (which must contain it)."""
    assert flag in argv, f"{flag} missing from {argv}"
    return argv[argv.index(flag) + 1]


def assert_hadolint_clean(dockerfile: Path) -> None:
    """hadolint passes, and every ignored rule carries its reason on the line above."""
    proc = subprocess.run(
        [str(HADOLINT), "--no-color", str(dockerfile)],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = dockerfile.read_text().splitlines()
    for number, line in enumerate(lines):
        if "hadolint ignore" in line:
            assert lines[number - 1].lstrip().startswith("#") and len(lines[number - 1]) > 20


def contracts_imported(script: Path) -> set[str]:
    """The `contracts` modules `script` needs at run time: those it imports and, transitively,
    those they import, plus the package's `__init__`."""
    needed = {"__init__"}
    pending = [script]
    while pending:
        for node in ast.walk(ast.parse(pending.pop().read_text())):
            if isinstance(node, ast.ImportFrom) and node.level <= 1:
                # `from contracts import engine` names modules, `from contracts.engine import X`
                # one; inside contracts/ the same imports are relative (`from .engine import X`)
                base = "contracts." * node.level + (node.module or "")
                modules = [f"{base.rstrip('.')}.{a.name}" for a in node.names] + [base]
            elif isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            else:
                continue
            for dotted in modules:
                package, _, rest = dotted.partition(".")
                module = rest.split(".")[0]
                source = CONTRACTS / f"{module}.py"
                if package == "contracts" and module not in needed and source.is_file():
                    needed.add(module)
                    pending.append(source)
    return needed


def dockerfile_copies(image: str) -> tuple[set[str], set[str]]:
    """The Python files images/<image>/Dockerfile copies to /opt/ecs-inference/ from its own
    context, and the modules it copies from the `contracts` named context (without `.py`)."""
    text = (IMAGES / image / "Dockerfile").read_text()
    local = re.findall(r"^COPY --chmod=\S+ ((?:\S+\.py ?)+) /opt/ecs-inference/", text, re.M)
    shared = re.findall(
        r"^COPY --from=contracts --chmod=\S+ ((?:\S+\.py ?)+) /opt/ecs-inference/contracts/",
        text,
        re.M,
    )
    return (
        set(" ".join(local).split()),
        {name.removesuffix(".py") for name in " ".join(shared).split()},
    )


def load_script(name: str, path: Path) -> ModuleType:
    """An image's script imported as module `name` (registered in sys.modules: dataclasses
    resolve string annotations through it)."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def entrypoint_reads(script: Path, contract: ModuleType) -> set[str]:
    """The ENGINE_* variables an entrypoint reads: its contract's `READS`, which the entrypoint
    imports (the image copies contracts/), so the two cannot drift."""
    tree = ast.parse(script.read_text())
    imported = {
        (node.module, alias.name)
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    # the images import the copied `contracts` package, the program `ecs_inference.contracts`
    copied = contract.__name__.removeprefix("ecs_inference.")
    names = {name for module, name in imported if module == copied}
    assert names, f"{script} does not read its environment names from {contract.__name__}"
    own = {n for n in names if n.startswith("ENV_")}
    shared = {n for module, n in imported if module == "contracts.engine" and n.startswith("ENV_")}
    values = {getattr(contract, n) for n in own} | {getattr(engine_contract, n) for n in shared}
    assert values == set(contract.READS), f"{script} reads {values}, contract {contract.READS}"
    return set(contract.READS)
