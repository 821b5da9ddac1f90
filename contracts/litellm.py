"""The LiteLLM proxy's container contract: release, port, routes and environment names.

Stdlib only (the layering test checks it). The generated config (`components.specs.gateway`)
and the gateway's task definition (`components.services.gateway`) both read these; the tests load
generated configs with this exact release's own parser.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import bedrock
from .aws_calls import AwsCall, Environment

VERSION = "1.108.7"
"""The pinned LiteLLM release: the newest whose `proxy` extra installs from the package index
(later ones pin `litellm-enterprise`/`litellm-proxy-extras` builds, or a `litellm-proxy` package,
that the index does not have)."""
IMAGE = f"ghcr.io/berriai/litellm:main-v{VERSION}"
ENVIRONMENT_TABLE = f"litellm-{VERSION}"
"""The release's environment names (`contracts/env_table.py`): every variable the gateway's
container sets, but the entry point's own, must be one."""
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
# With the database on and no DATABASE_URL, LiteLLM's CLI assembles one from these
# (`litellm.proxy.utils.construct_database_url_from_env_vars`, percent-encoding the user and
# password): it needs host, username and name, and reads the user as DATABASE_USERNAME only
# (DATABASE_USER is read by its IAM-token path alone), so a missing one leaves the proxy
# without a database while it runs. It reads no port: the URL takes Postgres' default.
ENV_DATABASE_HOST = "DATABASE_HOST"
ENV_DATABASE_PORT = "DATABASE_PORT"
ENV_DATABASE_NAME = "DATABASE_NAME"
ENV_DATABASE_USERNAME = "DATABASE_USERNAME"
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

BEDROCK_PREFIX = "bedrock/"
"""LiteLLM's provider prefix for Amazon Bedrock (`bedrock/<model id>`; `bedrock/converse/...`
and `bedrock/invoke/...` pick the API)."""
BEDROCK_ACTIONS = ("bedrock:InvokeModel", "bedrock:InvokeModelWithResponseStream")
"""What LiteLLM calls Bedrock with (InvokeModel/Converse, and their streaming forms, are
authorised as these two actions)."""


def bedrock_model(model: str) -> str | None:
    """The Bedrock model id of a `litellm_params.model` (None: another provider)."""
    if not model.startswith(BEDROCK_PREFIX):
        return None
    rest = model.removeprefix(BEDROCK_PREFIX)
    for route in ("converse/", "invoke/"):
        rest = rest.removeprefix(route)
    return rest


def aws_calls(environment: Environment, load_config: Callable[[str], Any]) -> tuple[AwsCall, ...]:
    """The proxy's calls with the task role: invoking every Bedrock model of its config
    (`ENV_CONFIG_YAML`, parsed with `load_config`), streamed and not, on the ARNs
    `contracts.bedrock.invoke_resources` names. Models of other providers take no IAM."""
    text = environment.get(ENV_CONFIG_YAML)
    if not text:
        return ()
    config = load_config(text) or {}
    calls: list[AwsCall] = []
    for entry in config.get("model_list") or ():
        params = entry.get("litellm_params") or {}
        model_id = bedrock_model(str(params.get("model", "")))
        region = params.get("aws_region_name") or environment.get("AWS_REGION")
        if model_id is None or not region:
            continue
        for resource in bedrock.invoke_resources(model_id, str(region)):
            calls += [
                AwsCall(action, resource, f"serve {entry.get('model_name')} from Bedrock")
                for action in BEDROCK_ACTIONS
            ]
    return tuple(calls)
