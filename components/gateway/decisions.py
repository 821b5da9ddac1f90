"""The gateway's decisions (pure): its routes to the services at their Service Connect
addresses, its Bedrock models, its Fargate size, its keys and its generated config, from its
input and what the stack places around it; `LiteLLMGateway` and the stack's plan both call
`gateway_service`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from ecs_inference import engines
from ecs_inference.config.issues import ConfigIssue, Issues
from ecs_inference.config.stack import StackConfig
from ecs_inference.contracts import bedrock, litellm
from ecs_inference.contracts import reranker as reranker_contract
from ecs_inference.gateway.input import GatewayConfig
from ecs_inference.gateway.litellm_config import (
    BEDROCK_MODEL_ID,
    BEDROCK_PROFILE_PREFIXES,
    CONFIG_ENV_MAX_BYTES,
    MODEL_NAME,
    REGION,
    BedrockRoute,
    ModelRoute,
    ServiceTarget,
    litellm_config,
    longest_request_seconds,
    managed_names,
    render_litellm_config,
)
from ecs_inference.models.decisions import ModelDecisions
from ecs_inference.rerankers.decisions import RerankerDecisions
from ecs_inference.secrets.refs import secret_ref, secret_refs
from ecs_inference.services.decisions import FargateDecisions, deregistration
from ecs_inference.services.service_connect import private_host

BASE = "platform.gateway"
GRACE_SECONDS = 120
"""Health-check grace period: imports and config load take seconds; with the database, LiteLLM
migrates its schema first."""


@dataclass(frozen=True)
class GatewayPlacement:
    """What the stack decides for the gateway across components."""

    targets: Mapping[str, ServiceTarget]
    """Every service the gateway may route to, by its key (`<service>/<adapter>` for a LoRA
    adapter, `adapter_targets`), at its Service Connect address."""
    priority: int = 1
    """The first of its two listener rule priorities; default 1."""
    trusted_proxy_ranges: tuple[str, ...] = ()
    """The VPC's CIDRs, where the ALB is (LiteLLM reads the client from X-Forwarded-For);
    default none."""


@dataclass(frozen=True, kw_only=True)
class GatewayDecisions(FargateDecisions[GatewayConfig, GatewayPlacement]):
    """What the gateway decides from its input (`input`, read from there) and its placement."""

    routes: tuple[ModelRoute, ...]
    """Gateway model name -> ECS service, resolved from `input.routes`."""
    bedrock: tuple[BedrockRoute, ...]
    """Gateway model name -> Bedrock model, resolved from `input.bedrock`."""
    config_yaml: str
    """The generated LiteLLM config (`litellm_config`), as the text the container gets."""
    secret_refs: Mapping[str, str]
    """The container's `secrets`: the master key, the salt key with the database and the
    input's `secrets`, each an ARN or the stack's own secret's reference."""

    @property
    def longest_request_seconds(self) -> int:
        """The longest any route may take (`litellm_config.longest_request_seconds`)."""
        return longest_request_seconds(self.routes, self.bedrock)

    @property
    def deregistration_delay_seconds(self) -> int:
        """The target group's deregistration delay: the longest route's timeout plus the
        margin (`deregistration`)."""
        return deregistration(self.longest_request_seconds).seconds


def service_connect_namespace(platform_name: str, stack: str | None) -> str:
    """The Cloud Map namespace of a stack's private routes: `<platform>-<stack>` (HTTP namespace
    names are unique per account and region; aliases read `<service>.<namespace>`)."""
    return f"{platform_name}-{stack}".lower() if stack else platform_name


def resolve_routes(
    services: Mapping[str, ServiceTarget],
    requested: Mapping[str, str] | None = None,
    *,
    path: str = f"{BASE}.routes",
) -> tuple[tuple[ModelRoute, ...], list[ConfigIssue]]:
    """The gateway's routes to ECS model services, and the problems found.

    `services`: every model service of the plan, by its config key. `requested`: gateway model
    name -> service key; default None (every service routed by default, under its served model
    name; an explicit route may name any service). Problems: a
    route to a service that does not exist (at `<path>.<model name>`), a model name LiteLLM would
    misread, two services under one model name (LiteLLM would load-balance two different models
    as one).
    """
    issues: list[ConfigIssue] = []
    if requested is None:
        default = {key: t for key, t in services.items() if t.routed_by_default}
        wanted = {t.served_model_name: key for key, t in default.items()}
        owners: dict[str, list[str]] = {}
        for key, t in default.items():
            owners.setdefault(t.served_model_name, []).append(key)
        for name, keys in owners.items():
            if len(keys) > 1:
                issues.append(
                    ConfigIssue(
                        path,
                        f"services {', '.join(sorted(keys))} all serve the model name {name!r}; "
                        "the gateway would balance requests across different models: give them "
                        "distinct servedModelName values or list routes explicitly",
                    )
                )
    else:
        wanted = dict(requested)
    routes: list[ModelRoute] = []
    for model_name, key in wanted.items():
        where = f"{path}.{model_name}"
        if not MODEL_NAME.match(model_name):
            issues.append(_model_name_issue(where, model_name))
            continue
        target = services.get(key)
        if target is None:
            known = ", ".join(sorted(services)) or "none"
            issues.append(
                ConfigIssue(
                    where,
                    f"routes to service {key!r}, which does not exist (services: {known}); "
                    "name a key of platform.models or platform.rerankers",
                )
            )
            continue
        routes.append(ModelRoute(model_name, target))
    return tuple(routes), issues


