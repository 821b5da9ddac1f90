"""Every resource's inputs as the AWS API requests they become, checked as AWS would (DESIGN §9).

One registry, keyed by Pulumi type token:

- `MAPPERS[token](inputs, physical_name)` returns the `ApiRequest`s the provider sends for a
  resource (CreateTargetGroup + ModifyTargetGroupAttributes, CreateRole + PutRolePolicy, ...).
  Each is validated against botocore's service model: required members, types, lengths,
  ranges, enums and patterns.
- `RULES[token]` are the per-resource AWS rules botocore cannot express (Cognito domain reserved
  words, IAM policy grammar and size, log retention values, ...); `STACK_RULES` are the ones that
  need several resources (listener priorities, rules per load balancer, inline policy size per
  role, warm pool with Spot). Each one's source is listed in docs/fidelity.md.

Values still unknown at preview time (the ARN of a resource not yet created) are left out of a
request and never reported, not even as a missing required member: they are never guessed.

Adding a resource type (with its naming rule in contracts/aws_limits.py `NAME_RULES`)::

    @maps("aws:sns/topic:Topic")
    def _sns_topic(i: Inputs, name: str | None) -> list[ApiRequest]:
        return [ApiRequest("sns", "CreateTopic", {"Name": name, "Tags": tags(i.get("tags"))})]
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import ipaddress
import json
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ecs_inference.contracts.aws_limits import (
    ALARM_METRIC_QUERIES_MAX,
    ALB_CLIENT_KEEP_ALIVE_RANGE,
    ALB_IDLE_TIMEOUT_RANGE,
    BUCKET_POLICY_MAX_BYTES,
    CLOUDWATCH_LOG_RETENTION_DAYS,
    COGNITO_DOMAIN_RESERVED_WORDS,
    CONDITION_VALUES_PER_RULE,
    DASHBOARD_MAX_WIDGETS,
    EFS_ACCESS_POINT_PATH_MAX_DEPTH,
    IAM_ROLE_SESSION_DURATION_RANGE,
    IMDS_HOP_LIMIT_RANGE,
    KMS_DELETION_WINDOW_DAYS,
    MANAGED_POLICIES_PER_ROLE,
    MANAGED_POLICY_MAX_CHARS,
    ROLE_INLINE_POLICIES_MAX_CHARS,
    RULES_PER_ALB,
    RULES_PER_SECURITY_GROUP,
    SQS_ATTRIBUTE_RANGES,
    TARGET_GROUP_DEREGISTRATION_DELAY_MAX,
    TARGET_GROUP_SLOW_START_RANGE,
    TASK_DEFINITION_MAX_BYTES,
    TRUST_POLICY_MAX_CHARS,
    USER_DATA_MAX_BYTES,
    WILDCARDS_PER_RULE,
)
from tools.aws_shapes import (
    UNKNOWN,
    ShapeError,
    container_definitions,
    contains_unknown,
    create_listener_request,
    create_rule_request,
    create_user_pool_client_request,
    create_user_pool_request,
    register_task_definition_request,
    validate_named_shape,
    validate_shape,
)

Inputs = Mapping[str, Any]


@dataclass(frozen=True)
class ApiRequest:
    """One call the provider makes: `service`/`operation` (botocore names) with `params`, or,
    with `shape=True`, a value checked against the named shape `operation` of `service`."""

    service: str
    operation: str
    params: Any
    shape: bool = False


class Resource(Protocol):
    """What the checks read of a recorded registration (tools.recording.RecordedResource)."""

    @property
    def type(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def urn(self) -> str: ...
    @property
    def inputs(self) -> dict[str, Any]: ...
    @property
    def outputs(self) -> dict[str, Any]: ...


@dataclass(frozen=True)
class Finding:
    """One thing the provider or AWS would refuse, on one resource."""

    type: str
    name: str
    check: str
    message: str
    config_paths: tuple[str, ...] = field(default=())

    def __str__(self) -> str:
        where = f" (config: {', '.join(self.config_paths)})" if self.config_paths else ""
        return f"{self.type} '{self.name}': {self.check}: {self.message}{where}"


Mapper = Callable[[Inputs, "str | None"], list[ApiRequest]]
ResourceRule = Callable[[Inputs, "str | None"], Iterable[str]]
# Adjustable AWS quotas a stack rule checks against, by name, when the account's differ from
# the defaults (e.g. {"rules_per_alb": 200}).
Quotas = Mapping[str, int]
StackRule = Callable[[Sequence[Resource], Quotas], Iterable[tuple[Resource, str]]]

MAPPERS: dict[str, Mapper] = {}
RULES: dict[str, list[ResourceRule]] = defaultdict(list)
STACK_RULES: list[StackRule] = []


def maps(*tokens: str) -> Callable[[Mapper], Mapper]:
    """Register the request mapper of one or more type tokens."""

    def register(fn: Mapper) -> Mapper:
        for token in tokens:
            MAPPERS[token] = fn
        return fn

    return register


def rule(*tokens: str) -> Callable[[ResourceRule], ResourceRule]:
    """Register an AWS rule (beyond botocore) for one or more type tokens."""

    def register(fn: ResourceRule) -> ResourceRule:
        for token in tokens:
            RULES[token].append(fn)
        return fn

    return register


def stack_rule(fn: StackRule) -> StackRule:
    """Register an AWS rule that spans several resources."""
    STACK_RULES.append(fn)
    return fn


# --------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------


def known(value: Any) -> bool:
    return value is not None and value != UNKNOWN


def drop_none(d: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if v is not None}


def single(block: Any) -> Any:
    """A Terraform single-nested block: an object in Pulumi, sometimes a one-item list."""
    if isinstance(block, list):
        return block[0] if block else None
    return block


def tags(value: Any, key: str = "Key", val: str = "Value") -> Any:
    if value == UNKNOWN:
        return UNKNOWN
    return [{key: k, val: v} for k, v in value.items()] if value else None


def as_int(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def attributes(pairs: Mapping[str, Any]) -> list[dict[str, str]] | None:
    """ELBv2 attribute list (`Key`/`Value` strings) from known values."""
    out = []
    for key, value in pairs.items():
        if not known(value):
            continue
        text = ("true" if value else "false") if isinstance(value, bool) else str(as_int(value))
        out.append({"Key": key, "Value": text})
    return out or None


def problems_of(request: ApiRequest) -> list[str]:
    """botocore's findings for one request (empty when AWS would accept its shape)."""
    try:
        if request.shape:
            validate_named_shape(
                request.service, request.operation, request.params, skip_unknown=True
            )
        else:
            validate_shape(request.service, request.operation, request.params, skip_unknown=True)
    except ShapeError as exc:
        return [f"{exc.where}: {line}" for line in exc.report.splitlines() if line.strip()]
    return []


# --------------------------------------------------------------------------------------------
# ELBv2
# --------------------------------------------------------------------------------------------


@maps("aws:lb/loadBalancer:LoadBalancer", "aws:alb/loadBalancer:LoadBalancer")
def _load_balancer(i: Inputs, name: str | None) -> list[ApiRequest]:
    logs = single(i.get("accessLogs")) or {}
    create = drop_none(
        {
            "Name": name,
            "Subnets": i.get("subnets"),
            "SubnetMappings": [
                drop_none(
                    {
                        "SubnetId": m.get("subnetId"),
                        "AllocationId": m.get("allocationId"),
                        "PrivateIPv4Address": m.get("privateIpv4Address"),
                        "IPv6Address": m.get("ipv6Address"),
                    }
                )
                for m in i.get("subnetMappings") or []
            ]
            or None,
            "SecurityGroups": i.get("securityGroups"),
            "Scheme": None
            if not known(i.get("internal"))
            else ("internal" if i.get("internal") else "internet-facing"),
            "Tags": tags(i.get("tags")),
            "Type": i.get("loadBalancerType"),
            "IpAddressType": i.get("ipAddressType"),
            "CustomerOwnedIpv4Pool": i.get("customerOwnedIpv4Pool"),
        }
    )
    attrs = attributes(
        {
            "idle_timeout.timeout_seconds": i.get("idleTimeout"),
            "routing.http.drop_invalid_header_fields.enabled": i.get("dropInvalidHeaderFields"),
            "deletion_protection.enabled": i.get("enableDeletionProtection"),
            "routing.http2.enabled": i.get("enableHttp2"),
            "access_logs.s3.enabled": logs.get("enabled"),
            "access_logs.s3.bucket": logs.get("bucket"),
            "access_logs.s3.prefix": logs.get("prefix"),
            "client_keep_alive.seconds": i.get("clientKeepAlive"),
            "routing.http.desync_mitigation_mode": i.get("desyncMitigationMode"),
            "routing.http.preserve_host_header.enabled": i.get("preserveHostHeader"),
            "routing.http.xff_header_processing.mode": i.get("xffHeaderProcessingMode"),
        }
    )
    out = [ApiRequest("elbv2", "CreateLoadBalancer", create)]
    if attrs:
        out.append(
            ApiRequest(
                "elbv2",
                "ModifyLoadBalancerAttributes",
                {"LoadBalancerArn": UNKNOWN, "Attributes": attrs},
            )
        )
    return out


@rule("aws:lb/loadBalancer:LoadBalancer", "aws:alb/loadBalancer:LoadBalancer")
def _load_balancer_limits(i: Inputs, _name: str | None) -> Iterable[str]:
    # ALB attribute ranges (ELBv2 LoadBalancerAttribute reference): idle timeout 1-4000 s,
    # client keep-alive 60-604800 s.
    idle, (lo, hi) = i.get("idleTimeout"), ALB_IDLE_TIMEOUT_RANGE
    if isinstance(idle, (int, float)) and not lo <= idle <= hi:
        yield f"idleTimeout {as_int(idle)} is outside {lo}-{hi} seconds"
    keep, (lo, hi) = i.get("clientKeepAlive"), ALB_CLIENT_KEEP_ALIVE_RANGE
    if isinstance(keep, (int, float)) and not lo <= keep <= hi:
        yield f"clientKeepAlive {as_int(keep)} is outside {lo}-{hi} seconds"
    logs = single(i.get("accessLogs")) or {}
    if logs.get("enabled") is True and not logs.get("bucket"):
        yield "accessLogs.enabled needs accessLogs.bucket"


