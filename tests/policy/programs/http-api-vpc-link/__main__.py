"""Bad: an HTTP API route without an authorizer reaches an internal ALB through a VPC link;
the ALB forwards without authenticating, so the model is public. A second route with a JWT
authorizer into the same listener is fine on its own."""

import json

import pulumi_aws as aws

VPC = "vpc-0123456789abcdef0"
PRIVATE = ["subnet-0ccccccccccccccc3", "subnet-0ddddddddddddddd4"]

alb_sg = aws.ec2.SecurityGroup("alb-sg", vpc_id=VPC)
alb = aws.lb.LoadBalancer("models", internal=True, subnets=PRIVATE, security_groups=[alb_sg.id])
tg = aws.lb.TargetGroup("sglang", port=30000, protocol="HTTP", target_type="ip", vpc_id=VPC)
listener = aws.lb.Listener(
    "http",
    load_balancer_arn=alb.arn,
    port=80,
    default_actions=[{"type": "forward", "target_group_arn": tg.arn}],
)
task = aws.ecs.TaskDefinition(
    "sglang",
    family="sglang",
    requires_compatibilities=["EC2"],
    network_mode="awsvpc",
    container_definitions=json.dumps(
        [
            {
                "name": "sglang",
                "image": "lmsysorg/sglang:v0.4",
                "memory": 30000,
                "portMappings": [{"containerPort": 30000}],
                "resourceRequirements": [{"type": "GPU", "value": "1"}],
            }
        ]
    ),
)
aws.ecs.Service(
    "sglang",
    cluster="arn:aws:ecs:us-east-1:123456789012:cluster/models",
    task_definition=task.arn,
    desired_count=1,
    launch_type="EC2",
    network_configuration={"subnets": PRIVATE, "security_groups": [alb_sg.id]},
    load_balancers=[
        {"target_group_arn": tg.arn, "container_name": "sglang", "container_port": 30000}
    ],
)
api = aws.apigatewayv2.Api("models", protocol_type="HTTP")
link = aws.apigatewayv2.VpcLink("models", subnet_ids=PRIVATE, security_group_ids=[alb_sg.id])
integration = aws.apigatewayv2.Integration(
    "alb",
    api_id=api.id,
    integration_type="HTTP_PROXY",
    integration_method="ANY",
    connection_type="VPC_LINK",
    connection_id=link.id,
    integration_uri=listener.arn,
)
aws.apigatewayv2.Route(
    "open",
    api_id=api.id,
    route_key="ANY /{proxy+}",
    target=integration.id.apply(lambda i: f"integrations/{i}"),
)
aws.apigatewayv2.Route(
    "guarded",
    api_id=api.id,
    route_key="POST /v1/chat/completions",
    authorization_type="JWT",
    authorizer_id="abc123",
    target=integration.id.apply(lambda i: f"integrations/{i}"),
)
