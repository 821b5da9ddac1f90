"""The AI gateway's configuration: LiteLLM's proxy `config.yaml`, generated from its decisions.

The gateway (LiteLLM's proxy on Fargate) gives clients one OpenAI-compatible endpoint for every
model the stack serves, plus optional Amazon Bedrock models. Nothing here creates a resource:
these are pure functions of the decided routes to

- `litellm_config(routes, bedrock, ...)`: the proxy config as a dict (`render_litellm_config` as
  YAML text), one `model_list` entry per route: ECS model services as `hosted_vllm/<served name>`
  with `api_base` at the service's private Service Connect address, Bedrock models as
  `bedrock/<model id>` with their region; router settings; `general_settings` whose master key is
  an `os.environ/` reference (LiteLLM resolves it at start-up), so the generated text never holds
  a secret;
- `container_environment(...)`: the container's plain variables (its secrets are the decisions'
  `secret_refs`, which the task definition maps through `secrets`, never `environment`);
- `bedrock_invoke_policy(...)` and the database's policies: the IAM documents.

The generated config is checked in the tests by LiteLLM's own parser from the pinned release
(`contracts.litellm.VERSION`), which must match the image the gateway runs.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import yaml

from ecs_inference.contracts import bedrock, litellm
from ecs_inference.contracts.aws_limits import TASK_DEFINITION_MAX_BYTES
from ecs_inference.contracts.engine import ENV_REGION_VARIABLES

BEDROCK_TIMEOUT_SECONDS = 600
"""Longest Bedrock request the gateway keeps open (the ALB idle timeout covers it)."""
CONFIG_ENV_MAX_BYTES = TASK_DEFINITION_MAX_BYTES // 2
"""Largest generated config carried in the container environment: half of what ECS allows for
the whole task definition request, leaving room for the rest of it."""
ROUTING_STRATEGY = "simple-shuffle"
"""LiteLLM's recommendation for production; each route has one deployment, so it only matters
once routes share a model name (`contracts.litellm.ROUTING_STRATEGIES` lists the others)."""
NUM_RETRIES = 2
"""Retries on connection failures and 5xx before a response starts (LiteLLM never retries a
stream that has begun)."""
POSTGRES_PORT = 5432
DATABASE_NAME = "litellm"
"""The database LiteLLM's tables live in (`GatewayDatabase` creates it)."""

BEDROCK_INVOKE_ACTIONS = ("bedrock:InvokeModel", "bedrock:InvokeModelWithResponseStream")
# A system inference profile id is a geography prefix plus a foundation model id; invoking it
# routes to the model in any region of that geography, so IAM needs the profile and the model.
BEDROCK_PROFILE_PREFIXES = tuple(bedrock.PROFILE_GEOGRAPHIES)
# provider.model[-version][:revision], e.g. anthropic.claude-haiku-4-5-20251001-v1:0 (the
# foundation-model branch of bedrock-runtime's modelId pattern, made strict: ids only, no ARNs).
BEDROCK_MODEL_ID = re.compile(r"^[a-z0-9-]{1,63}\.[a-z0-9-]{1,63}(?:[.:][a-z0-9-]{1,63}){0,3}$")
REGION = re.compile(r"^[a-z]{2}(?:-gov|-iso[a-z]?)?-[a-z]+-\d$")
# LiteLLM model names are matched literally against the `model` field of requests; keep them to
# characters that survive URLs, headers and YAML without quoting surprises.
MODEL_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$")


@dataclass(frozen=True)
class ServiceTarget:
    """One ECS model service as the gateway reaches it: `service` (its key under
    `platform.models`), `served_model_name` (what the engine answers to), `host` and `port` (its
    private Service Connect address), `timeout_seconds` (its longest generation), `provider`
    (LiteLLM's provider prefix for its API; default `hosted_vllm`), `routed_by_default` (whether
    the default routes, every service, include it; default True: False for a custom image, whose
    API the platform cannot know), `mode` (LiteLLM's `model_info.mode`: "chat" for a model
    service, default; "rerank" for a re-ranker)."""

    service: str
    served_model_name: str
    host: str
    port: int
    timeout_seconds: int
    provider: str = "hosted_vllm"
    routed_by_default: bool = True
    mode: Literal["chat", "rerank"] = "chat"
    adapter: bool = False
    """Whether `served_model_name` is one of the service's LoRA adapters (default False)."""

    @property
    def deployment_id(self) -> str:
        """LiteLLM's `model_info.id`, unique per deployment: `ecs-<service>`, and
        `ecs-<service>-<adapter>` for an adapter of it."""
        adapter = f"-{self.served_model_name}" if self.adapter else ""
        return f"ecs-{self.service}{adapter}"

    @property
    def api_base(self) -> str:
        """The base URL LiteLLM is given: a model service's OpenAI-compatible `/v1` (LiteLLM
        appends `/chat/completions`), a re-ranker's root (LiteLLM's cohere provider appends
        `/v2/rerank`, `contracts.litellm.RERANK_PROVIDER`)."""
        root = f"http://{self.host}:{self.port}"
        return root if self.mode == "rerank" else f"{root}/v1"


