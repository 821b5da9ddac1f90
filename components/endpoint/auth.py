"""Who may call the endpoint: a Cognito user pool (new or existing), its hosted domain, a resource
server with the API scopes, a browser client (ALB authenticate-cognito) and an API client
(client-credentials, checked by the ALB's jwt-validation).

`CognitoAuth` is the Endpoint's base: its resources are the Endpoint's children and its
attributes the Endpoint's own.
"""

from __future__ import annotations

import math
from typing import Any

import pulumi
import pulumi_aws as aws

from ecs_inference.arns import AwsContext
from ecs_inference.endpoint.input import AuthConfig
from ecs_inference.iam import partition_of


def cognito_token_url(domain: str, region: str) -> str:
    """The OAuth 2.0 token endpoint API callers use for the client-credentials grant: a prefix
    domain lives under amazoncognito.com, a custom domain is its own host."""
    host = domain if "." in domain else f"{domain}.auth.{region}.amazoncognito.com"
    return f"https://{host}/oauth2/token"


class CognitoAuth(pulumi.ComponentResource):
    """The Cognito side of the Endpoint (its base class)."""

    user_pool: aws.cognito.UserPool | None
    """The new user pool; None for an existing pool."""
    user_pool_domain_resource: aws.cognito.UserPoolDomain | None
    """Its hosted domain; None for an existing pool."""
    user_pool_id: pulumi.Output[str]
    """The user pool's id."""
    user_pool_arn: pulumi.Output[str]
    """The user pool's ARN."""
    user_pool_domain: pulumi.Output[str]
    """The hosted domain (prefix or custom FQDN)."""
    issuer: pulumi.Output[str]
    """The tokens' issuer (jwt-validation checks it)."""
    jwks_uri: pulumi.Output[str]
    """The pool's signing keys."""
    token_url: pulumi.Output[str]
    """The OAuth2 token endpoint (client-credentials grant)."""
    api_scopes: list[str]
    """Full scope strings of the API client."""
    resource_server: aws.cognito.ResourceServer
    """The API's resource server."""
    browser_client: aws.cognito.UserPoolClient
    """The ALB's code-grant client (browsers)."""
    api_client: aws.cognito.UserPoolClient
    """The client-credentials client (programs)."""
    api_client_id: pulumi.Output[str]
    """Its id."""

    def _cognito(
        self,
        name: str,
        auth: AuthConfig,
        domain_name: str,
        prefix: str,
        protect: bool,
        ctx: AwsContext,
    ) -> None:
        """The pool (new, with hosted domain `prefix`, or `auth`'s existing one), the resource
        server and the two clients; a new pool is protected and retained with `protect`."""
        child = pulumi.ResourceOptions(parent=self)
        region = ctx.region
        domain = self._user_pool(name, auth, prefix, protect, ctx)
        self.user_pool_domain = pulumi.Output.from_input(domain)
        # The tokens' `iss` claim (also the OIDC discovery base), and the keys the ALB fetches.
        self.issuer = pulumi.Output.all(region, self.user_pool_id).apply(
            lambda rp: f"https://cognito-idp.{rp[0]}.amazonaws.com/{rp[1]}"
        )
        self.jwks_uri = self.issuer.apply(lambda issuer: f"{issuer}/.well-known/jwks.json")
        self.token_url = region.apply(lambda r: cognito_token_url(domain, r))

        # Scopes in tokens read `<identifier>/<scope>`.
        identifier = f"https://{domain_name}"
        self.api_scopes = [f"{identifier}/{scope}" for scope in auth.api_scopes]
        self.resource_server = aws.cognito.ResourceServer(
            f"{name}-api",
            identifier=identifier,
            name=f"{name} inference API",
            scopes=[
                aws.cognito.ResourceServerScopeArgs(
                    scope_name=scope, scope_description=f"{scope} the inference services"
                )
                for scope in auth.api_scopes
            ],
            user_pool_id=self.user_pool_id,
            # The identifier is unique in its pool, and a new name replaces the server: the old
            # one goes first, or the new one would collide with it.
            opts=pulumi.ResourceOptions.merge(
                child, pulumi.ResourceOptions(delete_before_replace=True)
            ),
        )
        self._clients(name, auth, domain_name)
        self.api_client_id = self.api_client.id

    def _user_pool(
        self, name: str, auth: AuthConfig, prefix: str, protect: bool, ctx: AwsContext
    ) -> str:
        """The existing pool, or a new one with its hosted domain; returns the domain."""
        child = pulumi.ResourceOptions(parent=self)
        self.user_pool = None
        self.user_pool_domain_resource = None
        if auth.existing_user_pool_id:
            pool_id = auth.existing_user_pool_id
            domain = auth.existing_user_pool_domain or ""
            self.user_pool_id = pulumi.Output.from_input(pool_id)
            self.user_pool_arn = pulumi.Output.all(ctx.region, ctx.account_id).apply(
                lambda ra: (
                    f"arn:{partition_of(ra[0])}:cognito-idp:{ra[0]}:{ra[1]}:userpool/{pool_id}"
                )
            )
        else:
            domain = prefix
            self.user_pool = aws.cognito.UserPool(
                f"{name}-users",
                name=f"{name}-users",
                # Only administrators create accounts: the endpoint serves an organisation,
                # not the public.
                admin_create_user_config=aws.cognito.UserPoolAdminCreateUserConfigArgs(
                    allow_admin_create_user_only=True
                ),
                password_policy=aws.cognito.UserPoolPasswordPolicyArgs(
                    minimum_length=14,
                    require_lowercase=True,
                    require_uppercase=True,
                    require_numbers=True,
                    require_symbols=True,
                    temporary_password_validity_days=3,
                ),
                # OPTIONAL needs at least one factor configured: TOTP apps.
                mfa_configuration="OPTIONAL",
                software_token_mfa_configuration=aws.cognito.UserPoolSoftwareTokenMfaConfigurationArgs(
                    enabled=True
                ),
                username_attributes=["email"],
                auto_verified_attributes=["email"],
                account_recovery_setting=aws.cognito.UserPoolAccountRecoverySettingArgs(
                    recovery_mechanisms=[
                        aws.cognito.UserPoolAccountRecoverySettingRecoveryMechanismArgs(
                            name="verified_email", priority=1
                        )
                    ]
                ),
                deletion_protection="ACTIVE" if protect else "INACTIVE",
                # Retained (not deleted) by `pulumi destroy` when protected: its users and
                # their MFA devices cannot be recreated.
                opts=pulumi.ResourceOptions.merge(
                    child, pulumi.ResourceOptions(retain_on_delete=protect)
                ),
            )
            self.user_pool_domain_resource = aws.cognito.UserPoolDomain(
                f"{name}-auth-domain",
                domain=domain,
                user_pool_id=self.user_pool.id,
                # A domain prefix is unique across AWS, and a new user pool replaces the domain:
                # the old one goes first, or the new one would collide with it.
                opts=pulumi.ResourceOptions.merge(
                    child, pulumi.ResourceOptions(delete_before_replace=True)
                ),
            )
            self.user_pool_id = self.user_pool.id
            self.user_pool_arn = self.user_pool.arn
        return domain

    def _clients(self, name: str, auth: AuthConfig, domain_name: str) -> None:
        """The ALB's code-grant client (browsers) and the client-credentials client (programs)."""
        both: dict[str, Any] = {
            "user_pool_id": self.user_pool_id,
            "generate_secret": True,
            "allowed_oauth_flows_user_pool_client": True,
            "supported_identity_providers": ["COGNITO"],
            "explicit_auth_flows": ["ALLOW_REFRESH_TOKEN_AUTH"],
            "enable_token_revocation": True,
            "access_token_validity": auth.access_token_validity_minutes,
            "token_validity_units": aws.cognito.UserPoolClientTokenValidityUnitsArgs(
                access_token="minutes", id_token="minutes", refresh_token="days"
            ),
        }
        # The ALB exchanges the authorization code with this client's secret; the callback is
        # the ALB's own fixed path on the endpoint's host name.
        self.browser_client = aws.cognito.UserPoolClient(
            f"{name}-browser",
            name=f"{name}-browser",
            allowed_oauth_flows=["code"],
            allowed_oauth_scopes=["openid"],
            callback_urls=[f"https://{domain_name}/oauth2/idpresponse"],
            prevent_user_existence_errors="ENABLED",
            id_token_validity=auth.access_token_validity_minutes,
            # The ALB renews claims with the refresh token for as long as its session lasts.
            refresh_token_validity=max(1, math.ceil(auth.session_timeout_seconds / 86_400)),
            opts=pulumi.ResourceOptions(parent=self, depends_on=self.domain_dependencies()),
            **both,
        )
        # Programs get tokens with the client-credentials grant; the scopes must exist on the
        # resource server before a client may be granted them.
        self.api_client = aws.cognito.UserPoolClient(
            f"{name}-api-client",
            name=f"{name}-api",
            allowed_oauth_flows=["client_credentials"],
            allowed_oauth_scopes=self.api_scopes,
            opts=pulumi.ResourceOptions(
                parent=self, depends_on=[self.resource_server, *self.domain_dependencies()]
            ),
            **both,
        )

    def domain_dependencies(self) -> list[pulumi.Resource]:
        return [self.user_pool_domain_resource] if self.user_pool_domain_resource else []
