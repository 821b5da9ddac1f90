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

from collections.abc import Callable, Iterable, Iterator
from typing import Any

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

Judge = Callable[[Any, Any], list[Any]]


@pytest.fixture(scope="module")
def configured() -> Iterator[PolicyPackProcess]:
    with PolicyPackProcess(POLICY_DIR, config=CONFIG) as process:
        yield process


def test_info_reports_levels_and_thresholds_after_config(configured):
    policies = {p["name"]: p for p in configured.info()["policies"]}
    idle = policies["alb-idle-timeout-for-streaming"]
    assert idle["enforcementLevel"] == "mandatory"
    assert idle["config"]["minIdleTimeoutSeconds"] == 1000
    assert policies["no-reachable-public-ip"]["enforcementLevel"] == "advisory"
    assert policies["fargate-task-size-on-grid"]["enforcementLevel"] == "mandatory"
    sg_rule = policies["no-internet-ingress-to-unauthenticated-target"]["config"]
    assert sg_rule["scope"] == "all" and 30000 in sg_rule["modelPorts"]
    assert configured.info()["version"] == "0.1.0"  # PulumiPolicy.yaml wins, as in the CLI


def test_configured_levels_and_thresholds_reach_the_diagnostics(configured):
    violations = configured.analyze(aws_baseline())
    # idle 900 s < 1000 s is now mandatory; rerank's 120 s grace is now below 300 s.
    assert found(violations, level="mandatory") == {("alb-idle-timeout-for-streaming", "alb")}
    assert found(violations, level="advisory") == {("health-check-grace-period", "rerank")}
    # Both are resource rules: Analyze reports them against the analyzed resource.
    assert {(v.policy_name, v.stage) for v in violations} == {
        ("alb-idle-timeout-for-streaming", "resource"),
        ("health-check-grace-period", "resource"),
    }


def test_remediate_is_reported_as_mandatory_and_resource_stage_names_the_resource():
    stack = aws_baseline().copy().set("rerank-td", memory="3000")
    config = {"fargate-task-size-on-grid": "remediate"}
    with PolicyPackProcess(POLICY_DIR, config=config) as process:
        violations = process.analyze(stack)
    grid = [v for v in violations if v.policy_name == "fargate-task-size-on-grid"]
    assert [(v.enforcement_level, v.stage, v.urn) for v in grid] == [
        ("mandatory", "resource", stack["rerank-td"].urn)
    ]
    assert grid[0].message.startswith(grid[0].description + "\n")


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
    with pytest.raises(Exception, match="no-such-rule: no such policy in this pack") as error:
        pack._stub.Configure(request, timeout=30)  # pyright: ignore[reportPrivateUsage]
    assert "INVALID_ARGUMENT" in repr(error.value) or "invalid" in str(error.value).lower()


# --- the harness gives what the protocol gives ---------------------------------------------------


def _one_change_stacks() -> Iterator[list[Any]]:
    for variants, baseline in ((AWS_VARIANTS, aws_baseline), (NATIVE_VARIANTS, native_baseline)):
        yield list(baseline())
        for change, _ in variants.values():
            stack = baseline().copy()
            change(stack)
            yield list(stack)


def _sample(step: int = 5, *, rule_tests: bool = True) -> Iterator[list[Any]]:
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


def _both(config: dict[str, Any] | None, stacks: Iterable[Any], judge: Judge) -> int:
    """Every stack through a fresh gRPC pack and a fresh harness, in the same order (one
    exemption hand-over each); returns how many violations were compared."""
    compared = 0
    remote, local = PolicyPackProcess(POLICY_DIR, config=config), InProcessPack(config=config)
    with remote, local:
        assert local.info() == remote.info()
        for stack in stacks:
            expected = judge(remote, stack)
            assert judge(local, stack) == expected, stack
            compared += len(expected)
    return compared


NOTES = "guardrail-notes"
EXEMPTING = {
    **CONFIG,
    "no-reachable-public-ip": {"exemptResources": ["rerank"]},
    "health-check-grace-period": "remediate",
    "target-type-ip-for-awsvpc": "disabled",
}


@pytest.mark.parametrize("config", [None, EXEMPTING], ids=["defaults", "configured"])
def test_the_harness_judges_as_the_protocol_does(config):
    assert _both(config, _sample(), lambda pack, records: pack.analyze(records)) > 300


def test_the_harness_judges_engine_views_as_the_protocol_does():
    # The engine's views carry what corpus records do not: outputs, options and providers.
    # Each view is built once and judged by both packs.
    stacks = [
        engine_stack(records, view) for records in _sample(25, rule_tests=False) for view in VIEWS
    ]
    assert _both(None, stacks, lambda pack, engine: pack.analyze_view(engine)) > 50


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
