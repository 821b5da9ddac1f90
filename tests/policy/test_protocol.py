"""The pack over the analyzer gRPC protocol, as the Pulumi CLI drives it, and the in-process
harness the rule tests use (``pack_harness``) held to it.

The rule tests judge in process; what only the protocol can show is here: GetAnalyzerInfo
after Configure, Analyze and AnalyzeStack diagnostics with their enforcement levels (remediate
reported as mandatory, an unknown value as an advisory note), and a config the pack's own
Configure refuses. Then a sample of stacks runs both ways, with default and non-default
config, from records as given and as the engine's views build them (outputs, options and
providers), and every violation must be the same, in the same order.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import grpc
import pytest
from pulumi.runtime.proto import analyzer_pb2

from tests.policy.conftest import POLICY_DIR
from tests.policy.corpus import build, cases
from tests.policy.corpus_seeds import seed_cases
from tests.policy.families import FAMILIES
from tests.policy.pack_harness import InProcessPack
from tests.policy.policy_stacks import UNKNOWN, aws_baseline, found, native_baseline
from tests.policy.test_config import CONFIG
from tests.policy.test_families import VARIANTS as FAMILY_VARIANTS
from tests.policy.test_families import variant_case
from tests.policy.test_rules_aws import VARIANTS as AWS_VARIANTS
from tests.policy.test_rules_native import VARIANTS as NATIVE_VARIANTS
from tools.analyzer_client import PolicyPackProcess
from tools.views import VIEWS, engine_stack

#: ``test_config.py``'s config, plus a scoped exemption that matches in the sample below (not in
#: the baseline), a stack rule at remediate and a disabled rule.
CONFIGURED = {
    **CONFIG,
    "no-reachable-public-ip": {"enforcementLevel": "advisory", "exemptResources": ["svc"]},
    "fargate-platform-version-for-large-tasks": "remediate",
    "target-type-ip-for-awsvpc": "disabled",
}


@pytest.fixture(scope="module")
def configured() -> Iterator[PolicyPackProcess]:
    with PolicyPackProcess(POLICY_DIR, config=CONFIGURED) as process:
        yield process


@pytest.fixture(scope="module")
def configured_local() -> Iterator[InProcessPack]:
    """The harness with the same config, fed the same stacks in the same order."""
    with InProcessPack(config=CONFIGURED) as harness:
        yield harness


def _judged(remote: PolicyPackProcess, local: InProcessPack, records: Any) -> list[Any]:
    """What the pack over gRPC finds, after requiring the harness to find the same."""
    expected = remote.analyze(records)
    assert local.analyze(records) == expected, [r.name for r in records][:4]
    return expected


def test_info_reports_levels_and_thresholds_after_config(configured, configured_local):
    policies = {p["name"]: p for p in configured.info()["policies"]}
    idle = policies["alb-idle-timeout-for-streaming"]
    assert idle["enforcementLevel"] == "mandatory"
    assert idle["config"]["minIdleTimeoutSeconds"] == 1000
    assert policies["no-reachable-public-ip"]["enforcementLevel"] == "advisory"
    assert policies["fargate-task-size-on-grid"]["enforcementLevel"] == "mandatory"
    sg_rule = policies["no-internet-ingress-to-unauthenticated-target"]["config"]
    assert sg_rule["scope"] == "model-serving" and 30000 in sg_rule["modelPorts"]
    assert configured.info()["version"] == "0.1.0"  # PulumiPolicy.yaml wins, as in the CLI
    assert configured_local.info() == configured.info()


def test_configured_levels_and_thresholds_reach_the_diagnostics(configured, configured_local):
    violations = _judged(configured, configured_local, aws_baseline())
    # idle 900 s < 1000 s is now mandatory; rerank's 120 s grace is now below 300 s.
    assert found(violations, level="mandatory") == {("alb-idle-timeout-for-streaming", "alb")}
    assert found(violations, level="advisory") == {("health-check-grace-period", "rerank")}
    # Both are resource rules: Analyze reports them against the analyzed resource.
    assert {(v.policy_name, v.stage) for v in violations} == {
        ("alb-idle-timeout-for-streaming", "resource"),
        ("health-check-grace-period", "resource"),
    }


def test_remediate_is_reported_as_mandatory(configured, configured_local):
    stack = aws_baseline().copy().set("rerank-td", cpu="8192", memory="16384")
    stack.set("rerank", platformVersion="1.3.0")
    violations = _judged(configured, configured_local, stack)
    platform = [
        v for v in violations if v.policy_name == "fargate-platform-version-for-large-tasks"
    ]
    # A stack rule: AnalyzeStack names the resource in the diagnostic itself.
    assert [(v.enforcement_level, v.stage, v.urn) for v in platform] == [
        ("mandatory", "stack", stack["rerank"].urn)
    ]
    assert platform[0].message.startswith(platform[0].description + "\n")


def test_an_unknown_value_arrives_as_an_advisory_note(pack):
    stack = aws_baseline().copy().set("rerank-td", containerDefinitions=UNKNOWN)
    violations = pack.analyze(stack)
    assert violations and {v.enforcement_level for v in violations} == {"advisory"}
    assert all("during preview" in v.message for v in violations), violations
    assert all("containerDefinitions can't be known" in v.message for v in violations)


def test_the_packs_configure_refuses_what_names_nothing_of_it(pack):
    # The client checks names before Configure; the pack checks them again for other drivers.
    request = analyzer_pb2.ConfigureAnalyzerRequest()
    request.policyConfig["no-such-rule"].enforcementLevel = analyzer_pb2.MANDATORY
    with pytest.raises(grpc.RpcError) as error:
        pack._stub.Configure(request, timeout=30)  # pyright: ignore[reportPrivateUsage]
    assert error.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "no-such-rule: no such policy in this pack" in error.value.details()


# --- the harness gives what the protocol gives ---------------------------------------------------


def _one_change_stacks() -> Iterator[list[Any]]:
    for variants, baseline in ((AWS_VARIANTS, aws_baseline), (NATIVE_VARIANTS, native_baseline)):
        yield list(baseline())
        for change, _ in variants.values():
            stack = baseline().copy()
            change(stack)
            yield list(stack)


def _sample(step: int = 10, *, rule_tests: bool = True) -> Iterator[list[Any]]:
    """The rule tests' stacks and the families' (with ``rule_tests``), and every ``step``-th
    corpus and seed case both ways."""
    if rule_tests:
        yield from _one_change_stacks()
        for native in (False, True):
            yield from (list(build(f(native))) for f in FAMILIES.values())
            yield from (list(build(variant_case(v, native))) for v in FAMILY_VARIANTS)
    for case in [*cases()[::step], *(s.case for s in seed_cases()[::step])]:
        for literal in (False, True):
            yield list(build(case, literal=literal))


def test_the_harness_judges_as_the_protocol_does(pack, local_pack):
    # Default config: no exemptions, so what else these session packs judged does not count.
    assert local_pack.info() == pack.info()
    assert sum(len(_judged(pack, local_pack, records)) for records in _sample()) > 200


def test_the_harness_judges_as_the_protocol_does_when_configured(configured, configured_local):
    assert sum(len(_judged(configured, configured_local, r)) for r in _sample()) > 200


def test_the_harness_judges_engine_views_as_the_protocol_does(pack, local_pack):
    # The engine's views carry what corpus records do not: outputs, options and providers.
    for records in _sample(25, rule_tests=False):
        for view in VIEWS:
            engine = engine_stack(records, view)
            assert local_pack.analyze_view(engine) == pack.analyze_view(engine), view
