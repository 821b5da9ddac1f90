"""Loading `ecs-inference:platform`: the raw stack setting validated into a `StackConfig`, every
pydantic error turned into a `ConfigIssue` whose path is the config path the user edits
(`platform.models.llama.maxModelLen`) and, with the stack file, its file and line, all of them
raised as one `ConfigError` before any resource is registered. Checks that need the instance
catalog or the sizing method (does the model fit its pool?) run in the plan, also before any
resource.

Every layer reports in the same run (`plan_stack`): the stack file's own problems (duplicate
keys, a secret where none belongs, a credential in plain text), the schema's, then the plan's on
what is left once the invalid parts are set aside. Setting aside is how a compiler recovers
from an error: an invalid value goes back to its default, an entry missing a required key is
dropped, and an unknown key that is a near-miss of a known one (`maxModelLenght`) is read as
that key so its value is still checked. A later layer's issue that a set-aside part could have
caused is not reported (its advice would be about a value the user did not write); the error
names what was not checked further instead.
"""

from __future__ import annotations

import copy
import difflib
import re
import typing
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from pydantic.alias_generators import to_camel

from ecs_inference.config.base import ROOT, Section
from ecs_inference.config.issues import ConfigError, ConfigIssue, Issues
from ecs_inference.config.stack import StackConfig, check_references
from ecs_inference.config.stack_file import StackFile
from ecs_inference.pools.input import managed_instance_option_issues
from ecs_inference.secrets import input as secrets
from ecs_inference.services.fargate_keys import fargate_key_issues

P = TypeVar("P")


def _path(loc: tuple[Any, ...]) -> str:
    parts = [ROOT]
    for item in loc:
        if isinstance(item, int):
            parts[-1] += f"[{item}]"
        elif item in ("[key]",):
            continue
        else:
            parts.append(str(item))
    return ".".join(parts)


def _allowed_keys(loc: tuple[Any, ...]) -> list[str]:
    """Keys valid at the parent of `loc`, by walking the schema (for 'unknown key' hints)."""
    model: Any = StackConfig
    keyed = False  # the last step was a map: this item is one of its keys
    for item in loc[:-1]:
        if keyed:
            keyed = False
            continue
        if not (isinstance(model, type) and issubclass(model, Section)):
            return []
        field = next((f for n, f in model.model_fields.items() if item in (n, f.alias)), None)
        model = field.annotation if field is not None else model.registered_keys().get(str(item))
        keyed = typing.get_origin(model) is dict
        # unwrap dict[Name, X] / X | None to X
        args = typing.get_args(model)
        if args:
            model = next(
                (a for a in reversed(args) if isinstance(a, type) and issubclass(a, BaseModel)),
                model,
            )
    if isinstance(model, type) and issubclass(model, BaseModel):
        keys = {f.alias or n for n, f in model.model_fields.items()}
        if issubclass(model, Section):
            keys |= {k for k in model.registered_keys() if k == to_camel(k)}
        return sorted(keys)
    return []


_MSG_WORDS = (
    ("Input should be", "must be"),
    ("greater than or equal to", ">="),
    ("less than or equal to", "<="),
    ("greater than", ">"),
    ("less than", "<"),
)


def near_miss(key: str, allowed: Iterable[str]) -> str | None:
    """The known key an unknown `key` most likely means (`max_model_len`, `maxModelLenght` ->
    `maxModelLen`), or None when none is close."""
    allowed = list(allowed)
    if to_camel(key) in allowed:
        return to_camel(key)
    folded = {k.lower(): k for k in allowed}
    if key.lower() in folded:
        return folded[key.lower()]
    longer = [k for k in allowed if len(key) >= 4 and k.lower().startswith(key.lower())]
    if len(longer) == 1:
        return longer[0]  # `idleTimeout` for `idleTimeoutSeconds`
    close = difflib.get_close_matches(key, allowed, n=2, cutoff=0.8)
    return close[0] if len(close) == 1 else None


