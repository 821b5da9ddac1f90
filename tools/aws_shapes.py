"""Check request payloads against the AWS API definitions that botocore ships (DESIGN §7).

A Pulumi input that the provider would pass to AWS (a listener action, a container definition)
is only proven right when AWS's own request shape accepts it. botocore carries every service's
API model (`botocore/data/<service>/<version>/service-2.json`); this module loads the input
shape of an operation, or any named shape, and validates a plain dict against it with
`botocore.validate.ParamValidator` (required members, unknown members, types, minimums) plus
the model constraints ParamValidator leaves out (enums, maximums, patterns).

Typical use in a test::

    from tests.aws_shapes import (
        container_definitions, create_rule_request, register_task_definition_request,
        validate_named_shape, validate_shape,
    )

    validate_shape("elbv2", "CreateRule", create_rule_request(recorded_rule.inputs))
    validate_shape("ecs", "RegisterTaskDefinition", register_task_definition_request(inputs))
    first = container_definitions(inputs["containerDefinitions"])[0]
    validate_named_shape("ecs", "ContainerDefinition", first)

Key spelling is normalised against the shape itself, so Pulumi's recorded camelCase keys
(`sslPolicy`) match the API's PascalCase members (`SslPolicy`) and ECS's camelCase members
(`sizeInGiB` vs Pulumi's `sizeInGib`) alike; keys that match no member are kept as they are so
that botocore reports them as unknown. Recorded numbers arrive as floats; integral floats are
turned back into ints where the shape wants an integer. Map keys (docker labels, tags) are never
touched.

Where Pulumi's schema differs structurally from the API (ELBv2 `authenticateCognito` vs
`AuthenticateCognitoConfig`, `pathPattern` vs `Field` + `PathPatternConfig`, a single `rewrite`
block vs a `Rewrites` list; ECS `hostPath` vs `host.sourcePath`, tags as a map vs a list), the
`*_request` adapters below build the API request from a resource's recorded inputs.

Validation failures raise `ShapeError` with botocore's report and the API-shaped payload, so a
failing test shows exactly which member AWS would reject.
"""

from __future__ import annotations

import functools
import hashlib
import json
import marshal
import os
import re
import stat
import sys
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

from botocore.loaders import JSONFileLoader, Loader
from botocore.model import ListShape, MapShape, ServiceModel, Shape, StructureShape
from botocore.validate import ParamValidator

# The sentinel Pulumi's mock runtime records for values unknown during preview
# (pulumi.runtime.rpc.UNKNOWN).
UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"


class ShapeError(AssertionError):
    """A payload AWS would reject. `report` is botocore's text; `payload` what was checked."""

    def __init__(self, where: str, report: str, payload: Any) -> None:
        self.where = where
        self.report = report
        self.payload = payload
        shown = json.dumps(payload, indent=2, sort_keys=True, default=str)
        super().__init__(f"{where} rejects the request:\n{report}\npayload:\n{shown}")


# --------------------------------------------------------------------------------------------
# models
# --------------------------------------------------------------------------------------------


MODEL_CACHE = Path(__file__).resolve().parents[1] / ".cache" / "botocore-models"
"""Parsed botocore data files, in `marshal` form, one per source file (git-ignored)."""


class _PlainJSONFileLoader(JSONFileLoader):
    """botocore's JSON file loader, parsing into plain dicts (ordered, as every dict is) rather
    than OrderedDicts: the same model, read in half the time (ec2's model alone is 6 MB). Each
    parsed file is kept in `MODEL_CACHE` under a key of its path, size and modification time
    (and the Python version), so the next preview reads it back in a quarter of the time
    again; a cache that cannot be read or written is parsed afresh."""

    def _load_file(self, full_path: str, open_method: Any) -> Any:
        try:
            source = os.stat(full_path)
        except OSError:
            return None
        if not stat.S_ISREG(source.st_mode):
            return None
        key = f"{sys.version_info[:2]}|{full_path}|{source.st_size}|{source.st_mtime_ns}"
        cached = MODEL_CACHE / f"{hashlib.sha256(key.encode()).hexdigest()[:32]}.marshal"
        try:
            return marshal.loads(cached.read_bytes())
        except (OSError, EOFError, ValueError, TypeError):
            pass
        with open_method(full_path, "rb") as fp:
            data = json.loads(fp.read())
        try:
            MODEL_CACHE.mkdir(parents=True, exist_ok=True)
            # Written aside and renamed: parallel previews may write the same file at once.
            partial = cached.with_name(f"{cached.name}.{os.getpid()}.{threading.get_ident()}")
            partial.write_bytes(marshal.dumps(data))
            os.replace(partial, cached)
        except OSError:
            pass
        return data