@maps("aws:lb/targetGroup:TargetGroup", "aws:alb/targetGroup:TargetGroup")
def _target_group(i: Inputs, name: str | None) -> list[ApiRequest]:
    hc = single(i.get("healthCheck")) or {}
    stick = single(i.get("stickiness")) or {}
    create = drop_none(
        {
            "Name": name,
            "Protocol": i.get("protocol"),
            "ProtocolVersion": i.get("protocolVersion"),
            "Port": i.get("port"),
            "VpcId": i.get("vpcId"),
            "HealthCheckProtocol": hc.get("protocol"),
            "HealthCheckPort": hc.get("port"),
            "HealthCheckEnabled": hc.get("enabled"),
            "HealthCheckPath": hc.get("path"),
            "HealthCheckIntervalSeconds": hc.get("interval"),
            "HealthCheckTimeoutSeconds": hc.get("timeout"),
            "HealthyThresholdCount": hc.get("healthyThreshold"),
            "UnhealthyThresholdCount": hc.get("unhealthyThreshold"),
            "Matcher": {"HttpCode": hc["matcher"]} if hc.get("matcher") else None,
            "TargetType": i.get("targetType"),
            "Tags": tags(i.get("tags")),
            "IpAddressType": i.get("ipAddressType"),
        }
    )
    attrs = attributes(
        {
            "deregistration_delay.timeout_seconds": i.get("deregistrationDelay"),
            "slow_start.duration_seconds": i.get("slowStart"),
            "load_balancing.algorithm.type": i.get("loadBalancingAlgorithmType"),
            "stickiness.enabled": stick.get("enabled"),
            "stickiness.type": stick.get("type"),
            "stickiness.lb_cookie.duration_seconds": stick.get("cookieDuration"),
        }
    )
    out = [ApiRequest("elbv2", "CreateTargetGroup", create)]
    if attrs:
        out.append(
            ApiRequest(
                "elbv2",
                "ModifyTargetGroupAttributes",
                {"TargetGroupArn": UNKNOWN, "Attributes": attrs},
            )
        )
    return out


@rule("aws:lb/targetGroup:TargetGroup", "aws:alb/targetGroup:TargetGroup")
def _target_group_limits(i: Inputs, _name: str | None) -> Iterable[str]:
    # TargetGroupAttribute reference: deregistration delay 0-3600 s, slow start 30-900 s or 0.
    delay, top = i.get("deregistrationDelay"), TARGET_GROUP_DEREGISTRATION_DELAY_MAX
    if isinstance(delay, (int, float)) and not 0 <= delay <= top:
        yield f"deregistrationDelay {as_int(delay)} is outside 0-{top} seconds"
    slow, (lo, hi) = i.get("slowStart"), TARGET_GROUP_SLOW_START_RANGE
    if isinstance(slow, (int, float)) and slow != 0 and not lo <= slow <= hi:
        yield f"slowStart {as_int(slow)} must be 0 or {lo}-{hi} seconds"
    # CreateTargetGroup: "the timeout must be smaller than the interval".
    hc = single(i.get("healthCheck")) or {}
    interval, timeout = hc.get("interval"), hc.get("timeout")
    if (
        isinstance(interval, (int, float))
        and isinstance(timeout, (int, float))
        and timeout >= interval
    ):
        yield (
            f"healthCheck.timeout {as_int(timeout)} must be less than interval {as_int(interval)}"
        )
    if i.get("targetType") == "lambda" and i.get("port") is not None:
        yield "a lambda target group takes no port"
    if i.get("targetType") in ("ip", "instance") and i.get("port") is None:
        yield f"a target group of type {i.get('targetType')} needs a port"


@maps("aws:lb/listener:Listener", "aws:alb/listener:Listener")
def _listener(i: Inputs, _name: str | None) -> list[ApiRequest]:
    return [ApiRequest("elbv2", "CreateListener", create_listener_request(i))]


@rule("aws:lb/listener:Listener", "aws:alb/listener:Listener")
def _listener_limits(i: Inputs, _name: str | None) -> Iterable[str]:
    # CreateListener: HTTPS and TLS listeners need a certificate.
    if i.get("protocol") in ("HTTPS", "TLS") and "certificateArn" not in i:
        yield f"a {i.get('protocol')} listener needs certificateArn"


def _condition_values(condition: Mapping[str, Any]) -> list[str]:
    values: list[str] = []
    for key in ("hostHeader", "pathPattern", "httpRequestMethod", "sourceIp", "httpHeader"):
        block = single(condition.get(key))
        if isinstance(block, Mapping) and isinstance(block.get("values"), list):
            values += [str(v) for v in block["values"]]
    for q in condition.get("queryStrings") or []:
        values.append(f"{q.get('key') or ''}={q.get('value')}")
    return values


@maps("aws:lb/listenerRule:ListenerRule", "aws:alb/listenerRule:ListenerRule")
def _listener_rule(i: Inputs, _name: str | None) -> list[ApiRequest]:
    return [ApiRequest("elbv2", "CreateRule", create_rule_request(i))]


@rule("aws:lb/listenerRule:ListenerRule", "aws:alb/listenerRule:ListenerRule")
def _listener_rule_limits(i: Inputs, _name: str | None) -> Iterable[str]:
    values = [v for c in i.get("conditions") or [] for v in _condition_values(c)]
    if len(values) > CONDITION_VALUES_PER_RULE:
        yield (
            f"{len(values)} condition values, at most {CONDITION_VALUES_PER_RULE} per rule "
            "(ALB quota 'condition values per rule')"
        )
    wildcards = sum(v.count("*") + v.count("?") for v in values)
    if wildcards > WILDCARDS_PER_RULE:
        yield f"{wildcards} wildcards, at most {WILDCARDS_PER_RULE} per rule (ALB quota)"
    actions = i.get("actions")
    if not isinstance(actions, list) or contains_unknown(actions):
        return
    kinds = [a.get("type") for a in actions if isinstance(a, Mapping)]
    terminal = [k for k in kinds if k in ("forward", "redirect", "fixed-response")]
    if actions and len(terminal) != 1:
        yield f"a rule needs exactly one forward, redirect or fixed-response action, got {kinds}"


@stack_rule
def _listener_rules(
    resources: Sequence[Resource], quotas: Quotas
) -> Iterable[tuple[Resource, str]]:
    """Priorities are unique per listener; rules per load balancer stay within the quota."""
    rules = [r for r in resources if r.type.endswith("/listenerRule:ListenerRule")]
    listeners = {
        r.outputs.get("arn"): r for r in resources if r.type.endswith("/listener:Listener")
    }
    by_listener: dict[str, list[Resource]] = defaultdict(list)
    for r in rules:
        arn = r.inputs.get("listenerArn")
        if isinstance(arn, str) and known(arn):
            by_listener[arn].append(r)
    per_lb: Counter[str] = Counter()
    for arn, on_listener in by_listener.items():
        seen: dict[Any, Resource] = {}
        for r in on_listener:
            priority = as_int(r.inputs.get("priority"))
            if not known(priority):
                continue
            if priority in seen:
                yield (
                    r,
                    (
                        f"priority {priority} is already used by rule '{seen[priority].name}' on "
                        "the same listener (CreateRule: PriorityInUse)"
                    ),
                )
            seen[priority] = r
        listener = listeners.get(arn)
        lb = listener.inputs.get("loadBalancerArn") if listener else None
        per_lb[lb if isinstance(lb, str) and known(lb) else arn] += len(on_listener)
    quota = quotas.get("rules_per_alb", RULES_PER_ALB)
    for count in per_lb.values():
        if count > quota:
            first = next(r for r in rules if r.inputs.get("listenerArn") in by_listener)
            yield (
                first,
                (
                    f"{count} listener rules on one load balancer, more than the quota of "
                    f"{quota} (TooManyRules)"
                ),
            )


# --------------------------------------------------------------------------------------------
# ECS
# --------------------------------------------------------------------------------------------


@maps("aws:ecs/cluster:Cluster")
def _ecs_cluster(i: Inputs, name: str | None) -> list[ApiRequest]:
    config = single(i.get("configuration"))
    if isinstance(config, Mapping):
        exec_config = single(config.get("executeCommandConfiguration"))
        if isinstance(exec_config, Mapping):
            exec_config = dict(exec_config)
            if (lc := single(exec_config.get("logConfiguration"))) is not None:
                exec_config["logConfiguration"] = lc
            config = {**config, "executeCommandConfiguration": exec_config}
    return [
        ApiRequest(
            "ecs",
            "CreateCluster",
            drop_none(
                {
                    "clusterName": name,
                    "settings": i.get("settings"),
                    "configuration": config,
                    "serviceConnectDefaults": single(i.get("serviceConnectDefaults")),
                    "tags": tags(i.get("tags"), "key", "value"),
                }
            ),
        )
    ]


@maps("aws:ecs/capacityProvider:CapacityProvider")
def _capacity_provider(i: Inputs, name: str | None) -> list[ApiRequest]:
    asg = single(i.get("autoScalingGroupProvider"))
    if isinstance(asg, Mapping):
        asg = dict(asg)
        if (scaling := single(asg.get("managedScaling"))) is not None:
            asg["managedScaling"] = scaling
    return [
        ApiRequest(
            "ecs",
            "CreateCapacityProvider",
            drop_none(
                {
                    "name": name,
                    "autoScalingGroupProvider": asg,
                    "managedInstancesProvider": single(i.get("managedInstancesProvider")),
                    "cluster": i.get("cluster"),
                    "tags": tags(i.get("tags"), "key", "value"),
                }
            ),
        )
    ]


@maps("aws:ecs/clusterCapacityProviders:ClusterCapacityProviders")
def _cluster_capacity_providers(i: Inputs, _name: str | None) -> list[ApiRequest]:
    return [
        ApiRequest(
            "ecs",
            "PutClusterCapacityProviders",
            {
                "cluster": i.get("clusterName"),
                "capacityProviders": i.get("capacityProviders") or [],
                "defaultCapacityProviderStrategy": i.get("defaultCapacityProviderStrategies") or [],
            },
        )
    ]


@rule("aws:ecs/clusterCapacityProviders:ClusterCapacityProviders")
def _cluster_capacity_provider_limits(i: Inputs, _name: str | None) -> Iterable[str]:
    providers = i.get("capacityProviders")
    for item in i.get("defaultCapacityProviderStrategies") or []:
        name = item.get("capacityProvider")
        listed = isinstance(providers, list) and UNKNOWN not in providers
        if listed and known(name) and name not in providers:  # type: ignore[operator]
            yield f"default strategy names {name}, which is not among capacityProviders"


