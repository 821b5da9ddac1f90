"""The gateway's plan: its routes to the planned model services and re-rankers at their Service
Connect addresses, its Bedrock models, its Fargate size, and the spec its component builds."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from ecs_inference import engines, sizing
from ecs_inference.config.gateway import GatewayConfig
from ecs_inference.config.issues import ConfigIssue, Issues
from ecs_inference.config.stack import StackConfig
from ecs_inference.contracts import bedrock, litellm
from ecs_inference.contracts import reranker as reranker_contract
from ecs_inference.models.decisions import ModelDecisions
from ecs_inference.services.decisions import deregistration
from ecs_inference.specs.gateway import (
    BEDROCK_MODEL_ID,
    BEDROCK_PROFILE_PREFIXES,
    MODEL_NAME,
    REGION,
    BedrockRoute,
    GatewayDatabaseSpec,
    GatewaySpec,
    LiteLLMGatewaySpec,
    ModelRoute,
    ServiceTarget,
    managed_names,
)
from ecs_inference.specs.secrets import secret_ref, secret_refs
from ecs_inference.specs.service import RerankerSpec
from ecs_inference.specs.service_connect import private_host


def service_connect_namespace(platform_name: str, stack: str | None) -> str:
    """The Cloud Map namespace of a stack's private routes: `<platform>-<stack>` (HTTP namespace
    names are unique per account and region; aliases read `<service>.<namespace>`)."""
    return f"{platform_name}-{stack}".lower() if stack else platform_name


def resolve_routes(
    services: Mapping[str, ServiceTarget],
    requested: Mapping[str, str] | None = None,
    *,
    path: str = "platform.gateway.routes",
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
            issues.append(
                ConfigIssue(
                    where,
                    f"model name {model_name!r} must start with a letter or digit and use only "
                    "letters, digits and . _ : / - (at most 128 characters)",
                )
            )
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
    path: str = "platform.gateway.bedrock",
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
            issues.append(
                ConfigIssue(
                    where,
                    f"model name {name!r} must start with a letter or digit and use only letters, "
                    "digits and . _ : / - (at most 128 characters)",
                )
            )
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
    cfg: GatewayConfig,
    targets: Mapping[str, ServiceTarget],
    *,
    service_names: Sequence[str],
    priority: int = 1,
    trusted_proxy_ranges: Sequence[str] = (),
) -> tuple[LiteLLMGatewaySpec | None, list[str], list[ConfigIssue]]:
    """The gateway's spec, its decision lines and the problems found. `targets`: every model
    service as the gateway reaches it; `service_names`: every service with an ALB path (the
    gateway's path must differ); `priority`: the first of its listener rules;
    `trusted_proxy_ranges`: the VPC's CIDRs (where the ALB is)."""
    base = "platform.gateway"
    routes, issues = resolve_routes(targets, cfg.routes, path=f"{base}.routes")
    bedrock, more = bedrock_routes(
        cfg.bedrock.models,
        cfg.bedrock.region,
        taken=[r.model_name for r in routes],
        path=f"{base}.bedrock",
    )
    issues += more
    if cfg.path in service_names:
        issues.append(
            ConfigIssue(
                f"{base}.path",
                f"{cfg.path!r} is already the path of a service; choose another path prefix",
            )
        )
    if not routes and not bedrock and not issues:
        issues.append(
            ConfigIssue(base, "the gateway routes to nothing: add a model service or Bedrock model")
        )
    try:
        size = sizing.fargate_size(cfg.cpu, cfg.memory_mib)
    except sizing.SizingError as exc:
        issues.append(ConfigIssue(exc.at(base), str(exc)))
        size = None
    proxy = GatewaySpec(
        routes=routes,
        bedrock=bedrock,
        database=cfg.database.enabled,
        trusted_proxy_ranges=tuple(trusted_proxy_ranges),
    )
    issues += _managed_name_issues(cfg, proxy, base)
    if issues or size is None:
        return None, [], issues
    assert cfg.image is not None  # the config's default is the pinned release
    spec = LiteLLMGatewaySpec(
        litellm=proxy,
        master_key_secret_arn=secret_ref(
            cfg.master_key_path, cfg.master_key or cfg.master_key_secret_arn or ""
        ),
        priority=priority,
        path=cfg.path,
        image=cfg.image,
        cpu=size.cpu,
        memory_mib=size.memory_mib,
        cpu_architecture=cfg.cpu_architecture,
        desired_count=cfg.desired_count,
        min_count=cfg.min_count,
        max_count=cfg.max_count,
        target_cpu_percent=cfg.target_cpu_percent,
        deregistration_delay_seconds=deregistration(proxy.longest_request_seconds).seconds,
        extra_environment=dict(cfg.environment),
        secrets_kms_key_arns=tuple(cfg.kms_key_arns.secrets),
        log_retention_days=cfg.log_retention_days,
        salt_key_secret_arn=_salt_key_ref(cfg),
        extra_secrets=secret_refs("platform.gateway", cfg.secrets),
    )
    return spec, _decisions(spec, size), []


def _salt_key_ref(cfg: GatewayConfig) -> str | None:
    """What the container's `secrets` names for LITELLM_SALT_KEY; None: no salt key."""
    db = cfg.database
    if not db.enabled:
        return None
    if db.salt_key is not None:
        return secret_ref("platform.gateway.database.saltKey", db.salt_key)
    return db.salt_key_secret_arn


def _managed_name_issues(cfg: GatewayConfig, proxy: GatewaySpec, base: str) -> list[ConfigIssue]:
    """`environment` and `secrets` names the component sets itself (`managed_names`)."""
    managed = managed_names(proxy, database=proxy.database)
    return [
        ConfigIssue(
            f"{base}.{section}.{name}",
            f"{name} is set by the gateway itself (its config, port, keys, database and region); "
            "remove it here",
        )
        for section, names in (("environment", cfg.environment), ("secrets", cfg.secrets))
        for name in sorted(set(names) & managed)
    ]


def gateway_database(cfg: GatewayConfig) -> GatewayDatabaseSpec | None:
    """LiteLLM's database when the gateway's config turns it on."""
    db = cfg.database
    return GatewayDatabaseSpec(db.min_capacity_acu, db.max_capacity_acu) if db.enabled else None


def _decisions(spec: LiteLLMGatewaySpec, size: sizing.FargateSize) -> list[str]:
    """The gateway's decision lines: size, routes, Bedrock, database, alarms."""
    proxy = spec.litellm
    routes = ", ".join(f"{r.model_name} -> {r.target.api_base}" for r in proxy.routes)
    lines = [f"LiteLLM proxy on {size.summary()}", f"routes: {routes or 'none'}"]
    if proxy.bedrock:
        lines.append(
            "Bedrock: "
            + ", ".join(f"{b.model_name} -> {b.model_id} ({b.region})" for b in proxy.bedrock)
        )
    lines.append(
        "database: Aurora Serverless v2 PostgreSQL (virtual keys, budgets, rate limits)"
        if proxy.database
        else "database: off (the master key is the only LiteLLM key; no budgets)"
    )
    lines.append(
        f"alarms: p99 response time at {proxy.longest_request_seconds} s (the longest "
        f"route's timeout); CPU above the {spec.target_cpu_percent:g} % scaling target for 10 "
        f"min at maxCount {spec.max_count}; memory, unhealthy targets (LiteLLM's "
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
    rerankers: Mapping[str, RerankerSpec] | None = None,
) -> tuple[LiteLLMGatewaySpec | None, list[str]]:
    """The gateway's spec and decisions, routed to the planned models and `rerankers` (default
    none) at their Service Connect addresses; routes to a service that failed its own checks are
    left out (that service's problem is reported). `vpc_cidr`: the network's (the ALB's
    forwarded-for addresses come from it)."""
    gw = cfg.gateway
    if gw is None:
        return None, []
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
    spec, lines, found = gateway_service(
        gw,
        targets,
        service_names=cfg.service_names(),
        priority=priority,
        trusted_proxy_ranges=(vpc_cidr,),
    )
    issues.extend(found)
    return spec, lines
