"""Endpoint spec: the authenticated HTTPS entry point as plain values, and its checks.

`EndpointSpec` is built by the plan from `platform.endpoint` (the idle timeout and target ports
derived from the services); `endpoint_arg_issues` lists everything the ALB, ACM or Cognito would
reject as config-path issues, before any resource exists. The component
(`components.ingress.alb.Endpoint`) adds only the wiring (VPC, subnets).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from ecs_inference.config.issues import ConfigError, ConfigIssue
from ecs_inference.contracts import aws_limits
from ecs_inference.specs.names import derived_name

CONFIG_PATH = "platform.endpoint"

MAX_RULE_PRIORITY = aws_limits.LISTENER_RULE_PRIORITY_MAX
SESSION_TIMEOUT_RANGE = aws_limits.COGNITO_SESSION_TIMEOUT_RANGE
ACCESS_TOKEN_MINUTES_RANGE = aws_limits.COGNITO_ACCESS_TOKEN_MINUTES_RANGE

DOMAIN_PATTERN = re.compile(r"^(?=.{4,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$")
# Cognito prefix domains: lowercase letters, digits and hyphens, not starting or ending with a
# hyphen, and no reserved words.
COGNITO_PREFIX_PATTERN = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$")
COGNITO_RESERVED_WORDS = aws_limits.COGNITO_DOMAIN_RESERVED_WORDS


def default_domain_prefix(project: str | None, stack: str | None) -> str:
    """The Cognito hosted-domain prefix when `domainPrefix` is not set: `<project>-<stack>`, made
    valid for any stack name Pulumi accepts (lowercase, no '_' or '.', no reserved word, at most
    63 characters; a hash of the original keeps a changed name distinct, see `derived_name`)."""
    text = "-".join(p for p in (project, stack) if p) or AuthSpec.domain_prefix
    return derived_name(
        text, invalid="[^a-z0-9-]", lower=True, max_length=63, reserved=COGNITO_RESERVED_WORDS
    )


USER_POOL_ID_PATTERN = re.compile(r"^[a-z]{2}(-[a-z]+)+-\d_[0-9a-zA-Z]+$")
# Cognito resource-server scope names: printable ASCII without space, '"', '/' and '\'.
SCOPE_NAME_PATTERN = re.compile(r"^[\x21\x23-\x2e\x30-\x5b\x5d-\x7e]{1,256}$")


@dataclass(frozen=True)
class AuthSpec:
    """Who may call the endpoint."""

    existing_user_pool_id: str | None = None
    """Use this Cognito user pool instead of creating one."""
    existing_user_pool_domain: str | None = None
    """That pool's hosted domain (prefix or custom FQDN); required with existing_user_pool_id."""
    domain_prefix: str = "ecs-inference"
    """Hosted-domain prefix of a new pool (globally unique)."""
    api_scopes: tuple[str, ...] = ("invoke",)
    """Resource-server scopes granted to the API client; jwt-validation requires the first."""
    session_timeout_seconds: int = 28_800
    """Browser session on the ALB."""
    access_token_validity_minutes: int = 60
    """Lifetime of API and browser access tokens."""
    protect: bool = True
    """A new pool gets deletion protection and is retained by `pulumi destroy`."""