def _service_request(i: Inputs, name: str | None) -> dict[str, Any]:
    net = single(i.get("networkConfiguration"))
    awsvpc = None
    if isinstance(net, Mapping):
        public = net.get("assignPublicIp")
        awsvpc = {
            "awsvpcConfiguration": drop_none(
                {
                    "subnets": net.get("subnets"),
                    "securityGroups": net.get("securityGroups"),
                    "assignPublicIp": None
                    if not known(public)
                    else ("ENABLED" if public else "DISABLED"),
                }
            )
        }
    breaker = single(i.get("deploymentCircuitBreaker"))
    deployment = drop_none(
        {
            "maximumPercent": i.get("deploymentMaximumPercent"),
            "minimumHealthyPercent": i.get("deploymentMinimumHealthyPercent"),
            "deploymentCircuitBreaker": breaker,
            "alarms": single(i.get("alarms")),
        }
    )
    return drop_none(
        {
            "cluster": i.get("cluster"),
            "serviceName": name,
            "taskDefinition": i.get("taskDefinition"),
            "availabilityZoneRebalancing": i.get("availabilityZoneRebalancing"),
            "loadBalancers": i.get("loadBalancers"),
            "serviceRegistries": [single(i["serviceRegistries"])]
            if i.get("serviceRegistries")
            else None,
            "desiredCount": i.get("desiredCount"),
            "launchType": i.get("launchType"),
            "capacityProviderStrategy": i.get("capacityProviderStrategies"),
            "platformVersion": i.get("platformVersion"),
            "role": i.get("iamRole"),
            "deploymentConfiguration": deployment or None,
            "placementConstraints": i.get("placementConstraints"),
            "placementStrategy": i.get("orderedPlacementStrategies"),
            "networkConfiguration": awsvpc,
            "healthCheckGracePeriodSeconds": i.get("healthCheckGracePeriodSeconds"),
            "schedulingStrategy": i.get("schedulingStrategy"),
            "deploymentController": single(i.get("deploymentController")),
            "tags": tags(i.get("tags"), "key", "value"),
            "enableECSManagedTags": i.get("enableEcsManagedTags"),
            "propagateTags": i.get("propagateTags"),
            "enableExecuteCommand": i.get("enableExecuteCommand"),
            "serviceConnectConfiguration": _service_connect(
                single(i.get("serviceConnectConfiguration"))
            ),
        }
    )


def _service_connect(sc: Any) -> Any:
    """Pulumi's `serviceConnectConfiguration` as CreateService's: Terraform names the alias list
    `clientAlias` (the API `clientAliases`) and gives single blocks as objects or 1-item lists."""
    if not isinstance(sc, Mapping):
        return sc
    services = []
    for svc in sc.get("services") or []:
        if not isinstance(svc, Mapping):
            services.append(svc)
            continue
        svc = dict(svc)
        if "clientAlias" in svc:
            svc["clientAliases"] = svc.pop("clientAlias")
        for key in ("timeout", "tls"):
            if key in svc:
                svc[key] = single(svc[key])
        services.append(svc)
    return drop_none(
        {
            **{k: v for k, v in sc.items() if k not in ("services", "logConfiguration")},
            "services": services or None,
            "logConfiguration": single(sc.get("logConfiguration")),
        }
    )


@maps("aws:ecs/service:Service")
def _ecs_service(i: Inputs, name: str | None) -> list[ApiRequest]:
    return [ApiRequest("ecs", "CreateService", _service_request(i, name))]


@rule("aws:ecs/service:Service")
def _ecs_service_limits(i: Inputs, _name: str | None) -> Iterable[str]:
    # CreateService: up to five target groups per service; a grace period only with a load
    # balancer; launchType and capacityProviderStrategy are mutually exclusive.
    lbs = i.get("loadBalancers")
    if isinstance(lbs, list) and len(lbs) > 5:
        yield f"{len(lbs)} load balancers, at most 5 target groups per service"
    if i.get("healthCheckGracePeriodSeconds") is not None and not lbs:
        yield "healthCheckGracePeriodSeconds is only valid with loadBalancers"
    if i.get("launchType") and i.get("capacityProviderStrategies"):
        yield "launchType and capacityProviderStrategies cannot both be set"
    if i.get("networkConfiguration") is None and _awsvpc_required(i):
        yield "a Fargate service needs networkConfiguration (awsvpc)"


def _awsvpc_required(i: Inputs) -> bool:
    strategies = i.get("capacityProviderStrategies") or []
    fargate = any(
        str(s.get("capacityProvider", "")).startswith("FARGATE")
        for s in strategies
        if isinstance(s, Mapping)
    )
    return i.get("launchType") == "FARGATE" or fargate


@maps("aws:ecs/taskDefinition:TaskDefinition")
def _task_definition(i: Inputs, _name: str | None) -> list[ApiRequest]:
    if i.get("containerDefinitions") == UNKNOWN:
        request = register_task_definition_request({**i, "containerDefinitions": "[]"})
        request["containerDefinitions"] = UNKNOWN
        return [ApiRequest("ecs", "RegisterTaskDefinition", request)]
    return [ApiRequest("ecs", "RegisterTaskDefinition", register_task_definition_request(i))]


@rule("aws:ecs/taskDefinition:TaskDefinition")
def _task_definition_limits(i: Inputs, _name: str | None) -> Iterable[str]:
    raw = i.get("containerDefinitions")
    if not known(raw):
        return
    try:
        containers = container_definitions(raw)
    except json.JSONDecodeError as exc:
        yield f"containerDefinitions is not valid JSON: {exc}"
        return
    size = len(json.dumps(register_task_definition_request(i)).encode())
    if size > TASK_DEFINITION_MAX_BYTES:
        yield f"the request is {size} bytes, more than the {TASK_DEFINITION_MAX_BYTES} AWS accepts"
    names = Counter(c.get("name") for c in containers if isinstance(c, Mapping))
    for dup, count in names.items():
        if count > 1:
            yield f"container name {dup!r} is used {count} times"
    if not any(c.get("essential", True) for c in containers if isinstance(c, Mapping)):
        yield "at least one container must be essential"


# --------------------------------------------------------------------------------------------
# Auto Scaling, launch templates
# --------------------------------------------------------------------------------------------


@maps("aws:autoscaling/group:Group")
def _asg(i: Inputs, name: str | None) -> list[ApiRequest]:
    lt = single(i.get("launchTemplate"))
    zones = i.get("vpcZoneIdentifiers")
    create = drop_none(
        {
            "AutoScalingGroupName": name,
            "LaunchTemplate": drop_none(
                {
                    "LaunchTemplateId": lt.get("id"),
                    "LaunchTemplateName": lt.get("name"),
                    "Version": lt.get("version"),
                }
            )
            if isinstance(lt, Mapping)
            else None,
            "MixedInstancesPolicy": single(i.get("mixedInstancesPolicy")),
            "MinSize": i.get("minSize"),
            "MaxSize": i.get("maxSize"),
            "DesiredCapacity": i.get("desiredCapacity"),
            "DefaultCooldown": i.get("defaultCooldown"),
            "AvailabilityZones": i.get("availabilityZones"),
            "HealthCheckType": i.get("healthCheckType"),
            "HealthCheckGracePeriod": i.get("healthCheckGracePeriod"),
            "VPCZoneIdentifier": ",".join(zones)
            if isinstance(zones, list) and UNKNOWN not in zones
            else (UNKNOWN if zones else None),
            "TargetGroupARNs": i.get("targetGroupArns"),
            "TerminationPolicies": i.get("terminationPolicies"),
            "NewInstancesProtectedFromScaleIn": i.get("protectFromScaleIn"),
            "CapacityRebalance": i.get("capacityRebalance"),
            "MaxInstanceLifetime": i.get("maxInstanceLifetime"),
            "DefaultInstanceWarmup": i.get("defaultInstanceWarmup"),
            "Tags": [
                drop_none(
                    {
                        "Key": t.get("key"),
                        "Value": t.get("value"),
                        "PropagateAtLaunch": t.get("propagateAtLaunch"),
                    }
                )
                for t in i.get("tags") or []
            ]
            or None,
        }
    )
    if isinstance(create.get("MixedInstancesPolicy"), Mapping):
        create["MixedInstancesPolicy"] = _mixed_instances(create["MixedInstancesPolicy"])
    out = [ApiRequest("autoscaling", "CreateAutoScalingGroup", create)]
    warm = single(i.get("warmPool"))
    if isinstance(warm, Mapping):
        reuse = single(warm.get("instanceReusePolicy"))
        out.append(
            ApiRequest(
                "autoscaling",
                "PutWarmPool",
                drop_none(
                    {
                        "AutoScalingGroupName": name,
                        "MaxGroupPreparedCapacity": warm.get("maxGroupPreparedCapacity"),
                        "MinSize": warm.get("minSize"),
                        "PoolState": warm.get("poolState"),
                        "InstanceReusePolicy": {"ReuseOnScaleIn": reuse.get("reuseOnScaleIn")}
                        if isinstance(reuse, Mapping)
                        else None,
                    }
                ),
            )
        )
    return out


def _mixed_instances(policy: Mapping[str, Any]) -> dict[str, Any]:
    spec = single(policy.get("launchTemplate")) or {}
    lts = single(spec.get("launchTemplateSpecification")) or {}
    dist = single(policy.get("instancesDistribution"))
    return drop_none(
        {
            "LaunchTemplate": {
                "LaunchTemplateSpecification": drop_none(
                    {
                        "LaunchTemplateId": lts.get("launchTemplateId"),
                        "LaunchTemplateName": lts.get("launchTemplateName"),
                        "Version": lts.get("version"),
                    }
                ),
                "Overrides": [
                    drop_none(
                        {
                            "InstanceType": o.get("instanceType"),
                            "WeightedCapacity": o.get("weightedCapacity"),
                        }
                    )
                    for o in spec.get("overrides") or []
                ]
                or None,
            },
            "InstancesDistribution": dist,
        }
    )


