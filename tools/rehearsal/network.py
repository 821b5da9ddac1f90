"""Image pull paths through subnets the program looked up (an existing network).

ECS pulls an image through the network interface of the task (awsvpc on Fargate or Managed
Instances) or of the container instance (EC2): from its subnet, ECR is reached by a default
route out (a NAT gateway, a transit gateway, an appliance; an internet gateway only with a public
IP) or through the `ecr.api` and `ecr.dkr` interface endpoints and the S3 gateway endpoint on the
subnet's route table (ECR keeps layers in S3; "Amazon ECR interface VPC endpoints"). Otherwise
every task stops with CannotPullContainerError.

Subnets the stack declares are the policy pack's to judge (`fargate-image-pull-path`); subnets
of an existing VPC are not resources, so the pack cannot see their routes. The rehearsal can: the
program read them through the data sources, and the lookups' answers (the stack file's
`preview:lookups` offline, AWS's in a real run) are in the recording. It judges every ECS
service's subnets and every Auto Scaling group's against those answers, the endpoints the VPC
has (looked up) and the endpoints the stack declares.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tools.aws_requests import Resource
from tools.rehearsal.model import SERVICE, known, listify

ASG = "aws:autoscaling/group:Group"
VPC_ENDPOINT = "aws:ec2/vpcEndpoint:VpcEndpoint"
INTERFACE = ("ecr.api", "ecr.dkr")
GATEWAY = "s3"
_TARGETS = (
    "natGatewayId",
    "transitGatewayId",
    "networkInterfaceId",
    "instanceId",
    "vpcPeeringConnectionId",
    "coreNetworkArn",
    "vpcEndpointId",
    "localGatewayId",
    "carrierGatewayId",
)


@dataclass(frozen=True)
class _Endpoint:
    service: str
    """The service's suffix (`ecr.api`, `s3`)."""
    vpc: str
    kind: str
    route_tables: tuple[str, ...]
    id: str = ""
    policy: Any = None
    """The endpoint policy (parsed), when the endpoint has one; None: full access."""
    private_dns: bool = True


def _suffix(service_name: Any) -> str | None:
    if not isinstance(service_name, str) or not service_name.startswith("com.amazonaws."):
        return None
    parts = service_name.split(".", 3)
    return parts[3] if len(parts) == 4 else None


