"""EC2: launch templates, security groups and their rules, VPC endpoints."""

from __future__ import annotations

import base64
import binascii
import ipaddress
import re
from collections.abc import Iterable, Mapping
from typing import Any

from ecs_inference.contracts.aws_limits import (
    IMDS_HOP_LIMIT_RANGE,
    RULES_PER_SECURITY_GROUP,
    USER_DATA_MAX_BYTES,
)
from tools.aws_requests.registry import (
    ApiRequest,
    Inputs,
    as_int,
    drop_none,
    known,
    maps,
    rule,
    single,
    tags,
)
from tools.aws_shapes import UNKNOWN


def _launch_template_data(i: Inputs) -> dict[str, Any]:
    def ebs(block: Mapping[str, Any]) -> dict[str, Any]:
        out = {k[0].upper() + k[1:]: v for k, v in block.items() if v is not None}
        for flag in ("Encrypted", "DeleteOnTermination"):
            # The provider carries these as strings ("true"); the API as booleans.
            if isinstance(out.get(flag), str) and out[flag] in ("true", "false"):
                out[flag] = out[flag] == "true"
        return out

    profile = single(i.get("iamInstanceProfile"))
    monitoring = single(i.get("monitoring"))
    ebs_optimized = i.get("ebsOptimized")
    return drop_none(
        {
            "KernelId": i.get("kernelId"),
            "EbsOptimized": ebs_optimized == "true"
            if isinstance(ebs_optimized, str) and ebs_optimized in ("true", "false")
            else ebs_optimized,
            "IamInstanceProfile": {k[0].upper() + k[1:]: v for k, v in profile.items()}
            if isinstance(profile, Mapping)
            else None,
            "BlockDeviceMappings": [
                drop_none(
                    {
                        "DeviceName": b.get("deviceName"),
                        "VirtualName": b.get("virtualName"),
                        "NoDevice": b.get("noDevice"),
                        "Ebs": ebs(single(b["ebs"])) if b.get("ebs") else None,
                    }
                )
                for b in i.get("blockDeviceMappings") or []
            ]
            or None,
            "ImageId": i.get("imageId"),
            "InstanceType": i.get("instanceType"),
            "KeyName": i.get("keyName"),
            "Monitoring": {"Enabled": monitoring.get("enabled")}
            if isinstance(monitoring, Mapping)
            else None,
            "UserData": i.get("userData"),
            "TagSpecifications": [
                drop_none({"ResourceType": t.get("resourceType"), "Tags": tags(t.get("tags"))})
                for t in i.get("tagSpecifications") or []
            ]
            or None,
            "SecurityGroupIds": i.get("vpcSecurityGroupIds"),
            "SecurityGroups": i.get("securityGroupNames"),
            "InstanceMarketOptions": single(i.get("instanceMarketOptions")),
            "MetadataOptions": single(i.get("metadataOptions")),
            "CapacityReservationSpecification": single(i.get("capacityReservationSpecification")),
        }
    )


@maps("aws:ec2/launchTemplate:LaunchTemplate")
def _launch_template(i: Inputs, name: str | None) -> list[ApiRequest]:
    return [
        ApiRequest(
            "ec2",
            "CreateLaunchTemplate",
            drop_none(
                {
                    "LaunchTemplateName": name,
                    "VersionDescription": None,
                    "LaunchTemplateData": _launch_template_data(i),
                }
            ),
        )
    ]


@rule("aws:ec2/launchTemplate:LaunchTemplate")
def _launch_template_limits(i: Inputs, _name: str | None) -> Iterable[str]:
    data = i.get("userData")
    if isinstance(data, str) and known(data):
        try:
            raw = base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError):
            yield "userData must be base64-encoded (launch templates take it encoded)"
            return
        if len(raw) > USER_DATA_MAX_BYTES:
            yield f"userData is {len(raw)} bytes, more than the {USER_DATA_MAX_BYTES} EC2 accepts"
    meta = single(i.get("metadataOptions")) or {}
    hops, (lo, hi) = meta.get("httpPutResponseHopLimit"), IMDS_HOP_LIMIT_RANGE
    if isinstance(hops, (int, float)) and not lo <= hops <= hi:
        yield f"metadataOptions.httpPutResponseHopLimit {as_int(hops)} is outside {lo}-{hi}"