def _message(err: Mapping[str, Any]) -> str:
    kind = err["type"]
    if kind == "missing":
        return "is required but missing; add it (see docs/configuration.md)"
    if kind == "extra_forbidden":
        allowed = _allowed_keys(err["loc"])
        hint = f"; valid keys here: {', '.join(allowed)}" if allowed else ""
        meant = near_miss(str(err["loc"][-1]), allowed)
        if meant:
            return f"unknown key; did you mean `{meant}`?" + (
                f" Valid keys here: {', '.join(allowed)}" if allowed else ""
            )
        return f"unknown key{hint}"
    msg = err["msg"]
    if msg.startswith("Value error, "):
        return msg[len("Value error, ") :]
    if msg.startswith("Assertion failed, "):
        return msg[len("Assertion failed, ") :]
    for long, short in _MSG_WORDS:
        msg = msg.replace(long, short)
    got = err.get("input")
    if isinstance(got, (str, int, float, bool)) or got is None:
        return f"{msg[0].lower()}{msg[1:]} (got {got!r})"
    return f"{msg[0].lower()}{msg[1:]}"


def issues_from_validation_error(exc: ValidationError) -> list[ConfigIssue]:
    """One `ConfigIssue` per pydantic error, with camelCase config paths."""
    return [ConfigIssue(_path(tuple(e["loc"])), _message(e)) for e in exc.errors()]


MAX_ROUNDS = 8
"""Validation rounds while setting invalid parts aside (each round sets aside at least one)."""

MAP_SECTIONS = frozenset(
    {
        "gpuPools",
        "neuronPools",
        "managedInstancePools",
        "models",
        "rerankers",
        "weightStores",
        "workers",
    }
)
"""Sections keyed by name: an entry is `platform.<section>.<name>`; any other section is one
entry (`platform.endpoint`)."""

POOL_SECTIONS = ("gpuPools", "neuronPools", "managedInstancePools")


def entry_of(path: str) -> str:
    """The entry `path` belongs to (`platform.models.llama`, `platform.endpoint`), or ROOT."""
    parts = re.split(r"\.|(?=\[)", path)
    depth = 3 if len(parts) > 1 and parts[1] in MAP_SECTIONS else 2
    return ".".join(parts[:depth]) if len(parts) >= depth else ROOT


INERT_KEYS = frozenset({"environment", "secrets", "logRetentionDays", "kmsKeyArns"})
"""Keys of a service that no check beyond the schema's needs a value of: setting one aside
(back to its empty default) can hide a later problem but never cause one, so the rest of the
entry is still checked."""


def _inert(path: str) -> bool:
    entry = entry_of(path)
    key = re.split(r"\.|\[", path[len(entry) + 1 :])[0] if len(path) > len(entry) else ""
    return key in INERT_KEYS


def _under(path: str, base: str) -> bool:
    """Whether `path` is `base` or lies inside it."""
    return path == base or path.startswith((f"{base}.", f"{base}["))


