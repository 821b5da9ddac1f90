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
from typing import Literal, cast

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


_MARKERS = ("environ", "getenv", "validation_alias", "AliasChoices", "envvar")
"""Words a module must contain (or a getter's name) to read the environment in one of the ways
above."""


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


_LEAVES = (ast.expr_context, ast.operator, ast.boolop, ast.unaryop, ast.cmpop)
"""Nodes no reader looks at (`Load`, `Add`, `Eq`, …): left out of the index."""
_SPANNED = (ast.stmt, ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)
"""Nodes whose subtree a reader walks: a function, a class, a loop's body, a comprehension."""
_SITE_KINDS = (ast.Call, ast.Subscript, ast.Compare)
"""The only nodes `_sites` finds a read in."""


class _Index:
    """A module's nodes in pre-order, with where each statement's and comprehension's subtree
    ends: walking a function, a class or a loop body is a slice of one list, so each module is
    traversed once however many of its parts the reader looks at (a large package has millions
    of nodes)."""

    def __init__(self, tree: ast.Module) -> None:
        nodes: list[ast.AST] = []
        span: dict[int, tuple[int, int]] = {}
        stack: list[ast.AST | tuple[ast.AST, int]] = [tree]
        while stack:
            item = stack.pop()
            if isinstance(item, tuple):
                span[id(item[0])] = (item[1], len(nodes))
                continue
            if isinstance(item, _SPANNED):
                stack.append((item, len(nodes)))
            nodes.append(item)
            children: list[ast.AST] = []
            for field in item._fields:
                value = getattr(item, field, None)
                if isinstance(value, list):
                    children += (
                        v for v in value if isinstance(v, ast.AST) and not isinstance(v, _LEAVES)
                    )
                elif isinstance(value, ast.AST) and not isinstance(value, _LEAVES):
                    children.append(value)
            stack += reversed(children)
        self.nodes = nodes
        self._span = span

    def walk(self, node: ast.AST) -> list[ast.AST]:
        """`node` (a statement or a comprehension) and everything below it, depth first."""
        start, end = self._span[id(node)]
        return self.nodes[start:end]


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


def _function(
    func: ast.FunctionDef | ast.AsyncFunctionDef, index: _Index
) -> tuple[_Getter | None, _Passes]:
    """A function's own getter (it reads a parameter directly) or the calls it passes its
    parameters to. One that also assigns `environ[p]` sets the variable (a context manager
    that restores it reads it only to put it back): not a getter."""
    params = [a.arg for a in (*func.args.posonlyargs, *func.args.args)]
    direct: list[str] = []
    stored: set[str] = set()
    passes: _Passes = []
    for node in index.walk(func):
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store | ast.Del):
            if _is_environ(node.value) and isinstance(node.slice, ast.Name):
                stored.add(node.slice.id)
            continue
        if not isinstance(node, _SITE_KINDS):
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


def _class(cls: ast.ClassDef, index: _Index) -> _Getter | None:
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
        for node in index.walk(init)
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name)
        for target in node.targets
        if isinstance(target, ast.Attribute)
        and isinstance(target.value, ast.Name)
        and target.value.id == "self"
        and node.value.id in params
    }
    for node in index.walk(cls):
        if not isinstance(node, _SITE_KINDS):
            continue
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


_Found = tuple[str, str, object]
"""One module-level definition as the getter search sees it, in source order: ("class", name,
its getter), ("heir", name, its base names) or ("function", name, (its getter, params, passes))."""


def _scan(tree: ast.Module, index: _Index) -> list[_Found]:
    """What each module-level class and function of `tree` is to the getter search; it depends
    on the base getters only, so each module is scanned once however often `_helpers` runs."""
    found: list[_Found] = []
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            if (own := _class(node, index)) is not None:
                found.append(("class", node.name, own))
            elif not any(
                isinstance(n, ast.FunctionDef) and n.name == "__init__" for n in node.body
            ):
                found.append(
                    ("heir", node.name, [b.id for b in node.bases if isinstance(b, ast.Name)])
                )
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name not in _GENERIC:
            params = [a.arg for a in (*node.args.posonlyargs, *node.args.args)]
            found.append(("function", node.name, (*_function(node, index), params)))
    return found


