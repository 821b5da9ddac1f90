"""`ecs-inference:platform`: every section of one stack, and the checks that span sections
(pools named by models exist and match their engine, names unique, every service has an image).

A stack file carries one structured key::

    config:
      aws:region: us-east-1
      ecs-inference:platform:
        network: {...}
        endpoint: {...}
        images: {...}
        gpuPools: {<pool>: {...}}
        neuronPools: {<pool>: {...}}
        models: {<service>: {...}}
        rerankers: {<service>: {...}}

Every section is frozen and forbids unknown keys, so a typo is an error rather than a silently
ignored setting. Keys are camelCase in YAML (`maxModelLen`) and snake_case in Python.
"""

from __future__ import annotations

from pydantic import Field

from ecs_inference import engines
from ecs_inference.config.base import ROOT, Name, Section
from ecs_inference.config.issues import Issues
from ecs_inference.endpoint.input import EndpointConfig
from ecs_inference.gateway.input import GatewayConfig
from ecs_inference.images.input import ImagesConfig
from ecs_inference.models.input import ModelConfig, scaling_metric_problem
from ecs_inference.network.input import NetworkConfig
from ecs_inference.operations.input import OperationsConfig
from ecs_inference.pools.input import ClusterConfig, ManagedInstancePoolConfig, PoolConfig
from ecs_inference.rerankers.input import RerankerConfig
from ecs_inference.storage.efs import EfsConfigError, parse_efs_uri
from ecs_inference.storage.input import WeightStoreConfig
from ecs_inference.workers.input import WorkerConfig


class StackConfig(Section):
    """Everything one stack deploys. Only `endpoint` is required; pools and services are maps
    keyed by short names. Tags for every resource come from the provider's own
    `aws:defaultTags` stack setting."""

    network: NetworkConfig = Field(default_factory=lambda: NetworkConfig.model_validate({}))
    """VPC, NAT and VPC endpoints."""
    cluster: ClusterConfig = Field(default_factory=ClusterConfig)
    """ECS cluster settings."""
    endpoint: EndpointConfig
    """The authenticated internal ALB in front of every service."""
    images: ImagesConfig = Field(default_factory=ImagesConfig)
    """Default image per engine."""
    gpu_pools: dict[Name, PoolConfig] = Field(default_factory=dict)
    """NVIDIA GPU capacity pools, by name."""
    neuron_pools: dict[Name, PoolConfig] = Field(default_factory=dict)
    """Inferentia/Trainium capacity pools, by name."""
    managed_instance_pools: dict[Name, ManagedInstancePoolConfig] = Field(default_factory=dict)
    """ECS Managed Instances GPU capacity pools, by name."""
    models: dict[Name, ModelConfig] = Field(default_factory=dict)
    """LLM services, by name (the name is the URL path prefix)."""
    rerankers: dict[Name, RerankerConfig] = Field(default_factory=dict)
    """Fargate cross-encoder re-rankers, by name (also the URL path prefix)."""
    weight_stores: dict[Name, WeightStoreConfig] = Field(default_factory=dict)
    """Stack-managed EFS file systems for weights, by name (`weightsUri: efs://<name>/...`)."""
    operations: OperationsConfig = Field(
        default_factory=lambda: OperationsConfig.model_validate({})
    )
    """Metrics, host telemetry, dashboard and alarms."""
    gateway: GatewayConfig | None = None
    """The AI gateway (LiteLLM) in front of every model and optional Bedrock models; unset:
    none."""
    workers: dict[Name, WorkerConfig] = Field(default_factory=dict)
    """Queue workers on Fargate, by name; they call models through the gateway."""
    protect: bool = True
    """Keep what cannot be recreated when the stack is destroyed: on (prod), the Cognito user
    pool has deletion protection and, like the ALB access-log bucket, is retained by `pulumi
    destroy` (left in the account, dropped from the state); off (dev), both are deleted, the
    bucket with its logs."""

    def service_names(self) -> list[str]:
        return [*self.models, *self.rerankers]

    def metrics_sidecar_services(self) -> list[str]:
        """Services that run the metrics sidecar: with `operations.metricsSidecar`, every
        re-ranker and every model whose engine has a scrape family (`Engine.metrics_kind`;
        the others run without it and scale on ALB requests)."""
        if not self.operations.metrics_sidecar:
            return []
        return [*(n for n, m in self.models.items() if _scraped(m)), *self.rerankers]


# --------------------------------------------------------------------------------------------
# checks across sections
# --------------------------------------------------------------------------------------------


