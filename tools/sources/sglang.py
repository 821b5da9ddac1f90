"""SGLang: the flag and environment tables of the pinned release, read from its PyPI wheel.

The SGLang preset needs the engine's flags at *preview* time (an unknown flag in `extraArgs`
must fail the preview, not the container on a GPU instance that took minutes to start), and a
preview runs without the engine's sources, so the flags are extracted once into
`contracts/flags/` (`contracts/flag_table.py` reads it with the standard library).

Flags: SGLang's server parser (`sglang.srt.server_args.prepare_server_args`) is a plain
`argparse.ArgumentParser` filled by `ServerArgs.add_cli_args`: `add_cli_args_from_dataclass`
registers one flag per `A[T, "help"]` / `A[T, Arg(...)]` field of the namespace structs listed
in `_INPUT_NAMESPACES`, then a few flags are added by hand. The reader below mirrors
`sglang/srt/arg_groups/arg_utils.py::add_cli_args_from_dataclass` on the AST (nothing is
imported: SGLang needs torch and CUDA).

Environment: the attributes of `sglang/srt/environ.py` `Envs` and every read of the package
(`common.package_reads`), plus what `environ.py` does to legacy names at import and on read
(`sglang_environment`): an `Env*WithAlias(deprecated_name="OLD")` field reads OLD when its own
variable is unset; `_DEPRECATED_ENVS` copies a deprecated name to its `replacement`, or only
warns, with a note, when it has none (nothing reads the name then); and
`_handle_deprecated_envs` rewrites every legacy `SGL_X` to `SGLANG_X` (recorded as a
`prefix_aliases` rule, not as a copy of every name).

The release is the one `contracts/sglang.py` names as its `SOURCE_RELEASE`.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from ecs_inference.contracts import sglang as sglang_contract
from tools.engine_flags import (
    Flag,
    FlagSet,
    _const_strings,
    _Modules,
    _ParserReader,
    _type_name,
    _union_members,
    contract_release,
    source_root,
)
from tools.sources.common import Table, env_table, flag_rows, literal, package_reads

SGLANG = contract_release(sglang_contract)
"""The SGLang release the tables are read from (`contracts/sglang.py` names it)."""

_SERVER_ARGS_MODULE = "sglang.srt.server_args"


def _annotated_parts(annotation: ast.AST) -> tuple[ast.AST, list[ast.AST]] | None:
    """`A[T, m1, m2]` / `Annotated[T, ...]` → (T, [m1, m2]); None for a plain annotation."""
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:
            annotation = ast.parse(annotation.value, mode="eval").body
        except SyntaxError:
            return None
    if not isinstance(annotation, ast.Subscript):
        return None
    if _type_name(annotation.value) not in ("A", "Annotated"):
        return None
    parts = annotation.slice.elts if isinstance(annotation.slice, ast.Tuple) else []
    if len(parts) < 2:
        return None
    return parts[0], list(parts[1:])


def _arg_meta(metas: list[ast.AST]) -> dict[str, ast.AST] | None:
    """The first `Arg(...)` (keywords) or bare help string, as `_unwrap_annotated` picks it."""
    for meta in metas:
        if isinstance(meta, ast.Call) and _type_name(meta.func) == "Arg":
            return {kw.arg: kw.value for kw in meta.keywords if kw.arg is not None}
        if isinstance(meta, ast.Constant | ast.JoinedStr | ast.BinOp):
            if isinstance(meta, ast.Constant) and not isinstance(meta.value, str):
                continue
            return {}
    return None


def _const_list(modules: _Modules, module: str, node: ast.AST | None) -> list[str] | None:
    """String values of a list/tuple literal, following a module-level constant name.

    None when the list is computed (a call, a comprehension, a concatenation with a call):
    then argparse's choices are only known at run time and the table records "any value".
    """
    if node is None:
        return None
    if isinstance(node, ast.Name):
        found = modules.resolve(module, node.id)
        if found is None:
            return None
        return _const_list(modules, found[0], found[1])
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left = _const_list(modules, module, node.left)
        right = _const_list(modules, module, node.right)
        return None if left is None or right is None else left + right
    if isinstance(node, ast.List | ast.Tuple):
        values = _const_strings(node.elts)
        return values if len(values) == len(node.elts) else None
    return None


def _action_nargs_default(modules: _Modules, module: str, action: ast.AST) -> object:
    """`nargs` default of a custom argparse.Action class's `__init__` (None: takes a value)."""
    found = modules.resolve(module, _type_name(action))
    if found is None or not isinstance(found[1], ast.ClassDef):
        return None
    for node in found[1].body:
        if isinstance(node, ast.FunctionDef) and node.name == "__init__":
            args = node.args.args[-len(node.args.defaults) :] if node.args.defaults else []
            for arg, default in zip(args, node.args.defaults, strict=True):
                if arg.arg == "nargs" and isinstance(default, ast.Constant):
                    return default.value
    return None


