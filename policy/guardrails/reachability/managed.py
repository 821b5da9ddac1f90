"""Front doors that AWS runs for a service: App Runner, ECS Express and Lambda function URLs.

Each is its own entry point and what serves: an App Runner service with
``isPubliclyAccessible`` unset or true; an ECS Express service without subnets (it uses the
default VPC's public subnets) or with a subnet of the stack that maps public IPs (ECS Express
then creates an internet-facing ALB); a Lambda function URL with auth type ``NONE`` (``AWS_IAM``
authenticates).
"""

from __future__ import annotations

from collections.abc import Iterator

from ..resources import FUNCTION, SUBNET, as_bool, as_list, get, is_native, stored, stored_path
from .index import Entry, Leg, Model, Resource, label, subnet_public


def app_runner_entry(model: Model, service: Resource) -> Iterator[Entry]:
    """A publicly accessible App Runner service (the default)."""
    public = stored_path(
        service.props,
        "networkConfiguration",
        "ingressConfiguration",
        "isPubliclyAccessible",
        default=True,
        resource=service,
    )
    if as_bool(public):
        yield service, Leg(service, None, (label(service),), (service,), (), (service,))


def express_entry(model: Model, service: Resource) -> Iterator[Entry]:
    """An ECS Express service in public subnets (or the default VPC's)."""
    if _express_public(model, service):
        yield service, Leg(service, None, (label(service),), (service,), (), (service,))


def url_entry(model: Model, url: Resource) -> Iterator[Entry]:
    """A Lambda function URL without IAM auth: the function it invokes."""
    native = is_native(url.resource_type)
    if str(get(url.props, "authType" if native else "authorizationType", "")).upper() != "NONE":
        return
    functions = model.refs(
        url,
        "targetFunctionArn" if native else "functionName",
        FUNCTION,
        what="which function it invokes",
    )
    yield url, Leg(url, None, (label(url),), tuple(functions), (), (url, *functions))


def _express_public(model: Model, service: Resource) -> bool:
    """ECS Express creates an internet-facing ALB when its subnets are public; without a
    network configuration it uses the default VPC's (public) subnets."""
    key = "networkConfiguration" if is_native(service.resource_type) else "networkConfigurations"
    config = list(as_list(stored(service.props, key, None, service)))
    subnets = model.refs_or_none(
        service,
        key,
        SUBNET,
        lambda: [s for c in config if c for s in as_list(get(c, "subnets"))],
        what="whether its subnets are public",
    )
    if subnets is None:
        return True
    return any(subnet_public(s) for s in subnets)
