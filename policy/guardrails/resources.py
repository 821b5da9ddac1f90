"""Reading resources as they reach a policy: type families, property readers, correlation.

Every rule in this pack reads resources from two providers whose shapes differ:

* ``pulumi-aws`` (``aws:...`` tokens): ECS container definitions are a JSON *string*, load
  balancer attributes are top-level inputs (``idleTimeout``, ``internal``), target group
  attributes too (``deregistrationDelay``, ``targetType``);
* ``pulumi-aws-native`` (``aws-native:...`` tokens, the CloudFormation shapes): container
  definitions are a *list* of objects, and load balancer / target group attributes are
  ``{key, value}`` lists (``loadBalancerAttributes``, ``targetGroupAttributes``).

Values unknown during preview arrive wrapped in pulumi_policy's unknown-checking proxy, which
raises ``UnknownValueError`` when such a value is *read*; pulumi_policy turns that into an
advisory "can't run policy during preview" note. Readers here therefore read lazily (only the
keys a decision needs, in the order it needs them) and never swallow the error, with one
exception: :class:`UnknownCollector` lets a *stack* policy finish judging every other resource
before re-raising the first unknown, so one unknown ARN does not hide violations elsewhere.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from pulumi_policy.proxy import UnknownValueError, _DictProxy  # pyright: ignore[reportPrivateUsage]

from . import aws_limits
from .exemptions import EXEMPT_SCHEMA, matching_entries
from .values import UndecidableValueError, parse_document

__all__ = ["EXEMPT_SCHEMA"]

# --- type families ---------------------------------------------------------------------------

TASK_DEFINITION = frozenset(
    {"aws:ecs/taskDefinition:TaskDefinition", "aws-native:ecs:TaskDefinition"}
)
SERVICE = frozenset({"aws:ecs/service:Service", "aws-native:ecs:Service"})
LOAD_BALANCER = frozenset(
    {
        "aws:lb/loadBalancer:LoadBalancer",
        "aws:alb/loadBalancer:LoadBalancer",
        "aws-native:elasticloadbalancingv2:LoadBalancer",
    }
)
LISTENER = frozenset(
    {
        "aws:lb/listener:Listener",
        "aws:alb/listener:Listener",
        "aws-native:elasticloadbalancingv2:Listener",
    }
)
LISTENER_RULE = frozenset(
    {
        "aws:lb/listenerRule:ListenerRule",
        "aws:alb/listenerRule:ListenerRule",
        "aws-native:elasticloadbalancingv2:ListenerRule",
    }
)
TARGET_GROUP = frozenset(
    {
        "aws:lb/targetGroup:TargetGroup",
        "aws:alb/targetGroup:TargetGroup",
        "aws-native:elasticloadbalancingv2:TargetGroup",
    }
)
SECURITY_GROUP = frozenset({"aws:ec2/securityGroup:SecurityGroup", "aws-native:ec2:SecurityGroup"})
INGRESS_RULE = frozenset(
    {
        "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule",
        "aws:ec2/securityGroupRule:SecurityGroupRule",
        "aws-native:ec2:SecurityGroupIngress",
    }
)
SCALING_POLICY = frozenset(
    {"aws:appautoscaling/policy:Policy", "aws-native:applicationautoscaling:ScalingPolicy"}
)
CAPACITY_PROVIDER = frozenset(
    {"aws:ecs/capacityProvider:CapacityProvider", "aws-native:ecs:CapacityProvider"}
)
AUTOSCALING_GROUP = frozenset(
    {"aws:autoscaling/group:Group", "aws-native:autoscaling:AutoScalingGroup"}
)

CLUSTER = frozenset({"aws:ecs/cluster:Cluster", "aws-native:ecs:Cluster"})
CLUSTER_CAPACITY_PROVIDERS = frozenset(
    {
        "aws:ecs/clusterCapacityProviders:ClusterCapacityProviders",
        "aws-native:ecs:ClusterCapacityProviderAssociations",
    }
)
TASK_SET = frozenset({"aws:ecs/taskSet:TaskSet", "aws-native:ecs:TaskSet"})
EXPRESS_SERVICE = frozenset(
    {"aws:ecs/expressGatewayService:ExpressGatewayService", "aws-native:ecs:ExpressGatewayService"}
)
EVENT_TARGET = frozenset({"aws:cloudwatch/eventTarget:EventTarget"})
EVENT_RULE_NATIVE = frozenset({"aws-native:events:Rule"})
SCHEDULE = frozenset({"aws:scheduler/schedule:Schedule", "aws-native:scheduler:Schedule"})
BATCH_JOB_DEFINITION = frozenset(
    {"aws:batch/jobDefinition:JobDefinition", "aws-native:batch:JobDefinition"}
)
BATCH_JOB_QUEUE = frozenset({"aws:batch/jobQueue:JobQueue", "aws-native:batch:JobQueue"})
BATCH_COMPUTE_ENVIRONMENT = frozenset(
    {"aws:batch/computeEnvironment:ComputeEnvironment", "aws-native:batch:ComputeEnvironment"}
)
PIPE = frozenset({"aws:pipes/pipe:Pipe", "aws-native:pipes:Pipe"})
STATE_MACHINE = frozenset(
    {"aws:sfn/stateMachine:StateMachine", "aws-native:stepfunctions:StateMachine"}
)
CLASSIC_ELB = frozenset({"aws:elb/loadBalancer:LoadBalancer"})
TG_ATTACHMENT = frozenset(
    {
        "aws:lb/targetGroupAttachment:TargetGroupAttachment",
        "aws:alb/targetGroupAttachment:TargetGroupAttachment",
    }
)
HTTP_API = frozenset({"aws:apigatewayv2/api:Api", "aws-native:apigatewayv2:Api"})
HTTP_ROUTE = frozenset({"aws:apigatewayv2/route:Route", "aws-native:apigatewayv2:Route"})
HTTP_INTEGRATION = frozenset(
    {"aws:apigatewayv2/integration:Integration", "aws-native:apigatewayv2:Integration"}
)
HTTP_VPC_LINK = frozenset({"aws:apigatewayv2/vpcLink:VpcLink", "aws-native:apigatewayv2:VpcLink"})
REST_API = frozenset({"aws:apigateway/restApi:RestApi", "aws-native:apigateway:RestApi"})
REST_METHOD = frozenset({"aws:apigateway/method:Method", "aws-native:apigateway:Method"})
REST_INTEGRATION = frozenset({"aws:apigateway/integration:Integration"})
REST_VPC_LINK = frozenset({"aws:apigateway/vpcLink:VpcLink", "aws-native:apigateway:VpcLink"})
DISTRIBUTION = frozenset(
    {"aws:cloudfront/distribution:Distribution", "aws-native:cloudfront:Distribution"}
)
VPC_ORIGIN = frozenset({"aws:cloudfront/vpcOrigin:VpcOrigin", "aws-native:cloudfront:VpcOrigin"})
APP_RUNNER = frozenset({"aws:apprunner/service:Service", "aws-native:apprunner:Service"})
FUNCTION_URL = frozenset({"aws:lambda/functionUrl:FunctionUrl", "aws-native:lambda:Url"})
FUNCTION = frozenset({"aws:lambda/function:Function", "aws-native:lambda:Function"})
DNS_RECORD = frozenset({"aws:route53/record:Record", "aws-native:route53:RecordSet"})
INSTANCE = frozenset({"aws:ec2/instance:Instance", "aws-native:ec2:Instance"})
LAUNCH_TEMPLATE = frozenset(
    {"aws:ec2/launchTemplate:LaunchTemplate", "aws-native:ec2:LaunchTemplate"}
)
LAUNCH_CONFIGURATION = frozenset(
    {
        "aws:ec2/launchConfiguration:LaunchConfiguration",
        "aws-native:autoscaling:LaunchConfiguration",
    }
)
NETWORK_INTERFACE = frozenset(
    {"aws:ec2/networkInterface:NetworkInterface", "aws-native:ec2:NetworkInterface"}
)
SUBNET = frozenset({"aws:ec2/subnet:Subnet", "aws-native:ec2:Subnet"})
EIP = frozenset({"aws:ec2/eip:Eip", "aws-native:ec2:Eip"})
EIP_ASSOCIATION = frozenset(
    {"aws:ec2/eipAssociation:EipAssociation", "aws-native:ec2:EipAssociation"}
)
VPC_ENDPOINT = frozenset({"aws:ec2/vpcEndpoint:VpcEndpoint", "aws-native:ec2:VpcEndpoint"})
PREFIX_LIST = frozenset(
    {"aws:ec2/managedPrefixList:ManagedPrefixList", "aws-native:ec2:PrefixList"}
)
PREFIX_LIST_ENTRY = frozenset({"aws:ec2/managedPrefixListEntry:ManagedPrefixListEntry"})
DEFAULT_SECURITY_GROUP = frozenset({"aws:ec2/defaultSecurityGroup:DefaultSecurityGroup"})
# Global Accelerator: standard (any endpoint type) and custom routing (VPC subnets).
GA_ACCELERATOR = frozenset(
    {
        "aws:globalaccelerator/accelerator:Accelerator",
        "aws-native:globalaccelerator:Accelerator",
        "aws:globalaccelerator/customRoutingAccelerator:CustomRoutingAccelerator",
    }
)
GA_LISTENER = frozenset(
    {
        "aws:globalaccelerator/listener:Listener",
        "aws-native:globalaccelerator:Listener",
        "aws:globalaccelerator/customRoutingListener:CustomRoutingListener",
    }
)
GA_ENDPOINT_GROUP = frozenset(
    {
        "aws:globalaccelerator/endpointGroup:EndpointGroup",
        "aws-native:globalaccelerator:EndpointGroup",
    }
)
GA_CUSTOM_ENDPOINT_GROUP = frozenset(
    {"aws:globalaccelerator/customRoutingEndpointGroup:CustomRoutingEndpointGroup"}
)
BEANSTALK_ENVIRONMENT = frozenset(
    {"aws:elasticbeanstalk/environment:Environment", "aws-native:elasticbeanstalk:Environment"}
)
LIGHTSAIL_CONTAINERS = frozenset(
    {
        "aws:lightsail/containerServiceDeploymentVersion:ContainerServiceDeploymentVersion",
        "aws-native:lightsail:Container",
    }
)
LIGHTSAIL_INSTANCE = frozenset({"aws:lightsail/instance:Instance", "aws-native:lightsail:Instance"})
LIGHTSAIL_PUBLIC_PORTS = frozenset({"aws:lightsail/instancePublicPorts:InstancePublicPorts"})
#: Cloud Map namespaces (Service Connect publishes its servers' aliases in one).
SERVICE_DISCOVERY_NAMESPACE = frozenset(
    {
        "aws:servicediscovery/httpNamespace:HttpNamespace",
        "aws:servicediscovery/privateDnsNamespace:PrivateDnsNamespace",
        "aws-native:servicediscovery:HttpNamespace",
        "aws-native:servicediscovery:PrivateDnsNamespace",
    }
)

# Networks and IAM: the image pull path and queue workers follow these.
VPC = frozenset({"aws:ec2/vpc:Vpc", "aws-native:ec2:VPC"})
VPC_CIDR_ASSOCIATION = frozenset(
    {
        "aws:ec2/vpcIpv4CidrBlockAssociation:VpcIpv4CidrBlockAssociation",
        "aws-native:ec2:VpcCidrBlock",
    }
)
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
ROLE = frozenset({"aws:iam/role:Role", "aws-native:iam:Role"})
ROLE_POLICY = frozenset({"aws:iam/rolePolicy:RolePolicy", "aws-native:iam:RolePolicy"})
ROLE_POLICY_ATTACHMENT = frozenset({"aws:iam/rolePolicyAttachment:RolePolicyAttachment"})
MANAGED_POLICY = frozenset({"aws:iam/policy:Policy", "aws-native:iam:ManagedPolicy"})
SCALABLE_TARGET = frozenset(
    {"aws:appautoscaling/target:Target", "aws-native:applicationautoscaling:ScalableTarget"}
)

#: Capacity providers that place tasks on Fargate.
FARGATE_CAPACITY_PROVIDERS = frozenset({"FARGATE", "FARGATE_SPOT"})


def is_native(resource_type: str) -> bool:
    """True for pulumi-aws-native (CloudFormation-shaped) resources."""
    return resource_type.startswith("aws-native:")


# --- plain readers ---------------------------------------------------------------------------


def get(props: Mapping[str, Any], key: str, default: Any = None) -> Any:
    """``props[key]``, or ``default`` when the key is absent or null.

    An unknown value raises ``UnknownValueError`` (on purpose: see the module docstring).
    """
    try:
        value = props[key]
    except KeyError:
        return default
    return default if value is None else value


def get_path(props: Mapping[str, Any], *keys: str, default: Any = None) -> Any:
    """Nested :func:`get`; stops at the first absent level and returns ``default``."""
    current: Any = props
    for key in keys:
        if not isinstance(current, Mapping):
            return default
        current = get(current, key)
        if current is None:
            return default
    return current


def as_list(value: Any) -> Sequence[Any]:
    """A list input as a sequence; absent (None) is empty; a lone value becomes one item."""
    if value is None:
        return ()
    if isinstance(value, (str, Mapping)):
        return (value,)
    return value


def as_number(value: Any) -> float | None:
    """Numbers arrive as floats, ints, or numeric strings (CloudFormation); else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            return None
    return None