def _action_flag(
    modules: _Modules,
    module: str,
    options: tuple[str, ...],
    action: ast.AST,
    nargs: ast.AST | None,
    choices: list[str] | None,
) -> Flag:
    name = action.value if isinstance(action, ast.Constant) else _type_name(action)
    if name in ("store_true", "store_false", "store_const", "count"):
        return Flag(options, takes_value=False)
    if name == "BooleanOptionalAction":
        return Flag(options, takes_value=False, negatable=True)
    effective = (
        nargs.value
        if isinstance(nargs, ast.Constant)
        else _action_nargs_default(modules, module, action)
    )
    if effective == 0:
        return Flag(options, takes_value=False)
    return _valued(options, effective, choices)


def _valued(options: tuple[str, ...], nargs: object, choices: list[str] | None) -> Flag:
    return Flag(
        options,
        optional_value=nargs in ("?", "*"),
        many=nargs in ("+", "*"),
        choices=tuple(choices) if choices is not None else None,
    )


def _field_flag(modules: _Modules, module: str, name: str, annotation: ast.AST) -> Flag | None:
    """The flag `add_cli_args_from_dataclass` registers for one field, or None (no CLI)."""
    parts = _annotated_parts(annotation)
    if parts is None:
        return None  # no Arg/help metadata: the field is skipped
    raw_type, metas = parts
    meta = _arg_meta(metas)
    if meta is None:
        return None
    no_cli = meta.get("no_cli")
    if isinstance(no_cli, ast.Constant) and no_cli.value is True:
        return None
    cli_name_node = meta.get("cli_name")
    cli_name = (
        cli_name_node.value
        if isinstance(cli_name_node, ast.Constant) and isinstance(cli_name_node.value, str)
        else "--" + name.replace("_", "-")
    )
    aliases = meta.get("aliases")
    alias_list = _const_list(modules, module, aliases) if aliases is not None else []
    if alias_list is None:
        raise LookupError(f"{module}.{name}: aliases are not a literal list")
    options = (cli_name, *alias_list)
    choices = _const_list(modules, module, meta.get("choices"))
    nargs_node = meta.get("nargs")
    nargs = nargs_node.value if isinstance(nargs_node, ast.Constant) else None
    if "action" in meta:
        kwargs = meta.get("action_kwargs")
        if isinstance(kwargs, ast.Dict):
            for key, value in zip(kwargs.keys, kwargs.values, strict=True):
                if isinstance(key, ast.Constant) and key.value == "nargs":
                    nargs_node = value
        return _action_flag(modules, module, options, meta["action"], nargs_node, choices)
    members = [m for m in _union_members(raw_type) if _type_name(m) != "None"]
    inner = members[0] if len(members) == 1 else raw_type
    if _type_name(inner) == "Literal" and isinstance(inner, ast.Subscript):
        elts = inner.slice.elts if isinstance(inner.slice, ast.Tuple) else [inner.slice]
        literal = [str(e.value) for e in elts if isinstance(e, ast.Constant)]
        return _valued(options, None, choices if choices is not None else literal)
    if _type_name(inner) in ("list", "List") and "type_parser" not in meta:
        return _valued(options, nargs or "+", choices)
    if _type_name(inner) == "bool" and len(members) == 1:
        return Flag(options, takes_value=False)
    return _valued(options, nargs, choices)


