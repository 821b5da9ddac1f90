"""The pack's analyzer servicer: pulumi_policy's, decoding each request once instead of per policy.

pulumi_policy 1.21's servicer decodes a resource's properties (protobuf Struct -> dict ->
unknown-checking proxy) again for every policy: ``Analyze`` once per resource policy for each
resource, ``AnalyzeStack`` the whole stack once per stack policy. With this pack's 7 resource
and 9 stack policies that decoding, not the rules, was most of the pack's cost (see
docs/benchmarks.md, "Policy pack cost"). :class:`DecodeOnceServicer` runs the same loops in
the same order with the same diagnostics, but decodes each request once and hands every policy
the same props (``Analyze``) or the same list of resources (``AnalyzeStack``), so stack rules
can also share what they derive from that list (``reachability.Model.of_stack``).

What that sharing assumes, and this pack keeps: a rule never writes to ``props`` or to the
resource list. The SDK's private servicer is subclassed, so ``policy/requirements.txt`` pins
pulumi-policy and ``tests/policy/test_analyzer.py`` compares this servicer's replies with the
SDK's own on the corpus.
"""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Callable
from inspect import isawaitable
from pathlib import Path
from typing import Any, cast

import grpc
import yaml
from google.protobuf import json_format, struct_pb2
from pulumi.runtime import proto
from pulumi_policy import (
    EnforcementLevel,
    Policy,
    PolicyPack,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)
from pulumi_policy import policy as sdk
from pulumi_policy.policy import (
    _NotApplicableError,  # pyright: ignore[reportPrivateUsage]
    _PolicyAnalyzerServicer,  # pyright: ignore[reportPrivateUsage]
)
from pulumi_policy.proxy import UnknownValueError

from .reachability import Model
from .rules import TypedResourcePolicy
from .values import readable_struct


def decode(struct: Any) -> Any:
    """A request's properties as policies read them: what the SDK builds per policy, whose
    unknown-checking proxy here also raises on a ``[secret]`` (``values.readable_struct``)."""
    return readable_struct(struct)


class _Once:
    """A value computed on first use (the SDK decodes only for a policy that runs)."""

    def __init__(self, compute: Callable[[], Any]) -> None:
        self._compute: Callable[[], Any] | None = compute
        self._value: Any = None

    def __call__(self) -> Any:
        if self._compute is not None:
            self._value = self._compute()
            self._compute = None
        return self._value


