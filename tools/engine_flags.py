"""Command-line flags the pinned serving engines really accept, read from their released sources.

A flag the pinned engine release does not know makes its container exit at start, on an
accelerator instance that took minutes to come up, so the generated command lines are checked
offline against the engines' own argument definitions instead of a hand-written list.

How: the wheels of the pinned releases are fetched once with `pip download --no-deps` into
`.cache/engines/` (git-ignored), their Python files are extracted, and the argparse calls are
read with `ast` (nothing is imported: the engines need CUDA/Neuron stacks that a laptop or CI
runner does not have). Flags registered from config dataclasses (`get_kwargs(ModelConfig)` then
`add_argument("--x", **kwargs["x"])`, or a loop over all fields of a dataclass) are followed to
the dataclass field annotations to learn whether a flag takes a value, is a boolean switch
(`--x` / `--no-x`) and which values its `Literal` type allows.

Which releases there are, and which command each engine's parser reads, is declared by the
upstream source modules of `tools.sources` (`TABLES`, `COMMANDS`) and by the engine contracts
that name a committed flag table (`COMMAND`, `FLAG_TABLE`); this module names no engine.

Command line: `python tools/engine_flags.py --prefetch` downloads and extracts every release a
table is read from (the Makefile bootstrap runs it); `python tools/engine_flags.py <engine
command> ...` checks an argv.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import fcntl
import subprocess
import sys
import zipfile
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

REPO_ROOT = Path(__file__).resolve().parent.parent
CACHE_DIR = REPO_ROOT / ".cache" / "engines"
"""Where wheels and extracted sources live (git-ignored through `.cache/`)."""


@dataclass(frozen=True)
class EngineRelease:
    """A pinned engine distribution on PyPI."""

    project: str
    version: str

    @property
    def wheel_prefix(self) -> str:
        """File-name prefix of the wheel (`pip` normalises `-` to `_`)."""
        return f"{self.project.replace('-', '_')}-{self.version}-"


def contract_release(contract: ModuleType) -> EngineRelease:
    """The release an engine contract names as its `SOURCE_RELEASE` (PyPI project, version):
    the source its committed tables are read from."""
    project, version = contract.SOURCE_RELEASE
    return EngineRelease(project, version)


class EngineSourceUnavailableError(RuntimeError):
    """The pinned wheel is not cached and could not be downloaded."""


# --------------------------------------------------------------------------------------------
# Fetching sources
# --------------------------------------------------------------------------------------------


@contextlib.contextmanager
def _locked(cache_dir: Path, release: EngineRelease) -> Iterator[None]:
    """Serialise one release's download/extraction between pytest-xdist workers, parallel make
    jobs and the prefetch's threads; other releases go on meanwhile."""
    cache_dir.mkdir(parents=True, exist_ok=True)
    with open(cache_dir / f".lock-{release.project}-{release.version}", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _find_wheel(release: EngineRelease, cache_dir: Path) -> Path | None:
    wheels = sorted(cache_dir.glob(f"{release.wheel_prefix}*.whl"))
    return wheels[0] if wheels else None


def fetch_wheel(release: EngineRelease, cache_dir: Path = CACHE_DIR) -> Path:
    """Return the cached wheel of `release`, downloading it with `pip download` if missing.

    Raises `EngineSourceUnavailableError` with pip's output when the download fails (no network):
    callers must not treat that as "nothing to check".
    """
    with _locked(cache_dir, release):
        wheel = _find_wheel(release, cache_dir)
        if wheel is not None:
            return wheel
        cmd = [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--only-binary=:all:",
            "--disable-pip-version-check",
            # offline machines should fail within a minute, not after pip's default retries
            "--retries",
            "2",
            "--timeout",
            "20",
            f"{release.project}=={release.version}",
            "-d",
            str(cache_dir),
        ]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        wheel = _find_wheel(release, cache_dir)
        if proc.returncode != 0 or wheel is None:
            raise EngineSourceUnavailableError(
                f"could not download {release.project}=={release.version} "
                f"({' '.join(cmd)}): {proc.stdout[-800:]}{proc.stderr[-800:]}"
            )
        return wheel


def source_root(release: EngineRelease, cache_dir: Path = CACHE_DIR) -> Path:
    """Return a directory holding the release's Python sources (extracted once from the wheel)."""
    target = cache_dir / "src" / f"{release.project}-{release.version}"
    marker = target / ".complete"
    if marker.exists():
        return target
    wheel = fetch_wheel(release, cache_dir)
    with _locked(cache_dir, release):
        if marker.exists():
            return target
        with zipfile.ZipFile(wheel) as archive:
            members = [
                name for name in archive.namelist() if name.endswith(".py") or ".dist-info/" in name
            ]
            archive.extractall(target, members)
        marker.write_text(wheel.name + "\n")
    return target


# --------------------------------------------------------------------------------------------
# Reading argparse definitions
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Flag:
    """One optional argument as argparse will accept it."""

    options: tuple[str, ...]
    takes_value: bool = True
    optional_value: bool = False
    negatable: bool = False
    choices: tuple[str, ...] | None = None
    """Values argparse enforces (`choices=`); None when any value is accepted at parse time."""
    known_values: tuple[str, ...] | None = None
    """Values the field's `Literal` type lists even when argparse lets any string through
    (vLLM validates those later, at engine start, which is exactly what must not happen on a
    GPU instance)."""
    many: bool = False
    """`nargs="+"`/`"*"`: every following token up to the next option is one of its values."""


@dataclass
class FlagSet:
    """The flags of one command parser, keyed by option string."""

    name: str
    flags: dict[str, Flag] = field(default_factory=dict)
    normalise_underscores: bool = False
    """The parser rewrites `--a_b` to `--a-b` (vLLM's FlexibleArgumentParser); plain argparse does
    not."""

    def add(self, flag: Flag) -> None:
        """Register `flag` under each of its option strings (and `--no-x` for switches)."""
        for option in flag.options:
            self.flags[option] = flag
            if flag.negatable and option.startswith("--"):
                self.flags["--no-" + option[2:]] = Flag(
                    options=("--no-" + option[2:],), takes_value=False
                )

    def __contains__(self, option: str) -> bool:
        return self.lookup(option) is not None

    def lookup(self, option: str) -> Flag | None:
        """Return the flag for `option`, applying the parser's own normalisation."""
        if option in self.flags:
            return self.flags[option]
        if self.normalise_underscores and option.startswith("--"):
            return self.flags.get("--" + option[2:].replace("_", "-"))
        return None

    def problems(self, argv: Sequence[str], fallback: FlagSet | None = None) -> list[str]:
        """Return what this parser (then `fallback`, for forwarded args) would reject in `argv`.

        Checks: every option exists; options that take a value get one; switches get none;
        values are within `choices` and, where the type lists them, within `known_values`.
        Positional arguments are reported too: the generated commands use none.
        """
        found: list[str] = []
        i = 0
        while i < len(argv):
            token = argv[i]
            i += 1
            if not token.startswith("-"):
                found.append(f"{self.name}: unexpected positional argument {token!r}")
                continue
            option, has_inline, inline = token.partition("=")
            owner = self
            flag = self.lookup(option)
            if flag is None and fallback is not None:
                owner, flag = fallback, fallback.lookup(option)
            if flag is None:
                found.append(f"{self.name}: unknown flag {option}")
                if not has_inline and i < len(argv) and not argv[i].startswith("-"):
                    i += 1  # most likely its value; do not report it a second time
                continue
            if not flag.takes_value:
                if has_inline:
                    found.append(f"{owner.name}: {option} is a switch and takes no value")
                continue
            if has_inline:
                value = inline
            elif i < len(argv) and not argv[i].startswith("--"):
                value = argv[i]
                i += 1
            elif flag.optional_value:
                continue
            else:
                found.append(f"{owner.name}: {option} needs a value")
                continue
            values = [value]
            while flag.many and i < len(argv) and not argv[i].startswith("-"):
                values.append(argv[i])
                i += 1
            for value in values:
                if flag.choices is not None and value not in flag.choices:
                    found.append(f"{owner.name}: {option} {value!r} not in {list(flag.choices)}")
                elif flag.known_values is not None and value not in flag.known_values:
                    found.append(
                        f"{owner.name}: {option} {value!r} not among {list(flag.known_values)}"
                    )
        return found


class _Modules:
    """Lazy index of the modules of an extracted source tree."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._trees: dict[str, ast.Module] = {}

    def path(self, dotted: str) -> Path | None:
        base = self.root.joinpath(*dotted.split("."))
        for candidate in (base.with_suffix(".py"), base / "__init__.py"):
            if candidate.is_file():
                return candidate
        return None

    def tree(self, dotted: str) -> ast.Module | None:
        if dotted not in self._trees:
            path = self.path(dotted)
            if path is None:
                return None
            self._trees[dotted] = ast.parse(path.read_text(encoding="utf-8"))
        return self._trees[dotted]

    def resolve(self, module: str, name: str, depth: int = 0) -> tuple[str, ast.AST] | None:
        """Find the class/assignment `name` visible in `module`, following `from x import`."""
        tree = self.tree(module)
        if tree is None or depth > 6:
            return None
        for node in tree.body:
            if isinstance(node, ast.ClassDef | ast.FunctionDef) and node.name == name:
                return module, node
            if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == name for t in node.targets
            ):
                return module, node.value
            if (
                isinstance(node, ast.AnnAssign)
                and isinstance(node.target, ast.Name)
                and node.target.id == name
                and node.value is not None
            ):
                return module, node.value
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module is not None:
                for alias in node.names:
                    if (alias.asname or alias.name) == name:
                        source = node.module
                        if node.level:
                            parts = module.split(".")
                            is_pkg = self.path(module) == self.root.joinpath(*parts, "__init__.py")
                            keep = len(parts) - node.level + (1 if is_pkg else 0)
                            source = ".".join([*parts[:keep], node.module])
                        return self.resolve(source, alias.name, depth + 1)
        return None


def _const_strings(nodes: Sequence[ast.AST]) -> list[str]:
    return [n.value for n in nodes if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def _union_members(node: ast.AST | None) -> list[ast.AST]:
    if node is None:
        return []
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            return _union_members(ast.parse(node.value, mode="eval").body)
        except SyntaxError:
            return [node]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _union_members(node.left) + _union_members(node.right)
    if isinstance(node, ast.Subscript):
        head = node.value.attr if isinstance(node.value, ast.Attribute) else ""
        head = node.value.id if isinstance(node.value, ast.Name) else head
        inner = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if head in ("Optional", "Union"):
            return [m for part in inner for m in _union_members(part)] + (
                [ast.Constant(None)] if head == "Optional" else []
            )
        if head == "Annotated":
            return _union_members(inner[0])
    return [node]


def _type_name(node: ast.AST) -> str:
    if isinstance(node, ast.Constant) and node.value is None:
        return "None"
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Subscript):
        return _type_name(node.value)
    return type(node).__name__


def _literal_values(modules: _Modules, module: str, node: ast.AST) -> list[str] | None:
    """Values of a `Literal[...]` annotation member, resolving aliases like `ModelDType`."""
    if isinstance(node, ast.Subscript) and _type_name(node.value) == "Literal":
        inner = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        return [str(v.value) for v in inner if isinstance(v, ast.Constant)]
    if isinstance(node, ast.Name):
        found = modules.resolve(module, node.id)
        if found is not None and not isinstance(found[1], ast.ClassDef | ast.FunctionDef):
            values: list[str] = []
            for member in _union_members(found[1]):
                sub = _literal_values(modules, found[0], member)
                if sub is None:
                    return None
                values += sub
            return values
    return None


def _flag_from_annotation(
    modules: _Modules, module: str, options: tuple[str, ...], annotation: ast.AST | None
) -> Flag:
    """Mirror vLLM's `_compute_kwargs`: how a dataclass field becomes an argparse argument."""
    members = _union_members(annotation)
    names = {_type_name(m) for m in members}
    if names == {"bool", "str", "None"}:
        return Flag(options, takes_value=True, optional_value=True)
    if "bool" in names:
        return Flag(options, takes_value=False, negatable=True)
    literals: list[str] = []
    for member in members:
        values = _literal_values(modules, module, member)
        if values is not None:
            literals += values
    if literals:
        # With `str` in the union vLLM shows the literals as a metavar and accepts any string.
        if "str" in names:
            return Flag(options, known_values=tuple(literals))
        return Flag(options, choices=tuple(literals) + (("None",) if "None" in names else ()))
    if names & {"list", "set", "tuple"}:
        # `collection_to_kwargs`: a list, set or tuple field takes `nargs="+"`; the option given
        # twice keeps only the second list, so all values follow one option.
        return Flag(options, many=True)
    return Flag(options)


def _dataclass_fields(
    modules: _Modules, module: str, class_name: str
) -> list[tuple[str, str, ast.AST]]:
    """(module, field name, annotation) for a dataclass and its bases, bases first."""
    found = modules.resolve(module, class_name)
    if found is None:
        return []
    cls_module, cls = found
    if not isinstance(cls, ast.ClassDef):
        return []
    fields: list[tuple[str, str, ast.AST]] = []
    for base in cls.bases:
        if isinstance(base, ast.Name):
            fields += _dataclass_fields(modules, cls_module, base.id)
    for node in cls.body:
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and not node.target.id.startswith("_")
            and _type_name(node.annotation) not in ("ClassVar", "InitVar")
        ):
            fields.append((cls_module, node.target.id, node.annotation))
    return fields


