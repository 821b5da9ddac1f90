"""CloudFront front doors: every enabled distribution.

Routes: origin ``vpcOriginConfig`` -> VPC origin -> its endpoint ARN (ALB, NLB or instance), or
an origin whose domain name addresses a resource of the stack (``origins``: a load balancer, an
instance's public DNS name or IP, an Elastic IP, a Lambda function URL, signed or not by an
origin access control, an App Runner service, a Route 53 record naming one of those); S3
origins are not compute.
A distribution authenticates viewers only when every cache behavior requires signed URLs /
cookies (``trustedKeyGroups``, ``trustedSigners``) or runs a viewer-request CloudFront Function
or Lambda@Edge (the pack cannot read what the function checks; viewer-request is where edge
authentication lives, and a function there can refuse every request).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from ..resources import (
    INSTANCE,
    LOAD_BALANCER,
    VPC_ORIGIN,
    as_bool,
    as_list,
    get,
    get_path,
    is_native,
    present,
)
from .index import Entry, Model, Resource, label, prepend
from .origins import ADDRESSED, address_legs


def distribution_entry(model: Model, dist: Resource) -> Iterator[Entry]:
    """An enabled distribution: every origin that reaches a resource of the stack."""
    native = is_native(dist.resource_type)
    config = get(dist.props, "distributionConfig") if native else dist.props
    if config is None or not as_bool(get(config, "enabled", True)):
        return
    auth = _viewer_auth(dist, config, native)
    origins_key = "distributionConfig" if native else "origins"
    for origin in as_list(get(config, "origins")):
        vpc_config = get(origin, "vpcOriginConfig")
        if vpc_config is not None:
            vpcos = model.refs(
                dist,
                origins_key,
                VPC_ORIGIN,
                values=lambda c=vpc_config: [get(c, "vpcOriginId")],
                what="which VPC origin it uses",
            )
            for vpco in vpcos:
                lbs = model.refs(
                    vpco,
                    "vpcOriginEndpointConfig",
                    LOAD_BALANCER | INSTANCE,
                    values=lambda v=vpco: [get_path(v.props, "vpcOriginEndpointConfig", "arn")],
                    what="which load balancer it reaches",
                )
                for lb in lbs:
                    yield from _origin(model, dist, vpco, lb, auth)
            continue
        if not present(origin, "domainName") or get(origin, "s3OriginConfig") is not None:
            continue
        targets = model.refs(
            dist,
            origins_key,
            ADDRESSED,
            values=lambda o=origin: [get(o, "domainName")],
            silent_external=True,
        )
        # With an origin access control CloudFront signs the request to a function URL.
        signed = present(origin, "originAccessControlId")
        for target in targets:
            for leg in address_legs(model, target, signed=signed):
                yield dist, prepend(dist, dist, auth, leg)


def _origin(
    model: Model, dist: Resource, hop: Resource, target: Resource, auth: str | None
) -> Iterator[Entry]:
    for leg in address_legs(model, target):
        yield dist, prepend(dist, hop, auth, leg)


def _viewer_auth(dist: Resource, config: Mapping[str, Any], native: bool) -> str | None:
    """What authenticates every cache behavior's viewers (None: some behavior is open)."""
    behaviors = [get(config, "defaultCacheBehavior")]
    ordered = "cacheBehaviors" if native else "orderedCacheBehaviors"
    behaviors += list(as_list(get(config, ordered)))
    for behavior in behaviors:
        if behavior is None:
            return None
        signed = as_list(get(behavior, "trustedKeyGroups")) or as_list(
            get(behavior, "trustedSigners")
        )
        functions = [
            *as_list(get(behavior, "functionAssociations")),
            *as_list(get(behavior, "lambdaFunctionAssociations")),
        ]
        viewer = any(str(get(f, "eventType", "")).lower() == "viewer-request" for f in functions)
        if not signed and not viewer:
            return None
    return f"signed requests / viewer-request function on {label(dist)}"
