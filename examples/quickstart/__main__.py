from ecs_inference.endpoint.decisions import Routes
from ecs_inference.endpoint.input import EndpointConfig
from ecs_inference.endpoint.service import Endpoint, EndpointWiring
from ecs_inference.models.input import ModelConfig
from ecs_inference.models.service import ModelService, ModelWiring, Placement
from ecs_inference.network.vpc import Network
from ecs_inference.pools.asg_pool import AsgPoolWiring, GpuAsgPool, PoolConfig
from ecs_inference.pools.cluster import Cluster

net, cluster = Network("net"), Cluster("cluster")
where = {"vpc_id": net.vpc_id, "subnet_ids": net.private_subnet_ids}
pool = GpuAsgPool("gpu", PoolConfig(instance_type="g6e.xlarge"), AsgPoolWiring(cluster_name=cluster.name, **where))
llama = ModelConfig.model_validate({"engine": "vllm", "pool": "gpu", "architecture": "llama-3.1-8b", "weightsUri": "s3://my-models/llama-3.1-8b/", "maxModelLen": 8192})  # a stack file's platform.models.llama
edge = Endpoint("edge", EndpointConfig(domain_name="models.example.internal", allowed_cidrs=[net.cidr_block], self_signed_certificate=True), EndpointWiring(vpc_cidr=net.cidr_block, vpc_id=net.vpc_id, subnet_ids=net.load_balancer_subnet_ids, routes=Routes(ports=(8000,), longest_request_seconds=(llama.max_generation_seconds,))))
svc = ModelService("llama", llama, ModelWiring(
    pool=pool, placement=Placement(priority=100), router=edge, alb_security_group_id=edge.security_group.id,
    load_balancer_arn_suffix=edge.load_balancer.arn_suffix, cluster_arn=cluster.arn, **where,
    image="123456789012.dkr.ecr.us-west-2.amazonaws.com/vllm:0.11.0",
    metrics_image="123456789012.dkr.ecr.us-west-2.amazonaws.com/metrics:1",
    service_depends_on=[cluster.associate_capacity_providers([pool.capacity_provider], fargate=False)]))
