"""The Neuron (Inferentia/Trainium) image's task environment: what the task sets and the
entrypoint reads."""

from __future__ import annotations

from . import engine
from .engine import COMMON_READS

ENVIRONMENT_TABLE = "vllm-0.11.0"
"""The vLLM release optimum-neuron 0.4.5 runs: `VLLM_*` variables must be its names."""
ENV_ARTIFACT_URI = engine.ENV_ARTIFACT_URI
"""`s3://bucket/prefix/` of the precompiled optimum-neuron model directory."""
ENV_PREFIXES = ("VLLM_",)
"""vLLM's names, judged by the table of the vLLM release optimum-neuron runs."""
ENV_SELECTED_BY = ENV_ARTIFACT_URI
"""Only a Neuron container sets the artifact URI, so its `VLLM_*` names are 0.11.0's
(`contracts/env_table.py`); every other container's are the GPU release's."""
ENV_MODEL_DIR = "ENGINE_MODEL_DIR"
"""Local directory the artifact is staged to before serving."""
ENV_BATCH_SIZE = "ENGINE_BATCH_SIZE"
"""Batch size the artifact was compiled for."""
ENV_SEQUENCE_LENGTH = "ENGINE_SEQUENCE_LENGTH"
"""Sequence length the artifact was compiled for."""
ENV_TP_DEGREE = "ENGINE_TP_DEGREE"
"""Tensor parallel degree (NeuronCores) the artifact was compiled for."""
ENV_NEURON_TARGET = "ENGINE_NEURON_TARGET"
"""Compilation target the artifact must record (`trn1` for inf2 and trn1 instances, as
optimum-neuron normalises it); unset skips the check."""
ENV_UPSTREAM_PORT = "ENGINE_UPSTREAM_PORT"
"""Loopback port of the engine behind the keep-alive proxy."""

READS = (
    *COMMON_READS,
    ENV_ARTIFACT_URI,
    ENV_MODEL_DIR,
    ENV_BATCH_SIZE,
    ENV_SEQUENCE_LENGTH,
    ENV_TP_DEGREE,
    ENV_NEURON_TARGET,
    ENV_UPSTREAM_PORT,
)
"""Every ENGINE_* variable the Neuron entrypoint reads (the task must set no other)."""

ENV_NEURON_RT_VISIBLE_CORES = "NEURON_RT_VISIBLE_CORES"
"""Neuron runtime: the NeuronCores the process may use (`0-3`)."""

TASK_CAPABILITIES = ("IPC_LOCK",)
"""Linux capabilities the Neuron container adds (`linuxParameters.capabilities.add`), as in AWS's
ECS Neuron task-definition example: the Neuron runtime pins host memory for device DMA, and
CAP_IPC_LOCK lets it lock more than RLIMIT_MEMLOCK, so no memlock ulimit is set besides."""
