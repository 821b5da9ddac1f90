"""Contract between the platform and a bring-your-own serving image (`engine: custom`).

The user's image runs as it is (their ENTRYPOINT, optionally their `command`); the platform
derives everything around it exactly as for the built-in engines (capacity, sizing, auth,
idle timeout, deregistration delay, grace period, autoscaling) and tells the container what
it needs through the environment variables below. `docs/engines.md` states the contract for
image authors. Standard library only.

What the image must do:
- listen on `0.0.0.0:$ENGINE_PORT` (awsvpc: the task ENI is the only interface the ALB reaches);
- answer `GET <healthPath>` with 200 only once it can serve (the ALB's health check; until the
  grace period ends ECS ignores failures, after it a failing task is replaced);
- if it streams (SSE), write something at least every `sseKeepAliveSeconds` during a stream, or
  declare none and accept that the ALB idle timeout is raised to the longest generation;
- read weights from `$ENGINE_WEIGHTS_URI` (S3 prefix or EFS directory) if it has any, never from
  a model hub at start (tasks can reach the internet on 443 through the NAT gateway, but the
  config refuses hub credentials and hub-online switches, `engine.HUB_TOKEN_VARIABLES`);
- stop within the container stop timeout after SIGTERM, finishing in-flight requests first.
"""

from __future__ import annotations

from . import aws_limits, engine

ENV_PORT = engine.ENV_PORT
"""Port the platform routes to (the container port mapping and target group port)."""
ENV_SERVED_MODEL_NAME = engine.ENV_SERVED_MODEL_NAME
"""The service's model id (what clients send as the OpenAI `model`, if the API is OpenAI's)."""
ENV_WEIGHTS_URI = engine.ENV_WEIGHTS_URI
"""Set when the service declares weights: `s3://bucket/prefix/` (the task role may read exactly
that prefix) or an absolute directory on the task's EFS mount."""
ENV_MAX_GENERATION_SECONDS = "ENGINE_MAX_GENERATION_SECONDS"
"""The longest request the platform sized timeouts for; an image may cut requests off there."""
ENV_NEURON_VISIBLE_CORES = "NEURON_RT_VISIBLE_CORES"
"""Neuron runtime: the NeuronCores of the mapped devices (`0-3`); set for Neuron services."""

PLATFORM_ENV = (
    ENV_PORT,
    ENV_SERVED_MODEL_NAME,
    ENV_WEIGHTS_URI,
    ENV_MAX_GENERATION_SECONDS,
    ENV_NEURON_VISIBLE_CORES,
)
"""Variables the platform sets; a service's `environment` may not override them."""
RESERVED_ENV_PREFIXES = ("ENGINE_", "AWS_", "ECS_")
"""`ENGINE_*` is this contract's namespace; `AWS_*` and `ECS_*` are set by ECS and the SDKs
(`AWS_CONTAINER_CREDENTIALS_RELATIVE_URI`, `ECS_CONTAINER_METADATA_URI_V4`) and overriding
them breaks credentials or metadata."""
SECRET_NAME_MARKERS = ("PASSWORD", "SECRET", "TOKEN", "API_KEY", "APIKEY", "CREDENTIAL")
"""An `environment` entry whose name contains one of these must come from `secrets` instead
(plain environment values are visible in the task definition to anyone who can describe it)."""

DEFAULT_PORT = engine.DEFAULT_PORT
"""Port used when the service declares none."""
DEFAULT_HEALTH_PATH = engine.HEALTH_PATH
"""Health path used when the service declares none."""
HEALTH_PATH_MAX_LENGTH = aws_limits.HEALTH_CHECK_PATH_MAX
"""ELBv2 `HealthCheckPath`: 1-1024 characters, starting with `/`."""
MIN_PORT = 1024
"""Images run as non-root; ports below 1024 need root or a capability the task does not get."""
MAX_PORT = 65535
DEFAULT_WARMUP_SECONDS = 120.0
"""Grace-period input when the service declares no `warmupSeconds`."""
