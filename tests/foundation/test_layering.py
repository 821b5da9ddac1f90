"""Data flows one way: config -> plan of pure specs -> components -> resources.

Each layer may import only the layers below it; these tests import each layer in a fresh
interpreter and check which modules came with it.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def loaded_modules(module: str) -> set[str]:
    """Every module `import <module>` loads, in a fresh interpreter."""
    code = f"import json, sys; import {module}; print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, check=True, capture_output=True, text=True
    )
    return set(json.loads(out.stdout))


PURE = [
    "components.plan",
    "components.specs.endpoint",
    "components.specs.images",
    "components.specs.pool",
    "components.specs.service",
    "components.sizing",
    "components.sizing.catalog",
    "components.services.engines",
    "components.services.engine_presets",
    "components.specs.weights",
    "components.sizing.weights",
    "components.iam",
    "components.specs.operations",
    "components.cost",
]


@pytest.mark.parametrize("module", PURE)
def test_plan_specs_and_sizing_load_no_pulumi(module: str) -> None:
    pulumi = sorted(m for m in loaded_modules(module) if m.split(".")[0].startswith("pulumi"))
    assert not pulumi, f"import {module} loads {pulumi[:5]}"


def test_contracts_are_stdlib_only() -> None:
    """The images copy `contracts/`: it must import nothing outside the standard library."""
    for path in sorted((ROOT / "contracts").glob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            for name in names:
                top = name.split(".")[0]
                assert top in sys.stdlib_module_names or top == "contracts", (
                    f"{path.relative_to(ROOT)} imports {name}"
                )


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return found


COMPONENT_DIRS = ("capacity", "ingress", "services")
COMPONENT_FILES = ("cluster.py", "network.py", "images.py", "operations.py")


def component_modules() -> list[Path]:
    base = ROOT / "components"
    paths = [p for d in COMPONENT_DIRS for p in sorted((base / d).glob("*.py"))]
    return paths + [base / f for f in COMPONENT_FILES]


@pytest.mark.parametrize("path", component_modules(), ids=lambda p: p.name)
def test_components_never_read_the_config_schema_or_the_plan(path: Path) -> None:
    """Components take (spec, wiring): the schema and the plan are layers above them."""
    bad = {
        m
        for m in _imports(path)
        if m.startswith(("components.config", "components.plan", "components.platform"))
    }
    assert not bad, f"{path.relative_to(ROOT)} imports {sorted(bad)}"


COMPONENT_MODULES = (
    "components.capacity.",
    "components.ingress.",
    "components.platform",
    "components.network",
    "components.cluster",
    "components.images",
    "components.operations",
    "components.services.model",
    "components.services.base",
    "components.services.reranker",
)


def test_specs_and_plan_import_no_component() -> None:
    for path in [ROOT / "components/plan.py", *sorted((ROOT / "components/specs").glob("*.py"))]:
        bad = {m for m in _imports(path) if m.startswith(COMPONENT_MODULES)}
        assert not bad, f"{path.relative_to(ROOT)} imports {sorted(bad)}"
