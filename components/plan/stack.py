"""The stack's plan: every section's spec, composed in the order the sections depend on each
other (the endpoint's idle timeout and rule priorities, the pools' types, the models on them,
the re-rankers, the gateway and its workers, the images to build, what the endpoint takes from
the services routed through it)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ecs_inference.config.issues import Advisory, Issues
from ecs_inference.config.stack import StackConfig
from ecs_inference.contracts import litellm
from ecs_inference.contracts import reranker as reranker_contract
from ecs_inference.endpoint import decisions as endpoint
from ecs_inference.endpoint.decisions import Routes
from ecs_inference.gateway import decisions as gateway
from ecs_inference.gateway.decisions import GatewayDecisions
from ecs_inference.images import decisions as images
from ecs_inference.images import regions as image_regions
from ecs_inference.models import decisions as model_decisions
from ecs_inference.models.decisions import (
    UNDECIDED_DEPLOY,
    ModelDecisions,
    ModelInputs,
    Placement,
    StackFacts,
    configured_image,
    decide,
)
from ecs_inference.network import decisions as network
from ecs_inference.network.facts import NetworkLookup
from ecs_inference.operations.alarms import AlarmSpec, stack_alarms
from ecs_inference.operations.decisions import decision_lines, operations_alarms, watch_of
from ecs_inference.operations.watch import Watch
from ecs_inference.plan import advisories, pools
from ecs_inference.plan.pools import Placed, PoolChoice
from ecs_inference.pools.decisions import AsgPoolDecisions, ManagedPoolDecisions
from ecs_inference.rerankers.decisions import RerankerDecisions, decide_reranker
from ecs_inference.secrets import decisions as secrets
from ecs_inference.secrets.refs import StackSecret
from ecs_inference.sizing.headroom import DeployChoice
from ecs_inference.sizing.instance_types import Demand
from ecs_inference.storage.decisions import WeightStoreUse, plan_weight_stores
from ecs_inference.storage.input import WeightStoreConfig
from ecs_inference.workers.decisions import WorkerDecisions, plan_workers

PLATFORM_NAME = "inference"
"""Name of the InferencePlatform component; pool, service and capacity-provider names derive
from it."""


@dataclass(frozen=True)
class Plan:
    """A validated config and the spec of every component it makes, with the decisions behind
    them. The pools are kept by config section (the section decides the component)."""

    config: StackConfig
    """The validated config."""
    network: network.NetworkDecisions
    """The VPC: created, or existing and checked."""
    endpoint: Routes
    """What the endpoint takes from the services routed through it; its input is
    `config.endpoint`."""
    gpu_pools: Mapping[str, AsgPoolDecisions]
    neuron_pools: Mapping[str, AsgPoolDecisions]
    managed_instance_pools: Mapping[str, ManagedPoolDecisions]
    models: Mapping[str, ModelDecisions]
    """Each model service's decisions, with what they were decided from around it (`inputs`:
    its pool's types, deploy, listener priority, idle timeout, the stack's facts): its
    component decides again from the same."""
    rerankers: Mapping[str, RerankerDecisions]
    gateway: GatewayDecisions | None
    workers: Mapping[str, WorkerDecisions]
    weight_stores: Mapping[str, tuple[WeightStoreConfig, WeightStoreUse]]
    """EFS file systems of weights, by `weightStores` name or existing file system id."""
    builds: Mapping[str, tuple[str, ...]]
    """Images the stack builds (`images.build`): image name -> Docker platforms."""
    built_images: Mapping[str, str]
    """Service -> the stack's own build it runs (services without an image reference)."""
    service_connect_namespace: str | None
    """Cloud Map namespace of the private routes (gateway or workers configured), else None."""
    operations: Watch
    """What the alarms and the dashboard watch (their thresholds and recipients are
    `config.operations`)."""
    decisions: Mapping[str, list[str]]
    """Human-readable decisions, keyed by subject (printed by the preview, exported)."""
    advisories: tuple[Advisory, ...] = ()
    """Decisions that predict an outage (`components.plan.advisories`) and images pulled from
    another region's registry (`components.plan.image_regions`), printed as warnings."""
    stack_secrets: Mapping[str, StackSecret] = field(default_factory=lambda: {})
    """Secret values of the config the stack stores in Secrets Manager itself, by config
    path; the specs name them by reference (`components.secrets.refs`)."""

    def alarm_specs(self, stack: str = "stack") -> list[AlarmSpec]:
        """The alarms the stack creates (deploy-time dimension values left as placeholders)."""
        return [a for _, a in stack_alarms(stack, self.operations, self.config.operations.alarms)]


