"""What every upstream source module of `tools.sources` shares: the table declaration, its
committed file and formatting, the JSON rows of a flag set, and the reader of environment
variable names in a package's Python source.

What counts as an environment read (`package_reads`): `os.getenv("X")`, `os.environ.get("X")`,
`os.environ["X"]`, `"X" in os.environ`, `get_secret*("X")` helpers, pydantic
`Field(validation_alias="X")` and `AliasChoices("X", ...)`, click `envvar="X"`; and a call of
the package's own getters, found on its source: a module-level function that hands one of its
parameters to a getter as the name (`get_bool_env_var("X")`, `get_env_int("X", 3)`, a factory
whose closure reads it), or a class whose constructor keeps one that a method reads
(`_GatedBool("X", True)`), and their subclasses. A module-level string constant stands for its
value. Nothing is imported: the sources are read with `ast`.

A loop variable over a literal sequence of names (or a module-level one) stands for each.

Not seen: a name built at run time (an f-string), a getter that is a method, and reads in
non-Python code.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from tools.engine_flags import EngineRelease, Flag, FlagSet

REPO_ROOT = Path(__file__).resolve().parents[2]
CONTRACTS = REPO_ROOT / "contracts"
"""The committed tables live under `contracts/<kind>/<stem>.json`."""


@dataclass(frozen=True)
class Table:
    """One committed table and how it is rebuilt from its upstream source."""

    kind: Literal["flags", "env"]
    """`flags` (`contracts/flag_table.py` reads it) or `env` (`contracts/env_table.py`)."""
    stem: str
    """File stem, `<project>-<version>`."""
    build: Callable[[Path], dict[str, object]]
    """Builds the table's content from the wheel cache (`engine_flags.CACHE_DIR`), or, for a
    table with a `checkout`, from the root of that checkout."""
    releases: tuple[EngineRelease, ...] = ()
    """The PyPI releases `build` reads (prefetched by `tools/engine_flags.py --prefetch`)."""
    checkout: str | None = None
    """Set when the source is not on PyPI: what to check out (`github.com/o/r tag vX`). Such a
    table is rebuilt only from a checkout given on the command line, so the tests cannot
    re-extract it and check its reader on a sample instead."""

    @property
    def path(self) -> Path:
        """The committed file."""
        return CONTRACTS / self.kind / f"{self.stem}.json"

    def render(self, root: Path) -> str:
        """The file's text as built from `root` (stable formatting for reviews)."""
        return json.dumps(self.build(root), indent=1) + "\n"

    def write(self, root: Path) -> Path:
        """Rebuild the committed file from `root`; returns its path."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text(self.render(root), encoding="utf-8")
        return self.path


def flag_rows(flag_set: FlagSet) -> list[dict[str, object]]:
    """One JSON row per distinct flag (aliases together), sorted by first option."""
    seen: dict[tuple[str, ...], Flag] = {}
    for flag in flag_set.flags.values():
        seen.setdefault(flag.options, flag)
    rows = []
    for flag in sorted(seen.values(), key=lambda f: f.options[0]):
        rows.append(
            {
                "options": list(flag.options),
                "takes_value": flag.takes_value,
                "optional_value": flag.optional_value,
                "many": flag.many,
                "negatable": flag.negatable,
                "choices": list(flag.choices) if flag.choices is not None else None,
                "known_values": (
                    list(flag.known_values) if flag.known_values is not None else None
                ),
            }
        )
    return rows


def env_table(
    release: EngineRelease, source: str, reads: Collection[str], **extra: object
) -> dict[str, object]:
    """An environment table: the release, where and how its names were read (`source`), every
    name it reads (sorted), then `extra` fields."""
    head = {"project": release.project, "version": release.version, "source": source}
    return {**head, "reads": sorted(reads), **extra}


_MARKERS = ("environ", "getenv", "get_secret", "validation_alias", "AliasChoices", "envvar")
"""Text a module must contain to read the environment in one of the ways above."""


@dataclass(frozen=True)
class _Getter:
    """Where a function call takes the name of the variable it reads."""

    index: int
    """Positional index of the name argument."""
    keyword: str
    """Its keyword."""


_BASE_GETTERS = {
    "getenv": _Getter(0, "key"),
    **{
        f: _Getter(0, "secret_name")
        for f in ("get_secret", "get_secret_str", "get_secret_bool", "get_secret_float")
    },
}
_GENERIC = {"get", "pop", "setdefault", "getenv", "__getitem__", "__contains__"}
"""Names no function counts as a getter under: calls of a mapping's own methods would match."""


