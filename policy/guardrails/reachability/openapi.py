"""API Gateway APIs defined by an OpenAPI document (``body``), REST and HTTP alike.

Every operation of ``paths`` is a route (``x-amazon-apigateway-any-method`` is ANY), with its
``x-amazon-apigateway-integration`` (inline, or a ``$ref`` into the document's components) and
its ``security`` (else the document's). An operation is authenticated when every alternative of
its security requirement names a scheme (``components.securitySchemes``, Swagger 2
``securityDefinitions``) that API Gateway enforces: an ``x-amazon-apigateway-authorizer``
(Lambda, Cognito, JWT) or an ``x-amazon-apigateway-authtype`` (``awsSigv4``,
``cognito_user_pools``, ``custom``). An empty alternative (``{}``) lets anonymous callers in;
an API key alone identifies a caller, it does not authenticate one.

Integrations: ``mock`` adds no route; ``VPC_LINK`` goes, on a REST API, to ``integrationTarget``
(VPC link V2) or through the V1 link in ``connectionId``, on an HTTP API to the listener (or
Cloud Map service) in ``uri``; any other ``uri`` names a Lambda function or an address
(``origins``). A ``body`` unknown at preview, or kept in S3 (``bodyS3Location``), cannot be
read: "cannot verify", naming the property. A REST API whose endpoint type is ``PRIVATE``
has no internet entry point.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from pulumi_policy.proxy import UnknownValueError

from ..resources import (
    FUNCTION,
    LISTENER,
    REST_API,
    as_list,
    get,
    present,
    stored_path,
)
from ..values import load_document
from .apigateway import rest_private
from .elb import listener_legs
from .index import Entry, Leg, Model, Resource, label
from .origins import ADDRESSED, address_legs, serving_legs

_METHODS = frozenset({"get", "put", "post", "delete", "options", "head", "patch", "trace"})
_ANY = "x-amazon-apigateway-any-method"
_INTEGRATION = "x-amazon-apigateway-integration"
_ENFORCED_AUTHTYPES = frozenset({"awssigv4", "cognito_user_pools", "custom"})


def body_entry(model: Model, api: Resource) -> Iterator[Entry]:
    """Every operation of an API defined by an OpenAPI ``body``."""
    if present(api.props, "bodyS3Location") and not present(api.props, "body"):
        model.note(api, "bodyS3Location", "is a document in S3 the pack cannot read", "its routes")
        return
    if not present(api.props, "body") or _private(api):
        return
    try:
        document = _document(get(api.props, "body"))
    except UnknownValueError as error:
        model.note(api, "body", _why(error), "its routes and authorizers")
        return
    if document is None:
        model.note(api, "body", "is not an OpenAPI document", "its routes and authorizers")
        return
    schemes = _schemes(document)
    for path, item in _mapping(document.get("paths")).items():
        for method, operation in _mapping(item).items():
            verb = "ANY" if method == _ANY else str(method).upper()
            if method != _ANY and str(method).lower() not in _METHODS:
                continue
            operation = _mapping(operation)
            auth = _authenticated(operation.get("security", document.get("security")), schemes)
            where = f"{label(api)} {verb} {path}"
            integration = _resolve(document, operation.get(_INTEGRATION))
            for leg in _integration_legs(model, api, integration):
                yield (
                    api,
                    Leg(
                        api,
                        f"{auth} on {where}" if auth else leg.auth,
                        (where, *leg.chain),
                        leg.ends,
                        leg.via,
                        (api, *leg.hops),
                    ),
                )


def _why(error: UnknownValueError) -> str:
    if "[secret]" in error.message:
        return "is a secret the pack cannot read ([secret])"
    return "is unknown at preview"


def _private(api: Resource) -> bool:
    if api.resource_type not in REST_API:
        return False
    types = stored_path(api.props, "endpointConfiguration", "types", resource=api)
    return [str(t).upper() for t in as_list(types)] == ["PRIVATE"]


def _document(body: Any) -> Mapping[str, Any] | None:
    """The body as a mapping (aws-native takes an object; pulumi-aws JSON or YAML text)."""
    if isinstance(body, Mapping):
        return _plain(body)
    return load_document(body) if isinstance(body, str) else None


class _Unread:
    """A part of the body unknown at preview (or secret): kept with its error, so that the
    reference it holds resolves through the dependencies recorded for ``body``."""

    def __init__(self, error: UnknownValueError) -> None:
        self.error = error


def _plain(value: Any) -> Any:
    """A proxied value as plain data, each part unknown at preview as an :class:`_Unread`."""
    if isinstance(value, Mapping):
        return {str(k): _read(value, k) for k in value}
    if isinstance(value, Sequence) and not isinstance(value, str):
        return [_read(value, i) for i in range(len(value))]
    return value


def _read(container: Any, key: Any) -> Any:
    try:
        return _plain(container[key])
    except UnknownValueError as error:
        return _Unread(error)


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _resolve(document: Mapping[str, Any], value: Any) -> Mapping[str, Any]:
    """``value``, or what its ``$ref`` (``#/a/b``) points to in the document."""
    value = _mapping(value)
    ref = value.get("$ref")
    if not isinstance(ref, str) or not ref.startswith("#/"):
        return value
    node: Any = document
    for part in ref[2:].split("/"):
        node = _mapping(node).get(part.replace("~1", "/").replace("~0", "~"))
    return _mapping(node)


def _schemes(document: Mapping[str, Any]) -> Mapping[str, Any]:
    components = _mapping(document.get("components"))
    return {
        **_mapping(document.get("securityDefinitions")),
        **_mapping(components.get("securitySchemes")),
    }


def _authenticated(requirement: Any, schemes: Mapping[str, Any]) -> str | None:
    """What authenticates every alternative of a security requirement (None: some does not)."""
    if requirement is None or isinstance(requirement, _Unread):
        return None  # none, or unknown at preview: judged as open, never waved through
    alternatives = list(as_list(requirement))
    names: list[str] = []
    for alternative in alternatives:
        alternative = _mapping(alternative)
        enforced = [n for n in alternative if _enforced(_mapping(schemes.get(n)))]
        if not enforced:
            return None
        names += enforced
    return f"{', '.join(dict.fromkeys(names))} authorizer" if names else None


def _enforced(scheme: Mapping[str, Any]) -> bool:
    if scheme.get("x-amazon-apigateway-authorizer") is not None:
        return True
    return str(scheme.get("x-amazon-apigateway-authtype", "")).lower() in _ENFORCED_AUTHTYPES


def _integration_legs(model: Model, api: Resource, integration: Mapping[str, Any]) -> list[Leg]:
    kind = str(integration.get("type", "")).lower()
    if not integration or kind == "mock":
        return []
    uri = integration.get("uri")
    if str(integration.get("connectionType", "INTERNET")).upper() == "VPC_LINK":
        if api.resource_type in REST_API:
            return [leg for _, leg in rest_private(model, api, api, integration, None, "body")]
        listeners = _targets(model, api, uri, LISTENER, "what the VPC link reaches", loud=True)
        legs = [leg for listener in listeners for leg in listener_legs(model, listener)]
        return legs or [Leg(api, None, (), (), (), ())]
    found = _targets(model, api, uri, FUNCTION | ADDRESSED, "what it invokes", loud=False)
    legs = []
    for target in found:
        legs += (
            serving_legs(model, target)
            if target.resource_type in FUNCTION
            else address_legs(model, target)
        )
    if not found and isinstance(uri, str) and (":lambda:" in uri or ":function:" in uri):
        model.note(api, "body", f"names {uri!r}, not a resource of this stack", "what it invokes")
        legs.append(Leg(api, None, (), (), (), ()))
    return legs


def _targets(
    model: Model, api: Resource, value: Any, types: frozenset[str], what: str, *, loud: bool
) -> list[Resource]:
    """What a reference inside the body names: by value when it names a resource of the
    stack, else by the dependencies recorded for ``body`` (a value unknown at preview)."""
    if isinstance(value, str) and value:
        found = model.lookup(value, types)
        if found:
            return found

    def values() -> list[Any]:
        if isinstance(value, _Unread):
            raise value.error
        return [value]

    return model.refs(api, "body", types, values=values, what=what, silent_external=not loud)
