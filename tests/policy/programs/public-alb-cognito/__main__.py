"""Good: an internet-facing ALB open to the internet on 443 whose every route authenticates
(Cognito for browsers, JWT validation for API clients) in front of a GPU service on EC2."""

import json

import pulumi_aws as aws

VPC = "vpc-0123456789abcdef0"
PUBLIC = ["subnet-0aaaaaaaaaaaaaaa1", "subnet-0bbbbbbbbbbbbbbb2"]
PRIVATE = ["subnet-0ccccccccccccccc3", "subnet-0ddddddddddddddd4"]
POOL = "arn:aws:cognito-idp:us-east-1:123456789012:userpool/us-east-1_abc"

alb_sg = aws.ec2.SecurityGroup(
    "alb-sg",
    vpc_id=VPC,
    ingress=[
        {"protocol": "tcp", "from_port": 443, "to_port": 443, "cidr_blocks": ["0.0.0.0/0"]},
        {"protocol": "tcp", "from_port": 80, "to_port": 80, "ipv6_cidr_blocks": ["::/0"]},
    ],
)
task_sg = aws.ec2.SecurityGroup("task-sg", vpc_id=VPC)
aws.vpc.SecurityGroupIngressRule(
    "task-from-alb",
    security_group_id=task_sg.id,
    referenced_security_group_id=alb_sg.id,
    ip_protocol="tcp",
    from_port=8000,
    to_port=8000,
)
alb = aws.lb.LoadBalancer("edge", subnets=PUBLIC, security_groups=[alb_sg.id], idle_timeout=900)
tg = aws.lb.TargetGroup("vllm", port=8000, protocol="HTTP", target_type="ip", vpc_id=VPC)
aws.lb.Listener(
    "http",
    load_balancer_arn=alb.arn,
    port=80,
    protocol="HTTP",
    default_actions=[
        {
            "type": "redirect",
            "redirect": {"port": "443", "protocol": "HTTPS", "status_code": "HTTP_301"},
        }
    ],
)
https = aws.lb.Listener(
    "https",
    load_balancer_arn=alb.arn,
    port=443,
    protocol="HTTPS",
    certificate_arn="arn:aws:acm:us-east-1:123456789012:certificate/0f1e2d3c-aaaa-bbbb-cccc-000000000000",
    default_actions=[
        {
            "type": "authenticate-cognito",
            "order": 1,
            "authenticate_cognito": {
                "user_pool_arn": POOL,
                "user_pool_client_id": "client",
                "user_pool_domain": "models",
                "on_unauthenticated_request": "authenticate",
            },
        },
        {"type": "forward", "order": 2, "target_group_arn": tg.arn},
    ],
)
aws.lb.ListenerRule(
    "api",
    listener_arn=https.arn,
    priority=10,
    conditions=[{"path_pattern": {"values": ["/v1/*"]}}],
    actions=[
        {
            "type": "jwt-validation",
            "order": 1,
            "jwt_validation": {
                "issuer": "https://idp.example.com",
                "jwks_endpoint": "https://idp.example.com/jwks",
            },
        },
        {"type": "forward", "order": 2, "target_group_arn": tg.arn},
    ],
)
task = aws.ecs.TaskDefinition(
    "vllm",
    family="vllm",
    requires_compatibilities=["EC2"],
    network_mode="awsvpc",
    container_definitions=json.dumps(
        [
            {
                "name": "vllm",
                "image": "123456789012.dkr.ecr.us-east-1.amazonaws.com/vllm:0.9",
                "essential": True,
                "memory": 30000,
                "portMappings": [{"containerPort": 8000}],
                "resourceRequirements": [{"type": "GPU", "value": "1"}],
            }
        ]
    ),
)
aws.ecs.Service(
    "vllm",
    cluster="arn:aws:ecs:us-east-1:123456789012:cluster/models",
    task_definition=task.arn,
    desired_count=1,
    launch_type="EC2",
    network_configuration={"subnets": PRIVATE, "security_groups": [task_sg.id]},
    load_balancers=[{"target_group_arn": tg.arn, "container_name": "vllm", "container_port": 8000}],
    health_check_grace_period_seconds=600,
    deployment_circuit_breaker={"enable": True, "rollback": True},
)
