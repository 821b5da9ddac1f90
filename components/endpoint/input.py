"""`platform.endpoint`: the authenticated load balancer every service sits behind, and who may
call it (`endpoint.auth`).

`EndpointConfig` is both the stack file's section (camelCase keys) and the Python input of
`Endpoint`: a program that builds one gets the same validators as the stack file. Each rule is
checked here, where the value enters, and nowhere else."""

from __future__ import annotations

import ipaddress
import re

from pydantic import Field, field_validator, model_validator

from ecs_inference.config.base import Name, Section, raise_problems
from ecs_inference.contracts import aws_limits

_IDLE_TIMEOUT = aws_limits.ALB_IDLE_TIMEOUT_RANGE
_SESSION = aws_limits.COGNITO_SESSION_TIMEOUT_RANGE
_TOKEN_MINUTES = aws_limits.COGNITO_ACCESS_TOKEN_MINUTES_RANGE
# Each service takes two listener rules; the quota is at least what one service needs.
_RULE_QUOTA_RANGE = (2, 1000)

DOMAIN_PATTERN = re.compile(r"^(?=.{4,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$")
# Cognito prefix domains: lowercase letters, digits and hyphens, not starting or ending with a
# hyphen, and no reserved words.
COGNITO_PREFIX_PATTERN = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$")
COGNITO_RESERVED_WORDS = aws_limits.COGNITO_DOMAIN_RESERVED_WORDS
USER_POOL_ID_PATTERN = re.compile(r"^[a-z]{2}(-[a-z]+)+-\d_[0-9a-zA-Z]+$")


class AuthConfig(Section):
    """Who may call the endpoint.

    Browsers sign in through the ALB's authenticate-cognito action (cookie session); API
    callers obtain a token with the client-credentials grant and send `Authorization: Bearer`,
    which the ALB checks with its jwt-validation action.
    """

    existing_user_pool_id: str | None = None
    """Use this Cognito user pool instead of creating one (requires `existingUserPoolDomain`);
    default None (a new pool, with deletion protection unless the stack sets `protect: false`)."""
    existing_user_pool_domain: str | None = None
    """Hosted domain of the existing pool (prefix or custom FQDN; with `existingUserPoolId`)."""
    domain_prefix: str | None = None
    """Cognito hosted-domain prefix of a new pool; unset: `<project>-<stack>`. Must be globally
    unique."""
    api_scopes: list[Name] = Field(default_factory=lambda: ["invoke"], min_length=1)
    """Scopes of the resource server; API clients get them with the client-credentials grant,
    and jwt-validation requires the first; default ["invoke"]."""
    session_timeout_seconds: int = Field(default=28_800, ge=_SESSION[0], le=_SESSION[1])
    """Browser session length on the ALB, in seconds; default 28800 (8 h)."""
    access_token_validity_minutes: int = Field(
        default=60, ge=_TOKEN_MINUTES[0], le=_TOKEN_MINUTES[1]
    )
    """Lifetime of API and browser access tokens, in minutes; default 60."""

    @field_validator("existing_user_pool_id")
    @classmethod
    def _pool_id(cls, value: str | None) -> str | None:
        if value and not USER_POOL_ID_PATTERN.match(value):
            raise ValueError(f"{value!r} is not a user pool id like us-east-1_AbCdEf123")
        return value

    @field_validator("domain_prefix")
    @classmethod
    def _prefix(cls, value: str | None) -> str | None:
        if value is not None and not COGNITO_PREFIX_PATTERN.match(value):
            raise ValueError(
                f"{value!r} must be 1-63 lowercase letters, digits or '-', not starting or "
                "ending with '-'"
            )
        if value is not None and any(word in value for word in COGNITO_RESERVED_WORDS):
            raise ValueError(
                f"{value!r} may not contain {', '.join(COGNITO_RESERVED_WORDS)} (reserved by "
                "Cognito)"
            )
        return value

    @field_validator("api_scopes")
    @classmethod
    def _scopes(cls, value: list[str]) -> list[str]:
        # Each is a `Name`, which Cognito's scope names (printable ASCII without space, '"',
        # '/' and '\\') all admit.
        if len(set(value)) != len(value):
            raise ValueError("lists a scope twice")
        return value

    @model_validator(mode="after")
    def _existing_pool(self) -> AuthConfig:
        if bool(self.existing_user_pool_id) != bool(self.existing_user_pool_domain):
            raise ValueError(
                "existingUserPoolId and existingUserPoolDomain must be given together (the ALB "
                "needs the pool's hosted domain for the browser sign-in)"
            )
        return self


