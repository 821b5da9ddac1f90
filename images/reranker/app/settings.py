"""Service settings, parsed once from the environment named in `contracts/reranker.py`.

Parsing is a pure function of a mapping (`Settings.from_env(os.environ)`), so tests and the
benchmark build settings without touching the process environment, and a bad value fails at
start with the variable's name instead of surfacing as a confusing error under load.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from contracts import reranker as c


def _int(env: Mapping[str, str], name: str, lo: int, hi: int) -> int:
    raw = env.get(name) or c.ENV_DEFAULTS[name]
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"{name} must be an integer, got {raw!r}") from None
    if not lo <= value <= hi:
        raise ValueError(f"{name} must be within [{lo}, {hi}], got {value}")
    return value


def _float(env: Mapping[str, str], name: str, lo: float, hi: float) -> float:
    raw = env.get(name) or c.ENV_DEFAULTS[name]
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{name} must be a number, got {raw!r}") from None
    if not (lo <= value <= hi) or math.isnan(value):
        raise ValueError(f"{name} must be within [{lo}, {hi}], got {value}")
    return value


def _optional_int(env: Mapping[str, str], name: str, lo: int, hi: int) -> int | None:
    return _int(env, name, lo, hi) if (env.get(name) or c.ENV_DEFAULTS[name]).strip() else None


@dataclass(frozen=True)
class Settings:
    """Runtime settings; every field's default is `contracts.reranker.ENV_DEFAULTS`."""

    port: int
    model_s3_uri: str
    model_dir: Path
    model_variant: str
    model_name: str
    max_batch: int
    max_batch_tokens: int
    batch_window_s: float
    queue_tokens: int | None
    max_request_tokens: int | None
    schedule_tokens: int
    request_timeout_s: float
    gflops_per_vcpu: float
    max_documents: int
    max_document_chars: int
    max_query_chars: int
    max_length: int | None
    inference_threads: int
    parallelism: str
    drain_timeout_s: float
    keep_alive_s: int
    log_level: str

    def admission(self, vcpus: float, encoder: c.EncoderShape) -> c.AdmissionLimits:
        """The contract's limits for `vcpus` and the served `encoder`, then explicit overrides."""
        limits = c.admission_limits(
            vcpus,
            request_timeout_seconds=self.request_timeout_s,
            drain_timeout_seconds=self.drain_timeout_s or self.request_timeout_s,
            gflops_per_vcpu=self.gflops_per_vcpu,
            encoder=encoder,
        )
        queue = self.queue_tokens or limits.queue_tokens
        request = min(self.max_request_tokens or limits.request_tokens, queue)
        return replace(limits, queue_tokens=queue, request_tokens=request)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        """Parse and validate settings from `env` (default: `os.environ`)."""
        env = os.environ if env is None else env
        variant = env.get(c.ENV_MODEL_VARIANT) or c.ENV_DEFAULTS[c.ENV_MODEL_VARIANT]
        if variant not in c.MODEL_VARIANT_CHOICES:
            raise ValueError(
                f"{c.ENV_MODEL_VARIANT} must be one of {sorted(c.MODEL_VARIANT_CHOICES)}, "
                f"got {variant!r}"
            )
        s3_uri = env.get(c.ENV_MODEL_S3_URI, "").strip()
        if s3_uri and not s3_uri.startswith("s3://"):
            raise ValueError(f"{c.ENV_MODEL_S3_URI} must start with s3://, got {s3_uri!r}")
        parallelism = env.get(c.ENV_PARALLELISM) or c.ENV_DEFAULTS[c.ENV_PARALLELISM]
        if parallelism not in c.PARALLELISM_MODES:
            raise ValueError(
                f"{c.ENV_PARALLELISM} must be one of {list(c.PARALLELISM_MODES)}, "
                f"got {parallelism!r}"
            )
        raw_len = env.get(c.ENV_MAX_LENGTH, "").strip()
        max_length = _int(env, c.ENV_MAX_LENGTH, 8, 8192) if raw_len else None
        max_documents = _int(env, c.ENV_MAX_DOCUMENTS, 1, 100_000)
        queue_tokens = _optional_int(env, c.ENV_QUEUE_TOKENS, 64, 10**12)
        max_request_tokens = _optional_int(env, c.ENV_MAX_REQUEST_TOKENS, 64, 10**12)
        if queue_tokens and max_request_tokens and max_request_tokens > queue_tokens:
            # A maximal request must be admissible on an idle server, else it could never succeed.
            raise ValueError(
                f"{c.ENV_MAX_REQUEST_TOKENS} ({max_request_tokens}) must be <= "
                f"{c.ENV_QUEUE_TOKENS} ({queue_tokens})"
            )
        return cls(
            port=_int(env, c.ENV_PORT, 1, 65535),
            model_s3_uri=s3_uri,
            model_dir=Path(env.get(c.ENV_MODEL_DIR) or c.ENV_DEFAULTS[c.ENV_MODEL_DIR]),
            model_variant=variant,
            model_name=env.get(c.ENV_MODEL_NAME) or c.ENV_DEFAULTS[c.ENV_MODEL_NAME],
            max_batch=_int(env, c.ENV_MAX_BATCH, 1, 65536),
            max_batch_tokens=_int(env, c.ENV_MAX_BATCH_TOKENS, 64, 10_000_000),
            batch_window_s=_float(env, c.ENV_BATCH_WINDOW_MS, 0.0, 10_000.0) / 1000.0,
            queue_tokens=queue_tokens,
            max_request_tokens=max_request_tokens,
            schedule_tokens=_int(env, c.ENV_SCHEDULE_TOKENS, 64, 10**9),
            request_timeout_s=_float(env, c.ENV_REQUEST_TIMEOUT_SECONDS, 0.1, 3600.0),
            gflops_per_vcpu=_float(env, c.ENV_GFLOPS_PER_VCPU, 0.01, 1e6),
            max_documents=max_documents,
            max_document_chars=_int(env, c.ENV_MAX_DOCUMENT_CHARS, 1, 10_000_000),
            max_query_chars=_int(env, c.ENV_MAX_QUERY_CHARS, 1, 10_000_000),
            max_length=max_length,
            inference_threads=_int(env, c.ENV_INFERENCE_THREADS, 0, 1024),
            parallelism=parallelism,
            drain_timeout_s=_float(env, c.ENV_DRAIN_TIMEOUT_SECONDS, 0.0, 3600.0),
            keep_alive_s=_int(env, c.ENV_KEEP_ALIVE_SECONDS, 1, 4000),
            log_level=(env.get(c.ENV_LOG_LEVEL) or c.ENV_DEFAULTS[c.ENV_LOG_LEVEL]).lower(),
        )