def as_bool(value: Any) -> bool:
    """Booleans arrive as bools or as strings ("true", "ENABLED") from CloudFormation shapes."""
    if isinstance(value, str):
        return value.strip().lower() in {"true", "enabled", "1", "yes"}
    return bool(value)


def attribute(props: Mapping[str, Any], list_key: str, name: str) -> Any:
    """Value of ``name`` in an aws-native ``[{key, value}]`` attribute list, or None."""
    for item in as_list(get(props, list_key)):
        if get(item, "key") == name:
            return get(item, "value")
    return None


def strings(value: Any) -> list[str]:
    """Every string in a (nested) input value; reading an unknown raises."""
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, Mapping):
        return [s for key in value for s in strings(value[key])]
    if isinstance(value, Sequence):  # lists arrive as the proxy's Sequence, not list
        return [s for item in value for s in strings(item)]
    return []


def present(props: Any, key: str) -> bool:
    """Whether ``key`` is set (possibly to a value unknown at preview), without reading it.

    The unknown-checking proxy raises on ``in`` too (``Mapping.__contains__`` reads the
    value), so this looks at the proxied dict itself, which pulumi_policy exposes as
    ``proxy["__target"]`` (pulumi-policy 1.21, pinned).
    """
    if not isinstance(props, Mapping):
        return False
    raw = props["__target"] if isinstance(props, _DictProxy) else props
    return raw.get(key) is not None


