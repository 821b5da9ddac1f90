"""The load-balanced ECS service both serving components are: ModelService and FargateReranker.

A model on EC2 GPU/Inferentia capacity and a cross-encoder on Fargate differ in their task
(container, compatibilities, sizes) and in where ECS places it, but around that task they are
the same service: a log group with retention, execution and task roles scoped to that log
group, image, secrets and one S3 prefix, a task security group open only to the ALB, an ip
target group, the endpoint's listener rules, an ECS service that waits for those rules, and
target-tracking autoscaling. `LoadBalancedService._create_service` builds that sequence once;
each component passes what differs. The single resources (roles, security group, target group,
autoscaling) are public functions here too.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, cast

import pulumi
import pulumi_aws as aws
from pulumi import Input, Output

from ecs_inference import iam
from ecs_inference.contracts.aws_limits import ELBV2_NAME, FARGATE_NOFILE_DEFAULT, fitted_name
from ecs_inference.contracts.engine import ENV_REGION_VARIABLES
from ecs_inference.contracts.tags import MAX_REQUEST_SECONDS as MAX_REQUEST_SECONDS_TAG
from ecs_inference.network import aws_api_egress
from ecs_inference.specs import weights as weights_spec
from ecs_inference.specs.operations import metrics_sidecar_container, target_tracking_args
from ecs_inference.specs.service_connect import (
    APP_PROTOCOL,
    PORT_NAME,
    Namespace,
    discovery_name,
    private_host,
    timeouts,
)

TARGET_TRACKING_METRIC = "ALBRequestCountPerTarget"
ECS_SERVICE_NAMESPACE = "ecs"
ECS_SCALABLE_DIMENSION = "ecs:service:DesiredCount"
# Fargate's default, stated in every serving container so a host (EC2) or platform change
# cannot lower it below what a server holding many upstream connections needs.
NOFILE_LIMIT = FARGATE_NOFILE_DEFAULT
"""Open files per container: one per client stream and upstream connection, plus the engine's
own (tokenizer, shards, NCCL sockets). Docker's default 1024 runs out under load."""


class Router(Protocol):
    """What a service needs from the endpoint: attach a target group under `/<service>/`."""

    def route(
        self,
        service: str,
        *,
        target_group_arn: Input[str],
        priority: int,
        opts: pulumi.ResourceOptions | None = None,
    ) -> list[Any]: ...


@dataclass(frozen=True, kw_only=True)
class ServiceWiring:
    """What every load-balanced service takes from the rest of the platform (Outputs)."""

    cluster_arn: Input[str]
    """The ECS cluster."""
    vpc_id: Input[str]
    """VPC of the task security group."""
    subnet_ids: Input[Sequence[str]]
    """PRIVATE subnets of the tasks."""
    alb_security_group_id: Input[str]
    """The only source the task security group admits."""
    load_balancer_arn_suffix: Input[str]
    """For the ALBRequestCountPerTarget scaling metric."""
    router: Router
    """The endpoint: attaches the target group under `/<service>/` (`route`)."""
    service_depends_on: Sequence[pulumi.Resource] = ()
    """What the ECS service waits for, e.g. the cluster's capacity provider association (ECS
    rejects a strategy naming a provider the cluster is not associated with yet)."""
    client_security_group_ids: Sequence[Input[str]] = ()
    """Other groups admitted to the serving port besides the ALB (the AI gateway); default none."""
    service_connect_namespace: Namespace | None = None
    """Cloud Map namespace in which the service is a Service Connect server
    (`<service>.<namespace>:<port>`); default None (not reachable by Service Connect)."""


