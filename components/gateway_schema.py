"""Config sections of issue 17: `platform.gateway` (optional, one per stack) and
`platform.workers.<name>`.

Same conventions as `components.config`: camelCase keys, unknown keys rejected, frozen; checks
that need other sections (routes to models that exist, a worker needs the gateway) run in
`components.gateway_plan`, before any resource.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from components.config import SECRET_ARN_PATTERN, Image, Name, _Section, _ServiceBase
from components.gateway_config import LITELLM_VERSION

DEFAULT_GATEWAY_IMAGE = f"ghcr.io/berriai/litellm:main-v{LITELLM_VERSION}"
"""LiteLLM's published proxy image at the release the tests load configs with (multi-arch, so
ARM64 Fargate runs it). Mirror it to ECR and pin the digest for production."""


def _secret_arn(value: str | None) -> str | None:
    if value is not None and not SECRET_ARN_PATTERN.match(value):
        raise ValueError(f"must be a Secrets Manager secret ARN, got {value!r}")
    return value


class BedrockConfig(_Section):
    """Amazon Bedrock models the gateway also routes to. Default: none."""

    region: str | None = None
    """Region whose Bedrock endpoint serves the models (model access is granted per region).
    Required when `models` is not empty."""
    models: dict[str, str] = Field(default_factory=dict)
    """Gateway model name -> Bedrock model id (`anthropic.claude-3-5-haiku-20241022-v1:0`) or
    system inference profile id (`us.anthropic...`). The task role may invoke exactly these."""


class GatewayDatabaseConfig(_Section):
    """LiteLLM's PostgreSQL (Aurora Serverless v2, private subnets): virtual keys, per-team
    budgets and rate limits, spend logs. Off by default."""

    enabled: bool = False
    """Create the database and point LiteLLM at it."""
    min_capacity_acu: float = Field(default=0.5, ge=0, le=256)
    """Aurora Serverless v2 minimum capacity (ACUs; 0 lets it pause when idle)."""
    max_capacity_acu: float = Field(default=4.0, ge=1, le=256)
    """Aurora Serverless v2 maximum capacity (ACUs)."""
    salt_key_secret_arn: str | None = None
    """Secrets Manager secret holding LITELLM_SALT_KEY (encrypts stored credentials; never
    rotate it). Required when enabled."""

    @field_validator("salt_key_secret_arn")
    @classmethod
    def _salt(cls, value: str | None) -> str | None:
        return _secret_arn(value)

    @model_validator(mode="after")
    def _needs_salt(self) -> GatewayDatabaseConfig:
        if self.enabled and self.salt_key_secret_arn is None:
            raise ValueError("enabled needs `saltKeySecretArn` (LiteLLM's LITELLM_SALT_KEY)")
        if self.min_capacity_acu > self.max_capacity_acu:
            raise ValueError("minCapacityAcu must not exceed maxCapacityAcu")
        return self


class GatewayConfig(_ServiceBase):
    """LiteLLM's proxy on Fargate: one OpenAI-compatible endpoint for every model service (and
    optional Bedrock models), behind the same ALB and authentication on its own path.

    Defaults: path `gateway`, ARM64, 1 vCPU / 2 GB, 2..4 tasks scaling on CPU at 60 %, routes to
    every model service under its served model name, no Bedrock, no database.
    """

    image: Image | None = DEFAULT_GATEWAY_IMAGE
    """LiteLLM proxy image; default the pinned release's (`LITELLM_VERSION`)."""
    path: Name = "gateway"
    """ALB path prefix (`/<path>/v1/chat/completions`); must not be a service name."""
    master_key_secret_arn: str
    """Secrets Manager secret holding LITELLM_MASTER_KEY (`sk-...`), the admin key clients send
    in `x-litellm-api-key` (the ALB's JWT stays in `Authorization`)."""
    routes: dict[str, str] | None = None
    """Gateway model name -> model service key; default every model service under its served
    model name."""
    bedrock: BedrockConfig = Field(default_factory=BedrockConfig)
    """Bedrock models routed next to the stack's own."""
    database: GatewayDatabaseConfig = Field(default_factory=GatewayDatabaseConfig)
    """LiteLLM's database (off by default)."""
    cpu: int = 1024
    """Fargate CPU units (with memoryMib, on the Fargate grid)."""
    memory_mib: int = 2048
    """Fargate memory in MiB."""
    cpu_architecture: Literal["ARM64", "X86_64"] = "ARM64"
    """Fargate CPU architecture."""
    desired_count: int = Field(2, ge=0, le=1000)
    """Tasks at deploy time (two: one per AZ)."""
    min_count: int = Field(2, ge=0, le=1000)
    """Autoscaling lower bound."""
    max_count: int = Field(4, ge=1, le=1000)
    """Autoscaling upper bound."""
    target_cpu_percent: float = Field(60.0, ge=10, le=90)
    """Target tracking on average CPU (the proxy is async I/O; CPU follows request rate)."""

    @field_validator("master_key_secret_arn")
    @classmethod
    def _master(cls, value: str) -> str:
        return _secret_arn(value) or value


class WorkerConfig(_ServiceBase):
    """A queue worker on Fargate: the user's image takes jobs from its own SQS queue (with a
    dead-letter queue) and calls models through the gateway (`GATEWAY_URL`, `QUEUE_URL`
    injected). It scales on backlog per task, to zero when the queue is empty.

    Defaults: ARM64, 0.25 vCPU / 512 MiB, one job at a time, 0..10 tasks, 3 receives before the
    DLQ, 4 days retention, scale to zero after 15 idle minutes.
    """

    image: Image | None = None
    """The worker's image (pinned by tag or digest). Required."""
    max_job_seconds: int = Field(ge=1)
    """Longest job; the queue's visibility timeout is derived from it (SQS allows at most 12 h
    in total)."""
    job_seconds: float = Field(gt=0)
    """Typical time per job (sets the backlog a task may hold)."""
    acceptable_latency_seconds: float = Field(gt=0)
    """How long a job may wait before it starts; with jobSeconds it sets the scaling target."""
    concurrency: int = Field(1, ge=1, le=1000)
    """Jobs one task works on at once."""
    cpu: int = 256
    """Fargate CPU units (with memoryMib, on the Fargate grid)."""
    memory_mib: int = 512
    """Fargate memory in MiB."""
    cpu_architecture: Literal["ARM64", "X86_64"] = "ARM64"
    """Fargate CPU architecture (X86_64 needs an amd64 image)."""
    desired_count: int = Field(0, ge=0, le=1000)
    """Tasks at deploy time; the queue decides afterwards."""
    min_count: int = Field(0, ge=0, le=1000)
    """Autoscaling lower bound (0: scale to zero on an empty queue)."""
    max_count: int = Field(10, ge=1, le=1000)
    """Autoscaling upper bound."""
    max_receive_count: int = Field(3, ge=1, le=1000)
    """Receives before a message moves to the dead-letter queue."""
    retention_seconds: int = Field(345_600, ge=60, le=1_209_600)
    """How long an unprocessed message is kept (the DLQ keeps messages 14 days)."""
    idle_minutes: int = Field(15, ge=1, le=1440)
    """Minutes with nothing waiting or in flight before scaling to zero."""
    kms_key_id: str | None = None
    """KMS key for queue encryption; default SQS-managed keys (SSE-SQS)."""

    @model_validator(mode="after")
    def _worker(self) -> WorkerConfig:
        if self.image is None:
            raise ValueError("a worker needs `image`: its own image, pinned by tag or digest")
        return self