@rule("aws:autoscaling/group:Group")
def _asg_limits(i: Inputs, _name: str | None) -> Iterable[str]:
    lo, hi, want = i.get("minSize"), i.get("maxSize"), i.get("desiredCapacity")
    if isinstance(lo, (int, float)) and isinstance(hi, (int, float)) and lo > hi:
        yield f"minSize {as_int(lo)} is greater than maxSize {as_int(hi)}"
    if isinstance(want, (int, float)) and isinstance(hi, (int, float)) and want > hi:
        yield f"desiredCapacity {as_int(want)} is greater than maxSize {as_int(hi)}"
    if isinstance(want, (int, float)) and isinstance(lo, (int, float)) and want < lo:
        yield f"desiredCapacity {as_int(want)} is less than minSize {as_int(lo)}"
    # Warm pools (Amazon EC2 Auto Scaling user guide, "Warm pools"): not with a mixed instances
    # policy or Spot instances.
    if i.get("warmPool") and i.get("mixedInstancesPolicy"):
        yield "a warm pool cannot be added to a group with a mixed instances policy"
    if (
        not i.get("launchTemplate")
        and not i.get("mixedInstancesPolicy")
        and not i.get("launchConfiguration")
    ):
        yield "needs a launchTemplate, mixedInstancesPolicy or launchConfiguration"


@stack_rule
def _warm_pool_spot(
    resources: Sequence[Resource], _quotas: Quotas
) -> Iterable[tuple[Resource, str]]:
    """A warm pool on a group whose launch template requests Spot instances (AWS refuses)."""
    templates = {r.outputs.get("id"): r for r in resources if r.type.endswith(":LaunchTemplate")}
    for r in resources:
        if r.type != "aws:autoscaling/group:Group" or not r.inputs.get("warmPool"):
            continue
        lt = single(r.inputs.get("launchTemplate")) or {}
        template = templates.get(lt.get("id"))
        if template is None:
            continue
        market = single(template.inputs.get("instanceMarketOptions"))
        if isinstance(market, Mapping) and market.get("marketType") == "spot":
            yield r, f"a warm pool cannot use Spot instances (launch template '{template.name}')"


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


# --------------------------------------------------------------------------------------------
# Application Auto Scaling
# --------------------------------------------------------------------------------------------


@maps("aws:appautoscaling/target:Target")
def _scalable_target(i: Inputs, _name: str | None) -> list[ApiRequest]:
    suspended = single(i.get("suspendedState"))
    return [
        ApiRequest(
            "application-autoscaling",
            "RegisterScalableTarget",
            drop_none(
                {
                    "ServiceNamespace": i.get("serviceNamespace"),
                    "ResourceId": i.get("resourceId"),
                    "ScalableDimension": i.get("scalableDimension"),
                    "MinCapacity": i.get("minCapacity"),
                    "MaxCapacity": i.get("maxCapacity"),
                    "RoleARN": i.get("roleArn"),
                    "SuspendedState": suspended,
                    "Tags": i.get("tags"),
                }
            ),
        )
    ]


@rule("aws:appautoscaling/target:Target")
def _scalable_target_limits(i: Inputs, _name: str | None) -> Iterable[str]:
    lo, hi = i.get("minCapacity"), i.get("maxCapacity")
    if isinstance(lo, (int, float)) and isinstance(hi, (int, float)) and lo > hi:
        yield f"minCapacity {as_int(lo)} is greater than maxCapacity {as_int(hi)}"


def _step_scaling(config: Any) -> Any:
    """The provider takes step bounds as strings (Terraform's schema); the API takes numbers."""
    if not isinstance(config, Mapping):
        return config
    steps = []
    for step in config.get("stepAdjustments") or []:
        step = dict(step)
        for key in ("metricIntervalLowerBound", "metricIntervalUpperBound"):
            value = step.get(key)
            if isinstance(value, str) and known(value):
                # Text that is no number stays text: botocore reports the type.
                with contextlib.suppress(ValueError):
                    step[key] = float(value)
        steps.append(step)
    return {**config, "stepAdjustments": steps} if steps else dict(config)


@maps("aws:appautoscaling/policy:Policy")
def _scaling_policy(i: Inputs, name: str | None) -> list[ApiRequest]:
    tt = single(i.get("targetTrackingScalingPolicyConfiguration"))
    if isinstance(tt, Mapping):
        tt = dict(tt)
        for key in ("predefinedMetricSpecification", "customizedMetricSpecification"):
            if (spec := single(tt.get(key))) is not None:
                tt[key] = spec
    return [
        ApiRequest(
            "application-autoscaling",
            "PutScalingPolicy",
            drop_none(
                {
                    "PolicyName": name,
                    "ServiceNamespace": i.get("serviceNamespace"),
                    "ResourceId": i.get("resourceId"),
                    "ScalableDimension": i.get("scalableDimension"),
                    "PolicyType": i.get("policyType"),
                    "StepScalingPolicyConfiguration": _step_scaling(
                        single(i.get("stepScalingPolicyConfiguration"))
                    ),
                    "TargetTrackingScalingPolicyConfiguration": tt,
                }
            ),
        )
    ]


# --------------------------------------------------------------------------------------------
# IAM: requests, policy grammar, size limits
# --------------------------------------------------------------------------------------------


_STATEMENT_KEYS = {
    "Sid",
    "Effect",
    "Principal",
    "NotPrincipal",
    "Action",
    "NotAction",
    "Resource",
    "NotResource",
    "Condition",
}
_ACTION = re.compile(r"^(\*|[A-Za-z0-9-]+:[A-Za-z0-9*?]+)$")


def policy_chars(document: str) -> int:
    """Characters IAM counts against its size quotas: all but whitespace."""
    return len(re.sub(r"\s", "", document))


def policy_problems(document: Any, kind: str) -> list[str]:
    """What IAM (or S3) would say about a policy document of `kind`: "identity" (inline or
    managed), "trust" (a role's assume-role policy) or "resource" (a bucket policy)."""
    if not known(document):
        return []
    if isinstance(document, Mapping):
        document = json.dumps(document)
    try:
        doc = json.loads(document)
    except json.JSONDecodeError as exc:
        return [f"policy is not valid JSON: {exc.msg}"]
    if not isinstance(doc, dict):
        return ["policy must be a JSON object"]
    found: list[str] = []
    extra = set(doc) - {"Version", "Id", "Statement"}
    if extra:
        found.append(f"unknown top-level element(s) {sorted(extra)}")
    if doc.get("Version") not in (None, "2012-10-17", "2008-10-17"):
        found.append(f"Version {doc.get('Version')!r} must be 2012-10-17 or 2008-10-17")
    statements = doc.get("Statement")
    if isinstance(statements, dict):
        statements = [statements]
    if not isinstance(statements, list) or not statements:
        return [*found, "Statement must be a non-empty list or object"]
    for n, st in enumerate(statements):
        where = f"Statement[{n}]"
        if not isinstance(st, dict):
            found.append(f"{where} must be an object")
            continue
        if extra := set(st) - _STATEMENT_KEYS:
            found.append(f"{where}: unknown element(s) {sorted(extra)}")
        if st.get("Effect") not in ("Allow", "Deny"):
            found.append(f"{where}: Effect must be Allow or Deny, got {st.get('Effect')!r}")
        if ("Action" in st) == ("NotAction" in st):
            found.append(f"{where}: needs exactly one of Action and NotAction")
        actions = st.get("Action", st.get("NotAction"))
        for action in [actions] if isinstance(actions, str) else actions or []:
            if not isinstance(action, str) or not _ACTION.match(action):
                found.append(f"{where}: action {action!r} is not `service:Action`")
        has_principal = "Principal" in st or "NotPrincipal" in st
        has_resource = "Resource" in st or "NotResource" in st
        if kind == "identity":
            if has_principal:
                found.append(f"{where}: an identity policy has no Principal")
            if not has_resource:
                found.append(f"{where}: needs Resource or NotResource")
            sid = st.get("Sid")
            if isinstance(sid, str) and not re.match(r"^[A-Za-z0-9]*$", sid):
                found.append(f"{where}: Sid {sid!r} must be alphanumeric in IAM policies")
        elif kind == "trust":
            if not has_principal:
                found.append(f"{where}: a trust policy needs a Principal")
            if has_resource:
                found.append(f"{where}: a trust policy has no Resource")
        elif kind == "resource":
            if not has_principal:
                found.append(f"{where}: a resource policy needs a Principal")
            if not has_resource:
                found.append(f"{where}: needs Resource or NotResource")
        condition = st.get("Condition")
        if condition is not None and not (
            isinstance(condition, dict) and all(isinstance(v, dict) for v in condition.values())
        ):
            found.append(f"{where}: Condition must map operators to {{key: values}} objects")
    return found


@maps("aws:iam/role:Role")
def _iam_role(i: Inputs, name: str | None) -> list[ApiRequest]:
    out = [
        ApiRequest(
            "iam",
            "CreateRole",
            drop_none(
                {
                    "Path": i.get("path"),
                    "RoleName": name,
                    "AssumeRolePolicyDocument": i.get("assumeRolePolicy"),
                    "Description": i.get("description"),
                    "MaxSessionDuration": i.get("maxSessionDuration"),
                    "PermissionsBoundary": i.get("permissionsBoundary"),
                    "Tags": tags(i.get("tags")),
                }
            ),
        )
    ]
    for policy in i.get("inlinePolicies") or []:
        if isinstance(policy, Mapping) and policy.get("policy"):
            out.append(
                ApiRequest(
                    "iam",
                    "PutRolePolicy",
                    {
                        "RoleName": name,
                        "PolicyName": policy.get("name"),
                        "PolicyDocument": policy.get("policy"),
                    },
                )
            )
    for arn in i.get("managedPolicyArns") or []:
        out.append(ApiRequest("iam", "AttachRolePolicy", {"RoleName": name, "PolicyArn": arn}))
    return out


@rule("aws:iam/role:Role")
def _iam_role_limits(i: Inputs, _name: str | None) -> Iterable[str]:
    trust = i.get("assumeRolePolicy")
    yield from (f"assumeRolePolicy: {p}" for p in policy_problems(trust, "trust"))
    if isinstance(trust, str) and known(trust) and policy_chars(trust) > TRUST_POLICY_MAX_CHARS:
        yield (
            f"assumeRolePolicy has {policy_chars(trust)} characters (without whitespace), more "
            f"than the {TRUST_POLICY_MAX_CHARS} IAM allows by default"
        )
    for n, policy in enumerate(i.get("inlinePolicies") or []):
        if isinstance(policy, Mapping):
            yield from (
                f"inlinePolicies[{n}]: {p}"
                for p in policy_problems(policy.get("policy"), "identity")
            )
    session, (lo, hi) = i.get("maxSessionDuration"), IAM_ROLE_SESSION_DURATION_RANGE
    if isinstance(session, (int, float)) and not lo <= session <= hi:
        yield f"maxSessionDuration {as_int(session)} is outside {lo}-{hi} seconds"