def known(props: Mapping[str, Any], key: str) -> Any:
    """``props[key]`` or None when absent or unknown at preview. Only for reads where an
    unknown value simply cannot be used (an identity to match, a name to index by)."""
    try:
        return get(props, key)
    except UnknownValueError:
        return None


def stored(props: Mapping[str, Any], key: str, default: Any = None, resource: Any = None) -> Any:
    """An Optional+Computed attribute as the engine shows it, or ``default`` when unset.

    The engine sends a stack rule the resources' outputs: on a first preview an attribute the
    program did not set is unknown, and after ``up`` it holds what the provider stores ("" for a
    capacity-provider service's ``launchType``). Both mean "unset": AWS applies its default. A
    value unknown because the program set it from another resource's output is not unset: when
    ``resource`` is given and the engine recorded a dependency for ``key``, the unknown value is
    raised (top-level keys only carry dependencies).
    """
    try:
        value = props[key]
    except KeyError:
        return default
    except UndecidableValueError:
        raise  # set, but unreadable: not the provider's default
    except UnknownValueError:
        deps = (getattr(resource, "property_dependencies", None) or {}).get(key)
        if deps:
            raise
        return default
    return default if value is None or value == "" else value


def stored_path(props: Any, *keys: str, default: Any = None, resource: Any = None) -> Any:
    """Nested :func:`stored` (``resource`` applies to the top-level key only)."""
    current: Any = props
    for index, key in enumerate(keys):
        if not isinstance(current, Mapping):
            return default
        current = stored(current, key, None, resource if index == 0 else None)
        if current is None:
            return default
    return current


