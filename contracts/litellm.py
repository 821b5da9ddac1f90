"""The LiteLLM proxy's container contract: release, port, routes and environment names.

Stdlib only (the layering test checks it). The generated config (`components.specs.gateway`)
and the gateway's task definition (`components.services.gateway`) both read these; the tests load
generated configs with this exact release's own parser.
"""

from __future__ import annotations

VERSION = "1.108.7"
"""The pinned LiteLLM release: the newest whose `proxy` extra installs from the package index
(later ones pin `litellm-enterprise`/`litellm-proxy-extras` builds, or a `litellm-proxy` package,
that the index does not have)."""
IMAGE = f"ghcr.io/berriai/litellm:main-v{VERSION}"
"""LiteLLM's published multi-arch proxy image of that release."""
PORT = 4000
"""The proxy's default listen port (`litellm --port`, env `PORT`)."""
HEALTH_PATH = "/health/liveliness"
"""Unauthenticated liveness route (`/health` calls every model and needs a key)."""
KEY_HEADER = "x-litellm-api-key"
"""Header for LiteLLM keys (`general_settings.litellm_key_header_name`): the ALB's jwt-validation
consumes `Authorization`."""
ENV_CONFIG_YAML = "LITELLM_CONFIG_YAML"
"""The generated config, written to a file by the container's entry point."""
ENV_MASTER_KEY = "LITELLM_MASTER_KEY"
ENV_SALT_KEY = "LITELLM_SALT_KEY"
"""Encrypts credentials LiteLLM stores in its database; must never change once set."""
# With the database on, LiteLLM's CLI assembles DATABASE_URL from these (percent-encoding the
# password), so the RDS-managed secret's JSON keys map without building a URL.
ENV_DATABASE_HOST = "DATABASE_HOST"
ENV_DATABASE_PORT = "DATABASE_PORT"
ENV_DATABASE_NAME = "DATABASE_NAME"
ENV_DATABASE_USER = "DATABASE_USER"
ENV_DATABASE_PASSWORD = "DATABASE_PASSWORD"
ROUTING_STRATEGIES = (
    "simple-shuffle",
    "least-busy",
    "usage-based-routing",
    "latency-based-routing",
    "cost-based-routing",
    "usage-based-routing-v2",
)
"""LiteLLM router strategies (`litellm.types.litellm_params.RoutingStrategyName`)."""
