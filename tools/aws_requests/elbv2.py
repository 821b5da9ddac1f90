"""Elastic Load Balancing v2: load balancers, target groups, listeners and their rules."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ecs_inference.contracts.aws_limits import (
    ALB_CLIENT_KEEP_ALIVE_RANGE,
    ALB_IDLE_TIMEOUT_RANGE,
    CONDITION_VALUES_PER_RULE,
    RULES_PER_ALB,
    TARGET_GROUP_DEREGISTRATION_DELAY_MAX,
    TARGET_GROUP_SLOW_START_RANGE,
    WILDCARDS_PER_RULE,
)
from tools.aws_requests.registry import (
    ApiRequest,
    Inputs,
    Quotas,
    Resource,
    as_int,
    attributes,
    drop_none,
    known,
    maps,
    rule,
    single,
    stack_rule,
    tags,
)
from tools.aws_shapes import UNKNOWN, contains_unknown, create_listener_request, create_rule_request


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