def _helpers(scans: list[list[_Found]]) -> dict[str, _Getter]:
    """Every getter: the base ones; each module-level function that passes one of its
    parameters on as the name to a getter (`def get_bool_env_var(name, default):
    os.getenv(name, default)`, also from a closure it returns), to a fixed point, so helpers of
    helpers count; and each module-level class `_class` finds, or that inherits from one
    without a constructor of its own. Methods are left out: their names (`get`, `__call__`) are
    too common for a call to be known as theirs, and one false getter would make every caller
    of it one. `scans` are the modules' `_scan`s; the first definition of a name wins."""
    getters = dict(_BASE_GETTERS)
    pending: dict[str, tuple[list[str], _Passes]] = {}
    heirs: dict[str, list[str]] = {}
    for kind, name, value in (found for scan in scans for found in scan):
        if kind == "class":
            getters.setdefault(name, cast(_Getter, value))
        elif kind == "heir":
            heirs[name] = cast(list[str], value)
        elif name not in getters:
            own, passes, params = cast(tuple[_Getter | None, _Passes, list[str]], value)
            if own is not None:
                getters[name] = own
            elif passes:
                pending.setdefault(name, (params, passes))
    _close(getters, heirs, pending)
    return getters


def _close(
    getters: dict[str, _Getter],
    heirs: dict[str, list[str]],
    pending: dict[str, tuple[list[str], _Passes]],
) -> None:
    """Adds to `getters`, to a fixed point, each heir of a getter class and each function that
    passes a parameter on to a getter as its name."""
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


def _strings(node: ast.AST, sequences: dict[str, list[str]]) -> list[str] | None:
    """The strings of a literal tuple/list/set of string literals, or of a module-level name
    bound to one; None for anything else."""
    if isinstance(node, ast.Name):
        return sequences.get(node.id)
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        values = [literal(e) for e in node.elts]
        return [v for v in values if v is not None] if None not in values else None
    return None


def _looped(tree: ast.Module, index: _Index) -> dict[int, list[str]]:
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
    for node in index.nodes:
        loops: list[tuple[ast.AST, ast.AST, list[ast.AST]]] = []
        if isinstance(node, ast.For):
            loops = [(node.target, node.iter, list(node.body))]
        elif isinstance(node, ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp):
            loops = [(g.target, g.iter, [node]) for g in node.generators]
        for target, iterated, scope in loops:
            if isinstance(target, ast.Name) and (values := _strings(iterated, sequences)):
                for part in scope:
                    for use in index.walk(part):
                        if isinstance(use, ast.Name) and use.id == target.id:
                            uses[id(use)] = values
    return uses


def _reads(tree: ast.Module, index: _Index, getters: dict[str, _Getter]) -> Iterator[str]:
    constants, looped = _constants(tree), _looped(tree, index)
    for node in index.nodes:
        if not isinstance(node, _SITE_KINDS):
            continue
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
    are found, those that name one, until no new module does. Names are matched as whole words,
    as the tokenizer reads them: a helper `_enabled` is not in `is_enabled`, `environ` not in
    `environment`."""
    texts = {
        path: path.read_text(encoding="utf-8") for path in sorted((root / package).rglob("*.py"))
    }
    parsed: dict[Path, tuple[ast.Module, _Index, list[_Found]] | None] = {}
    getters = dict(_BASE_GETTERS)
    words = {*_MARKERS, *_BASE_GETTERS}
    while True:
        pattern = re.compile(rf"\b(?:{'|'.join(sorted(map(re.escape, words)))})\b")
        new = [p for p, text in texts.items() if p not in parsed and pattern.search(text)]
        if not new:
            break
        for path in new:
            try:
                tree = ast.parse(texts[path])
            except SyntaxError:
                parsed[path] = None
                continue
            index = _Index(tree)
            parsed[path] = (tree, index, _scan(tree, index))
        modules = [m for m in parsed.values() if m is not None]
        getters = _helpers([scan for _, _, scan in modules])
        words |= set(getters)
    names: set[str] = set()
    for module in parsed.values():
        if module is not None:
            tree, index, _ = module
            names.update(
                n for n in _reads(tree, index, getters) if n and n.replace("_", "").isalnum()
            )
    return frozenset(names)
