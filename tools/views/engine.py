"""A stack as the Pulumi engine hands it to a policy pack, in one view.

What the engine sends (pulumi `pkg/resource/deploy/step_generator.go`):

- `Analyze`, once per registration, in registration order, after the provider's `Check`: the
  checked inputs, the resource options (protect, ignoreChanges, deleteBeforeReplace,
  additionalSecretOutputs, aliases, customTimeouts, parent) and the provider resource with its
  inputs. That includes the root `pulumi:pulumi:Stack` and every default provider, which the
  engine registers itself (`default_providers.go`: named `default_<version>`, inputs the
  package's config as strings plus `version`) just before the first resource that needs it.
- `AnalyzeStack`, once: every resource's *outputs* ("Unlike Analyze, AnalyzeStack is called
  on the final outputs of each resource"), with parent, dependencies and property
  dependencies.
- `deploy.AnalyzeSnapshot` (the `state` view, and `tools.preview --state`): the same two
  calls on a stored snapshot: Analyze on each resource's stored inputs, AnalyzeStack on its
  stored outputs.

A provider's id is unknown until it is created (`providers/registry.go`: `UnknownID` during a
preview of a new provider), so in `new` every provider reference ends in the unknown id.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pulumi.runtime.rpc import UNKNOWN

from tools.recording import Recording, ResourceOptions, provider_default_tags
from tools.views.service_launch import store_described_launches
from tools.views.shape import VIEWS, checked_inputs, planned_outputs

STACK_TYPE = "pulumi:pulumi:Stack"
PROVIDER_PREFIX = "pulumi:providers:"


@dataclass(frozen=True)
class EngineResource:
    """One resource as the engine knows it: what Analyze and AnalyzeStack receive."""

    type: str
    name: str
    urn: str
    custom: bool
    inputs: dict[str, Any]
    """What Analyze receives: the checked inputs (providers: their config)."""
    outputs: dict[str, Any]
    """What AnalyzeStack receives."""
    parent: str | None = None
    dependencies: tuple[str, ...] = ()
    property_dependencies: dict[str, tuple[str, ...]] = field(default_factory=dict)
    provider: str | None = None
    """Provider reference `<provider urn>::<provider id>`."""
    options: ResourceOptions = field(default_factory=ResourceOptions)
    id: str | None = None


@dataclass(frozen=True)
class EngineStack:
    """Every resource of one stack in one view, in registration order."""

    view: str
    project: str
    stack: str
    resources: tuple[EngineResource, ...]
    config: Mapping[str, str] = field(default_factory=dict)
    """The stack's config (`ns:key` -> string), as ConfigureStack passes it."""

    @property
    def dry_run(self) -> bool:
        """A preview (`new`, `update`) is a dry run; an audit of stored state is not."""
        return self.view != "state"


def stack_urn(project: str, stack: str) -> str:
    return f"urn:pulumi:{stack}::{project}::{STACK_TYPE}::{project}-{stack}"


def provider_urn(project: str, stack: str, package: str, version: str | None) -> str:
    """The default provider's URN (`ProviderRequest.DefaultName`: `default_7_51_1`)."""
    name = "default" + ("_" + version.replace(".", "_").replace("-", "_") if version else "")
    return f"urn:pulumi:{stack}::{project}::{PROVIDER_PREFIX}{package}::{name}"


def provider_id(view: str, urn: str) -> str:
    """The provider's id: unknown until it is created, then a UUID (stable per URN here)."""
    return UNKNOWN if view == "new" else str(uuid.uuid5(uuid.NAMESPACE_URL, urn))


def package_config(config: Mapping[str, str], package: str) -> dict[str, Any]:
    """A default provider's inputs: its package's config keys without the namespace, values
    as the engine stores them (strings, structured values JSON-encoded)."""
    return {k.split(":", 1)[1]: v for k, v in config.items() if k.split(":", 1)[0] == package}


