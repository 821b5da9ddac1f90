"""A stack file (`Pulumi.<stack>.yaml`) read as the Pulumi CLI reads it, keeping what error
messages need: the line of every config path, the values set with `pulumi config set --secret`
(`{secure: v1:...}`), the ESC environments it imports, and duplicate keys.

The CLI parses stack files with Go's yaml.v3, which refuses a mapping key given twice; PyYAML
keeps the last copy without a word, so a duplicated `models.llama` could hide a typo in the
other. Here each duplicate is a `ConfigIssue` naming both lines, and reading goes on (the last
copy wins, as PyYAML's) so that the same run reports every other problem too.

Config paths are those of `ConfigIssue`: the structured key `ecs-inference:platform` is
`platform` (`platform.models.llama.maxModelLen`, list items as `[i]`); any other key keeps its
name (`aws:region`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ecs_inference.config.base import ROOT
from ecs_inference.config.issues import ConfigIssue

PLATFORM_KEY = "ecs-inference:platform"
"""The stack setting whose config path is `platform` (`ROOT`)."""

STACK_FILE_ENV = "ECS_INFERENCE_STACK_FILE"
"""Environment variable naming the stack file the program reads for line numbers and secret
paths (default: `Pulumi.<stack>.yaml` in the working directory, where the CLI runs the
program); set it when the stack's config lives in another file (`pulumi up --config-file`)."""


class StackFileError(Exception):
    """The stack file cannot be read at all (missing, not YAML, not a mapping)."""


@dataclass(frozen=True)
class Secure:
    """A value set with `pulumi config set --secret`: its ciphertext, as the file holds it."""

    ciphertext: str


@dataclass(frozen=True)
class Shadowed:
    """The earlier copy of a duplicate key, which the later copy hides."""

    path: str
    """Its config path (the same as the copy read)."""
    value: Any
    line: int
    """The line of its key."""
    lines: Mapping[str, int] = field(default_factory=dict)
    """The lines of the paths inside it."""

    def where(self, name: str, path: str) -> str:
        line = next((self.lines[p] for p in ancestors(path) if p in self.lines), self.line)
        return f"{name}:{line}"


@dataclass(frozen=True)
class StackFile:
    """What a stack file holds, with the line of each config path."""

    name: str
    """The file's name as messages show it (`Pulumi.dev.yaml`)."""
    data: dict[str, Any]
    """The whole document; `Secure` where the file has `{secure: ...}`."""
    lines: Mapping[str, int] = field(default_factory=dict)
    """Config path -> line (1-based) of its key."""
    secure: frozenset[str] = frozenset()
    """Config paths of the values set with `--secret`."""
    environments: tuple[str, ...] = ()
    """ESC environments the file imports (`environment:`), in order."""
    environment_line: int | None = None
    """The line of `environment:`."""
    issues: tuple[ConfigIssue, ...] = ()
    """Duplicate keys."""
    shadowed: tuple[Shadowed, ...] = ()
    """The copies of duplicate keys that the last copy hides (checked too, so that a typo in
    one is not hidden by the other)."""

    @property
    def config(self) -> dict[str, Any]:
        """The `config:` block (empty when there is none)."""
        value = self.data.get("config")
        return value if isinstance(value, dict) else {}

    def line_of(self, path: str) -> int | None:
        """The line of `path`, else of its nearest ancestor the file has; None if neither."""
        for candidate in ancestors(path):
            if candidate in self.lines:
                return self.lines[candidate]
        return None

    def where(self, path: str) -> str:
        """`Pulumi.dev.yaml:42` for `path` (its nearest ancestor's line), else the file name."""
        line = self.line_of(path)
        return f"{self.name}:{line}" if line is not None else self.name

    def locate(self, issue: ConfigIssue) -> ConfigIssue:
        """`issue` with its place in this file (an issue that has one keeps it)."""
        if issue.where:
            return issue
        return ConfigIssue(issue.path, issue.message, self.where(issue.path))

    def value_at(self, path: str) -> Any:
        """The file's value at config path `path` (a `Secure` where it is encrypted), or
        `MISSING`."""
        key, parts = _split(path)
        node: Any = self.config
        for part in (key, *parts):
            if isinstance(part, int):
                if not isinstance(node, list) or part >= len(node):
                    return MISSING
                node = node[part]
            elif isinstance(node, dict) and part in node:
                node = node[part]
            else:
                return MISSING
        return node


