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

from collections.abc import Iterable
from dataclasses import fields
from typing import Any

import pulumi
import pulumi_aws as aws

from ecs_inference.endpoint.service import Endpoint, EndpointWiring
from ecs_inference.gateway.database import DatabaseWiring, GatewayDatabase
from ecs_inference.gateway.decisions import GatewayDecisions
from ecs_inference.gateway.service import GatewayWiring, LiteLLMGateway, gateway_security_group
from ecs_inference.images.builds import ImageBuilds, ImageBuildsArgs
from ecs_inference.models.service import ModelService, ModelWiring
from ecs_inference.network.vpc import Network
from ecs_inference.operations.component import (
    Operations,
    OperationsWiring,
    ServiceOutputs,
    WorkerOutputs,
)
from ecs_inference.plan import Plan
from ecs_inference.plan.pools import pool_resource_name
from ecs_inference.pools.asg_pool import AsgPoolWiring, GpuAsgPool, InferentiaPool
from ecs_inference.pools.cluster import Cluster, ExecLogWiring
from ecs_inference.pools.managed_instances_pool import ManagedInstancesPool, ManagedPoolWiring
from ecs_inference.rerankers.service import FargateReranker
from ecs_inference.secrets.component import StackSecrets
from ecs_inference.services.base import (
    ClusterWiring,
    EfsAccess,
    PlacedWiring,
    ServiceWiring,
    exec_log_group_name,
)
from ecs_inference.services.service_connect import Namespace
from ecs_inference.storage.service import WeightFileSystem, WeightStoreWiring, task_volume
from ecs_inference.workers.decisions import stack_gateway_keys
from ecs_inference.workers.service import QueueWorker, WorkerWiring


