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
from ecs_inference.plan import Plan
from ecs_inference.plan.pools import pool_resource_name
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
from ecs_inference.specs.gateway import GatewayServiceSpec
from ecs_inference.specs.service_connect import Namespace
from ecs_inference.storage import WeightFileSystem, WeightFileSystemArgs, task_volume

_Args = TypeVar("_Args")


def with_wiring(cls: type[_Args], spec: Any, **wiring: Any) -> _Args:
    """`cls` (a component's Args: its spec class plus wiring fields) from `spec` and `wiring`;
    a wiring value replaces the spec's field of the same name (the built image reference)."""
    values = {f.name: getattr(spec, f.name) for f in fields(spec)}
    return cls(**{**values, **wiring})


def _image(image: str | None, built: str | None, built_images: Mapping[str, pulumi.Input[str]]):
    """The configured reference, else the digest reference of the stack's build of `built`."""
    if image is not None:
        return image
    assert built is not None, "the plan names the build of every service without an image"
    return built_images[built]


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
        for kind, section in (("gpu", plan.gpu_pools), ("neuron", plan.neuron_pools)):
            component, args_cls = (
                (GpuAsgPool, GpuAsgPoolArgs)
                if kind == "gpu"
                else (InferentiaPool, InferentiaPoolArgs)
            )
            for pool_name, spec in section.items():
                args: PoolArgs = with_wiring(
                    args_cls,
                    spec,
                    cluster_name=self.cluster.name,
                    vpc_id=self.network.vpc_id,
                    subnet_ids=self.network.private_subnet_ids,
                )
                self.pools[pool_name] = component(
                    pool_resource_name(name, pool_name), args, opts=child
                )
        for pool_name, managed in plan.managed_instance_pools.items():
            self.pools[pool_name] = ManagedInstancesPool(
                pool_resource_name(name, pool_name),
                ManagedInstancesPoolArgs(
                    # Managed Instances providers belong to one cluster (required by the
                    # provider for this kind).
                    cluster_name=self.cluster.name,
                    vpc_id=self.network.vpc_id,
                    subnet_ids=self.network.private_subnet_ids,
                    requirements=managed.requirements,
                    options=managed.options,
                ),
                opts=child,
            )
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
            svc: ModelService(
                f"{name}-{svc}",
                with_wiring(
                    ModelServiceArgs,
                    m,
                    **{**wired, **model_wiring},
                    image=_image(m.image, plan.built_images.get(svc), built_images),
                    capacity_provider_name=self.pools[plan.model_pools[svc]].capacity_provider_name,
                    weights_efs=self._efs_access(svc, m.efs_file_system),
                    metrics_image=(
                        _image(m.metrics_image, "metrics", built_images)
                        if m.metrics_sidecar
                        else None
                    ),
                ),
                opts=child,
            )
            for svc, m in plan.models.items()
        }
        self.rerankers: dict[str, FargateReranker] = {
            svc: FargateReranker(
                f"{name}-{svc}",
                with_wiring(
                    FargateRerankerArgs,
                    r,
                    **wired,
                    image=_image(r.image, plan.built_images.get(svc), built_images),
                    metrics_image=(
                        _image(r.metrics_image, "metrics", built_images)
                        if r.metrics_sidecar
                        else None
                    ),
                ),
                opts=child,
            )
            for svc, r in plan.rerankers.items()
        }
        self.gateway: LiteLLMGateway | None = None
        self.gateway_database: GatewayDatabase | None = None
        self.workers: dict[str, QueueWorker] = {}
        if plan.gateway is not None:
            self._build_gateway(name, plan, plan.gateway, wiring)
        # After the gateway and workers: their alarms and dashboard rows watch them too.
        self.operations = Operations(
            f"{name}-ops",
            OperationsArgs(
                cluster_name=self.cluster.name,
                cluster_arn=self.cluster.arn,
                load_balancer_arn_suffix=self.endpoint.load_balancer.arn_suffix,
                services=[
                    *(
                        ServiceWatch(
                            service=svc,
                            kind=cfg.models[svc].engine,
                            min_count=m.min_count,
                            target_group_arn_suffix=self.models[svc].target_group.arn_suffix,
                            ecs_service_name=self.models[svc].service.name,
                            pool=plan.model_pools[svc],
                            engine_metrics=m.metrics_sidecar,
                        )
                        for svc, m in plan.models.items()
                    ),
                    *(
                        ServiceWatch(
                            service=svc,
                            kind="reranker",
                            min_count=r.min_count,
                            target_group_arn_suffix=self.rerankers[svc].target_group.arn_suffix,
                            ecs_service_name=self.rerankers[svc].service.name,
                            engine_metrics=r.metrics_sidecar,
                        )
                        for svc, r in plan.rerankers.items()
                    ),
                ],
                # Pool panels and the GPU memory alarm read the host agent's metrics.
                gpu_pools=[n for n, kind in plan.host_telemetry_pools.items() if kind == "gpu"],
                neuron_pools=[
                    n for n, kind in plan.host_telemetry_pools.items() if kind == "neuron"
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
                alarm_settings=plan.alarm_settings,
                subscriptions=list(plan.subscriptions),
                dashboard=cfg.operations.dashboard,
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
        """One WeightFileSystem per EFS file system the plan mounts weights from."""
        return {
            fs_name: WeightFileSystem(
                f"{name}-{fs_name}",
                WeightFileSystemArgs(
                    vpc_id=self.network.vpc_id,
                    subnet_ids=self.network.private_subnet_ids,
                    subnet_count=store.subnet_count,
                    access_points=dict(store.access_points),
                    throughput_mode=store.throughput_mode,
                    provisioned_mib_per_second=store.provisioned_mib_per_second,
                    existing_file_system_id=store.existing_file_system_id,
                ),
                opts=pulumi.ResourceOptions(parent=self),
            )
            for fs_name, store in plan.weight_stores.items()
        }

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

    def _build_gateway(
        self, name: str, plan: Plan, gw: GatewayServiceSpec, wiring: ServiceWiring
    ) -> None:
        """The database (when on), the gateway, then the workers that call it."""
        assert self.namespace is not None and self.gateway_security_group is not None
        child = pulumi.ResourceOptions(parent=self)
        database = None
        if gw.database is not None:
            self.gateway_database = GatewayDatabase(
                f"{name}-gateway-db",
                GatewayDatabaseArgs(
                    vpc_id=self.network.vpc_id,
                    subnet_ids=self.network.private_subnet_ids,
                    gateway_security_group_id=self.gateway_security_group.id,
                    min_capacity_acu=gw.database.min_capacity_acu,
                    max_capacity_acu=gw.database.max_capacity_acu,
                ),
                opts=child,
            )
            database = self.gateway_database.endpoint()
        self.gateway = LiteLLMGateway(
            f"{name}-gateway",
            LiteLLMGatewayArgs(
                spec=gw.proxy,
                master_key_secret_arn=gw.master_key_secret_arn,
                salt_key_secret_arn=gw.salt_key_secret_arn,
                database=database,
                database_security_group_id=None
                if self.gateway_database is None
                else self.gateway_database.security_group.id,
                path=gw.path,
                priority=gw.priority,
                image=gw.image,
                cpu=gw.cpu,
                memory_mib=gw.memory_mib,
                cpu_architecture=gw.cpu_architecture,
                cluster_arn=wiring.cluster_arn,
                vpc_id=wiring.vpc_id,
                subnet_ids=wiring.subnet_ids,
                security_group=self.gateway_security_group,
                alb_security_group_id=wiring.alb_security_group_id,
                router=wiring.router,
                service_connect_namespace=self._routes(plan),
                models={
                    svc: ModelEndpoint(
                        self.models[svc].security_group.id, plan.models[svc].launch.port
                    )
                    for svc in sorted({r.target.service for r in gw.proxy.routes})
                },
                desired_count=gw.desired_count,
                min_count=gw.min_count,
                max_count=gw.max_count,
                target_cpu_percent=gw.target_cpu_percent,
                deregistration_delay_seconds=gw.deregistration_delay_seconds,
                health_check_grace_period_seconds=gw.health_check_grace_period_seconds,
                extra_environment=dict(gw.environment),
                log_retention_days=gw.log_retention_days,
                # A Service Connect client resolves only the servers that exist at its start.
                service_depends_on=(
                    *wiring.service_depends_on,
                    *(m.service for m in self.models.values()),
                ),
            ),
            opts=child,
        )
        routes = self._routes(plan)
        for worker_name, w in plan.workers.items():
            worker = QueueWorker(
                f"{name}-{worker_name}",
                QueueWorkerArgs(
                    worker=w.worker,
                    image=w.image,
                    cluster_arn=wiring.cluster_arn,
                    vpc_id=wiring.vpc_id,
                    subnet_ids=wiring.subnet_ids,
                    gateway_url=w.gateway_url,
                    gateway_security_group_id=self.gateway_security_group.id,
                    gateway_port=w.gateway_port,
                    service_connect_namespace=routes,
                    visibility_timeout_seconds=w.visibility_timeout_seconds,
                    backlog_target=w.backlog_target,
                    cpu=w.cpu,
                    memory_mib=w.memory_mib,
                    cpu_architecture=w.cpu_architecture,
                    desired_count=w.desired_count,
                    min_count=w.min_count,
                    max_count=w.max_count,
                    concurrency=w.concurrency,
                    max_receive_count=w.max_receive_count,
                    retention_seconds=w.retention_seconds,
                    idle_minutes=w.idle_minutes,
                    kms_key_id=w.kms_key_id,
                    result_queue=w.result_queue,
                    environment=dict(w.environment),
                    secrets=dict(w.secrets),
                    log_retention_days=w.log_retention_days,
                    service_depends_on=(*wiring.service_depends_on, self.gateway.service),
                ),
                opts=child,
            )
            self.gateway.admit(
                f"worker-{worker_name}", worker.security_group.id, f"worker {worker_name}"
            )
            self.workers[worker_name] = worker