@dataclass(frozen=True)
class _Pools:
    gpu: dict[str, AsgPoolDecisions]
    neuron: dict[str, AsgPoolDecisions]
    managed: dict[str, ManagedPoolDecisions]
    decisions: dict[str, list[str]]


def _decide_pools(
    cfg: StackConfig,
    choices: Mapping[str, PoolChoice],
    placed: Mapping[str, list[Placed]],
    issues: Issues,
) -> tuple[_Pools, dict[str, dict[str, DeployChoice]]]:
    """Every pool as decided once its models are placed, and each model's deploy."""
    out = _Pools({}, {}, {}, {})
    deploys: dict[str, dict[str, DeployChoice]] = {}
    telemetry = cfg.operations.host_telemetry
    for name, choice in choices.items():
        on_pool = placed[name]
        deploys[name], notes = pools.share(choice, on_pool, issues)
        if choice.kind == "managed":
            decided = out.managed[name] = pools.managed_pool(choice)
        else:
            decided = pools.asg_pool(choice, on_pool, notes, telemetry)
            (out.gpu if choice.kind == "gpu" else out.neuron)[name] = decided
        out.decisions[f"pool {name}"] = list(decided.lines)
    return out, deploys


def _placed(cfg: StackConfig, pools: Mapping[str, PoolChoice]) -> dict[str, list[Placed]]:
    """Pool name -> the models that fit it (a model its pool could not take is already an
    issue), in config order."""
    out: dict[str, list[Placed]] = {name: [] for name in pools}
    for name, model in cfg.models.items():
        pool = pools.get(model.pool)
        if pool is None or name not in pool.types.fits:
            continue
        out[pool.name].append(
            Placed(
                name,
                model,
                pool.types.tasks_per_instance(name),
                pool.types.layouts[name].devices_per_task,
                configured_image(model, cfg.images),
            )
        )
    return out


def _stack_facts(cfg: StackConfig, region: str | None, stack: str) -> StackFacts:
    """What every model service takes from the stack's settings."""
    return StackFacts(
        weight_stores=dict(cfg.weight_stores),
        metrics_sidecar=cfg.operations.metrics_sidecar,
        metrics_image=cfg.images.metrics,
        execute_command=cfg.cluster.execute_command,
        execute_command_logging=cfg.cluster.execute_command_logging,
        region=region,
        stack=stack,
        alarm_settings=cfg.operations.alarms,
    )


def _model_specs(
    cfg: StackConfig,
    demands: Mapping[str, Demand],
    choices: Mapping[str, PoolChoice],
    specs: _Pools,
    deploys: Mapping[str, Mapping[str, DeployChoice]],
    context: tuple[dict[str, int], int, StackFacts],
    issues: Issues,
) -> tuple[dict[str, ModelDecisions], dict[str, list[str]]]:
    """Every model's decisions and decision lines, on the types its pool chose."""
    priorities, idle, facts = context
    found: dict[str, ModelDecisions] = {}
    lines: dict[str, list[str]] = {}
    for name, model in cfg.models.items():
        pool = choices.get(model.pool)
        if pool is None or name not in pool.types.fits:
            continue  # already reported against the pool or the model
        inputs = ModelInputs(
            name=name,
            model=model,
            demand=demands[name],
            types=pool.types,
            managed=pool.kind == "managed",
            asg_pool=specs.gpu.get(pool.name) or specs.neuron.get(pool.name),
            placement=Placement(
                priority=priorities[name],
                idle_timeout_seconds=idle,
                deploy=deploys[pool.name].get(name, UNDECIDED_DEPLOY),
                facts=facts,
            ),
            image=configured_image(model, cfg.images),
        )
        planned = decide(inputs, issues)
        if planned is not None:
            found[name], lines[f"model {name}"] = planned
    return found, lines


def _rerankers(
    cfg: StackConfig, context: tuple[dict[str, int], int, StackFacts], issues: Issues
) -> dict[str, RerankerDecisions]:
    """Every re-ranker's decisions, at its rule priority behind the endpoint."""
    priorities, idle, facts = context
    found: dict[str, RerankerDecisions] = {}
    for name, rr in cfg.rerankers.items():
        placement = Placement(priorities[name], idle, facts=facts)
        decided, problems = decide_reranker(name, rr, placement, rr.image or cfg.images.reranker)
        issues.extend(problems)
        if decided is not None:
            found[name] = decided
    return found


