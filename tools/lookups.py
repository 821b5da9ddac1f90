"""Answers of the real shape for the data sources (invokes) ordinary programs call.

The offline preview has no AWS account, so a lookup is answered with what the real service
returns in shape: ids with their prefixes and hex digits (`vpc-0123456789abcdef0`), ARNs with
partition, region and account, AMI ids, CIDR blocks, zone names and ids of the region, a real
IAM policy JSON built from the statements asked for. Never a bare placeholder the real service
would reject. Values are derived from the arguments, so runs are stable.

Add a data source by writing `@answers("aws:<module>/get<Thing>:get<Thing>")` over a function
of (args, region) that returns the outputs in camelCase.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Callable, Mapping
from typing import Any

ACCOUNT_ID = "123456789012"

Answer = Callable[[Mapping[str, Any], str], dict[str, Any]]
LOOKUPS: dict[str, Answer] = {}


def answers(*tokens: str) -> Callable[[Answer], Answer]:
    """Register the answer of one or more invoke tokens."""

    def register(fn: Answer) -> Answer:
        for token in tokens:
            LOOKUPS[token] = fn
        return fn

    return register


def hex_id(*parts: Any, length: int = 17) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[
        :length
    ]


def uuid_of(*parts: Any) -> str:
    h = hex_id(*parts, length=32)
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def _zones(region: str, count: int = 3) -> list[str]:
    return [f"{region}{z}" for z in "abcdef"[:count]]


def _zone_ids(region: str, count: int = 3) -> list[str]:
    # Zone ids read like "use1-az1": the region's short code and a number.
    parts = region.split("-")
    short = parts[0] + "".join(p[0] for p in parts[1:-1]) + parts[-1]
    return [f"{short}-az{n + 1}" for n in range(count)]


def subnet_zone(zone_name: str, region: str) -> dict[str, str]:
    """`availabilityZone` and `availabilityZoneId` of a subnet in `zone_name` (this preview's
    n-th zone name is zone id `<short>-azN`)."""
    names = _zones(region, 6)
    n = names.index(zone_name) if zone_name in names else 0
    return {"availabilityZone": zone_name, "availabilityZoneId": _zone_ids(region, 6)[n]}


def _filters(args: Mapping[str, Any]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for flt in args.get("filters") or []:
        if isinstance(flt, Mapping) and flt.get("name"):
            out[str(flt["name"])] = [str(v) for v in flt.get("values") or []]
    return out


@answers("aws:index/getAvailabilityZones:getAvailabilityZones")
def _availability_zones(args: Mapping[str, Any], region: str) -> dict[str, Any]:
    return {
        "names": _zones(region, 6),
        "zoneIds": _zone_ids(region, 6),
        "groupNames": [region] * 6,
        "id": region,
        "state": args.get("state", "available"),
    }


@answers("aws:index/getAvailabilityZone:getAvailabilityZone")
def _availability_zone(args: Mapping[str, Any], region: str) -> dict[str, Any]:
    name = args.get("name") or f"{region}a"
    return {
        "name": name,
        "zoneId": _zone_ids(region, 1)[0],
        "region": region,
        "state": "available",
        "nameSuffix": name[-1],
        "groupName": region,
        "id": name,
    }


@answers("aws:index/getRegions:getRegions")
def _regions(_args: Mapping[str, Any], region: str) -> dict[str, Any]:
    names = sorted({region, "us-east-1", "us-west-2", "eu-west-1"})
    return {"names": names, "id": "aws"}


def _vpc_id(args: Mapping[str, Any]) -> str:
    if args.get("id"):
        return str(args["id"])
    return "vpc-" + hex_id("vpc", args.get("default", False), _filters(args), args.get("tags"))


@answers("aws:ec2/getVpc:getVpc")
def _vpc(args: Mapping[str, Any], region: str) -> dict[str, Any]:
    vpc = _vpc_id(args)
    default = bool(args.get("default"))
    return {
        "id": vpc,
        "arn": f"arn:aws:ec2:{region}:{ACCOUNT_ID}:vpc/{vpc}",
        "cidrBlock": "172.31.0.0/16" if default else "10.0.0.0/16",
        "cidrBlockAssociations": [
            {
                "associationId": "vpc-cidr-assoc-" + hex_id(vpc),
                "cidrBlock": "172.31.0.0/16" if default else "10.0.0.0/16",
                "state": "associated",
            }
        ],
        "default": default,
        "dhcpOptionsId": "dopt-" + hex_id("dopt", vpc),
        "enableDnsHostnames": True,
        "enableDnsSupport": True,
        "enableNetworkAddressUsageMetrics": False,
        "instanceTenancy": "default",
        "ipv6AssociationId": "",
        "ipv6CidrBlock": "",
        "mainRouteTableId": "rtb-" + hex_id("main", vpc),
        "ownerId": ACCOUNT_ID,
        "state": "available",
        "tags": args.get("tags") or {},
        "region": region,
    }


@answers("aws:ec2/getVpcs:getVpcs")
def _vpcs(args: Mapping[str, Any], region: str) -> dict[str, Any]:
    return {"ids": [_vpc_id(args)], "id": region, "region": region}


def _subnet_ids(args: Mapping[str, Any], count: int = 3) -> list[str]:
    flt = _filters(args)
    key = (flt.get("vpc-id") or [args.get("vpcId", "")], flt, args.get("tags"))
    return ["subnet-" + hex_id("subnet", key, n) for n in range(count)]


@answers("aws:ec2/getSubnets:getSubnets", "aws:ec2/getSubnetIds:getSubnetIds")
def _subnets(args: Mapping[str, Any], region: str) -> dict[str, Any]:
    return {
        "ids": _subnet_ids(args),
        "id": region,
        "region": region,
        "filters": args.get("filters"),
    }


@answers("aws:ec2/getSubnet:getSubnet")
def _subnet(args: Mapping[str, Any], region: str) -> dict[str, Any]:
    subnet = str(args.get("id") or _subnet_ids(args, 1)[0])
    n = int(hex_id(subnet, length=2), 16) % 3
    vpc = str(args.get("vpcId") or "vpc-" + hex_id("vpc", subnet))
    return {
        "id": subnet,
        "arn": f"arn:aws:ec2:{region}:{ACCOUNT_ID}:subnet/{subnet}",
        "availabilityZone": _zones(region)[n],
        "availabilityZoneId": _zone_ids(region)[n],
        "cidrBlock": f"172.31.{16 * n}.0/20",
        "vpcId": vpc,
        "defaultForAz": bool(args.get("defaultForAz")),
        "mapPublicIpOnLaunch": False,
        "state": "available",
        "ownerId": ACCOUNT_ID,
        "availableIpAddressCount": 4091,
        "tags": args.get("tags") or {},
    }


@answers("aws:ec2/getRouteTables:getRouteTables")
def _route_tables(args: Mapping[str, Any], region: str) -> dict[str, Any]:
    subnets = _filters(args).get("association.subnet-id") or []
    ids = ["rtb-" + hex_id(s) for s in subnets] or ["rtb-" + hex_id("rtb", args.get("vpcId"))]
    return {"ids": ids, "id": args.get("vpcId") or region}


@answers("aws:ec2/getRouteTable:getRouteTable")
def _route_table(args: Mapping[str, Any], region: str) -> dict[str, Any]:
    rtb = str(args.get("routeTableId") or "rtb-" + hex_id("rtb", args.get("subnetId"), args))
    vpc = str(args.get("vpcId") or "vpc-" + hex_id("vpc", rtb))
    return {
        "id": rtb,
        "routeTableId": rtb,
        "arn": f"arn:aws:ec2:{region}:{ACCOUNT_ID}:route-table/{rtb}",
        "vpcId": vpc,
        "ownerId": ACCOUNT_ID,
        "routes": [],
        "associations": [],
        "propagatingVgws": [],
        "tags": args.get("tags") or {},
    }


@answers("aws:ec2/getSecurityGroup:getSecurityGroup")
def _security_group(args: Mapping[str, Any], region: str) -> dict[str, Any]:
    sg = str(args.get("id") or "sg-" + hex_id("sg", args))
    return {
        "id": sg,
        "arn": f"arn:aws:ec2:{region}:{ACCOUNT_ID}:security-group/{sg}",
        "name": args.get("name") or "default",
        "description": "default VPC security group",
        "vpcId": args.get("vpcId") or "vpc-" + hex_id("vpc", sg),
        "tags": args.get("tags") or {},
    }


@answers("aws:ec2/getSecurityGroups:getSecurityGroups")
def _security_groups(args: Mapping[str, Any], region: str) -> dict[str, Any]:
    sg = "sg-" + hex_id("sg", args)
    return {"ids": [sg], "vpcIds": ["vpc-" + hex_id("vpc", sg)], "arns": [], "id": region}


@answers("aws:ec2/getAmi:getAmi")
def _ami(args: Mapping[str, Any], region: str) -> dict[str, Any]:
    ami = "ami-" + hex_id("ami", region, args)
    names = _filters(args).get("name") or ["preview-image"]
    arch = (_filters(args).get("architecture") or ["x86_64"])[0]
    owners = args.get("owners") or ["amazon"]
    return {
        "id": ami,
        "imageId": ami,
        "arn": f"arn:aws:ec2:{region}::image/{ami}",
        "architecture": arch,
        "name": names[0].replace("*", "2026.11.30"),
        "ownerId": "137112412989" if owners[0] == "amazon" else str(owners[0]),
        "owners": owners,
        "rootDeviceName": "/dev/xvda",
        "rootDeviceType": "ebs",
        "virtualizationType": "hvm",
        "imageType": "machine",
        "state": "available",
        "public": True,
        "blockDeviceMappings": [
            {
                "deviceName": "/dev/xvda",
                "ebs": {"volume_size": "8", "volume_type": "gp3", "encrypted": "false"},
                "noDevice": "",
                "virtualName": "",
            }
        ],
        "creationDate": "2026-11-30T00:00:00.000Z",
        "mostRecent": bool(args.get("mostRecent")),
        "tags": {},
    }


@answers("aws:ec2/getAmiIds:getAmiIds")
def _ami_ids(args: Mapping[str, Any], region: str) -> dict[str, Any]:
    return {"ids": ["ami-" + hex_id("ami", region, args)], "id": region}


@answers("aws:ec2/getInstanceType:getInstanceType")
def _instance_type(args: Mapping[str, Any], _region: str) -> dict[str, Any]:
    return {"instanceType": args.get("instanceType"), "id": args.get("instanceType")}


@answers("aws:ec2/getInstanceTypeOfferings:getInstanceTypeOfferings")
def _instance_type_offerings(args: Mapping[str, Any], region: str) -> dict[str, Any]:
    """DescribeInstanceTypeOfferings from the dated offerings table
    (components/sizing/ec2_offerings.py): one row per type and location, filtered by
    `instance-type` and `location`; zone names are this preview's (zone id `<short>-azN` is the
    N-th name of `_zones`)."""
    from ecs_inference.sizing import ec2_offerings

    kind = str(args.get("locationType") or "region")
    wanted = _filters(args)
    rows: list[tuple[str, str]] = []
    for name, regions in sorted(ec2_offerings.OFFERINGS.items()):
        found = regions.get(region)
        if found is None or ("instance-type" in wanted and name not in wanted["instance-type"]):
            continue
        ids = found[1]
        if kind == "region":
            locations: tuple[str, ...] = (region,)
        elif kind == "availability-zone":
            names = dict(zip(_zone_ids(region, 6), _zones(region, 6), strict=True))
            locations = tuple(names[z] for z in ids if z in names)
        else:
            locations = ids
        rows += [(name, loc) for loc in locations if loc in wanted.get("location", [loc])]
    return {
        "id": region,
        "filters": args.get("filters"),
        "locationType": kind,
        "instanceTypes": [name for name, _ in rows],
        "locations": [loc for _, loc in rows],
        "locationTypes": [kind] * len(rows),
    }


@answers("aws:ec2/getInternetGateway:getInternetGateway")
def _internet_gateway(args: Mapping[str, Any], region: str) -> dict[str, Any]:
    igw = "igw-" + hex_id("igw", args)
    return {
        "id": igw,
        "internetGatewayId": igw,
        "arn": f"arn:aws:ec2:{region}:{ACCOUNT_ID}:internet-gateway/{igw}",
        "attachments": [{"state": "available", "vpcId": "vpc-" + hex_id("vpc", igw)}],
        "ownerId": ACCOUNT_ID,
        "tags": {},
    }


@answers("aws:ec2/getPrefixList:getPrefixList", "aws:ec2/getManagedPrefixList:getManagedPrefixList")
def _prefix_list(args: Mapping[str, Any], region: str) -> dict[str, Any]:
    pl = str(args.get("prefixListId") or args.get("id") or "pl-" + hex_id("pl", args, length=8))
    return {
        "id": pl,
        "name": args.get("name") or f"com.amazonaws.{region}.s3",
        "cidrBlocks": ["52.216.0.0/15"],
        "entries": [{"cidr": "52.216.0.0/15", "description": ""}],
    }


@answers("aws:index/getCallerIdentity:getCallerIdentity")
def _caller(_args: Mapping[str, Any], _region: str) -> dict[str, Any]:
    return {
        "accountId": ACCOUNT_ID,
        "arn": f"arn:aws:iam::{ACCOUNT_ID}:user/preview",
        "userId": "AIDA" + hex_id("user", length=17).upper(),
        "id": ACCOUNT_ID,
    }


@answers("aws:index/getPartition:getPartition")
def _partition(_args: Mapping[str, Any], _region: str) -> dict[str, Any]:
    return {
        "partition": "aws",
        "dnsSuffix": "amazonaws.com",
        "reverseDnsPrefix": "com.amazonaws",
        "id": "aws",
    }


@answers("aws:index/getRegion:getRegion")
def _region(args: Mapping[str, Any], region: str) -> dict[str, Any]:
    name = args.get("name") or args.get("region") or region
    return {
        "name": name,
        "region": name,
        "id": name,
        "endpoint": f"ec2.{name}.amazonaws.com",
        "description": name,
    }


@answers("aws:ssm/getParameter:getParameter")
def _ssm_parameter(args: Mapping[str, Any], region: str) -> dict[str, Any]:
    name = str(args.get("name", ""))
    ami = "ami-" + hex_id("ssm", region, name)
    # Public AMI parameters hold an AMI id; ECS's `.../recommended` holds a JSON document.
    if name.endswith("/recommended"):
        value = json.dumps({"image_id": ami, "image_name": "preview", "os": "Amazon Linux 2023"})
    elif "ami" in name.lower() or "image" in name.lower():
        value = ami
    else:
        value = "preview-" + hex_id("value", name, length=12)
    return {
        "name": name,
        "type": "String",
        "value": value,
        "insecureValue": value,
        "arn": f"arn:aws:ssm:{region}::parameter{name if name.startswith('/') else '/' + name}",
        "version": 1,
        "withDecryption": bool(args.get("withDecryption", True)),
        "id": name,
    }


@answers("aws:ecr/getAuthorizationToken:getAuthorizationToken")
def _ecr_token(args: Mapping[str, Any], region: str) -> dict[str, Any]:
    registry = args.get("registryId") or ACCOUNT_ID
    password = "preview-" + hex_id("token", registry, length=24)
    return {
        "proxyEndpoint": f"https://{registry}.dkr.ecr.{region}.amazonaws.com",
        "userName": "AWS",
        "password": password,
        "authorizationToken": base64.b64encode(f"AWS:{password}".encode()).decode(),
        "expiresAt": "2026-12-01T00:00:00Z",
        "registryId": registry,
        "id": registry,
    }


@answers("aws:ecr/getCredentials:getCredentials")
def _ecr_credentials(args: Mapping[str, Any], region: str) -> dict[str, Any]:
    registry = args.get("registryId") or ACCOUNT_ID
    token = _ecr_token({"registryId": registry}, region)
    return {
        "authorizationToken": token["authorizationToken"],
        "expiresAt": token["expiresAt"],
        "proxyEndpoint": token["proxyEndpoint"],
        "registryId": registry,
        "id": registry,
    }


@answers("aws:ecr/getRepository:getRepository")
def _ecr_repository(args: Mapping[str, Any], region: str) -> dict[str, Any]:
    name = str(args.get("name", "repository"))
    registry = args.get("registryId") or ACCOUNT_ID
    return {
        "name": name,
        "arn": f"arn:aws:ecr:{region}:{registry}:repository/{name}",
        "registryId": registry,
        "repositoryUrl": f"{registry}.dkr.ecr.{region}.amazonaws.com/{name}",
        "imageTagMutability": "MUTABLE",
        "mostRecentImageTags": [],
        "id": name,
    }


@answers("aws:elb/getServiceAccount:getServiceAccount")
def _elb_service_account(_args: Mapping[str, Any], _region: str) -> dict[str, Any]:
    return {"arn": "arn:aws:iam::127311923021:root", "id": "127311923021"}


@answers("aws:iam/getRole:getRole")
def _iam_role(args: Mapping[str, Any], _region: str) -> dict[str, Any]:
    name = str(args.get("name", "role"))
    return {
        "name": name,
        "arn": f"arn:aws:iam::{ACCOUNT_ID}:role/{name}",
        "id": name,
        "uniqueId": "AROA" + hex_id("role", name).upper(),
        "path": "/",
        "assumeRolePolicy": json.dumps(
            {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Effect": "Allow",
                        "Principal": {"Service": "ec2.amazonaws.com"},
                        "Action": "sts:AssumeRole",
                    }
                ],
            }
        ),
        "maxSessionDuration": 3600,
        "tags": {},
    }


@answers("aws:iam/getPolicy:getPolicy")
def _iam_policy(args: Mapping[str, Any], _region: str) -> dict[str, Any]:
    arn = str(args.get("arn") or f"arn:aws:iam::aws:policy/{args.get('name', 'policy')}")
    name = arn.rsplit("/", 1)[-1]
    return {
        "arn": arn,
        "name": name,
        "id": arn,
        "path": "/",
        "policyId": "ANPA" + hex_id("policy", arn).upper(),
        "policy": json.dumps(
            {
                "Version": "2012-10-17",
                "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}],
            }
        ),
        "tags": {},
    }


def _statement(st: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if st.get("sid"):
        out["Sid"] = st["sid"]
    out["Effect"] = st.get("effect") or "Allow"
    for key, api in (
        ("actions", "Action"),
        ("notActions", "NotAction"),
        ("resources", "Resource"),
        ("notResources", "NotResource"),
    ):
        values = st.get(key)
        if values:
            out[api] = values[0] if len(values) == 1 else list(values)
    for key, api in (("principals", "Principal"), ("notPrincipals", "NotPrincipal")):
        principals = st.get(key)
        if principals:
            block: dict[str, Any] = {}
            for p in principals:
                ids = p.get("identifiers") or []
                if p.get("type") == "*":
                    block = "*"  # type: ignore[assignment]
                    break
                block[p.get("type")] = ids[0] if len(ids) == 1 else list(ids)
            out[api] = block
    conditions: dict[str, dict[str, Any]] = {}
    for c in st.get("conditions") or []:
        values = c.get("values") or []
        conditions.setdefault(c.get("test"), {})[c.get("variable")] = (
            values[0] if len(values) == 1 else list(values)
        )
    if conditions:
        out["Condition"] = conditions
    return out


@answers("aws:iam/getPolicyDocument:getPolicyDocument")
def _policy_document(args: Mapping[str, Any], _region: str) -> dict[str, Any]:
    """The JSON the provider renders from the statements asked for (not a placeholder)."""
    doc: dict[str, Any] = {"Version": args.get("version") or "2012-10-17"}
    if args.get("policyId"):
        doc["Id"] = args["policyId"]
    doc["Statement"] = [_statement(st) for st in args.get("statements") or []]
    text = json.dumps(doc, indent=2)
    return {
        "json": text,
        "minifiedJson": json.dumps(doc, separators=(",", ":")),
        "id": str(int(hex_id("doc", doc, length=8), 16)),
        "statements": args.get("statements") or [],
    }


@answers("aws:route53/getZone:getZone")
def _zone(args: Mapping[str, Any], _region: str) -> dict[str, Any]:
    name = str(args.get("name") or "example.com").rstrip(".") + "."
    zone = str(args.get("zoneId") or "Z" + hex_id("zone", name, length=20).upper())
    return {
        "id": zone,
        "zoneId": zone,
        "name": name,
        "arn": f"arn:aws:route53:::hostedzone/{zone}",
        "privateZone": bool(args.get("privateZone")),
        "nameServers": [f"ns-{n}.awsdns-0{n}.com" for n in range(1, 5)],
        "resourceRecordSetCount": 2,
        "callerReference": hex_id("ref", zone),
        "comment": "",
        "tags": {},
    }


@answers("aws:acm/getCertificate:getCertificate")
def _certificate(args: Mapping[str, Any], region: str) -> dict[str, Any]:
    domain = str(args.get("domain") or "example.com")
    arn = f"arn:aws:acm:{region}:{ACCOUNT_ID}:certificate/{uuid_of('cert', domain)}"
    return {"arn": arn, "id": arn, "domain": domain, "status": "ISSUED", "tags": {}}


@answers("aws:ecs/getCluster:getCluster")
def _ecs_cluster(args: Mapping[str, Any], region: str) -> dict[str, Any]:
    name = str(args.get("clusterName", "default"))
    return {
        "clusterName": name,
        "arn": f"arn:aws:ecs:{region}:{ACCOUNT_ID}:cluster/{name}",
        "id": f"arn:aws:ecs:{region}:{ACCOUNT_ID}:cluster/{name}",
        "status": "ACTIVE",
        "runningTasksCount": 0,
        "pendingTasksCount": 0,
        "registeredContainerInstancesCount": 0,
        "settings": [],
        "serviceConnectDefaults": [],
        "tags": {},
    }


@answers("aws:kms/getKey:getKey", "aws:kms/getAlias:getAlias")
def _kms(args: Mapping[str, Any], region: str) -> dict[str, Any]:
    key_id = uuid_of("kms", args)
    return {
        "id": key_id,
        "keyId": args.get("keyId") or key_id,
        "targetKeyId": key_id,
        "arn": f"arn:aws:kms:{region}:{ACCOUNT_ID}:key/{key_id}",
        "targetKeyArn": f"arn:aws:kms:{region}:{ACCOUNT_ID}:key/{key_id}",
        "name": args.get("name", ""),
        "keyState": "Enabled",
        "enabled": True,
    }