def literal(node: ast.AST | None) -> str | None:
    """The value of a string literal, else None."""
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _is_environ(node: ast.AST) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == "environ") or (
        isinstance(node, ast.Name) and node.id == "environ"
    )


def _constants(tree: ast.Module) -> dict[str, str]:
    """Module-level `NAME = "text"` (or `NAME: Final = "text"`) constants."""
    out: dict[str, str] = {}
    for node in tree.body:
        target = node.target if isinstance(node, ast.AnnAssign) else None
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
        value = literal(getattr(node, "value", None))
        if isinstance(target, ast.Name) and value is not None:
            out[target.id] = value
    return out


def _call_name(call: ast.Call) -> str | None:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)


def _argument(call: ast.Call, getter: _Getter) -> ast.AST | None:
    if len(call.args) > getter.index:
        return call.args[getter.index]
    return next((k.value for k in call.keywords if k.arg == getter.keyword), None)


def _sites(node: ast.AST, getters: dict[str, _Getter]) -> Iterator[ast.AST]:
    """The expressions naming the variables `node` itself reads (not its children)."""
    if isinstance(node, ast.Call):
        name = _call_name(node)
        getter = getters.get(name or "")
        if name == "get" and isinstance(node.func, ast.Attribute):
            getter = _Getter(0, "key") if _is_environ(node.func.value) else None
        if getter is not None and (argument := _argument(node, getter)) is not None:
            yield argument
        if name == "AliasChoices":
            yield from node.args
        for keyword in node.keywords:
            if keyword.arg in ("validation_alias", "envvar"):
                yield keyword.value
    elif isinstance(node, ast.Subscript) and _is_environ(node.value):
        yield node.slice
    elif isinstance(node, ast.Compare) and any(_is_environ(c) for c in node.comparators):
        yield node.left


def _passed(call: ast.Call) -> Iterator[tuple[int | None, str | None, ast.AST]]:
    yield from ((i, None, a) for i, a in enumerate(call.args))
    yield from ((None, k.arg, k.value) for k in call.keywords if k.arg is not None)


_Passes = list[tuple[str, int | None, str | None, str]]
"""Calls passing a parameter on: (callee, position, keyword, parameter)."""


def _function(func: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[_Getter | None, _Passes]:
    """A function's own getter (it reads a parameter directly) or the calls it passes its
    parameters to. One that also assigns `environ[p]` sets the variable (a context manager
    that restores it reads it only to put it back): not a getter."""
    params = [a.arg for a in (*func.args.posonlyargs, *func.args.args)]
    direct: list[str] = []
    stored: set[str] = set()
    passes: _Passes = []
    for node in ast.walk(func):
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store | ast.Del):
            if _is_environ(node.value) and isinstance(node.slice, ast.Name):
                stored.add(node.slice.id)
            continue
        direct.extend(
            s.id for s in _sites(node, _BASE_GETTERS) if isinstance(s, ast.Name) and s.id in params
        )
        if isinstance(node, ast.Call) and (callee := _call_name(node)):
            passes.extend(
                (callee, i, k, a.id)
                for i, k, a in _passed(node)
                if isinstance(a, ast.Name) and a.id in params
            )
    direct = [p for p in direct if p not in stored]
    if direct:
        return _Getter(params.index(direct[0]), direct[0]), []
    return None, [p for p in passes if p[3] not in stored]


def _class(cls: ast.ClassDef) -> _Getter | None:
    """A class whose constructor keeps a parameter (`self.name = name`) that a method reads as
    a variable name (`os.environ.get(self.name)`): constructing one reads that variable."""
    init = next(
        (n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None
    )
    if init is None:
        return None
    params = [a.arg for a in (*init.args.posonlyargs, *init.args.args)][1:]
    kept = {
        target.attr: node.value.id
        for node in ast.walk(init)
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name)
        for target in node.targets
        if isinstance(target, ast.Attribute)
        and isinstance(target.value, ast.Name)
        and target.value.id == "self"
        and node.value.id in params
    }
    for node in ast.walk(cls):
        for site in _sites(node, _BASE_GETTERS):
            if (
                isinstance(site, ast.Attribute)
                and isinstance(site.value, ast.Name)
                and site.value.id == "self"
                and site.attr in kept
            ):
                param = kept[site.attr]
                return _Getter(params.index(param), param)
    return None


