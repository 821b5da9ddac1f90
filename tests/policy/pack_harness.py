"""The policy pack in this process: each rule's ``validate`` called with pulumi_policy's own
argument classes, no subprocess and no gRPC.

A rule test asks what a rule decides about a stack; starting the pack and sending each resource
over gRPC (``tools.analyzer_client``) adds nothing to that answer but time, and hides a rule's
traceback behind an RPC error. :class:`InProcessPack` gives each rule exactly what the pack's
gRPC servicer (``guardrails.analyzer.DecodeOnceServicer``) would give it:

* ``props`` as the servicer decodes a request: the record's values put in a protobuf
  ``Struct`` by the client's own marshalling (numbers become floats, tuples lists), then the
  pack's own ``decode`` (pulumi_policy's ``deserialize_properties`` unwraps secrets, its
  unknown-checking proxy raises ``UnknownValueError`` on the engine's unknown sentinel);
* ``opts`` and ``provider`` as the servicer reads them (``PolicyResourceOptions``,
  ``PolicyProviderResource``) from what the client marshals, and the stack's resources as
  pulumi_policy's ``PolicyResource``, linked as the servicer links them (parents, dependencies
  and property dependencies inside the stack only);
* enforcement levels, each policy's config, violation messages (``<description>\\n<message>``),
  the "can't run policy ... during preview" note of an unknown value and async rules from the
  pack's own servicer, configured by the client's own code (``PolicyPackProcess._configure``:
  schema defaults, the pack's initial config, ``all``, then each policy's entry; a config the
  pack refuses raises :class:`~tools.analyzer_client.PolicyConfigError` with the same words);
* one exemption hand-over (``guardrails.exemptions``) per pack, as one analyzer process has.

``test_harness.py`` requires the arguments a rule gets to be the ones the servicer builds from
the client's requests; ``test_protocol.py`` runs stacks both ways over gRPC and requires the
same violations.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import grpc
from guardrails import all_policies, exemptions
from guardrails.analyzer import DecodeOnceServicer, decode, manifest_version
from pulumi.runtime import proto
from pulumi.runtime.proto import analyzer_pb2
from pulumi_policy import (
    EnforcementLevel,
    Policy,
    PolicyResource,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)

from tests.policy.conftest import POLICY_DIR
from tools.analyzer_client import (
    PolicyPackProcess,
    PolicyViolation,
    _options,  # pyright: ignore[reportPrivateUsage]
    _provider,  # pyright: ignore[reportPrivateUsage]
    _struct,  # pyright: ignore[reportPrivateUsage]
)


def served_pack() -> dict[str, Any]:
    """The keyword arguments ``policy/__main__.py`` serves the pack with (name, description,
    enforcement level), read from its source: importing it would start the server."""
    tree = ast.parse((POLICY_DIR / "__main__.py").read_text(encoding="utf-8"))
    call = next(
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "serve"
    )
    pack: dict[str, Any] = {}
    for keyword in call.keywords:
        if keyword.arg in ("name", "description"):
            pack[keyword.arg] = ast.literal_eval(keyword.value)
        elif keyword.arg == "enforcement_level" and isinstance(keyword.value, ast.Attribute):
            pack[keyword.arg] = EnforcementLevel[keyword.value.attr]
    return pack


class _Refused(grpc.RpcError):
    """What ``context.abort`` raises in a real server: the client reads code and details."""

    def __init__(self, code: grpc.StatusCode, details: str) -> None:
        super().__init__(details)
        self._code, self._details = code, details

    def code(self) -> grpc.StatusCode:
        return self._code

    def details(self) -> str:
        return self._details


class _Context:
    def abort(self, code: grpc.StatusCode, details: str) -> None:
        raise _Refused(code, details)


class _DirectStub:
    """The servicer's methods with a stub's call signature (``request, timeout=``)."""

    def __init__(self, servicer: DecodeOnceServicer) -> None:
        self._servicer = servicer

    def __getattr__(self, method: str) -> Any:
        def call(request: Any, timeout: float | None = None) -> Any:
            del timeout
            return getattr(self._servicer, method)(request, _Context())

        return call


class InProcessPack(PolicyPackProcess):
    """The pack's policies judged in this process; use like :class:`PolicyPackProcess`.

    ``policies`` defaults to every policy ``policy/__main__.py`` serves, in its order (a test
    of one rule may pass just that rule); ``config`` is a ``--policy-pack-config``.
    """

    def __init__(
        self, *, config: Mapping[str, Any] | None = None, policies: list[Policy] | None = None
    ) -> None:
        super().__init__(POLICY_DIR, config=config)
        served = served_pack()
        self._policies = list(policies) if policies is not None else all_policies()
        self._servicer = DecodeOnceServicer(
            served["name"],
            manifest_version(),
            self._policies,
            served["enforcement_level"],
            None,
            served["description"],
        )
        self._registered: dict[str, Any] = {}
        self._notes: dict[str, Any] = {}

    def start(self) -> None:
        """Configure the pack as the client configures a started one."""
        self._stub = _DirectStub(self._servicer)  # pyright: ignore[reportAttributeAccessIssue]
        self._configure()

    def close(self) -> None:
        self._stub = None

    def analyze(self, resources: Iterable[Any], *, outputs: bool = False) -> list[PolicyViolation]:
        """Every resource policy on each resource, then every stack policy on the stack (its
        ``outputs`` when ``outputs`` is set, else its inputs), as Analyze and AnalyzeStack do."""
        if self._stub is None:
            self.start()
        resources = list(resources)
        by_urn = {r.urn: r for r in resources}
        found: list[PolicyViolation] = []
        with self._own_exemptions():
            for resource in resources:
                found += self._analyze_resource(resource, by_urn)
            found += self._analyze_stack(resources, by_urn, outputs)
        return found

    # one call each

    def _stack_tags(self) -> Mapping[str, str]:
        """The tags ConfigureStack gave the servicer (none from this client)."""
        return self._servicer._PolicyAnalyzerServicer__stack_tags  # pyright: ignore[reportAttributeAccessIssue]

    def _judging(self, kind: type) -> Iterator[tuple[Any, EnforcementLevel]]:
        """The policies of ``kind`` that run, each with the level it reports at."""
        for policy in self._policies:
            level = self._servicer._get_enforcement_level(policy)  # pyright: ignore[reportPrivateUsage]
            if level == EnforcementLevel.DISABLED or not isinstance(policy, kind):
                continue
            if isinstance(policy, ResourceValidationPolicy) and not policy.has_validation():
                continue  # reported as not applicable, never as a violation
            if level == EnforcementLevel.REMEDIATE:  # validated and reported as mandatory
                level = EnforcementLevel.MANDATORY
            yield policy, level

    def _run(self, response: Any, policy: Any, level: EnforcementLevel, args: Any) -> None:
        """One policy's validation through the servicer's own runner: its report wording,
        the advisory note for an unknown value, async validations, not-applicable."""
        report = self._servicer._create_report_violation(  # pyright: ignore[reportPrivateUsage]
            response, policy.name, policy.description, level, policy.severity
        )
        self._servicer._run(response, policy, args, report)  # pyright: ignore[reportPrivateUsage]

    def _config(self, policy: Policy) -> Any:
        return self._servicer._get_policy_config(policy.name)  # pyright: ignore[reportPrivateUsage]

    def _analyze_resource(self, resource: Any, by_urn: Mapping[str, Any]) -> list[PolicyViolation]:
        response = proto.AnalyzeResponse()
        props = decode(_struct(resource.inputs))
        opts, provider = self._options_and_provider(resource, by_urn)
        for policy, level in self._judging(ResourceValidationPolicy):
            args = ResourceValidationArgs(
                resource.type,
                props,
                resource.urn,
                resource.name,
                opts,
                provider,
                self._config(policy),
                self._stack_tags(),
            )
            self._run(response, policy, level, args)
        return self._convert(response, "resource", resource.urn)

    def _analyze_stack(
        self, records: Sequence[Any], by_urn: Mapping[str, Any], outputs: bool
    ) -> list[PolicyViolation]:
        response = proto.AnalyzeResponse()
        resources = self._stack_resources(records, by_urn, outputs=outputs)
        for policy, level in self._judging(StackValidationPolicy):
            args = StackValidationArgs(resources, self._config(policy), self._stack_tags())
            self._run(response, policy, level, args)
        return self._convert(response, "stack", None)

    def _options_and_provider(self, record: Any, by_urn: Mapping[str, Any]) -> tuple[Any, Any]:
        """The record's resource options and provider resource, marshalled by the client as it
        sends them and read back by the servicer's own code (``PolicyResourceOptions``,
        ``PolicyProviderResource`` with the SDK's unknown-checking props)."""
        request = analyzer_pb2.AnalyzeRequest(options=_options(record))
        provider = _provider(record, by_urn)
        if provider is not None:
            request.provider.CopyFrom(provider)
        servicer = self._servicer
        return (
            servicer._get_resource_options(request),  # pyright: ignore[reportPrivateUsage]
            servicer._get_provider_resource(request),  # pyright: ignore[reportPrivateUsage]
        )

    def _stack_resources(
        self, records: Sequence[Any], by_urn: Mapping[str, Any], *, outputs: bool
    ) -> list[PolicyResource]:
        """The stack as a stack policy reads it: each record's outputs (or inputs), with parents,
        dependencies and property dependencies linked to resources of the stack (others dropped,
        as the servicer drops URNs its request does not hold; empty ones the client never
        sends)."""
        resources = [
            PolicyResource(
                record.type,
                decode(_struct(record.outputs if outputs else record.inputs)),
                record.urn,
                record.name,
                *self._options_and_provider(record, by_urn),
                None,
                [],
                {},
            )
            for record in records
        ]
        linked = {resource.urn: resource for resource in resources}
        for record, resource in zip(records, resources, strict=True):
            resource.parent = linked.get(record.parent or "")
            deps = record.dependencies or ()
            resource.dependencies.extend(linked[d] for d in deps if d in linked)
            for key, urns in (getattr(record, "property_dependencies", None) or {}).items():
                if urns:
                    resource.property_dependencies[key] = [linked[u] for u in urns if u in linked]
        return resources

    @contextmanager
    def _own_exemptions(self) -> Iterator[None]:
        """This pack's exemption hand-over in ``guardrails.exemptions`` while it judges (each
        analyzer process has its own), the caller's back afterwards."""
        shared = (exemptions._REGISTERED, exemptions._NOTES)  # pyright: ignore[reportPrivateUsage]
        outside = [dict(state) for state in shared]
        for state, own in zip(shared, (self._registered, self._notes), strict=True):
            state.clear()
            state.update(own)
        try:
            yield
        finally:
            self._registered, self._notes = (dict(state) for state in shared)
            for state, saved in zip(shared, outside, strict=True):
                state.clear()
                state.update(saved)
