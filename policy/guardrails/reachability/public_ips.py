"""Public IPs on compute: tasks, instances, launch templates / configurations, Auto Scaling
groups.

A resource gets a public IP through ``assignPublicIp`` (tasks), ``associatePublicIpAddress``
(instances, templates, configurations), an elastic IP or association, a subnet of the stack that
maps public IPs on launch, or no subnet at all (the default VPC's subnets assign public IPs).
Whether that IP is reachable is the security groups' question (``security_groups``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..resources import (
    AUTOSCALING_GROUP,
    EIP,
    EIP_ASSOCIATION,
    INSTANCE,
    LAUNCH_CONFIGURATION,
    LAUNCH_TEMPLATE,
    SERVICE,
    SUBNET,
    TASK_SET,
    as_bool,
    as_list,
    get,
    get_path,
    is_native,
    is_set,
    stored,
)
from .index import Model, Resource, subnet_public
from .security_groups import security_groups_of


def public_ip(model: Model, resource: Resource) -> str | None:
    """Why a compute resource gets a public IP (None when it does not)."""
    rtype = resource.resource_type
    props = resource.props
    native = is_native(rtype)
    if rtype in SERVICE | TASK_SET:
        inner = ("awsvpcConfiguration" if rtype in SERVICE else "awsVpcConfiguration",)
        value = get_path(
            props, "networkConfiguration", *(inner if native else ()), "assignPublicIp"
        )
        return "assignPublicIp" if value is not None and as_bool(value) else None
    if rtype in INSTANCE:
        return _instance_public_ip(model, resource)
    if rtype in LAUNCH_TEMPLATE:
        for nic in _template_interfaces(resource):
            value = get(nic, "associatePublicIpAddress")
            if value is not None and as_bool(value):
                return "networkInterfaces associatePublicIpAddress"
        return None
    if rtype in LAUNCH_CONFIGURATION:
        value = get(props, "associatePublicIpAddress")
        return "associatePublicIpAddress" if value is not None and as_bool(value) else None
    if rtype in AUTOSCALING_GROUP:
        return _asg_public_ip(model, resource)
    return None


def _instance_public_ip(model: Model, instance: Resource) -> str | None:
    props = instance.props
    for key in ("instance", "instanceId"):  # pulumi-aws, aws-native
        for eip in model.referrers(EIP, key, INSTANCE).get(instance.urn, ()):
            return f"elastic IP {eip.name!r}"
    for assoc in model.referrers(EIP_ASSOCIATION, "instanceId", INSTANCE).get(instance.urn, ()):
        return f"elastic IP association {assoc.name!r}"
    interfaces = (
        as_list(get(props, "networkInterfaces")) if is_native(instance.resource_type) else ()
    )
    explicit = stored(props, "associatePublicIpAddress", None, instance)
    for nic in interfaces:
        explicit = get(nic, "associatePublicIpAddress", explicit)
    if explicit is not None:
        return "associatePublicIpAddress" if as_bool(explicit) else None
    if not is_set(props, "subnetId", instance) and not interfaces:
        return "no subnetId (the default VPC's subnets assign public IPs)"
    for s in model.refs(instance, "subnetId", SUBNET, silent_external=True):
        if subnet_public(s):
            return f"subnet {s.name!r} maps public IPs on launch"
    return None


def _asg_public_ip(model: Model, asg: Resource) -> str | None:
    key = "vpcZoneIdentifier" if is_native(asg.resource_type) else "vpcZoneIdentifiers"
    if not is_set(asg.props, key, asg):
        # Availability zones only: instances launch in the default VPC's subnets, which
        # assign public IPs, unless every template of the stack it uses says otherwise.
        templates = _asg_templates(model, asg)
        if templates and not all(_template_public_ip(t) is False for t in templates):
            return f"no {key} (the default VPC's subnets assign public IPs)"
        return None
    for s in model.refs(asg, key, SUBNET, silent_external=True):
        if subnet_public(s):
            return f"subnet {s.name!r} maps public IPs on launch"
    return None


def _template_interfaces(template: Resource) -> list[Mapping[str, Any]]:
    if is_native(template.resource_type):
        return list(as_list(get_path(template.props, "launchTemplateData", "networkInterfaces")))
    return list(as_list(get(template.props, "networkInterfaces")))


def _asg_templates(model: Model, asg: Resource) -> list[Resource]:
    """The stack's launch templates / configurations an Auto Scaling group launches from."""
    native = is_native(asg.resource_type)
    found: dict[str, Resource] = {}
    for key, types in (
        ("launchTemplate", LAUNCH_TEMPLATE),
        ("mixedInstancesPolicy", LAUNCH_TEMPLATE),
        ("launchConfiguration" if not native else "launchConfigurationName", LAUNCH_CONFIGURATION),
    ):
        for template in model.refs(asg, key, types, silent_external=True):
            found.setdefault(template.urn, template)
    return list(found.values())


def _template_public_ip(template: Resource) -> bool | None:
    """A launch template's / configuration's explicit public IP setting (None: unset)."""
    if template.resource_type in LAUNCH_CONFIGURATION:
        value = get(template.props, "associatePublicIpAddress")
        return None if value is None else as_bool(value)
    values = [get(nic, "associatePublicIpAddress") for nic in _template_interfaces(template)]
    known_values = [as_bool(v) for v in values if v is not None]
    return any(known_values) if known_values else None


def asg_security_groups(model: Model, asg: Resource) -> list[Resource] | None:
    """Security groups of an Auto Scaling group's launch templates / configurations (None
    when it names none of the stack's)."""
    templates = _asg_templates(model, asg)
    if not templates:
        return None
    return [sg for template in templates for sg in security_groups_of(model, template) or []]