class LookedUpNetwork:
    """The subnets, route tables and endpoints the program's lookups returned, and the endpoints
    the stack declares."""

    def __init__(self, resources: Sequence[Resource], lookups: Sequence[Any]) -> None:
        self.subnets: dict[str, Mapping[str, Any]] = {}
        self.tables: dict[str, Mapping[str, Any]] = {}
        self.main: dict[str, str] = {}
        """VPC -> its main route table."""
        self.endpoints: list[_Endpoint] = []
        # A subnet the stack creates is judged from its resources, even when the program also
        # looks it up (a pool reads its subnets' zones: pools/offerings_check.py).
        created = {
            str(i)
            for r in resources
            if r.type == "aws:ec2/subnet:Subnet"
            for i in (getattr(r, "id", None), (getattr(r, "outputs", None) or {}).get("id"))
            if i
        }
        for lookup in lookups:
            answer = lookup.answer
            if lookup.token == "aws:ec2/getSubnet:getSubnet":
                if str(answer.get("id")) not in created:
                    self.subnets[str(answer.get("id"))] = answer
            elif lookup.token == "aws:ec2/getRouteTable:getRouteTable":
                table = str(answer.get("id") or answer.get("routeTableId"))
                self.tables[table] = answer
                if any(a.get("main") for a in answer.get("associations") or ()):
                    self.main[str(answer.get("vpcId"))] = table
            elif lookup.token == "aws:ec2/getVpcEndpoint:getVpcEndpoint":
                self._endpoint(answer)
        for r in resources:
            if r.type == VPC_ENDPOINT:
                self._endpoint(r.inputs)

    def _endpoint(self, values: Mapping[str, Any]) -> None:
        service, vpc = _suffix(values.get("serviceName")), values.get("vpcId")
        if service is None or not known(vpc):
            return
        tables = values.get("routeTableIds")
        policy = values.get("policy")
        if isinstance(policy, str) and policy.strip():
            try:
                policy = json.loads(policy)
            except ValueError:
                policy = None
        self.endpoints.append(
            _Endpoint(
                service,
                str(vpc),
                str(values.get("vpcEndpointType") or "Gateway"),
                tuple(str(t) for t in listify(tables) if known(t)) if known(tables) else (),
                str(values.get("id") or ""),
                policy if isinstance(policy, Mapping) else None,
                values.get("privateDnsEnabled") is not False,
            )
        )

    def table_of(self, subnet_id: str) -> str | None:
        for table_id, table in self.tables.items():
            if any(a.get("subnetId") == subnet_id for a in table.get("associations") or ()):
                return table_id
        return self.main.get(str(self.subnets[subnet_id].get("vpcId")))

    def routed_out(self, subnet_id: str, public_ip: bool) -> bool:
        """The subnet has a default route out (a public IP for an internet gateway)."""
        table = self.tables.get(self.table_of(subnet_id) or "", {})
        for route in table.get("routes") or ():
            if route.get("cidrBlock") != "0.0.0.0/0":
                continue
            if any(route.get(k) for k in _TARGETS):
                return True
            gateway = str(route.get("gatewayId") or "")
            if gateway and (not gateway.startswith("igw-") or public_ip):
                return True
        return False

    def endpoint(self, subnet_id: str, service: str) -> _Endpoint | None:
        """The endpoint a call to `service` from the subnet goes through: an interface endpoint
        of the VPC with private DNS (its name resolves to it, NAT or not), or the S3 gateway on
        the subnet's route table."""
        vpc = str(self.subnets[subnet_id].get("vpcId"))
        table = self.table_of(subnet_id)
        for e in self.endpoints:
            if e.vpc != vpc or e.service != service:
                continue
            if (e.kind == "Interface" and e.private_dns) or (
                e.kind == "Gateway" and table in e.route_tables
            ):
                return e
        return None

    def missing(self, subnet_id: str, public_ip: bool) -> tuple[str | None, list[str]]:
        """(its route table, what a pull from the subnet lacks); nothing when it has a way."""
        table_id = self.table_of(subnet_id)
        if self.routed_out(subnet_id, public_ip):
            return table_id, []
        vpc = str(self.subnets[subnet_id].get("vpcId"))
        here = [e for e in self.endpoints if e.vpc == vpc]
        lacks = [s for s in INTERFACE if not any(e.service == s for e in here)]
        gateway_tables = [t for e in here if e.service == GATEWAY for t in e.route_tables]
        if not any(e.service == GATEWAY and e.kind != "Gateway" for e in here) and (
            table_id is None or table_id not in gateway_tables
        ):
            lacks.append(f"{GATEWAY} gateway endpoint on its route table")
        return table_id, lacks


def _subnets(resource: Resource) -> tuple[list[str], bool]:
    """The subnet ids a service's tasks or a group's instances run in, and whether the tasks get
    a public IP."""
    if resource.type == ASG:
        return [s for s in listify(resource.inputs.get("vpcZoneIdentifiers")) if known(s)], False
    config = resource.inputs.get("networkConfiguration") or {}
    if not isinstance(config, Mapping):
        return [], False
    subnets = [s for s in listify(config.get("subnets")) if known(s) and isinstance(s, str)]
    return subnets, bool(config.get("assignPublicIp"))


def pull_path_findings(
    resources: Sequence[Resource], lookups: Sequence[Any]
) -> Iterator[tuple[Resource, str]]:
    """(subject, message) for each service or group that could not pull from a looked-up
    subnet."""
    network = LookedUpNetwork(resources, lookups)
    if not network.subnets:
        return
    for resource in resources:
        if resource.type not in (SERVICE, ASG):
            continue
        subnets, public_ip = _subnets(resource)
        for subnet in subnets:
            if subnet not in network.subnets:
                continue  # declared by the stack (the pack's), or not looked up
            table, lacks = network.missing(subnet, public_ip)
            if lacks:
                who = "its tasks" if resource.type == SERVICE else "its instances"
                yield (
                    resource,
                    f"subnet {subnet} (route table {table or 'none'}) has no default route out "
                    f"and no {', '.join(lacks)}: {who} could not pull their images "
                    "(CannotPullContainerError)",
                )
