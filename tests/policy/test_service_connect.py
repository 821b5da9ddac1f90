"""Service Connect in the exposure rules (issue 17 item 2), judged in process.

A Service Connect server is reachable by every client service of its namespace, past any load
balancer and its authentication. So what reaches a client from the internet without
authentication reaches the servers too: the finding names both, and under ``scope:
model-serving`` a plain client (a gateway image on port 4000) in front of a model server is in
scope because of the server. A client the internet cannot reach is no exposure, and a client
in another namespace reaches nothing. Corpus stacks (``corpus.service_connect_case``) are the
baselines; each test changes one thing.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.policy.corpus import PATH, PIP, SG, build, service_connect_case
from tests.policy.pack_harness import InProcessPack
from tests.policy.policy_stacks import found

SCOPED = {name: {"scope": "model-serving"} for name in (PATH, SG, PIP)}
PROVIDERS = pytest.mark.parametrize("native", [False, True], ids=["aws", "native"])
LITERAL = pytest.mark.parametrize("literal", [False, True], ids=["preview", "literal"])


@pytest.fixture(scope="module")
def scoped_pack() -> Iterator[InProcessPack]:
    """The pack with the three exposure rules at ``scope: model-serving``."""
    with InProcessPack(config=SCOPED) as process:
        yield process


def _messages(violations, policy: str) -> str:
    return " ".join(v.message for v in violations if v.policy_name == policy)


@PROVIDERS
@LITERAL
def test_public_client_names_the_server_it_reaches(local_pack, native, literal):
    case = service_connect_case(
        "public-client", native, client_public_ip=True, client_open=True, expect=set()
    )
    violations = local_pack.analyze(build(case, literal=literal))
    assert found(violations, level="mandatory") == {(PIP, "gateway"), (SG, "gw-sg")}
    for policy in (PIP, SG):
        text = _messages(violations, policy)
        assert "Service Connect" in text and "'gateway'" in text, text
        assert "llm.internal:8000" in text and "Service 'model'" in text, text


@PROVIDERS
@LITERAL
def test_open_route_to_client_extends_to_the_server(local_pack, native, literal):
    case = service_connect_case("open-alb", native, front="open", expect=set())
    violations = local_pack.analyze(build(case, literal=literal))
    assert found(violations, level="mandatory") == {(PATH, "https"), (SG, "alb-sg")}
    text = _messages(violations, PATH)
    assert "Service 'gateway'" in text and "Service 'model'" in text, text
    assert "Service Connect llm.internal:8000" in text, text


@PROVIDERS
@LITERAL
@pytest.mark.parametrize(
    ("change", "expect"),
    [
        ({}, {(PIP, "gateway"), (SG, "gw-sg")}),
        ({"client_namespace": None}, {(PIP, "gateway"), (SG, "gw-sg")}),  # cluster default
        ({"server_namespace": "other"}, set()),  # reaches nothing that serves a model
        ({"client_public_ip": False, "client_open": False}, set()),  # namespace-only client
    ],
    ids=["same-namespace", "cluster-default", "other-namespace", "private-client"],
)
def test_model_serving_scope_follows_service_connect(scoped_pack, native, literal, change, expect):
    settings = {"client_public_ip": True, "client_open": True, **change}
    case = service_connect_case("scoped", native, expect=set(), **settings)
    violations = scoped_pack.analyze(build(case, literal=literal))
    assert found(violations, level="mandatory") == expect
    if not expect and settings["client_public_ip"]:
        notes = _messages(violations, "guardrail-notes")
        assert "outside scope model-serving" in notes, notes


@PROVIDERS
@pytest.mark.parametrize(
    ("change", "expect"),
    [
        ({}, {(PATH, "https"), (SG, "alb-sg")}),
        ({"server_namespace": "other"}, set()),
        ({"front": "jwt"}, set()),
    ],
    ids=["same-namespace", "other-namespace", "authenticated"],
)
def test_model_serving_scope_on_a_route_to_a_client(scoped_pack, native, change, expect):
    settings = {"front": "open", **change}
    case = service_connect_case("scoped-route", native, expect=set(), **settings)
    assert found(scoped_pack.analyze(build(case)), level="mandatory") == expect


@PROVIDERS
def test_unknown_namespace_of_a_reachable_client_cannot_be_verified(local_pack, native):
    """A namespace unknown at preview with no recorded dependency: the client's own exposure
    stands, and what it reaches through Service Connect is a "cannot verify" note."""
    case = service_connect_case(
        "unknown-ns", native, client_public_ip=True, client_open=True, expect=set()
    )
    stack = build(case)
    deps = dict(stack["gateway"].property_dependencies)
    deps.pop("serviceConnectConfiguration")
    stack.replace("gateway", property_dependencies=deps)
    violations = local_pack.analyze(stack)
    assert found(violations, level="mandatory") == {(PIP, "gateway"), (SG, "gw-sg")}
    notes = _messages(violations, "guardrail-notes")
    assert "cannot verify which Service Connect servers it reaches" in notes, notes
    assert "serviceConnectConfiguration" in notes, notes