def check_references(cfg: StackConfig, issues: Issues) -> None:
    """Cross-section checks: pools exist and match the engine, names unique, images given."""
    for name, model in cfg.models.items():
        _model_references(cfg, name, model, issues)
    for name, rr in cfg.rerankers.items():
        if name in cfg.models:
            issues.add(
                f"{ROOT}.rerankers.{name}",
                "a model service has the same name; service names share the URL path space",
            )
        if not cfg.images.build and rr.image is None and cfg.images.reranker is None:
            issues.add(
                f"{ROOT}.rerankers.{name}.image",
                "no image: set `image` here or `images.reranker`, or `images.build: true`",
            )
    if cfg.metrics_sidecar_services() and not cfg.images.build and cfg.images.metrics is None:
        issues.add(
            f"{ROOT}.images.metrics",
            "the metrics sidecar needs an image: set `images.metrics`, or `images.build: "
            "true`, or turn it off with `operations.metricsSidecar: false`",
        )
    _scaling_metrics(cfg, issues)
    if cfg.images.build and not images_to_build(cfg):
        issues.add(
            f"{ROOT}.images.build",
            "nothing to build: every service already has an image (its own `image` or "
            "`images.<engine>`); remove `build: true` or the references it should replace",
        )
    _pool_name_clashes(cfg, issues)


def _model_references(cfg: StackConfig, name: str, model: ModelConfig, issues: Issues) -> None:
    """The model's weights store, pool and image exist."""
    gpu = model.on_gpu
    section = "gpuPools or managedInstancePools" if gpu else "neuronPools"
    pools = [*cfg.gpu_pools, *cfg.managed_instance_pools] if gpu else [*cfg.neuron_pools]
    if model.weights_uri is not None and model.weights_uri.startswith("efs://"):
        try:
            parse_efs_uri(
                model.weights_uri, f"{ROOT}.models.{name}.weightsUri", list(cfg.weight_stores)
            )
        except EfsConfigError as exc:
            path, _, message = str(exc).partition(": ")
            issues.add(path, message)
    if model.pool not in pools:
        known = ", ".join(sorted(pools)) or "none defined"
        issues.add(
            f"{ROOT}.models.{name}.pool",
            f"engine {model.engine} needs a pool from {section} (known: {known}); "
            f"got {model.pool!r}",
        )
    if not cfg.images.build and _unpinned(cfg, model):
        issues.add(
            f"{ROOT}.models.{name}.image",
            f"no image: set `image` here or `images.{model.engine}`, or `images.build: true`",
        )


def _scaling_metrics(cfg: StackConfig, issues: Issues) -> None:
    """Engine-load and KV-cache scaling read what the metrics sidecar publishes: only for the
    engines it can scrape, and only with the sidecar on."""
    for name, model in cfg.models.items():
        problem = scaling_metric_problem(model, cfg.operations.metrics_sidecar)
        if problem is not None:
            issues.add(f"{ROOT}.models.{name}.autoscaling.metric", problem)


def _pool_name_clashes(cfg: StackConfig, issues: Issues) -> None:
    """Models name their pool across every section, and a pool names its capacity provider."""
    seen: dict[str, str] = {}
    for section, pools in (
        ("gpuPools", cfg.gpu_pools),
        ("neuronPools", cfg.neuron_pools),
        ("managedInstancePools", cfg.managed_instance_pools),
    ):
        for pool in pools:
            if pool in seen:
                issues.add(
                    f"{ROOT}.{section}.{pool}",
                    f"a pool in {seen[pool]} has the same name; rename one (pool names are "
                    "unique across gpuPools, neuronPools and managedInstancePools)",
                )
            else:
                seen[pool] = section


def _unpinned(cfg: StackConfig, model: ModelConfig) -> bool:
    """The model names no image: neither its own `image` nor `images.<engine>` (an engine
    without a default image is always given one)."""
    default = engines.get(model.engine).default_image
    return bool(default) and model.image is None and cfg.images.for_engine(model.engine) is None


def _scraped(model: ModelConfig) -> bool:
    """Whether the metrics sidecar knows the model's engine's metric families."""
    return engines.get(model.engine).metrics_kind is not None


def images_to_build(cfg: StackConfig) -> dict[str, list[str]]:
    """With `images.build`, the images the stack must build: image name (an engine's, as
    `images/<engine>`, or `reranker`, `metrics`) -> the services that run it (those without
    their own `image` and without an `images.<engine>` reference). Empty when `images.build`
    is false."""
    if not cfg.images.build:
        return {}
    users: dict[str, list[str]] = {}
    for name, model in cfg.models.items():
        if _unpinned(cfg, model):
            users.setdefault(model.engine, []).append(name)
    for name, rr in cfg.rerankers.items():
        if rr.image is None and cfg.images.reranker is None:
            users.setdefault("reranker", []).append(name)
    if cfg.images.metrics is None and cfg.metrics_sidecar_services():
        users["metrics"] = cfg.metrics_sidecar_services()
    return users
