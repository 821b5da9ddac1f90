"""InferencePlatform: the whole stack, composed from one validated plan.

Builds, in dependency order: the Network (VPC, NAT, VPC endpoints), the ECS Cluster, one capacity
pool per accelerator type, the authenticated Endpoint, and every model and re-ranker service
behind it. All decisions (sizing, tensor parallel size, Fargate size, timeouts) were made by
`components.plan.build_plan` before this component registers anything, so an invalid stack
registers nothing.
"""

from __future__ import annotations

import pulumi

from components.cluster import Cluster, ClusterArgs
from components.network import Network, NetworkArgs
from components.plan import Plan


class InferencePlatform(pulumi.ComponentResource):
    """Everything one stack deploys. Attributes: `network`, `cluster`, `plan`."""

    def __init__(self, name: str, plan: Plan, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("ecs-inference:index:InferencePlatform", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        cfg = plan.config
        self.plan = plan

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
        self.register_outputs({"vpcId": self.network.vpc_id, "clusterName": self.cluster.name})
