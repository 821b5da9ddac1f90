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

import pulumi

from components.capacity.gpu_pool import GpuAsgPool
from components.capacity.neuron_pool import InferentiaPool
from components.cluster import Cluster, ClusterArgs
from components.images import ImageBuilds, ImageBuildsArgs
from components.ingress.alb import AuthArgs, Endpoint, EndpointArgs
from components.network import Network, NetworkArgs
from components.plan import (
    Plan,
    ServiceWiring,
    model_service_args,
    pool_args,
    pool_resource_name,
    reranker_args,
)
from components.services.model import ModelService
from components.services.reranker import FargateReranker


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
            component = GpuAsgPool if pool.kind == "gpu" else InferentiaPool
            self.pools[pool_name] = component(
                pool_resource_name(name, pool_name),
                pool_args(
                    pool,
                    cluster_name=self.cluster.name,
                    vpc_id=self.network.vpc_id,
                    subnet_ids=self.network.private_subnet_ids,
                ),
                opts=child,
            )
        # One association per cluster, listing every pool plus Fargate for the re-rankers.
        self.capacity_providers = self.cluster.associate_capacity_providers(
            [p.capacity_provider for p in self.pools.values()], fargate=True
        )
        self.endpoint = Endpoint(f"{name}-edge", self._endpoint_args(plan), opts=child)

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
            built_images=dict(self.images.references) if self.images else {},
        )
        self.models: dict[str, ModelService] = {
            m.name: ModelService(
                f"{name}-{m.name}",
                model_service_args(m, wiring, self.pools[m.pool.name].capacity_provider_name),
                opts=child,
            )
            for m in plan.models.values()
        }
        self.rerankers: dict[str, FargateReranker] = {
            r.name: FargateReranker(
                f"{name}-{r.name}",
                reranker_args(r, wiring, plan.idle_timeout.seconds),
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

    def _endpoint_args(self, plan: Plan) -> EndpointArgs:
        cfg = plan.config
        ep = cfg.endpoint
        ports = {m.port for m in plan.models.values()} | {r.port for r in plan.rerankers.values()}
        auth = ep.auth
        return EndpointArgs(
            vpc_id=self.network.vpc_id,
            vpc_cidr=cfg.network.cidr_block,
            subnet_ids=(
                self.network.public_subnet_ids
                if ep.internet_facing
                else self.network.private_subnet_ids
            ),
            domain_name=ep.domain_name,
            allowed_cidrs=tuple(ep.allowed_cidrs),
            idle_timeout_seconds=plan.idle_timeout.seconds,
            target_ports=tuple(sorted(ports)),
            certificate_arn=ep.certificate_arn,
            self_signed_certificate=ep.self_signed_certificate,
            internet_facing=ep.internet_facing,
            ssl_policy=ep.ssl_policy,
            access_logs=ep.access_logs,
            access_log_retention_days=ep.access_log_retention_days,
            hosted_zone_id=ep.hosted_zone_id,
            auth=AuthArgs(
                existing_user_pool_id=auth.existing_user_pool_id,
                existing_user_pool_domain=auth.existing_user_pool_domain,
                domain_prefix=auth.domain_prefix or f"{pulumi.get_project()}-{pulumi.get_stack()}",
                api_scopes=tuple(auth.api_scopes),
                session_timeout_seconds=auth.session_timeout_seconds,
                access_token_validity_minutes=auth.access_token_validity_minutes,
            ),
        )
