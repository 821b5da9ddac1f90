"""StackSecrets: the Secrets Manager secrets the stack keeps for the secret values of its config
(`gateway.masterKey`, a service's `secrets.<NAME>` set with `pulumi config set --secret`).

Each value becomes one secret and its version; the value reaches Pulumi only as
`Output.secret`, and the version's `secretString` is an additional secret output, so the state
and every diff show it encrypted. Containers get it through their task definition's `secrets`
(the ECS agent reads it with the execution role at task start), never as plain environment.
The secrets use the AWS-managed key (`aws/secretsmanager`), which needs no KMS grant.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

import pulumi
import pulumi_aws as aws
from pulumi import Output

from ecs_inference.specs.secrets import StackSecret, is_reference


def resource_suffix(path: str) -> str:
    """`platform.models.llama.secrets.HF_X` -> `models-llama-secrets-HF_X` (resource names)."""
    return re.sub(r"[^A-Za-z0-9_-]+", "-", path.removeprefix("platform.")).strip("-")


class StackSecrets(pulumi.ComponentResource):
    """One Secrets Manager secret per secret value of the config."""

    arns: dict[str, Output[str]]
    """Reference (`stack-secret:<config path>`) -> the secret's ARN, resolved once its value
    is stored (a task definition naming it waits for the version)."""

    def __init__(
        self,
        name: str,
        secrets: Mapping[str, StackSecret],
        stack: str,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("ecs-inference:index:StackSecrets", name, None, opts)
        self.arns = {}
        for path in sorted(secrets):
            secret = secrets[path]
            suffix = resource_suffix(path)
            stored = aws.secretsmanager.Secret(
                f"{name}-{suffix}",
                description=f"{path} of stack {stack} (set with `pulumi config set --secret`)",
                opts=pulumi.ResourceOptions(parent=self),
            )
            version = aws.secretsmanager.SecretVersion(
                f"{name}-{suffix}",
                secret_id=stored.id,
                secret_string=Output.secret(secret.value),
                opts=pulumi.ResourceOptions(
                    parent=self, additional_secret_outputs=["secretString"]
                ),
            )
            self.arns[secret.reference] = Output.all(stored.arn, version.id).apply(
                lambda a: str(a[0])
            )
        self.register_outputs({})

    def of(self, refs: Iterable[str]) -> dict[str, Output[str]]:
        """The ARNs of those of `refs` that name the stack's own secrets."""
        return {ref: self.arns[ref] for ref in refs if is_reference(ref)}
