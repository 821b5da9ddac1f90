"""Security-group rule bodies (`ecs_inference.network.rules.PortRule`): one body, inline or
standalone, same meaning; the AWS-API egress every task and instance gets is one of them."""

from __future__ import annotations

import pulumi
import pytest

from ecs_inference.network.rules import ANY_IPV4, HTTPS_PORT, PortRule, aws_api_egress, aws_api_rule
from tools.recording import run_function


def test_a_rule_needs_exactly_one_peer_and_a_real_port():
    with pytest.raises(ValueError, match="CIDR or a security group"):
        PortRule(443, "both", cidr=ANY_IPV4, group="sg-0123456789abcdef0")
    with pytest.raises(ValueError, match="CIDR or a security group"):
        PortRule(443, "neither")
    with pytest.raises(ValueError, match="outside 1-65535"):
        PortRule(0, "no port", cidr=ANY_IPV4)


def test_inline_and_standalone_forms_say_the_same():
    https = aws_api_rule("HTTPS out")
    gateway = PortRule(4000, "the gateway", group="sg-0123456789abcdef0")
    inline = [https.inline_egress(), gateway.inline_egress()]
    assert (inline[0].from_port, inline[0].to_port, inline[0].cidr_blocks) == (
        HTTPS_PORT,
        HTTPS_PORT,
        [ANY_IPV4],
    )
    assert inline[1].security_groups == ["sg-0123456789abcdef0"] and inline[1].cidr_blocks is None
    # Tasks and instances that only call AWS get the same rule, with its default description.
    shared = aws_api_egress()
    assert (shared.from_port, shared.cidr_blocks) == (HTTPS_PORT, [ANY_IPV4])

    def program() -> None:
        parent = pulumi.ComponentResource("test:index:Parent", "p")
        https.standalone("out", security_group_id="sg-1", direction="egress", parent=parent)
        gateway.standalone("in", security_group_id="sg-1", direction="ingress", parent=parent)

    rec = run_function(program, stack="test")
    (out,) = rec.by_type("aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule")
    (into,) = rec.by_type("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule")
    assert out.inputs["cidrIpv4"] == ANY_IPV4 and "referencedSecurityGroupId" not in out.inputs
    assert into.inputs["referencedSecurityGroupId"] == "sg-0123456789abcdef0"
    for rule in (out, into):
        assert rule.inputs["ipProtocol"] == "tcp"
        assert rule.inputs["fromPort"] == rule.inputs["toPort"]
