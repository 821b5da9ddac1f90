"""Good: interface VPC endpoints whose security group admits 443 from anywhere (endpoints
receive no internet traffic), and a Fargate service reachable only from a client allow-list."""

import json

import pulumi_aws as aws

VPC = "vpc-0123456789abcdef0"
PRIVATE = ["subnet-0ccccccccccccccc3", "subnet-0ddddddddddddddd4"]

endpoint_sg = aws.ec2.SecurityGroup(
    "endpoints",
    vpc_id=VPC,
    ingress=[{"protocol": "tcp", "from_port": 443, "to_port": 443, "cidr_blocks": ["0.0.0.0/0"]}],
)
for service in ("ecr.api", "ecr.dkr", "logs"):
    aws.ec2.VpcEndpoint(
        f"vpce-{service}",
        vpc_id=VPC,
        service_name=f"com.amazonaws.us-east-1.{service}",
        vpc_endpoint_type="Interface",
        subnet_ids=PRIVATE,
        security_group_ids=[endpoint_sg.id],
        private_dns_enabled=True,
    )
clients = aws.ec2.SecurityGroup(
    "clients",
    vpc_id=VPC,
    ingress=[
        {
            "protocol": "tcp",
            "from_port": 8080,
            "to_port": 8080,
            "cidr_blocks": ["203.0.113.0/24", "10.0.0.0/8"],
        }
    ],
)
# Fargate pulls the image from ECR with the task's execution role.
execution = aws.iam.Role(
    "rerank-execution",
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
    "rerank-execution",
    role=execution.name,
    policy_arn="arn:aws:iam::aws:policy/service-role/AmazonECSTaskExecutionRolePolicy",
)
task = aws.ecs.TaskDefinition(
    "rerank",
    family="rerank",
    cpu="1024",
    memory="2048",
    network_mode="awsvpc",
    requires_compatibilities=["FARGATE"],
    execution_role_arn=execution.arn,
    container_definitions=json.dumps(
        [
            {
                "name": "rerank",
                "image": "123456789012.dkr.ecr.us-east-1.amazonaws.com/rerank:1",
                "portMappings": [{"containerPort": 8080}],
            }
        ]
    ),
)
aws.ecs.Service(
    "rerank",
    cluster="arn:aws:ecs:us-east-1:123456789012:cluster/models",
    task_definition=task.arn,
    desired_count=1,
    launch_type="FARGATE",
    network_configuration={"subnets": PRIVATE, "security_groups": [clients.id]},
    deployment_circuit_breaker={"enable": True, "rollback": True},
)