def _helpers(trees: list[ast.Module]) -> dict[str, _Getter]:
    """Every getter: the base ones; each module-level function that passes one of its
    parameters on as the name to a getter (`def get_bool_env_var(name, default):
    os.getenv(name, default)`, also from a closure it returns), to a fixed point, so helpers of
    helpers count; and each module-level class `_class` finds, or that inherits from one
    without a constructor of its own. Methods are left out: their names (`get`, `__call__`) are
    too common for a call to be known as theirs, and one false getter would make every caller
    of it one."""
    getters = dict(_BASE_GETTERS)
    pending: dict[str, tuple[list[str], _Passes]] = {}
    heirs: dict[str, list[str]] = {}
    for tree in trees:
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                if (own := _class(node)) is not None:
                    getters.setdefault(node.name, own)
                elif not any(
                    isinstance(n, ast.FunctionDef) and n.name == "__init__" for n in node.body
                ):
                    heirs[node.name] = [b.id for b in node.bases if isinstance(b, ast.Name)]
                continue
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            if node.name in _GENERIC or node.name in getters:
                continue
            own, passes = _function(node)
            if own is not None:
                getters[node.name] = own
            elif passes:
                params = [a.arg for a in (*node.args.posonlyargs, *node.args.args)]
                pending.setdefault(node.name, (params, passes))
    changed = True
    while changed:
        changed = False
        for name, bases in list(heirs.items()):
            if (base := next((b for b in bases if b in getters), None)) is not None:
                getters.setdefault(name, getters[base])
                del heirs[name]
                changed = True
        for name, (params, passes) in list(pending.items()):
            for callee, index, keyword, param in passes:
                getter = getters.get(callee)
                if getter is not None and (index == getter.index or keyword == getter.keyword):
                    getters[name] = _Getter(params.index(param), param)
                    del pending[name]
                    changed = True
                    break
    return getters


def _strings(node: ast.AST, sequences: dict[str, list[str]]) -> list[str] | None:
    """The strings of a literal tuple/list/set of string literals, or of a module-level name
    bound to one; None for anything else."""
    if isinstance(node, ast.Name):
        return sequences.get(node.id)
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        values = [literal(e) for e in node.elts]
        return [v for v in values if v is not None] if None not in values else None
    return None


def _looped(tree: ast.Module) -> dict[int, list[str]]:
    """The names a loop variable takes, by the id of each of its uses: `for name in NAMES:` and
    comprehensions over a literal sequence of strings or a module-level one (`any(os.getenv(n)
    for n in _DIAGNOSTICS_ENVS)`)."""
    sequences: dict[str, list[str]] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            target = node.target if isinstance(node, ast.AnnAssign) else node.targets[0]
            if isinstance(target, ast.Name) and (values := _strings(node.value, {})):
                sequences[target.id] = values
    uses: dict[int, list[str]] = {}
    for node in ast.walk(tree):
        loops: list[tuple[ast.AST, ast.AST, list[ast.AST]]] = []
        if isinstance(node, ast.For):
            loops = [(node.target, node.iter, list(node.body))]
        elif isinstance(node, ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp):
            loops = [(g.target, g.iter, [node]) for g in node.generators]
        for target, iterated, scope in loops:
            if isinstance(target, ast.Name) and (values := _strings(iterated, sequences)):
                for part in scope:
                    for use in ast.walk(part):
                        if isinstance(use, ast.Name) and use.id == target.id:
                            uses[id(use)] = values
    return uses


def _reads(tree: ast.Module, getters: dict[str, _Getter]) -> Iterator[str]:
    constants, looped = _constants(tree), _looped(tree)
    for node in ast.walk(tree):
        for site in _sites(node, getters):
            if isinstance(site, ast.Name) and id(site) in looped:
                yield from looped[id(site)]
            elif isinstance(site, ast.Name) and site.id in constants:
                yield constants[site.id]
            elif (text := literal(site)) is not None:
                yield text


def package_reads(root: Path, package: str) -> frozenset[str]:
    """Every environment variable name `package` (under `root`) reads, as listed above.

    Only modules that mention a getter are parsed: first those with a marker, then, as helpers
    are found, those that call one, until no new module does."""
    texts = {
        path: path.read_text(encoding="utf-8") for path in sorted((root / package).rglob("*.py"))
    }
    trees: dict[Path, ast.Module | None] = {}
    getters = dict(_BASE_GETTERS)
    words = set(_MARKERS)
    while True:
        pattern = re.compile("|".join(sorted(map(re.escape, words))))
        new = [p for p, text in texts.items() if p not in trees and pattern.search(text)]
        if not new:
            break
        for path in new:
            try:
                trees[path] = ast.parse(texts[path])
            except SyntaxError:
                trees[path] = None
        getters = _helpers([t for t in trees.values() if t is not None])
        words |= set(getters)
    names: set[str] = set()
    for tree in trees.values():
        if tree is not None:
            names.update(n for n in _reads(tree, getters) if n and n.replace("_", "").isalnum())
    return frozenset(names)