def _default_provider(
    view: str, project: str, stack: str, package: str, version: str | None, config: Mapping
) -> EngineResource:
    urn = provider_urn(project, stack, package, version)
    inputs = package_config(config, package)
    if version:
        inputs["version"] = version
    return EngineResource(
        type=PROVIDER_PREFIX + package,
        name=urn.rsplit("::", 1)[1],
        urn=urn,
        custom=True,
        inputs=inputs,
        outputs=dict(inputs),
        id=provider_id(view, urn),
    )


def from_records(
    records: Iterable[Any],
    view: str,
    *,
    project: str,
    stack: str,
    config: Mapping[str, str] | None = None,
    stack_outputs: Mapping[str, Any] | None = None,
    planned: bool = False,
) -> EngineStack:
    """The engine's view of recorded registrations (tools.recording.RecordedResource, or any
    record with type, name, urn, custom, inputs and optionally parent, dependencies,
    property_dependencies, provider, outputs, options, version).

    Checked inputs are computed here. `planned`: the records' outputs already are the
    provider's answers in `view` (a program run under that view's mocks); otherwise they are
    planned from the inputs, with the identity outputs the records carry (ids, ARNs) used in
    `update` and `state`. Resources without an explicit provider get the engine's default
    provider of their package.
    """
    if view not in VIEWS:
        raise ValueError(f"unknown view {view!r}; one of {', '.join(VIEWS)}")
    config = dict(config or {})
    tags = provider_default_tags(config)
    root = stack_urn(project, stack)
    resources: list[EngineResource] = [
        EngineResource(
            type=STACK_TYPE,
            name=f"{project}-{stack}",
            urn=root,
            custom=False,
            inputs={},
            outputs=dict(stack_outputs or {}),
        )
    ]
    providers: dict[tuple[str, str | None], EngineResource] = {}
    for record in records:
        provider = getattr(record, "provider", None)
        if record.custom and not provider and not record.type.startswith(PROVIDER_PREFIX):
            key = (record.type.split(":", 1)[0], getattr(record, "version", None))
            if key not in providers:
                providers[key] = _default_provider(view, project, stack, *key, config)
                resources.append(providers[key])
            provider = f"{providers[key].urn}::{providers[key].id}"
        resources.append(_engine_resource(record, view, provider, tags, root, planned))
    if view != "new":
        store_described_launches(resources)
    return EngineStack(view, project, stack, tuple(resources), config)


def _engine_resource(
    record: Any,
    view: str,
    provider: str | None,
    tags: Mapping[str, str],
    root: str,
    planned: bool,
) -> EngineResource:
    inputs = dict(record.inputs)
    checked = checked_inputs(record.type, record.name, inputs) if record.custom else inputs
    recorded = getattr(record, "outputs", None)
    if record.custom and not planned:
        recorded = planned_outputs(view, record.type, checked, recorded or {}, default_tags=tags)
    outputs = dict(recorded or {}) if record.custom else dict(inputs)
    return EngineResource(
        type=record.type,
        name=record.name,
        urn=record.urn,
        custom=record.custom,
        inputs=checked,
        outputs=outputs,
        parent=getattr(record, "parent", None) or root,
        dependencies=tuple(getattr(record, "dependencies", ()) or ()),
        property_dependencies=dict(getattr(record, "property_dependencies", {}) or {}),
        provider=provider,
        options=getattr(record, "options", None) or ResourceOptions(),
        id=None if view == "new" else (recorded or {}).get("id"),
    )


def from_recording(
    recording: Recording, view: str, *, project: str, stack: str, config: Mapping[str, str]
) -> EngineStack:
    """The engine's view of a program run (run under mocks of `view`; `state` reuses a run
    of `update`, whose answers are the stored outputs)."""
    return from_records(
        recording.resources,
        view,
        project=project,
        stack=stack,
        config=config,
        stack_outputs=recording.outputs,
        planned=True,
    )
