"""Operational rules of the seed documents that only a policy can check on any stack.

Four advisories, each about a task that registers fine and then fails or costs at run time:

* ``no-hub-weights-at-task-start`` (seed A21): a container that names a Hugging Face model id
  (``org/name``) in an engine's model flag or variable, or holds a hub token, without
  ``HF_HUB_OFFLINE=1``, downloads the weights at every task start: slow cold starts, hub rate
  limits, and a deploy that fails whenever the hub does;
* ``fargate-task-definition-requires-fargate`` (B8): a Fargate launch running a task definition
  that leaves ``requiresCompatibilities`` unset; ECS then validated it as EC2-only, so a
  Fargate-invalid parameter surfaces as a failed task instead of at registration (an EC2-only
  list is the mandatory ``no-gpu-task-on-fargate-service``'s business);
* ``fargate-image-pull-path`` (B14): a Fargate service whose subnets route to neither a NAT gateway
  nor an internet gateway (with a public IP) and whose VPC lacks the ``ecr.api`` + ``ecr.dkr``
  interface endpoints and the S3 gateway endpoint: every task stops with
  ``CannotPullContainerError``;
* ``queue-workers-scale-on-backlog`` (B23): a service whose task role may ``sqs:ReceiveMessage``
  and whose only scaling tracks ``ECSServiceAverageCPUUtilization``: a GPU worker waiting on a
  slow model is not CPU-bound, so the backlog grows while the service stays small.

Each reads only what it needs, follows references through the shared ``reachability.Model``
(property dependencies first, then values) and, where a link it needs is unknown or outside the
stack, says "cannot verify" (or nothing, for a network that another stack or a component owns)
rather than guess.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

from pulumi_policy import EnforcementLevel, ResourceValidationArgs, StackValidationArgs
from pulumi_policy.proxy import UnknownValueError

from .launches import ClusterDefaults, launches
from .reachability import Model, present
from .resources import (
    EVENT_RULE_NATIVE,
    EVENT_TARGET,
    SCALING_POLICY,
    SCHEDULE,
    SERVICE,
    SUBNET,
    TASK_DEFINITION,
    TASK_SET,
    UnknownCollector,
    as_bool,
    as_list,
    container_definitions,
    get,
    get_path,
    is_native,
)
from .rules import EXEMPT_ONLY, Config, Report, judge_each, resource_rule, stack_rule

Resource = Any

# --- types these rules follow (none of the other rules reads them) ---------------------------

VPC = frozenset({"aws:ec2/vpc:Vpc", "aws-native:ec2:VPC"})
ROUTE_TABLE = frozenset({"aws:ec2/routeTable:RouteTable", "aws-native:ec2:RouteTable"})
ROUTE = frozenset({"aws:ec2/route:Route", "aws-native:ec2:Route"})
ROUTE_TABLE_ASSOCIATION = frozenset(
    {
        "aws:ec2/routeTableAssociation:RouteTableAssociation",
        "aws-native:ec2:SubnetRouteTableAssociation",
    }
)
INTERNET_GATEWAY = frozenset(
    {"aws:ec2/internetGateway:InternetGateway", "aws-native:ec2:InternetGateway"}
)
NAT_GATEWAY = frozenset({"aws:ec2/natGateway:NatGateway", "aws-native:ec2:NatGateway"})
VPC_ENDPOINT = frozenset({"aws:ec2/vpcEndpoint:VpcEndpoint", "aws-native:ec2:VpcEndpoint"})
ROLE = frozenset({"aws:iam/role:Role", "aws-native:iam:Role"})
ROLE_POLICY = frozenset({"aws:iam/rolePolicy:RolePolicy", "aws-native:iam:RolePolicy"})
ROLE_POLICY_ATTACHMENT = frozenset({"aws:iam/rolePolicyAttachment:RolePolicyAttachment"})
MANAGED_POLICY = frozenset({"aws:iam/policy:Policy", "aws-native:iam:ManagedPolicy"})
SCALABLE_TARGET = frozenset(
    {"aws:appautoscaling/target:Target", "aws-native:applicationautoscaling:ScalableTarget"}
)


def _known(props: Mapping[str, Any], key: str) -> Any:
    """``props[key]``, None when absent or unknown at preview."""
    try:
        return get(props, key)
    except UnknownValueError:
        return None


# --- A21: weights from the hub at task start -------------------------------------------------

#: Container variables whose value the engines read as the model to load: TGI / TEI
#: ``MODEL_ID``, SageMaker-style containers ``HF_MODEL_ID``, llama.cpp / generic ``MODEL``.
MODEL_VARIABLES = frozenset(
    {"MODEL_ID", "HF_MODEL_ID", "MODEL", "MODEL_NAME_OR_PATH", "MODEL_PATH", "HF_MODEL"}
)
#: Command-line flags naming the model (or its tokenizer) to load: vLLM ``--model`` /
#: ``--tokenizer``, TGI / TEI ``--model-id`` / ``--tokenizer-name``, SGLang ``--model-path`` /
#: ``--tokenizer-path``.
MODEL_FLAGS = frozenset(
    {
        "--model",
        "--model-id",
        "--model-path",
        "--model-name-or-path",
        "--tokenizer",
        "--tokenizer-name",
        "--tokenizer-path",
    }
)
#: Variables carrying a hub token and variables that keep the hub client offline (see
#: ``contracts/engine.py``: HUB_TOKEN_VARIABLES, HUB_OFFLINE_VARIABLES).
HUB_TOKEN_VARIABLES = ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN")
HUB_OFFLINE_VARIABLES = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")

# A hub repo id is ``org/name``: one slash, no scheme, no tag or digest (``:``/``@``), and no
# leading ``/``, ``.`` or ``~`` (paths). Image references (``org/image:tag``) carry a tag.
_HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")
#: First segments of relative paths that engines treat as local directories, never repo ids.
LOCAL_ROOTS = frozenset(
    {"mnt", "opt", "models", "model", "data", "tmp", "var", "srv", "home", "weights", "cache"}
)


def hub_model_id(value: Any) -> str | None:
    """``value`` when it looks like a Hugging Face repo id, else None.

    >>> hub_model_id("meta-llama/Llama-3.1-8B-Instruct")
    'meta-llama/Llama-3.1-8B-Instruct'
    >>> [hub_model_id(v) for v in ("/mnt/weights/llama", "s3://b/m", "vllm/vllm-openai:v0.9")]
    [None, None, None]
    """
    if not isinstance(value, str):
        return None
    text = value.strip()
    if not _HUB_ID.match(text):
        return None
    if text.split("/", 1)[0].lower() in LOCAL_ROOTS:
        return None
    return text


def _variables(container: Mapping[str, Any], key: str) -> dict[str, Any]:
    return {
        str(get(item, "name")): get(item, "value")
        for item in as_list(get(container, key))
        if isinstance(item, Mapping) and get(item, "name") is not None
    }


def _offline(environment: Mapping[str, Any]) -> bool:
    return any(
        str(environment.get(name, "")).strip().lower() in {"1", "true", "yes", "on"}
        for name in HUB_OFFLINE_VARIABLES
    )


def _flag_values(args: Sequence[Any]) -> Iterator[tuple[str, Any]]:
    """(flag, value) for every model flag in a command, ``--flag value`` or ``--flag=value``;
    also ``vllm serve <model>``'s positional model."""
    words = [w for w in args if isinstance(w, str)]
    for i, word in enumerate(words):
        flag, eq, inline = word.partition("=")
        if flag in MODEL_FLAGS:
            if eq:
                yield flag, inline
            elif i + 1 < len(words):
                yield flag, words[i + 1]
        if (
            word == "serve"
            and 0 < i < len(words) - 1
            and words[i - 1].rsplit("/", 1)[-1] == "vllm"
            and not words[i + 1].startswith("-")
        ):
            yield "vllm serve", words[i + 1]