def _namespace_classes(modules: _Modules) -> list[tuple[str, ast.ClassDef]]:
    tree = modules.tree(_SERVER_ARGS_MODULE)
    if tree is None:
        raise LookupError(f"{_SERVER_ARGS_MODULE} not in {modules.root}")
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "_INPUT_NAMESPACES" for t in node.targets)
            and isinstance(node.value, ast.List)
        ):
            classes = []
            for element in node.value.elts:
                found = modules.resolve(_SERVER_ARGS_MODULE, _type_name(element))
                if found is None or not isinstance(found[1], ast.ClassDef):
                    raise LookupError(f"cannot resolve namespace {_type_name(element)}")
                classes.append((found[0], found[1]))
            return classes
    raise LookupError(f"_INPUT_NAMESPACES not found in {_SERVER_ARGS_MODULE}")


def sglang_serve_flags(root: Path) -> FlagSet:
    """Flags of `python -m sglang.launch_server` / `sglang serve` in the source tree `root`."""
    modules = _Modules(root)
    flag_set = FlagSet(name=f"sglang {SGLANG.version}")
    for module, cls in _namespace_classes(modules):
        for node in cls.body:
            if (
                isinstance(node, ast.AnnAssign)
                and isinstance(node.target, ast.Name)
                and not node.target.id.startswith("_")
            ):
                flag = _field_flag(modules, module, node.target.id, node.annotation)
                if flag is not None:
                    flag_set.add(flag)
    # The hand-registered flags: dynamic choices, deprecated spellings, --config.
    manual = FlagSet(name=flag_set.name)
    _ParserReader(modules, manual).read_class_method(
        _SERVER_ARGS_MODULE, "ServerArgs", "add_cli_args"
    )
    found = modules.resolve(_SERVER_ARGS_MODULE, "ServerArgs")
    assert found is not None and isinstance(found[1], ast.ClassDef)
    for node in ast.walk(found[1]):
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "add_argument"
        ):
            continue
        options = tuple(o for o in _const_strings(node.args) if o.startswith("-"))
        keywords = {kw.arg: kw.value for kw in node.keywords if kw.arg is not None}
        if "action" in keywords:
            choices = _const_list(modules, _SERVER_ARGS_MODULE, keywords.get("choices"))
            manual.add(
                _action_flag(
                    modules,
                    _SERVER_ARGS_MODULE,
                    options,
                    keywords["action"],
                    keywords.get("nargs"),
                    choices,
                )
            )
    for option, flag in manual.flags.items():
        flag_set.flags.setdefault(option, flag)
    if "--model-path" not in flag_set:
        raise LookupError(f"no --model-path found under {root}: parser layout changed")
    return flag_set


@dataclass(frozen=True)
class SGLangEnvironment:
    """What `sglang/srt/environ.py` declares about the environment, besides the direct reads."""

    names: frozenset[str]
    """`class Envs` attributes, each the variable of its name, and the `deprecated_name=` each
    `Env*WithAlias` field falls back to when its own variable is unset."""
    deprecated: dict[str, str]
    """Old name -> the name it is read as: the `deprecated_name=` fallbacks, and the
    `_DEPRECATED_ENVS` entries with a `replacement` (copied to it at import)."""
    ignored: dict[str, str]
    """`_DEPRECATED_ENVS` entries without a replacement: SGLang warns that the variable is
    deprecated (with the entry's note) and nothing reads it."""
    prefix_aliases: dict[str, str]
    """`_handle_deprecated_envs`' rewrite of a legacy prefix (`SGL_X` -> `SGLANG_X`, every name
    not in `_DEPRECATED_ENVS`, at import, with a warning)."""


def _keywords(call: ast.AST | None) -> dict[str, str]:
    """The string-valued keywords of a call (implicitly concatenated strings included)."""
    if not isinstance(call, ast.Call):
        return {}
    return {
        kw.arg: kw.value.value
        for kw in call.keywords
        if kw.arg is not None
        and isinstance(kw.value, ast.Constant)
        and isinstance(kw.value.value, str)
    }


