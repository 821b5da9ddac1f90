"""The offline preview fails where `pulumi up` would (DESIGN §9): names, requests, AWS rules.

Three layers, run over every recorded resource after the program has run under mocks:

1. naming as pulumi-aws does it (`simulate_name`): an explicit name, `namePrefix` + 26
   characters, or the provider's autoname `<logical>-<7 random>`, checked against the type's
   `NameRule` (contracts/aws_limits.py `NAME_RULES`);
2. the AWS API requests each resource becomes, validated against botocore's models, plus the
   AWS rules botocore cannot express (tools/aws_requests/);
3. the rules that span resources (listener priorities, quotas, per-role policy totals).

Each finding names the resource and, when a stack config value made it, the config path to
edit (`attribute_config`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ecs_inference.contracts.aws_limits import (
    AUTONAME_RANDOM_CHARS,
    AUTONAME_SEPARATOR,
    NAME_PREFIX_SUFFIX_CHARS,
    NameRule,
    name_rule,
)
from tools.aws_requests import Finding, Resource, resource_problems, stack_problems
from tools.aws_shapes import UNKNOWN


@dataclass(frozen=True)
class NameOutcome:
    """The physical name the provider would send (None: the type has none; UNKNOWN: not known
    during preview) and what the provider or AWS would say about it."""

    name: str | None
    problems: tuple[str, ...] = ()


def random_suffix(type_: str, logical: str, length: int = AUTONAME_RANDOM_CHARS) -> str:
    """The provider's random autoname characters (hex), made stable so previews diff cleanly."""
    return hashlib.sha256(f"{type_}\0{logical}".encode()).hexdigest()[:length]


def _prefix_suffix(type_: str, logical: str) -> str:
    # terraform's id.PrefixedUniqueId: a UTC timestamp (to 1/100 s) and a counter, 26 digits.
    digits = str(int(hashlib.sha256(f"prefix\0{type_}\0{logical}".encode()).hexdigest(), 16))
    return ("20260101000000000000000000" + digits)[-NAME_PREFIX_SUFFIX_CHARS:]


def simulate_name(type_: str, logical: str, inputs: Mapping[str, Any]) -> NameOutcome:
    """The name pulumi-aws would give a resource of `type_` named `logical` with `inputs`."""
    rule = name_rule(type_)
    if rule is None:
        return NameOutcome(None)
    explicit = inputs.get(rule.name_input)
    if explicit == UNKNOWN:
        return NameOutcome(UNKNOWN)
    if isinstance(explicit, str):
        return NameOutcome(
            explicit, tuple(f"{rule.name_input} {explicit!r}: {p}" for p in rule.problems(explicit))
        )
    prefix = inputs.get(rule.prefix_input) if rule.prefix_input else None
    if prefix == UNKNOWN:
        return NameOutcome(UNKNOWN)
    if isinstance(prefix, str):
        return _prefixed(rule, type_, logical, prefix)
    if rule.autoname_max is None:
        return NameOutcome(None, (f"missing required input `{rule.name_input}`",))
    base = logical + AUTONAME_SEPARATOR
    if len(base) + AUTONAME_RANDOM_CHARS > rule.autoname_max:
        # The provider's own error (pulumi-terraform-bridge resource.NewUniqueName).
        return NameOutcome(
            None,
            (
                f"could not make instance of '{type_}': name '{base}' plus "
                f"{AUTONAME_RANDOM_CHARS} random chars is longer than maximum length "
                f"{rule.autoname_max}",
            ),
        )
    name = base + random_suffix(type_, logical)
    if rule.lowercase:
        name = name.lower()
    return NameOutcome(name, tuple(f"autoname {name!r}: {p}" for p in rule.problems(name)))


def _prefixed(rule: NameRule, type_: str, logical: str, prefix: str) -> NameOutcome:
    problems: list[str] = []
    if len(prefix) > rule.longest_prefix:
        problems.append(
            f"{rule.prefix_input} {prefix!r} is {len(prefix)} characters; at most "
            f"{rule.longest_prefix} leave room for the {NAME_PREFIX_SUFFIX_CHARS} the provider adds"
        )
    name = prefix + _prefix_suffix(type_, logical)
    if not problems:
        problems += [
            f"{rule.prefix_input} {prefix!r}: {p}" for p in rule.problems(name[: rule.max_length])
        ]
    return NameOutcome(name, tuple(problems))


# --------------------------------------------------------------------------------------------
# config attribution
# --------------------------------------------------------------------------------------------


def _config_items(value: Any, path: str) -> Iterable[tuple[str, str]]:
    """(config path, text) for every mapping key and string leaf of a config tree."""
    if isinstance(value, Mapping):
        for key, item in value.items():
            here = f"{path}.{key}" if path else str(key)
            yield here, str(key)
            yield from _config_items(item, here)
    elif isinstance(value, list):
        for n, item in enumerate(value):
            yield from _config_items(item, f"{path}[{n}]")
    elif isinstance(value, str):
        yield path, value


