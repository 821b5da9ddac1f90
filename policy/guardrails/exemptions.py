"""Scoped exemptions and the advisory notes every rule leaves behind.

An exemption is a reviewed exception that one policy's ``exemptResources`` lists. A pack runs
on every stack of an organisation, so an entry must say *which* resource it means:

* a URN (``urn:pulumi:prod::shop::aws:lb/listener:Listener::web``), ``*`` / ``?`` wildcards
  allowed (shell-style, matched against the whole URN);
* an object ``{"type": ..., "name": ..., "stack": ..., "project": ...}``: type and name are
  required, stack and project optional; each is a shell-style pattern;
* a bare name: still accepted, but it matches only resources of the types the policy itself
  judges, so exempting a listener named ``web`` does not also exempt a security group ``web``.

Every entry that matches a resource is reported as an advisory by ``guardrail-notes`` so an
exemption never silences a rule unseen. Mandatory rules cannot report at advisory level
themselves (a CrossGuard policy has one level), so they hand their advisories ("cannot
verify", "outside the model-serving scope") to this module and ``guardrail-notes``, the last
policy of the pack, reports them. The analyzer runs policies in list order within one
``AnalyzeStack`` call, which is what makes that hand-over safe.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

EXEMPT_SCHEMA: dict[str, Any] = {
    "type": "array",
    "items": {
        "type": ["string", "object"],
        "properties": {
            "type": {"type": "string"},
            "name": {"type": "string"},
            "stack": {"type": "string"},
            "project": {"type": "string"},
        },
        "required": ["type", "name"],
    },
    "default": [],
    "description": (
        "Reviewed exceptions this policy skips: a URN (wildcards allowed), an object "
        '{"type", "name", "stack"?, "project"?} of shell-style patterns, or a bare name '
        "(matches only the resource types this policy judges). Each match is reported as an "
        "advisory by guardrail-notes."
    ),
}


@dataclass(frozen=True)
class UrnParts:
    """The parts of a Pulumi URN an exemption can name."""

    stack: str
    project: str
    type: str
    name: str


def parse_urn(urn: str) -> UrnParts | None:
    """``urn:pulumi:<stack>::<project>::<parent$type>::<name>``, or None when not a URN."""
    if not urn.startswith("urn:pulumi:"):
        return None
    parts = urn[len("urn:pulumi:") :].split("::")
    if len(parts) < 4:
        return None
    stack, project, qualified = parts[0], parts[1], parts[2]
    name = "::".join(parts[3:])
    return UrnParts(stack, project, qualified.rsplit("$", 1)[-1], name)


def exemption_matches(entry: Any, resource: Any, own_types: frozenset[str] | None) -> bool:
    """Whether one ``exemptResources`` entry names ``resource``.

    ``own_types`` are the types the listing policy judges; a bare name matches only those
    (``None``: any type, for callers outside a policy).
    """
    urn = str(getattr(resource, "urn", "") or "")
    rtype = str(getattr(resource, "resource_type", "") or "")
    name = str(getattr(resource, "name", "") or "")
    if isinstance(entry, str):
        if entry.startswith("urn:pulumi:"):
            return fnmatchcase(urn, entry)
        return entry == name and (own_types is None or rtype in own_types)
    if isinstance(entry, Mapping):
        type_pattern, name_pattern = entry.get("type"), entry.get("name")
        if not isinstance(type_pattern, str) or not isinstance(name_pattern, str):
            return False
        if not (fnmatchcase(rtype, type_pattern) and fnmatchcase(name, name_pattern)):
            return False
        parts = parse_urn(urn)
        for key in ("stack", "project"):
            pattern = entry.get(key)
            if pattern is None:
                continue
            if parts is None or not fnmatchcase(getattr(parts, key), str(pattern)):
                return False
        return True
    return False


def matching_entries(
    config: Mapping[str, Any], resource: Any, own_types: frozenset[str] | None
) -> list[Any]:
    """The ``exemptResources`` entries of ``config`` that name ``resource``."""
    return [
        e for e in config.get("exemptResources") or () if exemption_matches(e, resource, own_types)
    ]


def describe_entry(entry: Any) -> str:
    """An exemption entry as it appears in the config file."""
    if isinstance(entry, Mapping):
        return "{" + ", ".join(f"{k}: {v}" for k, v in sorted(entry.items())) + "}"
    return str(entry)


# --- the hand-over to guardrail-notes ---------------------------------------------------------


@dataclass(frozen=True)
class Registered:
    """What a policy ran with: its config (defaults filled) and the types it judges."""

    config: Mapping[str, Any]
    types: frozenset[str]


_REGISTERED: dict[str, Registered] = {}
_NOTES: dict[str, list[tuple[str, str | None]]] = {}


def register(policy: str, config: Mapping[str, Any], types: Iterable[str]) -> None:
    """Record the config a policy ran with, for the exemption advisories."""
    _REGISTERED[policy] = Registered(dict(config), frozenset(types))


def set_notes(policy: str, notes: Iterable[tuple[str, str | None]]) -> None:
    """Replace the advisories ``policy`` leaves for ``guardrail-notes`` (message, URN)."""
    _NOTES[policy] = list(notes)


def registered() -> dict[str, Registered]:
    """Every policy that has run in this analyzer process, with its config."""
    return dict(_REGISTERED)


def take_notes() -> dict[str, list[tuple[str, str | None]]]:
    """The advisories left since the last call, by policy; clears them."""
    notes = dict(_NOTES)
    _NOTES.clear()
    return notes
