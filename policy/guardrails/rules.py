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

from . import exemptions
from .resources import EXEMPT_SCHEMA, UnknownCollector, config_with_defaults, is_exempt, of_types

EXEMPT_ONLY: dict[str, Any] = {"exemptResources": EXEMPT_SCHEMA}
"""Config schema of a rule whose only setting is ``exemptResources``."""

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

    def validate(args: ResourceValidationArgs, report: ReportViolation) -> None:
        if args.resource_type not in wanted:
            return
        config = config_with_defaults(args, schema)
        exemptions.register(name, config, wanted)
        if is_exempt(config, args, wanted):
            return
        check(args, config, cast(Report, report))

    return ResourceValidationPolicy(
        name=name,
        description=description,
        validate=validate,
        enforcement_level=level,
        config_schema=PolicyConfigSchema(properties=dict(schema)),
    )


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

    def validate(args: StackValidationArgs, report: ReportViolation) -> None:
        config = config_with_defaults(args, schema)
        exemptions.register(name, config, own)
        unknowns = UnknownCollector(own)
        try:
            check(args, config, cast(Report, report), unknowns)
        finally:
            exemptions.set_notes(name, unknowns.notes)
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
        with unknowns.guard():
            judge(resource)