class InferencePlatform(pulumi.ComponentResource):
    """Everything one stack deploys, from one validated plan."""

    plan: Plan
    """The plan it was built from."""
    images: ImageBuilds | None
    """The stack's own builds; None unless `images.build`."""
    network: Network
    """The VPC."""
    cluster: Cluster
    """The ECS cluster."""
    pools: dict[str, GpuAsgPool | InferentiaPool | ManagedInstancesPool]
    """Pools by name."""
    capacity_providers: aws.ecs.ClusterCapacityProviders
    """The cluster's provider association."""
    endpoint: Endpoint
    """The authenticated ALB."""
    weight_stores: dict[str, WeightFileSystem]
    """EFS weight stores by name (or file system id)."""
    namespace: aws.servicediscovery.HttpNamespace | None
    """The Service Connect namespace; None without gateway or workers."""
    gateway_security_group: aws.ec2.SecurityGroup | None
    """The gateway tasks' group; None without the gateway."""
    models: dict[str, ModelService]
    """Model services by name."""
    rerankers: dict[str, FargateReranker]
    """Re-rankers by name."""
    gateway: LiteLLMGateway | None
    """The AI gateway; None unless configured."""
    gateway_database: GatewayDatabase | None
    """Its database; None unless on."""
    workers: dict[str, QueueWorker]
    """Queue workers by name."""
    operations: Operations
    """Alarms, rollback rule, dashboard."""
    secrets: StackSecrets | None
    """The secrets it stores for the config's secret values; None when the config has none."""

    def __init__(
        self,
        name: str,
        plan: Plan,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("ecs-inference:index:InferencePlatform", name, None, opts)
        self._name = name
        self._child = pulumi.ResourceOptions(parent=self)
        self.plan = plan
        self._images(plan)
        self._foundation(plan)
        self._pools(plan)
        self.secrets = None
        if plan.stack_secrets:
            self.secrets = StackSecrets(
                f"{name}-secrets", plan.stack_secrets, pulumi.get_stack(), opts=self._child
            )
        self.endpoint = Endpoint(
            f"{name}-edge",
            plan.config.endpoint,
            EndpointWiring(
                vpc_id=self.network.vpc_id,
                vpc_cidr=plan.network.cidr_block,
                subnet_ids=(
                    self.network.public_subnet_ids
                    if plan.config.endpoint.internet_facing
                    else self.network.load_balancer_subnet_ids
                ),
                hook_subnet_ids=self.network.private_subnet_ids,
                routes=plan.endpoint,
                protect=plan.config.protect,
            ),
            opts=self._child,
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
        self.weight_stores = self._weight_stores(name, plan)
        self._private_routes(plan)
        self._services(plan, wiring)
        self.gateway = None
        self.gateway_database = None
        self.workers = {}
        if plan.gateway is not None:
            self._build_gateway(name, plan, plan.gateway, wiring)
        # After the gateway and workers: their alarms and dashboard rows watch them too.
        self._operations(plan)
        self.register_outputs(
            {
                "vpcId": self.network.vpc_id,
                "clusterName": self.cluster.name,
                "endpointDns": self.endpoint.dns_name,
            }
        )

    def _images(self, plan: Plan) -> None:
        """The stack's own image builds (`images.build`), and the references of what it built."""
        self.images = None
        if plan.builds:
            self.images = ImageBuilds(
                f"{self._name}-images",
                ImageBuildsArgs(
                    images=plan.builds,
                    # ECR names are lowercase; Pulumi stack names need not be.
                    repository_prefix=f"{pulumi.get_project()}/{pulumi.get_stack()}".lower(),
                ),
                opts=self._child,
            )
        self._built: dict[str, pulumi.Input[str]] = (
            dict(self.images.references) if self.images else {}
        )

    def _image(self, image: str | None, built: str | None) -> pulumi.Input[str]:
        """The configured reference, else the digest reference of the stack's build of `built`."""
        if image is not None:
            return image
        assert built is not None, "the plan names the build of every service without an image"
        return self._built[built]

    def _foundation(self, plan: Plan) -> None:
        self.network = Network(
            f"{self._name}-net", plan.config.network, plan.network.wiring, opts=self._child
        )
        self.cluster = Cluster(
            f"{self._name}-ecs",
            plan.config.cluster,
            ExecLogWiring(exec_log_group_name()),
            opts=self._child,
        )

    def _pools(self, plan: Plan) -> None:
        """Every pool, then the cluster's one capacity provider association."""
        self.pools = {}
        network = {
            "cluster_name": self.cluster.name,
            "vpc_id": self.network.vpc_id,
            "subnet_ids": self.network.private_subnet_ids,
        }
        kinds = ((GpuAsgPool, plan.gpu_pools), (InferentiaPool, plan.neuron_pools))
        for kind, decided in kinds:
            for pool_name, pool in decided.items():
                self.pools[pool_name] = kind(
                    pool_resource_name(self._name, pool_name),
                    pool.input,
                    AsgPoolWiring(**network, placement=pool.placement),
                    opts=self._child,
                )
        for pool_name, managed in plan.managed_instance_pools.items():
            self.pools[pool_name] = ManagedInstancesPool(
                pool_resource_name(self._name, pool_name),
                managed.input,
                # Managed Instances providers belong to one cluster (required by the provider).
                ManagedPoolWiring(**network, requirements=managed.requirements),
                opts=self._child,
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

    def _private_routes(self, plan: Plan) -> None:
        """The Service Connect namespace, and the gateway's group before the model services,
        which admit it (the gateway's own rules are standalone resources, see gateway.py)."""
        self.namespace = None
        if plan.service_connect_namespace is not None:
            self.namespace = aws.servicediscovery.HttpNamespace(
                f"{self._name}-routes",
                name=plan.service_connect_namespace,
                description="Private service-to-service routes (ECS Service Connect)",
                # The description forces a replacement, which would collide with the namespace of
                # the same name (and cannot delete it first: the services are in it); it is only
                # a label, so a changed one is not applied.
                opts=pulumi.ResourceOptions.merge(
                    self._child, pulumi.ResourceOptions(ignore_changes=["description"])
                ),
            )
        self.gateway_security_group = None
        if plan.gateway is not None and self.namespace is not None:
            self.gateway_security_group = gateway_security_group(
                f"{self._name}-gateway", vpc_id=self.network.vpc_id, opts=self._child
            )

    def _services(self, plan: Plan, wiring: ServiceWiring) -> None:
        """Every model service on its pool and every re-ranker on Fargate (with a gateway, each
        is a Service Connect server the gateway may reach)."""
        wired = _fields(wiring)
        gateway_wiring: dict[str, Any] = {}
        if self.gateway_security_group is not None:
            gateway_wiring = {
                "client_security_group_ids": (self.gateway_security_group.id,),
                "service_connect_namespace": self._routes(plan),
            }
        self.models = {}
        for svc, m in plan.models.items():
            self.models[svc] = ModelService(
                f"{self._name}-{svc}",
                plan.config.models[svc],
                ModelWiring(
                    **{**wired, **gateway_wiring},
                    service=svc,
                    pool=self.pools[plan.config.models[svc].pool],
                    placement=m.inputs.placement,
                    image=self._image(m.inputs.image, plan.built_images.get(svc)),
                    stack_secret_arns=self._secret_arns(m.secret_refs.values()),
                    weights_efs=self._efs_access(svc, m.efs_file_system),
                    metrics_image=self._image(m.inputs.facts.metrics_image, "metrics")
                    if m.metrics_sidecar
                    else None,
                ),
                opts=self._child,
            )
        self.rerankers = {
            svc: FargateReranker(
                f"{self._name}-{svc}",
                r.input,
                PlacedWiring(
                    **{**wired, **gateway_wiring},
                    service=svc,
                    placement=r.placement,
                    image=self._image(
                        r.input.image or plan.config.images.reranker, plan.built_images.get(svc)
                    ),
                    stack_secret_arns=self._secret_arns(r.secret_refs.values()),
                    metrics_image=self._image(r.placement.facts.metrics_image, "metrics")
                    if r.metrics_sidecar
                    else None,
                ),
                opts=self._child,
            )
            for svc, r in plan.rerankers.items()
        }

    def _operations(self, plan: Plan) -> None:
        services = {**self.models, **self.rerankers}
        gw = self.gateway
        self.operations = Operations(
            f"{self._name}-ops",
            plan.config.operations,
            OperationsWiring(
                watch=plan.operations,
                cluster_name=self.cluster.name,
                cluster_arn=self.cluster.arn,
                load_balancer_arn_suffix=self.endpoint.load_balancer.arn_suffix,
                service_outputs={
                    n: ServiceOutputs(c.target_group.arn_suffix, c.service.name)
                    for n, c in services.items()
                },
                gateway_outputs=None
                if gw is None
                else ServiceOutputs(gw.target_group.arn_suffix, gw.service.name),
                worker_outputs={
                    n: WorkerOutputs(w.queue_name, w.dead_letter_queue_name, w.service.name)
                    for n, w in self.workers.items()
                },
            ),
            opts=self._child,
        )

    def _weight_stores(self, name: str, plan: Plan) -> dict[str, WeightFileSystem]:
        """One WeightFileSystem per EFS file system the plan mounts weights from."""
        return {
            fs_name: WeightFileSystem(
                f"{name}-{fs_name}",
                store,
                WeightStoreWiring(
                    use=use, vpc_id=self.network.vpc_id, subnet_ids=self.network.zone_subnet_ids
                ),
                opts=self._child,
            )
            for fs_name, (store, use) in plan.weight_stores.items()
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

    def _secret_arns(self, refs: Iterable[str]) -> dict[str, pulumi.Output[str]]:
        """The ARNs of the stack's own secrets among a service's `secrets` references."""
        return {} if self.secrets is None else self.secrets.of(refs)

    def _routes(self, plan: Plan) -> Namespace:
        assert self.namespace is not None and plan.service_connect_namespace is not None
        return Namespace(plan.service_connect_namespace, self.namespace.arn)

    def _build_gateway(
        self, name: str, plan: Plan, gw: GatewayDecisions, wiring: ServiceWiring
    ) -> None:
        """The database (when on), the gateway, then the workers that call it."""
        assert self.namespace is not None and self.gateway_security_group is not None
        child = pulumi.ResourceOptions(parent=self)
        if gw.input.database.enabled:
            self.gateway_database = GatewayDatabase(
                f"{name}-gateway-db",
                gw.input.database,
                DatabaseWiring(
                    vpc_id=self.network.vpc_id,
                    subnet_ids=self.network.private_subnet_ids,
                    gateway_security_group_id=self.gateway_security_group.id,
                ),
                opts=child,
            )
        db = self.gateway_database
        routes = self._routes(plan)
        served = {**self.models, **self.rerankers}
        self.gateway = LiteLLMGateway(
            f"{name}-gateway",
            gw.input,
            GatewayWiring(
                **{
                    **_fields(wiring),
                    "service_connect_namespace": routes,
                    # A Service Connect client resolves only the servers that exist at its start.
                    "service_depends_on": (
                        *wiring.service_depends_on,
                        *(m.service for m in self.models.values()),
                        *(r.service for r in self.rerankers.values()),
                    ),
                },
                placement=gw.placement,
                security_group=self.gateway_security_group,
                service_security_groups={s: c.security_group.id for s, c in served.items()},
                database=None if db is None else db.outputs(),
                stack_secret_arns=self._secret_arns(gw.secret_refs.values()),
            ),
            opts=child,
        )
        keys = stack_gateway_keys(plan.config)
        assert keys is not None
        for worker_name, w in plan.workers.items():
            worker = QueueWorker(
                f"{name}-{worker_name}",
                w.input,
                WorkerWiring(
                    **{
                        **_fields(wiring, ClusterWiring),
                        "service_depends_on": (*wiring.service_depends_on, self.gateway.service),
                    },
                    worker=worker_name,
                    gateway_url=self.gateway.private_url,
                    gateway_keys=keys,
                    gateway_security_group_id=self.gateway_security_group.id,
                    service_connect_namespace=routes,
                    stack_secret_arns=self._secret_arns(w.secret_refs.values()),
                ),
                opts=child,
            )
            self.gateway.admit(
                f"worker-{worker_name}", worker.security_group.id, f"worker {worker_name}"
            )
            self.workers[worker_name] = worker


def _fields(wiring: ClusterWiring, kind: type[ClusterWiring] | None = None) -> dict[str, Any]:
    """`wiring`'s fields (those of `kind` only, when given) as keywords, but the stack's
    secrets, which each service is given on its own (only those it names)."""
    return {
        f.name: getattr(wiring, f.name)
        for f in fields(kind or wiring)
        if f.name != "stack_secret_arns"
    }