def sglang_environment(root: Path) -> SGLangEnvironment:
    """Read `sglang/srt/environ.py` (`Envs`, `_DEPRECATED_ENVS`, `_handle_deprecated_envs`)."""
    tree = ast.parse((root / "sglang" / "srt" / "environ.py").read_text(encoding="utf-8"))
    names: set[str] = set()
    deprecated: dict[str, str] = {}
    ignored: dict[str, str] = {}
    aliases: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "Envs":
            for item in node.body:
                target = item.target if isinstance(item, ast.AnnAssign) else None
                if isinstance(item, ast.Assign):
                    target = item.targets[0]
                if isinstance(target, ast.Name) and target.id.isupper():
                    names.add(target.id)
                    if old := _keywords(getattr(item, "value", None)).get("deprecated_name"):
                        names.add(old)
                        deprecated[old] = target.id
        value = node.value if isinstance(node, ast.Assign | ast.AnnAssign) else None
        target = node.target if isinstance(node, ast.AnnAssign) else None
        if isinstance(node, ast.Assign):
            target = node.targets[0]
        if isinstance(target, ast.Name) and target.id == "_DEPRECATED_ENVS":
            if not isinstance(value, ast.Dict):
                raise LookupError("sglang/srt/environ.py: _DEPRECATED_ENVS is not a literal")
            for key, entry in zip(value.keys, value.values, strict=True):
                name = literal(key)
                if name is None:
                    raise LookupError("sglang/srt/environ.py: a _DEPRECATED_ENVS key is computed")
                if (replacement := _replacement(entry)) is not None:
                    deprecated[name] = replacement
                else:
                    ignored[name] = _note(entry)
        if isinstance(node, ast.FunctionDef) and node.name == "_handle_deprecated_envs":
            for call in ast.walk(node):
                if (
                    isinstance(call, ast.Call)
                    and isinstance(call.func, ast.Attribute)
                    and call.func.attr == "replace"
                    and len(call.args) >= 2
                    and (old := literal(call.args[0])) is not None
                    and (new := literal(call.args[1])) is not None
                ):
                    aliases[old] = new
    if not names:
        raise LookupError("sglang/srt/environ.py: class Envs has no variables")
    return SGLangEnvironment(frozenset(names), deprecated, ignored, aliases)


def _replacement(entry: ast.AST) -> str | None:
    """The `replacement` (first argument) of a `_DeprecatedEnv(...)`, None when it has none."""
    if not isinstance(entry, ast.Call):
        raise LookupError("sglang/srt/environ.py: a _DEPRECATED_ENVS value is not a call")
    given = entry.args[:1] + [kw.value for kw in entry.keywords if kw.arg == "replacement"]
    if not given or (isinstance(given[0], ast.Constant) and given[0].value is None):
        return None
    if (text := literal(given[0])) is None:
        raise LookupError("sglang/srt/environ.py: a _DeprecatedEnv replacement is computed")
    return text


def _note(entry: ast.AST) -> str:
    """The `note=` of a `_DeprecatedEnv(...)` (a literal or implicitly joined literals)."""
    for kw in entry.keywords if isinstance(entry, ast.Call) else []:
        if kw.arg == "note":
            text = literal(kw.value)
            if text is None:
                raise LookupError("sglang/srt/environ.py: a _DeprecatedEnv note is computed")
            return text
    return ""


def _flags(cache_dir: Path) -> dict[str, object]:
    flags = sglang_serve_flags(source_root(SGLANG, cache_dir))
    return {
        "engine": "sglang",
        "version": SGLANG.version,
        "command": list(sglang_contract.COMMAND),
        "source": f"PyPI sglang=={SGLANG.version} wheel: sglang/srt/server_args.py "
        "(ServerArgs.add_cli_args) and sglang/srt/arg_groups/fields/*.py",
        "normalise_underscores": False,
        "flags": flag_rows(flags),
    }


def _env(cache_dir: Path) -> dict[str, object]:
    root = source_root(SGLANG, cache_dir)
    environment = sglang_environment(root)
    reads = environment.names | package_reads(root, "sglang") | environment.deprecated.keys()
    # A deprecated name something still reads is read, whatever the registry warns.
    ignored = {n: note for n, note in sorted(environment.ignored.items()) if n not in reads}
    return env_table(
        SGLANG,
        f"PyPI sglang=={SGLANG.version} wheel: sglang/srt/environ.py (class Envs, the "
        "deprecated_name= fallbacks of its Env*WithAlias fields, _DEPRECATED_ENVS, and the "
        "prefix rewrite of _handle_deprecated_envs) and every read in the sglang package",
        reads,
        prefix_aliases=environment.prefix_aliases,
        deprecated=dict(sorted(environment.deprecated.items())),
        ignored=ignored,
    )


TABLES = (
    Table("flags", sglang_contract.FLAG_TABLE, _flags, (SGLANG,)),
    Table("env", sglang_contract.ENVIRONMENT_TABLE, _env, (SGLANG,)),
)