@functools.cache
def _loader() -> Loader:
    """One loader for every service, so botocore lists its data directories once."""
    return Loader(file_loader=_PlainJSONFileLoader())


_model_lock = threading.Lock()


@functools.cache
def service_model(service: str) -> ServiceModel:
    """botocore's model of `service` (the botocore name: "elbv2", "ecs", "s3", ...), cached."""
    with _model_lock:  # botocore's loader caches are not thread-safe
        return ServiceModel(
            _loader().load_service_model(service, "service-2"), service_name=service
        )


def input_shape(service: str, operation: str) -> StructureShape:
    """The request shape of `operation` (PascalCase API name, e.g. "CreateRule")."""
    shape = service_model(service).operation_model(operation).input_shape
    if shape is None:
        raise LookupError(f"{service}:{operation} takes no input")
    return cast(StructureShape, shape)


# botocore declares these as cached properties, which type checkers cannot see through.
def _members(shape: StructureShape) -> Mapping[str, Shape]:
    return cast("Mapping[str, Shape]", shape.members)


def _meta(shape: Shape) -> dict[str, Any]:
    return cast("dict[str, Any]", shape.metadata)


def _enum(shape: Shape) -> list[str]:
    return cast("list[str]", getattr(shape, "enum", None) or [])


def _member(shape: ListShape) -> Shape:
    return cast(Shape, shape.member)


def _value(shape: MapShape) -> Shape:
    return cast(Shape, shape.value)


def named_shape(service: str, shape_name: str) -> Shape:
    """Any shape of the model by name (e.g. "ContainerDefinition", "Action")."""
    return service_model(service).shape_for(shape_name)


# --------------------------------------------------------------------------------------------
# key normalisation and value coercion, directed by the shape
# --------------------------------------------------------------------------------------------


def _member_name(key: str, members: Mapping[str, Shape]) -> str:
    if key in members:
        return key
    lowered = {name.lower(): name for name in members}
    return lowered.get(key.lower(), key)


def to_api(value: Any, shape: Shape) -> Any:
    """`value` with structure keys spelled as `shape`'s members and integral floats as ints.

    Keys that match no member (case-insensitively) are left unchanged so that validation
    reports them; map keys are never renamed.
    """
    if isinstance(shape, StructureShape) and isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, item in value.items():
            name = _member_name(key, _members(shape))
            member = _members(shape).get(name)
            out[name] = to_api(item, member) if member is not None else item
        return out
    if isinstance(shape, ListShape) and isinstance(value, list):
        return [to_api(item, _member(shape)) for item in value]
    if isinstance(shape, MapShape) and isinstance(value, Mapping):
        return {key: to_api(item, _value(shape)) for key, item in value.items()}
    if shape.type_name in ("integer", "long") and isinstance(value, float) and value.is_integer():
        return int(value)
    return value


# --------------------------------------------------------------------------------------------
# validation
# --------------------------------------------------------------------------------------------


def _java_pattern(pattern: str) -> re.Pattern[str] | None:
    # Model patterns are Java regexes; the few Python cannot compile (\p{L} classes) are skipped.
    try:
        return re.compile(pattern)
    except re.error:
        return None