def hub_downloads(container: Mapping[str, Any]) -> list[str]:
    """Why ``container`` fetches weights from the hub at start (empty: it does not)."""
    environment = _variables(container, "environment")
    if _offline(environment):
        return []
    reasons: list[str] = []
    for name in sorted(MODEL_VARIABLES & environment.keys()):
        model_id = hub_model_id(environment[name])
        if model_id:
            reasons.append(f"{name}={model_id}")
    # The process's argv is the entry point followed by the command (``vllm serve`` + model).
    argv = [*as_list(get(container, "entryPoint")), *as_list(get(container, "command"))]
    for flag, value in _flag_values(argv):
        model_id = hub_model_id(value)
        if model_id:
            reasons.append(f"{flag} {model_id}")
    secrets = _variables(container, "secrets")
    for name in HUB_TOKEN_VARIABLES:
        if name in environment or name in secrets:
            reasons.append(f"{name} set")
    return reasons


def _check_hub(args: ResourceValidationArgs, config: Config, report: Report) -> None:
    for container in container_definitions(args.props):
        reasons = hub_downloads(container)
        if reasons:
            report(
                f"container {get(container, 'name', '?')!r} pulls from the Hugging Face hub at "
                f"start ({'; '.join(reasons)}) without HF_HUB_OFFLINE=1.",
                None,
            )