def is_set(props: Mapping[str, Any], key: str, resource: Any = None) -> bool:
    """Whether an Optional+Computed attribute is set, in every engine view: a known value, or
    a value unknown because the program set it from another resource's output (see
    :func:`stored`)."""
    try:
        return stored(props, key, None, resource) is not None
    except UnknownValueError:
        return True


def tags_of(props: Mapping[str, Any]) -> dict[str, str]:
    """Tags as a dict: aws ``tags`` map, aws-native ``[{key, value}]`` list."""
    raw = get(props, "tags")
    if isinstance(raw, Mapping):
        return {str(k): str(raw[k]) for k in raw}
    out: dict[str, str] = {}
    for item in as_list(raw):
        if isinstance(item, Mapping) and get(item, "key") is not None:
            out[str(get(item, "key"))] = str(get(item, "value", ""))
    return out


# --- ECS task definitions --------------------------------------------------------------------

_CPU_VCPU = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*vcpu\s*$", re.IGNORECASE)
_MEM_GB = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*gb\s*$", re.IGNORECASE)


def parse_cpu_units(value: Any) -> int | None:
    """Task CPU in CPU units. ECS accepts ``"1024"`` or ``"1 vCPU"`` (1 vCPU = 1024 units)."""
    match = _CPU_VCPU.match(value) if isinstance(value, str) else None
    number = float(match.group(1)) * 1024 if match else as_number(value)
    return None if number is None else round(number)


