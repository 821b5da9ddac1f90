"""Container contract of the re-ranker image, shared with the Pulumi `FargateReranker` component.

Stdlib only, so the component can import it without pulling the service's runtime (ONNX Runtime,
tokenizers, FastAPI) into the Pulumi program. The service reads its settings through the same
names (`app/settings.py`), so a renamed variable breaks both sides at once instead of silently
leaving the task definition setting a variable nobody reads.

What the task definition must do:
- map container port `PORT` (tcp); the ALB target group is of type ip (awsvpc) and health-checks
  `HEALTH_PATH`, which answers 503 while the model is being staged/loaded and 200 once it serves;
- give the task role `s3:GetObject` + `s3:ListBucket` on `MODEL_S3_URI` (the model is staged from
  S3 at start, never from a model hub) and set the environment variables below as needed;
- set the container `stopTimeout` to `STOP_TIMEOUT_SECONDS` (ECS sends SIGTERM, waits that long,
  then SIGKILL); the service drains within `DRAIN_TIMEOUT_SECONDS`, which is smaller;
- set KEEP_ALIVE_SECONDS above the ALB idle timeout (else the ALB reuses a closed connection
  and clients see sporadic 502s);
- use a health-check grace period of at least `STARTUP_GRACE_SECONDS` (S3 staging + load);
- size memory for the resident model: `MIN_MEMORY_MIB` covers MiniLM-class models.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Final

#: Container port the service listens on (all interfaces; awsvpc gives the task its own ENI).
PORT: Final[int] = 8080
#: Liveness/readiness path: 503 until the model is loaded (and again while draining), then 200.
HEALTH_PATH: Final[str] = "/health"
#: Prometheus text exposition.
METRICS_PATH: Final[str] = "/metrics"
#: Cohere/Jina compatible rerank endpoint.
RERANK_PATH: Final[str] = "/v1/rerank"

#: ECS container `stopTimeout` the component must set. Fargate allows at most 120 s; 30 s is
#: the ECS default, kept explicit so the drain budget below is guaranteed to fit inside it.
STOP_TIMEOUT_SECONDS: Final[int] = 30
#: How long the service waits for in-flight requests after SIGTERM before exiting (< stop timeout,
#: leaving headroom for process exit before ECS escalates to SIGKILL).
DRAIN_TIMEOUT_SECONDS: Final[int] = 20
#: Minimum health-check grace period: S3 staging of a ~90 MB model plus ONNX session creation.
STARTUP_GRACE_SECONDS: Final[int] = 60
#: Memory floor (MiB) for a MiniLM-class model: weights, ORT arenas, Python and the web stack.
MIN_MEMORY_MIB: Final[int] = 1024
#: The image is built for this Fargate `runtimePlatform.cpuArchitecture`.
CPU_ARCHITECTURE: Final[str] = "ARM64"

# Environment variable names (the keys of ENV_DEFAULTS).
ENV_PORT: Final[str] = "PORT"
ENV_MODEL_S3_URI: Final[str] = "MODEL_S3_URI"
ENV_MODEL_DIR: Final[str] = "MODEL_DIR"
ENV_MODEL_VARIANT: Final[str] = "MODEL_VARIANT"
ENV_MODEL_NAME: Final[str] = "MODEL_NAME"
ENV_MAX_BATCH: Final[str] = "MAX_BATCH"
ENV_MAX_BATCH_TOKENS: Final[str] = "MAX_BATCH_TOKENS"
ENV_BATCH_WINDOW_MS: Final[str] = "BATCH_WINDOW_MS"
ENV_QUEUE_LIMIT: Final[str] = "QUEUE_LIMIT"
ENV_MAX_DOCUMENTS: Final[str] = "MAX_DOCUMENTS"
ENV_MAX_DOCUMENT_CHARS: Final[str] = "MAX_DOCUMENT_CHARS"
ENV_MAX_QUERY_CHARS: Final[str] = "MAX_QUERY_CHARS"
ENV_MAX_LENGTH: Final[str] = "MAX_LENGTH"
ENV_INFERENCE_THREADS: Final[str] = "INFERENCE_THREADS"
ENV_PARALLELISM: Final[str] = "PARALLELISM"
ENV_DRAIN_TIMEOUT_SECONDS: Final[str] = "DRAIN_TIMEOUT_SECONDS"
ENV_KEEP_ALIVE_SECONDS: Final[str] = "KEEP_ALIVE_SECONDS"
ENV_LOG_LEVEL: Final[str] = "LOG_LEVEL"

#: Every variable the service reads, with the default used when it is unset. An empty default
#: means "not set": MODEL_S3_URI empty serves whatever is already in MODEL_DIR (baked in or
#: mounted); MAX_LENGTH empty takes the model's own limit from reranker.json; INTRA_OP_THREADS 0
#: means "the vCPUs this task was given" (cgroup quota aware) for INFERENCE_THREADS.
ENV_DEFAULTS: Final[MappingProxyType[str, str]] = MappingProxyType(
    {
        ENV_PORT: str(PORT),
        ENV_MODEL_S3_URI: "",
        ENV_MODEL_DIR: "/opt/model",
        ENV_MODEL_VARIANT: "fp32",
        ENV_MODEL_NAME: "reranker",
        ENV_MAX_BATCH: "256",
        # Padded tokens per ONNX run. Small runs keep the FFN/LayerNorm activations in L2 cache;
        # measured on 2 vCPUs with MiniLM-L6 (chunk parallelism): 256 beat 512 by 0-20% and
        # 1024-8192 by 10-35% (fp32 and int8); 128 was no better.
        ENV_MAX_BATCH_TOKENS: "256",
        ENV_BATCH_WINDOW_MS: "2",
        ENV_QUEUE_LIMIT: "2048",
        ENV_MAX_DOCUMENTS: "1000",
        ENV_MAX_DOCUMENT_CHARS: "20000",
        ENV_MAX_QUERY_CHARS: "2000",
        ENV_MAX_LENGTH: "",
        ENV_INFERENCE_THREADS: "0",
        # "chunks": length-bucketed chunks run concurrently, one thread each (no per-operator
        # barrier; measured ~1.6x more pairs per CPU-second than torch on 2 vCPU). "intra": one
        # run at a time, every operator split across INFERENCE_THREADS (lower single-request
        # latency for tiny requests).
        ENV_PARALLELISM: "chunks",
        ENV_DRAIN_TIMEOUT_SECONDS: str(DRAIN_TIMEOUT_SECONDS),
        # Must exceed the ALB idle timeout, or the target closes a kept-alive connection the ALB
        # is about to reuse and the client sees a 502.
        ENV_KEEP_ALIVE_SECONDS: "75",
        ENV_LOG_LEVEL: "info",
    }
)

#: Allowed values of MODEL_VARIANT and the ONNX file each one loads from MODEL_DIR.
MODEL_VARIANTS: Final[MappingProxyType[str, str]] = MappingProxyType(
    {"fp32": "model.onnx", "int8": "model.int8.onnx"}
)
#: Allowed values of PARALLELISM.
PARALLELISM_MODES: Final[tuple[str, ...]] = ("chunks", "intra")
#: Files prepare.py writes next to the ONNX model(s); the S3 prefix must hold the same layout.
TOKENIZER_FILE: Final[str] = "tokenizer.json"
MODEL_CONFIG_FILE: Final[str] = "reranker.json"


def container_environment(overrides: dict[str, str] | None = None) -> list[dict[str, str]]:
    """Return an ECS `environment` list (name/value dicts) of the defaults merged with overrides.

    Unknown names are rejected so a typo in stack config fails at preview, not as a variable the
    service silently ignores. Empty values are left out (the service treats absent as default).
    """
    merged = dict(ENV_DEFAULTS)
    for name, value in (overrides or {}).items():
        if name not in ENV_DEFAULTS:
            known = ", ".join(sorted(ENV_DEFAULTS))
            raise KeyError(f"unknown re-ranker environment variable {name!r}; known: {known}")
        merged[name] = str(value)
    if merged[ENV_MODEL_VARIANT] not in MODEL_VARIANTS:
        raise ValueError(
            f"{ENV_MODEL_VARIANT} must be one of {sorted(MODEL_VARIANTS)}, "
            f"got {merged[ENV_MODEL_VARIANT]!r}"
        )
    return [{"name": k, "value": v} for k, v in sorted(merged.items()) if v != ""]