@dataclass
class Checked:
    """A stack config checked layer by layer: what the plan may check, and every issue."""

    stack: str | None = None
    source: StackFile | None = None
    config: StackConfig | None = None
    """The config with the invalid parts set aside; None when nothing can be planned."""
    issues: list[ConfigIssue] = field(default_factory=list)
    set_aside: list[str] = field(default_factory=list)
    """Config paths reset to their default or dropped so that later checks could run."""
    unread: list[str] = field(default_factory=list)
    """The set-aside paths that are unknown keys: the schema never read them, so no later
    check can depend on them."""
    read_as: dict[str, str] = field(default_factory=dict)
    """Known key's path -> the near-miss key's path it was read from."""
    dependents: set[str] = field(default_factory=set)
    """Entries a set-aside part may change the checks of (a model's pool, a pool's models)."""
    unchecked: list[str] = field(default_factory=list)
    """Entries with a later layer's issue not reported because of a set-aside part."""

    def add(self, issue: ConfigIssue) -> None:
        located = self._locate(issue)
        if located not in self.issues:
            self.issues.append(located)

    def caused_by_set_aside(self, path: str, message: str = "") -> bool:
        """Whether an issue at `path` may come from a set-aside part instead of what the file
        says: it lies in the entry of one (the entry's checks ran on a default; an inert key
        only covers itself), in an entry that depends on one (a model's pool), or its
        message names one (`images.vllm`)."""
        for aside in self.read_set_aside():
            if _under(path, aside) or (_under(path, entry_of(aside)) and not _inert(aside)):
                return True
            relative = aside[len(ROOT) + 1 :]
            short = ".".join(re.split(r"\.(?![^\[]*\])", relative)[-2:])
            if relative and (relative in message or f"`{short}`" in message):
                return True
        return any(_under(path, entry) for entry in self.dependents)

    def read_set_aside(self) -> list[str]:
        """The set-aside paths a later check may have read (unknown keys left out)."""
        return [p for p in self.set_aside if p not in self.unread]

    def later(self, issues: Iterable[ConfigIssue]) -> None:
        """A later layer's issues, but those a set-aside part may have caused."""
        for issue in issues:
            if self.caused_by_set_aside(issue.path, issue.message):
                entry = entry_of(issue.path)
                if entry not in self.unchecked:
                    self.unchecked.append(entry)
            else:
                self.add(issue)

    def error(self) -> ConfigError | None:
        if not self.issues:
            return None
        return ConfigError(self.issues, self.stack, not_checked=self.unchecked)

    def raise_if_any(self) -> None:
        error = self.error()
        if error is not None:
            raise error

    def _locate(self, issue: ConfigIssue) -> ConfigIssue:
        if self.source is None or issue.where:
            return issue
        path = issue.path
        for known, written in self.read_as.items():
            if _under(path, known):
                path = written + path[len(known) :]
        return ConfigIssue(issue.path, issue.message, self.source.where(path))


def _loc(path: str) -> list[str | int]:
    """`platform.a.b[0]` -> ['a', 'b', 0]."""
    return [
        int(index) if index else name
        for name, index in re.findall(r"\.([^.\[]+)|\[(\d+)\]", path[len(ROOT) :])
    ]


_ABSENT = object()


def _at(data: Any, loc: Iterable[Any]) -> Any:
    """The value at `loc` within `data`, or `_ABSENT`."""
    node = data
    for part in loc:
        keyed = isinstance(node, dict) and part in node
        if keyed or (isinstance(node, list) and isinstance(part, int) and part < len(node)):
            node = node[part]
        else:
            return _ABSENT
    return node


def _remove(data: dict[str, Any], loc: list[Any]) -> bool:
    """Remove `loc` from `data` (a list item alone: the list's other entries are still checked;
    `validate` removes a round's items last index first); whether it was there."""
    if not loc:
        return False
    parent = _at(data, loc[:-1])
    if isinstance(parent, list) and isinstance(loc[-1], int) and 0 <= loc[-1] < len(parent):
        del parent[loc[-1]]
        return True
    if isinstance(parent, dict) and loc[-1] in parent:
        del parent[loc[-1]]
        return True
    return False