@dataclass(frozen=True)
class EndpointSpec:
    """The ALB, its listeners, certificate, access logs and Cognito."""

    vpc_cidr: str
    """The VPC CIDR; the ALB egresses to it on `target_ports` only."""
    domain_name: str
    """Host name clients use; the certificate covers it, Cognito calls back to it."""
    allowed_cidrs: tuple[str, ...]
    """Client networks admitted on 443/80."""
    idle_timeout_seconds: int
    """ALB idle timeout, derived by the plan from the longest generation."""
    target_ports: tuple[int, ...]
    """Container ports the ALB must reach."""
    certificate_arn: str | None = None
    """ACM certificate for domain_name; None: self_signed_certificate."""
    self_signed_certificate: bool = False
    """Dev only: generate a certificate and import it into ACM."""
    internet_facing: bool = False
    """Scheme internet-facing (public subnets) instead of internal."""
    ssl_policy: str = "ELBSecurityPolicy-TLS13-1-2-2021-06"
    """TLS 1.3 security policy of the HTTPS listener."""
    access_logs: bool = True
    """Deliver access logs to a new bucket."""
    access_log_retention_days: int = 90
    """Expiry of log objects."""
    auth: AuthSpec = field(default_factory=AuthSpec)
    """Cognito settings."""
    hosted_zone_id: str | None = None
    """Route 53 zone for an alias A record of domain_name; None: the caller manages DNS."""
    smoke_hook: bool = False
    """Create the smoke hook (`components.rollouts.hook`) the blue/green, canary and linear
    services' deployments run through the test listener rule; the ALB admits it on 443."""
    protect: bool = True
    """The access-log bucket is retained by `pulumi destroy`; False: force-destroyed with its
    logs."""


def is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def in_range(value: object, bounds: tuple[int, int]) -> bool:
    return is_int(value) and bounds[0] <= value <= bounds[1]  # type: ignore[operator]


# Each rule below is written once: the config schema raises its message at the key's config
# path, and `endpoint_arg_issues` reports it for a spec built by hand.


def domain_name_problem(value: str | None) -> str | None:
    """Why `value` cannot be the endpoint's host name, or None."""
    if DOMAIN_PATTERN.match(value or ""):
        return None
    return f"{value!r} must be a lowercase DNS name like models.example.internal"


def certificate_arn_problem(value: str) -> str | None:
    """Why `value` is not an ACM certificate ARN, or None."""
    if aws_limits.ACM_CERTIFICATE_ARN.match(value):
        return None
    return (
        f"{value!r} is not an ACM certificate ARN (arn:aws:acm:<region>:<account>:certificate/<id>)"
    )


def certificate_source_problem(certificate_arn: str | None, self_signed: bool) -> str | None:
    """Why the certificate settings do not name exactly one source, or None."""
    if bool(certificate_arn) != bool(self_signed):
        return None
    return (
        "set exactly one of certificateArn (production) or selfSignedCertificate: true (dev only)"
    )


def allowed_cidr_problem(cidr: str, internet_facing: bool) -> str | None:
    """Why `cidr` cannot admit clients to the endpoint, or None."""
    try:
        net = ipaddress.ip_network(cidr)
    except ValueError:
        return f"{cidr!r} is not a CIDR block like 10.0.0.0/8"
    if net.prefixlen == 0 and not internet_facing:
        return (
            f"{cidr} admits the whole internet to an internal endpoint; name your client networks"
        )
    return None


def ssl_policy_problem(value: str) -> str | None:
    """Why `value` is not a TLS 1.3 listener policy, or None."""
    if value.startswith("ELBSecurityPolicy-TLS13-"):
        return None
    return (
        f"{value!r} is not a TLS 1.3 policy; use an ELBSecurityPolicy-TLS13-* policy such as "
        "ELBSecurityPolicy-TLS13-1-2-2021-06"
    )


def domain_prefix_problem(prefix: str | None) -> str | None:
    """Why `prefix` cannot be a Cognito hosted-domain prefix, or None."""
    if not COGNITO_PREFIX_PATTERN.match(prefix or ""):
        return (
            f"{prefix!r} must be 1-63 lowercase letters, digits or '-', not starting or ending "
            "with '-'"
        )
    if any(word in (prefix or "") for word in COGNITO_RESERVED_WORDS):
        return (
            f"{prefix!r} may not contain {', '.join(COGNITO_RESERVED_WORDS)} (reserved by Cognito)"
        )
    return None


def user_pool_id_problem(value: str) -> str | None:
    """Why `value` is not a Cognito user pool id, or None."""
    if USER_POOL_ID_PATTERN.match(value):
        return None
    return f"{value!r} is not a user pool id like us-east-1_AbCdEf123"


