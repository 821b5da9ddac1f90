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
from collections.abc import Callable
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
from pulumi.runtime.stack import run_pulumi_func
from pulumi.runtime.sync_await import _sync_await

from ecs_inference.contracts.aws_limits import name_rule
from tools.fidelity import simulate_name
from tools.lookups import LOOKUPS

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


@dataclass
class Recording:
    """What a program run produced: resources in registration order, stack outputs, logs."""

    resources: list[RecordedResource] = field(default_factory=list)
    outputs: dict[str, Any] = field(default_factory=dict)
    invokes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

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
    """Answers what a preview cannot know; everything else is left unknown."""

    def __init__(self, region: str) -> None:
        self.region = region
        self.invokes: list[str] = []

    # -- resources ---------------------------------------------------------------------------
    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str | None, dict]:
        typ, name = args.typ, args.name
        if typ == "awsx:ec2:Vpc":
            return None, self._vpc_outputs(name, args.inputs)
        if not args.custom:
            return None, {}
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
        return {
            "vpcId": f"vpc-{_stable_hex(name, length=17)}",
            "privateSubnetIds": [
                f"subnet-{_stable_hex(name, 'private', str(i), length=17)}" for i in range(count)
            ],
            "publicSubnetIds": [
                f"subnet-{_stable_hex(name, 'public', str(i), length=17)}" for i in range(count)
            ],
        }

    # -- invokes -----------------------------------------------------------------------------
    def call(self, args: pulumi.runtime.MockCallArgs) -> dict:
        token = args.token
        self.invokes.append(token)
        answer = LOOKUPS.get(token)
        if answer is not None:
            return answer(args.args, self.region)
        raise UnansweredLookupError(token)


class RecordingMonitor(pulumi_mocks.MockMonitor):
    """A MockMonitor that also records each registration request in full."""

    def __init__(self, mocks: RecordingMocks) -> None:
        super().__init__(mocks)
        self.recorded: list[RecordedResource] = []

    def make_urn(self, parent: str, type_: str, name: str) -> str:
        # The engine leaves the root stack out of a child's qualified type; so do we, so that
        # URNs read the same as in `pulumi preview`.
        if parent.split("::")[2:3] == ["pulumi:pulumi:Stack"]:
            parent = ""
        return super().make_urn(parent, type_, name)

    def RegisterResource(self, request):  # noqa: N802 (gRPC method name)
        response = super().RegisterResource(request)
        if request.type != "pulumi:pulumi:Stack":
            inputs = plain(json_format.MessageToDict(request.object))
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
                )
            )
        return response


class _WarningCollector(logging.Handler):
    def __init__(self) -> None:
        super().__init__(level=logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


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
) -> Recording:
    """Run `<program_dir>/__main__.py` under recording mocks, in preview mode.

    Raises whatever the program raises (the caller decides how to report it). The program's
    directory is put first on sys.path and made the working directory, as the Python language
    host does.
    """
    program_dir = program_dir.resolve()
    saved_path = list(sys.path)
    saved_cwd = os.getcwd()
    sys.path.insert(0, str(program_dir))
    os.chdir(program_dir)
    try:
        return run_function(
            lambda: runpy.run_path(str(program_dir / "__main__.py"), run_name="__main__"),
            project=project,
            stack=stack,
            config=config,
        )
    finally:
        sys.path[:] = saved_path
        os.chdir(saved_cwd)


def run_function(
    program: Callable[[], Any],
    *,
    project: str = "ecs-inference",
    stack: str = "test",
    config: dict[str, str] | None = None,
) -> Recording:
    """Run `program` (a function that declares resources) under recording mocks, in preview
    mode, and return what it registered. Tests of single components use this directly."""
    config = dict(config or {})
    region = config.get("aws:region") or "us-east-1"
    # The SDK drives its RPCs on the thread's current event loop. Each run gets a fresh one, so
    # a run never inherits callbacks from another, nor fails because something else (an
    # `asyncio.run` elsewhere in the same process) closed or unset the previous loop.
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    mocks = RecordingMocks(region)
    monitor = RecordingMonitor(mocks)
    set_all_config(config)
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
        loop.close()
        # Leave a usable loop behind, as a fresh interpreter would have.
        asyncio.set_event_loop(asyncio.new_event_loop())
    return Recording(
        resources=list(monitor.recorded),
        outputs=outputs,
        invokes=list(mocks.invokes),
        warnings=list(collector.messages),
    )


def _no_stack_trace() -> source_pb2.StackTrace:
    return source_pb2.StackTrace()


async def _resolve(outputs: dict[str, Any]) -> dict[str, Any]:
    resolved: dict[str, Any] = {}
    for key, value in outputs.items():
        out = pulumi.Output.from_input(value)
        known = await out.is_known()
        resolved[key] = await out.future() if known else UNKNOWN
    return resolved