no_hub_weights_at_task_start = resource_rule(
    name="no-hub-weights-at-task-start",
    description=(
        "A container that names a Hugging Face model id (org/name) in an engine's model flag "
        "(--model, --model-id, --model-path, --tokenizer..., vllm serve <id>) or variable "
        "(MODEL_ID, HF_MODEL_ID, MODEL...), or holds HF_TOKEN, without HF_HUB_OFFLINE=1 "
        "downloads the weights at every task start: slow cold starts, hub rate limits, a "
        "deploy that fails with the hub. Fix: stage the weights in S3/EFS/the image first, "
        "point the engine at that path and set HF_HUB_OFFLINE=1."
    ),
    level=EnforcementLevel.ADVISORY,
    types=TASK_DEFINITION,
    schema=EXEMPT_ONLY,
    check=_check_hub,
)


# --- B8: Fargate launches of task definitions that do not declare Fargate --------------------

_LAUNCHERS = SERVICE | TASK_SET | EVENT_TARGET | EVENT_RULE_NATIVE | SCHEDULE


def _check_declares_fargate(
    args: StackValidationArgs, config: Config, report: Report, unknowns: UnknownCollector
) -> None:
    model = Model.of_stack(args.resources, unknowns)
    defaults = ClusterDefaults(model)

    def judge(launcher: Resource) -> None:
        for launch in launches(launcher):
            if not launch.on_fargate(defaults):
                continue
            for task in launch.task_definitions(model):
                if as_list(get(task.props, "requiresCompatibilities")):
                    continue  # FARGATE listed, or EC2-only: the mandatory Fargate rule's case
                report(
                    f"{launch.label} runs task definition {task.name!r} on Fargate "
                    f"({launch.why}), but the task definition does not set "
                    "requiresCompatibilities; ECS validated it for EC2 only.",
                    launcher.urn,
                )

    judge_each(model.of(_LAUNCHERS), _LAUNCHERS, config, unknowns, judge)


fargate_task_definition_requires_fargate = stack_rule(
    name="fargate-task-definition-requires-fargate",
    description=(
        "Whatever launches tasks on Fargate (a service or task set with launchType FARGATE or "
        "a FARGATE / FARGATE_SPOT provider, or a cluster default that is Fargate; EventBridge "
        "targets, schedules) should run a task definition with requiresCompatibilities "
        "[FARGATE]: without it ECS validates the task definition for EC2 only, and a "
        "parameter Fargate rejects surfaces as a failed task instead of at registration. "
        "Fix: set requiresCompatibilities: [FARGATE] (with task-level cpu and memory)."
    ),
    level=EnforcementLevel.ADVISORY,
    types=_LAUNCHERS | TASK_DEFINITION,
    schema=EXEMPT_ONLY,
    check=_check_declares_fargate,
)


# --- B14: an image pull path for Fargate tasks -----------------------------------------------

#: Interface endpoints (ecr.api, ecr.dkr) and the gateway endpoint (s3, where ECR keeps image
#: layers) a Fargate task in a subnet without internet egress needs to pull from ECR.
ECR_ENDPOINT_SUFFIXES = ("ecr.api", "ecr.dkr", "s3")
#: Route targets that reach the internet only through something this rule cannot see (transit
#: gateway, appliance ENI, peering, VPN, Gateway Load Balancer endpoint, instance, local zone):
#: the path may exist, so the route is not held against the subnet.
_OTHER_EGRESS = (
    "transitGatewayId",
    "networkInterfaceId",
    "vpcPeeringConnectionId",
    "instanceId",
    "vpcEndpointId",
    "localGatewayId",
    "carrierGatewayId",
    "coreNetworkArn",
)
_IPV4_DEFAULT = "0.0.0.0/0"


