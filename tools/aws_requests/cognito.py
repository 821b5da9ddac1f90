"""Cognito user pools: pools, app clients, domains and resource servers."""

from __future__ import annotations

from collections.abc import Iterable

from ecs_inference.contracts.aws_limits import COGNITO_DOMAIN_RESERVED_WORDS
from tools.aws_requests.registry import ApiRequest, Inputs, drop_none, known, maps, rule
from tools.aws_shapes import create_user_pool_client_request, create_user_pool_request


@maps("aws:cognito/userPool:UserPool")
def _user_pool(i: Inputs, name: str | None) -> list[ApiRequest]:
    request = create_user_pool_request({**i, "name": name})
    return [ApiRequest("cognito-idp", "CreateUserPool", request)]


@maps("aws:cognito/userPoolClient:UserPoolClient")
def _user_pool_client(i: Inputs, name: str | None) -> list[ApiRequest]:
    request = create_user_pool_client_request({**i, "name": name})
    # The provider's `tokenValidityUnits` block is the API's `TokenValidityUnits` shape; its
    # members differ only in case, which the shape-directed normalisation handles.
    return [ApiRequest("cognito-idp", "CreateUserPoolClient", request)]


@maps("aws:cognito/userPoolDomain:UserPoolDomain")
def _user_pool_domain(i: Inputs, name: str | None) -> list[ApiRequest]:
    return [
        ApiRequest(
            "cognito-idp",
            "CreateUserPoolDomain",
            drop_none(
                {
                    "Domain": name or i.get("domain"),
                    "UserPoolId": i.get("userPoolId"),
                    "ManagedLoginVersion": i.get("managedLoginVersion"),
                    "CustomDomainConfig": {"CertificateArn": i["certificateArn"]}
                    if i.get("certificateArn")
                    else None,
                }
            ),
        )
    ]


@rule("aws:cognito/userPoolDomain:UserPoolDomain")
def _user_pool_domain_words(i: Inputs, _name: str | None) -> Iterable[str]:
    domain = i.get("domain")
    if not isinstance(domain, str) or not known(domain) or i.get("certificateArn"):
        return
    for word in COGNITO_DOMAIN_RESERVED_WORDS:
        if word in domain.lower():
            yield f"domain prefix {domain!r} contains the reserved word {word!r}"


@maps("aws:cognito/resourceServer:ResourceServer")
def _resource_server(i: Inputs, name: str | None) -> list[ApiRequest]:
    return [
        ApiRequest(
            "cognito-idp",
            "CreateResourceServer",
            drop_none(
                {
                    "UserPoolId": i.get("userPoolId"),
                    "Identifier": i.get("identifier"),
                    "Name": name,
                    "Scopes": i.get("scopes"),
                }
            ),
        )
    ]
