"""A Fargate service written with raw pulumi-aws resources, the way a user of another program
would: an application container and a sidecar from two ECR repositories, a Secrets Manager
secret in the application's environment, and an awslogs log group.

Its execution role grants exactly what ECS needs to start the task. The config value `drop`
(`repository`, `secret` or `log-group`) leaves one of those grants out, as a reviewer could miss
it: the offline preview's runtime rehearsal must then fail, naming the call and the resource.
"""

import json

import pulumi
import pulumi_aws as aws

DROP = pulumi.Config().get("drop") or ""
ACCOUNT = "123456789012"
REGION = "us-east-1"
REGISTRY = f"{ACCOUNT}.dkr.ecr.{REGION}.amazonaws.com"
APP, SIDECAR = f"{REGISTRY}/shop/app:1.4.2", f"{REGISTRY}/shop/log-shipper:2.0.1"
SUBNETS = ["subnet-0aaaaaaaaaaaaaaa1", "subnet-0bbbbbbbbbbbbbbb2"]

cluster = aws.ecs.Cluster("shop")
logs = aws.cloudwatch.LogGroup("shop-logs", name="/shop/app", retention_in_days=30)
secret = aws.secretsmanager.Secret("shop-db-password", name="shop/db-password")

trust = json.dumps(
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
)
execution = aws.iam.Role("shop-execution", assume_role_policy=trust)
repositories = [
    f"arn:aws:ecr:{REGION}:{ACCOUNT}:repository/shop/app",
    f"arn:aws:ecr:{REGION}:{ACCOUNT}:repository/shop/log-shipper",
]
if DROP == "repository":
    repositories = repositories[:1]


def execution_policy(args: list[str]) -> str:
    log_group_arn, secret_arn = args
    statements = [
        {"Effect": "Allow", "Action": "ecr:GetAuthorizationToken", "Resource": "*"},
        {
            "Effect": "Allow",
            "Action": ["ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer"],
            "Resource": repositories,
        },
    ]
    if DROP != "log-group":
        statements.append(
            {
                "Effect": "Allow",
                "Action": ["logs:CreateLogStream", "logs:PutLogEvents"],
                "Resource": f"{log_group_arn}:log-stream:*",
            }
        )
    if DROP != "secret":
        statements.append(
            {"Effect": "Allow", "Action": "secretsmanager:GetSecretValue", "Resource": secret_arn}
        )
    return json.dumps({"Version": "2012-10-17", "Statement": statements})


aws.iam.RolePolicy(
    "shop-execution",
    role=execution.name,
    policy=pulumi.Output.all(logs.arn, secret.arn).apply(execution_policy),
)


def containers(secret_arn: str) -> str:
    log = {
        "logDriver": "awslogs",
        "options": {
            "awslogs-group": "/shop/app",
            "awslogs-region": REGION,
            "awslogs-stream-prefix": "shop",
        },
    }
    return json.dumps(
        [
            {
                "name": "app",
                "image": APP,
                "essential": True,
                "portMappings": [{"containerPort": 8080}],
                "secrets": [{"name": "DB_PASSWORD", "valueFrom": secret_arn}],
                "logConfiguration": log,
            },
            {"name": "log-shipper", "image": SIDECAR, "essential": False, "logConfiguration": log},
        ]
    )


task = aws.ecs.TaskDefinition(
    "shop",
    family="shop",
    requires_compatibilities=["FARGATE"],
    network_mode="awsvpc",
    cpu="512",
    memory="1024",
    execution_role_arn=execution.arn,
    container_definitions=secret.arn.apply(containers),
)
aws.ecs.Service(
    "shop",
    cluster=cluster.arn,
    task_definition=task.arn,
    desired_count=2,
    launch_type="FARGATE",
    network_configuration={"subnets": SUBNETS, "assign_public_ip": False},
)