def _model_name_issue(where: str, name: str) -> ConfigIssue:
    """A gateway model name LiteLLM would misread (`MODEL_NAME`)."""
    return ConfigIssue(
        where,
        f"model name {name!r} must start with a letter or digit and use only letters, digits "
        "and . _ : / - (at most 128 characters)",
    )


ADAPTER_SEP = "/"
"""A route to a LoRA adapter names `<service>/<adapter name>` (`gateway.routes`)."""


def adapter_targets(
    services: Mapping[str, ServiceTarget], adapters: Mapping[str, Sequence[str]]
) -> dict[str, ServiceTarget]:
    """A target per LoRA adapter, keyed `<service>/<adapter>`: the same service, the adapter's
    name as the `model` vLLM answers to; routed by default like its service."""
    return {
        f"{key}{ADAPTER_SEP}{name}": replace(services[key], served_model_name=name, adapter=True)
        for key, names in adapters.items()
        for name in names
    }


def bedrock_routes(
    models: Mapping[str, str],
    region: str | None,
    *,
    taken: Sequence[str] = (),
    path: str = f"{BASE}.bedrock",
) -> tuple[tuple[BedrockRoute, ...], list[ConfigIssue]]:
    """Bedrock routes (gateway model name -> model id, all in `region`) and the problems found:
    models without a region, an invalid region or model id, a name already `taken` by a route."""
    issues: list[ConfigIssue] = []
    if not models:
        return (), issues
    if region is None:
        issues.append(
            ConfigIssue(
                f"{path}.region",
                "Bedrock models are configured but no region is set: set the region whose "
                "Bedrock endpoint serves them (model access is granted per region)",
            )
        )
    elif not REGION.match(region):
        issues.append(
            ConfigIssue(f"{path}.region", f"{region!r} is not an AWS region name (us-east-1)")
        )
    routes: list[BedrockRoute] = []
    for name, model_id in models.items():
        where = f"{path}.models.{name}"
        if not MODEL_NAME.match(name):
            issues.append(_model_name_issue(where, name))
        elif name in taken:
            issues.append(
                ConfigIssue(where, f"model name {name!r} is already a route to a model service")
            )
        elif not BEDROCK_MODEL_ID.match(model_id):
            issues.append(
                ConfigIssue(
                    where,
                    f"{model_id!r} is not a Bedrock model id (provider.model-version:revision, "
                    "e.g. anthropic.claude-haiku-4-5-20251001-v1:0, optionally with an inference "
                    f"profile prefix {'/'.join(BEDROCK_PROFILE_PREFIXES)})",
                )
            )
        elif (problem := bedrock_model_problem(model_id, region)) is not None:
            issues.append(ConfigIssue(where, problem))
        elif region is not None:
            routes.append(BedrockRoute(name, model_id, region))
    return tuple(routes), issues


def bedrock_model_problem(model_id: str, region: str | None) -> str | None:
    """Why Bedrock would refuse to invoke `model_id` (None: it would not): a retired model, or
    one it serves only through an inference profile (`contracts/bedrock.py`, with sources)."""
    model = bedrock.foundation_model_id(model_id)
    if model in bedrock.RETIRED:
        end, successor = bedrock.RETIRED[model]
        return f"{model} reached its Bedrock end of life on {end}: use {successor}"
    if model_id in bedrock.PROFILES_ONLY and region is not None:
        return (
            f"Bedrock does not invoke {model_id} on demand ({bedrock.PROFILES_ONLY[model_id]}): "
            f"name its inference profile, {bedrock.profile_for(model_id, region)}"
        )
    return None


def gateway_service(
    cfg: GatewayConfig, placement: GatewayPlacement, *, service_names: Sequence[str] = ()
) -> tuple[GatewayDecisions | None, list[ConfigIssue]]:
    """The gateway's decisions, or None and the problems found. `service_names`: every service
    with an ALB path (the gateway's path must differ); default none."""
    routes, issues = resolve_routes(placement.targets, cfg.routes)
    bedrock, more = bedrock_routes(
        cfg.bedrock.models, cfg.bedrock.region, taken=[r.model_name for r in routes]
    )
    issues += more
    if cfg.path in service_names:
        issues.append(
            ConfigIssue(
                f"{BASE}.path",
                f"{cfg.path!r} is already the path of a service; choose another path prefix",
            )
        )
    if not routes and not bedrock and not issues:
        issues.append(
            ConfigIssue(BASE, "the gateway routes to nothing: add a model service or Bedrock model")
        )
    size = GatewayDecisions.exact_size(cfg, BASE, issues)
    issues += GatewayDecisions.managed_name_issues(
        cfg,
        BASE,
        managed_names(database=cfg.database.enabled),
        "the gateway itself (its config, port, keys, database and region)",
    )
    text = render_litellm_config(
        litellm_config(
            routes,
            bedrock,
            database=cfg.database.enabled,
            trusted_proxy_ranges=placement.trusted_proxy_ranges,
        )
    )
    if len(text.encode()) > CONFIG_ENV_MAX_BYTES:
        issues.append(
            ConfigIssue(
                BASE,
                f"the gateway config is {len(text.encode())} bytes for "
                f"{len(routes) + len(bedrock)} routes, above the {CONFIG_ENV_MAX_BYTES} bytes "
                "that fit in the task definition; split the stack's models across gateways",
            )
        )
    if issues or size is None:
        return None, issues
    return GatewayDecisions(
        input=cfg,
        placement=placement,
        routes=routes,
        bedrock=bedrock,
        config_yaml=text,
        secret_refs=_secret_refs(cfg),
        size=size,
    ), []


