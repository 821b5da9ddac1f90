"""The harness (``pack_harness``) hands a rule what the pack's servicer hands it over gRPC.

Two probe policies write down every argument they get: a resource policy its type, props (read
through the proxy, so an unknown value shows as the error it raises), URN, name, options,
provider and config; a stack policy each resource with its parent and dependencies. The
records carry what the pack's rules do not read today but a rule may: every resource option
set, a provider with properties, a secret, unknowns in nested lists, references to resources
outside the stack. The pack's servicer (pulumi_policy's, decoding each request once) gets them
as the client marshals them for gRPC; the harness from the records. Both must write the same.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from guardrails.analyzer import DecodeOnceServicer
from pulumi.runtime.proto import analyzer_pb2
from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    ResourceValidationPolicy,
    StackValidationPolicy,
)
from pulumi_policy.deserialize import SPECIAL_SECRET_SIG, SPECIAL_SIG_KEY
from pulumi_policy.proxy import UNKNOWN_NUMBER_VALUE, UNKNOWN_STRING_VALUE, UnknownValueError

from tests.policy.pack_harness import InProcessPack
from tests.policy.policy_stacks import aws_baseline, urn_of
from tools.analyzer_client import analyze_requests, analyze_stack_request
from tools.recording import RecordedResource, ResourceOptions

SECRET = {SPECIAL_SIG_KEY: SPECIAL_SECRET_SIG, "value": "s3cr3t"}


def _read(value: Any) -> Any:
    """A value as a rule reads it through the SDK's proxies (unknowns as what they raise)."""
    if isinstance(value, Mapping):
        return {key: _get(value, key) for key in value}
    if isinstance(value, Sequence) and not isinstance(value, str):
        return [_get(value, index) for index in range(len(value))]
    return value


def _get(container: Any, key: Any) -> Any:
    try:
        return _read(container[key])
    except UnknownValueError as error:
        return f"<{error.message}>"


def _options(opts: Any) -> dict[str, Any]:
    timeouts = opts.custom_timeouts
    return {
        "protect": opts.protect,
        "ignore_changes": list(opts.ignore_changes),
        "delete_before_replace": opts.delete_before_replace,
        "aliases": list(opts.aliases),
        "timeouts": (timeouts.create_seconds, timeouts.update_seconds, timeouts.delete_seconds),
        "additional_secret_outputs": list(opts.additional_secret_outputs),
        "parent": opts.parent,
    }


def _provider(provider: Any) -> Any:
    if provider is None:
        return None
    return (provider.resource_type, _read(provider.props), provider.urn, provider.name)


def _probes(seen: list[Any]) -> list[Any]:
    def resource(args: Any, _report: Any) -> None:
        seen.append(
            (
                args.resource_type,
                _read(args.props),
                args.urn,
                args.name,
                _options(args.opts),
                _provider(args.provider),
                dict(args.get_config()),
                dict(args.stack_tags),
            )
        )

    def stack(args: Any, _report: Any) -> None:
        for r in args.resources:
            deps = {k: [d.name for d in v] for k, v in r.property_dependencies.items()}
            parent = r.parent.name if r.parent else None
            seen.append((r.name, _read(r.props), _options(r.opts), _provider(r.provider)))
            seen.append((parent, [d.name for d in r.dependencies], deps))

    schema = PolicyConfigSchema(properties={"limit": {"type": "number"}})
    return [
        ResourceValidationPolicy(
            name="probe-resource", description="r", validate=resource, config_schema=schema
        ),
        StackValidationPolicy(name="probe-stack", description="s", validate=stack),
    ]