class DecodeOnceServicer(_PolicyAnalyzerServicer):
    """pulumi_policy's analyzer servicer with ``Analyze`` and ``AnalyzeStack`` decoding once.

    Everything else (configuration, enforcement levels, violation reports, remediation) is the
    SDK's own; the two methods below follow the SDK's line by line except where they decode.
    """

    def _policies(self) -> list[Policy]:
        return self._PolicyAnalyzerServicer__policies  # pyright: ignore[reportAttributeAccessIssue]

    def _unknown_diagnostic(self, policy: Policy, error: UnknownValueError) -> Any:
        name = self._PolicyAnalyzerServicer__policy_pack_name  # pyright: ignore[reportAttributeAccessIssue]
        version = self._PolicyAnalyzerServicer__policy_pack_version  # pyright: ignore[reportAttributeAccessIssue]
        return proto.AnalyzeDiagnostic(
            policyName=policy.name,
            policyPackName=name,
            policyPackVersion=version,
            message=(
                f"can't run policy '{policy.name}' from policy pack '{name}@v{version}' during "
                f"preview: {error.message}"
            ),
            urn="",
            description=policy.description,
            enforcementLevel=self._map_enforcement_level(EnforcementLevel.ADVISORY),
        )

    def _run(
        self,
        response: Any,
        policy: ResourceValidationPolicy | StackValidationPolicy,
        args: Any,
        report: Any,
    ) -> None:
        """Run one policy's validation as the SDK does: await a coroutine, turn an unknown
        value into the advisory "can't run policy during preview", record not-applicable."""
        try:
            result = policy.validate(args, report)
            if isawaitable(result):
                loop = asyncio.new_event_loop()
                task = asyncio.Task(cast(Any, result), loop=loop)
                loop.run_until_complete(task)
                loop.close()
        except UnknownValueError as error:
            response.diagnostics.append(self._unknown_diagnostic(policy, error))
        except _NotApplicableError as error:
            response.not_applicable.append(
                proto.PolicyNotApplicable(policy_name=policy.name, reason=error.reason or "")
            )

    def Configure(self, request: Any, context: Any) -> Any:  # noqa: N802 (gRPC method name)
        """The SDK's Configure, after refusing what names nothing of this pack (see
        `config_problems`): the Pulumi CLI checks each policy's config against its schema but
        lets an unknown policy or key through (its schema conversion keeps only ``properties``
        and ``required``), so a typo would silently keep the default."""
        problems = config_problems(self._policies(), request.policyConfig)
        if problems:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "; ".join(problems))
        return super().Configure(request, context)

    def Analyze(self, request: Any, _context: Any) -> Any:  # noqa: N802 (gRPC method name)
        self._configure_runtime_settings()
        response = proto.AnalyzeResponse()
        props = _Once(lambda: decode(request.properties))
        opts = _Once(lambda: self._get_resource_options(request))
        provider = _Once(lambda: self._get_provider_resource(request))
        stack_tags = self._PolicyAnalyzerServicer__stack_tags  # pyright: ignore[reportAttributeAccessIssue]
        for policy in self._policies():
            level = self._get_enforcement_level(policy)
            if level == EnforcementLevel.DISABLED or not isinstance(
                policy, ResourceValidationPolicy
            ):
                continue
            if isinstance(policy, TypedResourcePolicy) and request.type not in (
                policy.resource_types
            ):
                continue  # its validate would return at once, reporting nothing
            if not policy.has_validation():
                response.not_applicable.append(
                    proto.PolicyNotApplicable(
                        policy_name=policy.name, reason="Policy does not implement validate"
                    )
                )
                continue
            if level == EnforcementLevel.REMEDIATE:
                level = EnforcementLevel.MANDATORY
            report = self._create_report_violation(
                response, policy.name, policy.description, level, policy.severity
            )
            args = ResourceValidationArgs(
                request.type,
                props(),
                request.urn,
                request.name,
                opts(),
                provider(),
                self._get_policy_config(policy.name),
                stack_tags,
            )
            self._run(response, policy, args, report)
        return response

    def AnalyzeStack(self, request: Any, _context: Any) -> Any:  # noqa: N802 (gRPC method name)
        # The stack's decoded properties and the rules' indexes are many small objects that
        # live for this call only and hold no cycles: the cyclic collector would walk them
        # again and again while they are built (a tenth of the call on a large stack) to free
        # nothing that reference counting does not free when the call returns.
        collecting = gc.isenabled()
        gc.disable()
        try:
            return self._analyze_stack(request)
        finally:
            Model.release()
            if collecting:
                gc.enable()

    def _analyze_stack(self, request: Any) -> Any:
        self._configure_runtime_settings()
        response = proto.AnalyzeResponse()
        resources = _Once(lambda: self._stack_resources(request))
        stack_tags = self._PolicyAnalyzerServicer__stack_tags  # pyright: ignore[reportAttributeAccessIssue]
        for policy in self._policies():
            level = self._get_enforcement_level(policy)
            if level == EnforcementLevel.DISABLED or not isinstance(policy, StackValidationPolicy):
                continue
            if level == EnforcementLevel.REMEDIATE:
                level = EnforcementLevel.MANDATORY
            report = self._create_report_violation(
                response, policy.name, policy.description, level, policy.severity
            )
            args = StackValidationArgs(
                resources(), self._get_policy_config(policy.name), stack_tags
            )
            self._run(response, policy, args, report)
        return response

    def _stack_resources(self, request: Any) -> list[sdk.PolicyResource]:
        """The stack's resources with parents and dependencies linked (URNs the request does
        not hold are dropped, as the SDK does)."""
        by_urn: dict[str, sdk.PolicyResource] = {}
        resources: list[sdk.PolicyResource] = []
        for item in request.resources:
            resource = _LazyPropsResource(
                item.type,
                item.properties,
                item.urn,
                item.name,
                self._get_resource_options(item),
                self._get_provider_resource(item),
                None,
                [],
                {},
            )
            resources.append(resource)
            by_urn[resource.urn] = resource
        for item, resource in zip(request.resources, resources, strict=True):
            if item.parent in by_urn:
                resource.parent = by_urn[item.parent]
            resource.dependencies.extend(by_urn[d] for d in item.dependencies if d in by_urn)
            for key, deps in item.propertyDependencies.items():
                resource.property_dependencies[key] = [by_urn[d] for d in deps.urns if d in by_urn]
        return resources