@dataclass(frozen=True)
class Egress:
    """What a subnet's routes offer for pulling an image: NAT, an internet gateway, another
    egress the rule cannot follow, and routes it could not read (a table outside the stack)."""

    nat: bool = False
    igw: bool = False
    other: bool = False
    unknown: str | None = None

    def merge(self, other: Egress) -> Egress:
        return Egress(
            self.nat or other.nat,
            self.igw or other.igw,
            self.other or other.other,
            self.unknown or other.unknown,
        )


class PullNetwork:
    """Route tables, routes and VPC endpoints of a stack, indexed once per rule run."""

    def __init__(self, model: Model) -> None:
        self.model = model
        self._tables_of_subnet: dict[str, list[Resource] | None] = {}
        for assoc in model.of(ROUTE_TABLE_ASSOCIATION):
            subnets = model.refs(assoc, "subnetId", SUBNET, silent_external=True)
            tables = model.refs(
                assoc,
                "routeTableId",
                ROUTE_TABLE,
                what="which routes its subnet uses",
                silent_external=True,
            )
            for subnet in subnets:
                known = self._tables_of_subnet.setdefault(subnet.urn, [])
                if not tables or known is None:
                    self._tables_of_subnet[subnet.urn] = None  # a table outside the stack
                else:
                    known.extend(tables)
        self._routes: dict[str, list[Mapping[str, Any]]] = {}
        self._unknown_routes: set[str] = set()
        for table in model.of(ROUTE_TABLE):
            try:
                routes = as_list(get(table.props, "routes"))
            except UnknownValueError:
                self._unknown_routes.add(table.urn)
                continue
            self._routes[table.urn] = [r for r in routes if isinstance(r, Mapping)]
        self._route_resources: dict[str, list[Resource]] = {}
        for route in model.of(ROUTE):
            for table in model.refs(
                route, "routeTableId", ROUTE_TABLE, what="which route table it extends"
            ):
                self._route_resources.setdefault(table.urn, []).append(route)
        self.endpoints = model.of(VPC_ENDPOINT)

    def egress(self, subnet: Resource) -> Egress:
        """The egress routes of ``subnet``'s route tables."""
        tables = self._tables_of_subnet.get(subnet.urn, [])
        if tables is None:
            return Egress(unknown="its route table association names a table outside the stack")
        if not tables:
            return Egress(
                unknown="no route table association in this stack (it uses the VPC's main "
                "route table)"
            )
        found = Egress()
        for table in tables:
            if table.urn in self._unknown_routes:
                found = found.merge(Egress(unknown=f"route table {table.name!r} routes unknown"))
            for props in self._routes.get(table.urn, []):
                found = found.merge(self._route(props, table, None))
            for route in self._route_resources.get(table.urn, []):
                found = found.merge(self._route(route.props, route, route))
        return found

    def _route(self, props: Mapping[str, Any], owner: Resource, route: Resource | None) -> Egress:
        """One route's egress; ``route`` is the Route resource, None for an inline route of
        the route table ``owner``."""
        cidr_key = "cidrBlock" if route is None else "destinationCidrBlock"
        try:
            destination = get(props, cidr_key)
        except UnknownValueError:
            destination = _IPV4_DEFAULT  # unknown destination: assume it may be the default
        if destination is None and present(props, "destinationPrefixListId"):
            destination = _IPV4_DEFAULT  # a prefix list may hold public ranges
        if destination != _IPV4_DEFAULT:
            return Egress()  # IPv6-only or a narrower range: not how ECR is reached
        if present(props, "natGatewayId"):
            return Egress(nat=True)
        if any(present(props, key) for key in _OTHER_EGRESS):
            return Egress(other=True)
        if not present(props, "gatewayId"):
            return Egress()
        gateway = _known(props, "gatewayId")
        if gateway == "local":
            return Egress()
        if isinstance(gateway, str) and (
            gateway.startswith("igw-") or self.model.lookup(gateway, INTERNET_GATEWAY)
        ):
            return Egress(igw=True)
        if gateway is None:  # unknown at preview: the engine recorded what it depends on
            holder, key = (owner, "routes") if route is None else (route, "gatewayId")
            deps = (holder.property_dependencies or {}).get(key) or []
            if any(d.resource_type in INTERNET_GATEWAY for d in deps):
                return Egress(igw=True)
        return Egress(other=True)  # a gateway this rule cannot name (VPN, or unknown)

    def endpoints_in(self, subnet: Resource) -> tuple[set[str], bool]:
        """(endpoint services present in ``subnet``'s VPC, whether some endpoint's VPC or
        service could not be read)."""
        vpc = self._vpc_key(subnet, "vpcId")
        found: set[str] = set()
        unreadable = False
        for endpoint in self.endpoints:
            key = self._vpc_key(endpoint, "vpcId")
            if key is None or vpc is None:
                unreadable = True
                continue
            if key != vpc:
                continue
            service = _known(endpoint.props, "serviceName")
            if not isinstance(service, str):
                unreadable = True
                continue
            for suffix in ECR_ENDPOINT_SUFFIXES:
                if service.endswith("." + suffix):
                    found.add(suffix)
        return found, unreadable

    def _vpc_key(self, resource: Resource, prop: str) -> str | None:
        vpcs = self.model.refs(resource, prop, VPC, silent_external=True)
        if vpcs:
            return vpcs[0].urn
        value = _known(resource.props, prop)
        return value if isinstance(value, str) and value else None