@maps("aws:iam/rolePolicy:RolePolicy")
def _iam_role_policy(i: Inputs, name: str | None) -> list[ApiRequest]:
    return [
        ApiRequest(
            "iam",
            "PutRolePolicy",
            {"RoleName": i.get("role"), "PolicyName": name, "PolicyDocument": i.get("policy")},
        )
    ]


@rule("aws:iam/rolePolicy:RolePolicy")
def _iam_role_policy_grammar(i: Inputs, _name: str | None) -> Iterable[str]:
    yield from (f"policy: {p}" for p in policy_problems(i.get("policy"), "identity"))


@maps("aws:iam/policy:Policy")
def _iam_policy(i: Inputs, name: str | None) -> list[ApiRequest]:
    return [
        ApiRequest(
            "iam",
            "CreatePolicy",
            drop_none(
                {
                    "PolicyName": name,
                    "Path": i.get("path"),
                    "PolicyDocument": i.get("policy"),
                    "Description": i.get("description"),
                    "Tags": tags(i.get("tags")),
                }
            ),
        )
    ]


@rule("aws:iam/policy:Policy")
def _iam_policy_limits(i: Inputs, _name: str | None) -> Iterable[str]:
    doc = i.get("policy")
    yield from (f"policy: {p}" for p in policy_problems(doc, "identity"))
    if isinstance(doc, str) and known(doc) and policy_chars(doc) > MANAGED_POLICY_MAX_CHARS:
        yield (
            f"policy has {policy_chars(doc)} characters (without whitespace), more than the "
            f"{MANAGED_POLICY_MAX_CHARS} of a managed policy"
        )


@maps("aws:iam/rolePolicyAttachment:RolePolicyAttachment")
def _iam_attachment(i: Inputs, _name: str | None) -> list[ApiRequest]:
    return [
        ApiRequest(
            "iam", "AttachRolePolicy", {"RoleName": i.get("role"), "PolicyArn": i.get("policyArn")}
        )
    ]


@maps("aws:iam/instanceProfile:InstanceProfile")
def _instance_profile(i: Inputs, name: str | None) -> list[ApiRequest]:
    out = [
        ApiRequest(
            "iam",
            "CreateInstanceProfile",
            drop_none(
                {"InstanceProfileName": name, "Path": i.get("path"), "Tags": tags(i.get("tags"))}
            ),
        )
    ]
    if i.get("role") is not None:
        out.append(
            ApiRequest(
                "iam",
                "AddRoleToInstanceProfile",
                {"InstanceProfileName": name, "RoleName": i.get("role")},
            )
        )
    return out


@stack_rule
def _role_policy_totals(
    resources: Sequence[Resource], quotas: Quotas
) -> Iterable[tuple[Resource, str]]:
    """All inline policies of one role within 10,240 characters; at most 10 managed ones."""
    inline: dict[str, list[Resource]] = defaultdict(list)
    attached: dict[str, list[Resource]] = defaultdict(list)
    for r in resources:
        role = r.inputs.get("role")
        if not isinstance(role, str) or not known(role):
            continue
        if r.type == "aws:iam/rolePolicy:RolePolicy":
            inline[role].append(r)
        elif r.type == "aws:iam/rolePolicyAttachment:RolePolicyAttachment":
            attached[role].append(r)
    for role, policies in inline.items():
        docs = [p.inputs.get("policy") for p in policies]
        if all(isinstance(d, str) and known(d) for d in docs):
            total = sum(policy_chars(d) for d in docs)  # type: ignore[arg-type]
            if total > ROLE_INLINE_POLICIES_MAX_CHARS:
                yield (
                    policies[-1],
                    (
                        f"the inline policies of role {role} total {total} characters (without "
                        f"whitespace), more than the {ROLE_INLINE_POLICIES_MAX_CHARS} IAM allows "
                        "(LimitExceeded)"
                    ),
                )
    for role, attachments in attached.items():
        if len(attachments) > quotas.get("managed_policies_per_role", MANAGED_POLICIES_PER_ROLE):
            yield (
                attachments[-1],
                (
                    f"{len(attachments)} managed policies attached to role {role}, more than the "
                    f"default quota of {MANAGED_POLICIES_PER_ROLE}"
                ),
            )


# --------------------------------------------------------------------------------------------
# Cognito
# --------------------------------------------------------------------------------------------


@maps("aws:cognito/userPool:UserPool")
def _user_pool(i: Inputs, name: str | None) -> list[ApiRequest]:
    request = create_user_pool_request({**i, "name": name})
    return [ApiRequest("cognito-idp", "CreateUserPool", request)]


@maps("aws:cognito/userPoolClient:UserPoolClient")
def _user_pool_client(i: Inputs, name: str | None) -> list[ApiRequest]:
    request = create_user_pool_client_request({**i, "name": name})
    # The provider's `tokenValidityUnits` block is the API's `TokenValidityUnits` shape; its
    # members differ only in case, which the shape-directed normalisation handles.
    return [ApiRequest("cognito-idp", "CreateUserPoolClient", request)]


@maps("aws:cognito/userPoolDomain:UserPoolDomain")
def _user_pool_domain(i: Inputs, name: str | None) -> list[ApiRequest]:
    return [
        ApiRequest(
            "cognito-idp",
            "CreateUserPoolDomain",
            drop_none(
                {
                    "Domain": name or i.get("domain"),
                    "UserPoolId": i.get("userPoolId"),
                    "ManagedLoginVersion": i.get("managedLoginVersion"),
                    "CustomDomainConfig": {"CertificateArn": i["certificateArn"]}
                    if i.get("certificateArn")
                    else None,
                }
            ),
        )
    ]


@rule("aws:cognito/userPoolDomain:UserPoolDomain")
def _user_pool_domain_words(i: Inputs, _name: str | None) -> Iterable[str]:
    domain = i.get("domain")
    if not isinstance(domain, str) or not known(domain) or i.get("certificateArn"):
        return
    for word in COGNITO_DOMAIN_RESERVED_WORDS:
        if word in domain.lower():
            yield f"domain prefix {domain!r} contains the reserved word {word!r}"


@maps("aws:cognito/resourceServer:ResourceServer")
def _resource_server(i: Inputs, name: str | None) -> list[ApiRequest]:
    return [
        ApiRequest(
            "cognito-idp",
            "CreateResourceServer",
            drop_none(
                {
                    "UserPoolId": i.get("userPoolId"),
                    "Identifier": i.get("identifier"),
                    "Name": name,
                    "Scopes": i.get("scopes"),
                }
            ),
        )
    ]


# --------------------------------------------------------------------------------------------
# CloudWatch Logs, S3, ACM
# --------------------------------------------------------------------------------------------


@maps("aws:cloudwatch/logGroup:LogGroup")
def _log_group(i: Inputs, name: str | None) -> list[ApiRequest]:
    out = [
        ApiRequest(
            "logs",
            "CreateLogGroup",
            drop_none(
                {
                    "logGroupName": name,
                    "kmsKeyId": i.get("kmsKeyId"),
                    "tags": i.get("tags"),
                    "logGroupClass": i.get("logGroupClass"),
                }
            ),
        )
    ]
    days = i.get("retentionInDays")
    if days is not None and days != 0:
        out.append(
            ApiRequest(
                "logs", "PutRetentionPolicy", {"logGroupName": name, "retentionInDays": days}
            )
        )
    return out


@rule("aws:cloudwatch/logGroup:LogGroup")
def _log_retention(i: Inputs, _name: str | None) -> Iterable[str]:
    days = i.get("retentionInDays")
    if (
        isinstance(days, (int, float))
        and days != 0
        and as_int(days) not in CLOUDWATCH_LOG_RETENTION_DAYS
    ):
        allowed = sorted(CLOUDWATCH_LOG_RETENTION_DAYS)
        yield f"retentionInDays {as_int(days)} is not one of {allowed}"


@maps("aws:s3/bucket:Bucket", "aws:s3/bucketV2:BucketV2")
def _bucket(i: Inputs, name: str | None) -> list[ApiRequest]:
    return [
        ApiRequest(
            "s3",
            "CreateBucket",
            drop_none({"Bucket": name, "ObjectLockEnabledForBucket": i.get("objectLockEnabled")}),
        )
    ]


@rule("aws:s3/bucket:Bucket", "aws:s3/bucketV2:BucketV2")
def _bucket_name_rules(i: Inputs, name: str | None) -> Iterable[str]:
    # General purpose bucket naming rules (S3 user guide).
    if not name or not known(name):
        return
    if ".." in name:
        yield f"bucket name {name!r} has two adjacent periods"
    try:
        ipaddress.IPv4Address(name)
        yield f"bucket name {name!r} is formatted as an IP address"
    except ValueError:
        pass
    for suffix in ("-s3alias", "--ol-s3", ".mrap", "--x-s3"):
        if name.endswith(suffix):
            yield f"bucket name {name!r} ends with the reserved suffix {suffix!r}"


def _bucket_of(i: Inputs) -> Any:
    return i.get("bucket")


@maps("aws:s3/bucketPolicy:BucketPolicy")
def _bucket_policy(i: Inputs, _name: str | None) -> list[ApiRequest]:
    return [
        ApiRequest("s3", "PutBucketPolicy", {"Bucket": _bucket_of(i), "Policy": i.get("policy")})
    ]


@rule("aws:s3/bucketPolicy:BucketPolicy")
def _bucket_policy_limits(i: Inputs, _name: str | None) -> Iterable[str]:
    doc = i.get("policy")
    yield from (f"policy: {p}" for p in policy_problems(doc, "resource"))
    if isinstance(doc, str) and known(doc) and len(doc.encode()) > BUCKET_POLICY_MAX_BYTES:
        yield (
            f"policy is {len(doc.encode())} bytes, more than the {BUCKET_POLICY_MAX_BYTES} "
            "S3 allows"
        )


@maps("aws:s3/bucketOwnershipControls:BucketOwnershipControls")
def _bucket_ownership(i: Inputs, _name: str | None) -> list[ApiRequest]:
    rule_ = single(i.get("rule")) or {}
    return [
        ApiRequest(
            "s3",
            "PutBucketOwnershipControls",
            {
                "Bucket": _bucket_of(i),
                "OwnershipControls": {"Rules": [{"ObjectOwnership": rule_.get("objectOwnership")}]},
            },
        )
    ]


