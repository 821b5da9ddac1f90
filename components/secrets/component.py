"""StackSecrets: the SSM Parameter Store parameters the stack keeps for the secret values of its
config (`gateway.masterKey`, a service's `secrets.<NAME>` set with `pulumi config set --secret`).

Each value becomes one SecureString parameter named `/<project>/<stack>/<config path>`
(`parameter_name`); the value reaches Pulumi only as `Output.secret`, so the state and every
diff show it encrypted. Containers get it through their task definition's `secrets` (the ECS
agent reads it with the execution role at task start), never as plain environment.

Why Parameter Store and not Secrets Manager: ECS takes a parameter's ARN, which AWS forms from
its name, so the task definition is known on the first preview of a new stack (a Secrets
Manager ARN ends in six random characters AWS picks at creation, which left every container
definition naming one unknown, and the policy pack unable to judge it). The parameters use the
AWS managed key (`aws/ssm`), which needs no KMS grant; a value above 4 KB takes the Advanced
tier (up to 8 KB).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

import pulumi
import pulumi_aws as aws
from pulumi import Output

from ecs_inference.arns import arn_of, aws_context
from ecs_inference.contracts.aws_limits import SSM_STANDARD_PARAMETER_MAX_BYTES
from ecs_inference.secrets.refs import StackSecret, is_reference


def resource_suffix(path: str) -> str:
    """`platform.models.llama.secrets.HF_X` -> `models-llama-secrets-HF_X` (resource names)."""
    return re.sub(r"[^A-Za-z0-9_-]+", "-", path.removeprefix("platform.")).strip("-")


def parameter_name(path: str) -> str:
    """`/<project>/<stack>/models/llama/secrets/HF_X` for config `path`
    `platform.models.llama.secrets.HF_X`: unique per stack, readable in the console."""
    tail = re.sub(r"[^A-Za-z0-9_-]+", "/", path.removeprefix("platform.")).strip("/")
    return f"/{pulumi.get_project()}/{pulumi.get_stack()}/{tail}"


class StackSecrets(pulumi.ComponentResource):
    """One SecureString parameter per secret value of the config."""

    arns: dict[str, Output[str]]
    """Reference (`stack-secret:<config path>@<revision>`) -> the parameter's ARN, formed from
    its name (known at preview) and depending on the parameter."""
    parameters: dict[str, aws.ssm.Parameter]
    """Config path -> its parameter."""

    def __init__(
        self,
        name: str,
        secrets: Mapping[str, StackSecret],
        stack: str,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("ecs-inference:index:StackSecrets", name, None, opts)
        ctx = aws_context(self)
        self.arns = {}
        self.parameters = {}
        for path in sorted(secrets):
            secret = secrets[path]
            size = len(secret.value.encode())
            parameter = aws.ssm.Parameter(
                f"{name}-{resource_suffix(path)}",
                name=parameter_name(path),
                description=f"{path} of stack {stack} (set with `pulumi config set --secret`)",
                type="SecureString",
                value=Output.secret(secret.value),
                tier="Standard" if size <= SSM_STANDARD_PARAMETER_MAX_BYTES else "Advanced",
                opts=pulumi.ResourceOptions(parent=self),
            )
            self.parameters[path] = parameter
            self.arns[secret.reference] = arn_of(parameter, ctx)
        self.register_outputs({})

    def of(self, refs: Iterable[str]) -> dict[str, Output[str]]:
        """The ARNs of those of `refs` that name the stack's own secrets."""
        return {ref: self.arns[ref] for ref in refs if is_reference(ref)}
