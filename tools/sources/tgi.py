"""TGI: the launcher's flag table, read from `launcher/src/main.rs` at the pinned tag.

TGI is not on PyPI, so its table is rebuilt from a checkout of
github.com/huggingface/text-generation-inference at the tag and commit `contracts/tgi.py` names
(`python -m tools.sources tgi-<version> --checkout DIR`). The launcher's `struct Args` is a clap
derive: each field is `--kebab-name` (`long`), optionally `-x` (`short`), and also read from the
upper-case environment variable (`env`); `bool` fields are switches, `Option<bool>` takes
`true|false`, and `ValueEnum` types restrict the values to the variants' kebab-case names (or
their `#[clap(name = ...)]`).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TypedDict

from ecs_inference.contracts import tgi as tgi_contract
from tools.sources.common import Table

REPOSITORY = "github.com/huggingface/text-generation-inference"
MAIN_RS = Path("launcher") / "src" / "main.rs"
"""The launcher source within a checkout."""


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


def _flags(checkout: Path) -> dict[str, object]:
    tag = f"v{tgi_contract.TGI_VERSION}"
    return {
        "engine": "text-generation-inference",
        "version": tgi_contract.TGI_VERSION,
        "command": list(tgi_contract.COMMAND),
        "source": f"{REPOSITORY} tag {tag} (commit {tgi_contract.TGI_TAG_COMMIT}): "
        "launcher/src/main.rs struct Args (clap derive)",
        "normalise_underscores": False,
        "flags": [
            {**row, "optional_value": False, "many": False, "negatable": False}
            for row in tgi_launcher_flags((checkout / MAIN_RS).read_text(encoding="utf-8"))
        ],
    }


TABLES = (
    Table(
        "flags",
        tgi_contract.FLAG_TABLE,
        _flags,
        checkout=f"{REPOSITORY} tag v{tgi_contract.TGI_VERSION} "
        f"(commit {tgi_contract.TGI_TAG_COMMIT})",
    ),
)
