"""`pulumi stack export` files: read one as the engine's snapshot, write one from a view.

The format is apitype `UntypedDeployment` version 3 (pulumi `sdk/go/common/apitype/core.go`):
`{"version": 3, "deployment": {"manifest", "secrets_providers", "resources": [...]}}`, each
resource with `urn, custom, id, type, inputs, outputs, parent, provider, dependencies,
propertyDependencies, protect, delete, additionalSecretOutputs, customTimeouts, aliases`.
`pulumi policy analyze --file` (`deploy.AnalyzeSnapshot`) skips resources marked `delete` and
analyses the rest in file order; secrets it cannot decrypt offline read as the string
`[secret]`, whatever their type, and so do they here (an export made with `--show-secrets`
carries them as `plaintext`, which is decoded).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pulumi.runtime.rpc import UNKNOWN

from tools.recording import ResourceOptions, go_duration_seconds
from tools.views.engine import PROVIDER_PREFIX, STACK_TYPE, EngineResource, EngineStack

_SIG = "4dabf18193072939515e22adb298388d"
_SECRET = "1b47061264138c4ac30d75fd1eb44270"
REDACTED = "[secret]"


class StateFileError(ValueError):
    """The file is not a `pulumi stack export` document."""


def _reveal(value: Any) -> Any:
    """Stored secrets as a pack sees them offline: `plaintext` decoded, else `[secret]`."""
    if isinstance(value, dict):
        if value.get(_SIG) == _SECRET:
            if "plaintext" in value:
                return _reveal(json.loads(value["plaintext"]))
            return REDACTED
        return {k: _reveal(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_reveal(v) for v in value]
    return value


def _timeouts(value: Any) -> tuple[float, float, float]:
    """customTimeouts as stored (seconds, or duration strings in older exports)."""
    value = value or {}

    def seconds(key: str) -> float:
        raw = value.get(key) or 0
        return go_duration_seconds(raw) if isinstance(raw, str) else float(raw)

    return (seconds("create"), seconds("update"), seconds("delete"))


def _resource(item: Mapping[str, Any]) -> EngineResource:
    urn = item.get("urn")
    if not isinstance(urn, str) or not urn.startswith("urn:pulumi:") or urn.count("::") < 3:
        raise StateFileError(f"resource with an invalid URN {urn!r}")
    dbr = item.get("deleteBeforeReplace")
    return EngineResource(
        type=str(item.get("type") or urn.split("::")[2].rsplit("$", 1)[-1]),
        name=urn.rsplit("::", 1)[1],
        urn=urn,
        custom=bool(item.get("custom")),
        inputs=_reveal(item.get("inputs") or {}),
        outputs=_reveal(item.get("outputs") or {}),
        parent=item.get("parent") or None,
        dependencies=tuple(item.get("dependencies") or ()),
        property_dependencies={
            k: tuple(v or ()) for k, v in (item.get("propertyDependencies") or {}).items()
        },
        provider=item.get("provider") or None,
        options=ResourceOptions(
            protect=bool(item.get("protect")),
            ignore_changes=tuple(item.get("ignoreChanges") or ()),
            delete_before_replace=dbr if isinstance(dbr, bool) else None,
            additional_secret_outputs=tuple(item.get("additionalSecretOutputs") or ()),
            aliases=tuple(a for a in item.get("aliases") or () if isinstance(a, str)),
            custom_timeouts=_timeouts(item.get("customTimeouts")),
        ),
        id=item.get("id") or None,
    )


def read_state(path: Path) -> EngineStack:
    """The snapshot in an export file, as `AnalyzeSnapshot` sees it (resources marked
    `delete` left out). Stack and project come from the URNs ("unknown" when none)."""
    try:
        document = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise StateFileError(f"{path}: cannot read a stack export: {exc}") from None
    deployment = document.get("deployment") if isinstance(document, dict) else None
    if not isinstance(deployment, dict):
        raise StateFileError(f"{path}: no `deployment` (expected `pulumi stack export` output)")
    items = [r for r in deployment.get("resources") or [] if not r.get("delete")]
    try:
        resources = tuple(_resource(item) for item in items)
    except StateFileError as exc:
        raise StateFileError(f"{path}: {exc}") from None
    stack, project = "unknown", "unknown"
    if resources:
        head, project = resources[0].urn.split("::")[:2]
        stack = head.removeprefix("urn:pulumi:")
    return EngineStack("state", project, stack, resources)


def _known(value: Any, where: str) -> Any:
    """`value`, refused if it holds an unknown anywhere (a stored state holds none)."""
    if value == UNKNOWN:
        raise ValueError(f"{where}: a stored state holds no unknown values")
    if isinstance(value, dict):
        return {k: _known(v, f"{where}.{k}") for k, v in value.items()}
    if isinstance(value, list):
        return [_known(v, f"{where}[{n}]") for n, v in enumerate(value)]
    return value


def write_state(stack: EngineStack) -> dict[str, Any]:
    """`stack` (a `state` view) as a `pulumi stack export` document."""
    if stack.view != "state":
        raise ValueError(f"only the state view is a stored state, not {stack.view!r}")
    return {
        "version": 3,
        "deployment": {
            "manifest": {"time": "2026-01-01T00:00:00Z", "magic": "", "version": "v3.272.0"},
            "secrets_providers": {"type": "passphrase", "state": {"salt": ""}},
            "resources": [_export(r) for r in stack.resources],
        },
    }


def _export(r: EngineResource) -> dict[str, Any]:
    item: dict[str, Any] = {"urn": r.urn, "custom": r.custom, "type": r.type}
    if r.custom:
        item["id"] = r.id or ""
    item["inputs"] = _known(r.inputs, f"{r.urn} inputs")
    item["outputs"] = _known(r.outputs, f"{r.urn} outputs")
    if r.type != STACK_TYPE and r.parent:
        item["parent"] = r.parent
    if r.provider and not r.type.startswith(PROVIDER_PREFIX):
        item["provider"] = r.provider
    item["protect"] = r.options.protect
    if r.dependencies:
        item["dependencies"] = list(r.dependencies)
    if r.property_dependencies:
        item["propertyDependencies"] = {k: list(v) for k, v in r.property_dependencies.items()}
    if r.options.delete_before_replace is not None:
        item["deleteBeforeReplace"] = r.options.delete_before_replace
    if r.options.additional_secret_outputs:
        item["additionalSecretOutputs"] = list(r.options.additional_secret_outputs)
    create, update, delete = r.options.custom_timeouts
    if create or update or delete:
        item["customTimeouts"] = {"create": create, "update": update, "delete": delete}
    return item