class _Recovery:
    """Validation rounds that set aside what is invalid until the rest validates."""

    def __init__(self, checked: Checked, data: dict[str, Any]) -> None:
        self.checked = checked
        self.data = data

    def set_aside(self, loc: list[Any]) -> bool:
        if not _remove(self.data, list(loc)):
            return False
        while loc and isinstance(loc[-1], int):
            loc = loc[:-1]
        self.checked.set_aside.append(_path(tuple(loc)))
        return True

    def recover(self, err: Mapping[str, Any]) -> bool:
        """Set aside what `err` is about; whether anything changed."""
        loc = [part for part in err["loc"] if part != "[key]"]
        if err["type"] == "extra_forbidden":
            if self.read_as_meant(err, loc):
                return True
            if self.set_aside(loc):
                self.checked.unread.append(self.checked.set_aside[-1])
                return True
            return False
        if err["type"] == "missing":
            loc = loc[:-1]  # the entry that lacks the key (none: a required section)
        elif self.set_aside_named(loc, str(err.get("msg", ""))):
            return True
        return bool(loc) and self.set_aside(loc)

    def set_aside_named(self, loc: list[Any], message: str) -> bool:
        """For a rule across an entry's keys (`allowedCidrs of an internal endpoint ...`), set
        aside the keys its message names rather than the whole entry."""
        entry = _at(self.data, loc)
        if not isinstance(entry, dict):
            return False
        named = [k for k in entry if re.search(rf"(?<![\w`]){re.escape(str(k))}(?![\w])", message)]
        named += [k for k in entry if f"`{k}`" in message and k not in named]
        changed = False
        for key in named:
            changed = self.set_aside([*loc, key]) or changed
        return changed

    def read_as_meant(self, err: Mapping[str, Any], loc: list[Any]) -> bool:
        """Read an unknown key as the known key it nearly is, when that one is not set too."""
        parent = _at(self.data, loc[:-1])
        meant = near_miss(str(loc[-1]), _allowed_keys(tuple(err["loc"])))
        if not (isinstance(parent, dict) and meant and meant not in parent and loc[-1] in parent):
            return False
        parent[meant] = parent.pop(loc[-1])
        self.checked.read_as[_path((*loc[:-1], meant))] = _path(tuple(loc))
        return True

    def validate(self) -> StackConfig | None:
        for round_ in range(MAX_ROUNDS):
            try:
                return StackConfig.model_validate(self.data)
            except ValidationError as exc:
                changed = False
                errors = exc.errors()
                for err in errors:
                    issue = ConfigIssue(_path(tuple(err["loc"])), _message(err))
                    if round_ == 0 or not self.checked.caused_by_set_aside(
                        issue.path, issue.message
                    ):
                        self.checked.add(issue)
                # Last first: removing a list's later item leaves its earlier indices valid.
                for err in reversed(errors):
                    changed = self.recover(err) or changed
                if not changed:
                    return None
        return None


def _dependents(raw: Mapping[str, Any], set_aside: Iterable[str]) -> set[str]:
    """Entries whose checks read a set-aside entry: a model's pool, a pool's models."""
    models = raw.get("models") if isinstance(raw.get("models"), dict) else {}
    pool_of = {
        name: m["pool"]
        for name, m in (models or {}).items()
        if isinstance(m, dict) and isinstance(m.get("pool"), str)
    }
    out: set[str] = set()
    for path in set_aside:
        entry = entry_of(path)
        section, _, name = entry[len(ROOT) + 1 :].partition(".")
        if section == "models" and name in pool_of:
            out |= {f"{ROOT}.{s}.{pool_of[name]}" for s in POOL_SECTIONS}
        elif section in POOL_SECTIONS:
            out |= {f"{ROOT}.models.{m}" for m, pool in pool_of.items() if pool == name}
    return out


def _shadowed_issues(data: dict[str, Any], source: StackFile | None) -> list[ConfigIssue]:
    """The schema's issues in the hidden copies of duplicate keys: each copy checked in place
    of the one read, at its own lines."""
    found: list[ConfigIssue] = []
    if source is None:
        return found
    for shadow in source.shadowed:
        loc = _loc(shadow.path)
        parent = _at(data, loc[:-1])
        if not _under(shadow.path, ROOT) or not loc or not isinstance(parent, dict):
            continue
        variant = copy.deepcopy(data)
        _at(variant, loc[:-1])[loc[-1]] = secrets.without_secure(shadow.value)
        try:
            StackConfig.model_validate(secrets.offline_values(variant))
        except ValidationError as exc:
            for err in exc.errors():
                path = _path(tuple(err["loc"]))
                if _under(path, shadow.path):
                    found.append(
                        ConfigIssue(
                            path,
                            f"in the copy at line {shadow.line}: {_message(err)}",
                            shadow.where(source.name, path),
                        )
                    )
    return found