def _find_method(cls: ast.ClassDef, name: str) -> ast.FunctionDef | None:
    for node in cls.body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return node
    return None


class _ParserReader:
    """Walks functions that register argparse arguments and collects their flags."""

    def __init__(self, modules: _Modules, flag_set: FlagSet) -> None:
        self.modules = modules
        self.flag_set = flag_set
        self._seen: set[tuple[str, str]] = set()

    def read_function(
        self, module: str, func: ast.FunctionDef, cls: tuple[str, ast.ClassDef] | None
    ) -> None:
        kwargs_of: dict[str, tuple[str, str]] = {}
        for node in ast.walk(func):
            # `model_kwargs = get_kwargs(ModelConfig)`: remember which dataclass a dict describes.
            if (
                isinstance(node, ast.Assign)
                and isinstance(node.value, ast.Call)
                and _type_name(node.value.func) == "get_kwargs"
                and node.value.args
                and isinstance(node.value.args[0], ast.Name)
            ):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        name = node.value.args[0].id
                        if name == "cls" and cls is not None:
                            kwargs_of[target.id] = (cls[0], cls[1].name)
                        else:
                            kwargs_of[target.id] = (module, name)
        for node in ast.walk(func):
            if not isinstance(node, ast.Call):
                continue
            callee = node.func
            if isinstance(callee, ast.Attribute) and callee.attr == "add_argument":
                self._read_add_argument(module, node, kwargs_of, cls)
            elif isinstance(callee, ast.Attribute) and callee.attr == "add_cli_args":
                owner = callee.value
                if isinstance(owner, ast.Name) and owner.id != "cls":
                    self.read_class_method(module, owner.id, "add_cli_args")

    def read_class_method(self, module: str, class_name: str, method: str) -> None:
        """Read `class_name.method`, following imports and, when inherited, base classes.

        An inherited classmethod that calls `get_kwargs(cls)` registers the fields of the
        class it is called on (vLLM 0.33's `FrontendArgs` inherits `add_cli_args`).
        """
        found = self.modules.resolve(module, class_name)
        cls_module, cls = found if found is not None else (module, None)
        if not isinstance(cls, ast.ClassDef):
            raise LookupError(f"cannot resolve class {class_name} from {module}")
        if (cls_module, cls.name) in self._seen:
            return
        self._seen.add((cls_module, cls.name))
        owner_module, owner = cls_module, cls
        while (func := _find_method(owner, method)) is None:
            bases = [b.id for b in owner.bases if isinstance(b, ast.Name)]
            base = self.modules.resolve(owner_module, bases[0]) if bases else None
            base_module, base_cls = base if base is not None else (owner_module, None)
            if not isinstance(base_cls, ast.ClassDef):
                raise LookupError(f"{class_name}.{method} not found")
            owner_module, owner = base_module, base_cls
        self.read_function(owner_module, func, (cls_module, cls))

    def _read_add_argument(
        self,
        module: str,
        call: ast.Call,
        kwargs_of: dict[str, tuple[str, str]],
        cls: tuple[str, ast.ClassDef] | None,
    ) -> None:
        options = tuple(o for o in _const_strings(call.args) if o.startswith("-"))
        if any(isinstance(a, ast.JoinedStr) for a in call.args):
            # `for key, value in kwargs.items(): add_argument(f"--{key...}", **value)`:
            # one flag per field of the dataclass whose kwargs are being iterated.
            if cls is None:
                raise LookupError("f-string flag outside a dataclass method")
            for field_module, name, annotation in _dataclass_fields(
                self.modules, cls[0], cls[1].name
            ):
                option = "--" + name.replace("_", "-")
                self.flag_set.add(
                    _flag_from_annotation(self.modules, field_module, (option,), annotation)
                )
            return
        if not options:
            return  # positional (e.g. vLLM's optional `model_tag`)
        flag = Flag(options)
        for source in self._kwargs_sources(call):
            dict_name, field_name = source
            if dict_name in kwargs_of:
                owner_module, owner = kwargs_of[dict_name]
                for field_module, name, annotation in _dataclass_fields(
                    self.modules, owner_module, owner
                ):
                    if name == field_name:
                        flag = _flag_from_annotation(
                            self.modules, field_module, options, annotation
                        )
        for keyword in call.keywords:
            if keyword.arg == "action":
                action = keyword.value
                action_name = (
                    action.value if isinstance(action, ast.Constant) else _type_name(action)
                )
                if action_name in ("store_true", "store_false", "count", "store_const"):
                    flag = Flag(options, takes_value=False)
                elif action_name == "BooleanOptionalAction":
                    flag = Flag(options, takes_value=False, negatable=True)
            elif keyword.arg == "choices" and isinstance(keyword.value, ast.List | ast.Tuple):
                values = _const_strings(keyword.value.elts)
                if values:
                    flag = Flag(options, choices=tuple(values))
            elif (
                keyword.arg == "nargs"
                and isinstance(keyword.value, ast.Constant)
                and keyword.value.value == "?"
            ):
                flag = Flag(options, takes_value=True, optional_value=True)
        self.flag_set.add(flag)

    @staticmethod
    def _kwargs_sources(call: ast.Call) -> list[tuple[str, str]]:
        """`**model_kwargs["dtype"]` (possibly inside `**{**x["y"], ...}`) → [(dict, field)]."""
        found: list[tuple[str, str]] = []
        for keyword in call.keywords:
            if keyword.arg is not None:
                continue
            values = [keyword.value]
            if isinstance(keyword.value, ast.Dict):
                pairs = zip(keyword.value.keys, keyword.value.values, strict=True)
                values = [v for k, v in pairs if k is None]
            for value in values:
                if (
                    isinstance(value, ast.Subscript)
                    and isinstance(value.value, ast.Name)
                    and isinstance(value.slice, ast.Constant)
                ):
                    found.append((value.value.id, str(value.slice.value)))
        return found


