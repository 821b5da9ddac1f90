"""The reachability model: what the internet can reach in a stack, and whether it authenticates.

One place answers every exposure question the pack asks. It starts from each internet entry
point (a front door) and follows the routes to what serves at the end. Each family of front
doors is one module, listed in :data:`FRONT_DOORS`:

* ``elb``: internet-facing ELBv2 load balancers (listener -> rule -> target group -> service /
  instance / Auto Scaling group / Lambda, NLB -> ALB) and classic ELBs;
* ``apigateway``: HTTP / WebSocket routes, quick-create APIs and REST methods -> integration ->
  VPC link (V1 to an NLB, V2 to an ALB / NLB) -> listener / load balancer, an address, or a
  Lambda function; ``openapi``: the operations of an API defined by an OpenAPI ``body``;
* ``cloudfront``: distributions -> VPC origin or an origin addressed by domain name
  (``origins``: load balancers, instances, Elastic IPs, function URLs, App Runner, Route 53);
* ``managed``: public App Runner and ECS Express services, Lambda function URLs without IAM,
  public Elastic Beanstalk environments, Lightsail container endpoints and instance firewalls;
* ``global_accelerator``: accelerators (standard and custom routing) -> listener -> endpoint
  group -> load balancer (internal ones too), instance, Elastic IP, or a subnet's instances.

A path is authenticated when the first thing on it that can refuse a request does (each
family's docstring says what counts there); authentication anywhere upstream covers the rest of
the route. Routes that end at a Service Connect client continue to the servers it reaches
(``service_connect``). ``index`` resolves references (property dependencies first, then by
value, "cannot verify" when neither), ``security_groups`` judges groups by attachment on
address sets (``addresses``), ``public_ips`` says why compute gets a public IP, and ``serving``
what counts as a model for ``scope: model-serving``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from ..resources import (
    APP_RUNNER,
    BEANSTALK_ENVIRONMENT,
    CLASSIC_ELB,
    DISTRIBUTION,
    EXPRESS_SERVICE,
    FUNCTION_URL,
    GA_ACCELERATOR,
    HTTP_API,
    HTTP_ROUTE,
    LIGHTSAIL_CONTAINERS,
    LIGHTSAIL_INSTANCE,
    LOAD_BALANCER,
    REST_API,
    REST_METHOD,
)
from . import apigateway, cloudfront, elb, global_accelerator, managed, openapi
from .addresses import covers_internet, describe_ports, port_range, public_share
from .index import Entry, Leg, Model, Resource
from .public_ips import asg_security_groups, public_ip
from .security_groups import (
    attachments,
    external_groups,
    internet_ports,
    security_groups_of,
)
from .service_connect import servers_unknown, service_connect_servers, through_service_connect
from .serving import SERVING_TAG, model_serving, task_serves_model

__all__ = [
    "SERVING_TAG",
    "Leg",
    "Model",
    "asg_security_groups",
    "attachments",
    "covers_internet",
    "describe_ports",
    "entry_legs",
    "external_groups",
    "internet_ports",
    "model_serving",
    "port_range",
    "public_ip",
    "public_share",
    "security_groups_of",
    "servers_unknown",
    "service_connect_servers",
    "task_serves_model",
    "unauthenticated_lbs",
]

FrontDoor = Callable[[Model, Resource], Iterable[Entry]]

#: Every kind of entry point, in the order routes are reported: (types, routes from one).
FRONT_DOORS: tuple[tuple[frozenset[str], FrontDoor], ...] = (
    (LOAD_BALANCER, elb.lb_entry),
    (CLASSIC_ELB, elb.classic_entry),
    (HTTP_API, apigateway.quick_create_entry),
    (HTTP_ROUTE, apigateway.route_entry),
    (REST_METHOD, apigateway.method_entry),
    (REST_API | HTTP_API, openapi.body_entry),
    (DISTRIBUTION, cloudfront.distribution_entry),
    (APP_RUNNER, managed.app_runner_entry),
    (EXPRESS_SERVICE, managed.express_entry),
    (FUNCTION_URL, managed.url_entry),
    (GA_ACCELERATOR, global_accelerator.accelerator_entry),
    (BEANSTALK_ENVIRONMENT, managed.beanstalk_entry),
    (LIGHTSAIL_CONTAINERS, managed.lightsail_container_entry),
    (LIGHTSAIL_INSTANCE, managed.lightsail_instance_entry),
)


def entry_legs(model: Model) -> list[Entry]:
    """(entry point, route) for every route the internet can take into the stack.

    Each entry point is followed inside its own unknown-value guard: a value unknown at
    preview skips that entry point only (the calling rule re-raises it as a note).
    """
    return model.memo("entries", lambda: _entries(model))


def _entries(model: Model) -> list[Entry]:
    with model.notes.guard():  # listeners and rules on load balancers outside the stack
        elb.index_listeners(model)
    found: list[Entry] = []
    for types, door in FRONT_DOORS:
        for resource in model.of(types):
            with model.notes.guard():
                found.extend(through_service_connect(model, list(door(model, resource))))
    return found


def unauthenticated_lbs(model: Model) -> set[str]:
    """URNs of load balancers on an unauthenticated route from the internet."""
    return model.memo(
        "unauth_lbs",
        lambda: {lb.urn for _, leg in entry_legs(model) if leg.auth is None for lb in leg.via},
    )
