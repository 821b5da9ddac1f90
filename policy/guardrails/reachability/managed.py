"""Front doors that AWS runs for a service: App Runner, ECS Express, Lambda function URLs,
Elastic Beanstalk environments and Lightsail.

Each is its own entry point and what serves (App Runner services and the functions behind URLs
also reach what their environment proxies to, see ``origins``): an App Runner service with
``isPubliclyAccessible`` unset or true; an ECS Express service without subnets (it uses the
default VPC's public subnets) or with a subnet of the stack that maps public IPs (ECS Express
then creates an internet-facing ALB); a Lambda function URL with auth type ``NONE`` (``AWS_IAM``
authenticates); a web-server Elastic Beanstalk environment with a public load balancer or a
public single instance; a Lightsail container deployment with a public endpoint; a Lightsail
instance whose firewall admits the internet (by default SSH and HTTP).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from ..resources import (
    LIGHTSAIL_INSTANCE,
    LIGHTSAIL_PUBLIC_PORTS,
    SUBNET,
    as_bool,
    as_list,
    get,
    get_path,
    is_native,
    stored,
    stored_path,
)
from .addresses import covers_internet, port_range
from .index import Entry, Leg, Model, Resource, label, subnet_public
from .origins import address_legs, serving_legs


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
        for leg in serving_legs(model, service):
            yield service, leg


def express_entry(model: Model, service: Resource) -> Iterator[Entry]:
    """An ECS Express service in public subnets (or the default VPC's)."""
    if _express_public(model, service):
        yield service, Leg(service, None, (label(service),), (service,), (), (service,))


def url_entry(model: Model, url: Resource) -> Iterator[Entry]:
    """A Lambda function URL without IAM auth: the function it invokes, and what that function
    proxies to (``origins``)."""
    for leg in address_legs(model, url):
        yield url, leg


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


# --- Elastic Beanstalk ------------------------------------------------------------------------


def _option(environment: Resource, namespace: str, name: str) -> Any:
    """An Elastic Beanstalk option setting (aws ``settings[].name``, aws-native
    ``optionSettings[].optionName``), None when the environment does not set it."""
    native = is_native(environment.resource_type)
    for item in as_list(get(environment.props, "optionSettings" if native else "settings")):
        key = get(item, "optionName" if native else "name")
        if get(item, "namespace") == namespace and key == name:
            return get(item, "value")
    return None


def beanstalk_entry(model: Model, environment: Resource) -> Iterator[Entry]:
    """A web-server Elastic Beanstalk environment the internet reaches: load balanced with the
    default (public) ``ELBScheme``, or a single instance with a public address. Beanstalk
    creates the load balancer or instance itself, outside the stack's resources, and none of
    its options authenticates a request."""
    tier = get(environment.props, "tier")
    tier = get(tier, "name") if isinstance(tier, Mapping) else tier
    if str(tier or "WebServer").lower() != "webserver":
        return  # a worker environment reads its SQS queue; nothing listens for the internet
    kind = str(_option(environment, "aws:elasticbeanstalk:environment", "EnvironmentType") or "")
    if kind.lower() == "singleinstance":
        public = _option(environment, "aws:ec2:vpc", "AssociatePublicIpAddress")
        exposed = public is None or as_bool(public)
    else:
        exposed = str(_option(environment, "aws:ec2:vpc", "ELBScheme") or "public") != "internal"
    if exposed:
        leg = Leg(environment, None, (label(environment),), (environment,), (), (environment,))
        yield environment, leg


# --- Lightsail ----------------------------------------------------------------------------------

#: Lightsail opens SSH and HTTP to every address on a new instance (Lightsail developer guide,
#: "Instance firewalls"), until the instance's public ports are set.
LIGHTSAIL_DEFAULT_PORTS = ((22, 22), (80, 80))
_ALL_IPV4 = ("0.0.0.0/0",)


def lightsail_container_entry(model: Model, deployment: Resource) -> Iterator[Entry]:
    """A Lightsail container deployment with a public endpoint: Lightsail serves its container
    on a public HTTPS domain, with no way to authenticate in front of it."""
    props = deployment.props
    if is_native(deployment.resource_type):
        props = get(props, "containerServiceDeployment") or {}
    if get(props, "publicEndpoint") is not None:
        leg = Leg(deployment, None, (label(deployment),), (deployment,), (), (deployment,))
        yield deployment, leg


def lightsail_instance_entry(model: Model, instance: Resource) -> Iterator[Entry]:
    """A Lightsail instance whose firewall admits the internet on some TCP / UDP port: its
    own ports (aws-native ``networking.ports``), the stack's ``InstancePublicPorts`` for it,
    or Lightsail's defaults when neither is set."""
    holder, ports = _lightsail_ports(model, instance)
    opened = [
        f"{low}-{high}" if low != high else str(low)
        for low, high, cidrs in ports
        if covers_internet(cidrs)
    ]
    if opened:
        chain = (label(holder), f"ports {', '.join(opened)}", label(instance))
        yield instance, Leg(holder, None, chain, (instance,), (), (holder, instance))


def _lightsail_ports(
    model: Model, instance: Resource
) -> tuple[Resource, list[tuple[int, int, tuple[str, ...]]]]:
    if is_native(instance.resource_type):
        infos = get_path(instance.props, "networking", "ports")
        holder = instance
    else:
        ports = model.referrers(LIGHTSAIL_PUBLIC_PORTS, "instanceName", LIGHTSAIL_INSTANCE)
        holders = ports.get(instance.urn, [])
        holder = holders[0] if holders else instance
        infos = get(holder.props, "portInfos") if holders else None
    if infos is None:
        return instance, [(low, high, _ALL_IPV4) for low, high in LIGHTSAIL_DEFAULT_PORTS]
    found: list[tuple[int, int, tuple[str, ...]]] = []
    for info in as_list(infos):
        ports = port_range(get(info, "protocol", "tcp"), get(info, "fromPort"), get(info, "toPort"))
        if ports is None:
            continue
        cidrs = [*as_list(get(info, "cidrs")), *as_list(get(info, "ipv6Cidrs"))]
        found.append((*ports, tuple(str(c) for c in cidrs) or _ALL_IPV4))
    return holder, found
