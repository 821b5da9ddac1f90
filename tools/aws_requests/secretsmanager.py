"""Secrets Manager: secrets and their values."""

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


@maps("aws:secretsmanager/secretVersion:SecretVersion")
def _secret_version(i: Inputs, name: str | None) -> list[ApiRequest]:
    return [
        ApiRequest(
            "secretsmanager",
            "PutSecretValue",
            drop_none(
                {
                    "SecretId": i.get("secretId"),
                    "SecretString": i.get("secretString"),
                    "SecretBinary": i.get("secretBinary"),
                    "VersionStages": i.get("versionStages"),
                }
            ),
        )
    ]