def _records() -> list[RecordedResource]:
    provider_type = "pulumi:providers:aws"
    provider_urn = urn_of(provider_type, "east")
    provider = RecordedResource(
        provider_type,
        "east",
        provider_urn,
        True,
        {"region": "us-east-1", "token": SECRET, "defaultTags": {"tags": {"team": "ml"}}},
        None,
        (),
        None,
    )
    parent_urn = urn_of("test:index:Component", "parent")
    parent = RecordedResource(
        "test:index:Component", "parent", parent_urn, False, {}, None, (), None
    )
    options = ResourceOptions(
        protect=True,
        ignore_changes=("tags",),
        delete_before_replace=False,
        additional_secret_outputs=("password",),
        aliases=(urn_of("test:index:Thing", "old"),),
        custom_timeouts=(600.0, 0.0, 1.5),
    )
    thing = RecordedResource(
        "test:index:Thing",
        "thing",
        urn_of("test:index:Thing", "thing"),
        True,
        {
            "port": 8000,
            "secret": SECRET,
            "unknown": UNKNOWN_STRING_VALUE,
            "nested": {"list": [1, UNKNOWN_NUMBER_VALUE, {"deep": SECRET}], "flag": True},
            "tuple": ("a", "b"),
        },
        parent_urn,
        (provider_urn, "urn:pulumi:dev::other::test:index:Thing::outside"),
        f"{provider_urn}::0f1e2d3c",
        {"nested": (provider_urn, "urn:outside"), "empty": ()},
        outputs={"arn": "arn:aws:svc:us-east-1:123456789012:thing/thing"},
        options=options,
    )
    return [provider, parent, thing]


def test_rules_get_what_the_servicer_gives_them():
    records = _records()
    config = {"probe-resource": {"limit": 3}}
    served_seen: list[Any] = []
    servicer = DecodeOnceServicer("probe", "1.0.0", _probes(served_seen), EnforcementLevel.ADVISORY)
    request = analyzer_pb2.ConfigureAnalyzerRequest()
    request.policyConfig["probe-resource"].properties.update(config["probe-resource"])
    servicer.Configure(request, None)
    for analyze in analyze_requests(records):
        servicer.Analyze(analyze, None)
    servicer.AnalyzeStack(analyze_stack_request(records, outputs=True), None)

    harness_seen: list[Any] = []
    with InProcessPack(config=config, policies=_probes(harness_seen)) as harness:
        assert harness.analyze(records, outputs=True) == []
    assert harness_seen == served_seen
    # What the comparison covers: a secret unwrapped, unknowns as errors, the timeouts, the
    # provider's props, numbers as floats, the outside dependencies dropped.
    props = served_seen[-7][1]
    assert props["secret"] == "s3cr3t" and props["nested"]["list"][2] == {"deep": "s3cr3t"}
    assert props["unknown"] == "<string value at .unknown can't be known during preview>"
    assert props["port"] == 8000.0 and isinstance(props["port"], float)
    assert served_seen[-7][4]["timeouts"] == (600.0, 0.0, 1.5)
    assert served_seen[-7][5][1]["defaultTags"] == {"tags": {"team": "ml"}}
    assert served_seen[-7][5][1]["token"] == "s3cr3t"
    assert served_seen[-1] == ("parent", ["east"], {"nested": ["east"]})


NOTES = "guardrail-notes"


def test_exemptions_stay_with_their_pack():
    """Each analyzer process hands its own exemptions to guardrail-notes; two harnesses in one
    process must too. A rule the second pack disables never re-registers there, so only a
    hand-over of its own keeps the first pack's exemption out of the second's notes."""
    grid = "fargate-task-size-on-grid"
    exempting = InProcessPack(config={grid: {"exemptResources": ["rerank-td"]}})
    disabling = InProcessPack(config={grid: "disabled"})
    notes = [v.message for v in exempting.analyze(aws_baseline()) if v.policy_name == NOTES]
    assert any(f"{grid}: exemption rerank-td matches" in m for m in notes), notes
    notes = [v.message for v in disabling.analyze(aws_baseline()) if v.policy_name == NOTES]
    assert not any(grid in m for m in notes), notes