def cgroup_cpu_quota(cpu_max: str | None, online_cpus: int) -> float:
    """CPU time per second this cgroup may use (0.25 for a quarter-vCPU Fargate task).

    Admission limits scale with it; thread counts use the whole-CPU `cgroup_cpu_limit`.
    """
    parts = (cpu_max or "").split()
    try:
        quota, period = int(parts[0]), int(parts[1])
    except (IndexError, ValueError):  # absent, garbage or "max ..." (no quota)
        return float(max(1, online_cpus))
    return min(float(max(1, online_cpus)), quota / period) if quota > 0 and period > 0 else 1.0


def cgroup_cpu_limit(cpu_max: str | None, online_cpus: int) -> int:
    """Return the usable CPU count from a cgroup v2 `cpu.max` line ("quota period" or "max ...").

    Fargate sizes the micro-VM to the task, but on EC2 or a laptop a container may see every host
    core while being throttled to its quota; over-threading ONNX Runtime there costs throughput.
    """
    if not cpu_max:
        return max(1, online_cpus)
    parts = cpu_max.split()
    if len(parts) != 2 or parts[0] == "max":
        return max(1, online_cpus)
    try:
        quota, period = int(parts[0]), int(parts[1])
    except ValueError:
        return max(1, online_cpus)
    return max(1, min(online_cpus, math.ceil(quota / period))) if period > 0 else online_cpus


def _cpu_facts() -> tuple[str | None, int]:
    try:
        online = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - non-Linux
        online = os.cpu_count() or 1
    try:
        cpu_max = Path("/sys/fs/cgroup/cpu.max").read_text()
    except OSError:
        cpu_max = None
    return cpu_max, online


def available_cpus() -> int:
    """CPUs this process may use: affinity mask, capped by a cgroup v2 quota when present."""
    return cgroup_cpu_limit(*_cpu_facts())


def available_vcpus() -> float:
    """CPU time per second this process may use (fractional under a cgroup v2 quota)."""
    return cgroup_cpu_quota(*_cpu_facts())