# Security group and rule descriptions (EC2 CreateSecurityGroup / IpRange reference): up to
# 255 characters of a-z, A-Z, 0-9, spaces and ._-:/()#,@[]+=&;{}!$*
_SG_DESCRIPTION = re.compile(r"^[A-Za-z0-9 ._\-:/()#,@\[\]+=&;{}!$*]{0,255}$")


def _ip_permission(rule_: Mapping[str, Any]) -> dict[str, Any]:
    def desc() -> Any:
        return rule_.get("description")

    protocol = rule_.get("protocol", rule_.get("ipProtocol"))
    return drop_none(
        {
            "IpProtocol": str(as_int(protocol)) if isinstance(protocol, (int, float)) else protocol,
            "FromPort": rule_.get("fromPort"),
            "ToPort": rule_.get("toPort"),
            "IpRanges": [
                drop_none({"CidrIp": c, "Description": desc()})
                for c in rule_.get("cidrBlocks") or []
            ]
            or ([drop_none({"CidrIp": rule_["cidrIpv4"], "Description": desc()})]
                if rule_.get("cidrIpv4") else None),
            "Ipv6Ranges": [
                drop_none({"CidrIpv6": c, "Description": desc()})
                for c in rule_.get("ipv6CidrBlocks") or []
            ]
            or ([drop_none({"CidrIpv6": rule_["cidrIpv6"], "Description": desc()})]
                if rule_.get("cidrIpv6") else None),
            "PrefixListIds": [
                drop_none({"PrefixListId": p, "Description": desc()})
                for p in rule_.get("prefixListIds") or []
            ]
            or None,
            "UserIdGroupPairs": [
                drop_none({"GroupId": g, "Description": desc()})
                for g in [
                    *(rule_.get("securityGroups") or []),
                    *(
                        [rule_["sourceSecurityGroupId"]]
                        if rule_.get("sourceSecurityGroupId")
                        else []
                    ),
                    *(
                        [rule_["referencedSecurityGroupId"]]
                        if rule_.get("referencedSecurityGroupId")
                        else []
                    ),
                ]
            ]
            or None,
        }
    )  # fmt: skip


@maps("aws:ec2/securityGroup:SecurityGroup")
def _security_group(i: Inputs, name: str | None) -> list[ApiRequest]:
    out = [
        ApiRequest(
            "ec2",
            "CreateSecurityGroup",
            drop_none(
                {
                    # The provider's default description (resource_overrides.go).
                    "Description": i.get("description", "Managed by Pulumi"),
                    "GroupName": name,
                    "VpcId": i.get("vpcId"),
                }
            ),
        )
    ]
    for direction, op in (("ingress", "Ingress"), ("egress", "Egress")):
        rules = [r for r in i.get(direction) or [] if isinstance(r, Mapping)]
        if rules:
            out.append(
                ApiRequest(
                    "ec2",
                    f"AuthorizeSecurityGroup{op}",
                    {"GroupId": UNKNOWN, "IpPermissions": [_ip_permission(r) for r in rules]},
                )
            )
    return out


@rule("aws:ec2/securityGroup:SecurityGroup")
def _security_group_limits(i: Inputs, _name: str | None) -> Iterable[str]:
    description = i.get("description")
    bad = isinstance(description, str) and not _SG_DESCRIPTION.match(description)
    if bad and known(description):
        yield f"description {description!r} has characters EC2 refuses or is over 255"
    for direction in ("ingress", "egress"):
        rules = [r for r in i.get(direction) or [] if isinstance(r, Mapping)]
        count = 0
        for n, r in enumerate(rules):
            yield from _rule_problems(r, f"{direction}[{n}]")
            sources = (
                len(r.get("cidrBlocks") or [])
                + len(r.get("ipv6CidrBlocks") or [])
                + len(r.get("prefixListIds") or [])
                + len(r.get("securityGroups") or [])
                + (1 if r.get("self") else 0)
            )
            count += max(sources, 1)
        if count > RULES_PER_SECURITY_GROUP:
            yield f"{count} {direction} rules, more than the {RULES_PER_SECURITY_GROUP} per group"


