"""Front doors that proxy: a public App Runner service or Lambda function URL whose environment
names an internal load balancer reaches the model behind it, so under ``scope: model-serving``
the route stays mandatory (in both the preview and the literal shape), while a web app that
proxies to nothing stays out of scope."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.policy.corpus import PATH, PIP, SG, Case, Ref, build, cases
from tests.policy.pack_harness import InProcessPack
from tests.policy.policy_stacks import found

SCOPED = {name: {"scope": "model-serving"} for name in (PATH, SG, PIP)}
CASES = {c.title: c for c in cases()}
PROXIES = [
    f"{p}-front-{kind}-proxy-to-internal-model"
    for p in ("aws", "native")
    for kind in ("app-runner", "function-url")
]


@pytest.fixture(scope="module")
def scoped_pack() -> Iterator[InProcessPack]:
    with InProcessPack(config=SCOPED) as process:
        yield process


@pytest.mark.parametrize("literal", [False, True], ids=["preview", "literal"])
@pytest.mark.parametrize("title", PROXIES)
def test_a_proxy_to_a_model_is_in_scope(scoped_pack, title, literal):
    case = CASES[title]
    violations = scoped_pack.analyze(build(case, literal=literal))
    assert found(violations, level="mandatory") == case.expect
    assert any("Service 'svc'" in v.message for v in violations), [v.message for v in violations]


def _outside(value: Any) -> Any:
    """``value`` with every reference to the load balancer replaced by an outside URL."""
    if isinstance(value, Ref):
        return "https://api.example.com" if value.name == "lb" else value
    if isinstance(value, dict):
        return {k: _outside(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_outside(v) for v in value]
    return value


@pytest.mark.parametrize("literal", [False, True], ids=["preview", "literal"])
@pytest.mark.parametrize("title", PROXIES)
def test_a_proxy_to_nothing_of_the_stack_is_out_of_scope(scoped_pack, title, literal):
    kept = [
        (type_, name, _outside(inputs))
        for type_, name, inputs in CASES[title].resources
        if name in {"fn", "url", "runner"}
    ]
    violations = scoped_pack.analyze(build(Case(title, set(), kept), literal=literal))
    assert found(violations, level="mandatory") == set()
    assert any("outside scope model-serving" in v.message for v in violations)
