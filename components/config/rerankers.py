"""`platform.rerankers`: CPU cross-encoder re-rankers on Fargate."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from ecs_inference.config.base import S3Uri
from ecs_inference.config.services import MAX_TASKS, ServedModelConfig
from ecs_inference.specs.service import RerankerSpec


class RerankerConfig(ServedModelConfig):
    """A CPU cross-encoder re-ranker on Fargate.

    Give `cpu` and `memoryMib` exactly (validated against the Fargate grid), or a need
    (`needMemoryMib`, `needVcpu`) and the cheapest valid size is chosen.
    """

    model_uri: S3Uri
    """S3 prefix with the exported ONNX model and tokenizer (staged into the task at start)."""
    cpu: int | None = None
    """Exact Fargate CPU units (with memoryMib), validated against the grid."""
    memory_mib: int | None = None
    """Exact Fargate memory in MiB (with cpu)."""
    need_memory_mib: int = Field(2048, gt=0)
    """Memory the task needs; the cheapest grid size that fits it and the image's floor
    (`contracts/reranker.py` MIN_MEMORY_MIB) is chosen. A MiniLM-class
    cross-encoder with ONNX Runtime stays well under 1 GiB resident; 2 GiB leaves room for
    request bursts."""
    need_vcpu: float = Field(1.0, gt=0)
    """vCPUs the task needs; the cheapest grid size that fits is chosen."""
    cpu_architecture: Literal["ARM64", "X86_64"] = RerankerSpec.cpu_architecture
    """Graviton (cheaper for small CPU models) or x86_64."""
    platform_version: str = RerankerSpec.platform_version
    """Fargate platform version; 8 vCPU and above need 1.4.0 or LATEST."""
    desired_count: int = Field(RerankerSpec.desired_count, ge=0, le=MAX_TASKS)
    """Tasks at deploy time."""
    min_count: int = Field(RerankerSpec.min_count, ge=0, le=MAX_TASKS)
    """Autoscaling lower bound, at least 1: no supported scaling metric can scale out from zero
    tasks (target tracking on a per-task metric has no data then)."""
    max_count: int = Field(RerankerSpec.max_count, ge=1, le=MAX_TASKS)
    """Autoscaling upper bound."""
    scaling_metric: Literal["requestCount", "cpu"] = RerankerSpec.scaling_metric
    """ALBRequestCountPerTarget or ECSServiceAverageCPUUtilization."""
    scaling_target: float = Field(RerankerSpec.scaling_target, gt=0)
    """Requests per target per minute, or average CPU %."""
    max_request_seconds: int = Field(30, ge=1, le=600)
    """Longest request; sets the deregistration delay."""

    @model_validator(mode="after")
    def _size(self) -> RerankerConfig:
        exact = {"cpu", "memory_mib"} & self.model_fields_set
        need = {"need_memory_mib", "need_vcpu"} & self.model_fields_set
        if exact and need:
            raise ValueError("give either cpu + memoryMib, or needMemoryMib/needVcpu, not both")
        if (self.cpu is None) != (self.memory_mib is None):
            raise ValueError("cpu and memoryMib must be given together")
        if self.scaling_metric == "cpu" and not 1 <= self.scaling_target <= 100:
            raise ValueError("scalingTarget for the cpu metric is a percentage (1-100)")
        return self