def existing_pool_problem(pool_id: str | None, pool_domain: str | None) -> str | None:
    """Why an existing pool's settings are incomplete, or None."""
    if bool(pool_id) == bool(pool_domain):
        return None
    return (
        "existingUserPoolId and existingUserPoolDomain must be given together (the ALB needs the "
        "pool's hosted domain for the browser sign-in)"
    )


def api_scopes_problem(scopes: Sequence[str]) -> str | None:
    """Why `scopes` cannot be the resource server's scopes, or None."""
    if not scopes:
        return "needs at least one scope"
    bad = [s for s in scopes if not SCOPE_NAME_PATTERN.match(s)]
    if bad:
        return f"{bad} are not valid scope names (no spaces, quotes or slashes)"
    if len(set(scopes)) != len(scopes):
        return "lists a scope twice"
    return None


def range_problem(value: object, bounds: tuple[int, int]) -> str | None:
    """Why `value` is not an integer within `bounds` (inclusive), or None."""
    if in_range(value, bounds):
        return None
    return f"must be an integer from {bounds[0]} to {bounds[1]} (got {value!r})"


def _found(path: str, *problems: str | None) -> list[ConfigIssue]:
    return [ConfigIssue(path, p) for p in problems if p is not None]


def _auth_issues(auth: AuthSpec) -> list[ConfigIssue]:
    path = f"{CONFIG_PATH}.auth"
    pool_id = auth.existing_user_pool_id
    return [
        *_found(
            f"{path}.existingUserPoolId",
            existing_pool_problem(pool_id, auth.existing_user_pool_domain),
            user_pool_id_problem(pool_id) if pool_id else None,
        ),
        *_found(
            f"{path}.domainPrefix", None if pool_id else domain_prefix_problem(auth.domain_prefix)
        ),
        *_found(f"{path}.apiScopes", api_scopes_problem(auth.api_scopes)),
        *_found(
            f"{path}.sessionTimeoutSeconds",
            range_problem(auth.session_timeout_seconds, SESSION_TIMEOUT_RANGE),
        ),
        *_found(
            f"{path}.accessTokenValidityMinutes",
            range_problem(auth.access_token_validity_minutes, ACCESS_TOKEN_MINUTES_RANGE),
        ),
    ]


def endpoint_arg_issues(args: EndpointSpec) -> list[ConfigIssue]:
    """Every problem with the plain values of `args`, as config-path issues (empty when valid).

    The plan does not call it: the config schema checks the same rules at each key, and the
    plan derives the rest. A program that builds an `EndpointSpec` itself calls
    `validate_endpoint_args`."""
    p = CONFIG_PATH
    source = certificate_source_problem(args.certificate_arn, args.self_signed_certificate)
    cert = args.certificate_arn
    try:
        ipaddress.IPv4Network(args.vpc_cidr)
        vpc = None
    except ValueError:
        vpc = f"{args.vpc_cidr!r} is not a CIDR"
    bad_ports = [port for port in args.target_ports if not in_range(port, (1, 65535))]
    days = args.access_log_retention_days
    return [
        *_found(f"{p}.domainName", domain_name_problem(args.domain_name)),
        *_found(
            f"{p}.certificateArn",
            source or (certificate_arn_problem(cert) if cert else None),
        ),
        *_found(
            f"{p}.allowedCidrs",
            None if args.allowed_cidrs else "needs at least one client network",
            *(allowed_cidr_problem(c, args.internet_facing) for c in args.allowed_cidrs),
        ),
        *_found("platform.network.cidrBlock", vpc),
        *_found(
            f"{p}.targetPorts", f"{bad_ports} are not TCP ports (1-65535)" if bad_ports else None
        ),
        *_found(f"{p}.sslPolicy", ssl_policy_problem(args.ssl_policy)),
        *_found(
            f"{p}.accessLogRetentionDays",
            None
            if is_int(days) and days >= 1
            else f"must be a positive number of days (got {days!r})",
        ),
        *_auth_issues(args.auth),
    ]


def validate_endpoint_args(args: EndpointSpec) -> None:
    """Raise one `ConfigError` listing every problem in `args`; return None when valid."""
    issues = endpoint_arg_issues(args)
    if issues:
        raise ConfigError(issues)