class ServiceArgs(Protocol):
    """What `LoadBalancedService` reads from `ModelServiceArgs` and `FargateRerankerArgs`: the
    `ServiceSpec` fields (documented there) plus the `ServiceWiring` fields, read-only."""

    @property
    def service(self) -> str: ...
    @property
    def priority(self) -> int: ...
    @property
    def image(self) -> Input[str]: ...
    @property
    def desired_count(self) -> int: ...
    @property
    def min_count(self) -> int: ...
    @property
    def max_count(self) -> int: ...
    @property
    def scale_out_cooldown(self) -> int: ...
    @property
    def scale_in_cooldown(self) -> int: ...
    @property
    def health_check_grace_period_seconds(self) -> int: ...
    @property
    def deregistration_delay_seconds(self) -> int: ...
    @property
    def max_request_seconds(self) -> int | None: ...
    @property
    def deployment_minimum_healthy_percent(self) -> int: ...
    @property
    def deployment_maximum_percent(self) -> int: ...
    @property
    def environment(self) -> Mapping[str, str]: ...
    @property
    def secrets(self) -> Mapping[str, str]: ...
    @property
    def log_retention_days(self) -> int: ...
    @property
    def weights_kms_key_arn(self) -> str | None: ...
    @property
    def secrets_kms_key_arns(self) -> tuple[str, ...]: ...
    @property
    def execute_command(self) -> bool: ...
    @property
    def execute_command_logging(self) -> bool: ...
    @property
    def cluster_arn(self) -> Input[str]: ...
    @property
    def vpc_id(self) -> Input[str]: ...
    @property
    def subnet_ids(self) -> Input[Sequence[str]]: ...
    @property
    def alb_security_group_id(self) -> Input[str]: ...
    @property
    def load_balancer_arn_suffix(self) -> Input[str]: ...
    @property
    def router(self) -> Router: ...
    @property
    def service_depends_on(self) -> Sequence[pulumi.Resource]: ...
    @property
    def client_security_group_ids(self) -> Sequence[Input[str]]: ...
    @property
    def service_connect_namespace(self) -> Namespace | None: ...


@dataclass(frozen=True)
class AwsContext:
    """Partition, account and region of the provider, as Outputs (known during preview)."""

    partition: Output[str]
    account_id: Output[str]
    region: Output[str]


def aws_context(parent: pulumi.Resource) -> AwsContext:
    """Look up partition, account and region once per component."""
    invoke = pulumi.InvokeOutputOptions(parent=parent)
    return AwsContext(
        partition=aws.get_partition_output(opts=invoke).partition,
        account_id=aws.get_caller_identity_output(opts=invoke).account_id,
        region=aws.get_region_output(opts=invoke).region,
    )


def log_group_name(service: str) -> str:
    """`/ecs-inference/<stack>/<service>`: stable and findable by operators."""
    return f"/{pulumi.get_project()}/{pulumi.get_stack()}/{service}"


def exec_log_group_name() -> str:
    """`/ecs-inference/<stack>/ecs-exec`: the cluster's ECS Exec session log."""
    return f"/{pulumi.get_project()}/{pulumi.get_stack()}/ecs-exec"


def task_family(service: str) -> str:
    """Task definition family, unique per project, stack and service."""
    return f"{pulumi.get_project()}-{pulumi.get_stack()}-{service}"


def stack_scope() -> str:
    """`<project>/<stack>`: what keeps explicit physical names unique per stack."""
    return f"{pulumi.get_project()}/{pulumi.get_stack()}"


@dataclass(frozen=True)
class ServiceRoles:
    execution_role: aws.iam.Role
    execution_policy: aws.iam.RolePolicy
    task_role: aws.iam.Role
    task_policy: aws.iam.RolePolicy | None
    """None when the container reads no weights (a custom image without `weightsUri`)."""


@dataclass(frozen=True)
class EfsAccess:
    """Weights on EFS: what the task mounts and the task role may mount."""

    volume: aws.ecs.TaskDefinitionVolumeArgs
    """The task definition volume (TLS and IAM authorisation through the access point)."""
    file_system_arn: Input[str]
    """File system the task role may mount (read only)."""
    access_point_arn: Input[str] | None
    """The only access point it may mount through (None: the file system's root path)."""
    client_security_group_id: Input[str]
    """The group the file system's mount targets admit NFS from."""


