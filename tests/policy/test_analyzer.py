"""The pack's analyzer (``guardrails/analyzer.py``) answers exactly as pulumi_policy's own.

``DecodeOnceServicer`` decodes each request once and lets the stack rules share one
reachability model (``Model.of_stack``); the SDK's servicer decodes per policy and so gives
every rule a fresh list and a fresh model. Both run in-process here on the same requests and
their replies must be byte-identical: the corpus (preview and literal), the reference
stacks, a big stack of many corpus copies, under default and non-default pack configs, and a
synthetic pack for the SDK branches this pack's rules do not take (async validation,
not-applicable, remediation-only policies, unknown values read by a rule).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Iterator
from typing import Any

import pytest
from guardrails import all_policies
from guardrails.analyzer import DecodeOnceServicer
from guardrails.resources import NoteRelay, UnknownCollector
from hypothesis import given, settings
from hypothesis import strategies as st
from pulumi.runtime.proto import analyzer_pb2
from pulumi_policy import (
    EnforcementLevel,
    Policy,
    PolicyConfigSchema,
    ResourceValidationPolicy,
    StackValidationPolicy,
)
from pulumi_policy.policy import _PolicyAnalyzerServicer  # pyright: ignore[reportPrivateUsage]
from pulumi_policy.proxy import UNKNOWN_STRING_VALUE, UnknownValueError

from bench.policy_bench import big_stack
from tests.policy.corpus import build, cases
from tests.policy.policy_stacks import Res, aws_baseline, native_baseline, urn_of
from tools.analyzer_client import analyze_requests, analyze_stack_request

LEVELS = {
    "advisory": analyzer_pb2.ADVISORY,
    "mandatory": analyzer_pb2.MANDATORY,
    "remediate": analyzer_pb2.REMEDIATE,
    "disabled": analyzer_pb2.DISABLED,
}

#: A config far from the defaults: narrowed scope, every kind of exemption entry, one stack
#: and one resource policy disabled, one of each at remediate (reported as mandatory).
CONFIG: dict[str, tuple[str | None, dict[str, Any]]] = {
    "no-unauthenticated-internet-path": (
        None,
        {"scope": "model-serving", "exemptResources": ["public-alb-listener"]},
    ),
    "no-internet-ingress-to-unauthenticated-target": (
        "remediate",
        {"exemptResources": [{"type": "aws:ec2/securityGroup:SecurityGroup", "name": "*task*"}]},
    ),
    "no-reachable-public-ip": (None, {"exemptResources": ["urn:pulumi:dev::*::*::*svc*"]}),
    "no-gpu-task-on-fargate-service": (None, {"exemptResources": ["gpu-td"]}),
    "target-type-ip-for-awsvpc": ("disabled", {}),
    "health-check-grace-period": ("remediate", {}),
    "scale-out-faster-than-scale-in": ("disabled", {}),
}


def _servicers(
    policies: list[Policy], config: dict[str, tuple[str | None, dict[str, Any]]] | None
) -> Iterator[Any]:
    for cls in (_PolicyAnalyzerServicer, DecodeOnceServicer):
        servicer = cls("pack", "0.0.1", policies, EnforcementLevel.ADVISORY)
        servicer.ConfigureStack(analyzer_pb2.AnalyzerStackConfigureRequest(stack="dev"), None)
        if config is not None:
            request = analyzer_pb2.ConfigureAnalyzerRequest()
            for name, (level, props) in config.items():
                entry = request.policyConfig[name]
                entry.enforcementLevel = LEVELS[level or "mandatory"]
                entry.properties.update(props)
            servicer.Configure(request, None)
        yield servicer


def _replies(servicer: Any, resources: list[Any]) -> list[bytes]:
    replies = [servicer.Analyze(r, None) for r in analyze_requests(resources)]
    replies.append(servicer.AnalyzeStack(analyze_stack_request(resources), None))
    return [reply.SerializeToString(deterministic=True) for reply in replies]


def _assert_same(
    policies: list[Policy],
    stacks: Iterable[list[Any]],
    config: dict[str, tuple[str | None, dict[str, Any]]] | None = None,
) -> int:
    """Every stack through both servicers (alternating, so the exemption hand-over state in
    ``guardrails.exemptions`` is the same for both); returns the diagnostics seen."""
    sdk, ours = _servicers(policies, config)
    seen = 0
    for resources in stacks:
        expected = _replies(sdk, resources)
        assert _replies(ours, resources) == expected, [r.urn for r in resources][:3]
        seen += sum(len(analyzer_pb2.AnalyzeResponse.FromString(b).diagnostics) for b in expected)
    return seen


def _corpus_stacks() -> Iterator[list[Any]]:
    yield list(aws_baseline())
    yield list(native_baseline())
    for case in cases():
        for literal in (False, True):
            yield list(build(case, literal=literal))


@pytest.mark.parametrize("config", [None, CONFIG], ids=["defaults", "configured"])
def test_same_replies_as_the_sdk_on_the_corpus(config):
    assert _assert_same(all_policies(), _corpus_stacks(), config) > 100


def test_same_replies_on_one_stack_holding_the_whole_corpus():
    # One AnalyzeStack over every case, renamed apart (bench/policy_bench.py's stack): the
    # shared model answers many rules and routes at once, as on a big real stack.
    assert _assert_same(all_policies(), [big_stack(1)]) > 100


# --- SDK branches the pack's own rules do not take ----------------------------------------------


def _unknown_read(props: Any) -> None:
    props["secret"]


def _synthetic() -> list[Policy]:
    def resource_validate(args: Any, report: Any) -> Any:
        kind = args.props.get("kind")
        if kind == "unknown":
            _unknown_read(args.props)
        if kind == "skip":
            args.not_applicable("not this one")
        if kind == "async":

            async def later() -> None:
                await asyncio.sleep(0)
                report(f"async {args.name} {dict(args.get_config())}", args.urn)

            return later()
        report(f"sync {args.name} provider={args.provider and args.provider.name}", None)
        return None

    def stack_validate(args: Any, report: Any) -> Any:
        for resource in args.resources:
            if resource.props.get("kind") == "skip":
                args.not_applicable("stack skip")
            parent = resource.parent.name if resource.parent else None
            deps = {k: [d.name for d in v] for k, v in resource.property_dependencies.items()}
            report(f"{resource.name} parent={parent} deps={deps}", resource.urn)
        if any(r.props.get("kind") == "unknown" for r in args.resources):
            _unknown_read(next(r for r in args.resources if r.props.get("kind") == "unknown").props)

    async def stack_async(args: Any, report: Any) -> None:
        await asyncio.sleep(0)
        report(f"{len(args.resources)} resources", None)

    policies: list[Policy] = [
        ResourceValidationPolicy(name="r-sync", description="r", validate=resource_validate),
        ResourceValidationPolicy(name="r-remedy", description="m", remediate=lambda _: None),
        ResourceValidationPolicy(name="r-disabled", description="d", validate=resource_validate),
        StackValidationPolicy(
            name="s-sync",
            description="s",
            validate=stack_validate,
            config_schema=PolicyConfigSchema(properties={"x": {"type": "integer"}}),
        ),
        StackValidationPolicy(name="s-async", description="a", validate=stack_async),
    ]
    return policies


def _synthetic_stacks() -> Iterator[list[Any]]:
    kinds = ["plain", "async", "skip", "unknown"]
    provider = Res("pulumi:providers:aws", "prov", urn_of("pulumi:providers:aws", "prov"), True, {})
    for drop in range(len(kinds) + 1):
        resources: list[Any] = [provider]
        for kind in kinds[drop:]:
            name = f"{kind}-res"
            resources.append(
                Res(
                    "test:index:Thing",
                    name,
                    urn_of("test:index:Thing", name),
                    True,
                    {"kind": kind, "secret": UNKNOWN_STRING_VALUE, "nested": {"a": [1, "b"]}},
                    parent=provider.urn,
                    dependencies=(provider.urn, "urn:pulumi:dev::x::t::outside"),
                    provider=f"{provider.urn}::id-1",
                    property_dependencies={"nested": (provider.urn, "urn:outside")},
                )
            )
        yield resources


def test_same_replies_as_the_sdk_on_every_branch():
    config = {"r-disabled": ("disabled", {}), "s-sync": ("remediate", {"x": 1})}
    assert _assert_same(_synthetic(), _synthetic_stacks(), config) > 10


# --- the shared model's notes -------------------------------------------------------------------

# A rule is a list of steps; an answer's computation is one too. Steps: ("note", n) leaves a
# note, ("use", k) / ("guarded", k) uses answer k (k above the current answer: no cycles),
# ("fail", n) raises an unknown value.
_steps = st.lists(
    st.one_of(
        st.tuples(st.just("note"), st.integers(0, 5)),
        st.tuples(st.sampled_from(["use", "guarded"]), st.integers(0, 5)),
        st.tuples(st.just("fail"), st.integers(0, 2)),
    ),
    max_size=5,
)


def _run(relay: NoteRelay, cache: dict[Any, Any], answers: list[list[Any]], steps, floor: int):
    for kind, n in steps:
        if kind == "note":
            relay.note(f"note {n}", f"urn-{floor}")
        elif kind == "fail":
            raise UnknownValueError(UNKNOWN_STRING_VALUE, [f"fail{n}", str(floor)])
        else:
            key = floor + 1 + n
            if key >= len(answers):
                continue

            def compute(k: int = key) -> int:
                _run(relay, cache, answers, answers[k], k)
                return k

            if kind == "guarded":
                with relay.guard():
                    relay.memo(cache, key, compute)
            else:
                relay.memo(cache, key, compute)


def _judge(relay: NoteRelay, cache: dict[Any, Any], answers, rule) -> tuple[list[Any], Any]:
    collector = relay.target
    for step in rule:
        with collector.guard():
            _run(relay, cache, answers, [step], -1)
    first = collector.first.message if collector.first else None
    return list(collector.notes), first


@settings(max_examples=300, deadline=None)
@given(answers=st.lists(_steps, min_size=1, max_size=8), rules=st.lists(_steps, max_size=4))
def test_a_rule_gets_the_same_notes_from_a_shared_model_as_from_its_own(answers, rules):
    shared_cache: dict[Any, Any] = {}
    shared = NoteRelay(UnknownCollector())
    for rule in rules:
        shared.retarget(UnknownCollector())
        alone = NoteRelay(UnknownCollector())
        expected = _judge(alone, {}, answers, rule)
        assert _judge(shared, shared_cache, answers, rule) == expected