def _awsvpc(service: Resource) -> tuple[str, Callable[[], list[Any]], bool]:
    """(input key, subnet values, assigns a public IP) of a service's awsvpc configuration."""
    config = get(service.props, "networkConfiguration")
    if is_native(service.resource_type):
        config = get(config, "awsvpcConfiguration") if config is not None else None
    if config is None:
        return "networkConfiguration", lambda: [], False
    public = as_bool(get(config, "assignPublicIp", False)) or (
        str(get(config, "assignPublicIp", "")).upper() == "ENABLED"
    )
    return "networkConfiguration", lambda: list(as_list(get(config, "subnets"))), public


def _check_pull_path(
    args: StackValidationArgs, config: Config, report: Report, unknowns: UnknownCollector
) -> None:
    model = Model.of_stack(args.resources, unknowns)
    defaults = ClusterDefaults(model)
    network: list[PullNetwork] = []

    def judge(service: Resource) -> None:
        if not any(launch.on_fargate(defaults) for launch in launches(service)):
            return
        key, values, public_ip = _awsvpc(service)
        subnets = model.refs(service, key, SUBNET, values=values, silent_external=True)
        if not subnets:
            return  # subnets of another stack or a component: not this stack's network to judge
        if not network:
            network.append(PullNetwork(model))
        net = network[0]
        blocked: list[str] = []
        for subnet in subnets:
            egress = net.egress(subnet)
            if egress.nat or egress.other or (egress.igw and public_ip):
                continue
            endpoints, unreadable = net.endpoints_in(subnet)
            if len(endpoints) == len(ECR_ENDPOINT_SUFFIXES):
                continue
            if egress.unknown or unreadable:
                unknowns.note(
                    f"cannot verify whether Fargate service {service.name!r} can pull its "
                    f"image: subnet {subnet.name!r} has "
                    f"{egress.unknown or 'VPC endpoints whose VPC or service is unknown'}.",
                    service.urn,
                )
                continue
            missing = [s for s in ECR_ENDPOINT_SUFFIXES if s not in endpoints]
            why = (
                "an internet gateway route but no public IP"
                if egress.igw
                else "no NAT or internet gateway route"
            )
            blocked.append(f"{subnet.name!r} ({why}; no {', '.join(missing)} endpoint)")
        if blocked:
            report(
                f"Fargate service {service.name!r} cannot pull its image from subnet(s) "
                f"{', '.join(blocked)}: tasks stop with CannotPullContainerError.",
                service.urn,
            )

    judge_each(model.of(SERVICE), SERVICE, config, unknowns, judge)


fargate_image_pull_path = stack_rule(
    name="fargate-image-pull-path",
    description=(
        "A Fargate service's tasks pull their image through their own ENI: each of its "
        "subnets needs a 0.0.0.0/0 route to a NAT gateway (or to an internet gateway with "
        "assignPublicIp), or its VPC needs the ecr.api and ecr.dkr interface endpoints and the "
        "S3 gateway endpoint. Subnets from another stack or a component (awsx) are not "
        "judged; route tables the stack does not declare give a 'cannot verify' note. Fix: add "
        "a NAT gateway route or the three VPC endpoints."
    ),
    level=EnforcementLevel.ADVISORY,
    types=SERVICE,
    schema=EXEMPT_ONLY,
    check=_check_pull_path,
)


