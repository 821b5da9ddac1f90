"""InferencePlatform: the whole stack, composed from one validated plan.

Builds, in dependency order: the stack's own images when `images.build` asks for them
(components.images: ECR repositories and docker-build images, run by digest), the
Network (VPC, NAT, VPC endpoints), the ECS Cluster, the capacity pools (Auto Scaling groups of
one or several instance types, or ECS Managed Instances),
the authenticated Endpoint, and every model and re-ranker service behind it. All decisions
(sizing, tensor parallel size, Fargate size, timeouts) were made by
`components.plan.build_plan` before this component registers anything, so an invalid stack
registers nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from typing import Any, TypeVar

import pulumi
import pulumi_aws as aws

from ecs_inference.capacity.asg_pool import (
    GpuAsgPool,
    GpuAsgPoolArgs,
    InferentiaPool,
    InferentiaPoolArgs,
    PoolArgs,
)
from ecs_inference.capacity.managed_instances_pool import (
    ManagedInstancesPool,
    ManagedInstancesPoolArgs,
)
from ecs_inference.cluster import Cluster, ClusterArgs
from ecs_inference.contracts import litellm
from ecs_inference.images import ImageBuilds, ImageBuildsArgs
from ecs_inference.ingress.alb import Endpoint, EndpointArgs
from ecs_inference.network import Network, NetworkArgs
from ecs_inference.operations import (
    GatewayWatch,
    Operations,
    OperationsArgs,
    ServiceWatch,
    WorkerWatch,
)
from ecs_inference.plan import Plan, pool_resource_name
from ecs_inference.services.base import EfsAccess, ServiceWiring, exec_log_group_name
from ecs_inference.services.gateway import (
    LiteLLMGateway,
    LiteLLMGatewayArgs,
    ModelEndpoint,
    gateway_security_group,
)
from ecs_inference.services.gateway_db import GatewayDatabase, GatewayDatabaseArgs
from ecs_inference.services.model import ModelService, ModelServiceArgs
from ecs_inference.services.reranker import FargateReranker, FargateRerankerArgs
from ecs_inference.services.worker import QueueWorker, QueueWorkerArgs
from ecs_inference.specs.gateway import GatewayPlan
from ecs_inference.specs.operations import Subscription
from ecs_inference.specs.service_connect import Namespace, private_host
from ecs_inference.storage import WeightFileSystem, WeightFileSystemArgs, task_volume

_Args = TypeVar("_Args")


def with_wiring(cls: type[_Args], spec: Any, **wiring: Any) -> _Args:
    """`cls` (a component's Args: its spec class plus wiring fields) from `spec` and `wiring`;
    a wiring value replaces the spec's field of the same name (the built image reference)."""
    values = {f.name: getattr(spec, f.name) for f in fields(spec)}
    return cls(**{**values, **wiring})


def _image(image: str | None, built: str, built_images: Mapping[str, pulumi.Input[str]]):
    """The configured reference, else the digest reference of the stack's build of `built`."""
    return image if image is not None else built_images[built]


class InferencePlatform(pulumi.ComponentResource):
    """Everything one stack deploys. Attributes: `images` (ImageBuilds, or None unless
    `images.build`), `network`, `cluster`, `pools` (by pool name),
    `capacity_providers` (the cluster association), `endpoint`, `models` and `rerankers` (by
    service name), `plan`."""

    def __init__(
        self,
        name: str,
        plan: Plan,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("ecs-inference:index:InferencePlatform", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        cfg = plan.config
        self.plan = plan
        self.images: ImageBuilds | None = None
        if plan.builds:
            self.images = ImageBuilds(
                f"{name}-images",
                ImageBuildsArgs(
                    images=plan.builds,
                    # ECR names are lowercase; Pulumi stack names need not be.
                    repository_prefix=f"{pulumi.get_project()}/{pulumi.get_stack()}".lower(),
                ),
                opts=child,
            )
        built_images = dict(self.images.references) if self.images else {}

        self.network = Network(
            f"{name}-net",
            NetworkArgs(
                cidr_block=cfg.network.cidr_block,
                az_count=cfg.network.availability_zones,
                az_names=cfg.network.availability_zone_names,
                nat_per_az=cfg.network.nat_gateways == "perAz",
                vpc_endpoints=cfg.network.vpc_endpoints,
            ),
            opts=child,
        )
        self.cluster = Cluster(
            f"{name}-ecs",
            ClusterArgs(
                container_insights=cfg.cluster.container_insights,
                # Session logging only exists where ECS Exec is switched on.
                execute_command_logging=cfg.cluster.execute_command
                and cfg.cluster.execute_command_logging,
                exec_log_group_name=exec_log_group_name(),
            ),
            opts=child,
        )
        self.pools: dict[str, GpuAsgPool | InferentiaPool | ManagedInstancesPool] = {}
        for pool_name, pool in plan.pools.items():
            if pool.managed:
                self.pools[pool_name] = ManagedInstancesPool(
                    pool_resource_name(name, pool_name),
                    ManagedInstancesPoolArgs(
                        # Managed Instances providers belong to one cluster (required by the
                        # provider for this kind).
                        cluster_name=self.cluster.name,
                        vpc_id=self.network.vpc_id,
                        subnet_ids=self.network.private_subnet_ids,
                        requirements=pool.requirements,
                        options=pool.managed_options,
                    ),
                    opts=child,
                )
                continue
            component, args_cls = (
                (GpuAsgPool, GpuAsgPoolArgs)
                if pool.kind == "gpu"
                else (InferentiaPool, InferentiaPoolArgs)
            )
            args: PoolArgs = with_wiring(
                args_cls,
                pool.spec,
                cluster_name=self.cluster.name,
                vpc_id=self.network.vpc_id,
                subnet_ids=self.network.private_subnet_ids,
            )
            self.pools[pool_name] = component(pool_resource_name(name, pool_name), args, opts=child)
        # One association per cluster: every ASG pool plus Fargate for the re-rankers. A
        # Managed Instances provider is created inside its cluster, and PutClusterCapacityProviders
        # refuses it ("Cannot associate Managed Instances capacity provider to clusters using
        # this API"), so it is left out; its services depend on the provider itself.
        self.capacity_providers = self.cluster.associate_capacity_providers(
            [
                p.capacity_provider
                for p in self.pools.values()
                if not isinstance(p, ManagedInstancesPool)
            ],
            fargate=True,
        )
        self.endpoint = Endpoint(
            f"{name}-edge",
            with_wiring(
                EndpointArgs,
                plan.endpoint,
                vpc_id=self.network.vpc_id,
                subnet_ids=(
                    self.network.public_subnet_ids
                    if plan.endpoint.internet_facing
                    else self.network.private_subnet_ids
                ),
            ),
            opts=child,
        )

        wiring = ServiceWiring(
            cluster_arn=self.cluster.arn,
            vpc_id=self.network.vpc_id,
            subnet_ids=self.network.private_subnet_ids,
            alb_security_group_id=self.endpoint.security_group.id,
            load_balancer_arn_suffix=self.endpoint.load_balancer.arn_suffix,
            router=self.endpoint,
            # ECS rejects a service naming a capacity provider the cluster is not associated
            # with yet.
            service_depends_on=(self.capacity_providers,),
        )
        wired = {f.name: getattr(wiring, f.name) for f in fields(wiring)}
        self.weight_stores = self._weight_stores(name, plan)

        # Private routes: the namespace, and the gateway's group before the model services,
        # which admit it (the gateway's own rules are standalone resources, see gateway.py).
        self.namespace: aws.servicediscovery.HttpNamespace | None = None
        if plan.service_connect_namespace is not None:
            self.namespace = aws.servicediscovery.HttpNamespace(
                f"{name}-routes",
                name=plan.service_connect_namespace,
                description="Private service-to-service routes (ECS Service Connect)",
                opts=child,
            )
        self.gateway_security_group: aws.ec2.SecurityGroup | None = None
        model_wiring: dict[str, Any] = {}
        if plan.gateway is not None and self.namespace is not None:
            self.gateway_security_group = gateway_security_group(
                f"{name}-gateway", vpc_id=self.network.vpc_id, opts=child
            )
            model_wiring = {
                "client_security_group_ids": (self.gateway_security_group.id,),
                "service_connect_namespace": self._routes(plan),
            }
        self.models: dict[str, ModelService] = {
            m.name: ModelService(
                f"{name}-{m.name}",
                with_wiring(
                    ModelServiceArgs,
                    m.spec,
                    **{**wired, **model_wiring},
                    image=_image(m.image, m.config.engine, built_images),
                    capacity_provider_name=self.pools[m.pool.name].capacity_provider_name,
                    weights_efs=self._efs_access(m.name, m.efs.file_system if m.efs else None),
                    metrics_image=(
                        _image(m.metrics_image, "metrics", built_images)
                        if m.metrics_sidecar
                        else None
                    ),
                ),
                opts=child,
            )
            for m in plan.models.values()
        }
        self.rerankers: dict[str, FargateReranker] = {
            r.name: FargateReranker(
                f"{name}-{r.name}",
                with_wiring(
                    FargateRerankerArgs,
                    r.spec,
                    **wired,
                    image=_image(r.image, "reranker", built_images),
                    metrics_image=(
                        _image(r.metrics_image, "metrics", built_images)
                        if r.metrics_sidecar
                        else None
                    ),
                ),
                opts=child,
            )
            for r in plan.rerankers.values()
        }
        self.gateway: LiteLLMGateway | None = None
        self.gateway_database: GatewayDatabase | None = None
        self.workers: dict[str, QueueWorker] = {}
        if plan.gateway is not None:
            self._build_gateway(name, plan, plan.gateway, wiring)
        # After the gateway and workers: their alarms and dashboard rows watch them too.
        ops = cfg.operations
        self.operations = Operations(
            f"{name}-ops",
            OperationsArgs(
                cluster_name=self.cluster.name,
                cluster_arn=self.cluster.arn,
                load_balancer_arn_suffix=self.endpoint.load_balancer.arn_suffix,
                services=[
                    *(
                        ServiceWatch(
                            service=m.name,
                            kind=m.config.engine,
                            min_count=m.config.min_count,
                            target_group_arn_suffix=self.models[m.name].target_group.arn_suffix,
                            ecs_service_name=self.models[m.name].service.name,
                            pool=m.pool.name,
                            engine_metrics=m.metrics_sidecar,
                        )
                        for m in plan.models.values()
                    ),
                    *(
                        ServiceWatch(
                            service=r.name,
                            kind="reranker",
                            min_count=r.config.min_count,
                            target_group_arn_suffix=self.rerankers[r.name].target_group.arn_suffix,
                            ecs_service_name=self.rerankers[r.name].service.name,
                            engine_metrics=r.metrics_sidecar,
                        )
                        for r in plan.rerankers.values()
                    ),
                ],
                # Pool panels and the GPU memory alarm read the host agent's metrics.
                gpu_pools=[
                    n for n, p in plan.pools.items() if p.kind == "gpu" and p.host_telemetry
                ],
                neuron_pools=[
                    n for n, p in plan.pools.items() if p.kind == "neuron" and p.host_telemetry
                ],
                gateway=None
                if self.gateway is None or plan.gateway is None
                else GatewayWatch(
                    plan.gateway,
                    target_group_arn_suffix=self.gateway.target_group.arn_suffix,
                    ecs_service_name=self.gateway.service.name,
                ),
                workers=[
                    WorkerWatch(
                        plan.workers[n],
                        queue_name=w.queue_name,
                        dead_letter_queue_name=w.dead_letter_queue_name,
                        ecs_service_name=w.service.name,
                    )
                    for n, w in self.workers.items()
                ],
                alarm_settings=plan.alarm_settings(),
                subscriptions=[
                    Subscription(sub.protocol, sub.endpoint) for sub in ops.alarm_subscriptions
                ],
                dashboard=ops.dashboard,
            ),
            opts=child,
        )

        self.register_outputs(
            {
                "vpcId": self.network.vpc_id,
                "clusterName": self.cluster.name,
                "endpointDns": self.endpoint.dns_name,
            }
        )

    def _weight_stores(self, name: str, plan: Plan) -> dict[str, WeightFileSystem]:
        """One WeightFileSystem per `weightStores` entry, and per existing file system (by id)
        a model reads weights from (mount targets and access points only)."""
        # Every configured store exists (weights are copied into it before a model uses it);
        # an existing file system named by id gets mount targets only when a model reads it.
        users: dict[str, dict[str, str]] = {store: {} for store in plan.config.weight_stores}
        for m in plan.models.values():
            if m.efs is not None:
                users.setdefault(m.efs.file_system, {})[m.name] = m.efs.path
        stores: dict[str, WeightFileSystem] = {}
        for fs_name, access_points in sorted(users.items()):
            store = plan.config.weight_stores.get(fs_name)
            stores[fs_name] = WeightFileSystem(
                f"{name}-{fs_name}",
                WeightFileSystemArgs(
                    vpc_id=self.network.vpc_id,
                    subnet_ids=self.network.private_subnet_ids,
                    # awsx creates one private subnet per Availability Zone
                    subnet_count=plan.config.network.az_count,
                    access_points=access_points,
                    throughput_mode=store.throughput_mode if store else "elastic",
                    provisioned_mib_per_second=(
                        store.provisioned_mib_per_second if store else None
                    ),
                    existing_file_system_id=None if store else fs_name,
                ),
                opts=pulumi.ResourceOptions(parent=self),
            )
        return stores

    def _efs_access(self, model: str, file_system: str | None) -> EfsAccess | None:
        """The EFS wiring of one model's task, or None when its weights are not on EFS."""
        if file_system is None:
            return None
        store = self.weight_stores[file_system]
        point = store.access_points[model]
        return EfsAccess(
            volume=task_volume(model, store.file_system_id, point.id),
            file_system_arn=store.file_system_arn,
            access_point_arn=point.arn,
            client_security_group_id=store.client_security_group.id,
        )

    def _routes(self, plan: Plan) -> Namespace:
        assert self.namespace is not None and plan.service_connect_namespace is not None
        return Namespace(plan.service_connect_namespace, self.namespace.arn)

    def _build_gateway(self, name: str, plan: Plan, gw: GatewayPlan, wiring: ServiceWiring) -> None:
        """The database (when on), the gateway, then the workers that call it."""
        assert self.namespace is not None and self.gateway_security_group is not None
        child = pulumi.ResourceOptions(parent=self)
        cfg = gw.config
        database = None
        if cfg.database.enabled:
            self.gateway_database = GatewayDatabase(
                f"{name}-gateway-db",
                GatewayDatabaseArgs(
                    vpc_id=self.network.vpc_id,
                    subnet_ids=self.network.private_subnet_ids,
                    gateway_security_group_id=self.gateway_security_group.id,
                    min_capacity_acu=cfg.database.min_capacity_acu,
                    max_capacity_acu=cfg.database.max_capacity_acu,
                ),
                opts=child,
            )
            database = self.gateway_database.endpoint()
        assert cfg.image is not None  # the schema's default is the pinned release
        self.gateway = LiteLLMGateway(
            f"{name}-gateway",
            LiteLLMGatewayArgs(
                spec=gw.spec,
                master_key_secret_arn=cfg.master_key_secret_arn,
                salt_key_secret_arn=cfg.database.salt_key_secret_arn,
                database=database,
                database_security_group_id=None
                if self.gateway_database is None
                else self.gateway_database.security_group.id,
                path=cfg.path,
                priority=gw.priority,
                image=cfg.image,
                cpu=gw.size.cpu,
                memory_mib=gw.size.memory_mib,
                cpu_architecture=cfg.cpu_architecture,
                cluster_arn=wiring.cluster_arn,
                vpc_id=wiring.vpc_id,
                subnet_ids=wiring.subnet_ids,
                security_group=self.gateway_security_group,
                alb_security_group_id=wiring.alb_security_group_id,
                router=wiring.router,
                service_connect_namespace=self._routes(plan),
                models={
                    svc: ModelEndpoint(self.models[svc].security_group.id, plan.models[svc].port)
                    for svc in sorted({r.target.service for r in gw.spec.routes})
                },
                desired_count=cfg.desired_count,
                min_count=cfg.min_count,
                max_count=cfg.max_count,
                target_cpu_percent=cfg.target_cpu_percent,
                deregistration_delay_seconds=gw.deregistration.seconds
                if gw.deregistration is not None
                else gw.spec.longest_request_seconds,
                extra_environment=dict(cfg.environment),
                log_retention_days=cfg.log_retention_days,
                # A Service Connect client resolves only the servers that exist at its start.
                service_depends_on=(
                    *wiring.service_depends_on,
                    *(m.service for m in self.models.values()),
                ),
            ),
            opts=child,
        )
        routes = self._routes(plan)
        gateway_url = f"http://{private_host(cfg.path, routes.name)}:{litellm.PORT}"
        for worker_name, w in plan.workers.items():
            wc = w.config
            assert wc.image is not None  # required by the schema
            worker = QueueWorker(
                f"{name}-{worker_name}",
                QueueWorkerArgs(
                    worker=worker_name,
                    image=wc.image,
                    cluster_arn=wiring.cluster_arn,
                    vpc_id=wiring.vpc_id,
                    subnet_ids=wiring.subnet_ids,
                    gateway_url=gateway_url,
                    gateway_security_group_id=self.gateway_security_group.id,
                    service_connect_namespace=routes,
                    visibility_timeout_seconds=w.visibility.seconds,
                    backlog_target=w.target,
                    cpu=w.size.cpu,
                    memory_mib=w.size.memory_mib,
                    cpu_architecture=wc.cpu_architecture,
                    desired_count=wc.desired_count,
                    min_count=wc.min_count,
                    max_count=wc.max_count,
                    concurrency=wc.concurrency,
                    max_receive_count=wc.max_receive_count,
                    retention_seconds=wc.retention_seconds,
                    idle_minutes=wc.idle_minutes,
                    kms_key_id=wc.kms_key_id,
                    result_queue=wc.result_queue,
                    environment=dict(wc.environment),
                    secrets=dict(wc.secrets),
                    log_retention_days=wc.log_retention_days,
                    service_depends_on=(*wiring.service_depends_on, self.gateway.service),
                ),
                opts=child,
            )
            self.gateway.admit(
                f"worker-{worker_name}", worker.security_group.id, f"worker {worker_name}"
            )
            self.workers[worker_name] = worker