def parse_memory_mib(value: Any) -> int | None:
    """Task memory in MiB. ECS accepts ``"2048"`` (MiB) or ``"2 GB"`` (1 GB = 1024 MiB)."""
    match = _MEM_GB.match(value) if isinstance(value, str) else None
    number = float(match.group(1)) * 1024 if match else as_number(value)
    return None if number is None else round(number)


def container_definitions(props: Mapping[str, Any]) -> Sequence[Mapping[str, Any]]:
    """Container definitions as a list of mappings with the ECS API's camelCase keys.

    pulumi-aws takes them as a JSON string (the RegisterTaskDefinition shape), aws-native as a
    list of objects; an unknown string raises ``UnknownValueError``, and a ``[secret]`` or a
    string that is not a JSON list raises ``UndecidableValueError`` (never "no containers").
    """
    raw = get(props, "containerDefinitions")
    if isinstance(raw, str):
        parsed = parse_document(raw, ["containerDefinitions"])
        if not isinstance(parsed, list):
            raise UndecidableValueError(["containerDefinitions"], "is not a JSON list")
        return [c for c in parsed if isinstance(c, Mapping)]
    return [c for c in as_list(raw) if isinstance(c, Mapping)]


def is_fargate_compatible(props: Mapping[str, Any]) -> bool:
    """True when ``requiresCompatibilities`` includes FARGATE (ECS then validates for Fargate)."""
    return any(str(c).upper() == "FARGATE" for c in as_list(get(props, "requiresCompatibilities")))


#: Container resource requirement types that reserve an accelerator on the host.
ACCELERATOR_RESOURCE_TYPES = frozenset({"GPU", "INFERENCEACCELERATOR", "NEURONDEVICE"})


def accelerator_needs(props: Mapping[str, Any], resource_type: str = "") -> list[str]:
    """Why a task definition needs an accelerator host: GPUs, Elastic Inference, Neuron devices
    (the ``NeuronDevice`` resource type of Managed Instances) or mapped devices.

    Neuron (Inferentia/Trainium) is not an ECS resource type: a Neuron task maps ``/dev/neuronN``
    through ``linuxParameters.devices``, so any mapped device counts as a host accelerator.
    Task-level ``inferenceAccelerators`` exists only in the CloudFormation shape (pulumi-aws 7
    removed the argument), so it is read for aws-native resources only.
    """
    reasons: list[str] = []
    if is_native(resource_type) and as_list(get(props, "inferenceAccelerators")):
        reasons.append("task inferenceAccelerators")
    for container in container_definitions(props):
        name = get(container, "name", "?")
        for req in as_list(get(container, "resourceRequirements")):
            kind = str(get(req, "type", ""))
            if kind.upper() in ACCELERATOR_RESOURCE_TYPES:
                reasons.append(
                    f"container {name!r} resourceRequirements {kind}={get(req, 'value')}"
                )
        for device in as_list(get_path(container, "linuxParameters", "devices")):
            reasons.append(f"container {name!r} maps device {get(device, 'hostPath', '?')}")
    return reasons


