"""What every service section shares (`models`, `rerankers`, `gateway`, `workers`): image,
counts, environment and secrets, log retention, customer-managed KMS keys, and the rules that keep
credentials out of plain environment and model hubs out of serving containers."""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from typing import Any, ClassVar, Generic, TypeVar

from pydantic import Field, field_validator, model_validator

from ecs_inference.config.base import SECRET_ARN_PATTERN, Image, Section, secret_value
from ecs_inference.contracts.aws_limits import CLOUDWATCH_LOG_RETENTION_DAYS
from ecs_inference.contracts.engine import (
    ENV_REGION_VARIABLES,
    HUB_OFFLINE_VARIABLES,
    HUB_TOKEN_VARIABLES,
)
from ecs_inference.contracts.vllm import ENV_API_KEY as VLLM_API_KEY
from ecs_inference.iam import KMS_KEY_ARN
from ecs_inference.rollouts.input import RolloutConfig, default_rollout
from ecs_inference.sizing.fargate import CpuArchitecture

ENV_NAME_PATTERN = re.compile(r"^[A-Z_][A-Z0-9_]*$")
# Environment names that look like credentials must come from Secrets Manager instead.
SECRET_NAME_HINT = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL)", re.IGNORECASE)
Size = TypeVar("Size", bound=int | None)
"""A Fargate section's `cpu` and `memoryMib`: always given (`int`) or chosen for a need."""
# The project's own bound on task counts: far above any service's need, low enough to catch a
# typo.
MAX_TASKS = 1000


class SecretKeysConfig(Section):
    """Customer-managed KMS keys of a service's `secrets` (none: secrets under the AWS-managed
    key need no KMS permission)."""

    secrets: list[str] = Field(default_factory=list)
    """Key ARNs of the `secrets`: the execution role gets kms:Decrypt on them, through Secrets
    Manager only."""

    @field_validator("secrets")
    @classmethod
    def _secrets(cls, arns: list[str]) -> list[str]:
        for arn in arns:
            if not KMS_KEY_ARN.match(arn):
                raise ValueError(
                    f"must be KMS key ARNs (arn:aws:kms:<region>:<account>:key/<id>), got {arn!r}"
                )
        return arns


class KmsKeysConfig(SecretKeysConfig):
    """Customer-managed KMS keys a served model's data is encrypted with (none: SSE-S3 objects
    and secrets under the AWS-managed key need no KMS permission)."""

    weights: str | None = None
    """Key ARN of the weights' (or re-ranker model's) SSE-KMS objects: the task role gets
    kms:Decrypt on it, through S3 only."""

    @field_validator("weights")
    @classmethod
    def _weights(cls, arn: str | None) -> str | None:
        if arn is not None and not KMS_KEY_ARN.match(arn):
            raise ValueError(
                f"must be a KMS key ARN (arn:aws:kms:<region>:<account>:key/<id>), got {arn!r}"
            )
        return arn


def vllm_api_key_message(section: str) -> str:
    return (
        f"{section}.{VLLM_API_KEY} would make vLLM reject every request: the ALB forwards the "
        "caller's Cognito token as `Authorization: Bearer`, which is not that key. Remove it; "
        "the ALB already authenticates every request"
    )


def _model_hub_message(section: str, name: str) -> str | None:
    """Why `section.name` would let a serving container download weights at start, or None."""
    if name not in HUB_TOKEN_VARIABLES:
        return None
    return (
        f"{name} is a Hugging Face Hub credential: it would let the container download weights "
        "from the hub at every task start (egress cost, rate limits, minutes of cold start). "
        f"Remove it from `{section}`, stage the weights in S3 or EFS and point `weightsUri` (a "
        "re-ranker's `modelUri`) at them; the serving images run with HF_HUB_OFFLINE=1"
    )