def _module_function(modules: _Modules, module: str, name: str) -> ast.FunctionDef:
    tree = modules.tree(module)
    if tree is None:
        raise LookupError(f"module {module} not in {modules.root}")
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return node
    raise LookupError(f"{module}.{name} not found")


# --------------------------------------------------------------------------------------------
# Checking whole commands
# --------------------------------------------------------------------------------------------


def table_commands() -> dict[tuple[str, ...], str]:
    """Command prefix -> committed flag table, for every engine contract (`contracts/<engine>.py`)
    that declares its `COMMAND` and `FLAG_TABLE` (the tables are extracted from the pinned
    releases and compared with them by the engines' tests)."""
    import importlib
    import pkgutil

    from ecs_inference import contracts

    found: dict[tuple[str, ...], str] = {}
    for info in pkgutil.iter_modules(contracts.__path__):
        module = importlib.import_module(f"{contracts.__name__}.{info.name}")
        command, table = getattr(module, "COMMAND", None), getattr(module, "FLAG_TABLE", None)
        if isinstance(command, tuple) and isinstance(table, str):
            found[tuple(str(part) for part in command)] = table
    return found


def check_command(argv: Sequence[str], cache_dir: Path = CACHE_DIR) -> list[str]:
    """Return the problems the pinned engine would find in `argv` (empty list: accepted).

    Understands every command a `tools.sources` module reads from its wheels (`COMMANDS`),
    then the command of every engine whose contract names a committed flag table
    (`table_commands`).
    """
    from tools.sources import commands  # imports this module

    argv = list(argv)
    for command, check in commands().items():
        if tuple(argv[: len(command)]) == command:
            return check(argv[len(command) :], cache_dir)
    for command, table in table_commands().items():
        # `python3 -m <module>` is the module's command under any interpreter name.
        if tuple(argv[: len(command)]) == command or (
            command[:1] == ("python3",) and tuple(argv[1 : len(command)]) == command[1:]
        ):
            from ecs_inference.contracts import flag_table

            return flag_table.load(table).problems(argv[len(command) :])
    return [f"not an engine command this tool knows: {argv[:3]}"]


def main(args: Sequence[str] | None = None) -> int:
    """CLI: `--prefetch` to cache the releases, or an engine argv to check."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--prefetch", action="store_true", help="download and extract releases")
    parser.add_argument("argv", nargs=argparse.REMAINDER, help="engine command line to check")
    ns = parser.parse_args(args)
    if ns.prefetch:
        from tools.sources import releases  # imports this module

        # Each download waits on the index and the network, not on the CPU: four at once.
        with ThreadPoolExecutor(max_workers=4) as pool:
            for root in pool.map(source_root, releases()):
                print(root)
        return 0
    problems = check_command(ns.argv)
    for problem in problems:
        print(problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    # Run as a script (`python tools/engine_flags.py`): the registry lives in the repository's
    # `tools` package, and it imports `tools.engine_flags`; running that module's `main` keeps
    # one copy of these classes rather than a second one under `__main__`.
    sys.path.insert(0, str(REPO_ROOT))
    from tools.engine_flags import main as _main

    sys.exit(_main())
