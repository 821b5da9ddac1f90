"""CloudWatch Logs: log groups and their retention."""

from __future__ import annotations

from collections.abc import Iterable

from ecs_inference.contracts.aws_limits import CLOUDWATCH_LOG_RETENTION_DAYS
from tools.aws_requests.registry import ApiRequest, Inputs, as_int, drop_none, maps, rule


@maps("aws:cloudwatch/logGroup:LogGroup")
def _log_group(i: Inputs, name: str | None) -> list[ApiRequest]:
    out = [
        ApiRequest(
            "logs",
            "CreateLogGroup",
            drop_none(
                {
                    "logGroupName": name,
                    "kmsKeyId": i.get("kmsKeyId"),
                    "tags": i.get("tags"),
                    "logGroupClass": i.get("logGroupClass"),
                }
            ),
        )
    ]
    days = i.get("retentionInDays")
    if days is not None and days != 0:
        out.append(
            ApiRequest(
                "logs", "PutRetentionPolicy", {"logGroupName": name, "retentionInDays": days}
            )
        )
    return out


@rule("aws:cloudwatch/logGroup:LogGroup")
def _log_retention(i: Inputs, _name: str | None) -> Iterable[str]:
    days = i.get("retentionInDays")
    if (
        isinstance(days, (int, float))
        and days != 0
        and as_int(days) not in CLOUDWATCH_LOG_RETENTION_DAYS
    ):
        allowed = sorted(CLOUDWATCH_LOG_RETENTION_DAYS)
        yield f"retentionInDays {as_int(days)} is not one of {allowed}"
