"""The AI gateway's configuration: LiteLLM's proxy `config.yaml`, generated from the plan.

The gateway (LiteLLM's proxy on Fargate) gives clients one OpenAI-compatible endpoint for every
model the stack serves, plus optional Amazon Bedrock models. Nothing here creates a resource:
these are pure functions from plan-like values to

- `litellm_config(spec)`: the proxy config as a dict (`render_litellm_config` as YAML text), one
  `model_list` entry per route: ECS model services as `hosted_vllm/<served name>` with `api_base`
  at the service's private Service Connect address, Bedrock models as `bedrock/<model id>` with
  their region; router settings; `general_settings` whose master key is an `os.environ/` reference
  (LiteLLM resolves it at start-up), so the generated text never holds a secret;
- `gateway_container_env(spec, ...)`: the container's plain environment and the variables that
  must come from Secrets Manager (master key; with the database, its user, password and LiteLLM's
  salt key), which the task definition maps through `secrets`, never `environment`;
- `bedrock_invoke_policy(...)`: the task role's IAM document, `bedrock:InvokeModel*` on exactly
  the configured models;
- `LiteLLMGatewaySpec`: the gateway service itself (its LiteLLM config, image, size, counts,
  keys), and `GatewayDatabaseSpec`, its database: what the plan builds and the components add
  their wiring to.

The generated config is checked in the tests by LiteLLM's own parser from the pinned release
(`LITELLM_VERSION`), which must match the image the gateway runs.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import yaml

from ecs_inference.contracts import bedrock, litellm
from ecs_inference.contracts.aws_limits import TASK_DEFINITION_MAX_BYTES
from ecs_inference.contracts.engine import ENV_REGION_VARIABLES
from ecs_inference.contracts.litellm import IMAGE as LITELLM_IMAGE
from ecs_inference.sizing.fargate import CpuArchitecture

LITELLM_VERSION = litellm.VERSION
GATEWAY_PORT = litellm.PORT
HEALTH_PATH = litellm.HEALTH_PATH
KEY_HEADER = litellm.KEY_HEADER
ENV_MASTER_KEY = litellm.ENV_MASTER_KEY
ENV_SALT_KEY = litellm.ENV_SALT_KEY
ENV_DATABASE_HOST = litellm.ENV_DATABASE_HOST
ENV_DATABASE_PORT = litellm.ENV_DATABASE_PORT
ENV_DATABASE_NAME = litellm.ENV_DATABASE_NAME
ENV_DATABASE_USERNAME = litellm.ENV_DATABASE_USERNAME

BEDROCK_TIMEOUT_SECONDS = 600
"""Longest Bedrock request the gateway keeps open (the ALB idle timeout covers it)."""
CONFIG_ENV_MAX_BYTES = TASK_DEFINITION_MAX_BYTES // 2
"""Largest generated config carried in the container environment: half of what ECS allows for
the whole task definition request, leaving room for the rest of it."""

ROUTING_STRATEGIES = litellm.ROUTING_STRATEGIES

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

    @property
    def is_inference_profile(self) -> bool:
        return bedrock.profile_geography(self.model_id) is not None

    @property
    def foundation_model_id(self) -> str:
        """The model behind an inference profile (the id itself for a foundation model)."""
        return bedrock.foundation_model_id(self.model_id)


@dataclass(frozen=True)
class GatewaySpec:
    """Everything the generated config depends on.

    Required: `routes` (ECS model services). Optional (defaults): `bedrock` () — Bedrock routes;
    `database` False — LiteLLM's PostgreSQL for virtual keys, per-team budgets and rate limits
    (off: the master key is the only key and nothing is persisted); `routing_strategy`
    "simple-shuffle" (LiteLLM's recommendation for production; each route has one deployment,
    so it only matters once routes share a model name); `num_retries` 2 (connection failures and
    5xx before a response starts; LiteLLM never retries a stream that has begun);
    `bedrock_timeout_seconds` `BEDROCK_TIMEOUT_SECONDS` (600); `trusted_proxy_ranges` () —
    CIDRs of the load balancer in front of the gateway (the VPC's), so LiteLLM's per-address
    login throttling reads the client address from X-Forwarded-For instead of counting every
    client as the ALB; empty: omitted.
    """

    routes: tuple[ModelRoute, ...]
    bedrock: tuple[BedrockRoute, ...] = ()
    database: bool = False
    routing_strategy: Literal[
        "simple-shuffle",
        "least-busy",
        "usage-based-routing",
        "latency-based-routing",
        "cost-based-routing",
        "usage-based-routing-v2",
    ] = "simple-shuffle"
    num_retries: int = 2
    bedrock_timeout_seconds: int = BEDROCK_TIMEOUT_SECONDS
    trusted_proxy_ranges: tuple[str, ...] = ()

    @property
    def model_names(self) -> tuple[str, ...]:
        return tuple(r.model_name for r in self.routes) + tuple(b.model_name for b in self.bedrock)

    @property
    def longest_request_seconds(self) -> int:
        """The longest any route may take: the gateway's own ALB idle timeout, deregistration
        delay and stop timeout must cover it."""
        longest = [r.target.timeout_seconds for r in self.routes]
        longest += [self.bedrock_timeout_seconds] if self.bedrock else []
        return max(longest, default=0)


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


def litellm_config(spec: GatewaySpec) -> dict[str, Any]:
    """LiteLLM proxy config (the structure of `config.yaml`) for `spec`."""
    general: dict[str, Any] = {
        "master_key": env_ref(ENV_MASTER_KEY),
        "litellm_key_header_name": KEY_HEADER,
    }
    if not spec.database:
        # Without a database there is nothing to persist keys or spend to.
        general["disable_spend_logs"] = True
    if spec.trusted_proxy_ranges:
        general["trusted_proxy_ranges"] = list(spec.trusted_proxy_ranges)
    return {
        "model_list": [_model_entry(r) for r in spec.routes]
        + [_bedrock_entry(b, spec.bedrock_timeout_seconds) for b in spec.bedrock],
        "router_settings": {
            "routing_strategy": spec.routing_strategy,
            "num_retries": spec.num_retries,
        },
        "litellm_settings": {
            # Drop OpenAI parameters a backend does not support instead of failing the request.
            "drop_params": True,
            # Request bodies may hold user data: keep them out of the container's logs.
            "turn_off_message_logging": True,
        },
        "general_settings": general,
    }


def render_litellm_config(spec: GatewaySpec) -> str:
    """`litellm_config(spec)` as the YAML text LiteLLM reads (block style, keys in order)."""
    return yaml.safe_dump(litellm_config(spec), sort_keys=False, default_flow_style=False)


@dataclass(frozen=True)
class DatabaseEndpoint:
    """LiteLLM's PostgreSQL: `host` and `port` of the writer endpoint, `name` of the database,
    `secret_arn` of the RDS-managed master secret, `cluster_arn` (the Data API's resource)."""

    host: str
    port: int
    name: str
    secret_arn: str
    cluster_arn: str


@dataclass(frozen=True)
class GatewayEnvironment:
    """`environment` (plain) and `secrets` (env name -> `valueFrom`) of the gateway container.
    LiteLLM's database login role is created outside the gateway's task, by the database's
    bootstrap function (`services.gateway_db`)."""

    environment: dict[str, str]
    secrets: dict[str, str]


def gateway_container_env(
    spec: GatewaySpec,
    *,
    master_key_secret_arn: str,
    salt_key_secret_arn: str | None = None,
    database: DatabaseEndpoint | None = None,
    config_yaml_env: str = litellm.ENV_CONFIG_YAML,
) -> GatewayEnvironment:
    """The gateway container's variables. The config travels in `config_yaml_env` (the
    entry point writes it to a file before `litellm --config`), so a config change is a new task
    definition revision and a rolling deploy. Secrets never appear in `environment`.

    Raises ValueError when `spec.database` and `database`/`salt_key_secret_arn` disagree, or when
    the config outgrows `CONFIG_ENV_MAX_BYTES`.
    """
    if spec.database != (database is not None):
        raise ValueError("database endpoint must be given exactly when spec.database is on")
    if database is not None and salt_key_secret_arn is None:
        raise ValueError("the database needs LiteLLM's salt key secret (LITELLM_SALT_KEY)")
    text = render_litellm_config(spec)
    if len(text.encode()) > CONFIG_ENV_MAX_BYTES:
        raise ValueError(
            f"the gateway config is {len(text.encode())} bytes for {len(spec.model_names)} "
            f"routes, above the {CONFIG_ENV_MAX_BYTES} bytes that fit in the task definition; "
            "split the stack's models across gateways"
        )
    environment = {config_yaml_env: text, "PORT": str(GATEWAY_PORT)}
    secrets = {ENV_MASTER_KEY: master_key_secret_arn}
    if database is None or salt_key_secret_arn is None:
        return GatewayEnvironment(environment, secrets)
    # RDS IAM authentication: LiteLLM mints a token from the task role and renews it before it
    # lapses; ECS resolves `secrets` only at task start, so a password from the RDS-managed
    # secret would go stale at its first rotation (every 7 days by default).
    environment |= {
        ENV_DATABASE_HOST: database.host,
        ENV_DATABASE_PORT: str(database.port),
        ENV_DATABASE_NAME: database.name,
        ENV_DATABASE_USERNAME: litellm.DATABASE_IAM_USER,
        litellm.ENV_IAM_TOKEN_DB_AUTH: "true",
        litellm.ENV_DATABASE_SSLMODE: "require",
    }
    secrets[ENV_SALT_KEY] = salt_key_secret_arn
    return GatewayEnvironment(environment, secrets)


def managed_names(spec: GatewaySpec, *, database: bool) -> frozenset[str]:
    """The variables the gateway's container gets from the component (`gateway_container_env`
    plus the region), which `extra_environment` and `extra_secrets` may not name."""
    db = DatabaseEndpoint("host", 5432, "name", "secret-arn", "cluster-arn") if database else None
    env = gateway_container_env(
        spec,
        master_key_secret_arn="master-key-arn",
        salt_key_secret_arn="salt-key-arn" if database else None,
        database=db,
    )
    return frozenset({*env.environment, *env.secrets, *ENV_REGION_VARIABLES})


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
    if route.is_inference_profile and account_id is None:
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


@dataclass(frozen=True)
class GatewayDatabaseSpec:
    """LiteLLM's PostgreSQL, Aurora Serverless v2 in the private subnets."""

    min_capacity_acu: float = 0.5
    """Serverless v2 minimum capacity in ACUs; 0 lets the cluster pause when idle."""
    max_capacity_acu: float = 4.0
    """Serverless v2 maximum capacity in ACUs."""
    engine_version: str = "16.6"
    """Aurora PostgreSQL version (16.6 supports auto-pause at 0 ACU)."""
    backup_retention_days: int = 7
    """Automated backups kept, in days (RDS allows 1-35)."""
    deletion_protection: bool = True
    """RDS refuses to delete the cluster until this is turned off."""


@dataclass(frozen=True, kw_only=True)
class LiteLLMGatewaySpec:
    """The AI gateway's service as plain values: what `services.gateway.LiteLLMGateway` builds
    besides its wiring."""

    litellm: GatewaySpec
    """What the LiteLLM config holds: routes, Bedrock models, the database switch."""
    master_key_secret_arn: str
    """Secrets Manager secret of LITELLM_MASTER_KEY."""
    priority: int
    """First of its two listener rule priorities."""
    path: str = "gateway"
    """ALB path prefix (`/<path>/*`) and Service Connect name."""
    image: str = LITELLM_IMAGE
    """LiteLLM proxy image: the pinned release's."""
    cpu: int = 1024
    """Fargate CPU units (a pair on the grid with `memory_mib`)."""
    memory_mib: int = 2048
    """Fargate memory in MiB."""
    salt_key_secret_arn: str | None = None
    """Secret of LITELLM_SALT_KEY (with the database); None: none."""
    cpu_architecture: CpuArchitecture = "ARM64"
    """ARM64 or X86_64."""
    desired_count: int = 2
    """Tasks at creation (two: one per AZ)."""
    min_count: int = 2
    """Autoscaling lower bound."""
    max_count: int = 4
    """Autoscaling upper bound."""
    target_cpu_percent: float = 60.0
    """Target tracking on average CPU, in percent (the proxy is async I/O; CPU follows request
    rate)."""
    deregistration_delay_seconds: int = 300
    """At least the longest route's timeout."""
    health_check_grace_period_seconds: int = 120
    """Imports and config load take seconds; with the database, LiteLLM migrates its schema
    first."""
    extra_environment: Mapping[str, str] = field(default_factory=dict)
    """Extra plain variables (not the ones the component sets, `managed_names`)."""
    extra_secrets: Mapping[str, str] = field(default_factory=dict)
    """Extra variables from Secrets Manager: env name -> secret ARN, or the reference of the
    stack's own secret (`components.specs.secrets`; not `managed_names`)."""
    secrets_kms_key_arns: tuple[str, ...] = ()
    """Customer-managed KMS keys of the gateway's secrets (the master and salt keys and
    `extra_secrets`): the execution role may decrypt with them."""
    log_retention_days: int = 30
    """CloudWatch Logs retention in days."""
