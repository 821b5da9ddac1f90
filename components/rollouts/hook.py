"""SmokeHook: the Lambda lifecycle hook ECS runs before a new revision takes production traffic.

One per endpoint, shared by its blue/green, canary and linear services (each service's
`hookDetails` carries its own URL, model and expectations). Creates, as children:
- the function, its code `components/rollouts/smoke.py` packaged as an asset archive (standard
  library plus the runtime's botocore), in the stack's private subnets;
- its own role: its log streams, the one client secret it reads, Lambda's VPC network interfaces;
- its log group (`/<project>/<stack>/smoke-hook`, with retention; the function logs there);
- its security group: HTTPS out only (the ALB inside the VPC, and Cognito's token endpoint,
  which is public and reached through the NAT gateway like the ALB reaches it); the ALB's group
  admits it on 443;
- its own Cognito client (client credentials, the invoke scope) and that client's secret in
  Secrets Manager, so the hook's credential is never an API client's and can be revoked alone.
ECS invokes the function with each service's infrastructure role (`lambda:InvokeFunction` on
this function only); no resource-based permission is needed within the account.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pulumi
import pulumi_aws as aws
from pulumi import Input, Output

from ecs_inference.arns import arn_of, aws_context
from ecs_inference.iam import LAMBDA_PRINCIPAL, assume_role_policy
from ecs_inference.network.rules import aws_api_egress
from ecs_inference.rollouts.decisions import SMOKE_LAMBDA_TIMEOUT_SECONDS
from ecs_inference.rollouts.spec import smoke_hook_policy
from ecs_inference.services.base import log_group_name

TOKEN = "ecs-inference:rollouts:SmokeHook"
HANDLER_FILE = "smoke.py"
HANDLER = "smoke.handler"
RUNTIME = "python3.12"
LOG_RETENTION_DAYS = 30
"""How long each smoke run's verdict line stays readable."""


def handler_source() -> str:
    """The hook's whole package: `smoke.py` as the repository holds it."""
    return (Path(__file__).parent / HANDLER_FILE).read_text()


class SmokeHook(pulumi.ComponentResource):
    """Attributes: `security_group`, `log_group`, `client`, `secret`, `role`, `function`."""

    security_group: aws.ec2.SecurityGroup
    log_group: aws.cloudwatch.LogGroup
    client: aws.cognito.UserPoolClient
    secret: aws.secretsmanager.Secret
    role: aws.iam.Role
    function: aws.lambda_.Function

    def __init__(
        self,
        name: str,
        *,
        vpc_id: Input[str],
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__(TOKEN, name, None, opts)
        self._name = name
        self.security_group = aws.ec2.SecurityGroup(
            f"{name}-sg",
            description="Smoke hook: HTTPS out only (the ALB, the token endpoint)",
            vpc_id=vpc_id,
            egress=[aws_api_egress()],
            opts=pulumi.ResourceOptions(parent=self),
        )

    def build(
        self,
        *,
        subnet_ids: Input[Sequence[str]],
        user_pool_id: Input[str],
        scope: str,
        depends_on: Sequence[pulumi.Resource],
    ) -> None:
        """The client, its secret, the role and the function (after the endpoint's Cognito)."""
        name, child = self._name, pulumi.ResourceOptions(parent=self)
        ctx = aws_context(self)
        self.client = aws.cognito.UserPoolClient(
            f"{name}-client",
            name=f"{name}-smoke",
            user_pool_id=user_pool_id,
            generate_secret=True,
            allowed_oauth_flows_user_pool_client=True,
            allowed_oauth_flows=["client_credentials"],
            allowed_oauth_scopes=[scope],
            supported_identity_providers=["COGNITO"],
            explicit_auth_flows=["ALLOW_REFRESH_TOKEN_AUTH"],
            enable_token_revocation=True,
            opts=pulumi.ResourceOptions(parent=self, depends_on=list(depends_on)),
        )
        self.secret = aws.secretsmanager.Secret(
            f"{name}-client-secret",
            description="The smoke hook's Cognito client secret (client-credentials grant)",
            opts=child,
        )
        version = aws.secretsmanager.SecretVersion(
            f"{name}-client-secret",
            secret_id=self.secret.id,
            secret_string=self.client.client_secret,
            opts=child,
        )
        self.log_group = aws.cloudwatch.LogGroup(
            f"{name}-logs",
            name=log_group_name("smoke-hook"),
            retention_in_days=LOG_RETENTION_DAYS,
            opts=child,
        )
        self.role = aws.iam.Role(
            f"{name}-role",
            description="Smoke hook: its logs, its client secret, its VPC interfaces",
            assume_role_policy=ctx.account_id.apply(
                lambda a: assume_role_policy(LAMBDA_PRINCIPAL, account_id=a)
            ),
            opts=child,
        )
        grant = aws.iam.RolePolicy(
            f"{name}-role",
            role=self.role.name,
            policy=Output.all(arn_of(self.log_group, ctx), self.secret.arn).apply(
                lambda a: smoke_hook_policy(log_group_arn=a[0], secret_arn=a[1])
            ),
            opts=child,
        )
        self.function = aws.lambda_.Function(
            f"{name}-function",
            description="ECS lifecycle hook: smoke-test a new revision through the test rule",
            runtime=RUNTIME,
            handler=HANDLER,
            code=pulumi.AssetArchive({HANDLER_FILE: pulumi.StringAsset(handler_source())}),
            role=self.role.arn,
            timeout=SMOKE_LAMBDA_TIMEOUT_SECONDS,
            architectures=["arm64"],
            # Autonamed: the log group is named here instead of Lambda's /aws/lambda/<name>.
            logging_config=aws.lambda_.FunctionLoggingConfigArgs(
                log_format="Text", log_group=self.log_group.name
            ),
            vpc_config=aws.lambda_.FunctionVpcConfigArgs(
                subnet_ids=subnet_ids, security_group_ids=[self.security_group.id]
            ),
            # Lambda checks the ENI permissions at creation; the version exists before a run.
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.log_group, grant, version]),
        )
        self.register_outputs({"functionArn": self.function.arn})
