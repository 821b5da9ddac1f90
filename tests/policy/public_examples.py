"""Run Pulumi programs written by others through the offline preview with the pack.

A public example has no ``Pulumi.<stack>.yaml``; this writes one with the region and a value
for every key the program requires (``config.require*("key")``, found in its sources), so the
program runs under the mock runtime the way ``pulumi preview`` would run it with a filled-in
stack. Paths get an existing file of the program, anything else the key's name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tools.preview import PreviewResult, run_preview

_REQUIRE = re.compile(
    r"""config\.(?:require|get)(?:_secret|_int|_bool|_float|_object)?\(\s*["']([\w.:-]+)["']"""
)
_TYPED = re.compile(
    r"""config\.(?:require|get)(?:_secret)?_(int|float|bool)\(\s*["']([\w.:-]+)["']"""
)


def project_of(program: Path) -> str:
    return str(yaml.safe_load((program / "Pulumi.yaml").read_text())["name"])


def stack_config(program: Path) -> dict[str, Any]:
    """A stack file's ``config`` for ``program``: region plus every key it reads."""
    project = project_of(program)
    config: dict[str, Any] = {"aws:region": "us-east-1"}
    sources = "\n".join(
        p.read_text(errors="replace") for p in program.rglob("*.py") if "venv" not in p.parts
    )
    typed = {key: kind for kind, key in _TYPED.findall(sources)}
    some_file = next((str(p) for p in sorted(program.iterdir()) if p.is_file()), "Pulumi.yaml")
    for key in sorted(set(_REQUIRE.findall(sources))):
        name = key if ":" in key else f"{project}:{key}"
        lowered = key.lower()
        if key in typed:
            value: Any = True if typed[key] == "bool" else 2
        elif "path" in lowered or (lowered.endswith("key") and "private" in lowered):
            value = some_file if "contents" not in lowered else str(program)
        elif "domain" in lowered:
            value = "www.example.com"
        else:
            value = f"example-{key.replace('.', '-')}"
        config[name] = value
    return config


@dataclass
class ExampleRun:
    """One program's preview; ``program_error`` when the program itself cannot run offline
    (a data-source lookup the mock runtime does not answer, a missing local file): that is
    the preview's limit, not the pack's."""

    name: str
    result: PreviewResult | None
    program_error: str | None = None


def run_example(program: Path, policy_pack: Path, workdir: Path) -> ExampleRun:
    """Preview ``program`` with the pack (stack file written under ``workdir``)."""
    stack_file = workdir / f"Pulumi.{program.name}.yaml"
    stack_file.write_text(yaml.safe_dump({"config": stack_config(program)}))
    try:
        result = run_preview(
            "dev", program_dir=program, policy_pack=policy_pack, stack_file=stack_file
        )
    except Exception as error:
        lines = [line for line in str(error).splitlines() if line.strip()]
        return ExampleRun(
            program.name, None, f"{type(error).__name__}: {lines[-1] if lines else ''}"
        )
    return ExampleRun(program.name, result)
