"""The scaffolding every guardrail rule shares: config defaults, exemptions, unknown values.

Every rule of the pack takes an ``exemptResources`` list (scoped: see ``exemptions``), fills
its config from the schema defaults (the Pulumi CLI sends them, other drivers may not) and must
behave the same way on values that are unknown during preview: a resource rule lets
``UnknownValueError`` through (pulumi_policy turns it into an advisory note), a stack rule
judges every other resource first and then re-raises the first unknown. A stack rule's
"cannot verify" advisories go to ``guardrail-notes`` (see ``exemptions``). Written once here,
the rule modules say only what they judge, and a rule cannot forget the exemption check,
swallow an unknown or drop a note.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol, cast

from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)
from pulumi_policy.proxy import UnknownValueError

from . import exemptions
from .resources import EXEMPT_SCHEMA, UnknownCollector, config_with_defaults, is_exempt, of_types

UNKNOWNS_SCHEMA: dict[str, Any] = {
    "type": "string",
    "enum": ["advisory", "fail-closed"],
    "default": "advisory",
    "description": (
        "What the policy does where it cannot decide (a value unknown at preview, a reference "
        "outside the stack): advisory reports a 'cannot verify' note; fail-closed reports it "
        "at the policy's own level, so a mandatory policy fails the preview."
    ),
}
EXEMPT_ONLY: dict[str, Any] = {"exemptResources": EXEMPT_SCHEMA}
"""Config schema of a rule whose only setting is ``exemptResources`` (every rule also takes
``unknowns``)."""


def _with_unknowns(schema: Mapping[str, Any]) -> dict[str, Any]:
    return {**schema, "unknowns": UNKNOWNS_SCHEMA}


def fail_closed(config: Mapping[str, Any]) -> bool:
    """Whether the policy reports what it cannot decide at its own level."""
    return config.get("unknowns") == "fail-closed"


Config = dict[str, Any]


class Report(Protocol):
    """How the rules call pulumi_policy's ReportViolation: the URN is optional (the SDK's alias
    types it as required; its implementation defaults it to None, the policy's own resource)."""

    def __call__(self, message: str, urn: str | None = None, /) -> None: ...


ResourceCheck = Callable[[ResourceValidationArgs, Config, Report], None]
StackCheck = Callable[[StackValidationArgs, Config, Report, UnknownCollector], None]


def resource_rule(
    *,
    name: str,
    description: str,
    level: EnforcementLevel,
    types: Iterable[str],
    schema: Mapping[str, Any],
    check: ResourceCheck,
) -> ResourceValidationPolicy:
    """A resource policy that runs ``check(args, config, report)`` only on resources of
    ``types`` that ``exemptResources`` does not list; ``config`` has the schema defaults."""
    wanted = frozenset(types)
    schema = _with_unknowns(schema)

    def validate(args: ResourceValidationArgs, report: ReportViolation) -> None:
        if args.resource_type not in wanted:
            return
        config = config_with_defaults(args, schema)
        exemptions.register(name, config, wanted)
        if is_exempt(config, args, wanted):
            return
        if not fail_closed(config):
            check(args, config, cast(Report, report))
            return
        try:
            check(args, config, cast(Report, report))
        except UnknownValueError as error:  # fail-closed: undecided is a violation
            report(f"cannot verify: {args.resource_type} {args.name!r} {error.message}.", None)

    return TypedResourcePolicy(
        wanted,
        name=name,
        description=description,
        validate=validate,
        enforcement_level=level,
        config_schema=PolicyConfigSchema(properties=dict(schema)),
    )


class TypedResourcePolicy(ResourceValidationPolicy):
    """A resource policy that judges only ``resource_types`` (its ``validate`` returns at once
    on any other type), so the analyzer need not build its arguments, nor decode the
    resource's properties, for another type (``analyzer.DecodeOnceServicer.Analyze``)."""

    def __init__(self, resource_types: frozenset[str], **policy: Any) -> None:
        super().__init__(**policy)
        self.resource_types = resource_types


def stack_rule(
    *,
    name: str,
    description: str,
    level: EnforcementLevel,
    types: Iterable[str],
    schema: Mapping[str, Any],
    check: StackCheck,
) -> StackValidationPolicy:
    """A stack policy that runs ``check(args, config, report, unknowns)``, hands the notes
    ``unknowns`` collected to ``guardrail-notes`` and re-raises the first unknown value it
    collected (see `judge_each`). ``types`` are the types the policy judges: a bare name in
    ``exemptResources`` matches only those."""
    own = frozenset(types)
    schema = _with_unknowns(schema)

    def validate(args: StackValidationArgs, report: ReportViolation) -> None:
        config = config_with_defaults(args, schema)
        exemptions.register(name, config, own)
        unknowns = UnknownCollector(own)
        undecided: list[tuple[str, str | None]] = []
        try:
            check(args, config, cast(Report, report), unknowns)
            undecided = unknowns.undecided() if fail_closed(config) else []
        finally:
            exemptions.set_notes(name, [n for n in unknowns.notes if n not in undecided])
        if fail_closed(config):
            for message, urn in undecided:
                report(message, urn)
            return
        unknowns.reraise()

    return StackValidationPolicy(
        name=name,
        description=description,
        validate=validate,
        enforcement_level=level,
        config_schema=PolicyConfigSchema(properties=dict(schema)),
    )


def judge_each(
    resources: Iterable[Any],
    types: Iterable[str],
    config: Mapping[str, Any],
    unknowns: UnknownCollector,
    judge: Callable[[Any], None],
) -> None:
    """``judge(resource)`` for each resource of ``types`` not listed in ``exemptResources``; an
    unknown value met while judging one resource skips only that resource."""
    for resource in of_types(resources, types):
        if is_exempt(config, resource, unknowns.own_types):
            continue
        with unknowns.guard(resource):
            judge(resource)