# --- B23: queue workers scaled on CPU --------------------------------------------------------

_CPU_METRIC = "ECSServiceAverageCPUUtilization"
_SERVICE_RESOURCE_ID = re.compile(r"^service/[^/]+/([^/]+)$")


def _documents(value: Any) -> list[Mapping[str, Any]]:
    """A policy document (JSON string or object) as a list of one mapping, [] if unreadable."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return []
    return [value] if isinstance(value, Mapping) else []


def allows_receive(document: Mapping[str, Any]) -> bool:
    """Whether an IAM policy document allows ``sqs:ReceiveMessage`` through an ``sqs:``
    action (``sqs:*``, ``sqs:Receive*``...; a bare ``*`` is an admin role, not a consumer).

    >>> allows_receive({"Statement": [{"Effect": "Allow", "Action": "sqs:Receive*"}]})
    True
    """
    for statement in as_list(get(document, "Statement")):
        if not isinstance(statement, Mapping):
            continue
        if str(get(statement, "Effect", "")).lower() != "allow":
            continue
        for action in as_list(get(statement, "Action")):
            text = str(action).lower()
            if text.startswith("sqs:") and fnmatchcase("sqs:receivemessage", text):
                return True
    return False


class RolePolicies:
    """IAM policy documents per role: inline (``inlinePolicies`` / aws-native ``policies``),
    role policies, attached customer managed policies (aws) and aws-native managed policies
    naming the role. Built once per rule run, only when a CPU-scaled service asks."""

    def __init__(self, model: Model) -> None:
        self.model = model
        self.docs: dict[str, list[Callable[[], Any]]] = {}
        # Role policies name their role by name (aws ``role``, aws-native ``roleName``); the
        # shared identity index knows aws ``name`` but not aws-native ``roleName``.
        self._by_name: dict[str, list[Resource]] = {}
        for role in model.of(ROLE):
            for key in ("name", "roleName"):
                value = _known(role.props, key)
                if isinstance(value, str) and value:
                    self._by_name.setdefault(value, []).append(role)
        for role in model.of(ROLE):
            key = "policies" if is_native(role.resource_type) else "inlinePolicies"
            field = "policyDocument" if is_native(role.resource_type) else "policy"
            for item in as_list(_known(role.props, key)):
                if isinstance(item, Mapping):
                    self._add(role, lambda i=item, f=field: get(i, f))
        for rp in model.of(ROLE_POLICY):
            native = is_native(rp.resource_type)
            for role in self._roles(rp, "roleName" if native else "role"):
                field = "policyDocument" if native else "policy"
                self._add(role, lambda r=rp, f=field: get(r.props, f))
        for attachment in model.of(ROLE_POLICY_ATTACHMENT):
            roles = self._roles(attachment, "role")
            managed = model.refs(attachment, "policyArn", MANAGED_POLICY, silent_external=True)
            for role in roles:
                for policy in managed:
                    self._add(role, lambda p=policy: get(p.props, "policy"))
        for policy in model.of(MANAGED_POLICY):
            if not is_native(policy.resource_type):
                continue
            for role in self._roles(policy, "roles"):
                self._add(role, lambda p=policy: get(p.props, "policyDocument"))

    def _roles(self, resource: Resource, key: str) -> list[Resource]:
        found = self.model.refs(resource, key, ROLE, silent_external=True)
        if found:
            return found
        names = as_list(_known(resource.props, key))
        return [r for n in names if isinstance(n, str) for r in self._by_name.get(n, ())]

    def _add(self, role: Resource, read: Callable[[], Any]) -> None:
        self.docs.setdefault(role.urn, []).append(read)

    def consumes(self, role: Resource) -> bool | None:
        """True when a policy of ``role`` allows sqs:ReceiveMessage; None when it does not
        but some document is unknown at preview."""
        unknown = False
        for read in self.docs.get(role.urn, ()):
            try:
                documents = _documents(read())
            except UnknownValueError:
                unknown = True
                continue
            if any(allows_receive(d) for d in documents):
                return True
        return None if unknown else False


class ServiceScaling:
    """The scaling policies of each service: policy -> (scalable target ->) service, by
    property dependency, then by the ``service/<cluster>/<name>`` resource id."""

    def __init__(self, model: Model) -> None:
        self.model = model
        self.policies: dict[str, list[Resource]] = {}
        self.unlinked: list[Resource] = []
        names: dict[str, list[Resource]] = {}
        for service in model.of(SERVICE):
            for name in {str(_known(service.props, "name") or ""), str(service.name)} - {""}:
                names.setdefault(name, []).append(service)
        self._names = names
        for policy in model.of(SCALING_POLICY):
            services = self._services(policy, ("resourceId", "scalingTargetId"))
            if not services:
                self.unlinked.append(policy)
            for service in services:
                self.policies.setdefault(service.urn, []).append(policy)

    def _services(self, resource: Resource, keys: tuple[str, ...]) -> list[Resource]:
        recorded = resource.property_dependencies or {}
        found: dict[str, Resource] = {}
        for key in keys:
            for dep in recorded.get(key) or ():
                if dep.resource_type in SERVICE:
                    found[dep.urn] = dep
                elif dep.resource_type in SCALABLE_TARGET:
                    for s in self._services(dep, ("resourceId",)):
                        found[s.urn] = s
            value = _known(resource.props, key)
            if not isinstance(value, str):
                continue
            match = _SERVICE_RESOURCE_ID.match(value)
            if match:
                for s in self._names.get(match.group(1), ()):
                    found[s.urn] = s
            for target in self.model.lookup(value, SCALABLE_TARGET):
                for s in self._services(target, ("resourceId",)):
                    found[s.urn] = s
        return list(found.values())


def cpu_only(policies: Sequence[Resource]) -> bool:
    """Every policy tracks ECSServiceAverageCPUUtilization (and there is one)."""
    if not policies:
        return False
    for policy in policies:
        if str(get(policy.props, "policyType", "")) != "TargetTrackingScaling":
            return False
        metric = get_path(
            policy.props,
            "targetTrackingScalingPolicyConfiguration",
            "predefinedMetricSpecification",
            "predefinedMetricType",
        )
        if metric != _CPU_METRIC:
            return False
    return True


def _check_queue_scaling(
    args: StackValidationArgs, config: Config, report: Report, unknowns: UnknownCollector
) -> None:
    model = Model.of_stack(args.resources, unknowns)
    if not model.of(SCALING_POLICY):
        return
    scaling = ServiceScaling(model)
    roles: list[RolePolicies] = []

    def judge(service: Resource) -> None:
        if not cpu_only(scaling.policies.get(service.urn, [])):
            return
        if not roles:
            roles.append(RolePolicies(model))
        verdict: bool | None = False
        for task in model.task_definitions(service):
            for role in model.refs(task, "taskRoleArn", ROLE, silent_external=True):
                consumes = roles[0].consumes(role)
                if consumes:
                    verdict = True
                    break
                if consumes is None:
                    verdict = None
            if verdict:
                break
        if verdict is None:
            unknowns.note(
                f"cannot verify whether service {service.name!r} (scaled on CPU only) consumes "
                "an SQS queue: its task role's policy is unknown at preview.",
                service.urn,
            )
            return
        if not verdict:
            return
        if scaling.unlinked:
            unknowns.note(
                f"cannot verify how queue consumer {service.name!r} scales: scaling policy "
                f"{scaling.unlinked[0].name!r} names no service of this stack.",
                service.urn,
            )
            return
        report(
            f"service {service.name!r} consumes an SQS queue (task role allows "
            "sqs:ReceiveMessage) but scales only on ECSServiceAverageCPUUtilization.",
            service.urn,
        )

    judge_each(model.of(SERVICE), SERVICE, config, unknowns, judge)


queue_workers_scale_on_backlog = stack_rule(
    name="queue-workers-scale-on-backlog",
    description=(
        "A service whose task role may sqs:ReceiveMessage is a queue worker; when its only "
        "scaling policy tracks ECSServiceAverageCPUUtilization it stays small while the "
        "backlog grows (a worker waiting on a model is not CPU-bound). Fix: scale on backlog "
        "per task (a customized metric of ApproximateNumberOfMessagesVisible divided by the "
        "running task count, or step scaling on the queue depth)."
    ),
    level=EnforcementLevel.ADVISORY,
    types=SERVICE,
    schema=EXEMPT_ONLY,
    check=_check_queue_scaling,
)

POLICIES = [
    no_hub_weights_at_task_start,
    fargate_task_definition_requires_fargate,
    fargate_image_pull_path,
    queue_workers_scale_on_backlog,
]
