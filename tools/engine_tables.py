"""Flag tables of SGLang and TGI, extracted from their real argument definitions.

`tools/engine_flags.py` reads vLLM's argparse calls from its wheel at test time. The SGLang and
TGI presets need their engines' flags at *preview* time too (an unknown flag in `extraArgs`
must fail the preview, not the container on a GPU instance that took minutes to start), and a
preview runs without the 40-800 MiB engine sources. So the flags are extracted once into JSON
tables committed under `contracts/flags/`, which `contracts/flag_table.py` reads with the
standard library:

- SGLang: from the pinned PyPI wheel (`sglang==0.5.23`, fetched by `engine_flags.source_root`).
  Its server parser (`sglang.srt.server_args.prepare_server_args`) is a plain
  `argparse.ArgumentParser` filled by `ServerArgs.add_cli_args`: `add_cli_args_from_dataclass`
  registers one flag per `A[T, "help"]` / `A[T, Arg(...)]` field of the namespace structs listed
  in `_INPUT_NAMESPACES`, then a few flags are added by hand. The reader below mirrors
  `sglang/srt/arg_groups/arg_utils.py::add_cli_args_from_dataclass` on the AST (nothing is
  imported: SGLang needs torch and CUDA). A test re-extracts the table from the wheel and
  compares it with the committed one, so a version bump cannot leave a stale table.
- TGI: from `launcher/src/main.rs` of the pinned tag of huggingface/text-generation-inference
  (not on PyPI; read through the search tool's repository mirror). The launcher's `struct Args`
  is a clap derive: each field is `--kebab-name` (`long`), optionally `-x` (`short`), and also
  read from the upper-case environment variable (`env`); `bool` fields are switches,
  `Option<bool>` takes `true|false`, and `ValueEnum` types restrict the values to the
  variants' kebab-case names (or their `#[clap(name = ...)]`).

Command line:
`python -m tools.engine_tables sglang` rewrites `contracts/flags/sglang-<version>.json`;
`python -m tools.engine_tables tgi MAIN_RS --tag vX --commit SHA` rewrites the TGI table from a
checked-out `launcher/src/main.rs`.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TypedDict

from ecs_inference.contracts import sglang as sglang_contract
from tools.engine_flags import (
    CACHE_DIR,
    OPTIMUM_NEURON,
    VLLM_GPU,
    VLLM_NEURON,
    Flag,
    FlagSet,
    _const_strings,
    _Modules,
    _ParserReader,
    _type_name,
    _union_members,
    contract_release,
    optimum_neuron_serve_flags,
    source_root,
    vllm_serve_flags,
)

REPO_ROOT = Path(__file__).resolve().parent.parent
SGLANG = contract_release(sglang_contract)
"""The SGLang release the tables are read from (`contracts/sglang.py` names it)."""
TABLE_DIR = REPO_ROOT / "contracts" / "flags"
"""Where the committed flag tables live."""

_SERVER_ARGS_MODULE = "sglang.srt.server_args"


# --------------------------------------------------------------------------------------------
# SGLang: dataclass-derived argparse flags
# --------------------------------------------------------------------------------------------


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


# --------------------------------------------------------------------------------------------
# TGI: clap derive in launcher/src/main.rs
# --------------------------------------------------------------------------------------------

_ATTR = re.compile(r"^\s*#\[(?:clap|arg|value)\((?P<body>.*)\)\]\s*$")
_FIELD = re.compile(r"^\s*(?:pub\s+)?(?P<name>[a-z_][a-z0-9_]*)\s*:\s*(?P<type>.+?),\s*$")


def _kebab(ident: str) -> str:
    """clap's default ValueEnum/long renaming (heck kebab-case)."""
    ident = ident.replace("_", "-")
    ident = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "-", ident)
    ident = re.sub(r"(?<=[A-Z])(?=[A-Z][a-z])", "-", ident)
    return ident.lower()


def _block(text: str, header: re.Pattern[str]) -> str | None:
    match = header.search(text)
    if match is None:
        return None
    depth, start = 0, text.index("{", match.start())
    for i in range(start, len(text)):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return text[start + 1 : i]
    raise ValueError("unbalanced braces")


def _value_enums(text: str) -> dict[str, list[str]]:
    enums: dict[str, list[str]] = {}
    pattern = re.compile(
        r"#\[derive\([^)]*\bValueEnum\b[^)]*\)\]\s*(?:#\[[^\]]*\]\s*)*(?:pub\s+)?enum\s+(\w+)"
    )
    for match in pattern.finditer(text):
        body = _block(text[match.start() :], re.compile(r"enum\s+\w+")) or ""
        values: list[str] = []
        rename: str | None = None
        for line in body.splitlines():
            line = line.split("//", 1)[0].strip()
            if not line:
                continue
            attr = re.match(r'#\[(?:clap|value)\(.*\bname\s*=\s*"([^"]+)"', line)
            if attr:
                rename = attr.group(1)
                continue
            variant = re.match(r"([A-Z]\w*)\s*,?$", line)
            if variant:
                values.append(rename or _kebab(variant.group(1)))
                rename = None
        enums[match.group(1)] = values
    return enums


def _clap_options(attrs: list[str], name: str) -> tuple[tuple[str, ...], str | None, bool]:
    """(option strings, environment variable, explicit `action`) from a field's clap attrs."""
    options: list[str] = []
    env: str | None = None
    action = False
    for body in attrs:
        for item in re.split(r",(?![^(]*\))", body):
            item = item.strip()
            key, _, value = item.partition("=")
            key, value = key.strip(), value.strip().strip('"').strip("'")
            if key == "long":
                options.insert(0, "--" + (value or name.replace("_", "-")))
            elif key == "short":
                options.append("-" + (value or name[0]))
            elif key == "env":
                env = value or name.upper()
            elif key == "action":
                action = True
    return tuple(options), env, action