MISSING = object()
"""`StackFile.value_at` of a path the file does not set."""

_PART = re.compile(r"\.([^.\[]+)|\[(\d+)\]")


def _split(path: str) -> tuple[str, list[str | int]]:
    """`platform.models.llama.args[0]` -> (`ecs-inference:platform`, ['models', 'llama',
    'args', 0])."""
    head, sep, rest = path.partition(".")
    head, bracket, tail = head.partition("[")
    rest = (f"[{tail}" if bracket else "") + (f".{rest}" if sep else "")
    key = PLATFORM_KEY if head == ROOT else head
    parts: list[str | int] = [int(index) if index else name for name, index in _PART.findall(rest)]
    return key, parts


def ancestors(path: str) -> Iterator[str]:
    """`path`, then each shorter path it lies under (`a.b[0].c`, `a.b[0]`, `a.b`, `a`)."""
    while path:
        yield path
        cut = max(path.rfind("."), path.rfind("["))
        if cut <= 0:
            return
        path = path[:cut]


def config_path(key: str) -> str:
    """The config path of a top-level config key."""
    return ROOT if key == PLATFORM_KEY else key


class _Reader:
    """Builds values from PyYAML's node graph, recording paths, lines, secrets, duplicates."""

    def __init__(self, name: str, loader: yaml.SafeLoader) -> None:
        self.name = name
        self.loader = loader
        self.lines: dict[str, int] = {}
        self.secure: set[str] = set()
        self.issues: list[ConfigIssue] = []
        self.shadowed: list[Shadowed] = []

    def value(self, node: yaml.Node, path: str | None) -> Any:
        """The node's value; `path` None outside the `config:` block (nothing recorded)."""
        if isinstance(node, yaml.MappingNode):
            secure = _secure_leaf(node)
            if secure is not None:
                if path is not None:
                    self.secure.add(path)
                return Secure(secure)
            return self.mapping(node, path)
        if isinstance(node, yaml.SequenceNode):
            items = []
            for i, item in enumerate(node.value):
                child = None if path is None else f"{path}[{i}]"
                if child is not None:
                    self.lines[child] = item.start_mark.line + 1
                items.append(self.value(item, child))
            return items
        return self.loader.construct_object(node, deep=True)

    def mapping(self, node: yaml.MappingNode, path: str | None) -> dict[str, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.loader.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            if key in seen:
                self.duplicate(key, seen[key], line, path)
            seen.setdefault(key, line)
        self.loader.flatten_mapping(node)  # `<<` merge keys, as the SafeLoader applies them
        out: dict[str, Any] = {}
        for key_node, value_node in node.value:
            key = self.loader.construct_object(key_node, deep=True)
            child = None if path is None else self._child(path, key)
            if child is not None:
                if key in out:
                    self.shadow(child, out[key])  # the later copy is the one read
                self.lines[child] = key_node.start_mark.line + 1
            out[key] = self.value(value_node, child)
        return out

    def shadow(self, path: str, value: Any) -> None:
        """Set aside what was recorded under `path`: an earlier copy of a duplicate key, which
        the later one replaces."""
        below = (f"{path}.", f"{path}[")
        inside = {p: line for p, line in self.lines.items() if p == path or p.startswith(below)}
        for known in inside:
            del self.lines[known]
        self.secure -= {p for p in self.secure if p == path or p.startswith(below)}
        self.shadowed.append(Shadowed(path, value, inside.get(path, 0), inside))

    def duplicate(self, key: Any, first: int, again: int, path: str | None) -> None:
        """A key given twice in one mapping (`path` its mapping's config path; None outside
        the `config:` block, where the issue names the key)."""
        self.issues.append(
            ConfigIssue(
                str(key) if path is None else self._child(path, key),
                f"duplicate key {key!r}: set at line {first} and again at line {again}; YAML "
                "readers disagree on which copy counts (the Pulumi CLI refuses the file), so "
                "keep one and merge the other into it",
                f"{self.name}:{again}",
            )
        )

    @staticmethod
    def _child(path: str, key: Any) -> str:
        return config_path(str(key)) if path == "" else f"{path}.{key}"


def _secure_leaf(node: yaml.MappingNode) -> str | None:
    """The ciphertext of a `{secure: <string>}` mapping, else None."""
    if len(node.value) != 1:
        return None
    key, value = node.value[0]
    secure = isinstance(key, yaml.ScalarNode) and key.value == "secure"
    return str(value.value) if secure and isinstance(value, yaml.ScalarNode) else None


def parse_stack_file(text: str, name: str) -> StackFile:
    """Parse a stack file's text (`name` is how messages call it); raise `StackFileError` when
    it is not YAML or not a mapping."""
    loader = yaml.SafeLoader(text)
    try:
        root = loader.get_single_node()
        if root is None:
            return StackFile(name, {})
        if not isinstance(root, yaml.MappingNode):
            raise StackFileError(f"{name}: must be a mapping with a `config:` key")
        reader = _Reader(name, loader)
        data: dict[str, Any] = {}
        environments: tuple[str, ...] = ()
        environment_line = None
        seen: dict[Any, int] = {}
        for key_node, value_node in root.value:
            key = loader.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            if key in seen:
                reader.duplicate(key, seen[key], line, None)
            seen.setdefault(key, line)
            if key == "config" and isinstance(value_node, yaml.MappingNode):
                data[key] = reader.mapping(value_node, "")
                continue
            data[key] = reader.value(value_node, None)
            if key == "environment":
                environment_line = line
                environments = _environment_names(data[key])
    except yaml.MarkedYAMLError as exc:
        raise StackFileError(_yaml_error(name, exc)) from None
    except yaml.YAMLError as exc:
        raise StackFileError(f"{name}: not valid YAML: {exc}") from None
    finally:
        loader.dispose()
    return StackFile(
        name,
        data,
        reader.lines,
        frozenset(reader.secure),
        environments,
        environment_line,
        tuple(reader.issues),
        tuple(reader.shadowed),
    )


def _environment_names(value: Any) -> tuple[str, ...]:
    """ESC environments of `environment:` (a list of names, or `imports:` of a mapping)."""
    if isinstance(value, dict):
        value = value.get("imports", [])
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list):
        return tuple(str(v) if not isinstance(v, dict) else ",".join(map(str, v)) for v in value)
    return ()