class ServiceConfig(Section):
    """The keys every service section has. A section's own defaults of these keys are its
    `DEFAULTS` (read into the schema, so the reference shows them), not a second declaration."""

    DEFAULTS: ClassVar[Mapping[str, object]] = {}
    """Field name -> this section's default, where it differs from the one declared here."""

    image: Image | None = None
    """Container image, pinned by tag or digest; unset: a model's or re-ranker's engine entry in
    `images`, else the stack's own build (`images.build`); the gateway's default is LiteLLM's
    pinned release (`contracts.litellm.VERSION`); a worker must set its own."""
    desired_count: int = Field(1, ge=0, le=MAX_TASKS)
    """Tasks at deploy time (autoscaling moves it within min..max)."""
    min_count: int = Field(1, ge=0, le=MAX_TASKS)
    """Autoscaling lower bound, at least 1 where the scaling metric is per task (target tracking
    has no data with zero tasks, so it could not scale out again); a worker's (queue backlog)
    may be 0: scale to zero on an empty queue."""
    max_count: int = Field(2, ge=1, le=MAX_TASKS)
    """Autoscaling upper bound."""
    environment: dict[str, str] = Field(default_factory=dict)
    """Plain settings for the container. Credentials are rejected here: use `secrets`."""
    secrets: dict[str, str] = Field(default_factory=dict)
    """Environment name -> a Secrets Manager secret ARN, or the secret's value itself set with
    `pulumi config set --secret --path 'ecs-inference:platform.<section>.<name>.secrets.<NAME>'
    <value>` (the stack keeps it in an SSM SecureString parameter of its own, and a new value
    rolls the service); injected by ECS at start, never as plain environment."""
    log_retention_days: int = 30
    """CloudWatch log retention in days: one of the values CloudWatch Logs accepts
    (`contracts/aws_limits.py` CLOUDWATCH_LOG_RETENTION_DAYS)."""
    kms_key_arns: SecretKeysConfig = Field(default_factory=SecretKeysConfig)
    """Customer-managed KMS keys of `secrets`."""

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        """Apply the section's own `DEFAULTS` to the fields declared here (and rebuild its
        schema with them): a default is stated once, in the section's table."""
        super().__pydantic_init_subclass__(**kwargs)
        if not (own := cls.__dict__.get("DEFAULTS")):
            return
        for name, default in own.items():
            field = copy.copy(cls.model_fields[name])
            field.default = default
            cls.model_fields[name] = field
        cls.model_rebuild(force=True)

    # Whether the service serves a model it loads at start (models, re-rankers): such a service
    # may not carry a model hub credential or turn the hub back on.
    SERVES_MODEL: ClassVar[bool] = False

    @field_validator("environment")
    @classmethod
    def _env(cls, values: dict[str, str]) -> dict[str, str]:
        for name, value in values.items():
            if not ENV_NAME_PATTERN.match(name):
                raise ValueError(f"{name!r} is not a valid environment variable name")
            if cls.SERVES_MODEL and (hub := _model_hub_message("environment", name)):
                raise ValueError(hub)
            if cls.SERVES_MODEL and name in HUB_OFFLINE_VARIABLES and value != "1":
                raise ValueError(
                    f"{name}={value!r} would let the container download weights from the "
                    "Hugging Face Hub at every task start; remove it (the serving images run "
                    "with HF_HUB_OFFLINE=1) and stage the weights in S3 or EFS (`weightsUri`, a "
                    "re-ranker's `modelUri`)"
                )
            if name == VLLM_API_KEY:
                raise ValueError(vllm_api_key_message("environment"))
            if name in ENV_REGION_VARIABLES:
                raise ValueError(
                    f"{name!r} is set by the stack to its own region (aws:region) in every "
                    "container; remove it here"
                )
            if SECRET_NAME_HINT.search(name):
                raise ValueError(
                    f"{name!r} looks like a credential: remove it here and give it as this "
                    f"service's `secrets.{name}` instead, its value set with `pulumi config "
                    "set --secret --path` (the stack keeps it in an SSM SecureString "
                    "parameter) or a Secrets Manager secret ARN"
                )
        return values

    @field_validator("log_retention_days")
    @classmethod
    def _retention(cls, days: int) -> int:
        if days not in CLOUDWATCH_LOG_RETENTION_DAYS:
            raise ValueError(
                f"{days} is not a CloudWatch retention value "
                f"({', '.join(map(str, sorted(CLOUDWATCH_LOG_RETENTION_DAYS)))})"
            )
        return days

    @field_validator("secrets")
    @classmethod
    def _secrets(cls, values: dict[str, str]) -> dict[str, str]:
        for name, arn in values.items():
            if not ENV_NAME_PATTERN.match(name):
                raise ValueError(f"{name!r} is not a valid environment variable name")
            if cls.SERVES_MODEL and (hub := _model_hub_message("secrets", name)):
                raise ValueError(hub)
            if not SECRET_ARN_PATTERN.match(arn):
                try:
                    secret_value(arn)
                except ValueError as exc:
                    raise ValueError(f"{name}: {exc}") from None
        return values

    # Whether the service's scaling metric has data with zero tasks (a queue backlog does; a
    # per-task metric such as ALBRequestCountPerTarget or average CPU does not).
    SCALES_FROM_ZERO: ClassVar[bool] = False

    @model_validator(mode="after")
    def _counts(self) -> ServiceConfig:
        if self.min_count == 0 and not self.SCALES_FROM_ZERO:
            # Target tracking on a per-task metric (ALBRequestCountPerTarget, the service's
            # average CPU) has no data points with zero tasks, so the alarm that would scale
            # out never fires: a service at 0 stays at 0 while requests get 503s.
            raise ValueError(
                "minCount 0 is not supported: target tracking scales on a per-task metric, "
                "which has no data with zero tasks, so the service could never scale back out; "
                "use minCount 1 or more"
            )
        if not self.min_count <= self.desired_count <= self.max_count:
            raise ValueError(
                f"need minCount <= desiredCount <= maxCount, got {self.min_count} <= "
                f"{self.desired_count} <= {self.max_count}"
            )
        return self