class _LazyPropsResource(sdk.PolicyResource):
    """The SDK's stack resource, its ``props`` decoded from the request's ``Struct`` on first
    read: stack rules read the types they judge (``reachability.Model``), and a large stack is
    mostly other types."""

    _struct: Any = None
    _decoded: Any = None

    @property
    def props(self) -> Any:  # pyright: ignore[reportIncompatibleVariableOverride]
        if self._struct is not None:
            self._decoded, self._struct = decode(self._struct), None
        return self._decoded

    @props.setter
    def props(self, value: Any) -> None:
        if isinstance(value, struct_pb2.Struct):
            self._struct = value
        else:
            self._decoded, self._struct = value, None


MANIFEST = Path(__file__).resolve().parents[1] / "PulumiPolicy.yaml"


def manifest_version(manifest: Path = MANIFEST) -> str:
    """The pack's version as ``PulumiPolicy.yaml`` states it (what the CLI publishes)."""
    version = (yaml.safe_load(manifest.read_text(encoding="utf-8")) or {}).get("version")
    if not version:
        raise ValueError(f"{manifest}: no version")
    return str(version)


def config_problems(policies: list[Policy], config: Any) -> list[str]:
    """What a ``Configure`` request names that this pack does not have, worded as the CLI
    words schema errors (``<policy>: <problem>``): a policy the pack does not have, a key
    outside a policy's schema, or config keys under ``all`` (which sets only levels)."""
    known = {p.name: p for p in policies}
    problems: list[str] = []
    for name in sorted(config):
        keys = sorted(json_format.MessageToDict(config[name].properties))
        if name == "all":
            problems += [f"all: {key}: 'all' sets only enforcementLevel" for key in keys]
            continue
        policy = known.get(name)
        if policy is None:
            problems.append(f"{name}: no such policy in this pack (see GetAnalyzerInfo)")
            continue
        schema = policy.config_schema.properties if policy.config_schema else {}
        problems += [
            f"{name}: Additional property {key} is not allowed" for key in keys if key not in schema
        ]
    return problems


def serve(**pack: Any) -> None:
    """``PolicyPack(**pack)`` served by :class:`DecodeOnceServicer` (blocks, as PolicyPack
    does). PolicyPack builds its servicer from the module's global name, hence the swap; it
    also hands the servicer a fixed "0.0.1" for Python packs, so the swap passes the manifest's
    version instead, which the pack's own diagnostics (``<pack>@v<version>``) then name."""
    version = manifest_version()

    def servicer(name: str, _sdk_version: str, *rest: Any) -> DecodeOnceServicer:
        return DecodeOnceServicer(name, version, *rest)

    sdk._PolicyAnalyzerServicer = servicer  # pyright: ignore[reportPrivateUsage, reportAttributeAccessIssue]
    PolicyPack(**pack)
