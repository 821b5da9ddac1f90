"""What the analyzer client sends, observed from inside a pack that echoes its arguments.

A throwaway pack (written to tmp_path) reports, as violations, exactly what pulumi_policy handed
its rules: type, name, properties, options.parent, provider, and in the stack policy the parent,
dependencies and property dependencies it resolved. This checks the client against the
protocol the CLI speaks, independently of the real rules.
"""

from __future__ import annotations

import json
import textwrap

import pytest
from pulumi.runtime.rpc import UNKNOWN

from tests.policy.policy_stacks import Res
from tools.analyzer_client import PolicyPackError, PolicyPackProcess

ECHO_PACK = textwrap.dedent(
    '''
    """Echo pack for tests."""
    import json

    from pulumi_policy import (
        EnforcementLevel, PolicyConfigSchema, PolicyPack, ResourceValidationPolicy,
        StackValidationPolicy,
    )


    def echo_resource(args, report):
        if args.resource_type == "test:index:Unknown":
            report(str(args.props["value"]))
            return
        report(json.dumps({
            "type": args.resource_type,
            "name": args.name,
            "props": {k: args.props[k] for k in args.props},
            "parent": args.opts.parent,
            "provider": args.provider.resource_type if args.provider else None,
            "config": dict(args.get_config()),
        }, sort_keys=True, default=list))


    def echo_stack(args, report):
        for r in args.resources:
            if r.resource_type == "test:index:Unknown":
                continue
            report(json.dumps({
                "name": r.name,
                "parent": r.parent.name if r.parent else None,
                "deps": [d.name for d in r.dependencies],
                "propDeps": {k: [d.name for d in v] for k, v in r.property_dependencies.items()},
            }, sort_keys=True), r.urn)


    PolicyPack(
        name="echo",
        enforcement_level=EnforcementLevel.MANDATORY,
        policies=[
            ResourceValidationPolicy(
                name="echo-resource", description="echo", validate=echo_resource,
                config_schema=PolicyConfigSchema(
                    properties={"limit": {"type": "integer", "default": 3}}
                ),
            ),
            StackValidationPolicy(
                name="echo-stack", description="echo", validate=echo_stack,
                enforcement_level=EnforcementLevel.ADVISORY,
            ),
        ],
    )
    '''
)


@pytest.fixture(scope="module")
def echo_dir(tmp_path_factory):
    pack_dir = tmp_path_factory.mktemp("echo-pack")
    (pack_dir / "__main__.py").write_text(ECHO_PACK)
    return pack_dir


def _urn(type_: str, name: str) -> str:
    return f"urn:pulumi:dev::p::{type_}::{name}"


PROVIDER = Res(
    type="pulumi:providers:aws",
    name="east",
    urn=_urn("pulumi:providers:aws", "east"),
    custom=True,
    inputs={"region": "us-east-1"},
)
COMPONENT = Res(
    type="ecs-inference:compute:Pool",
    name="pool",
    urn=_urn("ecs-inference:compute:Pool", "pool"),
    custom=False,
    inputs={},
)
GROUP = Res(
    type="aws:autoscaling/group:Group",
    name="asg",
    urn=_urn("aws:autoscaling/group:Group", "asg"),
    custom=True,
    inputs={"maxSize": 4.0, "tags": ("a", "b")},
    parent=COMPONENT.urn,
    provider=f"{PROVIDER.urn}::04da6b54-80e4-46f7-96ec-b56ff0331ba9",
)
CP = Res(
    type="aws:ecs/capacityProvider:CapacityProvider",
    name="cp",
    urn=_urn("aws:ecs/capacityProvider:CapacityProvider", "cp"),
    custom=True,
    inputs={"autoScalingGroupProvider": {"autoScalingGroupArn": UNKNOWN}},
    parent=COMPONENT.urn,
    dependencies=(GROUP.urn,),
    property_dependencies={"autoScalingGroupProvider": (GROUP.urn,)},
)


def test_analyze_sends_what_the_engine_sends(echo_dir):
    with PolicyPackProcess(echo_dir) as pack:
        info = pack.info()
        assert info["name"] == "echo" and info["supportsConfig"]
        assert {p["name"]: p["type"] for p in info["policies"]} == {
            "echo-resource": "resource",
            "echo-stack": "stack",
        }
        violations = pack.analyze([PROVIDER, COMPONENT, GROUP, CP])
    resource = [
        json.loads(v.message.split("\n", 1)[1]) for v in violations if v.stage == "resource"
    ]
    # Every registration is analyzed, components and providers included, in order.
    assert [r["name"] for r in resource] == ["east", "pool", "asg", "cp"]
    asg = resource[2]
    assert asg["props"] == {"maxSize": 4.0, "tags": ["a", "b"]}
    assert asg["parent"] == COMPONENT.urn
    assert asg["provider"] == "pulumi:providers:aws"
    assert asg["config"] == {"limit": 3}  # schema default filled in, as the CLI does
    assert resource[1]["provider"] is None
    stack = {
        json.loads(v.message.split("\n", 1)[1])["name"]: v for v in violations if v.stage == "stack"
    }
    cp = json.loads(stack["cp"].message.split("\n", 1)[1])
    assert cp == {
        "name": "cp",
        "parent": "pool",
        "deps": ["asg"],
        "propDeps": {"autoScalingGroupProvider": ["asg"]},
    }
    assert stack["cp"].urn == CP.urn and stack["cp"].enforcement_level == "advisory"
    assert {v.enforcement_level for v in violations if v.stage == "resource"} == {"mandatory"}


def test_unknown_sentinel_reaches_the_rule_as_unknown(echo_dir):
    unknown = Res(
        type="test:index:Unknown",
        name="u",
        urn=_urn("test:index:Unknown", "u"),
        custom=True,
        inputs={"value": UNKNOWN},
    )
    with PolicyPackProcess(echo_dir) as pack:
        (note,) = pack.analyze([unknown])
    assert note.enforcement_level == "advisory"
    assert "string value at .value can't be known during preview" in note.message


def test_config_level_override_reaches_the_pack(echo_dir):
    config = {"echo-resource": {"enforcementLevel": "disabled"}, "echo-stack": "mandatory"}
    with PolicyPackProcess(echo_dir, config=config) as pack:
        violations = pack.analyze([COMPONENT])
    assert [(v.policy_name, v.enforcement_level) for v in violations] == [
        ("echo-stack", "mandatory")
    ]


def test_a_pack_that_cannot_start_is_reported_with_its_stderr(tmp_path):
    (tmp_path / "__main__.py").write_text("raise SystemExit('broken pack: missing rules')\n")
    with pytest.raises(PolicyPackError, match="broken pack: missing rules"):
        PolicyPackProcess(tmp_path).start()
    with pytest.raises(PolicyPackError, match="not a Python policy pack"):
        PolicyPackProcess(tmp_path / "nowhere").start()
