"""The endpoint's decisions (pure): its idle timeout from the longest request of every routed
service, what it takes from the services routed through it, the default Cognito domain prefix,
and a stack's listener rule priorities (within the account's rule quota). `Endpoint` and the
stack's plan both call `idle_timeout`."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ecs_inference import sizing
from ecs_inference.config.issues import ConfigError, ConfigIssue, Issues
from ecs_inference.config.stack import StackConfig
from ecs_inference.endpoint.input import COGNITO_RESERVED_WORDS, EndpointConfig
from ecs_inference.gateway.litellm_config import BEDROCK_TIMEOUT_SECONDS
from ecs_inference.names import derived_name

# Listener rule priorities: each service takes two consecutive ones (bearer, browser); spacing
# them by 10 leaves room for hand-added rules between services.
PRIORITY_START, PRIORITY_STEP = 100, 10
# Each service takes two listener rules (bearer -> jwt-validation, browser -> Cognito); the ALB
# quota "Rules per Application Load Balancer" is `endpoint.listenerRuleQuota`.
RULES_PER_SERVICE = 2
IDLE_TIMEOUT_PATH = "platform.endpoint.idleTimeoutSeconds"


@dataclass(frozen=True)
class Routes:
    """What the endpoint takes from the services routed through it (a stack: every model,
    re-ranker and the gateway); the defaults are an endpoint with no service yet."""

    ports: tuple[int, ...] = ()
    """Container ports of the routed services; the ALB egresses to them inside the VPC only."""
    longest_request_seconds: tuple[int, ...] = ()
    """Each routed service's longest request in seconds (a model's `maxGenerationSeconds`, a
    re-ranker's `maxRequestSeconds`); none: 60 s."""
    smoke_hook: bool = False
    """A routed service deploys blue/green, canary or linear: create the smoke hook
    (`components.rollouts.hook`) its deployments run through the test listener rule."""


def idle_timeout(
    input: EndpointConfig, longest_request_seconds: Sequence[int], issues: Issues | None = None
) -> sizing.IdleTimeout:
    """The ALB idle timeout: the longest request any routed service allows, plus a margin, or
    the configured override. An override shorter than that longest request is an issue at
    `endpoint.idleTimeoutSeconds`, added to `issues` (the derived timeout then stands) or,
    without `issues`, raised as a `ConfigError`."""
    longest = list(longest_request_seconds) or [60]
    try:
        return sizing.alb_idle_timeout(longest, override=input.idle_timeout_seconds)
    except sizing.SizingError as exc:
        if issues is None:
            raise ConfigError(ConfigIssue(IDLE_TIMEOUT_PATH, str(exc))) from None
        issues.add(IDLE_TIMEOUT_PATH, str(exc))
        return sizing.alb_idle_timeout(longest)


def default_domain_prefix(project: str | None, stack: str | None) -> str:
    """The Cognito hosted-domain prefix when `domainPrefix` is not set: `<project>-<stack>`, made
    valid for any stack name Pulumi accepts (lowercase, no '_' or '.', no reserved word, at most
    63 characters; a hash of the original keeps a changed name distinct, see `derived_name`)."""
    text = "-".join(p for p in (project, stack) if p) or "ecs-inference"
    return derived_name(
        text, invalid="[^a-z0-9-]", lower=True, max_length=63, reserved=COGNITO_RESERVED_WORDS
    )


def stack_routes(cfg: StackConfig, ports: Iterable[int] = ()) -> Routes:
    """What a stack's endpoint takes from its services; `ports` are their container ports."""
    longest = [m.max_generation_seconds for m in cfg.models.values()]
    longest += [r.max_request_seconds for r in cfg.rerankers.values()]
    if cfg.gateway is not None and cfg.gateway.bedrock.models:
        longest.append(BEDROCK_TIMEOUT_SECONDS)
    return Routes(
        ports=tuple(sorted(set(ports))),
        longest_request_seconds=tuple(longest),
        smoke_hook=any(s.rollout.native for s in (*cfg.models.values(), *cfg.rerankers.values())),
    )


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
