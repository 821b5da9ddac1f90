"""Endpoint spec: the authenticated HTTPS entry point as plain values, and its checks.

`EndpointSpec` is built by the plan from `platform.endpoint` (the idle timeout and target ports
derived from the services); `endpoint_arg_issues` lists everything the ALB, ACM or Cognito would
reject as config-path issues, before any resource exists. The component
(`components.ingress.alb.Endpoint`) adds only the wiring (VPC, subnets).
"""

from __future__ import annotations

import ipaddress
import re
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
    protect: bool = True
    """The access-log bucket is retained by `pulumi destroy`; False: force-destroyed with its
    logs."""


def is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def in_range(value: object, bounds: tuple[int, int]) -> bool:
    return is_int(value) and bounds[0] <= value <= bounds[1]  # type: ignore[operator]


def _auth_issues(auth: AuthSpec) -> list[ConfigIssue]:
    path = f"{CONFIG_PATH}.auth"
    issues: list[ConfigIssue] = []
    existing = (auth.existing_user_pool_id, auth.existing_user_pool_domain)
    if bool(existing[0]) != bool(existing[1]):
        issues.append(
            ConfigIssue(
                f"{path}.existingUserPoolId",
                "existingUserPoolId and existingUserPoolDomain must be given together (the ALB "
                "needs the pool's hosted domain for the browser sign-in)",
            )
        )
    if auth.existing_user_pool_id and not USER_POOL_ID_PATTERN.match(auth.existing_user_pool_id):
        issues.append(
            ConfigIssue(
                f"{path}.existingUserPoolId",
                f"{auth.existing_user_pool_id!r} is not a user pool id like us-east-1_AbCdEf123",
            )
        )
    if not auth.existing_user_pool_id:
        prefix = auth.domain_prefix
        if not COGNITO_PREFIX_PATTERN.match(prefix or ""):
            issues.append(
                ConfigIssue(
                    f"{path}.domainPrefix",
                    f"{prefix!r} must be 1-63 lowercase letters, digits or '-', not starting or "
                    "ending with '-'",
                )
            )
        elif any(word in prefix for word in COGNITO_RESERVED_WORDS):
            issues.append(
                ConfigIssue(
                    f"{path}.domainPrefix",
                    f"{prefix!r} may not contain {', '.join(COGNITO_RESERVED_WORDS)} "
                    "(reserved by Cognito)",
                )
            )
    if not auth.api_scopes:
        issues.append(ConfigIssue(f"{path}.apiScopes", "needs at least one scope"))
    bad = [s for s in auth.api_scopes if not SCOPE_NAME_PATTERN.match(s)]
    if bad:
        issues.append(
            ConfigIssue(
                f"{path}.apiScopes",
                f"{bad} are not valid scope names (no spaces, quotes or slashes)",
            )
        )
    if len(set(auth.api_scopes)) != len(auth.api_scopes):
        issues.append(ConfigIssue(f"{path}.apiScopes", "lists a scope twice"))
    if not in_range(auth.session_timeout_seconds, SESSION_TIMEOUT_RANGE):
        issues.append(
            ConfigIssue(
                f"{path}.sessionTimeoutSeconds",
                f"must be an integer from {SESSION_TIMEOUT_RANGE[0]} to "
                f"{SESSION_TIMEOUT_RANGE[1]} (got {auth.session_timeout_seconds!r})",
            )
        )
    if not in_range(auth.access_token_validity_minutes, ACCESS_TOKEN_MINUTES_RANGE):
        issues.append(
            ConfigIssue(
                f"{path}.accessTokenValidityMinutes",
                f"must be an integer from {ACCESS_TOKEN_MINUTES_RANGE[0]} to "
                f"{ACCESS_TOKEN_MINUTES_RANGE[1]} (got {auth.access_token_validity_minutes!r})",
            )
        )
    return issues


def endpoint_arg_issues(args: EndpointSpec) -> list[ConfigIssue]:
    """Every problem with the plain values of `args`, as config-path issues (empty when valid)."""
    p = CONFIG_PATH
    issues: list[ConfigIssue] = []
    if not DOMAIN_PATTERN.match(args.domain_name or ""):
        issues.append(
            ConfigIssue(
                f"{p}.domainName",
                f"{args.domain_name!r} must be a lowercase DNS name like models.example.internal",
            )
        )
    if bool(args.certificate_arn) == bool(args.self_signed_certificate):
        issues.append(
            ConfigIssue(
                f"{p}.certificateArn",
                "set exactly one of certificateArn (production) or selfSignedCertificate: true "
                "(dev only)",
            )
        )
    elif args.certificate_arn and not aws_limits.ACM_CERTIFICATE_ARN.match(args.certificate_arn):
        issues.append(
            ConfigIssue(
                f"{p}.certificateArn",
                f"{args.certificate_arn!r} is not an ACM certificate ARN "
                "(arn:aws:acm:<region>:<account>:certificate/<id>)",
            )
        )
    if not args.allowed_cidrs:
        issues.append(ConfigIssue(f"{p}.allowedCidrs", "needs at least one client network"))
    for cidr in args.allowed_cidrs:
        try:
            net = ipaddress.ip_network(cidr)
        except ValueError:
            issues.append(ConfigIssue(f"{p}.allowedCidrs", f"{cidr!r} is not a CIDR block"))
            continue
        if net.prefixlen == 0 and not args.internet_facing:
            issues.append(
                ConfigIssue(
                    f"{p}.allowedCidrs",
                    f"{cidr} admits the whole internet to an internal endpoint; name your client "
                    "networks",
                )
            )
    try:
        ipaddress.IPv4Network(args.vpc_cidr)
    except ValueError:
        issues.append(ConfigIssue("platform.network.cidrBlock", f"{args.vpc_cidr!r} is not a CIDR"))
    bad_ports = [port for port in args.target_ports if not in_range(port, (1, 65535))]
    if bad_ports:
        issues.append(ConfigIssue(f"{p}.targetPorts", f"{bad_ports} are not TCP ports (1-65535)"))
    if not args.ssl_policy.startswith("ELBSecurityPolicy-TLS13-"):
        issues.append(
            ConfigIssue(
                f"{p}.sslPolicy",
                f"{args.ssl_policy!r} is not a TLS 1.3 policy; use an ELBSecurityPolicy-TLS13-* "
                "policy such as ELBSecurityPolicy-TLS13-1-2-2021-06",
            )
        )
    if not is_int(args.access_log_retention_days) or args.access_log_retention_days < 1:
        issues.append(
            ConfigIssue(
                f"{p}.accessLogRetentionDays",
                f"must be a positive number of days (got {args.access_log_retention_days!r})",
            )
        )
    return issues + _auth_issues(args.auth)


def validate_endpoint_args(args: EndpointSpec) -> None:
    """Raise one `ConfigError` listing every problem in `args`; return None when valid."""
    issues = endpoint_arg_issues(args)
    if issues:
        raise ConfigError(issues)
