"""`platform.endpoint`: the authenticated load balancer every service sits behind, and who may
call it (`endpoint.auth`)."""

from __future__ import annotations

import ipaddress

from pydantic import Field, field_validator, model_validator

from ecs_inference.config.base import Name, Section
from ecs_inference.contracts import aws_limits
from ecs_inference.specs.endpoint import DOMAIN_PATTERN, AuthSpec, EndpointSpec

_IDLE_TIMEOUT = aws_limits.ALB_IDLE_TIMEOUT_RANGE
_SESSION = aws_limits.COGNITO_SESSION_TIMEOUT_RANGE
_TOKEN_MINUTES = aws_limits.COGNITO_ACCESS_TOKEN_MINUTES_RANGE
# Each service takes two listener rules; the quota is at least what one service needs.
_RULE_QUOTA_RANGE = (2, 1000)


class AuthConfig(Section):
    """Who may call the endpoint.

    Browsers sign in through the ALB's authenticate-cognito action (cookie session); API
    callers obtain a token with the client-credentials grant and send `Authorization: Bearer`,
    which the ALB checks with its jwt-validation action.
    """

    existing_user_pool_id: str | None = None
    """Use this Cognito user pool instead of creating one (requires `existingUserPoolDomain`)."""
    existing_user_pool_domain: str | None = None
    """Hosted domain prefix of the existing pool (with `existingUserPoolId`)."""
    domain_prefix: str | None = None
    """Cognito hosted-domain prefix; unset: `<project>-<stack>`. Must be globally unique."""
    api_scopes: list[Name] = Field(default_factory=lambda: list(AuthSpec.api_scopes), min_length=1)
    """Scopes of the resource server; API clients get them with the client-credentials grant."""
    session_timeout_seconds: int = Field(
        AuthSpec.session_timeout_seconds, ge=_SESSION[0], le=_SESSION[1]
    )
    """Browser session length on the ALB."""
    access_token_validity_minutes: int = Field(
        AuthSpec.access_token_validity_minutes, ge=_TOKEN_MINUTES[0], le=_TOKEN_MINUTES[1]
    )
    """Lifetime of access tokens issued to API callers."""

    @model_validator(mode="after")
    def _existing_pool(self) -> AuthConfig:
        if bool(self.existing_user_pool_id) != bool(self.existing_user_pool_domain):
            raise ValueError(
                "existingUserPoolId and existingUserPoolDomain must be given together "
                "(the ALB needs the pool's hosted domain for the browser sign-in)"
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
    self_signed_certificate: bool = EndpointSpec.self_signed_certificate
    """Dev only: generate a self-signed certificate and import it into ACM."""
    allowed_cidrs: list[str] = Field(min_length=1)
    """Client networks admitted by the ALB security group (VPC, peered VPCs, VPN)."""
    internet_facing: bool = EndpointSpec.internet_facing
    """Put the ALB in public subnets. Every rule still authenticates first."""
    idle_timeout_seconds: int | None = Field(None, ge=_IDLE_TIMEOUT[0], le=_IDLE_TIMEOUT[1])
    """Override of the derived idle timeout; must still cover the longest generation."""
    ssl_policy: str = EndpointSpec.ssl_policy
    """HTTPS listener security policy (TLS 1.3 and 1.2 only)."""
    access_logs: bool = EndpointSpec.access_logs
    """ALB access logs to an encrypted, private S3 bucket."""
    access_log_retention_days: int = Field(EndpointSpec.access_log_retention_days, ge=1, le=3650)
    """Days before access logs expire."""
    auth: AuthConfig = Field(default_factory=lambda: AuthConfig.model_validate({}))
    """Cognito user pool and clients; see `AuthConfig`."""
    hosted_zone_id: str | None = Field(None, pattern=r"^Z[A-Z0-9]{1,31}$")
    """Route 53 hosted zone (usually private) in which to create an alias record for
    `domainName` pointing at the ALB; unset: you manage DNS."""
    listener_rule_quota: int = Field(
        aws_limits.RULES_PER_ALB, ge=_RULE_QUOTA_RANGE[0], le=_RULE_QUOTA_RANGE[1]
    )
    """Your account's "Rules per Application Load Balancer" quota. Each service takes two
    rules; raise this only after the quota increase is granted."""

    @field_validator("domain_name")
    @classmethod
    def _domain(cls, value: str) -> str:
        if not DOMAIN_PATTERN.match(value):
            raise ValueError("must be a lowercase DNS name like models.example.internal")
        return value

    @field_validator("certificate_arn")
    @classmethod
    def _cert(cls, value: str | None) -> str | None:
        if value is not None and not aws_limits.ACM_CERTIFICATE_ARN.match(value):
            raise ValueError(
                "must be an ACM certificate ARN (arn:aws:acm:<region>:<account>:certificate/<id>)"
            )
        return value

    @field_validator("allowed_cidrs")
    @classmethod
    def _cidrs(cls, values: list[str]) -> list[str]:
        for value in values:
            try:
                ipaddress.ip_network(value)
            except ValueError:
                raise ValueError(f"{value!r} is not a CIDR block like 10.0.0.0/8") from None
        return values

    @model_validator(mode="after")
    def _certificate_source(self) -> EndpointConfig:
        if bool(self.certificate_arn) == bool(self.self_signed_certificate):
            raise ValueError(
                "set exactly one of certificateArn (production) or selfSignedCertificate: true "
                "(dev only)"
            )
        if not self.internet_facing and any(c in ("0.0.0.0/0", "::/0") for c in self.allowed_cidrs):
            raise ValueError(
                "allowedCidrs of an internal endpoint should name your client networks, not "
                "0.0.0.0/0"
            )
        return self