def execution_role_policy(
    name: str,
    *,
    role: aws.iam.Role,
    ctx: AwsContext,
    log_group: str,
    container_definitions: Output[str],
    parent: pulumi.Resource,
    secrets_kms_key_arns: Sequence[str] = (),
) -> aws.iam.RolePolicy:
    """The execution role's inline policy (`iam.execution_role_policy`), scoped to the images,
    secrets and log group that `container_definitions` (the task definition's JSON) names, so a
    container added to the task (a sidecar) is granted its pull in the same place."""
    return aws.iam.RolePolicy(
        f"{name}-execution",
        role=role.id,
        policy=Output.all(ctx.partition, ctx.region, ctx.account_id, container_definitions).apply(
            lambda a: iam.execution_role_policy(
                log_group_arn=f"arn:{a[0]}:logs:{a[1]}:{a[2]}:log-group:{log_group}",
                containers=json.loads(a[3]),
                partition=a[0],
                secret_kms_key_arns=secrets_kms_key_arns,
            )
        ),
        opts=pulumi.ResourceOptions(parent=parent),
    )


def service_roles(
    name: str,
    *,
    ctx: AwsContext,
    log_group: str,
    container_definitions: Output[str],
    secrets: Mapping[str, str],
    bucket: str | None,
    prefix: str | None,
    parent: pulumi.Resource,
    efs: EfsAccess | None = None,
    weights_kms_key_arn: str | None = None,
    secrets_kms_key_arns: Sequence[str] = (),
    execute_command: bool = False,
    execute_command_logging: bool = True,
) -> ServiceRoles:
    """Execution role (pull every container's image, this log group, exactly the containers'
    secrets, all read from `container_definitions`, the task definition's JSON) and task role
    (read one S3 prefix), each trusting only ecs-tasks of this account and region. `secrets` are
    checked here, before any resource exists, so a bad ARN fails the plan, not an apply."""
    child = pulumi.ResourceOptions(parent=parent)
    trust = Output.all(ctx.account_id, ctx.region, ctx.partition).apply(
        lambda a: iam.assume_role_policy(account_id=a[0], region=a[1], partition=a[2])
    )
    for value_from in secrets.values():
        iam.secret_policy_arn(value_from)
    execution_role = aws.iam.Role(
        f"{name}-execution",
        description="ECS agent: pull the image, write logs, read the container's secrets",
        assume_role_policy=trust,
        opts=child,
    )
    execution_policy = execution_role_policy(
        name,
        role=execution_role,
        ctx=ctx,
        log_group=log_group,
        container_definitions=container_definitions,
        secrets_kms_key_arns=secrets_kms_key_arns,
        parent=parent,
    )
    if bucket is not None:
        s3_prefix = (prefix or "").strip("/")
        description = f"Serving container: read s3://{bucket}/{s3_prefix} only"
    elif efs is not None:
        description = "Serving container: mount its weights on EFS read-only"
    else:
        description = "Serving container: no AWS access"
    task_role = aws.iam.Role(
        f"{name}-task", description=description, assume_role_policy=trust, opts=child
    )
    task_policy: aws.iam.RolePolicy | None = None
    if bucket is not None:
        task_policy = aws.iam.RolePolicy(
            f"{name}-task",
            role=task_role.id,
            policy=Output.all(ctx.partition, ctx.region).apply(
                lambda a: iam.s3_read_policy(
                    bucket,
                    prefix or "",
                    partition=a[0],
                    kms_key_arn=weights_kms_key_arn,
                    region=a[1],
                )
            ),
            opts=child,
        )
    elif efs is not None:
        task_policy = aws.iam.RolePolicy(
            f"{name}-task",
            role=task_role.id,
            policy=Output.all(efs.file_system_arn, efs.access_point_arn).apply(
                lambda a: json.dumps(
                    {
                        "Version": "2012-10-17",
                        "Statement": [weights_spec.task_role_statement(a[0], a[1])],
                    }
                )
            ),
            opts=child,
        )
    if execute_command:
        aws.iam.RolePolicy(
            f"{name}-exec",
            role=task_role.id,
            policy=Output.all(ctx.partition, ctx.region, ctx.account_id).apply(
                lambda a: iam.ecs_exec_policy(
                    f"arn:{a[0]}:logs:{a[1]}:{a[2]}:log-group:{exec_log_group_name()}"
                    if execute_command_logging
                    else None
                )
            ),
            opts=child,
        )
    return ServiceRoles(execution_role, execution_policy, task_role, task_policy)