def _rule_problems(r: Mapping[str, Any], where: str) -> Iterable[str]:
    desc = r.get("description")
    if isinstance(desc, str) and known(desc) and not _SG_DESCRIPTION.match(desc):
        yield f"{where}.description {desc!r} has characters EC2 refuses or is over 255"
    lo, hi = r.get("fromPort"), r.get("toPort")
    protocol = str(r.get("protocol", r.get("ipProtocol", "")))
    ports = isinstance(lo, (int, float)) and isinstance(hi, (int, float))
    if protocol in ("tcp", "udp", "6", "17") and ports and lo > hi:  # type: ignore[operator]
        yield f"{where}: fromPort {as_int(lo)} is greater than toPort {as_int(hi)}"
    for cidr in r.get("cidrBlocks") or []:
        if isinstance(cidr, str) and known(cidr):
            try:
                ipaddress.IPv4Network(cidr)
            except ValueError as exc:
                yield f"{where}: cidr {cidr!r} is not a valid IPv4 network ({exc})"


def _authorize(i: Inputs, egress: bool) -> list[ApiRequest]:
    op = "AuthorizeSecurityGroupEgress" if egress else "AuthorizeSecurityGroupIngress"
    return [
        ApiRequest(
            "ec2", op, {"GroupId": i.get("securityGroupId"), "IpPermissions": [_ip_permission(i)]}
        )
    ]


@maps("aws:ec2/securityGroupRule:SecurityGroupRule")
def _security_group_rule(i: Inputs, _name: str | None) -> list[ApiRequest]:
    return _authorize(i, i.get("type") == "egress")


@maps("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule")
def _vpc_ingress_rule(i: Inputs, _name: str | None) -> list[ApiRequest]:
    return _authorize(i, False)


@maps("aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule")
def _vpc_egress_rule(i: Inputs, _name: str | None) -> list[ApiRequest]:
    return _authorize(i, True)


@rule(
    "aws:ec2/securityGroupRule:SecurityGroupRule",
    "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule",
    "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule",
)
def _security_group_rule_limits(i: Inputs, _name: str | None) -> Iterable[str]:
    yield from _rule_problems(i, "rule")


@maps("aws:ec2/vpcEndpoint:VpcEndpoint")
def _vpc_endpoint(i: Inputs, _name: str | None) -> list[ApiRequest]:
    return [
        ApiRequest(
            "ec2",
            "CreateVpcEndpoint",
            drop_none(
                {
                    "VpcEndpointType": i.get("vpcEndpointType"),
                    "VpcId": i.get("vpcId"),
                    "ServiceName": i.get("serviceName"),
                    "PolicyDocument": i.get("policy"),
                    "RouteTableIds": i.get("routeTableIds"),
                    "SubnetIds": i.get("subnetIds"),
                    "SecurityGroupIds": i.get("securityGroupIds"),
                    "IpAddressType": i.get("ipAddressType"),
                    "PrivateDnsEnabled": i.get("privateDnsEnabled"),
                }
            ),
        )
    ]


@rule("aws:ec2/vpcEndpoint:VpcEndpoint")
def _vpc_endpoint_kinds(i: Inputs, _name: str | None) -> Iterable[str]:
    # CreateVpcEndpoint: route tables only for Gateway endpoints, subnets and security groups
    # only for Interface (and Gateway Load Balancer) endpoints; private DNS only for Interface.
    kind = i.get("vpcEndpointType") or "Gateway"
    if kind == "Gateway":
        for key in ("subnetIds", "securityGroupIds"):
            if i.get(key):
                yield f"a Gateway endpoint takes no {key}"
        if i.get("privateDnsEnabled"):
            yield "privateDnsEnabled is only for Interface endpoints"
    elif i.get("routeTableIds"):
        yield f"an {kind} endpoint takes no routeTableIds"