class ServedModelConfig(ServiceConfig):
    """The keys of a service that serves a model it loads at start (models, re-rankers): it may
    not carry a model hub credential or turn the hub back on, and its weights may be under a
    customer-managed key."""

    SERVES_MODEL: ClassVar[bool] = True

    kms_key_arns: KmsKeysConfig = Field(default_factory=KmsKeysConfig)
    """Customer-managed KMS keys of the weights bucket and of `secrets`."""
    rollout: RolloutConfig = Field(default_factory=default_rollout)
    """How a new revision replaces the old one: `rolling` (default), `blueGreen`, `canary` or
    `linear`, with the smoke test and bake time of the last three (docs/rollouts.md)."""


class FargateServiceConfig(ServiceConfig, Generic[Size]):
    """The keys of a service on Fargate (gateway, re-rankers, workers): its task size and
    architecture. `Size` is `int` where the section always has a size (its `DEFAULTS` give
    one), `int | None` where unset means chosen for a need (a re-ranker's)."""

    # The section's `DEFAULTS` state the size: None stays only where `Size` admits it.
    cpu: Size = None  # pyright: ignore[reportAssignmentType]
    """Fargate CPU units (1024 = 1 vCPU), with memoryMib a pair on the Fargate grid; unset (a
    re-ranker's default): chosen for the need."""
    memory_mib: Size = None  # pyright: ignore[reportAssignmentType]
    """Fargate memory in MiB (with cpu); unset (a re-ranker's default): chosen for the need."""
    cpu_architecture: CpuArchitecture = "ARM64"
    """Fargate CPU architecture: ARM64 (Graviton, cheaper) or X86_64 (needs an amd64 image);
    default ARM64."""

    @model_validator(mode="after")
    def _cpu_with_memory(self) -> FargateServiceConfig[Size]:
        if (self.cpu is None) != (self.memory_mib is None):
            raise ValueError("cpu and memoryMib must be given together")
        return self
