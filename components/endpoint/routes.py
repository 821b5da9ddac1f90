"""Routing on the Endpoint's HTTPS listener: two authenticated rules per service.

ALB's `authenticate-cognito` is a cookie-based browser flow and cannot accept a bearer token, so
a service's rules split on the `Authorization` header: `Bearer *` goes through `jwt-validation`
(issuer, JWKS and scope of the pool), everything else through `authenticate-cognito`; both then
forward, and both strip the `/<service>` prefix with a URL rewrite so the engine keeps its native
OpenAI-compatible paths. No rule forwards without authenticating.
"""

from __future__ import annotations

from collections.abc import Sequence

import pulumi
import pulumi_aws as aws

from ecs_inference.endpoint.auth import CognitoAuth
from ecs_inference.names import NAME_PATTERN
from ecs_inference.rollouts.smoke import TEST_HEADER, TEST_HEADER_VALUE


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


WEIGHTED_FORWARD_PATHS = ["actions[1].forward", "actions[1].targetGroupArn"]
"""The forward action's weights on ECS's rules: ECS moves them during a deployment, so Pulumi
must not put them back; the authenticate action (actions[0]) stays Pulumi's."""


def jwt_validation(auth: CognitoAuth) -> aws.lb.ListenerRuleActionArgs:
    """Bearer tokens of the pool: issuer, JWKS, an access token carrying the invoke scope."""
    return aws.lb.ListenerRuleActionArgs(
        type="jwt-validation",
        order=1,
        jwt_validation=aws.lb.ListenerRuleActionJwtValidationArgs(
            issuer=auth.issuer,
            jwks_endpoint=auth.jwks_uri,
            additional_claims=[
                # Cognito puts granted scopes in `scope`, space-separated; an API token must
                # carry the invoke scope. Only access tokens have it.
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
    )


def _header(name: str, value: str) -> aws.lb.ListenerRuleConditionArgs:
    return aws.lb.ListenerRuleConditionArgs(
        http_header=aws.lb.ListenerRuleConditionHttpHeaderArgs(
            http_header_name=name, values=[value]
        )
    )


def service_rules(
    auth: CognitoAuth,
    name: str,
    service: str,
    *,
    listener_arn: pulumi.Input[str],
    target_group_arns: Sequence[pulumi.Input[str]],
    priority: int,
    session_timeout_seconds: int,
    opts: pulumi.ResourceOptions | None = None,
) -> list[aws.lb.ListenerRule]:
    """The two listener rules of `service`, at `priority` and `priority + 1`, children of `auth`
    (the endpoint) unless `opts` re-parents them.

    One target group (a rolling service): `<name>-bearer` (jwt-validation) and `<name>-browser`
    (authenticate-cognito), both forwarding to it. Two, [primary, alternate] (a blue/green,
    canary or linear service): ECS's `<name>-test` (the smoke hook's header) and production
    `<name>-bearer`, both with jwt-validation, forwarding to both groups (weights 100/0 at
    creation; ECS moves them). ECS manages one production rule per load balancer entry and
    swaps the groups' roles at every deployment, so a second production rule would go stale:
    such a service has no browser rule. Its authentication can never be lost: the weights are
    the only part Pulumi leaves to ECS (`WEIGHTED_FORWARD_PATHS`)."""
    # The bare prefix and everything below it.
    paths = aws.lb.ListenerRuleConditionArgs(
        path_pattern=aws.lb.ListenerRuleConditionPathPatternArgs(
            values=[f"/{service}", f"/{service}/*"]
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
    bearer, jwt = [paths, _header("Authorization", "Bearer *")], jwt_validation(auth)
    if len(target_group_arns) == 1:
        forward = aws.lb.ListenerRuleActionArgs(
            type="forward", order=2, target_group_arn=target_group_arns[0]
        )
        browser = aws.lb.ListenerRuleActionArgs(
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
        )
        rules = [("bearer", bearer, jwt), ("browser", [paths], browser)]
        clients, ignore = [auth.browser_client, auth.api_client], None
    else:
        weighted = zip(target_group_arns, (100, 0), strict=True)
        forward = aws.lb.ListenerRuleActionArgs(
            type="forward",
            order=2,
            forward=aws.lb.ListenerRuleActionForwardArgs(
                target_groups=[
                    aws.lb.ListenerRuleActionForwardTargetGroupArgs(arn=arn, weight=weight)
                    for arn, weight in weighted
                ]
            ),
        )
        test = _header(TEST_HEADER, TEST_HEADER_VALUE)
        rules = [("test", [*bearer, test], jwt), ("bearer", bearer, jwt)]
        clients, ignore = [auth.api_client], WEIGHTED_FORWARD_PATHS
    # Rules must not exist before the clients and domain their actions name.
    deps: list[pulumi.Resource] = [*clients, *auth.domain_dependencies()]
    base = pulumi.ResourceOptions(parent=auth, depends_on=deps, ignore_changes=ignore)
    rule_opts = base.merge(opts) if opts is not None else base
    return [
        aws.lb.ListenerRule(
            f"{name}-{suffix}",
            listener_arn=listener_arn,
            priority=priority + i,
            conditions=conditions,
            actions=[first, forward],
            transforms=[rewrite],
            opts=rule_opts,
        )
        for i, (suffix, conditions, first) in enumerate(rules)
    ]
