"""Run a Pulumi program under the SDK's mock runtime and record every resource registration.

This is the engine of the offline preview (DESIGN §5). The real `__main__.py` runs against
`pulumi.runtime.set_mocks` in preview mode with the stack's config; a `MockMonitor` subclass
records each `RegisterResource` request as the Pulumi engine would see it (type, name, inputs
with camelCase keys, parent, dependencies, provider). The mocks answer only what a preview does
not know (ids, ARNs, auto-generated names, AMI ids, the region's zones) and never add outputs
the program did not ask for; everything else that depends on a created resource stays unknown,
exactly as in `pulumi preview`.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import re
import runpy
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulumi
from google.protobuf import json_format
from pulumi.runtime import mocks as pulumi_mocks
from pulumi.runtime import resource as pulumi_resource_runtime
from pulumi.runtime import rpc
from pulumi.runtime import settings as pulumi_settings
from pulumi.runtime.config import set_all_config
from pulumi.runtime.proto import source_pb2
from pulumi.runtime.settings import get_project, get_stack
from pulumi.runtime.stack import run_pulumi_func
from pulumi.runtime.sync_await import _sync_await

from ecs_inference.config.stack_file import STACK_FILE_ENV
from ecs_inference.contracts.aws_limits import name_rule
from tools.described import SETTING as DESCRIBED_SETTING
from tools.described import World
from tools.fidelity import simulate_name
from tools.lookups import LOOKUPS, subnet_zone
from tools.views.shape import checked_inputs, planned_outputs

UNKNOWN = rpc.UNKNOWN
ACCOUNT_ID = "123456789012"

_SECRET_SIG = "1b47061264138c4ac30d75fd1eb44270"
_RESOURCE_SIG = "5cf8f73096256a8f31e491e813e4eb8e"
_SIG_KEY = rpc._special_sig_key  # "4dabf18193072939515e22adb298388d"


class UnansweredLookupError(Exception):
    """The program called a data source (invoke) the offline preview has no answer for."""

    def __init__(self, token: str) -> None:
        self.token = token
        super().__init__(
            f"lookup {token}: the offline preview has no answer for this data source (add one "
            "of the real shape to tools/lookups.py)"
        )


@dataclass(frozen=True)
class Lookup:
    """One data-source call and the answer the offline preview gave."""

    token: str
    args: dict[str, Any]
    answer: dict[str, Any]


@dataclass(frozen=True)
class RecordedResource:
    """One registration, as the engine (and so a policy pack) sees it."""

    type: str
    name: str
    urn: str
    custom: bool
    inputs: dict[str, Any]
    parent: str | None
    dependencies: tuple[str, ...]
    provider: str | None
    property_dependencies: dict[str, tuple[str, ...]] = field(default_factory=dict)
    outputs: dict[str, Any] = field(default_factory=dict)
    """What the mocks answered (ids, ARNs, autonames): lets checks join resources by ARN."""
    retain_on_delete: bool = False
    """The `retainOnDelete` resource option: `pulumi destroy` leaves the resource in AWS."""
    options: ResourceOptions = field(default_factory=lambda: ResourceOptions())
    """The resource options the engine passes on to a policy pack."""
    version: str | None = None
    """The provider version the SDK asks for (it names the default provider)."""
    secret_inputs: tuple[str, ...] = ()
    """Inputs the program sent as secrets (`Output.secret`), by name."""


@dataclass(frozen=True)
class ResourceOptions:
    """The resource options of a registration that the analyzer protocol carries."""

    protect: bool = False
    ignore_changes: tuple[str, ...] = ()
    delete_before_replace: bool | None = None
    """None: not set (the provider decides)."""
    additional_secret_outputs: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    """Alias URNs."""
    custom_timeouts: tuple[float, float, float] = (0.0, 0.0, 0.0)
    """(create, update, delete) in seconds (0: not set), as the engine parses the SDK's
    duration strings ("10m")."""

    @classmethod
    def of(cls, request: Any) -> ResourceOptions:
        """The options of a `RegisterResourceRequest`."""
        timeouts = request.customTimeouts
        return cls(
            protect=bool(request.protect),
            ignore_changes=tuple(request.ignoreChanges),
            delete_before_replace=(
                bool(request.deleteBeforeReplace) if request.deleteBeforeReplaceDefined else None
            ),
            additional_secret_outputs=tuple(request.additionalSecretOutputs),
            aliases=tuple(request.aliasURNs),
            custom_timeouts=(
                go_duration_seconds(timeouts.create),
                go_duration_seconds(timeouts.update),
                go_duration_seconds(timeouts.delete),
            ),
        )


_DURATION_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")


def go_duration_seconds(text: str) -> float:
    """Seconds in a Go duration string ("1h30m", "90s"; "" is 0), as `time.ParseDuration`."""
    if not text:
        return 0.0
    parts = _DURATION_PART.findall(text)
    if "".join(n + u for n, u in parts) != text.lstrip("+"):
        raise ValueError(f"not a duration: {text!r}")
    return sum(float(n) * _DURATION_UNITS[u] for n, u in parts)


@dataclass
class Recording:
    """What a program run produced: resources in registration order, stack outputs, logs."""

    resources: list[RecordedResource] = field(default_factory=list)
    outputs: dict[str, Any] = field(default_factory=dict)
    invokes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    lookups: list[Lookup] = field(default_factory=list)
    """Every data-source answer the program got, in order (the runtime rehearsal reads the
    existing network's subnets, route tables and endpoints from them)."""
    derived: list[str] = field(default_factory=list)
    """Ids the program looked up that the stack's `preview:lookups` does not describe."""

    def by_type(self, type_: str) -> list[RecordedResource]:
        return [r for r in self.resources if r.type == type_]

    def one(self, type_: str, name_suffix: str = "") -> RecordedResource:
        """The single resource of `type_` whose name ends with `name_suffix` (tests use this)."""
        found = [r for r in self.by_type(type_) if r.name.endswith(name_suffix)]
        if len(found) != 1:
            names = [r.name for r in self.by_type(type_)]
            raise LookupError(f"expected one {type_} ending {name_suffix!r}, found {names}")
        return found[0]


def plain(value: Any) -> Any:
    """Wire value -> plain JSON-like value: secrets unwrapped, resource references to their id
    (or URN), unknowns kept as `UNKNOWN`."""
    if isinstance(value, dict):
        sig = value.get(_SIG_KEY)
        if sig == _SECRET_SIG:
            return plain(value.get("value"))
        if sig == _RESOURCE_SIG:
            return value.get("id") or value.get("urn")
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def _is_secret(value: Any) -> bool:
    return isinstance(value, dict) and value.get(_SIG_KEY) == _SECRET_SIG


def _stable_hex(*parts: str, length: int = 8) -> str:
    return hashlib.sha256("/".join(parts).encode()).hexdigest()[:length]


# EC2-style ids: a prefix and 17 hex digits, by Pulumi type (the shapes botocore's patterns and
# the policy pack expect; "sg-0123...", not "securitygroup-...").
_ID_PREFIXES = {
    "aws:ec2/securityGroup:SecurityGroup": "sg-",
    "aws:ec2/launchTemplate:LaunchTemplate": "lt-",
    "aws:ec2/vpcEndpoint:VpcEndpoint": "vpce-",
    "aws:ec2/vpc:Vpc": "vpc-",
    "aws:ec2/subnet:Subnet": "subnet-",
    "aws:ec2/instance:Instance": "i-",
    "aws:ec2/internetGateway:InternetGateway": "igw-",
    "aws:ec2/natGateway:NatGateway": "nat-",
    "aws:ec2/routeTable:RouteTable": "rtb-",
    "aws:ec2/routeTableAssociation:RouteTableAssociation": "rtbassoc-",
    "aws:ec2/eip:Eip": "eipalloc-",
    "aws:ec2/networkInterface:NetworkInterface": "eni-",
    "aws:ec2/securityGroupRule:SecurityGroupRule": "sgr-",
    "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule": "sgr-",
    "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule": "sgr-",
    "aws:ec2/volume:Volume": "vol-",
    "aws:ec2/ami:Ami": "ami-",
    "aws:ec2/placementGroup:PlacementGroup": "pg-",
    "aws:efs/fileSystem:FileSystem": "fs-",
    "aws:efs/accessPoint:AccessPoint": "fsap-",
    "aws:efs/mountTarget:MountTarget": "fsmt-",
}
# Types whose id is their physical name.
_ID_IS_NAME = {
    "aws:iam/role:Role",
    "aws:iam/instanceProfile:InstanceProfile",
    "aws:iam/rolePolicy:RolePolicy",
    "aws:cloudwatch/logGroup:LogGroup",
    "aws:autoscaling/group:Group",
    "aws:appautoscaling/policy:Policy",
    "aws:ecr/repository:Repository",
    "aws:s3/bucket:Bucket",
    "aws:s3/bucketV2:BucketV2",
    "aws:ec2/keyPair:KeyPair",
    "aws:cloudwatch/metricAlarm:MetricAlarm",
    "aws:lambda/function:Function",
}


def _uuid(*parts: str) -> str:
    h = _stable_hex(*parts, length=32)
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def _arn(type_: str, region: str, physical: str, resource_id: str) -> str:
    """An ARN of the real shape for a resource of `type_` (IAM and S3 without region, ELBv2 with
    its `app/<name>/<hex>` tail, ...)."""
    acct = ACCOUNT_ID
    h16 = _stable_hex(type_, physical, length=16)
    member = type_.split(":")[-1]
    module = type_.split(":")[1].split("/")[0] if ":" in type_ else "unknown"
    specific = {
        "aws:iam/role:Role": f"arn:aws:iam::{acct}:role/{physical}",
        "aws:iam/instanceProfile:InstanceProfile": (
            f"arn:aws:iam::{acct}:instance-profile/{physical}"
        ),
        "aws:iam/policy:Policy": f"arn:aws:iam::{acct}:policy/{physical}",
        "aws:lb/loadBalancer:LoadBalancer": (
            f"arn:aws:elasticloadbalancing:{region}:{acct}:loadbalancer/app/{physical}/{h16}"
        ),
        "aws:lb/targetGroup:TargetGroup": (
            f"arn:aws:elasticloadbalancing:{region}:{acct}:targetgroup/{physical}/{h16}"
        ),
        "aws:lb/listener:Listener": (
            f"arn:aws:elasticloadbalancing:{region}:{acct}:listener/app/{physical}/{h16}/"
            f"{_stable_hex(physical, type_, length=16)}"
        ),
        "aws:lb/listenerRule:ListenerRule": (
            f"arn:aws:elasticloadbalancing:{region}:{acct}:listener-rule/app/{physical}/{h16}/"
            f"{_stable_hex(physical, type_, length=16)}/{_stable_hex(type_, length=16)}"
        ),
        "aws:ecs/cluster:Cluster": f"arn:aws:ecs:{region}:{acct}:cluster/{physical}",
        "aws:ecs/service:Service": f"arn:aws:ecs:{region}:{acct}:service/{physical}",
        "aws:ecs/taskDefinition:TaskDefinition": (
            f"arn:aws:ecs:{region}:{acct}:task-definition/{physical}:1"
        ),
        "aws:ecs/capacityProvider:CapacityProvider": (
            f"arn:aws:ecs:{region}:{acct}:capacity-provider/{physical}"
        ),
        "aws:cloudwatch/logGroup:LogGroup": f"arn:aws:logs:{region}:{acct}:log-group:{physical}",
        "aws:autoscaling/group:Group": (
            f"arn:aws:autoscaling:{region}:{acct}:autoScalingGroup:{_uuid(physical)}:"
            f"autoScalingGroupName/{physical}"
        ),
        "aws:acm/certificate:Certificate": (
            f"arn:aws:acm:{region}:{acct}:certificate/{_uuid(type_, physical)}"
        ),
        "aws:secretsmanager/secret:Secret": (
            f"arn:aws:secretsmanager:{region}:{acct}:secret:{physical}-{h16[:6]}"
        ),
        # A parameter's ARN drops the leading `/` of its name (SAR `parameter` resource type).
        "aws:ssm/parameter:Parameter": (
            f"arn:aws:ssm:{region}:{acct}:parameter/{physical.removeprefix('/')}"
        ),
        "aws:sns/topic:Topic": f"arn:aws:sns:{region}:{acct}:{physical}",
        "aws:sqs/queue:Queue": f"arn:aws:sqs:{region}:{acct}:{physical}",
        "aws:lambda/function:Function": f"arn:aws:lambda:{region}:{acct}:function:{physical}",
        "aws:cloudwatch/eventRule:EventRule": f"arn:aws:events:{region}:{acct}:rule/{physical}",
        "aws:cloudwatch/metricAlarm:MetricAlarm": (
            f"arn:aws:cloudwatch:{region}:{acct}:alarm:{physical}"
        ),
        "aws:ecr/repository:Repository": f"arn:aws:ecr:{region}:{acct}:repository/{physical}",
        # RDS ARNs separate the resource type with a colon (`cluster:<id>`, `db:<id>`).
        "aws:rds/cluster:Cluster": f"arn:aws:rds:{region}:{acct}:cluster:{physical}",
        "aws:rds/clusterInstance:ClusterInstance": f"arn:aws:rds:{region}:{acct}:db:{physical}",
        "aws:rds/subnetGroup:SubnetGroup": f"arn:aws:rds:{region}:{acct}:subgrp:{physical}",
        "aws:efs/fileSystem:FileSystem": (
            f"arn:aws:elasticfilesystem:{region}:{acct}:file-system/{resource_id}"
        ),
        "aws:efs/accessPoint:AccessPoint": (
            f"arn:aws:elasticfilesystem:{region}:{acct}:access-point/{resource_id}"
        ),
    }
    if type_ in specific:
        return specific[type_]
    if module in ("s3",):
        return f"arn:aws:s3:::{physical}"  # bucket ARNs carry no region or account
    if module == "ec2" or module == "vpc":
        kind = re.sub(r"(?<!^)(?=[A-Z])", "-", member).lower()
        return f"arn:aws:ec2:{region}:{acct}:{kind}/{resource_id}"
    service = {
        "cloudwatch": "logs",
        "lb": "elasticloadbalancing",
        "alb": "elasticloadbalancing",
        "appautoscaling": "autoscaling",
        "cognito": "cognito-idp",
    }
    return f"arn:aws:{service.get(module, module)}:{region}:{acct}:{member.lower()}/{physical}"


def _resource_id(type_: str, name: str, physical: str) -> str:
    if type_ in _ID_PREFIXES:
        return _ID_PREFIXES[type_] + _stable_hex(type_, name, length=17)
    if type_ in _ID_IS_NAME:
        return physical
    return f"{type_.split(':')[-1].lower()}-{_stable_hex(type_, name, length=12)}"


class RecordingMocks(pulumi.runtime.Mocks):
    """Answers as the provider would in `view` (tools/views/shape.py `VIEWS`): in `new` only
    what a plan knows (inputs, defaults, autonames), ids and computed outputs unknown; in
    `update` and `state` what the deployed stack holds (ids, ARNs, names of the real shape)."""

    def __init__(
        self,
        region: str,
        view: str = "update",
        default_tags: dict[str, str] | None = None,
        world: World | None = None,
    ) -> None:
        self.region = region
        self.view = view
        self.default_tags = default_tags or {}
        self.world = world or World(region)
        self.invokes: list[str] = []
        self.lookups: list[Lookup] = []
        self.subnet_zones: dict[str, str] = {}
        """Zone name of each subnet the program created, by id: what `getSubnet` answers."""
        self.warnings: list[str] = []
        self.component_outputs: dict[str, dict[str, Any]] = {}
        """Outputs of remote components whose children were registered here, by name."""

    # -- resources ---------------------------------------------------------------------------
    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str | None, dict]:
        typ, name = args.typ, args.name
        if typ == "awsx:ec2:Vpc":
            constructed = self.component_outputs.pop(name, None)
            return None, constructed if constructed is not None else self._vpc_outputs(
                name, args.inputs
            )
        if not args.custom:
            return None, {}
        resource_id, identity = self.identity(args)
        checked = checked_inputs(typ, name, plain(args.inputs))
        outputs = planned_outputs(
            self.view, typ, checked, {"id": resource_id, **identity}, default_tags=self.default_tags
        )
        return (None if self.view == "new" else resource_id), outputs

    def identity(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        """The id and the identity outputs (ARN, names, DNS names) a created resource has."""
        typ, name = args.typ, args.name
        outputs: dict[str, Any] = {}
        # The name the provider would give it (explicit, prefix + 26, or `<name>-<7 random>`);
        # where that fails, tools/fidelity.py reports it and the run goes on with a stand-in.
        naming = simulate_name(typ, name, args.inputs)
        rule = name_rule(typ)
        given = naming.name if isinstance(naming.name, str) and naming.name != UNKNOWN else None
        physical = given or f"{name}-{_stable_hex(typ, name, length=7)}"
        if rule is not None and given is not None and rule.name_input not in args.inputs:
            outputs[rule.name_input] = given
        resource_id = _resource_id(typ, name, physical)
        if typ == "aws:ec2/subnet:Subnet" and isinstance(args.inputs.get("availabilityZone"), str):
            self.subnet_zones[resource_id] = args.inputs["availabilityZone"]
        if typ.startswith("aws:"):
            outputs["arn"] = _arn(typ, self.region, physical, resource_id)
        if typ == "tls:index/privateKey:PrivateKey":
            outputs["privateKeyPem"] = (
                "-----BEGIN PRIVATE KEY-----\n(mock)\n-----END PRIVATE KEY-----"
            )
        if typ == "tls:index/selfSignedCert:SelfSignedCert":
            outputs["certPem"] = "-----BEGIN CERTIFICATE-----\n(mock)\n-----END CERTIFICATE-----"
        if typ == "aws:cognito/userPool:UserPool":
            pool_id = f"{self.region}_{_stable_hex(name, length=9)}"
            resource_id = pool_id
            outputs["endpoint"] = f"cognito-idp.{self.region}.amazonaws.com/{pool_id}"
            outputs["arn"] = f"arn:aws:cognito-idp:{self.region}:{ACCOUNT_ID}:userpool/{pool_id}"
        if typ == "aws:s3/bucket:Bucket":
            bucket = args.inputs.get("bucket") or physical
            outputs["bucket"] = bucket
            outputs["arn"] = f"arn:aws:s3:::{bucket}"
            resource_id = bucket
        if typ == "aws:sqs/queue:Queue":
            # The provider's id of a queue is its URL (`CreateQueue` answers QueueUrl).
            resource_id = f"https://sqs.{self.region}.amazonaws.com/{ACCOUNT_ID}/{physical}"
            outputs["url"] = resource_id
        if typ == "aws:cognito/userPoolClient:UserPoolClient":
            resource_id = _stable_hex(name, length=26)
        if typ == "aws:lb/loadBalancer:LoadBalancer":
            scheme = "internal-" if args.inputs.get("internal") else ""
            outputs["dnsName"] = (
                f"{scheme}{physical}-{_stable_hex(name, length=10)}.{self.region}.elb.amazonaws.com"
            )
            outputs["zoneId"] = "Z35SXDOTRQ7X7K"  # us-east-1 ALB hosted zone shape
            outputs["arnSuffix"] = outputs["arn"].split(":loadbalancer/", 1)[1]
        if typ == "aws:rds/cluster:Cluster":
            outputs.update(self._rds_cluster_outputs(physical, args.inputs))
        if typ == "aws:lb/targetGroup:TargetGroup":
            outputs["arnSuffix"] = "targetgroup/" + outputs["arn"].split(":targetgroup/", 1)[1]
        if typ == "aws:ecr/repository:Repository":
            repo = args.inputs.get("name") or physical
            resource_id = repo
            outputs["name"] = repo
            outputs["registryId"] = ACCOUNT_ID
            outputs["arn"] = f"arn:aws:ecr:{self.region}:{ACCOUNT_ID}:repository/{repo}"
            outputs["repositoryUrl"] = f"{ACCOUNT_ID}.dkr.ecr.{self.region}.amazonaws.com/{repo}"
        if typ == "docker-build:index:Image":
            # What only a real build and push knows: the manifest digest, and the pushed tag
            # with it (a stable fake derived from the inputs, like the ids above).
            digest = (
                "sha256:"
                + hashlib.sha256(
                    json.dumps(args.inputs, sort_keys=True, default=str).encode()
                ).hexdigest()
            )
            tags = args.inputs.get("tags") or []
            outputs["digest"] = digest
            outputs["ref"] = f"{tags[0]}@{digest}" if tags else ""
        return resource_id, outputs

    def _rds_cluster_outputs(self, physical: str, inputs: dict[str, Any]) -> dict[str, Any]:
        """What RDS answers once the cluster exists, in its real shape: the writer endpoint, the
        resource id IAM database authentication names (`cluster-<26 characters>`) and,
        with `manageMasterUserPassword`, the RDS-managed secret (`rds!cluster-<uuid>`), so the
        task definitions built from them are known at preview, as the load balancer's DNS name
        is."""
        host = (
            f"{physical}.cluster-{_stable_hex(physical, length=12)}.{self.region}.rds.amazonaws.com"
        )
        resource = hashlib.sha256(f"rds\0{physical}".encode()).hexdigest().upper()[:26]
        out: dict[str, Any] = {"endpoint": host, "clusterResourceId": f"cluster-{resource}"}
        if inputs.get("manageMasterUserPassword"):
            secret = (
                f"rds!cluster-{_uuid('rds', physical)}-{_stable_hex(physical, 'secret', length=6)}"
            )
            arn = f"arn:aws:secretsmanager:{self.region}:{ACCOUNT_ID}:secret:{secret}"
            out["masterUserSecrets"] = [
                {
                    "secretArn": arn,
                    "secretStatus": "active",
                    "kmsKeyId": inputs.get("masterUserSecretKmsKeyId")
                    or f"arn:aws:kms:{self.region}:{ACCOUNT_ID}:key/{_uuid('aws/secretsmanager')}",
                }
            ]
        return out

    def _vpc_outputs(self, name: str, inputs: dict[str, Any]) -> dict[str, Any]:
        count = len(inputs.get("availabilityZoneNames") or []) or int(
            inputs.get("numberOfAvailabilityZones") or 3
        )
        if self.view == "new":
            # awsx's outputs are the ids of the subnets and the VPC it creates: unknown in the
            # plan, one per zone.
            return {
                "vpcId": UNKNOWN,
                "privateSubnetIds": [UNKNOWN] * count,
                "publicSubnetIds": [UNKNOWN] * count,
            }
        return {
            "vpcId": f"vpc-{_stable_hex(name, length=17)}",
            "privateSubnetIds": [
                f"subnet-{_stable_hex(name, 'private', str(i), length=17)}" for i in range(count)
            ],
            "publicSubnetIds": [
                f"subnet-{_stable_hex(name, 'public', str(i), length=17)}" for i in range(count)
            ],
        }

    def zones(self, count: int) -> list[str]:
        """The region's first `count` zone names, as awsx's `getAvailabilityZones` lookup
        answers them."""
        token = "aws:index/getAvailabilityZones:getAvailabilityZones"
        self.invokes.append(token)
        return list(LOOKUPS[token]({}, self.region)["names"])[:count]

    # -- invokes -----------------------------------------------------------------------------
    def call(self, args: pulumi.runtime.MockCallArgs) -> dict:
        token = args.token
        self.invokes.append(token)
        described = self.world.answer(token, args.args)
        if described is None:
            answer = LOOKUPS.get(token)
            if answer is None:
                raise UnansweredLookupError(token)
            described = answer(args.args, self.region)
        zone = self.subnet_zones.get(str(args.args.get("id")))
        if token == "aws:ec2/getSubnet:getSubnet" and zone is not None:
            described = {**described, **subnet_zone(zone, self.region)}
        self.lookups.append(Lookup(token, plain(dict(args.args)), described))
        return described


class RecordingMonitor(pulumi_mocks.MockMonitor):
    """A MockMonitor that also records each registration request in full."""

    def __init__(self, mocks: RecordingMocks) -> None:
        super().__init__(mocks)
        self.recording_mocks = mocks
        self.recorded: list[RecordedResource] = []
        self._thread_loops: list[asyncio.AbstractEventLoop] = []

    def _ensure_thread_loop(self) -> None:
        # The SDK's monitor runs on executor threads and gives each its own event loop, which
        # nothing closes; this one creates them instead, so `close_thread_loops` can.
        try:
            asyncio.get_event_loop()
        except RuntimeError:
            loop = asyncio.new_event_loop()
            asyncio.set_event_loop(loop)
            self._thread_loops.append(loop)

    def close_thread_loops(self) -> None:
        """Close the executor threads' loops once the run is over (unclosed, they are left to
        the cyclic collector; see `_replace_event_loop`)."""
        for loop in self._thread_loops:
            if not loop.is_running():
                loop.close()
        self._thread_loops.clear()

    def Invoke(self, request):  # noqa: N802 (gRPC method name)
        self._ensure_thread_loop()
        return super().Invoke(request)

    def ReadResource(self, request):  # noqa: N802 (gRPC method name)
        self._ensure_thread_loop()
        return super().ReadResource(request)

    def make_urn(self, parent: str, type_: str, name: str) -> str:
        # As the engine's `Deployment.generateURN`: a child's type is qualified by its parent's
        # whole qualified type, except the root stack's.
        qualified = parent.split("::")[2] if parent else ""
        if qualified and qualified != "pulumi:pulumi:Stack":
            type_ = f"{qualified}${type_}"
        return "urn:pulumi:" + "::".join([get_stack(), get_project(), type_, name])

    def RegisterResource(self, request):  # noqa: N802 (gRPC method name)
        self._ensure_thread_loop()
        vpc_children: list[RecordedResource] = []
        if request.type == "awsx:ec2:Vpc" and request.remote:
            urn = self.make_urn(request.parent, request.type, request.name)
            vpc_children = self._construct_vpc(urn, request)
        response = super().RegisterResource(request)
        if request.type != "pulumi:pulumi:Stack":
            wire = json_format.MessageToDict(request.object)
            inputs = plain(wire)
            prop_deps = {
                key: tuple(deps.urns) for key, deps in request.propertyDependencies.items()
            }
            self.recorded.append(
                RecordedResource(
                    type=request.type,
                    name=request.name,
                    urn=response.urn,
                    custom=bool(request.custom),
                    inputs=inputs,
                    parent=request.parent or None,
                    dependencies=tuple(request.dependencies),
                    provider=request.provider or None,
                    property_dependencies=prop_deps,
                    outputs=plain(json_format.MessageToDict(response.object)),
                    retain_on_delete=bool(request.retainOnDelete),
                    options=ResourceOptions.of(request),
                    version=request.version or None,
                    secret_inputs=tuple(sorted(k for k, v in wire.items() if _is_secret(v))),
                )
            )
        self.recorded += vpc_children
        return response

    def _construct_vpc(self, urn: str, request: Any) -> list[RecordedResource]:
        """What the awsx provider registers for this Vpc (tools/awsx_vpc.py); the component's
        outputs then are its children's ids. Layouts the emulation does not cover keep the
        component alone, with a warning."""
        from tools import awsx_vpc

        inputs = plain(json_format.MessageToDict(request.object))
        reason = awsx_vpc.unsupported(inputs)
        if reason is not None:
            self.recording_mocks.warnings.append(
                f"awsx:ec2:Vpc {request.name}: its subnets, routes and gateways are not "
                f"emulated for {reason}; the pack and the checks do not see them"
            )
            return []
        zones = list(inputs.get("availabilityZoneNames") or []) or self.recording_mocks.zones(
            int(inputs.get("numberOfAvailabilityZones") or 3)
        )
        built = construct(self, urn, awsx_vpc.children(request.name, inputs, zones))
        self.recording_mocks.component_outputs[request.name] = awsx_vpc.component_outputs(
            request.name, built.outputs
        )
        return built.records


@dataclass
class Constructed:
    """What a remote component's provider registered: the records, and each child's outputs
    by (type, name)."""

    records: list[RecordedResource] = field(default_factory=list)
    outputs: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)