def _constraint_errors(value: Any, shape: Shape, path: str) -> list[str]:
    """Model constraints botocore's ParamValidator does not check: enum, max, pattern, and
    values still unknown at preview time where AWS needs a non-string."""
    errors: list[str] = []
    meta = _meta(shape)
    if value == UNKNOWN:
        if shape.type_name != "string":
            errors.append(f"{path}: unknown during preview, but AWS needs a {shape.type_name}")
        return errors
    if isinstance(shape, StructureShape) and isinstance(value, Mapping):
        for key, item in value.items():
            member = _members(shape).get(key)
            if member is not None:
                errors += _constraint_errors(item, member, f"{path}.{key}")
        return errors
    if isinstance(shape, ListShape) and isinstance(value, list):
        if "max" in meta and len(value) > meta["max"]:
            errors.append(f"{path}: {len(value)} items, at most {meta['max']} allowed")
        for i, item in enumerate(value):
            errors += _constraint_errors(item, _member(shape), f"{path}[{i}]")
        return errors
    if isinstance(shape, MapShape) and isinstance(value, Mapping):
        for key, item in value.items():
            errors += _constraint_errors(item, _value(shape), f"{path}.{key}")
        return errors
    if shape.type_name == "string" and isinstance(value, str):
        if _enum(shape) and value not in _enum(shape):
            errors.append(f"{path}: {value!r} is not one of {_enum(shape)}")
        if "max" in meta and len(value) > meta["max"]:
            errors.append(f"{path}: {len(value)} characters, at most {meta['max']} allowed")
        pattern = _java_pattern(meta["pattern"]) if "pattern" in meta else None
        if pattern is not None and not pattern.search(value):
            errors.append(f"{path}: {value!r} does not match {meta['pattern']!r}")
    is_number = shape.type_name in ("integer", "long") and isinstance(value, int)
    if is_number and "max" in meta and value > meta["max"]:
        errors.append(f"{path}: {value} exceeds the maximum {meta['max']}")
    return errors


def contains_unknown(value: Any) -> bool:
    if value == UNKNOWN:
        return True
    if isinstance(value, Mapping):
        return any(contains_unknown(v) for v in value.values())
    if isinstance(value, list):
        return any(contains_unknown(v) for v in value)
    return False


def _prune_unknown(value: Any, path: str, pruned: set[str]) -> Any:
    """`value` without the members whose value is unknown during preview; their botocore paths
    (`.Member[0].Inner`) go to `pruned`. A list holding an unknown item is pruned whole: its
    length and items are not known yet."""
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, item in value.items():
            here = f"{path}.{key}"
            if item == UNKNOWN or (isinstance(item, list) and _contains_unknown_item(item)):
                pruned.add(here)
                continue
            out[key] = _prune_unknown(item, here, pruned)
        return out
    if isinstance(value, list):
        return [_prune_unknown(item, f"{path}[{i}]", pruned) for i, item in enumerate(value)]
    return value


def _contains_unknown_item(items: list[Any]) -> bool:
    return any(item == UNKNOWN for item in items)


def check(payload: Any, shape: Shape, where: str, *, skip_unknown: bool = False) -> Any:
    """Normalise `payload` against `shape`, validate it, and return the API-shaped payload.

    Raises `ShapeError` listing every problem botocore and the model constraints find. With
    `skip_unknown` (the offline preview), members still unknown at preview time are left out
    and never reported, not even as a missing required member: they are checked when known.
    """
    api = to_api(payload, shape)
    pruned: set[str] = set()
    checked = _prune_unknown(api, "", pruned) if skip_unknown else api
    report = ParamValidator().validate(checked, shape)
    if pruned:
        # botocore keeps its findings as (type, path, details) tuples.
        report._errors = [
            (kind, name, details)
            for kind, name, details in report._errors
            if not (
                kind == "missing required field"
                and f"{name}.{details.get('required_name')}" in pruned
            )
        ]
    problems = [report.generate_report()] if report.has_errors() else []
    problems += _constraint_errors(checked, shape, shape.name)
    if problems:
        raise ShapeError(where, "\n".join(problems), api)
    return api


def validate_shape(
    service: str, operation: str, params: Mapping[str, Any], *, skip_unknown: bool = False
) -> dict[str, Any]:
    """Validate `params` as the request of `service`:`operation`; return the API-shaped dict.

    `params` may use Pulumi's camelCase keys wherever they differ from the API only in case;
    use the `*_request` adapters for resources whose schema differs structurally.
    """
    return check(
        dict(params),
        input_shape(service, operation),
        f"{service}:{operation}",
        skip_unknown=skip_unknown,
    )


