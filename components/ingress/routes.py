"""Routing on the Endpoint's HTTPS listener: two authenticated rules per service.

ALB's `authenticate-cognito` is a cookie-based browser flow and cannot accept a bearer token, so
a service's rules split on the `Authorization` header: `Bearer *` goes through `jwt-validation`
(issuer, JWKS and scope of the pool), everything else through `authenticate-cognito`; both then
forward, and both strip the `/<service>` prefix with a URL rewrite so the engine keeps its native
OpenAI-compatible paths. No rule forwards without authenticating.
"""

from __future__ import annotations

import pulumi
import pulumi_aws as aws

from ecs_inference.ingress.auth import CognitoAuth
from ecs_inference.specs.names import NAME_PATTERN


def service_path_patterns(service: str) -> list[str]:
    """ALB path patterns of a service: the bare prefix and everything below it."""
    return [f"/{service}", f"/{service}/*"]


def service_url_rewrite(service: str) -> tuple[str, str]:
    """(regex, replacement) that strips `/<service>` so the engine sees its native paths:
    `/llama/v1/chat/completions?x=1` -> `/v1/chat/completions?x=1`, `/llama` -> `/`.

    `service` is a validated service name (lowercase letters, digits, '-'), so nothing in it
    needs regex escaping."""
    return f"^/{service}/?(.*)$", "/$1"


def check_service(service: str) -> None:
    if not isinstance(service, str) or not NAME_PATTERN.match(service):
        raise ValueError(
            f"service name {service!r} must be 2-21 lowercase letters, digits or '-' starting "
            "with a letter (it becomes the URL path prefix)"
        )


def authenticated_rules(
    owner: pulumi.Resource,
    name: str,
    service: str,
    *,
    listener_arn: pulumi.Input[str],
    auth: CognitoAuth,
    session_timeout_seconds: int,
    target_group_arn: pulumi.Input[str],
    priority: int,
    opts: pulumi.ResourceOptions | None = None,
) -> list[aws.lb.ListenerRule]:
    """The two listener rules of `service` (`<name>-bearer` at `priority`, `<name>-browser` at
    `priority + 1`), children of `owner` unless `opts` re-parents them."""
    paths = aws.lb.ListenerRuleConditionArgs(
        path_pattern=aws.lb.ListenerRuleConditionPathPatternArgs(
            values=service_path_patterns(service)
        )
    )
    regex, replace = service_url_rewrite(service)
    rewrite = aws.lb.ListenerRuleTransformArgs(
        type="url-rewrite",
        url_rewrite_config=aws.lb.ListenerRuleTransformUrlRewriteConfigArgs(
            rewrite=aws.lb.ListenerRuleTransformUrlRewriteConfigRewriteArgs(
                regex=regex, replace=replace
            )
        ),
    )
    forward = aws.lb.ListenerRuleActionArgs(
        type="forward", order=2, target_group_arn=target_group_arn
    )
    # Rules must not exist before the clients and domain their actions name.
    deps: list[pulumi.Resource] = [
        auth.browser_client,
        auth.api_client,
        *auth.domain_dependencies(),
    ]
    base = pulumi.ResourceOptions(parent=owner, depends_on=deps)
    rule_opts = base.merge(opts) if opts is not None else base

    bearer = aws.lb.ListenerRule(
        f"{name}-bearer",
        listener_arn=listener_arn,
        priority=priority,
        conditions=[
            paths,
            aws.lb.ListenerRuleConditionArgs(
                http_header=aws.lb.ListenerRuleConditionHttpHeaderArgs(
                    http_header_name="Authorization", values=["Bearer *"]
                )
            ),
        ],
        actions=[
            aws.lb.ListenerRuleActionArgs(
                type="jwt-validation",
                order=1,
                jwt_validation=aws.lb.ListenerRuleActionJwtValidationArgs(
                    issuer=auth.issuer,
                    jwks_endpoint=auth.jwks_uri,
                    additional_claims=[
                        # Cognito puts granted scopes in `scope`, space-separated; an API
                        # token must carry the invoke scope. Only access tokens have it.
                        aws.lb.ListenerRuleActionJwtValidationAdditionalClaimArgs(
                            format="space-separated-values",
                            name="scope",
                            values=[auth.api_scopes[0]],
                        ),
                        aws.lb.ListenerRuleActionJwtValidationAdditionalClaimArgs(
                            format="single-string", name="token_use", values=["access"]
                        ),
                    ],
                ),
            ),
            forward,
        ],
        transforms=[rewrite],
        opts=rule_opts,
    )
    browser = aws.lb.ListenerRule(
        f"{name}-browser",
        listener_arn=listener_arn,
        priority=priority + 1,
        conditions=[paths],
        actions=[
            aws.lb.ListenerRuleActionArgs(
                type="authenticate-cognito",
                order=1,
                authenticate_cognito=aws.lb.ListenerRuleActionAuthenticateCognitoArgs(
                    user_pool_arn=auth.user_pool_arn,
                    user_pool_client_id=auth.browser_client.id,
                    user_pool_domain=auth.user_pool_domain,
                    scope="openid",
                    session_timeout=session_timeout_seconds,
                    on_unauthenticated_request="authenticate",
                ),
            ),
            forward,
        ],
        transforms=[rewrite],
        opts=rule_opts,
    )
    return [bearer, browser]
