"""What a program's components read from what it already gave them: an endpoint's routes from
the models it routes (`routes`: the ports, longest requests and smoke hook a stack's plan
derives from the same models), a service's ALB group and load balancer from its router."""

from __future__ import annotations

from types import SimpleNamespace

from ecs_inference.endpoint.decisions import stack_routes
from ecs_inference.models.decisions import routes
from ecs_inference.services.base import ServiceWiring
from tests.operations.test_engine_operations import engines_raw
from tests.operations.test_wiring import plan_of


def test_routes_are_the_models_ports_longest_requests_and_smoke_hook() -> None:
    # Every preset engine and a custom one on its own port.
    raw = engines_raw()
    raw["models"]["triton"]["custom"] |= {"port": 9000, "command": ["tritonserver"]}
    plan = plan_of(raw)
    models = plan.config.models
    derived = routes(*models.values())
    assert derived.ports == tuple(sorted({m.launch.port for m in plan.models.values()}))
    assert derived.ports == (8000, 9000)
    stack = stack_routes(plan.config.model_copy(update={"rerankers": {}, "gateway": None}))
    assert derived.longest_request_seconds == stack.longest_request_seconds
    assert derived.smoke_hook == stack.smoke_hook
    assert routes().ports == () and routes().longest_request_seconds == ()


def test_a_service_takes_the_alb_group_and_load_balancer_from_its_router_unless_given() -> None:
    edge = SimpleNamespace(
        security_group=SimpleNamespace(id="sg-edge"),
        load_balancer=SimpleNamespace(arn_suffix="app/edge/1"),
    )
    where = {"cluster_arn": "cluster", "vpc_id": "vpc-1", "subnet_ids": ["subnet-a"]}
    wiring = ServiceWiring(**where, router=edge)
    assert (wiring.alb_security_group_id, wiring.load_balancer_arn_suffix) == (
        "sg-edge",
        "app/edge/1",
    )
    given = {"alb_security_group_id": "sg-x", "load_balancer_arn_suffix": "app/x/2"}
    wiring = ServiceWiring(**where, router=edge, **given)
    assert (wiring.alb_security_group_id, wiring.load_balancer_arn_suffix) == ("sg-x", "app/x/2")
