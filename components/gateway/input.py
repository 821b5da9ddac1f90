"""`platform.gateway`: the AI gateway (LiteLLM's proxy on Fargate), its Bedrock routes and its
database.

`GatewayConfig` is both the stack file's section (camelCase keys) and the Python input of
`LiteLLMGateway` (its `database`, of `GatewayDatabase`): a program that builds one gets the same
validators as the stack file."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, ClassVar

from pydantic import AfterValidator, Field, field_validator, model_validator

from ecs_inference.config.base import Name, Section, secret_arn, secret_value
from ecs_inference.contracts import aws_limits, litellm
from ecs_inference.services.input import FargateServiceConfig

_ACU_MAX = aws_limits.AURORA_SERVERLESS_V2_ACU_MAX
SecretArn = Annotated[str | None, AfterValidator(secret_arn)]


class BedrockConfig(Section):
    """Amazon Bedrock models the gateway also routes to."""

    region: str | None = None
    """Region whose Bedrock endpoint serves the models (model access is granted per region).
    Required when `models` is not empty."""
    models: dict[str, str] = Field(default_factory=dict)
    """Gateway model name -> Bedrock model id (`amazon.nova-lite-v1:0`) or
    system inference profile id (`us.anthropic...`). The task role may invoke exactly these."""


class GatewayDatabaseConfig(Section):
    """LiteLLM's PostgreSQL (Aurora Serverless v2, private subnets): virtual keys, per-team
    budgets and rate limits, spend logs."""

    enabled: bool = False
    """Create the database and point LiteLLM at it."""
    min_capacity_acu: float = Field(default=0.5, ge=0, le=_ACU_MAX)
    """Aurora Serverless v2 minimum capacity (ACUs; 0 lets it pause when idle); default 0.5."""
    max_capacity_acu: float = Field(default=4.0, ge=1, le=_ACU_MAX)
    """Aurora Serverless v2 maximum capacity (ACUs); default 4."""
    salt_key_secret_arn: SecretArn = None
    """Secrets Manager secret holding LITELLM_SALT_KEY (encrypts stored credentials; never
    rotate it). With `enabled`, this or `saltKey`."""
    salt_key: Annotated[str | None, AfterValidator(secret_value)] = None
    """LITELLM_SALT_KEY itself, set with `pulumi config set --secret --path
    'ecs-inference:platform.gateway.database.saltKey' <value>`: the stack keeps it in an SSM
    SecureString parameter of its own. With `enabled`, this or `saltKeySecretArn`."""

    @model_validator(mode="after")
    def _needs_salt(self) -> GatewayDatabaseConfig:
        if self.salt_key is not None and self.salt_key_secret_arn is not None:
            raise ValueError("set `saltKey` or `saltKeySecretArn`, not both")
        if self.enabled and self.salt_key is None and self.salt_key_secret_arn is None:
            raise ValueError(
                "with `enabled`, LiteLLM's salt key is required but missing: set `saltKey` "
                "(LITELLM_SALT_KEY itself, with `pulumi config set --secret`) or "
                "`saltKeySecretArn`"
            )
        if self.min_capacity_acu > self.max_capacity_acu:
            raise ValueError("minCapacityAcu must not exceed maxCapacityAcu")
        return self


class GatewayConfig(FargateServiceConfig[int]):
    """LiteLLM's proxy on Fargate: one OpenAI-compatible endpoint for every model service (and
    optional Bedrock models), behind the same ALB and authentication on its own path."""

    DEFAULTS: ClassVar[Mapping[str, object]] = {
        "image": litellm.IMAGE,
        "cpu": 1024,
        "memory_mib": 2048,
        # Two tasks: one per AZ.
        "desired_count": 2,
        "min_count": 2,
        "max_count": 4,
    }
    path: Name = "gateway"
    """ALB path prefix (`/<path>/v1/chat/completions`) and Service Connect name; must not be a
    service name; default `gateway`."""
    master_key_secret_arn: SecretArn = None
    """Secrets Manager secret holding LITELLM_MASTER_KEY (`sk-...`), the admin key clients send
    in `x-litellm-api-key` (the ALB's JWT stays in `Authorization`). This or `masterKey`."""
    master_key: str | None = None
    """LITELLM_MASTER_KEY itself (`sk-...`), set with `pulumi config set --secret --path
    'ecs-inference:platform.gateway.masterKey' sk-...`: the stack keeps it in an SSM
    SecureString parameter of its own (a new value rolls the gateway). This or
    `masterKeySecretArn`."""
    routes: dict[str, str] | None = None
    """Gateway model name -> model service key, or `<service>/<adapter name>` for one of a vLLM
    service's LoRA adapters; unset: every model service under its served model name, and each
    adapter under its own name."""
    bedrock: BedrockConfig = Field(default_factory=BedrockConfig)
    """Bedrock models routed next to the stack's own."""
    database: GatewayDatabaseConfig = Field(default_factory=GatewayDatabaseConfig)
    """LiteLLM's database."""
    target_cpu_percent: float = Field(60.0, ge=10, le=90)
    """Target tracking on average CPU, in percent (the proxy is async I/O; CPU follows request
    rate); default 60."""

    @field_validator("master_key")
    @classmethod
    def _master_value(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(litellm.MASTER_KEY_PREFIX):
            # LiteLLM refuses a key that does not start so ("expected to start with 'sk-'").
            raise ValueError(f"must start with {litellm.MASTER_KEY_PREFIX!r}, as LiteLLM keys do")
        return secret_value(value)

    @model_validator(mode="after")
    def _one_master_key(self) -> GatewayConfig:
        if self.master_key is not None and self.master_key_secret_arn is not None:
            raise ValueError("set `masterKey` or `masterKeySecretArn`, not both")
        if self.master_key is None and self.master_key_secret_arn is None:
            raise ValueError(
                "LiteLLM's master key is required but missing: set `masterKey` "
                "(LITELLM_MASTER_KEY itself, with `pulumi config set --secret`) or "
                "`masterKeySecretArn` (a Secrets Manager secret holding it)"
            )
        return self

    @property
    def master_key_path(self) -> str:
        """The config path of the master key, whichever way it is given."""
        key = "masterKey" if self.master_key is not None else "masterKeySecretArn"
        return f"platform.gateway.{key}"
