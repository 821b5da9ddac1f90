"""Bad: GPU work on Fargate by roads other than a service: a Batch job definition on FARGATE
asking for a GPU, and an EventBridge rule target running a GPU task on FARGATE_SPOT. The same
job definition on EC2 is fine."""

import json

import pulumi_aws as aws

gpu_job = {
    "image": "123456789012.dkr.ecr.us-east-1.amazonaws.com/embed:1",
    "resourceRequirements": [
        {"type": "GPU", "value": "1"},
        {"type": "VCPU", "value": "4"},
        {"type": "MEMORY", "value": "16384"},
    ],
}
aws.batch.JobDefinition(
    "embed-fargate",
    type="container",
    platform_capabilities=["FARGATE"],
    container_properties=json.dumps(gpu_job),
)
aws.batch.JobDefinition(
    "embed-ec2",
    type="container",
    platform_capabilities=["EC2"],
    container_properties=json.dumps(gpu_job),
)
cluster = aws.ecs.Cluster("jobs")
task = aws.ecs.TaskDefinition(
    "reindex",
    family="reindex",
    requires_compatibilities=["EC2"],
    network_mode="awsvpc",
    container_definitions=json.dumps(
        [
            {
                "name": "reindex",
                "image": "123456789012.dkr.ecr.us-east-1.amazonaws.com/reindex:1",
                "memory": 8192,
                "resourceRequirements": [{"type": "GPU", "value": "1"}],
            }
        ]
    ),
)
rule = aws.cloudwatch.EventRule("nightly", schedule_expression="rate(1 day)")
aws.cloudwatch.EventTarget(
    "nightly-reindex",
    rule=rule.name,
    arn=cluster.arn,
    role_arn="arn:aws:iam::123456789012:role/events-ecs",
    ecs_target={
        "task_definition_arn": task.arn,
        "capacity_provider_strategies": [{"capacity_provider": "FARGATE_SPOT", "weight": 1}],
        "network_configuration": {"subnets": ["subnet-0ccccccccccccccc3"]},
    },
)
