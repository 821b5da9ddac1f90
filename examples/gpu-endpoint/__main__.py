"""One model on a GPU pool behind the authenticated endpoint, in a VPC and an ECS cluster this
program makes itself, from the `ecs_inference` components (`pip install ecs-inference`).

The model service takes the stack file's model section as its input and decides its fit, task
size and timeouts itself, as `InferencePlatform` does; the endpoint takes the stack file's
endpoint section and decides its idle timeout from the longest request of the services routed
through it. The pool is written here by hand and checked with the same functions the plan
runs before any resource exists.

    python -m tools.preview --cwd examples/gpu-endpoint     # offline, in the repository
"""

import pulumi
import pulumi_aws as aws

from ecs_inference.capacity.asg_pool import GpuAsgPool, GpuAsgPoolArgs
from ecs_inference.endpoint.decisions import Routes
from ecs_inference.endpoint.input import EndpointConfig
from ecs_inference.endpoint.service import Endpoint, EndpointWiring
from ecs_inference.models.decisions import Placement, StackFacts
from ecs_inference.models.input import ModelConfig
from ecs_inference.models.service import ModelService, ModelWiring
from ecs_inference.specs.pool import PoolArgumentError, pool_problems

CIDR = "10.60.0.0/16"
MODEL = "llama"
WEIGHTS = "s3://example-model-weights/models/llama-3.1-8b-instruct/"
# The longest generation a client may wait for, in seconds: the ALB's idle timeout and the
# service's deregistration delay must both outlast it.
LONGEST_GENERATION_SECONDS = 600

account = aws.get_caller_identity().account_id
region = aws.get_region().region
zones = aws.get_availability_zones(state="available").names[:2]

# -- the program's own network and cluster ----------------------------------------------------
vpc = aws.ec2.Vpc("vpc", cidr_block=CIDR, enable_dns_hostnames=True, enable_dns_support=True)
subnets = [
    aws.ec2.Subnet(
        f"private-{i}", vpc_id=vpc.id, cidr_block=f"10.60.{i * 16}.0/20", availability_zone=zone
    )
    for i, zone in enumerate(zones)
]
routes = aws.ec2.RouteTable("private", vpc_id=vpc.id)
for i, subnet in enumerate(subnets):
    aws.ec2.RouteTableAssociation(f"private-{i}", subnet_id=subnet.id, route_table_id=routes.id)
# Weights and image layers come from S3 without a NAT hop.
aws.ec2.VpcEndpoint(
    "s3",
    vpc_id=vpc.id,
    service_name=f"com.amazonaws.{region}.s3",
    vpc_endpoint_type="Gateway",
    route_table_ids=[routes.id],
)
cluster = aws.ecs.Cluster(
    "cluster", settings=[aws.ecs.ClusterSettingArgs(name="containerInsights", value="enhanced")]
)
subnet_ids = [s.id for s in subnets]

# -- a GPU pool ---------------------------------------------------------------------------------
pool_args = GpuAsgPoolArgs(
    instance_type="g6e.xlarge",
    max_size=2,
    cluster_name=cluster.name,
    vpc_id=vpc.id,
    subnet_ids=subnet_ids,
)
if problems := pool_problems("gpu", pool_args, "nvidia"):
    raise PoolArgumentError("gpu", problems)
pool = GpuAsgPool("gpu", pool_args)
association = aws.ecs.ClusterCapacityProviders(
    "capacity",
    cluster_name=cluster.name,
    capacity_providers=[pool.capacity_provider.name],
)

# -- the endpoint -----------------------------------------------------------------------------
# Its input is the stack file's `platform.endpoint` section (the same keys and validators).
endpoint = Endpoint(
    "edge",
    EndpointConfig.model_validate(
        {
            "domainName": "models.example.internal",
            "allowedCidrs": [CIDR],
            "selfSignedCertificate": True,
            "accessLogs": False,
            "auth": {"domainPrefix": f"gpu-endpoint-{account}"},
        }
    ),
    EndpointWiring(
        vpc_cidr=CIDR,
        vpc_id=vpc.id,
        subnet_ids=subnet_ids,
        routes=Routes(ports=(8000,), longest_request_seconds=(LONGEST_GENERATION_SECONDS,)),
        protect=False,
    ),
)

# -- the model service ------------------------------------------------------------------------
# Its input is the stack file's `platform.models.<name>` section, with the same keys and
# defaults; it decides its fit on the pool, task size, timeouts and scaling itself, and fails
# with the stack file's message when, say, 64 sequences of 8192 tokens do not fit one GPU.
llama = ModelConfig.model_validate(
    {
        "engine": "vllm",
        "pool": "gpu",
        "architecture": "llama-3.1-8b",
        "weightsUri": WEIGHTS,
        "maxModelLen": 8192,
        "maxGenerationSeconds": LONGEST_GENERATION_SECONDS,
        "autoscaling": {"metric": "albRequests"},
    }
)
service = ModelService(
    MODEL,
    llama,
    ModelWiring(
        pool=pool,
        image=f"{account}.dkr.ecr.{region}.amazonaws.com/vllm:0.33.0",
        placement=Placement(priority=100, facts=StackFacts(metrics_sidecar=False, region=region)),
        cluster_arn=cluster.arn,
        vpc_id=vpc.id,
        subnet_ids=subnet_ids,
        alb_security_group_id=endpoint.security_group.id,
        load_balancer_arn_suffix=endpoint.load_balancer.arn_suffix,
        router=endpoint,
        service_depends_on=[association],
    ),
)

pulumi.export("url", pulumi.Output.concat("https://models.example.internal/", MODEL, "/v1"))
pulumi.export("tokenUrl", endpoint.token_url)
pulumi.export("apiClientId", endpoint.api_client_id)
pulumi.export("serviceName", service.service.name)
# What the service decided (fit, task size, timeouts), as a stack exports its plan's.
pulumi.export("decisions", {f"model {MODEL}": service.decisions})