def check_stack_config(
    raw: object,
    stack: str | None = None,
    *,
    source: StackFile | None = None,
    key_secret: bool = False,
) -> Checked:
    """Check the raw `ecs-inference:platform` value: the stack file's issues, the schema's, the
    references across sections; `config` is what is left to plan.

    `raw` is what `pulumi.Config("ecs-inference").get_object("platform")` returns (a dict), or
    None when the key is absent. `source` is the stack file it came from (lines, duplicate
    keys, values set with `--secret`; default none), `key_secret` whether the CLI marked the
    key secret (default not: a secret value in it was written in plain text).
    """
    checked = Checked(stack, source)
    for issue in source.issues if source is not None else ():
        checked.add(issue)
    if raw is None:
        checked.add(
            ConfigIssue(
                ROOT,
                "missing: set the structured key `ecs-inference:platform` in "
                f"Pulumi.{stack or '<stack>'}.yaml (see Pulumi.example.yaml for a minimal "
                "one)",
            )
        )
        return checked
    if source is not None and ROOT in source.secure:
        checked.add(secrets.misplaced(ROOT))
        return checked
    if not isinstance(raw, dict):
        checked.add(ConfigIssue(ROOT, f"must be a mapping of sections, got {type(raw).__name__}"))
        return checked
    data, unsupported = managed_instance_option_issues(copy.deepcopy(raw))
    data, refused = fargate_key_issues(data)
    recovery = _Recovery(checked, data)
    for issue in [*unsupported, *refused]:
        checked.add(issue)
        checked.set_aside.append(issue.path)
    for path in sorted(source.secure if source is not None else ()):
        if (
            secrets.slot(path) is None
            and _under(path, ROOT)
            and _at(data, _loc(path)) is not _ABSENT
        ):
            checked.add(secrets.misplaced(path))
            recovery.set_aside(_loc(path))
    for issue in secrets.plaintext_issues(raw, source, key_secret):
        checked.add(issue)
    for issue in _shadowed_issues(data, source):
        checked.add(issue)
    checked.config = recovery.validate()
    if checked.config is None and checked.issues:
        # A required section (or key) is what is invalid: nothing is left to plan.
        required = {
            f"{ROOT}.{f.alias or n}" for n, f in StackConfig.model_fields.items() if f.is_required()
        }
        blocking = [p for p in checked.set_aside if p in required] or [ROOT]
        checked.unchecked.append(
            f"the plan's checks of every section ({', '.join(blocking)}: required)"
        )
    checked.dependents = _dependents(raw, checked.read_set_aside())
    if checked.config is not None:
        found = Issues()
        check_references(checked.config, found)
        checked.later(found)
    return checked


def load_stack_config(
    raw: object,
    stack: str | None = None,
    *,
    source: StackFile | None = None,
    key_secret: bool = False,
) -> StackConfig:
    """Validate the raw `ecs-inference:platform` value (see `check_stack_config`); raise one
    `ConfigError` listing all issues."""
    checked = check_stack_config(raw, stack, source=source, key_secret=key_secret)
    checked.raise_if_any()
    assert checked.config is not None, "a config that cannot be planned has an issue"
    return checked.config


def plan_stack(
    raw: object,
    stack: str | None,
    build: Callable[[StackConfig], P],
    *,
    source: StackFile | None = None,
    key_secret: bool = False,
) -> P:
    """`build(config)` (the plan) of the checked config; raise one `ConfigError` with every
    issue of every layer: the stack file's, the schema's and those `build` raises (a
    `ConfigError`) on what is left when parts are invalid."""
    checked = check_stack_config(raw, stack, source=source, key_secret=key_secret)
    result: P | None = None
    if checked.config is not None:
        try:
            result = build(checked.config)
        except ConfigError as error:
            checked.later(error.issues)
    checked.raise_if_any()
    assert result is not None, "a plan that was not built has an issue"
    return result