@maps("aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock")
def _bucket_public_access(i: Inputs, _name: str | None) -> list[ApiRequest]:
    config = drop_none(
        {
            "BlockPublicAcls": i.get("blockPublicAcls"),
            "IgnorePublicAcls": i.get("ignorePublicAcls"),
            "BlockPublicPolicy": i.get("blockPublicPolicy"),
            "RestrictPublicBuckets": i.get("restrictPublicBuckets"),
        }
    )
    return [
        ApiRequest(
            "s3",
            "PutPublicAccessBlock",
            {"Bucket": _bucket_of(i), "PublicAccessBlockConfiguration": config},
        )
    ]


@maps("aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration")
def _bucket_encryption(i: Inputs, _name: str | None) -> list[ApiRequest]:
    rules = []
    for r in i.get("rules") or []:
        default = single(r.get("applyServerSideEncryptionByDefault"))
        rules.append(
            drop_none(
                {
                    "ApplyServerSideEncryptionByDefault": drop_none(
                        {
                            "SSEAlgorithm": default.get("sseAlgorithm"),
                            "KMSMasterKeyID": default.get("kmsMasterKeyId"),
                        }
                    )
                    if isinstance(default, Mapping)
                    else None,
                    "BucketKeyEnabled": r.get("bucketKeyEnabled"),
                }
            )
        )
    return [
        ApiRequest(
            "s3",
            "PutBucketEncryption",
            {
                "Bucket": _bucket_of(i),
                "ServerSideEncryptionConfiguration": {"Rules": rules},
            },
        )
    ]


@maps("aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration")
def _bucket_lifecycle(i: Inputs, _name: str | None) -> list[ApiRequest]:
    rules = []
    for r in i.get("rules") or []:
        flt = single(r.get("filter"))
        exp = single(r.get("expiration"))
        abort = single(r.get("abortIncompleteMultipartUpload"))
        rules.append(
            drop_none(
                {
                    "ID": r.get("id"),
                    "Status": r.get("status"),
                    "Filter": drop_none(
                        {
                            "Prefix": flt.get("prefix"),
                            "ObjectSizeGreaterThan": flt.get("objectSizeGreaterThan"),
                            "ObjectSizeLessThan": flt.get("objectSizeLessThan"),
                        }
                    )
                    if isinstance(flt, Mapping)
                    else None,
                    "Expiration": drop_none(
                        {
                            "Days": exp.get("days"),
                            "Date": exp.get("date"),
                            "ExpiredObjectDeleteMarker": exp.get("expiredObjectDeleteMarker"),
                        }
                    )
                    if isinstance(exp, Mapping)
                    else None,
                    "AbortIncompleteMultipartUpload": {
                        "DaysAfterInitiation": abort.get("daysAfterInitiation")
                    }
                    if isinstance(abort, Mapping)
                    else None,
                }
            )
        )
    return [
        ApiRequest(
            "s3",
            "PutBucketLifecycleConfiguration",
            {"Bucket": _bucket_of(i), "LifecycleConfiguration": {"Rules": rules}},
        )
    ]


@maps("aws:acm/certificate:Certificate")
def _acm_certificate(i: Inputs, _name: str | None) -> list[ApiRequest]:
    if i.get("certificateBody") is not None or i.get("privateKey") is not None:
        return [
            ApiRequest(
                "acm",
                "ImportCertificate",
                drop_none(
                    {
                        "Certificate": i.get("certificateBody"),
                        "PrivateKey": i.get("privateKey"),
                        "CertificateChain": i.get("certificateChain"),
                        "Tags": tags(i.get("tags")),
                    }
                ),
            )
        ]
    return [
        ApiRequest(
            "acm",
            "RequestCertificate",
            drop_none(
                {
                    "DomainName": i.get("domainName"),
                    "ValidationMethod": i.get("validationMethod"),
                    "SubjectAlternativeNames": i.get("subjectAlternativeNames"),
                    "KeyAlgorithm": i.get("keyAlgorithm"),
                    "CertificateAuthorityArn": i.get("certificateAuthorityArn"),
                    "Tags": tags(i.get("tags")),
                }
            ),
        )
    ]


@rule("aws:acm/certificate:Certificate")
def _acm_pem(i: Inputs, _name: str | None) -> Iterable[str]:
    for key, marker in (("certificateBody", "CERTIFICATE"), ("privateKey", "PRIVATE KEY")):
        value = i.get(key)
        if isinstance(value, str) and known(value) and "-----BEGIN " not in value:
            yield f"{key} is not PEM (no -----BEGIN ...{marker}----- block)"


# --------------------------------------------------------------------------------------------
# EC2: security groups and their rules, VPC endpoints
# --------------------------------------------------------------------------------------------

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


# --------------------------------------------------------------------------------------------
# others the programs here create
# --------------------------------------------------------------------------------------------


@maps("aws:ecr/repository:Repository")
def _ecr_repository(i: Inputs, name: str | None) -> list[ApiRequest]:
    scan = single(i.get("imageScanningConfiguration"))
    return [
        ApiRequest(
            "ecr",
            "CreateRepository",
            drop_none(
                {
                    "repositoryName": name,
                    "imageTagMutability": i.get("imageTagMutability"),
                    "imageScanningConfiguration": scan,
                    "encryptionConfiguration": (i.get("encryptionConfigurations") or [None])[0],
                    "tags": tags(i.get("tags")),
                }
            ),
        )
    ]


@maps("aws:secretsmanager/secret:Secret")
def _secret(i: Inputs, name: str | None) -> list[ApiRequest]:
    return [
        ApiRequest(
            "secretsmanager",
            "CreateSecret",
            drop_none(
                {
                    "Name": name,
                    "Description": i.get("description"),
                    "KmsKeyId": i.get("kmsKeyId"),
                    "Tags": tags(i.get("tags")),
                }
            ),
        )
    ]


@maps("aws:route53/record:Record")
def _route53_record(i: Inputs, _name: str | None) -> list[ApiRequest]:
    alias = (i.get("aliases") or [None])[0]
    record = drop_none(
        {
            "Name": i.get("name"),
            "Type": i.get("type"),
            "TTL": i.get("ttl"),
            "ResourceRecords": [{"Value": v} for v in i.get("records") or []] or None,
            "AliasTarget": {
                "HostedZoneId": alias.get("zoneId"),
                "DNSName": alias.get("name"),
                "EvaluateTargetHealth": alias.get("evaluateTargetHealth"),
            }
            if isinstance(alias, Mapping)
            else None,
            "SetIdentifier": i.get("setIdentifier"),
        }
    )
    return [
        ApiRequest(
            "route53",
            "ChangeResourceRecordSets",
            {
                "HostedZoneId": i.get("zoneId"),
                "ChangeBatch": {"Changes": [{"Action": "CREATE", "ResourceRecordSet": record}]},
            },
        )
    ]


@rule("aws:route53/record:Record")
def _route53_record_limits(i: Inputs, _name: str | None) -> Iterable[str]:
    if i.get("aliases") and i.get("records"):
        yield "a record has either aliases or records, not both"
    if i.get("aliases") and i.get("ttl") is not None:
        yield "an alias record takes no ttl"


# --------------------------------------------------------------------------------------------
# day-2 types (SNS, SQS, CloudWatch alarms and dashboards, EventBridge, EFS)
# --------------------------------------------------------------------------------------------


def _string_attributes(pairs: Mapping[str, Any]) -> dict[str, Any] | None:
    """SNS/SQS `Attributes`: a map of strings (numbers and booleans as their text)."""
    out: dict[str, Any] = {}
    for key, value in pairs.items():
        if value is None:
            continue
        if isinstance(value, bool):
            out[key] = "true" if value else "false"
        elif isinstance(value, (int, float)):
            out[key] = str(as_int(value))
        else:
            out[key] = value
    return out or None


@maps("aws:sns/topic:Topic")
def _sns_topic(i: Inputs, name: str | None) -> list[ApiRequest]:
    attrs = _string_attributes(
        {
            "DisplayName": i.get("displayName"),
            "Policy": i.get("policy"),
            "DeliveryPolicy": i.get("deliveryPolicy"),
            "KmsMasterKeyId": i.get("kmsMasterKeyId"),
            "FifoTopic": i.get("fifoTopic"),
            "ContentBasedDeduplication": i.get("contentBasedDeduplication"),
            "SignatureVersion": i.get("signatureVersion"),
            "TracingConfig": i.get("tracingConfig"),
        }
    )
    return [
        ApiRequest(
            "sns",
            "CreateTopic",
            drop_none({"Name": name, "Attributes": attrs, "Tags": tags(i.get("tags"))}),
        )
    ]


@rule("aws:sns/topic:Topic", "aws:sqs/queue:Queue")
def _fifo_names(i: Inputs, name: str | None) -> Iterable[str]:
    # SNS CreateTopic / SQS CreateQueue: a FIFO topic or queue name ends in ".fifo", and only
    # a FIFO one may.
    fifo = bool(i.get("fifoTopic") or i.get("fifoQueue"))
    if isinstance(name, str) and known(name) and fifo != name.endswith(".fifo"):
        yield f"name {name!r}: FIFO names end in '.fifo' and only FIFO names may"


@maps("aws:sqs/queue:Queue")
def _sqs_queue(i: Inputs, name: str | None) -> list[ApiRequest]:
    attrs = _string_attributes(
        {
            "DelaySeconds": i.get("delaySeconds"),
            "MaximumMessageSize": i.get("maxMessageSize"),
            "MessageRetentionPeriod": i.get("messageRetentionSeconds"),
            "ReceiveMessageWaitTimeSeconds": i.get("receiveWaitTimeSeconds"),
            "VisibilityTimeout": i.get("visibilityTimeoutSeconds"),
            "Policy": i.get("policy"),
            "RedrivePolicy": i.get("redrivePolicy"),
            "FifoQueue": i.get("fifoQueue"),
            "ContentBasedDeduplication": i.get("contentBasedDeduplication"),
            "KmsMasterKeyId": i.get("kmsMasterKeyId"),
            "SqsManagedSseEnabled": i.get("sqsManagedSseEnabled"),
        }
    )
    return [
        ApiRequest(
            "sqs",
            "CreateQueue",
            drop_none({"QueueName": name, "Attributes": attrs, "tags": i.get("tags")}),
        )
    ]


