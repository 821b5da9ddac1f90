"""The offline preview's config: a stack's settings as the Pulumi CLI would hand them to the
program, without the CLI, a passphrase or Pulumi Cloud.

The CLI merges, lowest first: the project's `config:` defaults (Pulumi.yaml), the values of the
ESC environments the stack file imports (`environment:`), the stack file's own `config:`
block, then `--config` flags. Offline there is no ESC: `--config-file` stands in for the
environments (a YAML file with a `config:` block, as their `pulumiConfig` would set it) and
`--config 'ns:key.path=value'` for single values. Values set with `pulumi config set --secret`
cannot be decrypted here: each is previewed with a placeholder of its kind
(`ecs_inference.secrets.input`), and the program still learns from the stack file which values
were encrypted. Values passed with `--config` or `--config-file` count as secret, as an ESC
environment's secrets would.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ecs_inference.config.load import check_stack_config
from ecs_inference.config.stack_file import (
    PLATFORM_KEY,
    Secure,
    StackFile,
    StackFileError,
    read_stack_file,
)
from ecs_inference.secrets import input as secrets


@dataclass
class PreviewConfig:
    """What the program runs with, and what the preview says about where it came from."""

    values: dict[str, str]
    """Config as the engine hands it to the language host (`ns:key` -> string or JSON)."""
    config: dict[str, Any]
    """The same, as values (what the preview's own settings, `preview:*`, are read from)."""
    secret_keys: list[str]
    """Keys the CLI would mark secret: those holding a `--secret` value, and those passed."""
    stack_file: Path | None = None
    """The stack file read (None: none exists, the project's defaults alone)."""
    source: StackFile | None = None
    notes: list[str] = field(default_factory=list)
    """What the preview could not resolve offline and what stands in for it."""


def project_name(program_dir: Path) -> str:
    data = yaml.safe_load((program_dir / "Pulumi.yaml").read_text())
    return data["name"]


def project_config_defaults(program_dir: Path) -> dict[str, Any]:
    """The `config:` defaults of Pulumi.yaml (`key: {default: v}`, `key: {value: v}` or
    `key: v`), keys namespaced by the project as the CLI does for unqualified ones."""
    data = yaml.safe_load((program_dir / "Pulumi.yaml").read_text()) or {}
    project = data.get("name", "")
    out: dict[str, Any] = {}
    for key, spec in (data.get("config") or {}).items():
        value = spec.get("default", spec.get("value")) if isinstance(spec, dict) else spec
        if value is not None:
            out[key if ":" in key else f"{project}:{key}"] = value
    return out


def stack_file_path(program_dir: Path, stack: str, path: Path | None = None) -> Path | None:
    """The stack file to read: `path`, else `Pulumi.<stack>.yaml`; None when the program has
    no stack file at all (a fresh checkout previews with the project's defaults). Raises
    `StackFileError` for a missing file otherwise."""
    explicit = path is not None
    path = path or program_dir / f"Pulumi.{stack}.yaml"
    if path.is_file():
        return path
    known = sorted(
        p.name[len("Pulumi.") : -len(".yaml")] for p in program_dir.glob("Pulumi.*.yaml")
    )
    if not known and not explicit:
        return None
    raise StackFileError(f"{path.name}: no such stack file (stacks here: {', '.join(known)})")


def offline(config: Mapping[str, Any]) -> dict[str, Any]:
    """A `config:` block with every `--secret` value as the offline preview runs it: the
    platform's as placeholders of their kind, any other key's in its `{secure: ...}` form."""
    return {
        key: secrets.offline_values(value) if key == PLATFORM_KEY else secrets.without_secure(value)
        for key, value in config.items()
    }


def _has_secure(value: Any) -> bool:
    if isinstance(value, Secure):
        return True
    if isinstance(value, dict):
        return any(_has_secure(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_secure(v) for v in value)
    return False


def merged(base: Any, over: Any) -> Any:
    """`over` on top of `base`, objects merged key by key (as the CLI merges an environment's
    config objects under the stack's)."""
    if isinstance(base, dict) and isinstance(over, dict):
        out = dict(base)
        for key, value in over.items():
            out[key] = merged(base.get(key), value) if key in base else value
        return out
    return over


_OVERRIDE = re.compile(
    r"^(?P<key>[^.\[=]+:[^.\[=]+)(?P<path>(?:\.[^.\[=]+|\[\d+\])*)=(?P<value>.*)$", re.S
)


def apply_override(config: dict[str, Any], text: str) -> str:
    """Set `ns:key[.a.b[0]]=value` in `config` (the value read as YAML, as the stack file would
    hold it); returns the top-level key. Raises ValueError naming the accepted form."""
    match = _OVERRIDE.match(text)
    if match is None:
        raise ValueError(
            f"{text!r}: expected <namespace>:<key>[.<path>]=<value>, for example "
            "'ecs-inference:platform.gateway.masterKey=sk-...'"
        )
    key, path, raw = match["key"], match["path"], match["value"]
    value = yaml.safe_load(raw) if raw.strip() else raw
    keys: list[str | int] = [key]
    keys += [int(i) if i else name for name, i in re.findall(r"\.([^.\[]+)|\[(\d+)\]", path)]
    node: Any = config
    for part, following in itertools.pairwise(keys):
        empty: Any = [] if isinstance(following, int) else {}
        if isinstance(part, int):
            node.extend([None] * (part + 1 - len(node)))
        if not isinstance(node[part] if isinstance(part, int) else node.get(part), (dict, list)):
            node[part] = empty
        node = node[part]
    if isinstance(keys[-1], int):
        node.extend([None] * (keys[-1] + 1 - len(node)))
    node[keys[-1]] = value
    return key


def preview_config(
    program_dir: Path,
    stack: str,
    *,
    stack_file: Path | None = None,
    overrides: Sequence[str] = (),
    config_file: Path | None = None,
) -> PreviewConfig:
    """The stack's config, merged as the CLI merges it. Raises `StackFileError` (the file is
    missing or not YAML) or ValueError (a malformed `--config`)."""
    path = stack_file_path(program_dir, stack, stack_file)
    source = read_stack_file(path) if path is not None else None
    own = source.config if source is not None else {}
    passed: set[str] = set()
    environment: dict[str, Any] = {}
    if config_file is not None:
        environment = offline(read_stack_file(config_file).config)
        passed |= set(environment)
    config = merged({**project_config_defaults(program_dir), **environment}, offline(own))
    for text in overrides:
        passed.add(apply_override(config, text))
    secret_keys = sorted({k for k, v in own.items() if _has_secure(v)} | passed)
    result = PreviewConfig(
        {k: v if isinstance(v, str) else json.dumps(v) for k, v in config.items()},
        config,
        secret_keys,
        path,
        source,
    )
    result.notes = _notes(source, config, config_file, overrides, stack)
    return result


def _notes(
    source: StackFile | None,
    config: Mapping[str, Any],
    config_file: Path | None,
    overrides: Iterable[str],
    stack: str,
) -> list[str]:
    """What the offline preview could not resolve: encrypted values, ESC environments."""
    if source is None:
        return []
    notes: list[str] = []
    encrypted = sorted(p for p in source.secure if secrets.slot(p) is not None)
    if encrypted:
        notes.append(
            f"{len(encrypted)} value(s) set with `pulumi config set --secret` are previewed "
            "with placeholders of their kind (offline there is no passphrase or Pulumi Cloud "
            f"to decrypt them): {', '.join(encrypted)}"
        )
    if source.environments:
        notes.append(_environment_note(source, config, config_file, list(overrides), stack))
    return notes


def _environment_note(
    source: StackFile,
    config: Mapping[str, Any],
    config_file: Path | None,
    overrides: list[str],
    stack: str,
) -> str:
    names = ", ".join(source.environments)
    where = f"{source.name}:{source.environment_line}" if source.environment_line else source.name
    given = [
        f"--config-file {config_file}" if config_file is not None else "",
        f"{len(overrides)} --config value(s)" if overrides else "",
    ]
    standing_in = " and ".join(g for g in given if g)
    checked = check_stack_config(config.get(PLATFORM_KEY), stack)
    missing = [
        f"{i.path} ({i.message.split(':')[0].split(';')[0]})"
        for i in checked.issues
        if "required but missing" in i.message
    ]
    if config.get(PLATFORM_KEY) is None:
        missing = [PLATFORM_KEY]
    unresolved = (
        f"values this stack lacks and they may set: {', '.join(missing)}"
        if missing
        else "no required value is missing, so any value they would set or override is "
        "previewed as the stack file has it"
    )
    how = (
        f"standing in for them: {standing_in}"
        if standing_in
        else "pass their values with `--config 'ecs-inference:platform.<path>=<value>'` "
        "(repeatable) or with `--config-file <file>` (a YAML file with a `config:` block, as "
        "the environment's `pulumiConfig` sets it); values passed so count as secret"
    )
    return (
        f"{where}: imports ESC environment(s) {names}, which the offline preview cannot open "
        f"(they live in Pulumi Cloud); {unresolved}; {how}"
    )
