"""What reading one ECS secret takes: the read itself, and the key that decrypts it.

`secrets[].valueFrom` (and `repositoryCredentials.credentialsParameter`) is a Secrets Manager
secret ARN, optionally followed by `:<json-key>:<version-stage>:<version-id>`, or an SSM
parameter ARN or name ("Pass sensitive data to an Amazon ECS container"). ECS calls
`secretsmanager:GetSecretValue` on the secret, or `ssm:GetParameters` on the parameter, with
the execution role. A secret or SecureString parameter under a customer managed key is
decrypted by the service on the role's behalf: `kms:Decrypt` with `kms:ViaService` of that
service, which both the role's policies and the key policy must allow. AWS managed keys
(`aws/secretsmanager`, `aws/ssm`) need no grant.

ECS resolves `secrets` once, when the container starts: "If the secret is subsequently updated
or rotated, the container will not receive the updated value automatically" (same page). A
password from a secret that rotates therefore goes stale in every running task; the secret RDS
manages for a database's master user rotates every seven days by default ("Password management
with Amazon RDS and AWS Secrets Manager"), so a task given its password loses the database at
the first rotation (`stale_password`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from tools.rehearsal.model import StackModel, document, known, listify

SECRET = "aws:secretsmanager/secret:Secret"
SECRET_POLICY = "aws:secretsmanager/secretPolicy:SecretPolicy"
PARAMETER = "aws:ssm/parameter:Parameter"
KMS_KEY = "aws:kms/key:Key"
KMS_ALIAS = "aws:kms/alias:Alias"
RDS_MANAGED = ("aws:rds/cluster:Cluster", "aws:rds/instance:Instance")
"""Resources whose `masterUserSecrets` (with `manageMasterUserPassword`) RDS rotates."""


@dataclass(frozen=True)
class Read:
    action: str
    resource: str
    resource_policy: Any = None
    context: Mapping[str, str] = field(default_factory=dict)


def kms_key(model: StackModel, ref: Any) -> Any:
    """The stack's KMS key resource for a key ARN, id, alias name or alias ARN (None: AWS
    managed, or a key this stack does not own)."""
    if not known(ref) or not ref:
        return None
    text = str(ref)
    alias_name = text.split(":", 5)[-1] if text.startswith("arn:") and ":alias/" in text else text
    if alias_name.startswith("alias/"):
        alias = model.by_name(alias_name, KMS_ALIAS)
        return kms_key(model, alias.inputs.get("targetKeyId")) if alias is not None else None
    for key in model.of(KMS_KEY):
        arn = model.output(key, "arn")
        if text in (arn, str(arn).rsplit("/", 1)[-1]):
            return key
    return None


def decrypt(model: StackModel, key_ref: Any, service: str) -> Iterator[Read | str]:
    """kms:Decrypt through `service` on the key `key_ref` names, or why that cannot be checked.
    No key (an input left unset) is the service's AWS-managed key, which needs no grant."""
    if key_ref is None or key_ref == "":
        return
    if not known(key_ref):
        yield "its KMS key is unknown at preview"
        return
    if not key_ref or str(key_ref).startswith(("alias/aws/", "aws/")):
        return
    key = kms_key(model, key_ref)
    if key is None:
        yield f"KMS key {key_ref} is not in this stack: its key policy cannot be checked"
        return
    policy = document(key.inputs.get("policy"))
    yield Read(
        "kms:Decrypt",
        str(model.output(key, "arn")),
        resource_policy=policy if known(policy) else None,
        context={"kms:ViaService": f"{service}.{model.region}.amazonaws.com"},
    )


def secret_reads(model: StackModel, value_from: Any) -> Iterator[Read | str]:
    """The reads `value_from` takes, or the reason (a str) one cannot be checked."""
    if not known(value_from) or not isinstance(value_from, str):
        yield "a secret's valueFrom is unknown at preview"
        return
    if value_from.startswith("arn:") and ":secretsmanager:" in value_from:
        arn = ":".join(value_from.split(":")[:7])
        secret = model.by_arn(arn, SECRET)
        policy = next(
            (
                document(p.inputs.get("policy"))
                for p in model.of(SECRET_POLICY)
                if p.inputs.get("secretArn") == arn
            ),
            None,
        )
        yield Read("secretsmanager:GetSecretValue", arn, resource_policy=policy)
        if secret is not None:
            yield from decrypt(model, secret.inputs.get("kmsKeyId"), "secretsmanager")
        return
    if value_from.startswith("arn:") and ":ssm:" in value_from:
        arn = value_from
        name = "/" + arn.split(":parameter/", 1)[-1]
    else:
        name = value_from if value_from.startswith("/") else f"/{value_from}"
        arn = model.arn("ssm", f"parameter{name}")
    yield Read("ssm:GetParameters", arn)
    parameter = model.by_name(name, PARAMETER) or model.by_name(name.lstrip("/"), PARAMETER)
    if parameter is not None and parameter.inputs.get("type") == "SecureString":
        yield from decrypt(model, parameter.inputs.get("keyId"), "ssm")


def stale_password(model: StackModel, value_from: Any) -> str | None:
    """Why the value `value_from` injects goes stale in a running task (None: it does not, as
    far as the stack shows): the whole master user secret RDS manages for one of the stack's
    databases, or its `password` key. Its `username` key never changes."""
    if (
        not known(value_from)
        or not isinstance(value_from, str)
        or ":secretsmanager:" not in value_from
    ):
        return None
    parts = value_from.split(":")
    arn, json_key = ":".join(parts[:7]), (parts[7] if len(parts) > 7 else "")
    if json_key not in ("", "password"):
        return None
    for db in model.of(*RDS_MANAGED):
        for secret in listify(model.output(db, "masterUserSecrets")):
            if isinstance(secret, Mapping) and secret.get("secretArn") == arn:
                return (
                    f"{arn} is the master user secret RDS manages for {db.name} and rotates "
                    "(every 7 days by default), but ECS reads secrets only at task start: "
                    "running tasks keep the old password and lose the database at the first "
                    "rotation (log in with IAM database authentication, or read the secret at "
                    "run time)"
                )
    return None