@dataclass(frozen=True)
class ModelRoute:
    """A gateway model name served by an ECS model service."""

    model_name: str
    target: ServiceTarget


@dataclass(frozen=True)
class BedrockRoute:
    """A gateway model name served by Amazon Bedrock: `model_id` (foundation model or system
    inference profile id) in `region`."""

    model_name: str
    model_id: str
    region: str


def env_ref(name: str) -> str:
    """LiteLLM's reference to an environment variable (resolved at proxy start-up)."""
    return f"os.environ/{name}"


def _model_entry(route: ModelRoute) -> dict[str, Any]:
    t = route.target
    return {
        "model_name": route.model_name,
        "litellm_params": {
            # hosted_vllm: OpenAI-compatible chat/completions against vLLM's server (also what
            # optimum-neuron serves), with vLLM's extra sampling parameters passed through;
            # openai: any other OpenAI-compatible server (the other engines, a custom image
            # routed explicitly); cohere: a re-ranker (Cohere's rerank API).
            "model": f"{t.provider}/{t.served_model_name}",
            "api_base": t.api_base,
            # The engines run without an API key: the service is reachable only from the ALB and
            # the gateway (security groups), so the key is a constant LiteLLM requires, not a
            # secret.
            "api_key": "none",
            "timeout": t.timeout_seconds,
            "stream_timeout": t.timeout_seconds,
        },
        "model_info": {"id": t.deployment_id, "mode": t.mode},
    }


def _bedrock_entry(route: BedrockRoute, timeout: int) -> dict[str, Any]:
    return {
        "model_name": route.model_name,
        # No keys: LiteLLM signs with the task role's credentials (boto3's default chain).
        "litellm_params": {
            "model": f"bedrock/{route.model_id}",
            "aws_region_name": route.region,
            "timeout": timeout,
            "stream_timeout": timeout,
        },
        "model_info": {"id": f"bedrock-{route.model_name}", "mode": "chat"},
    }


def litellm_config(
    routes: Sequence[ModelRoute],
    bedrock: Sequence[BedrockRoute] = (),
    *,
    database: bool = False,
    trusted_proxy_ranges: Sequence[str] = (),
) -> dict[str, Any]:
    """LiteLLM proxy config (the structure of `config.yaml`) for the ECS `routes` and the
    `bedrock` ones (default none). `database` (default False): LiteLLM's PostgreSQL for virtual
    keys, budgets and spend logs (off: the master key is the only key, nothing is persisted);
    `trusted_proxy_ranges` (default none: omitted): CIDRs of the load balancer in front (the
    VPC's), so LiteLLM's per-address login throttling reads the client from X-Forwarded-For."""
    general: dict[str, Any] = {
        "master_key": env_ref(litellm.ENV_MASTER_KEY),
        "litellm_key_header_name": litellm.KEY_HEADER,
    }
    if not database:
        # Without a database there is nothing to persist keys or spend to.
        general["disable_spend_logs"] = True
    if trusted_proxy_ranges:
        general["trusted_proxy_ranges"] = list(trusted_proxy_ranges)
    return {
        "model_list": [_model_entry(r) for r in routes]
        + [_bedrock_entry(b, BEDROCK_TIMEOUT_SECONDS) for b in bedrock],
        "router_settings": {"routing_strategy": ROUTING_STRATEGY, "num_retries": NUM_RETRIES},
        "litellm_settings": {
            # Drop OpenAI parameters a backend does not support instead of failing the request.
            "drop_params": True,
            # Request bodies may hold user data: keep them out of the container's logs.
            "turn_off_message_logging": True,
        },
        "general_settings": general,
    }


def render_litellm_config(config: dict[str, Any]) -> str:
    """A `litellm_config(...)` as the YAML text LiteLLM reads (block style, keys in order)."""
    return yaml.safe_dump(config, sort_keys=False, default_flow_style=False)


def longest_request_seconds(routes: Sequence[ModelRoute], bedrock: Sequence[BedrockRoute]) -> int:
    """The longest any route may take: the gateway's own ALB idle timeout, deregistration delay
    and stop timeout must cover it."""
    longest = [r.target.timeout_seconds for r in routes]
    return max(longest + [BEDROCK_TIMEOUT_SECONDS] * bool(bedrock), default=0)