def config_tree(stack_config: Mapping[str, Any]) -> dict[str, Any]:
    """A stack file's `config:` block keyed by path (`platform.models`), namespace dropped;
    JSON-encoded structured values are decoded."""
    tree: dict[str, Any] = {}
    for key, value in stack_config.items():
        if isinstance(value, str):
            with contextlib.suppress(json.JSONDecodeError):
                value = json.loads(value)
        tree[key.split(":", 1)[-1]] = value
    return tree


def attribute_config(texts: Sequence[str], tree: Mapping[str, Any]) -> tuple[str, ...]:
    """Config paths whose key or value appears, hyphen-delimited, in one of `texts` (a
    resource's logical and physical names): the config the user edits to fix the name."""
    matches: list[tuple[str, str]] = []
    for path, text in _config_items(tree, ""):
        # A top-level key is a section (`platform`), never what made a name.
        if len(text) < 2 or ("." not in path and text == path):
            continue
        for target in texts:
            padded = f"-{target}-"
            if f"-{text}-" in padded or (len(text) >= 8 and text in target):
                matches.append((path, text))
                break
    # A longer match covering a shorter one wins ("llama-neuron" over "llama").
    matches.sort(key=lambda m: -len(m[1]))
    taken: list[str] = []
    paths: list[str] = []
    for path, text in matches:
        if any(text in t for t in taken):
            continue
        taken.append(text)
        paths.append(path)
    return tuple(sorted(paths))


# Config keys through which a stack states an adjustable AWS quota its account has raised
# (this project's `platform.endpoint.listenerRuleQuota`), by quota name.
QUOTA_KEYS = {"listenerRuleQuota": "rules_per_alb"}


def quotas_from_config(tree: Mapping[str, Any]) -> dict[str, int]:
    """Raised quotas the stack config declares, wherever the key sits in the tree."""
    found: dict[str, int] = {}

    def walk(value: Any) -> None:
        if isinstance(value, Mapping):
            for key, item in value.items():
                if key in QUOTA_KEYS and isinstance(item, int):
                    found[QUOTA_KEYS[key]] = item
                walk(item)

    walk(tree)
    return found


# --------------------------------------------------------------------------------------------
# the whole check
# --------------------------------------------------------------------------------------------


def _default_tags(stack_config: Mapping[str, Any]) -> dict[str, str]:
    from tools.recording import provider_default_tags

    return provider_default_tags({k: str(v) for k, v in stack_config.items()})


def with_default_tags(
    type_: str, inputs: Mapping[str, Any], default_tags: Mapping[str, str]
) -> Mapping[str, Any]:
    """The inputs with the tags the provider sends: its `defaultTags` under the resource's own
    (terraform-provider-aws `getTagsIn`, the merge `tagsAll` holds), for types that take tags."""
    from tools.views.provider_schema import schema_of

    schema = schema_of(type_)
    if not default_tags or schema is None or "tagsAll" not in schema.present:
        return inputs
    tags = inputs.get("tags")
    if tags == UNKNOWN:
        return inputs
    return {**inputs, "tags": {**default_tags, **dict(tags or {})}}


# Names the checks are about; a finding on one of these is attributed to config by name.
_NAME_CHECK = "name"


def check_resources(
    resources: Sequence[Resource], stack_config: Mapping[str, Any] | None = None
) -> list[Finding]:
    """Every naming, request and rule problem of a recorded program run."""
    tree = config_tree(stack_config or {})
    default_tags = _default_tags(stack_config or {})
    findings: list[Finding] = []
    names: dict[str, str | None] = {}
    for r in resources:
        if not r.type.startswith("aws:"):
            continue
        inputs = with_default_tags(r.type, r.inputs, default_tags)
        outcome = simulate_name(r.type, r.name, r.inputs)
        names[r.urn] = outcome.name if outcome.name != UNKNOWN else None
        for problem in outcome.problems:
            findings.append(Finding(r.type, r.name, _NAME_CHECK, problem))
        # A name the provider could not make is reported once, above, not again as a request
        # without its required name.
        physical = UNKNOWN if outcome.name is None and outcome.problems else outcome.name
        for problem in resource_problems(r.type, inputs, physical):
            findings.append(Finding(r.type, r.name, "request", problem))
    for r, problem in stack_problems(resources, quotas_from_config(tree)):
        findings.append(Finding(r.type, r.name, "request", problem))
    if not tree:
        return findings
    by_name = {(r.type, r.name): r for r in resources}
    attributed = []
    for f in findings:
        r = by_name.get((f.type, f.name))
        texts = [f.name]
        if r is not None and isinstance(names.get(r.urn), str):
            texts.append(str(names[r.urn]))
        attributed.append(replace(f, config_paths=attribute_config(texts, tree)))
    return attributed