@rule("aws:sqs/queue:Queue")
def _sqs_limits(i: Inputs, _name: str | None) -> Iterable[str]:
    for key, (lo, hi) in SQS_ATTRIBUTE_RANGES.items():
        value = i.get(key)
        if isinstance(value, (int, float)) and not lo <= value <= hi:
            yield f"{key} {as_int(value)} is outside {lo}-{hi}"


@maps("aws:cloudwatch/metricAlarm:MetricAlarm")
def _metric_alarm(i: Inputs, name: str | None) -> list[ApiRequest]:
    metrics = []
    for q in i.get("metricQueries") or []:
        stat = single(q.get("metric"))
        metrics.append(
            drop_none(
                {
                    "Id": q.get("id"),
                    "Expression": q.get("expression"),
                    "Label": q.get("label"),
                    "ReturnData": q.get("returnData"),
                    "Period": q.get("period"),
                    "AccountId": q.get("accountId"),
                    "MetricStat": drop_none(
                        {
                            "Metric": drop_none(
                                {
                                    "Namespace": stat.get("namespace"),
                                    "MetricName": stat.get("metricName"),
                                    "Dimensions": [
                                        {"Name": k, "Value": v}
                                        for k, v in (stat.get("dimensions") or {}).items()
                                    ]
                                    or None,
                                }
                            ),
                            "Period": stat.get("period"),
                            "Stat": stat.get("stat"),
                            "Unit": stat.get("unit"),
                        }
                    )
                    if isinstance(stat, Mapping)
                    else None,
                }
            )
        )
    dims = i.get("dimensions")
    return [
        ApiRequest(
            "cloudwatch",
            "PutMetricAlarm",
            drop_none(
                {
                    "AlarmName": name,
                    "AlarmDescription": i.get("alarmDescription"),
                    "ActionsEnabled": i.get("actionsEnabled"),
                    "OKActions": i.get("okActions"),
                    "AlarmActions": i.get("alarmActions"),
                    "InsufficientDataActions": i.get("insufficientDataActions"),
                    "MetricName": i.get("metricName"),
                    "Namespace": i.get("namespace"),
                    "Statistic": i.get("statistic"),
                    "ExtendedStatistic": i.get("extendedStatistic"),
                    "Dimensions": [{"Name": k, "Value": v} for k, v in dims.items()]
                    if isinstance(dims, Mapping)
                    else None,
                    "Period": i.get("period"),
                    "Unit": i.get("unit"),
                    "EvaluationPeriods": i.get("evaluationPeriods"),
                    "DatapointsToAlarm": i.get("datapointsToAlarm"),
                    "Threshold": i.get("threshold"),
                    "ComparisonOperator": i.get("comparisonOperator"),
                    "TreatMissingData": i.get("treatMissingData"),
                    "Metrics": metrics or None,
                    "ThresholdMetricId": i.get("thresholdMetricId"),
                    "Tags": tags(i.get("tags")),
                }
            ),
        )
    ]


@rule("aws:cloudwatch/metricAlarm:MetricAlarm")
def _metric_alarm_limits(i: Inputs, _name: str | None) -> Iterable[str]:
    # PutMetricAlarm: a single metric or metric math, not both; at most 10 metric queries;
    # datapoints to alarm no more than the evaluation periods; periods of 10, 20, 30 or a
    # multiple of 60 seconds.
    if i.get("metricName") and i.get("metricQueries"):
        yield "metricName and metricQueries cannot both be set"
    queries = i.get("metricQueries")
    if isinstance(queries, list) and len(queries) > ALARM_METRIC_QUERIES_MAX:
        yield f"{len(queries)} metric queries, at most {ALARM_METRIC_QUERIES_MAX}"
    points, periods = i.get("datapointsToAlarm"), i.get("evaluationPeriods")
    if isinstance(points, (int, float)) and isinstance(periods, (int, float)) and points > periods:
        yield f"datapointsToAlarm {as_int(points)} exceeds evaluationPeriods {as_int(periods)}"
    period = i.get("period")
    if isinstance(period, (int, float)) and not (period in (10, 20, 30) or period % 60 == 0):
        yield f"period {as_int(period)} must be 10, 20, 30 or a multiple of 60 seconds"


@maps("aws:cloudwatch/dashboard:Dashboard")
def _dashboard(i: Inputs, _name: str | None) -> list[ApiRequest]:
    return [
        ApiRequest(
            "cloudwatch",
            "PutDashboard",
            {"DashboardName": i.get("dashboardName"), "DashboardBody": i.get("dashboardBody")},
        )
    ]


@rule("aws:cloudwatch/dashboard:Dashboard")
def _dashboard_body(i: Inputs, _name: str | None) -> Iterable[str]:
    body = i.get("dashboardBody")
    if not isinstance(body, str) or not known(body):
        return
    try:
        doc = json.loads(body)
    except json.JSONDecodeError as exc:
        yield f"dashboardBody is not valid JSON: {exc.msg}"
        return
    widgets = doc.get("widgets") if isinstance(doc, dict) else None
    if not isinstance(widgets, list):
        yield "dashboardBody needs a `widgets` list"
    elif len(widgets) > DASHBOARD_MAX_WIDGETS:
        yield f"{len(widgets)} widgets, at most {DASHBOARD_MAX_WIDGETS} per dashboard"


@maps("aws:cloudwatch/eventRule:EventRule")
def _event_rule(i: Inputs, name: str | None) -> list[ApiRequest]:
    return [
        ApiRequest(
            "events",
            "PutRule",
            drop_none(
                {
                    "Name": name,
                    "ScheduleExpression": i.get("scheduleExpression"),
                    "EventPattern": i.get("eventPattern"),
                    "State": i.get("state"),
                    "Description": i.get("description"),
                    "RoleArn": i.get("roleArn"),
                    "EventBusName": i.get("eventBusName"),
                    "Tags": tags(i.get("tags")),
                }
            ),
        )
    ]


@rule("aws:cloudwatch/eventRule:EventRule")
def _event_rule_limits(i: Inputs, _name: str | None) -> Iterable[str]:
    # PutRule: a schedule expression or an event pattern (or both on the default bus); the
    # pattern is JSON.
    if not i.get("scheduleExpression") and not i.get("eventPattern"):
        yield "needs scheduleExpression or eventPattern"
    pattern = i.get("eventPattern")
    if isinstance(pattern, str) and known(pattern):
        try:
            json.loads(pattern)
        except json.JSONDecodeError as exc:
            yield f"eventPattern is not valid JSON: {exc.msg}"


@maps("aws:cloudwatch/eventTarget:EventTarget")
def _event_target(i: Inputs, _name: str | None) -> list[ApiRequest]:
    return [
        ApiRequest(
            "events",
            "PutTargets",
            drop_none(
                {
                    "Rule": i.get("rule"),
                    "EventBusName": i.get("eventBusName"),
                    "Targets": [
                        drop_none(
                            {
                                "Id": i.get("targetId") or UNKNOWN,
                                "Arn": i.get("arn"),
                                "RoleArn": i.get("roleArn"),
                                "Input": i.get("input"),
                                "InputPath": i.get("inputPath"),
                            }
                        )
                    ],
                }
            ),
        )
    ]


@maps("aws:efs/fileSystem:FileSystem")
def _efs(i: Inputs, name: str | None) -> list[ApiRequest]:
    return [
        ApiRequest(
            "efs",
            "CreateFileSystem",
            drop_none(
                {
                    # The provider autonames the creation token (resource_overrides.go).
                    "CreationToken": i.get("creationToken") or name or UNKNOWN,
                    "PerformanceMode": i.get("performanceMode"),
                    "Encrypted": i.get("encrypted"),
                    "KmsKeyId": i.get("kmsKeyId"),
                    "ThroughputMode": i.get("throughputMode"),
                    "ProvisionedThroughputInMibps": i.get("provisionedThroughputInMibps"),
                    "AvailabilityZoneName": i.get("availabilityZoneName"),
                    "Tags": tags(i.get("tags")),
                }
            ),
        )
    ]


@maps("aws:efs/mountTarget:MountTarget")
def _efs_mount_target(i: Inputs, _name: str | None) -> list[ApiRequest]:
    return [
        ApiRequest(
            "efs",
            "CreateMountTarget",
            drop_none(
                {
                    "FileSystemId": i.get("fileSystemId"),
                    "SubnetId": i.get("subnetId"),
                    "IpAddress": i.get("ipAddress"),
                    "SecurityGroups": i.get("securityGroups"),
                }
            ),
        )
    ]


@maps("aws:efs/accessPoint:AccessPoint")
def _efs_access_point(i: Inputs, _name: str | None) -> list[ApiRequest]:
    posix = single(i.get("posixUser")) or {}
    root = single(i.get("rootDirectory")) or {}
    info = single(root.get("creationInfo")) or {}
    return [
        ApiRequest(
            "efs",
            "CreateAccessPoint",
            drop_none(
                {
                    # The provider sends an idempotency token of its own.
                    "ClientToken": "pulumi-access-point",
                    "FileSystemId": i.get("fileSystemId"),
                    "Tags": tags(i.get("tags")),
                    "PosixUser": drop_none(
                        {
                            "Uid": as_int(posix.get("uid")),
                            "Gid": as_int(posix.get("gid")),
                            "SecondaryGids": posix.get("secondaryGids"),
                        }
                    )
                    or None,
                    "RootDirectory": drop_none(
                        {
                            "Path": root.get("path"),
                            "CreationInfo": drop_none(
                                {
                                    "OwnerUid": as_int(info.get("ownerUid")),
                                    "OwnerGid": as_int(info.get("ownerGid")),
                                    "Permissions": info.get("permissions"),
                                }
                            )
                            or None,
                        }
                    )
                    or None,
                }
            ),
        )
    ]


@rule("aws:efs/accessPoint:AccessPoint")
def _efs_access_point_limits(i: Inputs, _name: str | None) -> Iterable[str]:
    # CreateAccessPoint: the root path has at most four subdirectories (its length, 100, is in
    # botocore's model).
    root = single(i.get("rootDirectory")) or {}
    path = root.get("path")
    if isinstance(path, str) and path != UNKNOWN:
        depth = len([p for p in path.split("/") if p])
        if depth > EFS_ACCESS_POINT_PATH_MAX_DEPTH:
            yield (
                f"rootDirectory.path {path!r} has {depth} directories; EFS allows at most "
                f"{EFS_ACCESS_POINT_PATH_MAX_DEPTH}"
            )


