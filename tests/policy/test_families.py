"""The exposure rules on the front doors and hosts of ``families.py``, judged in process.

Each family's factory is compliant in both providers' shapes, as a preview records it and
literally; each variant changes one thing and must give exactly the listed (policy, resource)
pairs at any level, in both shapes and both ways.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.policy.corpus import PATH, PIP, SG, Case, build
from tests.policy.families import FAMILIES, edit
from tests.policy.policy_stacks import found

SHAPES = pytest.mark.parametrize("native", [False, True], ids=["aws", "native"])
WAYS = pytest.mark.parametrize("literal", [False, True], ids=["preview", "literal"])


@SHAPES
@WAYS
@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_family_baseline_is_compliant(local_pack, family, native, literal):
    assert local_pack.analyze(build(FAMILIES[family](native), literal=literal)) == []


def _route(authorization: str) -> Callable[[dict[str, Any]], None]:
    def change(route: dict[str, Any]) -> None:
        route["authorizationType"] = authorization
        route.pop("authorizerId")

    return change


def _unsigned(distribution: dict[str, Any]) -> None:
    config = distribution.get("distributionConfig", distribution)
    del config["defaultCacheBehavior"]["trustedKeyGroups"]


def _internet_facing(lb: dict[str, Any]) -> None:
    if "scheme" in lb:
        lb["scheme"] = "internet-facing"
    else:
        lb["internal"] = False


def _open_to_internet(sg: dict[str, Any]) -> None:
    for rule in sg.get("ingress", []):
        rule["cidrBlocks"] = ["0.0.0.0/0"]
    for rule in sg.get("securityGroupIngress", []):
        rule["cidrIp"] = "0.0.0.0/0"


def _public_ip(host: dict[str, Any]) -> None:
    """A public IP in the host's own shape: pulumi-aws instances set it at the top level,
    aws-native ones (CloudFormation) on a network interface that then holds the subnet and the
    groups, launch templates on their interface (pulumi-aws types it as a string)."""
    if "launchTemplateData" in host:
        host["launchTemplateData"]["networkInterfaces"][0]["associatePublicIpAddress"] = True
    elif "networkInterfaces" in host:
        host["networkInterfaces"][0]["associatePublicIpAddress"] = "true"
    elif "ami" in host:
        host["associatePublicIpAddress"] = True
    else:
        nic = {"deviceIndex": "0", "associatePublicIpAddress": True}
        nic.update(subnetId=host.pop("subnetId"), groupSet=host.pop("securityGroupIds"))
        host["networkInterfaces"] = [nic]


def _maps_public_ips(subnet: dict[str, Any]) -> None:
    subnet["mapPublicIpOnLaunch"] = True


def _no_subnet(vm: dict[str, Any]) -> None:
    del vm["subnetId"]  # the default VPC's subnets give every instance a public IP


#: variant -> (family, [(resource, change)], expected (policy, resource) pairs at any level)
Change = tuple[str, Callable[[dict[str, Any]], None]]
VARIANTS: dict[str, tuple[str, list[Change], set[tuple[str, str]]]] = {
    "api-route-without-authorizer": ("api-gateway", [("route", _route("NONE"))], {(PATH, "route")}),
    "api-route-iam-authorized": ("api-gateway", [("route", _route("AWS_IAM"))], set()),
    "api-backend-alb-internet-facing": (
        "api-gateway",
        [("alb", _internet_facing)],
        {(PATH, "https")},
    ),
    "cloudfront-unsigned": ("cloudfront", [("cdn", _unsigned)], {(PATH, "cdn")}),
    "instance-open-group": ("instance", [("vm-sg", _open_to_internet)], {(SG, "vm-sg")}),
    "instance-public-ip-closed-group": ("instance", [("vm", _public_ip)], set()),
    "instance-public-ip-open-group": (
        "instance",
        [("vm", _public_ip), ("vm-sg", _open_to_internet)],
        {(SG, "vm-sg"), (PIP, "vm")},
    ),
    "instance-default-vpc-open-group": (
        "instance",
        [("vm", _no_subnet), ("vm-sg", _open_to_internet)],
        {(SG, "vm-sg"), (PIP, "vm")},
    ),
    "launch-template-open-group": (
        "launch-template",
        [("lt-sg", _open_to_internet)],
        {(SG, "lt-sg")},
    ),
    "launch-template-public-ip-closed-group": ("launch-template", [("lt", _public_ip)], set()),
    "asg-open-group": ("auto-scaling-group", [("lt-sg", _open_to_internet)], {(SG, "lt-sg")}),
    "asg-public-subnet-closed-group": (
        "auto-scaling-group",
        [("private", _maps_public_ips)],
        set(),
    ),
    "asg-public-subnet-open-group": (
        "auto-scaling-group",
        [("private", _maps_public_ips), ("lt-sg", _open_to_internet)],
        {(SG, "lt-sg"), (PIP, "asg")},
    ),
    "launch-template-public-ip-open-group": (
        "launch-template",
        [("lt", _public_ip), ("lt-sg", _open_to_internet)],
        {(SG, "lt-sg"), (PIP, "lt")},
    ),
}


@SHAPES
@WAYS
@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_family_one_change(local_pack, variant, native, literal):
    violations = local_pack.analyze(build(variant_case(variant, native), literal=literal))
    assert found(violations) == VARIANTS[variant][2], [v.message for v in violations]


def variant_case(variant: str, native: bool) -> Case:
    """The family's compliant case in one shape with the variant's changes."""
    family, changes, _ = VARIANTS[variant]
    case = FAMILIES[family](native)
    for name, change in changes:
        case = edit(case, name, change)
    return case
