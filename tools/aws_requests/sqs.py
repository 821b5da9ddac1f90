"""SQS: queues, queue policies and redrive-allow policies."""

from __future__ import annotations

import json
from collections.abc import Iterable

from ecs_inference.contracts.aws_limits import SQS_ATTRIBUTE_RANGES
from tools.aws_requests.registry import (
    ApiRequest,
    Inputs,
    _string_attributes,
    as_int,
    drop_none,
    known,
    maps,
    rule,
)


@maps("aws:sqs/queue:Queue")
def _sqs_queue(i: Inputs, name: str | None) -> list[ApiRequest]:
    attrs = _string_attributes(
        {
            "DelaySeconds": i.get("delaySeconds"),
            "MaximumMessageSize": i.get("maxMessageSize"),
            "MessageRetentionPeriod": i.get("messageRetentionSeconds"),
            "ReceiveMessageWaitTimeSeconds": i.get("receiveWaitTimeSeconds"),
            "VisibilityTimeout": i.get("visibilityTimeoutSeconds"),
            "Policy": i.get("policy"),
            "RedrivePolicy": i.get("redrivePolicy"),
            "FifoQueue": i.get("fifoQueue"),
            "ContentBasedDeduplication": i.get("contentBasedDeduplication"),
            "KmsMasterKeyId": i.get("kmsMasterKeyId"),
            "SqsManagedSseEnabled": i.get("sqsManagedSseEnabled"),
        }
    )
    return [
        ApiRequest(
            "sqs",
            "CreateQueue",
            drop_none({"QueueName": name, "Attributes": attrs, "tags": i.get("tags")}),
        )
    ]


@rule("aws:sqs/queue:Queue")
def _sqs_limits(i: Inputs, _name: str | None) -> Iterable[str]:
    for key, (lo, hi) in SQS_ATTRIBUTE_RANGES.items():
        value = i.get(key)
        if isinstance(value, (int, float)) and not lo <= value <= hi:
            yield f"{key} {as_int(value)} is outside {lo}-{hi}"


@maps("aws:sqs/queuePolicy:QueuePolicy")
def _sqs_queue_policy(i: Inputs, _name: str | None) -> list[ApiRequest]:
    return [
        ApiRequest(
            "sqs",
            "SetQueueAttributes",
            drop_none({"QueueUrl": i.get("queueUrl"), "Attributes": {"Policy": i.get("policy")}}),
        )
    ]


@maps("aws:sqs/redriveAllowPolicy:RedriveAllowPolicy")
def _sqs_redrive_allow(i: Inputs, _name: str | None) -> list[ApiRequest]:
    return [
        ApiRequest(
            "sqs",
            "SetQueueAttributes",
            drop_none(
                {
                    "QueueUrl": i.get("queueUrl"),
                    "Attributes": {"RedriveAllowPolicy": i.get("redriveAllowPolicy")},
                }
            ),
        )
    ]


@rule("aws:sqs/redriveAllowPolicy:RedriveAllowPolicy")
def _sqs_redrive_allow_document(i: Inputs, _name: str | None) -> Iterable[str]:
    raw = i.get("redriveAllowPolicy")
    if not isinstance(raw, str) or not known(raw):
        return
    try:
        doc = json.loads(raw)
    except ValueError:
        yield "redriveAllowPolicy is not JSON"
        return
    permission = doc.get("redrivePermission")
    if permission not in ("allowAll", "denyAll", "byQueue"):
        yield f"redrivePermission {permission!r} is not allowAll, denyAll or byQueue"
    sources = doc.get("sourceQueueArns") or []
    if permission == "byQueue" and not 1 <= len(sources) <= 10:
        yield f"byQueue needs 1-10 sourceQueueArns, got {len(sources)}"
