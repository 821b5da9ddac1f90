"""Bad: the shape of many Fargate quick starts: an internet-facing ALB forwarding to the
service without authentication, tasks with public IPs behind a security group open on 80."""

import json

import pulumi_aws as aws

VPC = "vpc-0123456789abcdef0"
PUBLIC = ["subnet-0aaaaaaaaaaaaaaa1", "subnet-0bbbbbbbbbbbbbbb2"]

web_sg = aws.ec2.SecurityGroup(
    "web-sg",
    vpc_id=VPC,
    ingress=[{"protocol": "tcp", "from_port": 80, "to_port": 80, "cidr_blocks": ["0.0.0.0/0"]}],
)
alb = aws.lb.LoadBalancer("web", subnets=PUBLIC, security_groups=[web_sg.id])
tg = aws.lb.TargetGroup("web", port=80, protocol="HTTP", target_type="ip", vpc_id=VPC)
aws.lb.Listener(
    "web",
    load_balancer_arn=alb.arn,
    port=80,
    default_actions=[{"type": "forward", "target_group_arn": tg.arn}],
)
task = aws.ecs.TaskDefinition(
    "app",
    family="app",
    cpu="256",
    memory="512",
    network_mode="awsvpc",
    requires_compatibilities=["FARGATE"],
    container_definitions=json.dumps(
        [{"name": "app", "image": "nginx", "portMappings": [{"containerPort": 80}]}]
    ),
)
aws.ecs.Service(
    "app",
    cluster="arn:aws:ecs:us-east-1:123456789012:cluster/web",
    task_definition=task.arn,
    desired_count=2,
    launch_type="FARGATE",
    network_configuration={
        "subnets": PUBLIC,
        "security_groups": [web_sg.id],
        "assign_public_ip": True,
    },
    load_balancers=[{"target_group_arn": tg.arn, "container_name": "app", "container_port": 80}],
)
