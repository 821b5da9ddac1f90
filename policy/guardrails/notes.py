"""``guardrail-notes``: the advisories the other rules leave, reported in one place.

It runs last (``all_policies`` puts it there) and reports, as advisories:

* every ``exemptResources`` entry of every policy that matches a resource of the stack (so
  an exemption stays visible in the preview and in the PR comment);
* the notes the stack rules left: "cannot verify" when a reference resolves to nothing in the
  stack, security groups attached to nothing or to what the pack does not judge, and findings
  outside ``scope: model-serving``.

Disabling this policy silences all of them, so leave it advisory.
"""

from __future__ import annotations

from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    ReportViolation,
    StackValidationArgs,
    StackValidationPolicy,
)

from . import exemptions


def _report_notes(args: StackValidationArgs, report: ReportViolation) -> None:
    for policy, entry in sorted(exemptions.registered().items()):
        if not entry.config.get("exemptResources"):
            continue
        for resource in args.resources:
            for item in exemptions.matching_entries(entry.config, resource, entry.types):
                report(
                    f"{policy}: exemption {exemptions.describe_entry(item)} matches "
                    f"{resource.resource_type} {resource.name!r}; the policy does not judge it.",
                    resource.urn,
                )
    for policy, notes in sorted(exemptions.take_notes().items()):
        for message, urn in notes:
            report(f"{policy}: {message}", urn)


guardrail_notes = StackValidationPolicy(
    name="guardrail-notes",
    description=(
        "Advisories of the other guardrails: exemptions in effect, references a rule cannot "
        "verify (ARNs outside the stack, values unknown without a recorded dependency), "
        "security groups whose attachment is unknown, findings outside scope model-serving. "
        "Fix: make the reference traceable (pass the resource's output), or review the "
        "exemption."
    ),
    validate=_report_notes,
    enforcement_level=EnforcementLevel.ADVISORY,
    config_schema=PolicyConfigSchema(properties={}),
)

POLICIES = [guardrail_notes]