def network_needs(cfg: StackConfig) -> network.NetworkNeeds:
    """What the stack's other sections ask of the network."""
    gateway = cfg.gateway
    return network.NetworkNeeds(
        internet_facing=cfg.endpoint.internet_facing,
        container_instances=bool(cfg.gpu_pools or cfg.neuron_pools or cfg.managed_instance_pools),
        workers=bool(cfg.workers),
        bedrock=gateway is not None and bool(gateway.bedrock.models),
        outside_ecr_images={
            path: image
            for path, (image, _, _) in image_regions.image_references(cfg).items()
            if not image_regions.ECR_REFERENCE.match(image)
        },
    )


def build_plan(
    config: StackConfig,
    stack: str | None = None,
    region: str | None = None,
    platform_name: str = PLATFORM_NAME,
    project: str | None = None,
    network_lookup: NetworkLookup | None = None,
) -> Plan:
    """Derive every decision from `config`; raise `ConfigError` listing all problems.

    `region` is passed to the engines (S3 streaming endpoint) and picks the instance types the
    region offers at its prices (`components.sizing.offerings`); default None (the SDK's own
    resolution inside the container, and any region's types). `project` and `stack` name the
    workers' queues (checked when both are given). `network_lookup`: what the data sources said
    about `network.existing` (ecs_inference.network.discover); None without one.
    """
    issues = Issues()
    network_spec = network.decide(
        config.network,
        network.NetworkWiring(region=region, needs=network_needs(config), lookup=network_lookup),
        issues,
    )
    longest = endpoint.stack_routes(config).longest_request_seconds
    idle = endpoint.idle_timeout(config.endpoint, longest, issues)
    priorities, gateway_priority = endpoint.rule_priorities(config, issues)
    demands = model_decisions.demands(config.models, issues)
    choices = pools.choose_pools(config, platform_name, demands, issues, region)
    decided_pools, deploys = _decide_pools(config, choices, _placed(config, choices), issues)
    context = (priorities, idle.seconds, _stack_facts(config, region, stack or "stack"))
    model_specs, model_lines = _model_specs(
        config, demands, choices, decided_pools, deploys, context, issues
    )
    reranker_specs = _rerankers(config, context, issues)
    namespace = None
    if config.gateway is not None or config.workers:
        namespace = gateway.service_connect_namespace(platform_name, stack)
    gateway_spec = gateway.plan_gateway(
        config,
        model_specs,
        namespace or "",
        gateway_priority,
        issues,
        network_spec.cidr_block,
        reranker_specs,
    )
    worker_specs = plan_workers(
        config, issues, None if project is None or stack is None else (project, stack)
    )
    builds, built_images, image_lines = images.plan_builds(config, issues)
    ports = [m.launch.port for m in model_specs.values()]
    ports += [reranker_contract.PORT] * bool(reranker_specs) + [litellm.PORT] * bool(gateway_spec)
    issues.raise_if_any(stack)
    watch = watch_of(
        config,
        model_specs,
        reranker_specs,
        {**decided_pools.gpu, **decided_pools.neuron},
        gateway_spec,
        worker_specs,
    )
    alarms = operations_alarms(config.operations, watch, stack or "stack")
    decisions = {
        **({"network": list(network_spec.lines)} if network_spec.lines else {}),
        "endpoint": [idle.summary()],
        **decided_pools.decisions,
        **model_lines,
        **{f"reranker {n}": list(r.lines) for n, r in reranker_specs.items()},
        "operations": decision_lines(config.operations, alarms, watch),
        **({"gateway": gateway.decision_lines(gateway_spec)} if gateway_spec else {}),
        **{f"worker {n}": list(w.lines) for n, w in worker_specs.items()},
        **image_lines,
    }
    return Plan(
        config=config,
        network=network_spec,
        endpoint=endpoint.stack_routes(config, ports),
        gpu_pools=decided_pools.gpu,
        neuron_pools=decided_pools.neuron,
        managed_instance_pools=decided_pools.managed,
        models=model_specs,
        rerankers=reranker_specs,
        gateway=gateway_spec,
        workers=worker_specs,
        weight_stores=plan_weight_stores(config, model_specs, network_spec.cost.availability_zones),
        builds=builds,
        built_images=built_images,
        service_connect_namespace=namespace,
        operations=watch,
        decisions=decisions,
        advisories=(
            *advisories.deploy_advisories(choices, deploys),
            *advisories.spot_advisories(
                config, choices, {**decided_pools.gpu, **decided_pools.neuron}, model_specs
            ),
            *advisories.single_task_advisories(config, model_specs, reranker_specs, gateway_spec),
            *image_regions.advisories(config, region),
        ),
        stack_secrets=secrets.stack_secrets(config),
    )