# --- ECS services ----------------------------------------------------------------------------


def capacity_provider_strategy(resource_type: str, props: Mapping[str, Any]) -> Sequence[Any]:
    """Strategy items: ``capacityProviderStrategies`` (aws) / ``capacityProviderStrategy``."""
    key = "capacityProviderStrategy" if is_native(resource_type) else "capacityProviderStrategies"
    return as_list(get(props, key))


def strategy_provider_names(resource_type: str, props: Mapping[str, Any]) -> list[str | None]:
    """Capacity provider names in the service's strategy; None where the name is unknown.

    FARGATE and FARGATE_SPOT are built-in providers referenced by literal name, so a name that
    is unknown during preview is the output of a capacity provider resource of the stack (an
    EC2 Auto Scaling group provider). Only that one read tolerates an unknown value.
    """
    names: list[str | None] = []
    for item in capacity_provider_strategy(resource_type, props):
        try:
            names.append(get(item, "capacityProvider"))
        except UndecidableValueError:
            raise  # a secret name may be FARGATE
        except UnknownValueError:
            names.append(None)
    return names


def service_uses_awsvpc(resource_type: str, props: Mapping[str, Any]) -> bool:
    """A service with a network configuration runs awsvpc tasks (ECS requires it for awsvpc)."""
    return get(props, "networkConfiguration") is not None


def service_load_balancers(props: Mapping[str, Any]) -> Sequence[Any]:
    """The service's ``loadBalancers`` list (same key in both providers)."""
    return as_list(get(props, "loadBalancers"))


def service_deploy_settings(resource_type: str, props: Mapping[str, Any]) -> tuple[float, float]:
    """(desired count, deployment maximum percent) with each provider's defaults.

    pulumi-aws defaults ``desiredCount`` to 0 and CloudFormation to 1; ECS defaults the
    maximum percent to 200 for the rolling-update controller.
    """
    if is_native(resource_type):
        desired = as_number(get(props, "desiredCount", 1))
        maximum = as_number(get_path(props, "deploymentConfiguration", "maximumPercent"))
    else:
        desired = as_number(get(props, "desiredCount", 0))
        maximum = as_number(get(props, "deploymentMaximumPercent"))
    return (desired or 0.0, maximum if maximum is not None else 200.0)


def service_circuit_breaker(resource_type: str, props: Mapping[str, Any]) -> Mapping[str, Any]:
    """The deployment circuit breaker block ({} when absent)."""
    if is_native(resource_type):
        block = get_path(props, "deploymentConfiguration", "deploymentCircuitBreaker")
    else:
        block = get(props, "deploymentCircuitBreaker")
    return block if isinstance(block, Mapping) else {}


# --- load balancers, listeners, target groups ------------------------------------------------


def lb_type(resource_type: str, props: Mapping[str, Any]) -> str:
    """Load balancer type (application, network, gateway); both default to application."""
    key = "type" if is_native(resource_type) else "loadBalancerType"
    return str(get(props, key, "application")).lower()


def lb_is_internet_facing(
    resource_type: str, props: Mapping[str, Any], resource: Any = None
) -> bool:
    """Both providers default to internet-facing: ``internal`` false / ``scheme`` unset (an
    attribute the engine shows unknown on a first preview, and stored after ``up``)."""
    if is_native(resource_type):
        scheme = stored(props, "scheme", "internet-facing", resource)
        return str(scheme).lower() == "internet-facing"
    return not as_bool(stored(props, "internal", False, resource))


#: AWS default ALB connection idle timeout, used when a stack leaves it unset.
DEFAULT_IDLE_TIMEOUT = float(aws_limits.ALB_IDLE_TIMEOUT_DEFAULT)
#: AWS default target group deregistration delay.
DEFAULT_DEREGISTRATION_DELAY = 300.0


def lb_idle_timeout(resource_type: str, props: Mapping[str, Any]) -> float:
    """ALB idle timeout in seconds (``idleTimeout`` / ``idle_timeout.timeout_seconds``)."""
    if is_native(resource_type):
        value = attribute(props, "loadBalancerAttributes", "idle_timeout.timeout_seconds")
    else:
        value = get(props, "idleTimeout")
    number = as_number(value)
    return DEFAULT_IDLE_TIMEOUT if number is None else number


