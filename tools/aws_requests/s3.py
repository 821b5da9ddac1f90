"""S3: buckets, bucket policies and the bucket configuration resources."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping
from typing import Any

from ecs_inference.contracts.aws_limits import BUCKET_POLICY_MAX_BYTES
from tools.aws_requests.iam import policy_problems
from tools.aws_requests.registry import ApiRequest, Inputs, drop_none, known, maps, rule, single


@maps("aws:s3/bucket:Bucket", "aws:s3/bucketV2:BucketV2")
def _bucket(i: Inputs, name: str | None) -> list[ApiRequest]:
    return [
        ApiRequest(
            "s3",
            "CreateBucket",
            drop_none({"Bucket": name, "ObjectLockEnabledForBucket": i.get("objectLockEnabled")}),
        )
    ]


@rule("aws:s3/bucket:Bucket", "aws:s3/bucketV2:BucketV2")
def _bucket_name_rules(i: Inputs, name: str | None) -> Iterable[str]:
    # General purpose bucket naming rules (S3 user guide).
    if not name or not known(name):
        return
    if ".." in name:
        yield f"bucket name {name!r} has two adjacent periods"
    try:
        ipaddress.IPv4Address(name)
        yield f"bucket name {name!r} is formatted as an IP address"
    except ValueError:
        pass
    for suffix in ("-s3alias", "--ol-s3", ".mrap", "--x-s3"):
        if name.endswith(suffix):
            yield f"bucket name {name!r} ends with the reserved suffix {suffix!r}"


def _bucket_of(i: Inputs) -> Any:
    return i.get("bucket")


@maps("aws:s3/bucketPolicy:BucketPolicy")
def _bucket_policy(i: Inputs, _name: str | None) -> list[ApiRequest]:
    return [
        ApiRequest("s3", "PutBucketPolicy", {"Bucket": _bucket_of(i), "Policy": i.get("policy")})
    ]


@rule("aws:s3/bucketPolicy:BucketPolicy")
def _bucket_policy_limits(i: Inputs, _name: str | None) -> Iterable[str]:
    doc = i.get("policy")
    yield from (f"policy: {p}" for p in policy_problems(doc, "resource"))
    if isinstance(doc, str) and known(doc) and len(doc.encode()) > BUCKET_POLICY_MAX_BYTES:
        yield (
            f"policy is {len(doc.encode())} bytes, more than the {BUCKET_POLICY_MAX_BYTES} "
            "S3 allows"
        )


@maps("aws:s3/bucketOwnershipControls:BucketOwnershipControls")
def _bucket_ownership(i: Inputs, _name: str | None) -> list[ApiRequest]:
    rule_ = single(i.get("rule")) or {}
    return [
        ApiRequest(
            "s3",
            "PutBucketOwnershipControls",
            {
                "Bucket": _bucket_of(i),
                "OwnershipControls": {"Rules": [{"ObjectOwnership": rule_.get("objectOwnership")}]},
            },
        )
    ]


@maps("aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock")
def _bucket_public_access(i: Inputs, _name: str | None) -> list[ApiRequest]:
    config = drop_none(
        {
            "BlockPublicAcls": i.get("blockPublicAcls"),
            "IgnorePublicAcls": i.get("ignorePublicAcls"),
            "BlockPublicPolicy": i.get("blockPublicPolicy"),
            "RestrictPublicBuckets": i.get("restrictPublicBuckets"),
        }
    )
    return [
        ApiRequest(
            "s3",
            "PutPublicAccessBlock",
            {"Bucket": _bucket_of(i), "PublicAccessBlockConfiguration": config},
        )
    ]


@maps("aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration")
def _bucket_encryption(i: Inputs, _name: str | None) -> list[ApiRequest]:
    rules = []
    for r in i.get("rules") or []:
        default = single(r.get("applyServerSideEncryptionByDefault"))
        rules.append(
            drop_none(
                {
                    "ApplyServerSideEncryptionByDefault": drop_none(
                        {
                            "SSEAlgorithm": default.get("sseAlgorithm"),
                            "KMSMasterKeyID": default.get("kmsMasterKeyId"),
                        }
                    )
                    if isinstance(default, Mapping)
                    else None,
                    "BucketKeyEnabled": r.get("bucketKeyEnabled"),
                }
            )
        )
    return [
        ApiRequest(
            "s3",
            "PutBucketEncryption",
            {
                "Bucket": _bucket_of(i),
                "ServerSideEncryptionConfiguration": {"Rules": rules},
            },
        )
    ]


@maps("aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration")
def _bucket_lifecycle(i: Inputs, _name: str | None) -> list[ApiRequest]:
    rules = []
    for r in i.get("rules") or []:
        flt = single(r.get("filter"))
        exp = single(r.get("expiration"))
        abort = single(r.get("abortIncompleteMultipartUpload"))
        rules.append(
            drop_none(
                {
                    "ID": r.get("id"),
                    "Status": r.get("status"),
                    "Filter": drop_none(
                        {
                            "Prefix": flt.get("prefix"),
                            "ObjectSizeGreaterThan": flt.get("objectSizeGreaterThan"),
                            "ObjectSizeLessThan": flt.get("objectSizeLessThan"),
                        }
                    )
                    if isinstance(flt, Mapping)
                    else None,
                    "Expiration": drop_none(
                        {
                            "Days": exp.get("days"),
                            "Date": exp.get("date"),
                            "ExpiredObjectDeleteMarker": exp.get("expiredObjectDeleteMarker"),
                        }
                    )
                    if isinstance(exp, Mapping)
                    else None,
                    "AbortIncompleteMultipartUpload": {
                        "DaysAfterInitiation": abort.get("daysAfterInitiation")
                    }
                    if isinstance(abort, Mapping)
                    else None,
                }
            )
        )
    return [
        ApiRequest(
            "s3",
            "PutBucketLifecycleConfiguration",
            {"Bucket": _bucket_of(i), "LifecycleConfiguration": {"Rules": rules}},
        )
    ]