def _yaml_error(name: str, exc: yaml.MarkedYAMLError) -> str:
    """`Pulumi.dev.yaml:12:5: not valid YAML: <problem> (<context> at line 10)`, without the
    `"<unicode string>"` PyYAML names for text it was handed."""
    mark = exc.problem_mark or exc.context_mark
    where = f"{name}:{mark.line + 1}:{mark.column + 1}" if mark is not None else name
    problem = exc.problem or "not valid YAML"
    context = ""
    if exc.context:
        at = f" at line {exc.context_mark.line + 1}" if exc.context_mark is not None else ""
        context = f" ({exc.context}{at})"
    return f"{where}: not valid YAML: {problem}{context}"


def read_stack_file(path: Path) -> StackFile:
    """Read and parse `path` (its name is what messages show)."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise StackFileError(f"{path.name}: cannot be read: {exc.strerror or exc}") from None
    return parse_stack_file(text, path.name)


def program_stack_file(stack: str, directory: Path | None = None) -> StackFile | None:
    """The stack file the running program reads for line numbers and secret paths: the one
    `STACK_FILE_ENV` names, else `Pulumi.<stack>.yaml` in `directory` (default the working
    directory); None when there is none or it cannot be parsed (the CLI, which parsed it,
    has then said why)."""
    named = os.environ.get(STACK_FILE_ENV)
    path = Path(named) if named else (directory or Path.cwd()) / f"Pulumi.{stack}.yaml"
    if not path.is_file():
        return None
    try:
        return read_stack_file(path)
    except StackFileError:
        return None