def _secret_refs(cfg: GatewayConfig) -> dict[str, str]:
    """What the container's `secrets` name: the master key, LITELLM_SALT_KEY with the database,
    then the input's own."""
    refs = {
        litellm.ENV_MASTER_KEY: secret_ref(
            cfg.master_key_path, cfg.master_key or cfg.master_key_secret_arn or ""
        )
    }
    db = cfg.database
    if db.enabled and db.salt_key is not None:
        refs[litellm.ENV_SALT_KEY] = secret_ref(f"{BASE}.database.saltKey", db.salt_key)
    elif db.enabled and db.salt_key_secret_arn is not None:
        refs[litellm.ENV_SALT_KEY] = db.salt_key_secret_arn
    return refs | secret_refs(BASE, cfg.secrets)


def decision_lines(decided: GatewayDecisions) -> list[str]:
    """The gateway's decision lines (the preview prints them): size, routes, Bedrock, database,
    alarms."""
    cfg = decided.input
    routes = ", ".join(f"{r.model_name} -> {r.target.api_base}" for r in decided.routes)
    lines = [f"LiteLLM proxy on {decided.size.summary()}", f"routes: {routes or 'none'}"]
    if decided.bedrock:
        lines.append(
            "Bedrock: "
            + ", ".join(f"{b.model_name} -> {b.model_id} ({b.region})" for b in decided.bedrock)
        )
    lines.append(
        "database: Aurora Serverless v2 PostgreSQL (virtual keys, budgets, rate limits)"
        if cfg.database.enabled
        else "database: off (the master key is the only LiteLLM key; no budgets)"
    )
    lines.append(
        f"alarms: p99 response time at {decided.longest_request_seconds} s (the longest "
        f"route's timeout); CPU above the {cfg.target_cpu_percent:g} % scaling target for 10 "
        f"min at maxCount {cfg.max_count}; memory, unhealthy targets (LiteLLM's "
        f"{litellm.HEALTH_PATH}), target 5xx, tasks below desired"
        + "; dashboard row: requests/5xx, response time, targets, CPU/memory, tasks"
    )
    return lines


def plan_gateway(
    cfg: StackConfig,
    models: Mapping[str, ModelDecisions],
    namespace: str,
    priority: int,
    issues: Issues,
    vpc_cidr: str,
    rerankers: Mapping[str, RerankerDecisions] | None = None,
) -> GatewayDecisions | None:
    """The gateway's decisions, routed to the planned models and `rerankers` (default none) at
    their Service Connect addresses; routes to a service that failed its own checks are left out
    (that service's problem is reported). `vpc_cidr`: the network's (the ALB's forwarded-for
    addresses come from it)."""
    gw = cfg.gateway
    if gw is None:
        return None
    targets = {
        name: ServiceTarget(
            service=name,
            served_model_name=m.launch.served_model_name,
            host=private_host(name, namespace),
            port=m.launch.port,
            timeout_seconds=cfg.models[name].max_generation_seconds,
            provider=engines.get(cfg.models[name].engine).gateway_provider,
            routed_by_default=engines.get(cfg.models[name].engine).routed_by_default,
        )
        for name, m in models.items()
    }
    targets |= adapter_targets(
        targets, {name: m.launch.adapter_names for name, m in models.items()}
    )
    for name in rerankers or {}:
        # The service answers to its key (`reranker_environment` sets MODEL_NAME to it).
        targets[name] = ServiceTarget(
            service=name,
            served_model_name=name,
            host=private_host(name, namespace),
            port=reranker_contract.PORT,
            timeout_seconds=cfg.rerankers[name].max_request_seconds,
            provider=litellm.RERANK_PROVIDER,
            mode="rerank",
        )
    if gw.routes is not None:
        failed = (set(cfg.models) - set(models)) | (set(cfg.rerankers) - set(rerankers or {}))
        gw = gw.model_copy(
            update={
                "routes": {
                    k: v for k, v in gw.routes.items() if v.partition(ADAPTER_SEP)[0] not in failed
                }
            }
        )
    decided, found = gateway_service(
        gw,
        GatewayPlacement(targets, priority, (vpc_cidr,)),
        service_names=cfg.service_names(),
    )
    issues.extend(found)
    return decided
