"""`platform.rerankers.<name>`: a CPU cross-encoder re-ranker on Fargate.

`RerankerConfig` is both the stack file's section (camelCase keys) and the Python input of
`FargateReranker`: a program that builds one gets the same validators as the stack file."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from ecs_inference.config.base import S3Uri
from ecs_inference.contracts import reranker as contract
from ecs_inference.rollouts.input import RerankerRolloutConfig, default_reranker_rollout
from ecs_inference.services.input import FargateServiceConfig, ServedModelConfig
from ecs_inference.sizing.lora import TransformerShape

_REFERENCE = contract.REFERENCE_MODEL


class RerankerModelConfig(TransformerShape):
    """What the served cross-encoder is: the facts of its config.json that decide its work per
    token, memory and longest input. `prepare.py` writes this section into the bundle's
    reranker.json (`stack_model`); the defaults are all-MiniLM-L6-v2's."""

    name: str = _REFERENCE.name
    """Shown in the plan's decisions (e.g. the model's hub name)."""
    model_type: str = _REFERENCE.model_type
    """config.json `model_type`: one of the families the image serves (`bert`, `xlm-roberta`,
    `modernbert`, `deberta-v2`, `electra`)."""
    num_hidden_layers: int = Field(default=_REFERENCE.layers, ge=1, le=128)
    """config.json `num_hidden_layers`."""
    hidden_size: int = Field(default=_REFERENCE.hidden, ge=8, le=16384)
    """config.json `hidden_size`."""
    num_attention_heads: int = Field(default=_REFERENCE.heads, ge=1, le=256)
    """config.json `num_attention_heads` (divides hiddenSize)."""
    intermediate_size: int = Field(default=_REFERENCE.intermediate, ge=8, le=65536)
    """config.json `intermediate_size` (the FFN width)."""
    vocab_size: int = Field(default=_REFERENCE.vocab, ge=8, le=1_000_000)
    """config.json `vocab_size` (decides the embedding table's memory)."""
    max_length: int = Field(default=_REFERENCE.max_length, ge=8, le=65536)
    """Longest input the bundle scores, tokens (reranker.json `max_length`; at most the
    model's usable positions)."""

    @field_validator("model_type")
    @classmethod
    def _served(cls, value: str) -> str:
        if (problem := contract.family_problem(value)) is not None:
            raise ValueError(problem)
        return value

    @model_validator(mode="after")
    def _heads(self) -> RerankerModelConfig:
        if self.hidden_size % self.num_attention_heads:
            raise ValueError(
                f"hiddenSize {self.hidden_size} is not a multiple of numAttentionHeads "
                f"{self.num_attention_heads}: copy both from the model's config.json"
            )
        return self

    def encoder(self) -> contract.EncoderModel:
        """The image contract's description of this model."""
        return contract.EncoderModel(
            model_type=self.model_type,
            layers=self.num_hidden_layers,
            hidden=self.hidden_size,
            heads=self.num_attention_heads,
            intermediate=self.intermediate_size,
            vocab=self.vocab_size,
            max_length=self.max_length,
            name=self.name,
        )


class RerankerConfig(ServedModelConfig, FargateServiceConfig[int | None]):
    """A CPU cross-encoder re-ranker on Fargate.

    Give `cpu` and `memoryMib` exactly (validated against the Fargate grid), or a need
    (`needMemoryMib`, `needVcpu`) and the cheapest valid size is chosen.
    """

    DEFAULTS: ClassVar[Mapping[str, object]] = {
        "cpu_architecture": contract.CPU_ARCHITECTURE,
        # Fargate capacity is not scarce and the image starts in about a minute (S3 staging,
        # ONNX session), so a re-ranker runs more copies than a model by default.
        "desired_count": 2,
        "max_count": 4,
    }

    model_uri: S3Uri
    """S3 prefix with the exported ONNX model and tokenizer (staged into the task at start)."""
    rollout: RerankerRolloutConfig = Field(  # pyright: ignore[reportIncompatibleVariableOverride]
        default_factory=default_reranker_rollout
    )
    """How a new revision replaces the old one (as a model's `rollout`); its smoke test ranks a
    query's documents."""
    model: RerankerModelConfig = Field(default_factory=RerankerModelConfig)
    """The model at `modelUri` (its reranker.json `stack_model`): sizes admission, throughput,
    memory and the Fargate task; default all-MiniLM-L6-v2."""
    need_memory_mib: int = Field(2048, gt=0)
    """Memory the task needs; the cheapest grid size that fits it and the model's memory floor
    (`contracts/reranker.py` EncoderModel.memory_floor_mib: runtime plus two copies of the fp32
    weights, within 75 % of the task, at least 1024 MiB) is chosen. A MiniLM-class
    cross-encoder with ONNX Runtime stays well under 1 GiB resident; 2 GiB (the default)
    leaves room for request bursts."""
    need_vcpu: float = Field(1.0, gt=0)
    """vCPUs the task needs; the cheapest grid size that fits is chosen; default 1."""
    platform_version: str = "LATEST"
    """Fargate platform version; 8 vCPU and above need 1.4.0 or LATEST; default LATEST."""
    scaling_metric: Literal["requestCount", "cpu"] = "requestCount"
    """ALBRequestCountPerTarget or ECSServiceAverageCPUUtilization; default requestCount."""
    scaling_target: float = Field(100.0, gt=0)
    """Requests per task per minute, or average CPU %; default 100."""
    max_request_seconds: int = Field(30, ge=1, le=600)
    """Longest request in seconds (default 30); sets the deregistration delay and the
    service's own request timeout."""

    @model_validator(mode="after")
    def _size(self) -> RerankerConfig:
        exact = {"cpu", "memory_mib"} & self.model_fields_set
        need = {"need_memory_mib", "need_vcpu"} & self.model_fields_set
        if exact and need:
            raise ValueError("give either cpu + memoryMib, or needMemoryMib/needVcpu, not both")
        if self.scaling_metric == "cpu" and not 1 <= self.scaling_target <= 100:
            raise ValueError("scalingTarget for the cpu metric is a percentage (1-100)")
        return self