class EndpointConfig(Section):
    """The load balancer every service sits behind: internal unless `internetFacing`, HTTPS
    only, its idle timeout derived from the longest `maxGenerationSeconds` of the routed
    services."""

    domain_name: str
    """Host name clients use (the certificate must cover it; Cognito calls back to it)."""
    certificate_arn: str | None = None
    """ACM certificate for `domainName`. Required unless `selfSignedCertificate` is true."""
    self_signed_certificate: bool = False
    """Dev only: generate a self-signed certificate and import it into ACM; default false."""
    allowed_cidrs: list[str] = Field(min_length=1)
    """Client networks admitted on 443/80 by the ALB security group (VPC, peered VPCs, VPN)."""
    internet_facing: bool = False
    """Put the ALB in public subnets (default false: internal). Every rule still authenticates
    first."""
    idle_timeout_seconds: int | None = Field(default=None, ge=_IDLE_TIMEOUT[0], le=_IDLE_TIMEOUT[1])
    """Override of the derived idle timeout, in seconds; must still cover the longest
    generation. Default None: the longest request of the routed services + 30 s."""
    ssl_policy: str = "ELBSecurityPolicy-TLS13-1-2-2021-06"
    """HTTPS listener security policy (TLS 1.3 and 1.2 only); default
    ELBSecurityPolicy-TLS13-1-2-2021-06."""
    access_logs: bool = True
    """ALB access logs to an encrypted, private S3 bucket; default true."""
    access_log_retention_days: int = Field(default=90, ge=1, le=3650)
    """Days before access logs expire; default 90."""
    auth: AuthConfig = Field(default_factory=lambda: AuthConfig.model_validate({}))
    """Cognito user pool and clients; see `AuthConfig`."""
    hosted_zone_id: str | None = Field(default=None, pattern=r"^Z[A-Z0-9]{1,31}$")
    """Route 53 hosted zone (usually private) in which to create an alias record for
    `domainName` pointing at the ALB; unset: you manage DNS."""
    listener_rule_quota: int = Field(
        default=aws_limits.RULES_PER_ALB, ge=_RULE_QUOTA_RANGE[0], le=_RULE_QUOTA_RANGE[1]
    )
    """Your account's "Rules per Application Load Balancer" quota (default AWS's 100). Each
    service takes two rules; raise this only after the quota increase is granted."""

    @field_validator("domain_name")
    @classmethod
    def _domain(cls, value: str) -> str:
        if not DOMAIN_PATTERN.match(value):
            raise ValueError(f"{value!r} must be a lowercase DNS name like models.example.internal")
        return value

    @field_validator("certificate_arn")
    @classmethod
    def _cert(cls, value: str | None) -> str | None:
        if value is not None and not aws_limits.ACM_CERTIFICATE_ARN.match(value):
            raise ValueError(
                f"{value!r} is not an ACM certificate ARN "
                "(arn:aws:acm:<region>:<account>:certificate/<id>)"
            )
        return value

    @field_validator("ssl_policy")
    @classmethod
    def _ssl_policy(cls, value: str) -> str:
        if not value.startswith("ELBSecurityPolicy-TLS13-"):
            raise ValueError(
                f"{value!r} is not a TLS 1.3 policy; use an ELBSecurityPolicy-TLS13-* policy "
                "such as ELBSecurityPolicy-TLS13-1-2-2021-06"
            )
        return value

    @model_validator(mode="after")
    def _certificate_and_clients(self) -> EndpointConfig:
        if bool(self.certificate_arn) == self.self_signed_certificate:
            raise ValueError(
                "set exactly one of certificateArn (production) or selfSignedCertificate: true "
                "(dev only)"
            )
        raise_problems(
            type(self).__name__,
            [
                (("allowedCidrs", i), self._cidr_problem(c))
                for i, c in enumerate(self.allowed_cidrs)
            ],
        )
        return self

    def _cidr_problem(self, cidr: str) -> str | None:
        """Why `cidr` cannot admit clients to the endpoint, or None."""
        try:
            net = ipaddress.ip_network(cidr)
        except ValueError:
            return f"{cidr!r} is not a CIDR block like 10.0.0.0/8"
        if net.prefixlen == 0 and not self.internet_facing:
            return (
                f"{cidr} admits the whole internet to an internal endpoint; name your client "
                "networks"
            )
        return None
