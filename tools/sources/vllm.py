"""vLLM and optimum-neuron: the pinned releases, their parsers, and their flag and environment
tables.

The model services launch `vllm serve` (GPU) and `optimum-cli neuron serve` (Inferentia);
their flags are read from the wheels with the argparse reader of `tools/engine_flags.py`, which
checks whole command lines against them at test time (`COMMANDS`), and the tables committed
here let a preview reject an unknown `extraArgs` flag without the 40-800 MiB sources. vLLM
registers most flags from config dataclasses, which that reader follows. Releases:
- vLLM 0.33.0: the GPU engine (`vllm/vllm-openai:v0.33.0`).
- optimum-neuron 0.4.5 and the vLLM it requires (0.11.0, its `vllm` extra): the Neuron engine
  (AWS DLC `huggingface-vllm-inference-neuronx:0.11.0-optimum0.4.5-...`). `optimum-cli neuron
  serve` parses its own flags and forwards every unknown one to vLLM 0.11.0's server parser,
  whose environment names a Neuron container's `VLLM_*` variables are.

Environment reads: the keys of `vllm/envs.py` `environment_variables` and the package's direct
reads (`common.package_reads`).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Sequence
from pathlib import Path

from tools.engine_flags import (
    EngineRelease,
    FlagSet,
    _const_strings,
    _find_method,
    _module_function,
    _Modules,
    _ParserReader,
    source_root,
)
from tools.sources.common import Table, env_table, flag_rows, package_reads

VLLM_GPU = EngineRelease("vllm", "0.33.0")
"""vLLM release run on GPU pools; must match the `vllm/vllm-openai` base image tag."""
OPTIMUM_NEURON = EngineRelease("optimum-neuron", "0.4.5")
"""optimum-neuron release run on Inferentia/Trainium pools; must match the Neuron DLC tag."""
VLLM_NEURON = EngineRelease("vllm", "0.11.0")
"""vLLM release that optimum-neuron 0.4.5 pins (`Requires-Dist: vllm==0.11.0; extra == "vllm"`)."""


_VLLM_SERVE_PARSER_MODULES = (
    "vllm.entrypoints.common.cli_args",  # 0.3x layout
    "vllm.entrypoints.openai.cli_args",  # 0.11 layout
)


def vllm_serve_flags(root: Path, name: str = "vllm serve") -> FlagSet:
    """Flags of `vllm serve` (the OpenAI server parser `make_arg_parser`) in the tree `root`."""
    modules = _Modules(root)
    flag_set = FlagSet(name=name, normalise_underscores=True)
    reader = _ParserReader(modules, flag_set)
    for module in _VLLM_SERVE_PARSER_MODULES:
        if modules.path(module) is not None:
            tree = modules.tree(module)
            assert tree is not None
            if any(
                isinstance(n, ast.FunctionDef) and n.name == "make_arg_parser" for n in tree.body
            ):
                reader.read_function(
                    module, _module_function(modules, module, "make_arg_parser"), None
                )
                break
    else:
        raise LookupError(f"no vLLM server parser found under {root}")
    return flag_set


def optimum_neuron_serve_flags(root: Path) -> FlagSet:
    """Flags `optimum-cli neuron serve` parses itself (the rest are forwarded to vLLM)."""
    modules = _Modules(root)
    flag_set = FlagSet(name="optimum-cli neuron serve")
    reader = _ParserReader(modules, flag_set)
    module = "optimum.commands.neuron.serve"
    found = modules.resolve(module, "ServeCommand")
    serve_module, serve = found if found is not None else (module, None)
    if not isinstance(serve, ast.ClassDef):
        raise LookupError(f"ServeCommand not found under {root}")
    func = _find_method(serve, "parse_args")
    if func is None:
        raise LookupError("ServeCommand.parse_args not found")
    reader.read_function(module, func, (serve_module, serve))
    return flag_set


def vllm_env_vars(root: Path) -> frozenset[str]:
    """Names of the environment variables `vllm/envs.py` reads (keys of `environment_variables`)."""
    modules = _Modules(root)
    tree = modules.tree("vllm.envs")
    if tree is None:
        raise LookupError(f"vllm/envs.py not under {root}")
    names: set[str] = set()
    for node in tree.body:
        target = node.target if isinstance(node, ast.AnnAssign) else None
        if isinstance(node, ast.Assign):
            target = node.targets[0]
        if isinstance(target, ast.Name) and target.id == "environment_variables":
            value = node.value if isinstance(node, (ast.Assign, ast.AnnAssign)) else None
            if isinstance(value, ast.Dict):
                names.update(_const_strings([k for k in value.keys if k is not None]))
    if not names:
        raise LookupError("environment_variables not found in vllm/envs.py")
    return frozenset(names)


def vllm_http_routes(root: Path) -> frozenset[tuple[str, str]]:
    """(METHOD, path) of the FastAPI routes under `vllm/entrypoints` (`@router.get("/health")`).

    Lets tests confirm the health path and the OpenAI paths the ALB routes to exist in each
    pinned release without importing the engine.
    """
    routes: set[tuple[str, str]] = set()
    for path in sorted((root / "vllm" / "entrypoints").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for decorator in node.decorator_list:
                if (
                    isinstance(decorator, ast.Call)
                    and isinstance(decorator.func, ast.Attribute)
                    and decorator.func.attr in ("get", "post", "put", "delete")
                    and decorator.args
                    and isinstance(decorator.args[0], ast.Constant)
                    and isinstance(decorator.args[0].value, str)
                ):
                    routes.add((decorator.func.attr.upper(), decorator.args[0].value))
    return frozenset(routes)


def vllm_table(cache_dir: Path) -> dict[str, object]:
    """`vllm serve` of the GPU image, extracted from its wheel."""
    flags = vllm_serve_flags(source_root(VLLM_GPU, cache_dir))
    return {
        "engine": "vllm",
        "version": VLLM_GPU.version,
        "command": ["vllm", "serve"],
        "source": f"PyPI vllm=={VLLM_GPU.version} wheel: make_arg_parser and the config "
        "dataclasses it registers (tools/engine_flags.py)",
        "normalise_underscores": True,
        "flags": flag_rows(flags),
    }


def neuron_table(cache_dir: Path) -> dict[str, object]:
    """`optimum-cli neuron serve`: its own flags, then the vLLM server flags it forwards every
    unknown flag to."""
    own = optimum_neuron_serve_flags(source_root(OPTIMUM_NEURON, cache_dir))
    forwarded = vllm_serve_flags(source_root(VLLM_NEURON, cache_dir), "forwarded")
    merged = FlagSet(name="optimum-cli neuron serve")
    for option, flag in forwarded.flags.items():
        merged.flags[option] = flag
    for option, flag in own.flags.items():
        merged.flags[option] = flag
    return {
        "engine": "optimum-neuron",
        "version": OPTIMUM_NEURON.version,
        "command": ["optimum-cli", "neuron", "serve"],
        "source": f"PyPI optimum-neuron=={OPTIMUM_NEURON.version} (ServeCommand.parse_args) and "
        f"vllm=={VLLM_NEURON.version} (the flags it forwards), both wheels",
        # vLLM's parser normalises `--a_b`; optimum's own argparse does not, and its own flags
        # all use dashes, so normalising is right for every flag a user may add.
        "normalise_underscores": True,
        "flags": flag_rows(merged),
    }


def _env(release: EngineRelease) -> Table:
    def build(cache_dir: Path) -> dict[str, object]:
        root = source_root(release, cache_dir)
        return env_table(
            release,
            f"PyPI vllm=={release.version} wheel: the keys of vllm/envs.py "
            "environment_variables and every read in the vllm package",
            vllm_env_vars(root) | package_reads(root, "vllm"),
        )

    return Table("env", f"vllm-{release.version}", build, (release,))


TABLES = (
    Table("flags", f"vllm-{VLLM_GPU.version}", vllm_table, (VLLM_GPU,)),
    Table(
        "flags",
        f"optimum-neuron-{OPTIMUM_NEURON.version}",
        neuron_table,
        (OPTIMUM_NEURON, VLLM_NEURON),
    ),
    _env(VLLM_GPU),
    _env(VLLM_NEURON),
)
"""The GPU and Neuron engines' tables, named by their releases (the engines' FLAG_TABLE and the
contracts' ENVIRONMENT_TABLE name the same stems; the tests compare)."""


def _check_vllm(argv: Sequence[str], cache_dir: Path) -> list[str]:
    return vllm_serve_flags(source_root(VLLM_GPU, cache_dir)).problems(argv)


def _check_neuron(argv: Sequence[str], cache_dir: Path) -> list[str]:
    own = optimum_neuron_serve_flags(source_root(OPTIMUM_NEURON, cache_dir))
    forwarded = vllm_serve_flags(
        source_root(VLLM_NEURON, cache_dir), f"vllm {VLLM_NEURON.version} (forwarded)"
    )
    return own.problems(argv, fallback=forwarded)


COMMANDS: dict[tuple[str, ...], Callable[[Sequence[str], Path], list[str]]] = {
    ("vllm", "serve"): _check_vllm,
    ("optimum-cli", "neuron", "serve"): _check_neuron,
}
"""The commands checked against the wheels themselves (`engine_flags.check_command`): the
arguments after the command, and the wheel cache."""