def tg_deregistration_delay(resource_type: str, props: Mapping[str, Any]) -> float:
    """Target group deregistration delay in seconds (AWS default 300)."""
    if is_native(resource_type):
        value = attribute(props, "targetGroupAttributes", "deregistration_delay.timeout_seconds")
    else:
        value = get(props, "deregistrationDelay")
    number = as_number(value)
    return DEFAULT_DEREGISTRATION_DELAY if number is None else number


def tg_target_type(props: Mapping[str, Any]) -> str:
    """Target type; both providers default to ``instance``."""
    return str(get(props, "targetType", "instance")).lower()


# --- stack correlation -----------------------------------------------------------------------


def linked(resource: Any, prop: str, types: Iterable[str]) -> list[Any]:
    """Resources of ``types`` that ``resource``'s input ``prop`` refers to.

    During preview an ARN input is unknown, so the reference is read from the resource's
    property dependencies (what the engine records for ``prop``); without those, from its
    plain dependencies. The value itself is never read here.
    """
    wanted = frozenset(types)
    deps = (resource.property_dependencies or {}).get(prop) or []
    found = [d for d in deps if d.resource_type in wanted]
    if not found and not deps:
        found = [d for d in resource.dependencies or [] if d.resource_type in wanted]
    unique: dict[str, Any] = {}
    for dep in found:
        unique.setdefault(dep.urn, dep)
    return list(unique.values())


def of_types(resources: Iterable[Any], types: Iterable[str]) -> list[Any]:
    """The resources whose type is in ``types``."""
    wanted = frozenset(types)
    return [r for r in resources if r.resource_type in wanted]


class UnknownCollector:
    """Lets a stack policy judge every resource before reporting an unknown, and collects the
    advisories it leaves for ``guardrail-notes``.

    ``with collector.guard(): ...`` wraps the judgement of *one* resource; an
    ``UnknownValueError`` there only skips that resource. ``collector.reraise()`` at the end
    re-raises the first one so pulumi_policy still emits its advisory preview note.
    ``collector.note(message, urn)`` records an advisory ("cannot verify ...").
    ``own_types`` are the types the policy judges (bare-name exemptions match only those).
    """

    def __init__(self, own_types: frozenset[str] | None = None) -> None:
        self.first: UnknownValueError | None = None
        self.skipped: list[tuple[Any, UnknownValueError]] = []
        self.notes: list[tuple[str, str | None]] = []
        self._noted: set[tuple[str, str | None]] = set()
        self.own_types = own_types

    @contextmanager
    def guard(self, resource: Any = None) -> Iterator[None]:
        """Judge one resource; an unknown value skips just that resource."""
        try:
            yield
        except UnknownValueError as error:
            self.unknown(error, resource)

    def unknown(self, error: UnknownValueError, resource: Any = None) -> None:
        """An unknown value that skipped one judgement (the first one is re-raised), with the
        resource being judged when known."""
        if self.first is None:
            self.first = error
        self.skipped.append((resource, error))

    def note(self, message: str, urn: str | None) -> None:
        """An advisory for ``guardrail-notes`` to report against ``urn`` (once per text)."""
        if (message, urn) not in self._noted:
            self._noted.add((message, urn))
            self.notes.append((message, urn))

    def reraise(self) -> None:
        """Re-raise the first unknown seen, if any, naming the resource it skipped (the
        note "can't run policy ..." then says where the unknown value is)."""
        if self.first is None:
            return
        resource = next((r for r, e in self.skipped if e is self.first and r is not None), None)
        if resource is None:
            raise self.first
        named = Exception.__new__(type(self.first))
        named.__dict__.update(self.first.__dict__)
        named.message = f"{resource.resource_type} {resource.name!r}: {self.first.message}"
        raise named

    def undecided(self) -> list[tuple[str, str | None]]:
        """Every judgement this collector could not make, as (message, URN): its "cannot
        verify" notes and the unknown values that skipped a resource."""
        found = [(m, urn) for m, urn in self.notes if m.startswith("cannot verify")]
        for resource, error in self.skipped:
            what = (
                f"{resource.resource_type} {resource.name!r}"
                if resource is not None
                else "a resource"
            )
            found.append(
                (f"cannot verify: {what} {error.message}.", getattr(resource, "urn", None))
            )
        return list(dict.fromkeys(found))


