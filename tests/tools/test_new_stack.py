"""A stack of your own: `make new-stack` writes a stack file that previews clean for any stack
name Pulumi accepts, and every name derived from the stack name is valid and distinct."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ecs_inference.contracts.aws_limits import COGNITO_DOMAIN_RESERVED_WORDS
from ecs_inference.endpoint.decisions import default_domain_prefix
from ecs_inference.endpoint.input import COGNITO_PREFIX_PATTERN
from ecs_inference.names import derived_name, dns_label
from ecs_inference.operations.dashboard import DASHBOARD_NAME, dashboard_name
from ecs_inference.operations.rollback import RULE_NAME, deployment_rollback_rule
from tools import new_stack
from tools.preview import EXIT_OK, render_text, run_preview

#: pulumi/pulumi's validateStackName: 1-100 of letters, digits, '-', '_' and '.'.
STACK_NAMES = st.text(st.sampled_from("abcxyzABCXYZ0189-_."), min_size=1, max_size=100)
#: Names valid for Pulumi that no reference stack's derived names would survive unchanged.
AWKWARD = ["v_badtype", "Dev.Staging", "aws-cognito", "9" * 100]


def _valid_prefix(prefix: str) -> bool:
    return bool(COGNITO_PREFIX_PATTERN.match(prefix)) and not any(
        word in prefix for word in COGNITO_DOMAIN_RESERVED_WORDS
    )


@given(STACK_NAMES)
def test_every_pulumi_stack_name_gives_valid_names(stack: str) -> None:
    assert _valid_prefix(default_domain_prefix("ecs-inference", stack))
    assert DASHBOARD_NAME.match(dashboard_name(stack))
    rule = deployment_rollback_rule(stack, "arn:aws:ecs:us-east-1:123456789012:cluster/c")
    assert RULE_NAME.match(rule["Name"])
    assert re.fullmatch(r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?", dns_label(stack))


@given(STACK_NAMES, STACK_NAMES)
def test_different_stacks_get_different_names(one: str, other: str) -> None:
    if one != other:
        assert default_domain_prefix("ecs-inference", one) != default_domain_prefix(
            "ecs-inference", other
        )
        assert dashboard_name(one) != dashboard_name(other)


def test_a_name_that_needs_no_change_is_kept() -> None:
    assert default_domain_prefix("ecs-inference", "dev") == "ecs-inference-dev"
    assert dashboard_name("prod") == "ecs-inference-prod"
    assert derived_name("v_badtype", invalid="[^a-z0-9-]", max_length=63).startswith("v-badtype-")
    assert (
        derived_name("x" * 70, invalid="[^x]", max_length=63)
        == "x" * 54 + "-" + (derived_name("x" * 70, invalid="[^x]", max_length=63)[-8:])
    )


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("a b", "Pulumi stack names are 1-100"),
        ("x" * 101, "Pulumi stack names are 1-100"),
        ("acme//dev", "a stack is `stack`, `org/stack`"),
    ],
)
def test_names_pulumi_refuses_are_refused(tmp_path: Path, name: str, message: str) -> None:
    with pytest.raises(new_stack.NewStackError, match=re.escape(message)):
        new_stack.write(name, "eu-west-1", directory=tmp_path)
    assert not list(tmp_path.iterdir())


def test_a_qualified_name_writes_the_stack_part_and_never_overwrites(tmp_path: Path) -> None:
    path = new_stack.write("acme/ecs-inference/staging", "eu-west-1", directory=tmp_path)
    assert path.name == "Pulumi.staging.yaml"
    text = path.read_text()
    assert "aws:region: eu-west-1" in text and ".dkr.ecr.eu-west-1." in text
    assert "us-east-1" not in text
    with pytest.raises(new_stack.NewStackError, match="exists"):
        new_stack.write("staging", "eu-west-1", directory=tmp_path)
    with pytest.raises(new_stack.NewStackError, match="not an AWS region"):
        new_stack.write("other", "Europe", directory=tmp_path)


@pytest.mark.parametrize("stack", AWKWARD)
def test_a_new_stack_with_an_awkward_name_previews_clean(tmp_path: Path, stack: str) -> None:
    path = new_stack.write(stack, "us-west-2", directory=tmp_path)
    result = run_preview(stack, stack_file=path, policy_pack=None)
    assert result.exit_code == EXIT_OK, render_text(result)
    token_url = result.outputs["oauthTokenUrl"]
    prefix = token_url.removeprefix("https://").split(".auth.")[0]
    assert _valid_prefix(prefix), token_url