class LauncherFlag(TypedDict):
    """One row of the TGI table: a `struct Args` field as clap exposes it."""

    options: list[str]
    takes_value: bool
    choices: list[str] | None
    env: str | None
    rust_type: str


def tgi_launcher_flags(main_rs: str) -> list[LauncherFlag]:
    """Rows of the TGI launcher flag table from the text of `launcher/src/main.rs`."""
    body = _block(main_rs, re.compile(r"\bstruct\s+Args\b"))
    if body is None:
        raise LookupError("struct Args not found: not the TGI launcher source")
    enums = _value_enums(main_rs)
    rows: list[LauncherFlag] = []
    attrs: list[str] = []
    for line in body.splitlines():
        if line.strip().startswith("//"):
            continue
        attr = _ATTR.match(line)
        if attr:
            attrs.append(attr.group("body"))
            continue
        field = _FIELD.match(line)
        if not field:
            continue
        name, rust_type = field.group("name"), field.group("type").replace(" ", "")
        options, env, _ = _clap_options(attrs, name)
        attrs = []
        if not options:
            continue  # positional or env-only (none in the pinned launcher)
        inner = rust_type
        for wrapper in ("Option<", "Vec<"):
            if inner.startswith(wrapper):
                inner = inner[len(wrapper) : -1]
        takes_value = rust_type != "bool"
        choices: list[str] | None = None
        if inner == "bool" and takes_value:
            choices = ["true", "false"]
        elif inner in enums:
            choices = enums[inner]
        rows.append(
            {
                "options": list(options),
                "takes_value": takes_value,
                "choices": choices,
                "env": env,
                "rust_type": rust_type,
            }
        )
    if not any("--model-id" in row["options"] for row in rows):
        raise LookupError("no --model-id in struct Args: launcher layout changed")
    return rows


# --------------------------------------------------------------------------------------------
# Tables
# --------------------------------------------------------------------------------------------


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


def sglang_table(cache_dir: Path = CACHE_DIR) -> dict[str, object]:
    """The SGLang flag table as committed (extracted from the pinned wheel)."""
    flags = sglang_serve_flags(source_root(SGLANG, cache_dir))
    return {
        "engine": "sglang",
        "version": SGLANG.version,
        "command": ["python3", "-m", "sglang.launch_server"],
        "source": f"PyPI sglang=={SGLANG.version} wheel: sglang/srt/server_args.py "
        "(ServerArgs.add_cli_args) and sglang/srt/arg_groups/fields/*.py",
        "normalise_underscores": False,
        "flags": flag_rows(flags),
    }


def vllm_table(cache_dir: Path = CACHE_DIR) -> dict[str, object]:
    """`vllm serve` of the GPU image (vLLM 0.33.0), extracted from its wheel."""
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


def neuron_table(cache_dir: Path = CACHE_DIR) -> dict[str, object]:
    """`optimum-cli neuron serve` (optimum-neuron 0.4.5): its own flags, then the vLLM 0.11.0
    server flags it forwards every unknown flag to."""
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


def write_table(table: dict[str, object], name: str) -> Path:
    """Write `table` as `contracts/flags/<name>.json` (stable formatting for reviews)."""
    TABLE_DIR.mkdir(parents=True, exist_ok=True)
    path = TABLE_DIR / f"{name}.json"
    path.write_text(json.dumps(table, indent=1, sort_keys=False) + "\n", encoding="utf-8")
    return path


def main(argv: Sequence[str] | None = None) -> int:
    """CLI: regenerate a committed table (see the module docstring)."""
    parser = argparse.ArgumentParser(description="Regenerate an engine flag table.")
    sub = parser.add_subparsers(dest="engine", required=True)
    sub.add_parser("sglang", help="extract from the pinned sglang wheel")
    sub.add_parser("vllm", help="extract from the pinned vllm wheel (GPU image)")
    sub.add_parser("neuron", help="extract from the pinned optimum-neuron and vllm wheels")
    tgi = sub.add_parser("tgi", help="extract from a TGI launcher/src/main.rs")
    tgi.add_argument("main_rs", type=Path)
    tgi.add_argument("--tag", required=True)
    tgi.add_argument("--commit", required=True)
    ns = parser.parse_args(argv)
    if ns.engine == "sglang":
        print(write_table(sglang_table(), f"sglang-{SGLANG.version}"))
        return 0
    if ns.engine == "vllm":
        print(write_table(vllm_table(), f"vllm-{VLLM_GPU.version}"))
        return 0
    if ns.engine == "neuron":
        print(write_table(neuron_table(), f"optimum-neuron-{OPTIMUM_NEURON.version}"))
        return 0
    version = ns.tag.removeprefix("v")
    table = {
        "engine": "text-generation-inference",
        "version": version,
        "command": ["text-generation-launcher"],
        "source": f"github.com/huggingface/text-generation-inference tag {ns.tag} "
        f"(commit {ns.commit}): launcher/src/main.rs struct Args (clap derive)",
        "normalise_underscores": False,
        "flags": [
            {**row, "optional_value": False, "many": False, "negatable": False}
            for row in tgi_launcher_flags(ns.main_rs.read_text(encoding="utf-8"))
        ],
    }
    print(write_table(table, f"tgi-{version}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
