"""Route 53: record sets."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from tools.aws_requests.registry import ApiRequest, Inputs, drop_none, maps, rule


@maps("aws:route53/record:Record")
def _route53_record(i: Inputs, _name: str | None) -> list[ApiRequest]:
    alias = (i.get("aliases") or [None])[0]
    record = drop_none(
        {
            "Name": i.get("name"),
            "Type": i.get("type"),
            "TTL": i.get("ttl"),
            "ResourceRecords": [{"Value": v} for v in i.get("records") or []] or None,
            "AliasTarget": {
                "HostedZoneId": alias.get("zoneId"),
                "DNSName": alias.get("name"),
                "EvaluateTargetHealth": alias.get("evaluateTargetHealth"),
            }
            if isinstance(alias, Mapping)
            else None,
            "SetIdentifier": i.get("setIdentifier"),
        }
    )
    return [
        ApiRequest(
            "route53",
            "ChangeResourceRecordSets",
            {
                "HostedZoneId": i.get("zoneId"),
                "ChangeBatch": {"Changes": [{"Action": "CREATE", "ResourceRecordSet": record}]},
            },
        )
    ]


@rule("aws:route53/record:Record")
def _route53_record_limits(i: Inputs, _name: str | None) -> Iterable[str]:
    if i.get("aliases") and i.get("records"):
        yield "a record has either aliases or records, not both"
    if i.get("aliases") and i.get("ttl") is not None:
        yield "an alias record takes no ttl"