def task_security_group(
    name: str,
    *,
    vpc_id: Input[str],
    alb_security_group_id: Input[str],
    port: int,
    service: str,
    parent: pulumi.Resource,
    client_security_group_ids: Sequence[Input[str]] = (),
) -> aws.ec2.SecurityGroup:
    """Ingress only from the ALB (and `client_security_group_ids`, default none: the AI gateway)
    on the container port; egress HTTPS only.

    Tasks reach S3 (weights, ECR layers), ECR, STS, Logs and Secrets Manager over 443, through
    the VPC endpoints or the NAT gateway. DNS to the VPC resolver is not subject to security
    groups, so no port 53 rule is needed.
    """
    return aws.ec2.SecurityGroup(
        f"{name}-tasks",
        description=f"{service} tasks: traffic from the ALB only",
        vpc_id=vpc_id,
        ingress=[
            aws.ec2.SecurityGroupIngressArgs(
                description="ALB to the serving port (requests and health checks)",
                protocol="tcp",
                from_port=port,
                to_port=port,
                security_groups=[alb_security_group_id],
            ),
            *(
                aws.ec2.SecurityGroupIngressArgs(
                    description="Private route (Service Connect) from a client of the service",
                    protocol="tcp",
                    from_port=port,
                    to_port=port,
                    security_groups=[client],
                )
                for client in client_security_group_ids
            ),
        ],
        egress=[aws_api_egress()],
        opts=pulumi.ResourceOptions(parent=parent),
    )