@maps("aws:efs/fileSystemPolicy:FileSystemPolicy")
def _efs_policy(i: Inputs, _name: str | None) -> list[ApiRequest]:
    return [
        ApiRequest(
            "efs",
            "PutFileSystemPolicy",
            drop_none(
                {
                    "FileSystemId": i.get("fileSystemId"),
                    "Policy": i.get("policy"),
                    "BypassPolicyLockoutSafetyCheck": i.get("bypassPolicyLockoutSafetyCheck"),
                }
            ),
        )
    ]


# --------------------------------------------------------------------------------------------
# running the checks
# --------------------------------------------------------------------------------------------


def resource_problems(type_: str, inputs: Inputs, physical_name: str | None) -> list[str]:
    """Every request and rule problem AWS would report for one resource (empty: accepted)."""
    found: list[str] = []
    mapper = MAPPERS.get(type_)
    if mapper is not None:
        try:
            requests = mapper(inputs, physical_name)
        except ShapeError as exc:
            return [f"{exc.where}: {exc.report}"]
        except (AttributeError, TypeError, KeyError):
            # A block still unknown at preview time cannot be mapped; it is checked when known.
            if not contains_unknown(inputs):
                raise
            requests = []
        for request in requests:
            found += problems_of(request)
    for check in RULES.get(type_, ()):
        found += list(check(inputs, physical_name))
    return found


def stack_problems(
    resources: Sequence[Resource], quotas: Quotas | None = None
) -> list[tuple[Resource, str]]:
    """Problems that span several resources (priorities, quotas, totals)."""
    return [item for check in STACK_RULES for item in check(resources, quotas or {})]


def covered_types() -> set[str]:
    """Type tokens with a request mapper."""
    return set(MAPPERS)


# --------------------------------------------------------------------------------------------
# AI gateway and queue workers: queue policies, Cloud Map, Aurora
# --------------------------------------------------------------------------------------------


@maps("aws:sqs/queuePolicy:QueuePolicy")
def _sqs_queue_policy(i: Inputs, _name: str | None) -> list[ApiRequest]:
    return [
        ApiRequest(
            "sqs",
            "SetQueueAttributes",
            drop_none({"QueueUrl": i.get("queueUrl"), "Attributes": {"Policy": i.get("policy")}}),
        )
    ]


@maps("aws:sqs/redriveAllowPolicy:RedriveAllowPolicy")
def _sqs_redrive_allow(i: Inputs, _name: str | None) -> list[ApiRequest]:
    return [
        ApiRequest(
            "sqs",
            "SetQueueAttributes",
            drop_none(
                {
                    "QueueUrl": i.get("queueUrl"),
                    "Attributes": {"RedriveAllowPolicy": i.get("redriveAllowPolicy")},
                }
            ),
        )
    ]


@rule("aws:sqs/redriveAllowPolicy:RedriveAllowPolicy")
def _sqs_redrive_allow_document(i: Inputs, _name: str | None) -> Iterable[str]:
    raw = i.get("redriveAllowPolicy")
    if not isinstance(raw, str) or not known(raw):
        return
    try:
        doc = json.loads(raw)
    except ValueError:
        yield "redriveAllowPolicy is not JSON"
        return
    permission = doc.get("redrivePermission")
    if permission not in ("allowAll", "denyAll", "byQueue"):
        yield f"redrivePermission {permission!r} is not allowAll, denyAll or byQueue"
    sources = doc.get("sourceQueueArns") or []
    if permission == "byQueue" and not 1 <= len(sources) <= 10:
        yield f"byQueue needs 1-10 sourceQueueArns, got {len(sources)}"


@maps("aws:servicediscovery/httpNamespace:HttpNamespace")
def _http_namespace(i: Inputs, name: str | None) -> list[ApiRequest]:
    return [
        ApiRequest(
            "servicediscovery",
            "CreateHttpNamespace",
            drop_none(
                {
                    "Name": name,
                    "Description": i.get("description"),
                    "Tags": tags(i.get("tags")),
                }
            ),
        )
    ]


@maps("aws:rds/subnetGroup:SubnetGroup")
def _db_subnet_group(i: Inputs, name: str | None) -> list[ApiRequest]:
    return [
        ApiRequest(
            "rds",
            "CreateDBSubnetGroup",
            drop_none(
                {
                    "DBSubnetGroupName": name,
                    # The provider fills "Managed by Pulumi"; the API requires a description.
                    "DBSubnetGroupDescription": i.get("description") or "Managed by Pulumi",
                    "SubnetIds": i.get("subnetIds"),
                    "Tags": tags(i.get("tags")),
                }
            ),
        )
    ]


@maps("aws:rds/cluster:Cluster")
def _db_cluster(i: Inputs, name: str | None) -> list[ApiRequest]:
    scaling = single(i.get("serverlessv2ScalingConfiguration"))
    return [
        ApiRequest(
            "rds",
            "CreateDBCluster",
            drop_none(
                {
                    "DBClusterIdentifier": name,
                    "Engine": i.get("engine"),
                    "EngineVersion": i.get("engineVersion"),
                    "EngineMode": i.get("engineMode"),
                    "DatabaseName": i.get("databaseName"),
                    "MasterUsername": i.get("masterUsername"),
                    "MasterUserPassword": i.get("masterPassword"),
                    "ManageMasterUserPassword": i.get("manageMasterUserPassword"),
                    "StorageEncrypted": i.get("storageEncrypted"),
                    "KmsKeyId": i.get("kmsKeyId"),
                    "EnableIAMDatabaseAuthentication": i.get("iamDatabaseAuthenticationEnabled"),
                    "DeletionProtection": i.get("deletionProtection"),
                    "BackupRetentionPeriod": i.get("backupRetentionPeriod"),
                    "CopyTagsToSnapshot": i.get("copyTagsToSnapshot"),
                    "DBSubnetGroupName": i.get("dbSubnetGroupName"),
                    "VpcSecurityGroupIds": i.get("vpcSecurityGroupIds"),
                    "ServerlessV2ScalingConfiguration": drop_none(
                        {
                            "MinCapacity": scaling.get("minCapacity"),
                            "MaxCapacity": scaling.get("maxCapacity"),
                            "SecondsUntilAutoPause": scaling.get("secondsUntilAutoPause"),
                        }
                    )
                    if isinstance(scaling, Mapping)
                    else None,
                    "Tags": tags(i.get("tags")),
                }
            ),
        )
    ]


@rule("aws:rds/cluster:Cluster")
def _db_cluster_limits(i: Inputs, _name: str | None) -> Iterable[str]:
    # CreateDBCluster: a managed password and an explicit one exclude each other; a final
    # snapshot needs its identifier unless skipped.
    if i.get("manageMasterUserPassword") and i.get("masterPassword") is not None:
        yield "manageMasterUserPassword and masterPassword cannot both be set"
    if i.get("skipFinalSnapshot") is False and not i.get("finalSnapshotIdentifier"):
        yield "skipFinalSnapshot false needs finalSnapshotIdentifier"
    scaling = single(i.get("serverlessv2ScalingConfiguration"))
    if isinstance(scaling, Mapping):
        lo, hi = scaling.get("minCapacity"), scaling.get("maxCapacity")
        if isinstance(lo, (int, float)) and isinstance(hi, (int, float)) and lo > hi:
            yield f"serverless v2 minCapacity {lo} is above maxCapacity {hi}"


@maps("aws:rds/clusterInstance:ClusterInstance")
def _db_cluster_instance(i: Inputs, name: str | None) -> list[ApiRequest]:
    return [
        ApiRequest(
            "rds",
            "CreateDBInstance",
            drop_none(
                {
                    "DBInstanceIdentifier": name,
                    "DBClusterIdentifier": i.get("clusterIdentifier"),
                    "DBInstanceClass": i.get("instanceClass"),
                    "Engine": i.get("engine"),
                    "EngineVersion": i.get("engineVersion"),
                    "DBSubnetGroupName": i.get("dbSubnetGroupName"),
                    "PubliclyAccessible": i.get("publiclyAccessible"),
                    "Tags": tags(i.get("tags")),
                }
            ),
        )
    ]


# --------------------------------------------------------------------------------------------
# the alarm topic's key, policy and subscriptions (components/operations.py)
# --------------------------------------------------------------------------------------------


@maps("aws:kms/key:Key")
def _kms_key(i: Inputs, _name: str | None) -> list[ApiRequest]:
    return [
        ApiRequest(
            "kms",
            "CreateKey",
            drop_none(
                {
                    "Policy": i.get("policy"),
                    "Description": i.get("description"),
                    "KeyUsage": i.get("keyUsage"),
                    "KeySpec": i.get("customerMasterKeySpec"),
                    "MultiRegion": i.get("multiRegion"),
                    "BypassPolicyLockoutSafetyCheck": i.get("bypassPolicyLockoutSafetyCheck"),
                    "Tags": tags(i.get("tags"), "TagKey", "TagValue"),
                }
            ),
        )
    ]


@rule("aws:kms/key:Key")
def _kms_key_limits(i: Inputs, _name: str | None) -> Iterable[str]:
    window = i.get("deletionWindowInDays")
    lo, hi = KMS_DELETION_WINDOW_DAYS
    if isinstance(window, (int, float)) and not lo <= window <= hi:
        yield f"deletionWindowInDays {as_int(window)} must be {lo}-{hi}"
    yield from policy_problems(i.get("policy"), "resource")


@maps("aws:sns/topicPolicy:TopicPolicy")
def _sns_topic_policy(i: Inputs, _name: str | None) -> list[ApiRequest]:
    return [
        ApiRequest(
            "sns",
            "SetTopicAttributes",
            drop_none(
                {
                    "TopicArn": i.get("arn"),
                    "AttributeName": "Policy",
                    "AttributeValue": i.get("policy"),
                }
            ),
        )
    ]


@rule("aws:sns/topicPolicy:TopicPolicy")
def _sns_topic_policy_grammar(i: Inputs, _name: str | None) -> Iterable[str]:
    yield from policy_problems(i.get("policy"), "resource")


@maps("aws:sns/topicSubscription:TopicSubscription")
def _sns_subscription(i: Inputs, _name: str | None) -> list[ApiRequest]:
    return [
        ApiRequest(
            "sns",
            "Subscribe",
            drop_none(
                {
                    "TopicArn": i.get("topic"),
                    "Protocol": i.get("protocol"),
                    "Endpoint": i.get("endpoint"),
                    "ReturnSubscriptionArn": True,
                }
            ),
        )
    ]