def validate_named_shape(
    service: str, shape_name: str, value: Any, *, skip_unknown: bool = False
) -> Any:
    """Validate `value` against one named shape of the model (e.g. "ContainerDefinition")."""
    return check(
        value,
        named_shape(service, shape_name),
        f"{service}:{shape_name}",
        skip_unknown=skip_unknown,
    )


# --------------------------------------------------------------------------------------------
# ELBv2: Pulumi (aws.lb) inputs -> API requests
# --------------------------------------------------------------------------------------------


def _drop_none(d: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if v is not None}


def _single(block: Any) -> Any:
    # Terraform-bridged single blocks are objects in Pulumi, but accept a one-item list too.
    if isinstance(block, list):
        return block[0] if block else None
    return block


def elbv2_action(action: Mapping[str, Any]) -> dict[str, Any]:
    """One `aws.lb` listener (default) action -> the ELBv2 `Action` shape."""
    out: dict[str, Any] = {"Type": action.get("type")}
    if action.get("order") is not None:
        out["Order"] = action["order"]
    if action.get("targetGroupArn") is not None:
        out["TargetGroupArn"] = action["targetGroupArn"]
    if (cognito := _single(action.get("authenticateCognito"))) is not None:
        out["AuthenticateCognitoConfig"] = _drop_none(
            {
                "UserPoolArn": cognito.get("userPoolArn"),
                "UserPoolClientId": cognito.get("userPoolClientId"),
                "UserPoolDomain": cognito.get("userPoolDomain"),
                "SessionCookieName": cognito.get("sessionCookieName"),
                "Scope": cognito.get("scope"),
                "SessionTimeout": cognito.get("sessionTimeout"),
                "AuthenticationRequestExtraParams": cognito.get("authenticationRequestExtraParams"),
                "OnUnauthenticatedRequest": cognito.get("onUnauthenticatedRequest"),
            }
        )
    if (oidc := _single(action.get("authenticateOidc"))) is not None:
        out["AuthenticateOidcConfig"] = _drop_none(
            {
                "Issuer": oidc.get("issuer"),
                "AuthorizationEndpoint": oidc.get("authorizationEndpoint"),
                "TokenEndpoint": oidc.get("tokenEndpoint"),
                "UserInfoEndpoint": oidc.get("userInfoEndpoint"),
                "ClientId": oidc.get("clientId"),
                "ClientSecret": oidc.get("clientSecret"),
                "SessionCookieName": oidc.get("sessionCookieName"),
                "Scope": oidc.get("scope"),
                "SessionTimeout": oidc.get("sessionTimeout"),
                "AuthenticationRequestExtraParams": oidc.get("authenticationRequestExtraParams"),
                "OnUnauthenticatedRequest": oidc.get("onUnauthenticatedRequest"),
            }
        )
    if (jwt := _single(action.get("jwtValidation"))) is not None:
        out["JwtValidationConfig"] = _drop_none(
            {
                "Issuer": jwt.get("issuer"),
                "JwksEndpoint": jwt.get("jwksEndpoint"),
                "AdditionalClaims": [
                    {"Format": c.get("format"), "Name": c.get("name"), "Values": c.get("values")}
                    for c in jwt.get("additionalClaims") or []
                ]
                or None,
            }
        )
    if (fixed := _single(action.get("fixedResponse"))) is not None:
        out["FixedResponseConfig"] = _drop_none(
            {
                "StatusCode": fixed.get("statusCode"),
                "ContentType": fixed.get("contentType"),
                "MessageBody": fixed.get("messageBody"),
            }
        )
    if (redirect := _single(action.get("redirect"))) is not None:
        out["RedirectConfig"] = _drop_none(
            {
                "Protocol": redirect.get("protocol"),
                "Port": redirect.get("port"),
                "Host": redirect.get("host"),
                "Path": redirect.get("path"),
                "Query": redirect.get("query"),
                "StatusCode": redirect.get("statusCode"),
            }
        )
    if (forward := _single(action.get("forward"))) is not None:
        config: dict[str, Any] = {
            "TargetGroups": [
                _drop_none({"TargetGroupArn": tg.get("arn"), "Weight": tg.get("weight")})
                for tg in forward.get("targetGroups") or []
            ]
        }
        if (sticky := _single(forward.get("stickiness"))) is not None:
            config["TargetGroupStickinessConfig"] = _drop_none(
                {"Enabled": sticky.get("enabled"), "DurationSeconds": sticky.get("duration")}
            )
        out["ForwardConfig"] = config
    return out


