"""EventBridge: rules and targets."""

from __future__ import annotations

import json
from collections.abc import Iterable

from tools.aws_requests.registry import ApiRequest, Inputs, drop_none, known, maps, rule, tags
from tools.aws_shapes import UNKNOWN


@maps("aws:cloudwatch/eventRule:EventRule")
def _event_rule(i: Inputs, name: str | None) -> list[ApiRequest]:
    return [
        ApiRequest(
            "events",
            "PutRule",
            drop_none(
                {
                    "Name": name,
                    "ScheduleExpression": i.get("scheduleExpression"),
                    "EventPattern": i.get("eventPattern"),
                    "State": i.get("state"),
                    "Description": i.get("description"),
                    "RoleArn": i.get("roleArn"),
                    "EventBusName": i.get("eventBusName"),
                    "Tags": tags(i.get("tags")),
                }
            ),
        )
    ]


@rule("aws:cloudwatch/eventRule:EventRule")
def _event_rule_limits(i: Inputs, _name: str | None) -> Iterable[str]:
    # PutRule: a schedule expression or an event pattern (or both on the default bus); the
    # pattern is JSON.
    if not i.get("scheduleExpression") and not i.get("eventPattern"):
        yield "needs scheduleExpression or eventPattern"
    pattern = i.get("eventPattern")
    if isinstance(pattern, str) and known(pattern):
        try:
            json.loads(pattern)
        except json.JSONDecodeError as exc:
            yield f"eventPattern is not valid JSON: {exc.msg}"


@maps("aws:cloudwatch/eventTarget:EventTarget")
def _event_target(i: Inputs, _name: str | None) -> list[ApiRequest]:
    return [
        ApiRequest(
            "events",
            "PutTargets",
            drop_none(
                {
                    "Rule": i.get("rule"),
                    "EventBusName": i.get("eventBusName"),
                    "Targets": [
                        drop_none(
                            {
                                "Id": i.get("targetId") or UNKNOWN,
                                "Arn": i.get("arn"),
                                "RoleArn": i.get("roleArn"),
                                "Input": i.get("input"),
                                "InputPath": i.get("inputPath"),
                            }
                        )
                    ],
                }
            ),
        )
    ]
