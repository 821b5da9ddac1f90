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
    "ecs_inference.plan",
    "ecs_inference.specs.endpoint",
    "ecs_inference.specs.network",
    "ecs_inference.specs.images",
    "ecs_inference.specs.pool",
    "ecs_inference.specs.service",
    "ecs_inference.sizing",
    "ecs_inference.sizing.catalog",
    "ecs_inference.engines",
    "ecs_inference.services.containers",
    "ecs_inference.specs.weights",
    "ecs_inference.sizing.weights",
    "ecs_inference.iam",
    "ecs_inference.specs.operations",
    "ecs_inference.cost",
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
        if m.startswith(("ecs_inference.config", "ecs_inference.plan", "ecs_inference.platform"))
    }
    assert not bad, f"{path.relative_to(ROOT)} imports {sorted(bad)}"


COMPONENT_MODULES = (
    "ecs_inference.capacity.",
    "ecs_inference.ingress.",
    "ecs_inference.platform",
    "ecs_inference.network",
    "ecs_inference.cluster",
    "ecs_inference.images",
    "ecs_inference.operations",
    "ecs_inference.services.model",
    "ecs_inference.services.base",
    "ecs_inference.services.reranker",
)


def test_specs_and_plan_import_no_component() -> None:
    for path in sorted(
        [*(ROOT / "components/plan").glob("*.py"), *(ROOT / "components/specs").glob("*.py")]
    ):
        bad = {m for m in _imports(path) if m.startswith(COMPONENT_MODULES)}
        assert not bad, f"{path.relative_to(ROOT)} imports {sorted(bad)}"


PROGRAM_TREES = ("components", "contracts", "tools", "tests", "bench", "__main__.py")


def _python_files(*trees: str) -> list[Path]:
    out: list[Path] = []
    for tree in trees:
        path = ROOT / tree
        out += [path] if path.is_file() else sorted(path.rglob("*.py"))
    return [p for p in out if "__pycache__" not in p.parts]


def test_one_import_name_for_the_package() -> None:
    """The program, its tools and tests import the components as `ecs_inference` (their installed
    name), never by folder (`components`, a top-level `contracts`): a module loaded under two
    names is two modules, with two copies of every class and table. The re-ranker service's own
    tests import `contracts` as the service does in its image (/srv/contracts)."""
    service_tests = ROOT / "tests" / "images" / "reranker"
    bad = [
        f"{path.relative_to(ROOT)} imports {name}"
        for path in _python_files(*PROGRAM_TREES)
        for name in _imports(path)
        if name.split(".")[0] == "components"
        or (name.split(".")[0] == "contracts" and service_tests not in path.parents)
    ]
    assert not bad, "\n".join(bad)


def test_contracts_import_themselves_relatively() -> None:
    """contracts/ is `ecs_inference.contracts` when installed and a top-level `contracts` in the
    images (their Dockerfiles copy it): only relative imports work under both names."""
    bad = [
        f"{path.relative_to(ROOT)} imports {name}"
        for path in _python_files("contracts")
        for name in _imports(path)
        if name.split(".")[0] in ("contracts", "ecs_inference")
    ]
    assert not bad, "\n".join(bad)


def test_pyproject_installs_every_package_folder() -> None:
    import tomllib

    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    roots = {folder: package for package, folder in setuptools["package-dir"].items()}
    found = set()
    for folder, package in roots.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            relative = init.parent.relative_to(ROOT / folder).parts
            found.add(".".join((package, *relative)))
    assert found == set(setuptools["packages"]), "pyproject.toml [tool.setuptools] packages"
