"""The LiteLLM proxy's container contract: release, port, routes and environment names.

Stdlib only (the layering test checks it). The generated config
(`components.gateway.litellm_config`) and the gateway's task definition
(`components.gateway.service`) both read these; the tests load generated configs with this exact
release's own parser.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
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
MASTER_KEY_PREFIX = "sk-"
"""What every LiteLLM key starts with: the proxy refuses any other as malformed
(`user_api_key_auth`: "expected to start with 'sk-'")."""
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
ENV_IAM_TOKEN_DB_AUTH = "IAM_TOKEN_DB_AUTH"
"""`true`: LiteLLM connects with an RDS IAM token minted from the task role's credentials
(`litellm.proxy.db.token_auth`) and mints a new one before it lapses (`PrismaClient`'s token
refresh loop), so no password reaches the task and nothing goes stale when RDS rotates the
master secret (ECS resolves `secrets` only at task start)."""
ENV_DATABASE_SSLMODE = "DATABASE_SSLMODE"
"""libpq `sslmode` of the assembled URL: `require`, which RDS IAM authentication needs."""
DATABASE_IAM_USER = "litellm"
"""The PostgreSQL role LiteLLM logs in as with IAM tokens (granted `rds_iam`)."""
ROUTING_STRATEGIES = (
    "simple-shuffle",
    "least-busy",
    "usage-based-routing",
    "latency-based-routing",
    "cost-based-routing",
    "usage-based-routing-v2",
)
"""LiteLLM router strategies (`litellm.types.litellm_params.RoutingStrategyName`)."""

RERANK_PROVIDER = "cohere"
"""LiteLLM's provider for the stack's re-rankers: Cohere's rerank API, which the re-ranker image
serves. Given an `api_base` ending in neither `/v1/rerank` nor `/v2/rerank`, LiteLLM calls
`<api_base>/v2/rerank` (`litellm.utils.should_use_cohere_v1_client`,
`CohereRerankV2Config.get_complete_url`)."""

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


# --- the database bootstrap: a one-off function creating LiteLLM's IAM role ------------------
# It runs once per change of its input, with its own role, outside the serving task: the only
# duty that needs the master user (through the Data API, which reads the master secret with the
# caller's credentials), so the proxy that serves requests never holds that grant.
BOOTSTRAP_EVENT_CLUSTER = "clusterArn"
BOOTSTRAP_EVENT_SECRET = "secretArn"
BOOTSTRAP_EVENT_DATABASE = "database"
BOOTSTRAP_EVENT_USER = "user"
BOOTSTRAP_EVENT_STATEMENTS = "statements"
BOOTSTRAP_RUNTIME = "python3.12"
"""The Lambda runtime the handler runs on (it ships boto3, which the handler needs)."""
BOOTSTRAP_HANDLER_FILE = "index.py"
BOOTSTRAP_HANDLER = "index.handler"
BOOTSTRAP_TIMEOUT_SECONDS = 900
"""Lambda's longest run: a paused Serverless v2 cluster takes seconds to a minute to resume."""


def bootstrap_statements(user: str, database: str) -> tuple[str, ...]:
    """Idempotent SQL that lets `user` log in with IAM tokens and own LiteLLM's tables: a
    login role granted `rds_iam` ("Creating a database account using IAM authentication",
    Aurora user guide), all privileges on `database` and its public schema (PostgreSQL 15+ no
    longer lets every role create in `public`)."""
    if not (user.isidentifier() and database.isidentifier()):
        raise ValueError(f"{user!r} and {database!r} must be plain SQL identifiers")
    return (
        f"DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{user}') "
        f"THEN CREATE ROLE {user} LOGIN; END IF; END $$",
        f"GRANT rds_iam TO {user}",
        f"GRANT ALL PRIVILEGES ON DATABASE {database} TO {user}",
        f"GRANT ALL ON SCHEMA public TO {user}",
    )


def bootstrap_event(*, cluster_arn: str, secret_arn: str, database: str, user: str) -> str:
    """The function's input (JSON): the cluster, its master secret, and the statements."""
    return json.dumps(
        {
            BOOTSTRAP_EVENT_CLUSTER: cluster_arn,
            BOOTSTRAP_EVENT_SECRET: secret_arn,
            BOOTSTRAP_EVENT_DATABASE: database,
            BOOTSTRAP_EVENT_USER: user,
            BOOTSTRAP_EVENT_STATEMENTS: list(bootstrap_statements(user, database)),
        }
    )


BOOTSTRAP_HANDLER_SOURCE = """\
import time
import boto3

client = boto3.client("rds-data")


def handler(event, context):
    for sql in event["statements"]:
        while True:
            try:
                client.execute_statement(
                    resourceArn=event["clusterArn"],
                    secretArn=event["secretArn"],
                    database=event["database"],
                    sql=sql,
                )
                break
            except client.exceptions.DatabaseResumingException:
                # A paused Serverless v2 cluster resumes within about a minute.
                if context.get_remaining_time_in_millis() < 30_000:
                    raise
                time.sleep(10)
    print("db-bootstrap: role", event["user"], "ready", flush=True)
    return {"user": event["user"]}
"""
"""The function's code (`index.py`, handler `index.handler`): runs the statements through the
RDS Data API as the master user, retrying while a paused cluster resumes."""


def bootstrap_aws_calls(event: Mapping[str, Any]) -> tuple[AwsCall, ...]:
    """The bootstrap function's calls with its role, for one `bootstrap_event`: the Data API on
    the cluster, and the master secret the Data API reads with the caller's credentials."""
    cluster, secret = event.get(BOOTSTRAP_EVENT_CLUSTER), event.get(BOOTSTRAP_EVENT_SECRET)
    if not (isinstance(cluster, str) and isinstance(secret, str)):
        return ()
    why = f"create the {event.get(BOOTSTRAP_EVENT_USER)} role through the RDS Data API"
    return (
        AwsCall("rds-data:ExecuteStatement", cluster, why),
        AwsCall("secretsmanager:GetSecretValue", secret, why),
    )


def database_aws_calls(environment: Environment) -> tuple[AwsCall, ...]:
    """LiteLLM's IAM-token login (`rds-db:connect` on its database user), when it is on; the
    cluster's resource id (`{db_resource_id}`) is the rehearsal's to fill in."""
    if environment.get(ENV_IAM_TOKEN_DB_AUTH, "").lower() != "true":
        return ()
    user = environment.get(ENV_DATABASE_USERNAME, "")
    return (
        AwsCall(
            "rds-db:connect",
            f"arn:{{partition}}:rds-db:{{region}}:{{account}}:dbuser:{{db_resource_id}}/{user}",
            f"log in to the database as {user} with an IAM token",
        ),
    )
