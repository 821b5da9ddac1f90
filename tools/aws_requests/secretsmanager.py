"""Secrets Manager: secrets."""

from __future__ import annotations

from tools.aws_requests.registry import ApiRequest, Inputs, drop_none, maps, tags


@maps("aws:secretsmanager/secret:Secret")
def _secret(i: Inputs, name: str | None) -> list[ApiRequest]:
    return [
        ApiRequest(
            "secretsmanager",
            "CreateSecret",
            drop_none(
                {
                    "Name": name,
                    "Description": i.get("description"),
                    "KmsKeyId": i.get("kmsKeyId"),
                    "Tags": tags(i.get("tags")),
                }
            ),
        )
    ]
