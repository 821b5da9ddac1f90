"""A deliberately insecure model-serving stack: every mandatory ecs-inference policy must fire.

Never deploy this. It is the negative example for the policy pack (``pulumi preview
--policy-pack ../../../policy`` here, or the offline preview with ``--cwd`` pointing here) and
is written the way a hurried stack often is, with raw pulumi-aws resources:

* an internet-facing ALB whose HTTP listener forwards straight to the model (no authenticate
  action), with the default 60 s idle timeout;
* an internet-facing NLB on the model port;
* a security group open to 0.0.0.0/0 on port 8000;
* a Fargate task definition asking for a GPU and a plaintext hub token, sized off the Fargate
  grid (1 vCPU with 1.5 GB), run by a Fargate service that gives its tasks public IPs;
* a large (8 vCPU) Fargate task pinned to platform version 1.3.0;
* a nightly EventBridge target that submits an EC2 GPU Batch job definition to a job queue
  whose only compute environment is Fargate (the job never runs).
"""

import json

import pulumi_aws as aws

VPC_ID = "vpc-0123456789abcdef0"
PUBLIC_SUBNETS = ["subnet-0aaaaaaaaaaaaaaa1", "subnet-0bbbbbbbbbbbbbbb2"]
IMAGE = "123456789012.dkr.ecr.us-east-1.amazonaws.com/vllm:latest"

cluster = aws.ecs.Cluster("insecure")

# Insecure as it is, its tasks must be able to start: Fargate pulls from ECR with this role.
execution_role = aws.iam.Role(
    "task-execution",
    assume_role_policy=json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Effect": "Allow",
                    "Principal": {"Service": "ecs-tasks.amazonaws.com"},
                    "Action": "sts:AssumeRole",
                }
            ],
        }
    ),
)
aws.iam.RolePolicyAttachment(
    "task-execution-policy",
    role=execution_role.name,
    policy_arn="arn:aws:iam::aws:policy/service-role/AmazonECSTaskExecutionRolePolicy",
)

# Open to the whole internet on the model server's port.
model_sg = aws.ec2.SecurityGroup(
    "model-sg",
    vpc_id=VPC_ID,
    ingress=[{"protocol": "tcp", "from_port": 8000, "to_port": 8000, "cidr_blocks": ["0.0.0.0/0"]}],
    egress=[{"protocol": "-1", "from_port": 0, "to_port": 0, "cidr_blocks": ["0.0.0.0/0"]}],
)

# internal defaults to false: this ALB is internet-facing.
alb = aws.lb.LoadBalancer("public-alb", subnets=PUBLIC_SUBNETS, security_groups=[model_sg.id])
target_group = aws.lb.TargetGroup(
    "model-tg", port=8000, protocol="HTTP", vpc_id=VPC_ID, target_type="ip"
)
aws.lb.Listener(
    "http",
    load_balancer_arn=alb.arn,
    port=80,
    protocol="HTTP",
    default_actions=[{"type": "forward", "target_group_arn": target_group.arn}],
)

nlb = aws.lb.LoadBalancer("public-nlb", load_balancer_type="network", subnets=PUBLIC_SUBNETS)
nlb_target_group = aws.lb.TargetGroup(
    "model-tcp", port=8000, protocol="TCP", vpc_id=VPC_ID, target_type="ip"
)
aws.lb.Listener(
    "tcp-8000",
    load_balancer_arn=nlb.arn,
    port=8000,
    protocol="TCP",
    default_actions=[{"type": "forward", "target_group_arn": nlb_target_group.arn}],
)

gpu_task = aws.ecs.TaskDefinition(
    "gpu-on-fargate",
    family="gpu-on-fargate",
    requires_compatibilities=["FARGATE"],
    network_mode="awsvpc",
    execution_role_arn=execution_role.arn,
    cpu="1024",
    memory="1536",
    container_definitions=json.dumps(
        [
            {
                "name": "vllm",
                "image": IMAGE,
                "essential": True,
                "portMappings": [{"containerPort": 8000}],
                "resourceRequirements": [{"type": "GPU", "value": "1"}],
                "environment": [{"name": "HF_TOKEN", "value": "hf_plaintext_token"}],
            }
        ]
    ),
)
aws.ecs.Service(
    "gpu-service",
    cluster=cluster.arn,
    task_definition=gpu_task.arn,
    desired_count=1,
    launch_type="FARGATE",
    network_configuration={
        "subnets": PUBLIC_SUBNETS,
        "security_groups": [model_sg.id],
        "assign_public_ip": True,
    },
    load_balancers=[
        {"target_group_arn": target_group.arn, "container_name": "vllm", "container_port": 8000}
    ],
)

big_task = aws.ecs.TaskDefinition(
    "big-cpu",
    family="big-cpu",
    requires_compatibilities=["FARGATE"],
    network_mode="awsvpc",
    execution_role_arn=execution_role.arn,
    cpu="8192",
    memory="16384",
    container_definitions=json.dumps([{"name": "app", "image": IMAGE, "essential": True}]),
)
aws.ecs.Service(
    "big-service",
    cluster=cluster.arn,
    task_definition=big_task.arn,
    desired_count=1,
    launch_type="FARGATE",
    platform_version="1.3.0",
    network_configuration={"subnets": PUBLIC_SUBNETS, "assign_public_ip": False},
    deployment_circuit_breaker={"enable": True, "rollback": True},
)

# A nightly GPU batch job sent to a queue whose compute environment is Fargate.
fargate_env = aws.batch.ComputeEnvironment(
    "fargate-env",
    type="MANAGED",
    compute_resources={
        "type": "FARGATE",
        "max_vcpus": 16,
        "subnets": PUBLIC_SUBNETS,
        "security_group_ids": [model_sg.id],
    },
)
queue = aws.batch.JobQueue(
    "fargate-queue",
    priority=1,
    state="ENABLED",
    compute_environment_orders=[{"order": 1, "compute_environment": fargate_env.arn}],
)
gpu_job = aws.batch.JobDefinition(
    "gpu-job",
    type="container",
    platform_capabilities=["EC2"],
    container_properties=json.dumps(
        {
            "image": IMAGE,
            "resourceRequirements": [
                {"type": "VCPU", "value": "4"},
                {"type": "MEMORY", "value": "16384"},
                {"type": "GPU", "value": "1"},
            ],
        }
    ),
)
nightly = aws.cloudwatch.EventRule("nightly", schedule_expression="cron(0 2 * * ? *)")
aws.cloudwatch.EventTarget(
    "nightly-gpu-job",
    rule=nightly.name,
    arn=queue.arn,
    role_arn=execution_role.arn,
    batch_target={"job_definition": gpu_job.arn, "job_name": "nightly-eval"},
)
