"""The endpoint's plan: the ALB idle timeout every routed service's longest request needs, the
listener rule priorities (within the account's rule quota), and the endpoint's spec."""

from __future__ import annotations

from collections.abc import Iterable

from ecs_inference import sizing
from ecs_inference.config.issues import Issues
from ecs_inference.config.stack import StackConfig
from ecs_inference.gateway.litellm_config import BEDROCK_TIMEOUT_SECONDS
from ecs_inference.specs.endpoint import (
    AuthSpec,
    EndpointSpec,
    default_domain_prefix,
)

# Listener rule priorities: each service takes two consecutive ones (bearer, browser); spacing
# them by 10 leaves room for hand-added rules between services.
PRIORITY_START, PRIORITY_STEP = 100, 10
# Each service takes two listener rules (bearer -> jwt-validation, browser -> Cognito); the ALB
# quota "Rules per Application Load Balancer" is `endpoint.listenerRuleQuota`.
RULES_PER_SERVICE = 2


def idle_timeout(cfg: StackConfig, issues: Issues) -> sizing.IdleTimeout:
    """The ALB idle timeout: the longest generation any routed service allows, plus a margin, or
    the configured override (which must still cover it)."""
    longest = [m.max_generation_seconds for m in cfg.models.values()]
    longest += [r.max_request_seconds for r in cfg.rerankers.values()]
    if cfg.gateway is not None and cfg.gateway.bedrock.models:
        longest.append(BEDROCK_TIMEOUT_SECONDS)
    try:
        return sizing.alb_idle_timeout(longest or [60], override=cfg.endpoint.idle_timeout_seconds)
    except sizing.SizingError as exc:
        issues.add("platform.endpoint.idleTimeoutSeconds", str(exc))
        return sizing.alb_idle_timeout(longest or [60])


def rule_priorities(cfg: StackConfig, issues: Issues) -> tuple[dict[str, int], int]:
    """The first of each service's two listener rule priorities, and the gateway's (after every
    service); more rules than the account's quota is an issue."""
    services = cfg.service_names()
    routed = [*services, *([cfg.gateway.path] if cfg.gateway is not None else [])]
    quota = cfg.endpoint.listener_rule_quota
    if len(routed) * RULES_PER_SERVICE > quota:
        issues.add(
            "platform.models",
            f"{len(routed)} services need {len(routed) * RULES_PER_SERVICE} listener "
            f"rules but the ALB quota is {quota} (endpoint.listenerRuleQuota): at most "
            f"{quota // RULES_PER_SERVICE} services per stack; split the stack or raise the "
            "quota with AWS first",
        )
    priorities = {name: PRIORITY_START + i * PRIORITY_STEP for i, name in enumerate(services)}
    return priorities, PRIORITY_START + len(services) * PRIORITY_STEP


def endpoint_spec(
    cfg: StackConfig,
    idle: sizing.IdleTimeout,
    ports: Iterable[int],
    project: str | None,
    stack: str | None,
    issues: Issues,
    vpc_cidr: str,
) -> EndpointSpec:
    """The endpoint's spec: `ports` are the container ports of every routed service; `vpc_cidr`
    the network's (the ALB's egress to its targets)."""
    ep = cfg.endpoint
    auth = ep.auth
    default_prefix = default_domain_prefix(project, stack)
    spec = EndpointSpec(
        vpc_cidr=vpc_cidr,
        domain_name=ep.domain_name,
        allowed_cidrs=tuple(ep.allowed_cidrs),
        idle_timeout_seconds=idle.seconds,
        target_ports=tuple(sorted(set(ports))),
        certificate_arn=ep.certificate_arn,
        self_signed_certificate=ep.self_signed_certificate,
        internet_facing=ep.internet_facing,
        ssl_policy=ep.ssl_policy,
        access_logs=ep.access_logs,
        access_log_retention_days=ep.access_log_retention_days,
        hosted_zone_id=ep.hosted_zone_id,
        protect=cfg.protect,
        smoke_hook=any(s.rollout.native for s in (*cfg.models.values(), *cfg.rerankers.values())),
        auth=AuthSpec(
            existing_user_pool_id=auth.existing_user_pool_id,
            existing_user_pool_domain=auth.existing_user_pool_domain,
            domain_prefix=auth.domain_prefix or default_prefix,
            api_scopes=tuple(auth.api_scopes),
            session_timeout_seconds=auth.session_timeout_seconds,
            access_token_validity_minutes=auth.access_token_validity_minutes,
            protect=cfg.protect,
        ),
    )
    return spec