def with_app_protocol(containers: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Container definitions whose named port mappings declare `appProtocol: http`: Service
    Connect proxies such a port as HTTP (per-request timeouts, HTTP metrics); without it the port
    is TCP and ECS refuses a per-request timeout."""
    return [
        {
            **c,
            "portMappings": [
                {**m, "appProtocol": APP_PROTOCOL} if "name" in m else m
                for m in c.get("portMappings", [])
            ],
        }
        if c.get("portMappings")
        else c
        for c in containers
    ]


def service_connect_server(
    *, service: str, namespace: Namespace, port: int, longest_request_seconds: int
) -> aws.ecs.ServiceServiceConnectConfigurationArgs:
    """The ECS service's Service Connect settings as a server at `<service>.<namespace>:<port>`
    (`components.specs.service_connect.server_configuration`, as provider arguments)."""
    t = timeouts(longest_request_seconds)
    return aws.ecs.ServiceServiceConnectConfigurationArgs(
        enabled=True,
        namespace=namespace.arn,
        services=[
            aws.ecs.ServiceServiceConnectConfigurationServiceArgs(
                port_name=PORT_NAME,
                discovery_name=discovery_name(service),
                client_alias=[
                    aws.ecs.ServiceServiceConnectConfigurationServiceClientAliasArgs(
                        port=port, dns_name=private_host(service, namespace.name)
                    )
                ],
                timeout=aws.ecs.ServiceServiceConnectConfigurationServiceTimeoutArgs(
                    idle_timeout_seconds=t["idleTimeoutSeconds"],
                    per_request_timeout_seconds=t["perRequestTimeoutSeconds"],
                ),
            )
        ],
    )


def ip_target_group(
    name: str,
    *,
    vpc_id: Input[str],
    port: int,
    health_path: str,
    deregistration_delay_seconds: int,
    parent: pulumi.Resource,
    interval_seconds: int = 15,
    max_request_seconds: int | None = None,
) -> aws.lb.TargetGroup:
    """An ip target group (awsvpc tasks are addressed by ENI IP) for one service.

    Least-outstanding-requests balancing: LLM requests differ in length by orders of magnitude,
    so round robin piles streams onto one task. Two good checks make a task healthy, three bad
    ones (45 s at the default 15 s interval) unhealthy; `interval_seconds` default 15.
    `max_request_seconds` (default None: untagged) is the service's longest request, the value
    its deregistration delay was derived from; it is tagged `contracts.tags.MAX_REQUEST_SECONDS`
    so the policy pack checks the delay against it instead of the ALB-wide idle timeout.
    """
    logical = f"{name}-tg"
    return aws.lb.TargetGroup(
        logical,
        # Target-group names are capped at 32 characters, so a long service name cannot take the
        # provider's `<logical>-<7 random>` autoname: such names get a stable shortened one.
        name=fitted_name(logical, ELBV2_NAME, scope=stack_scope(), salt=f"ip/HTTP/{port}"),
        target_type="ip",
        protocol="HTTP",
        port=port,
        vpc_id=vpc_id,
        deregistration_delay=deregistration_delay_seconds,
        tags=None
        if max_request_seconds is None
        else {MAX_REQUEST_SECONDS_TAG: str(max_request_seconds)},
        load_balancing_algorithm_type="least_outstanding_requests",
        health_check=aws.lb.TargetGroupHealthCheckArgs(
            enabled=True,
            protocol="HTTP",
            port="traffic-port",
            path=health_path,
            matcher="200",
            interval=interval_seconds,
            timeout=5,
            healthy_threshold=2,
            unhealthy_threshold=3,
        ),
        opts=pulumi.ResourceOptions(parent=parent),
    )


def cluster_name_from_arn(cluster: str) -> str:
    """`arn:aws:ecs:<region>:<account>:cluster/<name>` (or a bare name) -> `<name>`."""
    return cluster.rsplit("/", 1)[-1] if cluster.startswith("arn:") else cluster


def service_scaling(
    name: str,
    *,
    cluster_arn: Input[str],
    service: aws.ecs.Service,
    min_count: int,
    max_count: int,
    metric: dict[str, Any],
    target_value: float,
    scale_out_cooldown: int,
    scale_in_cooldown: int,
    parent: pulumi.Resource,
    configuration: Mapping[str, Any] | None = None,
) -> tuple[aws.appautoscaling.Target, aws.appautoscaling.Policy]:
    """Application Auto Scaling target (min..max tasks) and one target-tracking policy.

    `metric` is `{"predefined_metric_type": ..., "resource_label": ...}` (label only for ALB).
    """
    child = pulumi.ResourceOptions(parent=parent)
    resource_id = Output.all(Output.from_input(cluster_arn), service.name).apply(
        lambda a: f"service/{cluster_name_from_arn(a[0])}/{a[1]}"
    )
    target = aws.appautoscaling.Target(
        f"{name}-scaling",
        service_namespace=ECS_SERVICE_NAMESPACE,
        scalable_dimension=ECS_SCALABLE_DIMENSION,
        resource_id=resource_id,
        min_capacity=min_count,
        max_capacity=max_count,
        opts=child,
    )
    policy = aws.appautoscaling.Policy(
        f"{name}-scaling",
        policy_type="TargetTrackingScaling",
        # The same plain values (not the target's outputs, unknown during preview) so a
        # preview and the policy pack see the whole policy; depends_on keeps the order.
        service_namespace=ECS_SERVICE_NAMESPACE,
        scalable_dimension=ECS_SCALABLE_DIMENSION,
        resource_id=resource_id,
        # A customized-metric `configuration` (engine load with metric math, from
        # components.specs.operations) replaces the predefined metric when given.
        target_tracking_scaling_policy_configuration=(
            cast(
                "aws.appautoscaling.PolicyTargetTrackingScalingPolicyConfigurationArgsDict",
                target_tracking_args(configuration),
            )
            if configuration is not None
            else aws.appautoscaling.PolicyTargetTrackingScalingPolicyConfigurationArgs(
                target_value=float(target_value),
                predefined_metric_specification=(
                    aws.appautoscaling.PolicyTargetTrackingScalingPolicyConfigurationPredefinedMetricSpecificationArgs(
                        **metric
                    )
                ),
                scale_out_cooldown=scale_out_cooldown,
                scale_in_cooldown=scale_in_cooldown,
                disable_scale_in=False,
            )
        ),
        opts=pulumi.ResourceOptions(parent=parent, depends_on=[target]),
    )
    return target, policy


def alb_request_count_label(
    load_balancer_arn_suffix: Input[str], target_group_arn_suffix: Input[str]
) -> Output[str]:
    """ALBRequestCountPerTarget's resource label: `app/<lb>/<id>/targetgroup/<tg>/<id>`."""
    return Output.concat(load_balancer_arn_suffix, "/", target_group_arn_suffix)


# --------------------------------------------------------------------------------------------
# container definition pieces both services use (pure)
# --------------------------------------------------------------------------------------------


def log_configuration(log_group_name: str, region: str, stream_prefix: str) -> dict[str, Any]:
    """awslogs driver settings. Non-blocking mode: a CloudWatch hiccup must not stall stdout
    writes of the serving process (and with it token streams); the buffer absorbs bursts."""
    return {
        "logDriver": "awslogs",
        "options": {
            "awslogs-group": log_group_name,
            "awslogs-region": region,
            "awslogs-stream-prefix": stream_prefix,
            "mode": "non-blocking",
            "max-buffer-size": "25m",
        },
    }


def environment_list(
    managed: Sequence[Mapping[str, str]], extra: Mapping[str, str]
) -> list[dict[str, str]]:
    """`managed` name/value entries plus `extra`, sorted by name (stable task definition diffs)."""
    merged = {e["name"]: e["value"] for e in managed}
    merged.update(extra)
    return [{"name": k, "value": merged[k]} for k in sorted(merged)]


def secrets_list(secrets: Mapping[str, str]) -> list[dict[str, str]]:
    """ECS `secrets` entries: the agent resolves each `valueFrom` with the execution role."""
    return [{"name": k, "valueFrom": secrets[k]} for k in sorted(secrets)]


def serving_container(
    *,
    name: str,
    image: str,
    environment: list[dict[str, str]],
    port_mappings: list[dict[str, Any]],
    log_group_name: str,
    region: str,
    stream_prefix: str,
    stop_timeout_seconds: int,
) -> dict[str, Any]:
    """The keys every serving container starts with, in this order (the JSON of the task
    definition keeps it): essential, awslogs in non-blocking mode, the stop timeout and the
    nofile limit. Callers add command, secrets, devices and `linuxParameters`. The stack's
    `region` is also set as AWS_REGION and AWS_DEFAULT_REGION (`contracts.engine`)."""
    return {
        "name": name,
        "image": image,
        "essential": True,
        "environment": environment_list(
            environment, {variable: region for variable in ENV_REGION_VARIABLES}
        ),
        "portMappings": port_mappings,
        "logConfiguration": log_configuration(log_group_name, region, stream_prefix),
        "stopTimeout": stop_timeout_seconds,
        "ulimits": [{"name": "nofile", "softLimit": NOFILE_LIMIT, "hardLimit": NOFILE_LIMIT}],
    }


@dataclass(frozen=True)
class TaskSpec:
    """What differs between the two services' tasks.

    `container_definitions(region, image)` returns the container list (the region, and the image
    when the stack builds it, are Outputs, so the JSON is built inside `apply`); `compatibility` is
    "EC2" or "FARGATE"; `cpu` (CPU units) and `memory_mib` are task-level; `runtime_platform`
    default None (unset: Linux on the instance's own architecture); `container_name` and `port` are
    what the target group registers; `health_path` is the target group's check;
    `health_check_interval_seconds` default 15.
    """

    container_definitions: Callable[[str, str], list[dict[str, Any]]]
    compatibility: str
    cpu: int
    memory_mib: int
    container_name: str
    port: int
    health_path: str
    runtime_platform: aws.ecs.TaskDefinitionRuntimePlatformArgs | None = None
    health_check_interval_seconds: int = 15
    efs: EfsAccess | None = None
    """Weights on EFS (default None): the volume, the role's mount right, the client group."""
    sidecar: Callable[[str, str], dict[str, Any]] | None = None
    """`sidecar(region, sidecar_image)`: a further container (the metrics sidecar); default
    None, no sidecar."""
    sidecar_image: Input[str] | None = None
    """Its image (an Output when the stack builds it)."""


@dataclass(frozen=True)
class PlacementSpec:
    """Where ECS runs the tasks: `capacity_provider` (the pool's, or "FARGATE"); optional
    (default None, unset): `platform_version` (Fargate only), `placement_constraints` and
    `ordered_placement_strategies` (EC2 only)."""

    capacity_provider: Input[str]
    platform_version: str | None = None
    placement_constraints: Sequence[aws.ecs.ServicePlacementConstraintArgs] | None = None
    ordered_placement_strategies: Sequence[aws.ecs.ServiceOrderedPlacementStrategyArgs] | None = (
        None
    )


class LoadBalancedService(pulumi.ComponentResource):
    """Base of the serving components. After `_create_service` it has: `log_group`,
    `execution_role`, `task_role`, `container_definitions` (Output of the JSON string),
    `task_definition`, `security_group`, `target_group`, `listener_rules`, `service`,
    `scaling_target`, `scaling_policy`."""

    def _create_service(
        self,
        name: str,
        args: ServiceArgs,
        *,
        bucket: str | None,
        prefix: str | None,
        task: TaskSpec,
        placement: PlacementSpec,
        scaling_metric: str,
        scaling_target: float,
        scaling_configuration: Mapping[str, Any] | None = None,
    ) -> None:
        """Create the resources in dependency order and register the component's outputs.

        `bucket`/`prefix`: the only S3 location the task role may read. `scaling_metric`: a
        predefined ECS metric type; ALBRequestCountPerTarget gets its target group label.
        """
        child = pulumi.ResourceOptions(parent=self)
        ctx = aws_context(self)
        group_name = log_group_name(args.service)
        self.log_group = aws.cloudwatch.LogGroup(
            f"{name}-logs", name=group_name, retention_in_days=args.log_retention_days, opts=child
        )
        service_connect = args.service_connect_namespace is not None

        def definitions(a: list[Any]) -> str:
            containers = task.container_definitions(a[0], a[1])
            if service_connect:
                containers = with_app_protocol(containers)
            if task.sidecar is not None:
                containers = [*containers, task.sidecar(a[0], a[2])]
            return json.dumps(containers)

        self.container_definitions = Output.all(
            ctx.region, args.image, task.sidecar_image or ""
        ).apply(definitions)
        roles = service_roles(
            name,
            ctx=ctx,
            log_group=group_name,
            container_definitions=self.container_definitions,
            secrets=args.secrets,
            bucket=bucket,
            prefix=prefix,
            parent=self,
            efs=task.efs,
            weights_kms_key_arn=args.weights_kms_key_arn,
            secrets_kms_key_arns=args.secrets_kms_key_arns,
            execute_command=args.execute_command,
            execute_command_logging=args.execute_command_logging,
        )
        self.execution_role = roles.execution_role
        self.task_role = roles.task_role

        self.task_definition = aws.ecs.TaskDefinition(
            f"{name}-task",
            family=task_family(args.service),
            requires_compatibilities=[task.compatibility],
            network_mode="awsvpc",
            cpu=str(task.cpu),
            memory=str(task.memory_mib),
            runtime_platform=task.runtime_platform,
            execution_role_arn=roles.execution_role.arn,
            task_role_arn=roles.task_role.arn,
            container_definitions=self.container_definitions,
            volumes=[task.efs.volume] if task.efs else None,
            # The execution role needs its policy before the first task pulls and logs.
            opts=pulumi.ResourceOptions(
                parent=self,
                depends_on=[
                    self.log_group,
                    roles.execution_policy,
                    *([roles.task_policy] if roles.task_policy else []),
                ],
            ),
        )
        self.security_group = task_security_group(
            name,
            vpc_id=args.vpc_id,
            alb_security_group_id=args.alb_security_group_id,
            port=task.port,
            service=args.service,
            parent=self,
            client_security_group_ids=args.client_security_group_ids,
        )
        self.target_group = ip_target_group(
            name,
            vpc_id=args.vpc_id,
            port=task.port,
            health_path=task.health_path,
            deregistration_delay_seconds=args.deregistration_delay_seconds,
            max_request_seconds=args.max_request_seconds,
            interval_seconds=task.health_check_interval_seconds,
            parent=self,
        )
        self.listener_rules = list(
            args.router.route(
                args.service, target_group_arn=self.target_group.arn, priority=args.priority
            )
        )
        self.service = aws.ecs.Service(
            f"{name}-service",
            cluster=args.cluster_arn,
            task_definition=self.task_definition.arn,
            desired_count=args.desired_count,
            enable_execute_command=args.execute_command,
            capacity_provider_strategies=[
                aws.ecs.ServiceCapacityProviderStrategyArgs(
                    capacity_provider=placement.capacity_provider, weight=1, base=0
                )
            ],
            platform_version=placement.platform_version,
            network_configuration=aws.ecs.ServiceNetworkConfigurationArgs(
                subnets=args.subnet_ids,
                security_groups=[
                    self.security_group.id,
                    *([task.efs.client_security_group_id] if task.efs else []),
                ],
                assign_public_ip=False,
            ),
            load_balancers=[
                aws.ecs.ServiceLoadBalancerArgs(
                    target_group_arn=self.target_group.arn,
                    container_name=task.container_name,
                    container_port=task.port,
                )
            ],
            service_connect_configuration=None
            if args.service_connect_namespace is None
            else service_connect_server(
                service=args.service,
                namespace=args.service_connect_namespace,
                port=task.port,
                # At least the longest request the service allows (deregistration covers it).
                longest_request_seconds=args.deregistration_delay_seconds,
            ),
            health_check_grace_period_seconds=args.health_check_grace_period_seconds,
            deployment_circuit_breaker=aws.ecs.ServiceDeploymentCircuitBreakerArgs(
                enable=True, rollback=True
            ),
            deployment_minimum_healthy_percent=args.deployment_minimum_healthy_percent,
            deployment_maximum_percent=args.deployment_maximum_percent,
            placement_constraints=placement.placement_constraints,
            ordered_placement_strategies=placement.ordered_placement_strategies,
            enable_ecs_managed_tags=True,
            propagate_tags="SERVICE",
            # Model load takes minutes (S3 staging, weights, warm-up); `pulumi up` must not block
            # on steady state (the circuit breaker owns rollback).
            wait_for_steady_state=False,
            # ECS rejects a target group that belongs to no load balancer: wait for the rules
            # (and for the cluster's capacity provider association, via service_depends_on).
            opts=pulumi.ResourceOptions(
                parent=self,
                depends_on=[*self.listener_rules, *args.service_depends_on],
                # Autoscaling owns the running count after creation.
                ignore_changes=["desiredCount"],
            ),
        )
        metric: dict[str, Any] = {"predefined_metric_type": scaling_metric}
        if scaling_metric == TARGET_TRACKING_METRIC:
            metric["resource_label"] = alb_request_count_label(
                args.load_balancer_arn_suffix, self.target_group.arn_suffix
            )
        self.scaling_target, self.scaling_policy = service_scaling(
            name,
            cluster_arn=args.cluster_arn,
            service=self.service,
            min_count=args.min_count,
            max_count=args.max_count,
            metric=metric,
            target_value=scaling_target,
            scale_out_cooldown=args.scale_out_cooldown,
            scale_in_cooldown=args.scale_in_cooldown,
            parent=self,
            configuration=scaling_configuration,
        )
        self.register_outputs(
            {
                "serviceName": self.service.name,
                "targetGroupArn": self.target_group.arn,
                "taskDefinitionArn": self.task_definition.arn,
            }
        )


def metrics_sidecar_fields(
    args: ServiceArgs,
    *,
    enabled: bool,
    image: Input[str] | None,
    kind: str,
    port: int,
    engine_container: str,
    log_group: str,
) -> dict[str, Any]:
    """`TaskSpec` keywords for the metrics sidecar (`sidecar`, `sidecar_image`) of one service;
    both None when `enabled` is false. The sidecar logs through the service's own log group and
    waits out the same health-check grace period as the engine it scrapes."""
    if not enabled:
        return {"sidecar": None, "sidecar_image": None}

    def sidecar(region: str, sidecar_image: str) -> dict[str, Any]:
        return metrics_sidecar_container(
            region=region,
            kind=kind,
            stack=pulumi.get_stack(),
            service=args.service,
            image=sidecar_image,
            port=port,
            engine_container=engine_container,
            log_configuration=log_configuration(log_group, region, args.service),
            startup_grace_seconds=args.health_check_grace_period_seconds,
        )

    return {"sidecar": sidecar, "sidecar_image": image}