_CONDITION_FIELDS = {
    "hostHeader": ("host-header", "HostHeaderConfig"),
    "httpHeader": ("http-header", "HttpHeaderConfig"),
    "httpRequestMethod": ("http-request-method", "HttpRequestMethodConfig"),
    "pathPattern": ("path-pattern", "PathPatternConfig"),
    "sourceIp": ("source-ip", "SourceIpConfig"),
}


def elbv2_condition(condition: Mapping[str, Any]) -> dict[str, Any]:
    """One `aws.lb.ListenerRule` condition -> the ELBv2 `RuleCondition` shape.

    Pulumi has one optional block per field; the API names the field and nests its config.
    A condition with several blocks is invalid for AWS, so it is reported, not merged."""
    present = [k for k in (*_CONDITION_FIELDS, "queryStrings") if condition.get(k) is not None]
    if len(present) != 1:
        raise ShapeError(
            "elbv2:RuleCondition", f"needs exactly one condition block, got {present}", condition
        )
    key = present[0]
    if key == "queryStrings":
        values = [
            _drop_none({"Key": q.get("key"), "Value": q.get("value")}) for q in condition[key]
        ]
        return {"Field": "query-string", "QueryStringConfig": {"Values": values}}
    field, config_name = _CONDITION_FIELDS[key]
    block = _single(condition[key])
    config = {k[0].upper() + k[1:]: v for k, v in block.items() if v is not None}
    return {"Field": field, config_name: config}


def elbv2_transform(transform: Mapping[str, Any]) -> dict[str, Any]:
    """One `aws.lb.ListenerRule` transform -> the ELBv2 `RuleTransform` shape (Pulumi's single
    `rewrite` block becomes the API's `Rewrites` list)."""
    out: dict[str, Any] = {"Type": transform.get("type")}
    for key, api_key in (
        ("urlRewriteConfig", "UrlRewriteConfig"),
        ("hostHeaderRewriteConfig", "HostHeaderRewriteConfig"),
    ):
        config = _single(transform.get(key))
        if config is None:
            continue
        rewrites = config.get("rewrite")
        rewrites = rewrites if isinstance(rewrites, list) else [rewrites] if rewrites else []
        out[api_key] = {
            "Rewrites": [{"Regex": r.get("regex"), "Replace": r.get("replace")} for r in rewrites]
        }
    return out


def _tags(tags: Mapping[str, str] | None, key: str = "Key", value: str = "Value") -> Any:
    return [{key: k, value: v} for k, v in tags.items()] if tags else None


def create_rule_request(inputs: Mapping[str, Any]) -> dict[str, Any]:
    """Recorded `aws:lb/listenerRule:ListenerRule` inputs -> an ELBv2 `CreateRule` request."""
    return _drop_none(
        {
            "ListenerArn": inputs.get("listenerArn"),
            "Priority": inputs.get("priority"),
            "Conditions": [elbv2_condition(c) for c in inputs.get("conditions") or []],
            "Actions": [elbv2_action(a) for a in inputs.get("actions") or []],
            "Transforms": [elbv2_transform(t) for t in inputs.get("transforms") or []] or None,
            "Tags": _tags(inputs.get("tags")),
        }
    )


def create_listener_request(inputs: Mapping[str, Any]) -> dict[str, Any]:
    """Recorded `aws:lb/listener:Listener` inputs -> an ELBv2 `CreateListener` request."""
    certificate = inputs.get("certificateArn")
    alpn = inputs.get("alpnPolicy")
    return _drop_none(
        {
            "LoadBalancerArn": inputs.get("loadBalancerArn"),
            "Protocol": inputs.get("protocol"),
            "Port": inputs.get("port"),
            "SslPolicy": inputs.get("sslPolicy"),
            "Certificates": [{"CertificateArn": certificate}] if certificate else None,
            "DefaultActions": [elbv2_action(a) for a in inputs.get("defaultActions") or []],
            "AlpnPolicy": [alpn] if alpn else None,
            "Tags": _tags(inputs.get("tags")),
        }
    )


