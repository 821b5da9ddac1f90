"""What reading one ECS secret takes: the read itself, and the key that decrypts it.

`secrets[].valueFrom` (and `repositoryCredentials.credentialsParameter`) is a Secrets Manager
secret ARN, optionally followed by `:<json-key>:<version-stage>:<version-id>`, or an SSM
parameter ARN or name ("Pass sensitive data to an Amazon ECS container"). ECS calls
`secretsmanager:GetSecretValue` on the secret, or `ssm:GetParameters` on the parameter, with
the execution role. A secret or SecureString parameter under a customer managed key is
decrypted by the service on the role's behalf: `kms:Decrypt` with `kms:ViaService` of that
service, which both the role's policies and the key policy must allow. AWS managed keys
(`aws/secretsmanager`, `aws/ssm`) need no grant.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from tools.rehearsal.model import StackModel, document, known

SECRET = "aws:secretsmanager/secret:Secret"
SECRET_POLICY = "aws:secretsmanager/secretPolicy:SecretPolicy"
PARAMETER = "aws:ssm/parameter:Parameter"
KMS_KEY = "aws:kms/key:Key"
KMS_ALIAS = "aws:kms/alias:Alias"


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
