"""InferencePlatform: the whole stack, composed from one validated plan.

Builds, in dependency order: the stack's own images when `images.build` asks for them
(components.images: ECR repositories and docker-build images, run by digest), the
Network (VPC, NAT, VPC endpoints), the ECS Cluster, one capacity pool per accelerator type,
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

from components.capacity.asg_pool import (
    GpuAsgPool,
    GpuAsgPoolArgs,
    InferentiaPool,
    InferentiaPoolArgs,
    PoolArgs,
)
from components.cluster import Cluster, ClusterArgs
from components.images import ImageBuilds, ImageBuildsArgs
from components.ingress.alb import Endpoint, EndpointArgs
from components.network import Network, NetworkArgs
from components.plan import Plan, pool_resource_name
from components.services.base import EfsAccess, ServiceWiring
from components.services.model import ModelService, ModelServiceArgs
from components.services.reranker import FargateReranker, FargateRerankerArgs
from components.storage import WeightFileSystem, WeightFileSystemArgs, task_volume

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
                execute_command_logging=cfg.cluster.execute_command_logging,
            ),
            opts=child,
        )
        self.pools: dict[str, GpuAsgPool | InferentiaPool] = {}
        for pool_name, pool in plan.pools.items():
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
        # One association per cluster, listing every pool plus Fargate for the re-rankers.
        self.capacity_providers = self.cluster.associate_capacity_providers(
            [p.capacity_provider for p in self.pools.values()], fargate=True
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
        self.models: dict[str, ModelService] = {
            m.name: ModelService(
                f"{name}-{m.name}",
                with_wiring(
                    ModelServiceArgs,
                    m.spec,
                    **wired,
                    image=_image(m.image, m.config.engine, built_images),
                    capacity_provider_name=self.pools[m.pool.name].capacity_provider_name,
                    weights_efs=self._efs_access(m.name, m.efs.file_system if m.efs else None),
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
                ),
                opts=child,
            )
            for r in plan.rerankers.values()
        }
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