# --------------------------------------------------------------------------------------------
# ECS: Pulumi (aws.ecs.TaskDefinition) inputs -> API request
# --------------------------------------------------------------------------------------------


def container_definitions(value: Any) -> list[dict[str, Any]]:
    """`containerDefinitions` as recorded: a JSON string (aws.ecs) or already a list."""
    return json.loads(value) if isinstance(value, str) else list(value or [])


def _ecs_volume(volume: Mapping[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in volume.items() if k not in ("hostPath", "configureAtLaunch")}
    if volume.get("hostPath") is not None:
        out["host"] = {"sourcePath": volume["hostPath"]}
    if volume.get("configureAtLaunch") is not None:
        out["configuredAtLaunch"] = volume["configureAtLaunch"]
    return out


def register_task_definition_request(inputs: Mapping[str, Any]) -> dict[str, Any]:
    """Recorded `aws:ecs/taskDefinition:TaskDefinition` inputs -> an ECS
    `RegisterTaskDefinition` request (container definitions parsed from their JSON string)."""
    proxy = inputs.get("proxyConfiguration")
    if proxy is not None:
        props = proxy.get("properties") or {}
        proxy = {**proxy, "properties": [{"name": k, "value": v} for k, v in props.items()]}
    return _drop_none(
        {
            "family": inputs.get("family"),
            "containerDefinitions": container_definitions(inputs.get("containerDefinitions")),
            "taskRoleArn": inputs.get("taskRoleArn"),
            "executionRoleArn": inputs.get("executionRoleArn"),
            "networkMode": inputs.get("networkMode"),
            "volumes": [_ecs_volume(v) for v in inputs.get("volumes") or []] or None,
            "placementConstraints": inputs.get("placementConstraints"),
            "requiresCompatibilities": inputs.get("requiresCompatibilities"),
            "cpu": inputs.get("cpu"),
            "memory": inputs.get("memory"),
            "tags": _tags(inputs.get("tags"), "key", "value"),
            "pidMode": inputs.get("pidMode"),
            "ipcMode": inputs.get("ipcMode"),
            "proxyConfiguration": proxy,
            "ephemeralStorage": inputs.get("ephemeralStorage"),
            "runtimePlatform": inputs.get("runtimePlatform"),
            "enableFaultInjection": inputs.get("enableFaultInjection"),
        }
    )


# --------------------------------------------------------------------------------------------
# Cognito user pools: Pulumi (aws.cognito) inputs -> API requests
# --------------------------------------------------------------------------------------------


def create_user_pool_request(inputs: Mapping[str, Any]) -> dict[str, Any]:
    """Recorded `aws:cognito/userPool:UserPool` inputs -> a cognito-idp `CreateUserPool` request.

    MFA factor settings (`softwareTokenMfaConfiguration`, ...) go through a separate API call
    (SetUserPoolMfaConfig) and are left out; tags become `UserPoolTags`."""
    moved = {
        "name",
        "passwordPolicy",
        "signInPolicy",
        "tags",
        "softwareTokenMfaConfiguration",
        "emailMfaConfiguration",
        "webAuthnConfiguration",
        "region",
    }
    out: dict[str, Any] = {k: v for k, v in inputs.items() if k not in moved}
    out["PoolName"] = inputs.get("name")
    policies = _drop_none(
        {"PasswordPolicy": inputs.get("passwordPolicy"), "SignInPolicy": inputs.get("signInPolicy")}
    )
    if policies:
        out["Policies"] = policies
    if inputs.get("tags"):
        out["UserPoolTags"] = inputs["tags"]
    return _drop_none(out)


def create_user_pool_client_request(inputs: Mapping[str, Any]) -> dict[str, Any]:
    """Recorded `aws:cognito/userPoolClient:UserPoolClient` inputs -> a cognito-idp
    `CreateUserPoolClient` request (only `name` is spelled differently: `ClientName`)."""
    out = {k: v for k, v in inputs.items() if k not in ("name", "region")}
    out["ClientName"] = inputs.get("name")
    return _drop_none(out)
