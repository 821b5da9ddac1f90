"""Values unknown during preview: no crash, an advisory note, and no hidden violations.

pulumi_policy turns an ``UnknownValueError`` raised by a rule into an advisory diagnostic
("can't run policy ... during preview"). Stack rules judge every other resource first, so one
unknown does not hide a violation elsewhere; references (ARNs) resolve through property
dependencies without reading the unknown value.
"""

from __future__ import annotations

from tests.policy.policy_stacks import (
    LB,
    LISTENER,
    RERANKER,
    UNKNOWN,
    aws_baseline,
    container_json,
    forward,
    found,
)

NOTE = "can't be known during preview"


def _notes(violations):
    return [v for v in violations if NOTE in v.message]


def test_unknown_container_definitions_give_notes_not_violations(local_pack):
    stack = aws_baseline().copy().set("llm-td", containerDefinitions=UNKNOWN)
    stack.set("rerank-td", containerDefinitions=UNKNOWN)
    violations = local_pack.analyze(stack)
    assert violations, "the unknown values must be reported as preview notes"
    assert all(v.enforcement_level == "advisory" for v in violations)
    assert violations == _notes(violations)
    assert {v.policy_name for v in violations} >= {
        "no-accelerators-or-host-features-on-fargate",
        "no-plaintext-secrets-in-environment",
        "gpu-deploy-headroom",
    }


def test_unknown_arns_resolve_through_property_dependencies(local_pack):
    # taskDefinition is UNKNOWN in the baseline; the GPU-on-Fargate correlation must still work.
    stack = aws_baseline().copy().set("rerank-td", requiresCompatibilities=["EC2"])
    stack.set(
        "rerank-td",
        containerDefinitions=container_json(
            {**RERANKER, "resourceRequirements": [{"type": "GPU", "value": "1"}]}
        ),
    )
    violations = local_pack.analyze(stack)
    assert found(violations) == {("no-gpu-task-on-fargate-service", "rerank")}
    assert stack["rerank"].inputs["taskDefinition"] == UNKNOWN


def test_one_unknown_does_not_hide_other_stack_violations(local_pack):
    # ``internal`` set from another resource's output (a dependency is recorded): truly unknown.
    stack = aws_baseline().copy().set("alb", internal=UNKNOWN)
    deps = {**stack["alb"].property_dependencies, "internal": (stack["alb-sg"].urn,)}
    stack.replace("alb", property_dependencies=deps)
    stack.add(LB, "public-alb", {"internal": False, "idleTimeout": 900.0})
    stack.add(
        LISTENER,
        "public-http",
        {"loadBalancerArn": UNKNOWN, "port": 80.0, "defaultActions": [forward(1.0)]},
        refs={"loadBalancerArn": "public-alb"},
    )
    violations = local_pack.analyze(stack)
    mandatory = found(violations, level="mandatory")
    assert mandatory == {("no-unauthenticated-internet-path", "public-http")}
    notes = _notes(violations)
    assert [v.policy_name for v in notes] == ["no-unauthenticated-internet-path"]
    assert ".internal" in notes[0].message


def test_unknown_cidrs_and_numbers_do_not_crash(local_pack):
    stack = aws_baseline().copy()
    stack.set(
        "alb-sg",
        ingress=[{"protocol": "tcp", "fromPort": 443.0, "toPort": 443.0, "cidrBlocks": UNKNOWN}],
    )
    stack.set("alb", idleTimeout=UNKNOWN)
    stack.set("rerank-td", cpu=UNKNOWN)
    violations = local_pack.analyze(stack)
    assert violations == _notes(violations)
    assert {v.policy_name for v in violations} == {
        "no-internet-ingress-to-unauthenticated-target",
        "alb-idle-timeout-for-streaming",
        "deregistration-delay-covers-streams",
        "fargate-task-size-on-grid",
    }
