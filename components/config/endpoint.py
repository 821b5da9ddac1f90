"""`platform.endpoint`: the authenticated load balancer every service sits behind, and who may
call it (`endpoint.auth`)."""

from __future__ import annotations

from typing import TypeVar

from pydantic import Field, field_validator, model_validator

from ecs_inference.config.base import Name, Section, raise_problems
from ecs_inference.contracts import aws_limits
from ecs_inference.specs import endpoint as rules
from ecs_inference.specs.endpoint import AuthSpec, EndpointSpec

_T = TypeVar("_T")
_IDLE_TIMEOUT = aws_limits.ALB_IDLE_TIMEOUT_RANGE
_SESSION = aws_limits.COGNITO_SESSION_TIMEOUT_RANGE
_TOKEN_MINUTES = aws_limits.COGNITO_ACCESS_TOKEN_MINUTES_RANGE
# Each service takes two listener rules; the quota is at least what one service needs.
_RULE_QUOTA_RANGE = (2, 1000)


def _checked(value: _T, problem: str | None) -> _T:
    """`value`, or the validation error `problem` names."""
    if problem is not None:
        raise ValueError(problem)
    return value


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

    @field_validator("existing_user_pool_id")
    @classmethod
    def _pool_id(cls, value: str | None) -> str | None:
        return _checked(value, rules.user_pool_id_problem(value) if value else None)

    @field_validator("domain_prefix")
    @classmethod
    def _prefix(cls, value: str | None) -> str | None:
        return _checked(value, rules.domain_prefix_problem(value) if value is not None else None)

    @field_validator("api_scopes")
    @classmethod
    def _scopes(cls, value: list[str]) -> list[str]:
        return _checked(value, rules.api_scopes_problem(value))

    @model_validator(mode="after")
    def _existing_pool(self) -> AuthConfig:
        pool = (self.existing_user_pool_id, self.existing_user_pool_domain)
        return _checked(self, rules.existing_pool_problem(*pool))


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
        return _checked(value, rules.domain_name_problem(value))

    @field_validator("certificate_arn")
    @classmethod
    def _cert(cls, value: str | None) -> str | None:
        return _checked(value, rules.certificate_arn_problem(value) if value is not None else None)

    @field_validator("ssl_policy")
    @classmethod
    def _ssl_policy(cls, value: str) -> str:
        return _checked(value, rules.ssl_policy_problem(value))

    @model_validator(mode="after")
    def _certificate_and_clients(self) -> EndpointConfig:
        source = (self.certificate_arn, self.self_signed_certificate)
        _checked(self, rules.certificate_source_problem(*source))
        raise_problems(
            type(self).__name__,
            [
                (("allowedCidrs", i), rules.allowed_cidr_problem(cidr, self.internet_facing))
                for i, cidr in enumerate(self.allowed_cidrs)
            ],
        )
        return self
