"""What the model-serving images share with the task definitions.

The engine modules (`components/engines/<engine>.py`) write these variables into the task
definition; the image entrypoints (`images/<engine>/entrypoint.py`) read them. Image-specific
names are in each image's own contract (`contracts/<engine>.py`).
"""

from __future__ import annotations

import json

from .aws_calls import AwsCall, Environment, s3_prefix_reads

HEALTH_PATH = "/health"
"""Health path of both engines (vLLM's `/health`: 200 once the engine is ready); the neuron
proxy forwards it unchanged so the target group sees the engine's own answer."""
DEFAULT_PORT = 8000
"""Container port the service listens on (vLLM's default)."""
DEFAULT_SSE_KEEPALIVE_SECONDS = 15
"""Keep-alive interval an entrypoint uses when the task sets none."""

ENV_SERVED_MODEL_NAME = "ENGINE_SERVED_MODEL_NAME"
"""Model id clients send in the OpenAI `model` field."""
ENV_PORT = "ENGINE_PORT"
"""Port the container serves on (engine for vLLM, keep-alive proxy for Neuron)."""
ENV_SSE_KEEPALIVE_SECONDS = "ENGINE_SSE_KEEPALIVE_SECONDS"
"""Seconds of silence on an event stream after which a `: keep-alive` comment is sent."""
ENV_EXTRA_ARGS = "ENGINE_EXTRA_ARGS"
"""JSON list of extra engine flags, appended verbatim (validated by the launch dataclasses)."""

ENV_HF_HUB_OFFLINE = "HF_HUB_OFFLINE"
"""huggingface_hub: `1` forbids any hub request (weights must come from S3)."""
HUB_OFFLINE_VARIABLES = (ENV_HF_HUB_OFFLINE, "TRANSFORMERS_OFFLINE")
"""Switches of huggingface_hub / transformers that, set to anything but `1`, allow hub downloads."""
HUB_TOKEN_VARIABLES = ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN")
"""Hugging Face Hub credentials. A serving container never needs one: weights are staged in S3
or EFS (seed 000: "Never pull weights from Hugging Face at every task start — egress cost, rate
limits, cold-start"); with one, an image would download from the hub at every task start."""

ENV_REGION_VARIABLES = ("AWS_REGION", "AWS_DEFAULT_REGION")
"""The stack's region, set in every container (model and re-ranker) from the provider's region.
Tasks run with ECS_AWSVPC_BLOCK_IMDS, so no SDK inside them (boto3, vLLM's S3 utilities, the
Run:ai streamer) can ask IMDS for the region: without these they fall back to us-east-1 or the
global endpoint and stream weights across regions. Services may not set them themselves."""

COMMON_READS = (ENV_SERVED_MODEL_NAME, ENV_PORT, ENV_SSE_KEEPALIVE_SECONDS, ENV_EXTRA_ARGS)
"""The ENGINE_* variables both entrypoints read."""

ENV_WEIGHTS_URI = "ENGINE_WEIGHTS_URI"
"""Where the engine images (and custom images) find their weights: `s3://bucket/prefix/`
(streamed or staged with the task role) or a directory on the task's EFS mount."""
ENV_ARTIFACT_URI = "ENGINE_ARTIFACT_URI"
"""`s3://bucket/prefix/` of the Neuron image's precompiled model, staged with the task role."""


ENV_LORA_ADAPTERS = "ENGINE_LORA_ADAPTERS"
"""LoRA adapters an engine image stages from S3 with the task role: a JSON list of objects with
their `source` (`s3://bucket/prefix/`) among their fields (`contracts/vllm.py`)."""


def aws_calls(environment: Environment) -> tuple[AwsCall, ...]:
    """The engine images' calls: reading the weights (or the Neuron artifact) under their S3
    prefix with the task role, and each LoRA adapter's prefix (its `adapter_config.json`
    stands for its files); nothing for weights on EFS (the mount is checked instead)."""
    weights = tuple(
        call
        for name in (ENV_WEIGHTS_URI, ENV_ARTIFACT_URI)
        for call in s3_prefix_reads(environment.get(name, ""), "the model weights")
    )
    return weights + tuple(
        call
        for source in adapter_sources(environment.get(ENV_LORA_ADAPTERS, ""))
        for call in s3_prefix_reads(source, "stage a LoRA adapter", "adapter_config.json")
    )


def adapter_sources(raw: str) -> list[str]:
    """The `source` of every adapter in an `ENGINE_LORA_ADAPTERS` value (none when unset or
    not a JSON list of objects: the entrypoint refuses that before any call)."""
    try:
        adapters = json.loads(raw) if raw.strip() else []
    except ValueError:
        return []
    if not isinstance(adapters, list):
        return []
    return [str(a["source"]) for a in adapters if isinstance(a, dict) and "source" in a]
