from ecs_inference.endpoint.input import EndpointConfig
from ecs_inference.endpoint.service import Endpoint, EndpointWiring
from ecs_inference.models.input import ModelConfig
from ecs_inference.models.service import ModelService, ModelWiring, Placement, routes
from ecs_inference.network.vpc import Network
from ecs_inference.pools.asg_pool import AsgPoolWiring, GpuAsgPool, PoolConfig
from ecs_inference.pools.cluster import Cluster

net, ecs, ecr = Network("net"), Cluster("cluster"), "123456789012.dkr.ecr.us-west-2.amazonaws.com"
where = {"vpc_id": net.vpc_id, "subnet_ids": net.private_subnet_ids}
pool = GpuAsgPool("gpu", PoolConfig(instance_type="g6e.xlarge"),
    AsgPoolWiring(cluster_name=ecs.name, **where))
ready = [ecs.associate_capacity_providers([pool.capacity_provider], fargate=False)]
llama = ModelConfig.model_validate({"engine": "vllm", "pool": "gpu", "architecture": "llama-3.1-8b",
    "weightsUri": "s3://my-models/llama-3.1-8b/", "maxModelLen": 8192})  # a stack file's keys
edge = Endpoint("edge", EndpointConfig(allowed_cidrs=[net.cidr_block], self_signed_certificate=True,
    domain_name="models.example.internal"), EndpointWiring.on(net, routes(llama)))
ModelService("llama", llama, ModelWiring(pool=pool, router=edge, placement=Placement(priority=100),
    cluster_arn=ecs.arn, **where, service_depends_on=ready, image=f"{ecr}/vllm:0.11.0",
    metrics_image=f"{ecr}/metrics:1"))