def construct(monitor: RecordingMonitor, component_urn: str, children: list[Any]) -> Constructed:
    """Register a remote component's children (tools/awsx_vpc.py `Child`) as its provider
    would: references to earlier children resolved to their outputs in the mocks' view,
    recorded as property dependencies; the provider's SDK names its own default provider."""
    from tools.awsx_vpc import AWS_SDK_VERSION, Ref

    mocks = monitor.recording_mocks
    built = Constructed()
    urns: dict[tuple[str, str], str] = {}

    def resolve(value: Any, refs: list[str]) -> Any:
        if isinstance(value, Ref):
            refs.append(urns[(value.type, value.name)])
            known = built.outputs[(value.type, value.name)].get(value.attr, UNKNOWN)
            return _DROPPED if value.dropped_when_known and known != UNKNOWN else known
        if isinstance(value, dict):
            resolved = {k: resolve(v, refs) for k, v in value.items()}
            return {k: v for k, v in resolved.items() if v is not _DROPPED}
        if isinstance(value, list):
            return [resolve(v, refs) for v in value]
        return value

    for child in children:
        parent = urns[child.parent] if child.parent else component_urn
        urn = monitor.make_urn(parent, child.type, child.name)
        inputs: dict[str, Any] = {}
        prop_deps: dict[str, tuple[str, ...]] = {}
        for key, value in child.inputs.items():
            refs: list[str] = []
            resolved = resolve(value, refs)
            if resolved is not _DROPPED:
                inputs[key] = resolved
            prop_deps[key] = tuple(dict.fromkeys(refs))
        args = pulumi.runtime.MockResourceArgs(
            typ=child.type, name=child.name, inputs=inputs, custom=True
        )
        resource_id, outputs = mocks.new_resource(args)
        outputs = {**outputs, "id": resource_id or UNKNOWN}
        urns[(child.type, child.name)] = urn
        built.outputs[(child.type, child.name)] = outputs
        depends = [urns[d] for d in child.depends_on]
        built.records.append(
            RecordedResource(
                type=child.type,
                name=child.name,
                urn=urn,
                custom=True,
                inputs=inputs,
                parent=parent,
                dependencies=tuple(
                    dict.fromkeys([*depends, *(u for v in prop_deps.values() for u in v)])
                ),
                provider=None,
                property_dependencies=prop_deps,
                outputs=outputs,
                version=AWS_SDK_VERSION,
            )
        )
    return built