def container_environment(config_yaml: str, database_host: str | None = None) -> dict[str, str]:
    """The gateway container's plain variables. The config travels in LITELLM_CONFIG_YAML (the
    entry point writes it to a file before `litellm --config`), so a config change is a new task
    definition revision and a rolling deploy. With the database (`database_host`, its writer;
    default None), LiteLLM logs in as its IAM user. Secrets never appear here."""
    environment = {litellm.ENV_CONFIG_YAML: config_yaml, "PORT": str(litellm.PORT)}
    if database_host is None:
        return environment
    # RDS IAM authentication: LiteLLM mints a token from the task role and renews it before it
    # lapses; ECS resolves `secrets` only at task start, so a password from the RDS-managed
    # secret would go stale at its first rotation (every 7 days by default).
    return environment | {
        litellm.ENV_DATABASE_HOST: database_host,
        litellm.ENV_DATABASE_PORT: str(POSTGRES_PORT),
        litellm.ENV_DATABASE_NAME: DATABASE_NAME,
        litellm.ENV_DATABASE_USERNAME: litellm.DATABASE_IAM_USER,
        litellm.ENV_IAM_TOKEN_DB_AUTH: "true",
        litellm.ENV_DATABASE_SSLMODE: "require",
    }


def managed_names(*, database: bool) -> frozenset[str]:
    """The variables the gateway's container gets from the component (its environment, master
    key, salt key with the `database`, and the region), which its `environment` and `secrets`
    may not name."""
    keys = {litellm.ENV_MASTER_KEY, *([litellm.ENV_SALT_KEY] if database else [])}
    names = container_environment("", "host" if database else None)
    return frozenset({*names, *keys, *ENV_REGION_VARIABLES})


def database_access_policy(
    *, resource_id: str, region: str, account_id: str, partition: str
) -> str:
    """The gateway task role's database policy (JSON): log in as LiteLLM's IAM user
    (`rds-db:connect` on `dbuser:<cluster resource id>/<user>`) and nothing else: no master
    secret, no Data API (the bootstrap function's duty, `database_bootstrap_policy`)."""
    user = f"arn:{partition}:rds-db:{region}:{account_id}:dbuser:{resource_id}/"
    statement = {
        "Sid": "ConnectAsLiteLLM",
        "Effect": "Allow",
        "Action": "rds-db:connect",
        "Resource": user + litellm.DATABASE_IAM_USER,
    }
    return json.dumps({"Version": "2012-10-17", "Statement": [statement]})


def database_bootstrap_policy(*, cluster_arn: str, secret_arn: str, log_group_arn: str) -> str:
    """The bootstrap function's role (JSON): the RDS Data API on the cluster, the master secret
    the Data API reads with the caller's credentials, and its own log streams."""
    statements = [
        {
            "Sid": "BootstrapThroughDataApi",
            "Effect": "Allow",
            "Action": "rds-data:ExecuteStatement",
            "Resource": cluster_arn,
        },
        {
            "Sid": "DataApiReadsTheMasterSecret",
            "Effect": "Allow",
            "Action": "secretsmanager:GetSecretValue",
            "Resource": secret_arn,
        },
        {
            "Sid": "WriteOwnLogGroup",
            "Effect": "Allow",
            "Action": ["logs:CreateLogStream", "logs:PutLogEvents"],
            "Resource": f"{log_group_arn}:log-stream:*",
        },
    ]
    return json.dumps({"Version": "2012-10-17", "Statement": statements})


def bedrock_model_arns(
    route: BedrockRoute, *, partition: str = "aws", account_id: str | None = None
) -> list[str]:
    """The ARNs `bedrock:InvokeModel*` must allow for one route (`contracts.bedrock`
    `invoke_resources`): a foundation model in the route's region; for a system inference
    profile, the profile in the route's region (needs `account_id`) and the foundation model in
    every Region the profile routes to."""
    if bedrock.profile_geography(route.model_id) is not None and account_id is None:
        raise ValueError(f"inference profile {route.model_id!r} needs the account id for its ARN")
    return [
        arn.format(partition=partition, account=account_id)
        for arn in bedrock.invoke_resources(route.model_id, route.region)
    ]


def bedrock_invoke_policy(
    routes: Sequence[BedrockRoute], *, partition: str = "aws", account_id: str | None = None
) -> str:
    """The gateway task role's policy (JSON): invoke, with and without streaming, exactly the
    configured Bedrock models. Raises ValueError for no routes (the role then gets no policy)."""
    if not routes:
        raise ValueError("no Bedrock routes: the gateway's task role needs no Bedrock policy")
    resources: list[str] = []
    for route in routes:
        for arn in bedrock_model_arns(route, partition=partition, account_id=account_id):
            if arn not in resources:
                resources.append(arn)
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Sid": "InvokeConfiguredModels",
                    "Effect": "Allow",
                    "Action": list(BEDROCK_INVOKE_ACTIONS),
                    "Resource": resources,
                }
            ],
        }
    )
