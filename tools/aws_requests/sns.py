"""SNS: topics, topic policies and subscriptions."""

from __future__ import annotations

from collections.abc import Iterable

from tools.aws_requests.iam import policy_problems
from tools.aws_requests.registry import (
    ApiRequest,
    Inputs,
    _string_attributes,
    drop_none,
    known,
    maps,
    rule,
    tags,
)


@maps("aws:sns/topic:Topic")
def _sns_topic(i: Inputs, name: str | None) -> list[ApiRequest]:
    attrs = _string_attributes(
        {
            "DisplayName": i.get("displayName"),
            "Policy": i.get("policy"),
            "DeliveryPolicy": i.get("deliveryPolicy"),
            "KmsMasterKeyId": i.get("kmsMasterKeyId"),
            "FifoTopic": i.get("fifoTopic"),
            "ContentBasedDeduplication": i.get("contentBasedDeduplication"),
            "SignatureVersion": i.get("signatureVersion"),
            "TracingConfig": i.get("tracingConfig"),
        }
    )
    return [
        ApiRequest(
            "sns",
            "CreateTopic",
            drop_none({"Name": name, "Attributes": attrs, "Tags": tags(i.get("tags"))}),
        )
    ]


@rule("aws:sns/topic:Topic", "aws:sqs/queue:Queue")
def _fifo_names(i: Inputs, name: str | None) -> Iterable[str]:
    # SNS CreateTopic / SQS CreateQueue: a FIFO topic or queue name ends in ".fifo", and only
    # a FIFO one may.
    fifo = bool(i.get("fifoTopic") or i.get("fifoQueue"))
    if isinstance(name, str) and known(name) and fifo != name.endswith(".fifo"):
        yield f"name {name!r}: FIFO names end in '.fifo' and only FIFO names may"


@maps("aws:sns/topicPolicy:TopicPolicy")
def _sns_topic_policy(i: Inputs, _name: str | None) -> list[ApiRequest]:
    return [
        ApiRequest(
            "sns",
            "SetTopicAttributes",
            drop_none(
                {
                    "TopicArn": i.get("arn"),
                    "AttributeName": "Policy",
                    "AttributeValue": i.get("policy"),
                }
            ),
        )
    ]


@rule("aws:sns/topicPolicy:TopicPolicy")
def _sns_topic_policy_grammar(i: Inputs, _name: str | None) -> Iterable[str]:
    yield from policy_problems(i.get("policy"), "resource")


@maps("aws:sns/topicSubscription:TopicSubscription")
def _sns_subscription(i: Inputs, _name: str | None) -> list[ApiRequest]:
    return [
        ApiRequest(
            "sns",
            "Subscribe",
            drop_none(
                {
                    "TopicArn": i.get("topic"),
                    "Protocol": i.get("protocol"),
                    "Endpoint": i.get("endpoint"),
                    "ReturnSubscriptionArn": True,
                }
            ),
        )
    ]
