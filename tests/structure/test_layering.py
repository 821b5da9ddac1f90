"""Data flows one way: config -> plan of pure specs -> components -> resources.

The layers are the folders: config/, plan/, sizing/ and engines/ (and each feature's input and
decisions) are pure (no Pulumi
through any import, read from the modules' imports and checked again by importing each package
in a fresh interpreter); every other module that loads Pulumi builds resources and reads neither
the schema nor the plan; nothing imports the images' code.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


PROBE = """
import json, sys
for name in sys.argv[1:]:
    __import__(name)
    pulumi = sorted(m for m in sys.modules if m.split(".")[0].startswith("pulumi"))
    print(json.dumps([name, pulumi]), flush=True)
    if pulumi:
        break
"""
"""Imports the packages named in turn in one interpreter, printing the Pulumi modules loaded
after each, and stops at the first that loads any: while none has, what the next one loads is
what it would load alone (its dependencies already loaded load no Pulumi either)."""


def pulumi_loaded_by(modules: list[str]) -> dict[str, list[str]]:
    """For each module, the Pulumi modules `import <module>` loads in a fresh interpreter: one
    interpreter for a run of clean modules, a new one after each that loads Pulumi."""
    found: dict[str, list[str]] = {}
    while rest := [m for m in modules if m not in found]:
        out = subprocess.run(
            [sys.executable, "-c", PROBE, *rest], cwd=ROOT, check=True, capture_output=True,
            text=True,
        )  # fmt: skip
        found.update(json.loads(line) for line in out.stdout.splitlines())
    return found


PURE_PACKAGES = [
    "config",
    "plan",
    "names",
    "services.checks",
    "secrets.refs",
    "images.platforms",
    "sizing",
    "engines",
    "models.input",
    "models.decisions",
    "gateway.input",
    "gateway.decisions",
    "gateway.litellm_config",
    "pools.input",
    "pools.decisions",
    "network.input",
    "network.facts",
    "network.decisions",
    "operations.input",
    "operations.decisions",
    "endpoint.input",
    "endpoint.decisions",
]
"""The pure packages, each imported in a fresh interpreter (as `pulumi_loaded_by` probes)."""


@pytest.mark.parametrize("folder", PURE_PACKAGES)
def test_the_pure_packages_load_no_pulumi_at_run_time(
    folder: str, pure_packages_loads: dict[str, list[str]]
) -> None:
    module = f"ecs_inference.{folder}"
    pulumi = pure_packages_loads[module]
    assert not pulumi, f"import {module} loads {pulumi[:5]}"


@pytest.fixture(scope="module")
def pure_packages_loads() -> dict[str, list[str]]:
    """What each of `PURE_PACKAGES` loads, probed once for the module."""
    return pulumi_loaded_by([f"ecs_inference.{f}" for f in PURE_PACKAGES])


def test_the_probe_finds_a_package_that_loads_pulumi() -> None:
    """The check itself: a package loading Pulumi is named, and one probed after it is still
    judged alone."""
    found = pulumi_loaded_by(["json", "ecs_inference.pools.asg_pool", "ecs_inference.names"])
    assert found["json"] == [] and found["ecs_inference.names"] == []
    assert "pulumi" in found["ecs_inference.pools.asg_pool"]


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


PURE_FOLDERS = ("config", "plan", "sizing", "engines")
"""The folders of pure code: the stack file's loader and schema, the plan, the sizing and the
engines."""
PURE_FEATURE_MODULES = ("input", "decisions", "checks", "refs", "platforms", "regions", "names")
"""In a feature folder (`models/`), the input model and the decisions are pure; the component
beside them builds resources from them."""
ERRORS = "ecs_inference.config.issues"
"""The errors every layer raises (`ConfigError` with its config paths): not the schema."""
BEFORE_THE_PLAN = {
    "platform.py": "composes the components from the plan",
}
"""Pulumi modules that may read the config or the plan, each with the reason."""


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT / "components").with_suffix("").parts
    parts = parts[:-1] if parts[-1] == "__init__" else parts
    return ".".join(("ecs_inference", *parts))


def _folder(module: str) -> str:
    """The folder (or top-level module) of an `ecs_inference` module."""
    return [*module.split("."), ""][1]


def _pure(module: str) -> bool:
    """A module of a pure folder, or a feature's input or decisions."""
    return _folder(module) in PURE_FOLDERS or module.split(".")[-1] in PURE_FEATURE_MODULES


def _components_graph() -> dict[str, set[str]]:
    """Module -> the `ecs_inference` modules and top-level packages it imports (anywhere)."""
    graph: dict[str, set[str]] = {}
    for path in _python_files("components"):
        graph[_module_name(path)] = _imports(path)
    return graph


def _loads_pulumi(graph: dict[str, set[str]]) -> set[str]:
    """The modules that import pulumi, directly or through another module of the package."""
    loads = {
        m for m, names in graph.items() if any(n.split(".")[0].startswith("pulumi") for n in names)
    }
    changed = True
    while changed:
        changed = False
        for module, names in graph.items():
            if module not in loads and any(n in loads for n in names):
                loads.add(module)
                changed = True
    return loads


def test_the_pure_folders_load_no_pulumi() -> None:
    """config/, plan/, sizing/, engines/ and the features' pure modules load no Pulumi module."""
    graph = _components_graph()
    loads = _loads_pulumi(graph)
    pure = [m for m in graph if _pure(m)]
    bad = sorted(m for m in pure if m in loads)
    assert pure and not bad, f"pure modules that load pulumi: {bad}"


def test_components_never_read_the_config_schema_or_the_plan() -> None:
    """Components take their input and wiring (or a spec and wiring): the stack-wide schema and
    the plan are layers above every module that builds resources (except those of
    `BEFORE_THE_PLAN`); a feature's component reads its own feature's input and decisions."""
    graph = _components_graph()
    above = ("ecs_inference.config", "ecs_inference.plan", "ecs_inference.platform")

    def stack_wide(name: str) -> bool:
        return name.startswith(above) and not name.startswith(ERRORS)

    allowed = {_module_name(ROOT / "components" / f) for f in BEFORE_THE_PLAN}
    bad = [
        f"{module} imports {sorted(n for n in names if stack_wide(n))}"
        for module, names in graph.items()
        if module in _loads_pulumi(graph)
        and module not in allowed
        and any(stack_wide(n) for n in names)
    ]
    assert not bad, "\n".join(bad)


def test_the_pure_folders_import_no_component() -> None:
    graph = _components_graph()
    loads = _loads_pulumi(graph)
    bad = [
        f"{module} imports {sorted(n for n in names if n in loads)}"
        for module, names in graph.items()
        if _pure(module) and any(n in loads for n in names)
    ]
    assert not bad, "\n".join(bad)


def test_components_import_nothing_from_the_images() -> None:
    """images/ holds what runs inside the containers; the program reads their contracts from
    contracts/, never from an image's code."""
    bad = [
        f"{path.relative_to(ROOT)} imports {name}"
        for path in _python_files("components", "contracts")
        for name in _imports(path)
        if name.split(".")[0] == "images"
    ]
    assert not bad, "\n".join(bad)


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
    # Only a file naming either word can import it: the rest need no parse.
    named = re.compile(r"\b(?:components|contracts)\b")
    bad = [
        f"{path.relative_to(ROOT)} imports {name}"
        for path in _python_files(*PROGRAM_TREES)
        if named.search(path.read_text())
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