#: What a judgement left in its rule's collector: a note (message, URN) or an unknown value.
Effect = tuple[str, str | None] | UnknownValueError


@dataclass(frozen=True)
class _Answer:
    """In a recording: "here the computation used the memoised answer ``key``"."""

    key: Any


class NoteRelay:
    """The collector of answers several stack rules share (``reachability.Model``).

    It has an :class:`UnknownCollector`'s ``note`` / ``guard`` / ``unknown`` and forwards them
    to ``target``, the collector of the rule using the answers now (``retarget``). A rule must
    end with the same notes and first unknown whether it computed an answer itself or found
    it computed by an earlier rule, so :meth:`memo` records what each computation forwarded
    (and which other answers it used) and forwards it again, once, to each later target.
    """

    def __init__(self, target: UnknownCollector) -> None:
        self.target = target
        self._recordings: list[list[Effect | _Answer]] = []
        self._effects: dict[Any, tuple[Effect | _Answer, ...]] = {}
        self._delivered: set[Any] = set()  # answers whose effects ``target`` already has

    def retarget(self, target: UnknownCollector) -> None:
        """Forward to ``target`` from now on (the next rule)."""
        self.target = target
        self._delivered = set()

    @contextmanager
    def guard(self) -> Iterator[None]:
        """As :meth:`UnknownCollector.guard`."""
        try:
            yield
        except UnknownValueError as error:
            self.unknown(error)

    def unknown(self, error: UnknownValueError) -> None:
        """As :meth:`UnknownCollector.unknown`."""
        self._forward(error)

    def note(self, message: str, urn: str | None) -> None:
        """As :meth:`UnknownCollector.note`."""
        self._forward((message, urn))

    def memo(self, cache: dict[Any, Any], key: Any, compute: Callable[[], Any]) -> Any:
        """``cache[key]``, computing it first if needed; the current target gets the notes and
        unknowns the computation forwarded. A computation that raises is not cached (the next
        use computes again, as without sharing)."""
        outer = self._recordings[-1] if self._recordings else None
        if key in cache:
            self._deliver(key)
        else:
            effects: list[Effect | _Answer] = []
            self._recordings.append(effects)
            try:
                cache[key] = compute()
            except BaseException:
                if outer is not None:
                    outer.extend(effects)
                raise
            finally:
                self._recordings.pop()
            self._effects[key] = tuple(effects)
            self._delivered.add(key)
        if outer is not None:
            outer.append(_Answer(key))
        return cache[key]

    def _deliver(self, key: Any) -> None:
        if key in self._delivered:
            return  # the target has them; they would change nothing (notes are kept once)
        self._delivered.add(key)
        for effect in self._effects[key]:
            if isinstance(effect, _Answer):
                self._deliver(effect.key)
            else:
                self._apply(effect)

    def _forward(self, effect: Effect) -> None:
        if self._recordings:
            self._recordings[-1].append(effect)
        self._apply(effect)

    def _apply(self, effect: Effect) -> None:
        if isinstance(effect, UnknownValueError):
            self.target.unknown(effect)
        else:
            self.target.note(*effect)


# --- config ----------------------------------------------------------------------------------


def config_with_defaults(args: Any, schema_properties: Mapping[str, Any]) -> dict[str, Any]:
    """The policy's config, with schema defaults for keys the driver did not send.

    The Pulumi CLI fills defaults before ``Configure``; other drivers may not.
    """
    config = {k: v["default"] for k, v in schema_properties.items() if "default" in v}
    config.update(args.get_config() or {})
    return config


def is_exempt(config: Mapping[str, Any], resource: Any, own_types: Iterable[str] | None) -> bool:
    """True when an ``exemptResources`` entry names the resource (see ``exemptions``);
    ``own_types``: the policy's types, the only ones a bare name matches (None: any)."""
    if not config.get("exemptResources"):
        return False
    own = frozenset(own_types) if own_types is not None else None
    return bool(matching_entries(config, resource, own))


def ceil_div(numerator: float, denominator: float) -> int:
    """Integer ceiling of a positive ratio (0 for a zero numerator)."""
    return math.ceil(numerator / denominator) if numerator > 0 else 0