_DROPPED = object()


class _WarningCollector(logging.Handler):
    def __init__(self) -> None:
        super().__init__(level=logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def provider_default_tags(config: dict[str, str], package: str = "aws") -> dict[str, str]:
    """The `<package>:defaultTags` config's `tags` (what the provider merges into `tagsAll`)."""
    raw = config.get(f"{package}:defaultTags")
    if not raw:
        return {}
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        return {}
    tags = value.get("tags") if isinstance(value, dict) else None
    return {str(k): str(v) for k, v in tags.items()} if isinstance(tags, dict) else {}


def stack_config_values(stack_file: dict[str, Any]) -> dict[str, str]:
    """A stack file's `config:` block as the engine hands it to the language host: keys
    `ns:key`, structured values JSON-encoded, plain values as strings."""
    values: dict[str, str] = {}
    for key, value in (stack_file.get("config") or {}).items():
        values[key] = value if isinstance(value, str) else json.dumps(value)
    return values


def run_program(
    program_dir: Path,
    *,
    project: str,
    stack: str,
    config: dict[str, str],
    view: str = "update",
    secret_keys: Sequence[str] = (),
    stack_file: Path | None = None,
    world: World | None = None,
) -> Recording:
    """Run `<program_dir>/__main__.py` under recording mocks, in preview mode; `world`: the
    resources the stack file describes for the lookups (tools/described.py).

    Raises whatever the program raises (the caller decides how to report it). The program's
    directory is put first on sys.path and made the working directory, as the Python language
    host does. `secret_keys` are the config keys the CLI would mark secret (default none);
    `stack_file` the file the config came from when it is not `Pulumi.<stack>.yaml` there
    (the program reads it for line numbers and `--secret` paths).
    """
    program_dir = program_dir.resolve()
    saved_path = list(sys.path)
    saved_cwd = os.getcwd()
    saved_env = os.environ.pop(STACK_FILE_ENV, None)
    if stack_file is not None:
        os.environ[STACK_FILE_ENV] = str(stack_file.resolve())
    sys.path.insert(0, str(program_dir))
    os.chdir(program_dir)
    try:
        return run_function(
            lambda: runpy.run_path(str(program_dir / "__main__.py"), run_name="__main__"),
            project=project,
            stack=stack,
            config=config,
            view=view,
            secret_keys=secret_keys,
            world=world,
        )
    finally:
        sys.path[:] = saved_path
        os.chdir(saved_cwd)
        os.environ.pop(STACK_FILE_ENV, None)
        if saved_env is not None:
            os.environ[STACK_FILE_ENV] = saved_env


def run_function(
    program: Callable[[], Any],
    *,
    project: str = "ecs-inference",
    stack: str = "test",
    config: dict[str, str] | None = None,
    view: str = "update",
    secret_keys: Sequence[str] = (),
    world: World | None = None,
) -> Recording:
    """Run `program` (a function that declares resources) under recording mocks, in preview
    mode, and return what it registered. Tests of single components use this directly.
    `secret_keys`: the config keys the CLI would mark secret (default none).

    `view` is what the mocks answer (tools/views/shape.py `VIEWS`; default "update": the
    deployed stack's ids, ARNs and names; "new": a first preview, ids and computed outputs
    unknown)."""
    config = dict(config or {})
    region = config.get("aws:region") or "us-east-1"
    # The SDK drives its RPCs on the thread's current event loop. Each run gets a fresh one, so
    # a run never inherits callbacks from another, nor fails because something else (an
    # `asyncio.run` elsewhere in the same process) closed or unset the previous loop.
    loop = _replace_event_loop()
    # The caller's world collects the ids nothing described, also when the program fails;
    # without one, the stack config's own descriptions.
    if world is None:
        raw = config.get(DESCRIBED_SETTING)
        world = World.parse(json.loads(raw) if raw else None, region, "stack config")
    mocks = RecordingMocks(region, view, provider_default_tags(config), world)
    monitor = RecordingMonitor(mocks)
    set_all_config(config, list(secret_keys))
    pulumi_settings.ROOT.set(None)
    collector = _WarningCollector()
    logger = logging.getLogger(f"ecs-inference.preview.{stack}")
    logger.propagate = False
    logger.handlers = [collector]
    pulumi.runtime.set_mocks(
        mocks, project=project, stack=stack, preview=True, monitor=monitor, logger=logger
    )
    root = pulumi_settings.get_root_resource()
    saved_stack_trace = pulumi_resource_runtime._get_stack_trace
    # The SDK walks and formats the whole Python stack for every registration so the engine can
    # show source positions; nothing here reads them, and it was the largest per-resource cost
    # of a preview (~0.9 ms a resource, profiled; see docs/benchmarks.md).
    pulumi_resource_runtime._get_stack_trace = _no_stack_trace
    try:
        _sync_await(run_pulumi_func(program))
        outputs = _sync_await(_resolve(dict(root.outputs)))  # type: ignore[union-attr]
    finally:
        pulumi_resource_runtime._get_stack_trace = saved_stack_trace
        # A program that raised leaves registrations in flight: cancel and drain them, so that
        # closing the loop prints no "Task was destroyed but it is pending" after the one line
        # that reports the error.
        pending = asyncio.all_tasks(loop)
        for task in pending:
            task.cancel()
        if pending:
            loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        # The SDK keeps every apply's task in a process-wide set until it is awaited; after a
        # failed run they belong to the loop closed below, and the next run would wait on them.
        sdk: Any = pulumi_settings.SETTINGS  # its context properties are untyped
        with sdk.lock:
            sdk.outputs.clear()
        loop.close()
        monitor.close_thread_loops()
        # Leave a usable loop behind, as a fresh interpreter would have.
        _replace_event_loop()
    return Recording(
        resources=list(monitor.recorded),
        outputs=outputs,
        invokes=list(mocks.invokes),
        warnings=list(collector.messages) + mocks.warnings,
        lookups=list(mocks.lookups),
        derived=list(dict.fromkeys(world.derived)),
    )


def _replace_event_loop() -> asyncio.AbstractEventLoop:
    """Set a fresh event loop on this thread, closing the idle one it replaces: an unclosed loop
    sits in a reference cycle, and the cyclic collector may finalize its self-pipe socket before
    the loop, whose `__del__` then prints "Exception ignored ... Invalid file descriptor"."""
    try:
        previous = asyncio.get_event_loop_policy().get_event_loop()
    except RuntimeError:  # a thread other than the main one, with no loop set
        previous = None
    if previous is not None and not previous.is_running() and not previous.is_closed():
        previous.close()
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    return loop


def _no_stack_trace() -> source_pb2.StackTrace:
    return source_pb2.StackTrace()


async def _resolve(outputs: dict[str, Any]) -> dict[str, Any]:
    resolved: dict[str, Any] = {}
    for key, value in outputs.items():
        out = pulumi.Output.from_input(value)
        known = await out.is_known()
        resolved[key] = await out.future() if known else UNKNOWN
    return resolved
