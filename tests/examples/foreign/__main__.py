"""A program in the style of public Pulumi examples: it looks up the default VPC, its subnets,
an AMI and the account, and builds an ALB in front of a Fargate service and one EC2 instance.
Used by tests/tools/test_foreign_programs.py (`tools.preview --cwd`)."""

import json

import pulumi
import pulumi_aws as aws

config = pulumi.Config()
app = config.get("app") or "web"

identity = aws.get_caller_identity()
region = aws.get_region()
zones = aws.get_availability_zones(state="available")
vpc = aws.ec2.get_vpc(default=True)
subnets = aws.ec2.get_subnets(filters=[{"name": "vpc-id", "values": [vpc.id]}])
ami = aws.ec2.get_ami(
    most_recent=True,
    owners=["amazon"],
    filters=[{"name": "name", "values": ["al2023-ami-*-x86_64"]}],
)
ecs_ami = aws.ssm.get_parameter(name="/aws/service/ecs/optimized-ami/amazon-linux-2023/recommended")
route_tables = aws.ec2.get_route_tables(vpc_id=vpc.id)
token = aws.ecr.get_authorization_token()

assume = aws.iam.get_policy_document(
    statements=[
        {
            "actions": ["sts:AssumeRole"],
            "principals": [{"type": "Service", "identifiers": ["ecs-tasks.amazonaws.com"]}],
        }
    ]
)

group = aws.ec2.SecurityGroup(
    f"{app}-sg",
    vpc_id=vpc.id,
    description="HTTP from the VPC",
    ingress=[{"protocol": "tcp", "from_port": 80, "to_port": 80, "cidr_blocks": [vpc.cidr_block]}],
    egress=[{"protocol": "-1", "from_port": 0, "to_port": 0, "cidr_blocks": ["0.0.0.0/0"]}],
)
alb = aws.lb.LoadBalancer(
    f"{app}-lb", internal=True, security_groups=[group.id], subnets=subnets.ids
)
target_group = aws.lb.TargetGroup(
    f"{app}-tg", port=80, protocol="HTTP", target_type="ip", vpc_id=vpc.id
)
listener = aws.lb.Listener(
    f"{app}-listener",
    load_balancer_arn=alb.arn,
    port=80,
    default_actions=[{"type": "forward", "target_group_arn": target_group.arn}],
)
role = aws.iam.Role(f"{app}-task-role", assume_role_policy=assume.json)
aws.iam.RolePolicyAttachment(
    f"{app}-task-policy",
    role=role.name,
    policy_arn="arn:aws:iam::aws:policy/service-role/AmazonECSTaskExecutionRolePolicy",
)
cluster = aws.ecs.Cluster(f"{app}-cluster")
logs = aws.cloudwatch.LogGroup(f"{app}-logs", retention_in_days=7)
task = aws.ecs.TaskDefinition(
    f"{app}-task",
    family=f"{app}-task",
    cpu="256",
    memory="512",
    network_mode="awsvpc",
    requires_compatibilities=["FARGATE"],
    execution_role_arn=role.arn,
    container_definitions=logs.name.apply(
        lambda name: json.dumps(
            [
                {
                    "name": app,
                    "image": "public.ecr.aws/nginx/nginx:1.27",
                    "portMappings": [{"containerPort": 80, "protocol": "tcp"}],
                    "logConfiguration": {
                        "logDriver": "awslogs",
                        "options": {
                            "awslogs-group": name,
                            "awslogs-region": region.name,
                            "awslogs-stream-prefix": app,
                        },
                    },
                }
            ]
        )
    ),
)
service = aws.ecs.Service(
    f"{app}-svc",
    cluster=cluster.arn,
    desired_count=2,
    launch_type="FARGATE",
    task_definition=task.arn,
    network_configuration={
        "assign_public_ip": False,
        "subnets": subnets.ids,
        "security_groups": [group.id],
    },
    load_balancers=[
        {"target_group_arn": target_group.arn, "container_name": app, "container_port": 80}
    ],
    opts=pulumi.ResourceOptions(depends_on=[listener]),
)
server = aws.ec2.Instance(
    f"{app}-server",
    instance_type="t3.micro",
    ami=ami.id,
    subnet_id=subnets.ids[0],
    vpc_security_group_ids=[group.id],
    metadata_options={"http_tokens": "required"},
)

pulumi.export("account", identity.account_id)
pulumi.export("zones", zones.names)
pulumi.export("url", alb.dns_name)
pulumi.export("ecsAmi", json.loads(ecs_ami.value)["image_id"])
pulumi.export("routeTables", route_tables.ids)
pulumi.export("registry", token.proxy_endpoint)
