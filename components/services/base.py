"""`EcsService`: the resource sequence every ECS service component is built from.

A model on EC2 or Managed Instances capacity, a re-ranker, the AI gateway and a queue worker on
Fargate differ in their containers, their task role's grants and where ECS places them; around
that they are the same service: a log group with retention, an execution role whose policy is
derived from the task's containers (every image pull, secret and the log group), a task role
trusting only ecs-tasks of this account and region, a task definition that waits for those
grants, an ECS service with a rolling-back circuit breaker that autoscaling owns the count of,
and an Application Auto Scaling target. A load-balanced service adds a task security group open
only to the ALB, an ip target group and the endpoint's listener rules, and waits for the rules.

Each step is one method, called in dependency order by the concrete component; the launch kinds
(`services.fargate.FargateService`, `models.service.ModelService`) fix what their kind decides.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, cast

import pulumi
import pulumi_aws as aws
from pulumi import Input, Output

from ecs_inference import iam
from ecs_inference.arns import AwsContext, arn_of, aws_context, known_arn
from ecs_inference.contracts.aws_limits import (
    ELBV2_NAME,
    NameRule,
    fitted_name,
    replacement_salt,
)
from ecs_inference.contracts.tags import MAX_REQUEST_SECONDS as MAX_REQUEST_SECONDS_TAG
from ecs_inference.names import derived_name
from ecs_inference.network.rules import aws_api_egress
from ecs_inference.operations.scaling import snake_case
from ecs_inference.operations.sidecar import metrics_sidecar_container
from ecs_inference.rollouts.wiring import NativeDeployment, native_deployment
from ecs_inference.secrets import refs as stack_secrets
from ecs_inference.services.checks import ServedService
from ecs_inference.services.containers import with_app_protocol
from ecs_inference.services.service_connect import (
    PORT_NAME,
    Namespace,
    discovery_name,
    private_host,
    timeouts,
)
from ecs_inference.storage import efs as weights_spec

if TYPE_CHECKING:
    from ecs_inference.models.decisions import Placement as ServicePlacement

ALB_REQUESTS_METRIC = "ALBRequestCountPerTarget"
CPU_METRIC = "ECSServiceAverageCPUUtilization"
ECS_SERVICE_NAMESPACE = "ecs"
ECS_SCALABLE_DIMENSION = "ecs:service:DesiredCount"
EXECUTION_ROLE_DESCRIPTION = "ECS agent: pull the image, write logs, read the container's secrets"


class Router(Protocol):
    """What a service needs from the endpoint: attach a target group under `/<service>/`, its
    idle timeout in seconds, its security group and load balancer."""

    idle_timeout_seconds: int
    security_group: aws.ec2.SecurityGroup
    load_balancer: aws.lb.LoadBalancer

    def route(
        self,
        service: str,
        *,
        target_group_arn: Input[str],
        priority: int,
        opts: pulumi.ResourceOptions | None = None,
        alternate_target_group_arn: Input[str] | None = None,
    ) -> list[Any]: ...

    def smoke_target(
        self, service: str, api_path: str
    ) -> tuple[Output[str], Output[dict[str, Any]]]: ...


_FROM_ROUTER: Any = None
"""The default of a `ServiceWiring` field the router gives (filled when the wiring is built)."""


@dataclass(frozen=True, kw_only=True)
class ClusterWiring:
    """What every service takes from the cluster and network around it (Outputs)."""

    cluster_arn: Input[str]
    """The ECS cluster."""
    vpc_id: Input[str]
    """VPC of the task security group."""
    subnet_ids: Input[Sequence[str]]
    """PRIVATE subnets of the tasks."""
    service_depends_on: Sequence[pulumi.Resource] = ()
    """What the ECS service waits for, e.g. the cluster's capacity provider association (ECS
    rejects a strategy naming a provider the cluster is not associated with yet); default
    none."""
    stack_secret_arns: Mapping[str, Input[str]] = field(default_factory=dict)
    """The ARNs of the secrets the stack stores itself, by reference
    (`components.secrets.refs`): a container's `secrets` entry naming one gets its ARN;
    default none."""


@dataclass(frozen=True, kw_only=True)
class ServiceWiring(ClusterWiring):
    """What a load-balanced service takes from the endpoint besides the cluster (Outputs)."""

    router: Router
    """The endpoint: attaches the target group under `/<service>/` (`route`)."""
    alb_security_group_id: Input[str] = _FROM_ROUTER
    """The only source the task security group admits besides `client_security_group_ids`;
    default: the router's (`security_group`)."""
    load_balancer_arn_suffix: Input[str] = _FROM_ROUTER
    """For the ALBRequestCountPerTarget scaling metric; default: the router's
    (`load_balancer`)."""
    client_security_group_ids: Sequence[Input[str]] = ()
    """Other groups admitted to the serving port besides the ALB (the AI gateway); default none."""
    service_connect_namespace: Namespace | None = None
    """Cloud Map namespace in which the service is a Service Connect server
    (`<service>.<namespace>:<port>`); default None (not reachable by Service Connect)."""

    def __post_init__(self) -> None:
        if self.alb_security_group_id is None:
            object.__setattr__(self, "alb_security_group_id", self.router.security_group.id)
        if self.load_balancer_arn_suffix is None:
            suffix = self.router.load_balancer.arn_suffix
            object.__setattr__(self, "load_balancer_arn_suffix", suffix)


@dataclass(frozen=True, kw_only=True)
class PlacedWiring(ServiceWiring):
    """What a service placed behind the endpoint (a model service, a re-ranker) takes from
    around it besides its input: the cluster and the endpoint (`ServiceWiring`), its images and
    what the stack around it decided."""

    service: str | None = None
    """The service's key (its path `/<service>/`, log group and task family); None (default):
    the component's name. A stack names its components `<platform>-<service>`."""
    image: Input[str]
    """The serving image: a reference (repository in ECR, tag or digest), or the digest
    reference of the stack's own build."""
    metrics_image: Input[str] | None = None
    """Metrics sidecar image (reference or the stack's build); needed with the sidecar on."""
    placement: ServicePlacement
    """What the stack around it decides across services: its listener rule priority, and the
    idle timeout, deploy and stack facts, which default to those of a service alone behind its
    endpoint, with a stack file's settings."""


def log_group_name(service: str) -> str:
    """`/ecs-inference/<stack>/<service>`: stable and findable by operators."""
    return f"/{pulumi.get_project()}/{pulumi.get_stack()}/{service}"


def exec_log_group_name() -> str:
    """`/ecs-inference/<stack>/ecs-exec`: the cluster's ECS Exec session log."""
    return f"/{pulumi.get_project()}/{pulumi.get_stack()}/ecs-exec"


def task_family(service: str) -> str:
    """Task definition family, unique per project, stack and service (letters, digits, '-' and
    '_', at most 255: a stack name with '.' is made valid, see `derived_name`)."""
    text = f"{pulumi.get_project()}-{pulumi.get_stack()}-{service}"
    return derived_name(text, invalid="[^A-Za-z0-9_-]", max_length=255)


def stack_scope() -> str:
    """`<project>/<stack>`: what keeps explicit physical names unique per stack."""
    return f"{pulumi.get_project()}/{pulumi.get_stack()}"


def replacement_name(
    logical: str, rule: NameRule, forcing: Mapping[str, Input[Any]]
) -> str | Output[str] | None:
    """The explicit physical name of `logical` (`fitted_name` in this stack's scope) when the
    provider's autoname would not fit `rule`, else None (autonamed). Its hash covers
    `forcing`: every input the program sets that forces a replacement (camelCase, the name
    left out; tools/replacements.py holds them per type and tests/tools/test_explicit_names.py
    checks each is here), so a replacement gets a new name and create-before-delete does not
    collide with the old resource. An Output when one of them is (a VPC id)."""
    if rule.fits_autoname(logical):
        return None
    scope = stack_scope()
    # Not None: the autoname does not fit (above).
    return Output.from_input(forcing).apply(
        lambda values: cast(
            str, fitted_name(logical, rule, scope=scope, salt=replacement_salt(values))
        )
    )


def cluster_name_from_arn(cluster: str) -> str:
    """`arn:aws:ecs:<region>:<account>:cluster/<name>` (or a bare name) -> `<name>`."""
    return cluster.rsplit("/", 1)[-1] if cluster.startswith("arn:") else cluster


def log_group_arn(ctx: AwsContext, group: str) -> Output[str]:
    """The ARN of log group `group` in the provider's account and region."""
    return known_arn("aws:cloudwatch/logGroup:LogGroup", group, ctx)


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


@dataclass(frozen=True)
class TaskRole:
    """The task role of one service: its `description` and its inline `policies` (logical-name
    suffix -> policy document), all of which the task definition waits for."""

    description: str
    policies: Mapping[str, Input[str]] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class Deployment:
    """How the ECS service rolls out and what it waits for.

    `desired_count` at creation (autoscaling owns it afterwards); `minimum_healthy_percent` and
    `maximum_percent` default 100 and 200 (a surge); `grace_seconds` the health-check grace
    period (default None: unset, for a service without a load balancer); `execute_command`
    default None (unset); `depends_on` what the service waits for besides the listener rules.
    """

    desired_count: int
    minimum_healthy_percent: int = 100
    maximum_percent: int = 200
    grace_seconds: int | None = None
    execute_command: bool | None = None
    depends_on: Sequence[pulumi.Resource] = ()


@dataclass(frozen=True, kw_only=True)
class Placement:
    """Where ECS runs the tasks: `capacity_provider` (the pool's, or "FARGATE"); optional
    (default None, unset): `platform_version` (Fargate only), `constraints` and `strategies`
    (EC2 and Managed Instances only)."""

    capacity_provider: Input[str]
    platform_version: str | None = None
    constraints: Sequence[aws.ecs.ServicePlacementConstraintArgs] | None = None
    strategies: Sequence[aws.ecs.ServiceOrderedPlacementStrategyArgs] | None = None


@dataclass(frozen=True)
class Balancing:
    """The load balancer's view of a service: the container and `port` its target group
    registers, the group's `health_path` and check `interval_seconds`."""

    container_name: str
    port: int
    health_path: str
    interval_seconds: int = 15


class EcsService(pulumi.ComponentResource):
    """Base of every service component: the resources its steps create."""

    log_group: aws.cloudwatch.LogGroup
    """`/<project>/<stack>/<service>`, every container's awslogs."""
    container_definitions: Output[str]
    """The task definition's containers (JSON)."""
    execution_role: aws.iam.Role
    """The ECS agent's role: pulls, secrets and logs of exactly these containers."""
    task_role: aws.iam.Role
    """The containers' role."""
    task_policies: list[aws.iam.RolePolicy]
    """The task role's inline policies the task definition waits for."""
    task_definition: aws.ecs.TaskDefinition
    """awsvpc, the task-level CPU and memory."""
    security_group: aws.ec2.SecurityGroup
    """The tasks' group."""
    target_group: aws.lb.TargetGroup
    """The ip target group (load-balanced services)."""
    listener_rules: list[Any]
    """The endpoint's listener rules for the service (load-balanced services)."""
    service: aws.ecs.Service
    """The ECS service (circuit breaker with rollback; autoscaling owns its count)."""
    scaling_target: aws.appautoscaling.Target
    """Its scalable target (min..max tasks)."""
    scaling_policy: aws.appautoscaling.Policy
    """Its target-tracking policy (load-balanced services)."""

    def __init__(self, token: str, name: str, opts: pulumi.ResourceOptions | None) -> None:
        super().__init__(token, name, None, opts)
        self._name = name
        self._child = pulumi.ResourceOptions(parent=self)
        self._ctx = aws_context(self)

    # -- task ---------------------------------------------------------------------------------

    def _logs(self, service: str, retention_days: int) -> str:
        """The service's log group (`log_group_name`); returns its name."""
        group = self._log_group_name = log_group_name(service)
        self.log_group = aws.cloudwatch.LogGroup(
            f"{self._name}-logs", name=group, retention_in_days=retention_days, opts=self._child
        )
        return group

    def _containers(
        self,
        render: Callable[[list[Any]], list[dict[str, Any]]],
        *values: Input[Any],
        service_connect: bool = False,
        secret_arns: Mapping[str, Input[str]] | None = None,
    ) -> Output[str]:
        """`container_definitions`: `render(region, *values)` as JSON (the region and the built
        images are Outputs). With `service_connect`, named ports declare their HTTP protocol;
        `secret_arns` (default none) are the stack's own secrets the containers' `secrets` name
        by reference, each replaced by its ARN (the task definition then waits for them)."""
        refs = sorted(secret_arns or {})

        def definitions(resolved: list[Any]) -> str:
            arns = dict(zip(refs, resolved[len(resolved) - len(refs) :], strict=True))
            containers = stack_secrets.resolve(render(resolved[: len(resolved) - len(refs)]), arns)
            return json.dumps(with_app_protocol(containers) if service_connect else containers)

        arns = [(secret_arns or {})[ref] for ref in refs]
        self.container_definitions = Output.all(self._ctx.region, *values, *arns).apply(definitions)
        return self.container_definitions

    def _task(
        self,
        *,
        service: str,
        compatibility: str,
        cpu: int,
        memory_mib: int,
        task_role: TaskRole,
        runtime_platform: aws.ecs.TaskDefinitionRuntimePlatformArgs | None = None,
        volumes: Sequence[aws.ecs.TaskDefinitionVolumeArgs] | None = None,
        secrets_kms_key_arns: Sequence[str] = (),
        execution_description: str = EXECUTION_ROLE_DESCRIPTION,
        exec_logging: bool | None = None,
    ) -> None:
        """Execution role (its policy derived from `container_definitions`: every image pull,
        every secret, this log group; `secrets_kms_key_arns` default none), the task role with
        its policies, and the task definition, which waits for all of them. `exec_logging`
        default None: no ECS Exec; else the task role may open Exec channels, and with True
        write the cluster's session log."""
        name, ctx, child = self._name, self._ctx, self._child
        trust = Output.all(ctx.account_id, ctx.region, ctx.partition).apply(
            lambda a: iam.assume_role_policy(account_id=a[0], region=a[1], partition=a[2])
        )
        self.execution_role = aws.iam.Role(
            f"{name}-execution",
            description=execution_description,
            assume_role_policy=trust,
            opts=child,
        )
        execution_policy = aws.iam.RolePolicy(
            f"{name}-execution",
            role=self.execution_role.name,
            policy=Output.all(
                ctx.partition, log_group_arn(ctx, self._log_group_name), self.container_definitions
            ).apply(
                lambda a: iam.execution_role_policy(
                    log_group_arn=a[1],
                    containers=json.loads(a[2]),
                    partition=a[0],
                    secret_kms_key_arns=secrets_kms_key_arns,
                )
            ),
            opts=child,
        )
        self.task_role = aws.iam.Role(
            f"{name}-task", description=task_role.description, assume_role_policy=trust, opts=child
        )
        self.task_policies = [
            aws.iam.RolePolicy(f"{name}-{suffix}", role=self.task_role.name, policy=doc, opts=child)
            for suffix, doc in task_role.policies.items()
        ]
        self.task_definition = aws.ecs.TaskDefinition(
            f"{name}-task",
            family=task_family(service),
            requires_compatibilities=[compatibility],
            network_mode="awsvpc",
            cpu=str(cpu),
            memory=str(memory_mib),
            runtime_platform=runtime_platform,
            execution_role_arn=arn_of(self.execution_role, ctx),
            task_role_arn=arn_of(self.task_role, ctx),
            container_definitions=self.container_definitions,
            volumes=volumes,
            # The execution role needs its policy before the first task pulls and logs.
            opts=pulumi.ResourceOptions(
                parent=self, depends_on=[self.log_group, execution_policy, *self.task_policies]
            ),
        )
        if exec_logging is not None:
            self._exec_policy(exec_logging)

    def _exec_policy(self, logging: bool) -> aws.iam.RolePolicy:
        # Not among the policies the task definition waits for: a task starts without Exec, and
        # the agent in it reads the task role's credentials when a session opens.
        logs = log_group_arn(self._ctx, exec_log_group_name()) if logging else None
        return aws.iam.RolePolicy(
            f"{self._name}-exec",
            role=self.task_role.name,
            policy=Output.from_input(logs).apply(iam.ecs_exec_policy),
            opts=self._child,
        )

    # -- load balancing -----------------------------------------------------------------------

    def _task_security_group(
        self, wiring: ServiceWiring, *, service: str, port: int
    ) -> aws.ec2.SecurityGroup:
        """Ingress only from the ALB (and `wiring.client_security_group_ids`: the AI gateway) on
        the container port; egress HTTPS only.

        Tasks reach S3 (weights, ECR layers), ECR, STS, Logs and Secrets Manager over 443,
        through the VPC endpoints or the NAT gateway. DNS to the VPC resolver is not subject to
        security groups, so no port 53 rule is needed.
        """

        def ingress(description: str, group: Input[str]) -> aws.ec2.SecurityGroupIngressArgs:
            return aws.ec2.SecurityGroupIngressArgs(
                description=description,
                protocol="tcp",
                from_port=port,
                to_port=port,
                security_groups=[group],
            )

        self.security_group = aws.ec2.SecurityGroup(
            f"{self._name}-tasks",
            description=f"{service} tasks: traffic from the ALB only",
            vpc_id=wiring.vpc_id,
            ingress=[
                ingress(
                    "ALB to the serving port (requests and health checks)",
                    wiring.alb_security_group_id,
                ),
                *(
                    ingress("Private route (Service Connect) from a client of the service", g)
                    for g in wiring.client_security_group_ids
                ),
            ],
            egress=[aws_api_egress()],
            opts=self._child,
        )
        return self.security_group

    def _target_group(
        self,
        *,
        vpc_id: Input[str],
        balancing: Balancing,
        deregistration_delay_seconds: int,
        max_request_seconds: int | None = None,
        role: str = "tg",
    ) -> aws.lb.TargetGroup:
        """An ip target group (awsvpc tasks are addressed by ENI IP).

        Least-outstanding-requests balancing: LLM requests differ in length by orders of
        magnitude, so round robin piles streams onto one task. Two good checks make a task
        healthy, three bad ones unhealthy. `max_request_seconds` (default None: untagged) is the
        service's longest request, the value its deregistration delay was derived from; it is
        tagged `contracts.tags.MAX_REQUEST_SECONDS` so the policy pack checks the delay against
        it instead of the ALB-wide idle timeout.
        """
        logical, port = f"{self._name}-{role}", balancing.port
        forcing: dict[str, Input[Any]] = {
            "targetType": "ip",
            "protocol": "HTTP",
            "port": port,
            "vpcId": vpc_id,
        }
        group = aws.lb.TargetGroup(
            logical,
            # Target-group names are capped at 32 characters, so a long service name cannot take
            # the provider's `<logical>-<7 random>` autoname: such names get a stable short one,
            # new whenever the group is replaced (its VPC, port, protocol or target type).
            name=replacement_name(logical, ELBV2_NAME, forcing),
            target_type=forcing["targetType"],
            protocol=forcing["protocol"],
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
                path=balancing.health_path,
                matcher="200",
                interval=balancing.interval_seconds,
                timeout=5,
                healthy_threshold=2,
                unhealthy_threshold=3,
            ),
            opts=self._child,
        )
        if role == "tg":
            self.target_group = group
        return group

    def _routes(
        self,
        router: Router,
        service: str,
        priority: int,
        alternate: aws.lb.TargetGroup | None = None,
    ) -> list[Any]:
        """The endpoint's listener rules for `/<service>/*` (`priority` is the first of two);
        with an `alternate` group, ECS's test and production rules over both groups."""
        # Only a native rollout passes the alternate group, so a router written before them
        # keeps working for rolling services.
        arn = self.target_group.arn
        self.listener_rules = list(
            router.route(service, target_group_arn=arn, priority=priority)
            if alternate is None
            else router.route(
                service,
                target_group_arn=arn,
                priority=priority,
                alternate_target_group_arn=alternate.arn,
            )
        )
        return self.listener_rules

    # -- service ------------------------------------------------------------------------------

    def _service(
        self,
        *,
        cluster_arn: Input[str],
        subnet_ids: Input[Sequence[str]],
        security_groups: Sequence[Input[str]],
        placement: Placement,
        deployment: Deployment,
        balancing: Balancing | None = None,
        service_connect: aws.ecs.ServiceServiceConnectConfigurationArgs | None = None,
        native: NativeDeployment | None = None,
    ) -> aws.ecs.Service:
        """The ECS service in private subnets without a public IP, with a circuit breaker that
        rolls back; with `balancing`, registered in `target_group` and created after the
        listener rules (ECS rejects a target group that belongs to no load balancer). With
        `native`, ECS's blue/green, canary or linear deployment (deployment controller ECS)."""
        self.service = aws.ecs.Service(
            f"{self._name}-service",
            cluster=cluster_arn,
            task_definition=self.task_definition.arn,
            desired_count=deployment.desired_count,
            enable_execute_command=deployment.execute_command,
            capacity_provider_strategies=[
                aws.ecs.ServiceCapacityProviderStrategyArgs(
                    capacity_provider=placement.capacity_provider, weight=1, base=0
                )
            ],
            platform_version=placement.platform_version,
            network_configuration=aws.ecs.ServiceNetworkConfigurationArgs(
                subnets=subnet_ids, security_groups=list(security_groups), assign_public_ip=False
            ),
            load_balancers=None
            if balancing is None
            else [
                aws.ecs.ServiceLoadBalancerArgs(
                    target_group_arn=self.target_group.arn,
                    container_name=balancing.container_name,
                    container_port=balancing.port,
                    advanced_configuration=None if native is None else native.advanced,
                )
            ],
            deployment_controller=None
            if native is None
            else aws.ecs.ServiceDeploymentControllerArgs(type="ECS"),
            deployment_configuration=None if native is None else native.deployment_configuration,
            alarms=None if native is None else native.alarms,
            service_connect_configuration=service_connect,
            health_check_grace_period_seconds=deployment.grace_seconds,
            deployment_circuit_breaker=aws.ecs.ServiceDeploymentCircuitBreakerArgs(
                enable=True, rollback=True
            ),
            deployment_minimum_healthy_percent=deployment.minimum_healthy_percent,
            deployment_maximum_percent=deployment.maximum_percent,
            placement_constraints=placement.constraints,
            ordered_placement_strategies=placement.strategies,
            enable_ecs_managed_tags=True,
            propagate_tags="SERVICE",
            # Model load takes minutes (S3 staging, weights, warm-up); `pulumi up` must not block
            # on steady state (the circuit breaker owns rollback).
            wait_for_steady_state=False,
            opts=pulumi.ResourceOptions(
                parent=self,
                depends_on=[
                    *(self.listener_rules if balancing is not None else ()),
                    *deployment.depends_on,
                    *(native.depends_on if native is not None else ()),
                ],
                # Autoscaling owns the running count after creation.
                ignore_changes=["desiredCount"],
            ),
        )
        return self.service

    # -- scaling ------------------------------------------------------------------------------

    def _scalable(
        self, cluster_arn: Input[str], min_count: int, max_count: int
    ) -> dict[str, Input[str]]:
        """The Application Auto Scaling target (min..max tasks); returns the keywords every
        policy on it repeats (plain values, not the target's outputs, unknown during preview, so
        a preview and the policy pack see whole policies)."""
        resource_id = Output.all(Output.from_input(cluster_arn), self.service.name).apply(
            lambda a: f"service/{cluster_name_from_arn(a[0])}/{a[1]}"
        )
        common: dict[str, Input[str]] = {
            "service_namespace": ECS_SERVICE_NAMESPACE,
            "scalable_dimension": ECS_SCALABLE_DIMENSION,
            "resource_id": resource_id,
        }
        self.scaling_target = aws.appautoscaling.Target(
            f"{self._name}-scaling",
            min_capacity=min_count,
            max_capacity=max_count,
            opts=self._child,
            **common,  # pyright: ignore[reportArgumentType]
        )
        return common

    def _target_tracking(
        self,
        cluster_arn: Input[str],
        *,
        min_count: int,
        max_count: int,
        configuration: aws.appautoscaling.PolicyTargetTrackingScalingPolicyConfigurationArgs
        | Mapping[str, Any],
    ) -> aws.appautoscaling.Policy:
        """The scalable target and one target-tracking policy; `configuration` is the provider's
        arguments, or a customized-metric TargetTrackingScalingPolicyConfiguration in the API's
        shape (engine load with metric math, from `components.operations.scaling`)."""
        common = self._scalable(cluster_arn, min_count, max_count)
        self.scaling_policy = aws.appautoscaling.Policy(
            f"{self._name}-scaling",
            policy_type="TargetTrackingScaling",
            target_tracking_scaling_policy_configuration=(
                cast(
                    "aws.appautoscaling.PolicyTargetTrackingScalingPolicyConfigurationArgsDict",
                    snake_case(configuration),
                )
                if isinstance(configuration, Mapping)
                else configuration
            ),
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.scaling_target]),
            **common,  # pyright: ignore[reportArgumentType]
        )
        return self.scaling_policy

    # -- the load-balanced service (models and re-rankers) ---------------------------------

    def _serve(
        self,
        spec: ServedService,
        wiring: PlacedWiring,
        *,
        balancing: Balancing,
        placement: Placement,
        scaling_metric: str,
        scaling_target: float,
        scaling_configuration: Mapping[str, Any] | None = None,
        extra_security_groups: Sequence[Input[str]] = (),
    ) -> None:
        """Security group, target group and listener rules, the service and its target tracking
        (on `scaling_configuration` when given, else on the predefined `scaling_metric` at
        `scaling_target`), then the component's outputs. The task must exist."""
        self._task_security_group(wiring, service=spec.service, port=balancing.port)
        groups = [
            self._target_group(
                vpc_id=wiring.vpc_id,
                balancing=balancing,
                deregistration_delay_seconds=spec.delay.seconds,
                max_request_seconds=spec.delay.max_generation_seconds,
                role=role,
            )
            for role in (("tg", "tg-alt") if spec.rollout.config.native else ("tg",))
        ]
        alternate = groups[1] if len(groups) > 1 else None
        self._routes(wiring.router, spec.service, wiring.placement.priority, alternate)
        native = None
        if alternate is not None:
            native = native_deployment(
                self,
                self._name,
                service=spec.service,
                rollout=spec.rollout,
                router=wiring.router,
                ctx=self._ctx,
                target_groups=(self.target_group, alternate),
                rules=self.listener_rules,
            )
        namespace = wiring.service_connect_namespace
        self._service(
            cluster_arn=wiring.cluster_arn,
            subnet_ids=wiring.subnet_ids,
            security_groups=[self.security_group.id, *extra_security_groups],
            placement=placement,
            deployment=Deployment(
                desired_count=spec.desired_count,
                minimum_healthy_percent=spec.deploy.minimum_healthy_percent,
                maximum_percent=spec.deploy.maximum_percent,
                grace_seconds=spec.health_check_grace_period_seconds,
                execute_command=wiring.placement.facts.execute_command,
                depends_on=wiring.service_depends_on,
            ),
            balancing=balancing,
            service_connect=None
            if namespace is None
            else service_connect_server(
                service=spec.service,
                namespace=namespace,
                port=balancing.port,
                # At least the longest request the service allows (deregistration covers it).
                longest_request_seconds=spec.delay.seconds,
            ),
            native=native,
        )
        self._target_tracking(
            wiring.cluster_arn,
            min_count=spec.min_count,
            max_count=spec.max_count,
            configuration=scaling_configuration
            or predefined_tracking(
                scaling_metric,
                scaling_target,
                scale_out_cooldown=spec.scale_out_cooldown,
                scale_in_cooldown=spec.scale_in_cooldown,
                resource_label=alb_request_count_label(
                    wiring.load_balancer_arn_suffix, self.target_group.arn_suffix
                )
                if scaling_metric == ALB_REQUESTS_METRIC
                else None,
            ),
        )
        self.register_outputs(
            {
                "serviceName": self.service.name,
                "targetGroupArn": self.target_group.arn,
                "taskDefinitionArn": self.task_definition.arn,
            }
        )


def weights_task_role(
    ctx: AwsContext,
    *,
    bucket: str | None,
    prefix: str | None,
    efs: EfsAccess | None = None,
    kms_key_arn: str | None = None,
    adapter_prefixes: Sequence[str] = (),
) -> TaskRole:
    """The task role of a serving container: read one S3 prefix (`bucket`/`prefix`, decrypting
    with `kms_key_arn` through S3 when given) and its LoRA adapters' (`adapter_prefixes` of the
    same bucket, default none), or mount its weights on `efs` read-only, or nothing (a custom
    image without weights)."""
    if bucket is not None:
        policy = Output.all(ctx.partition, ctx.region).apply(
            lambda a: iam.s3_read_policy(
                bucket,
                prefix or "",
                partition=a[0],
                kms_key_arn=kms_key_arn,
                region=a[1],
                extra_prefixes=adapter_prefixes,
            )
        )
        s3_prefix = (prefix or "").strip("/")
        adapters = "".join(f", s3://{bucket}/{p.strip('/')}" for p in adapter_prefixes)
        return TaskRole(
            f"Serving container: read s3://{bucket}/{s3_prefix}{adapters} only", {"task": policy}
        )
    if efs is not None:
        policy = Output.all(efs.file_system_arn, efs.access_point_arn).apply(
            lambda a: json.dumps(
                {"Version": "2012-10-17", "Statement": [weights_spec.task_role_statement(*a)]}
            )
        )
        return TaskRole("Serving container: mount its weights on EFS read-only", {"task": policy})
    return TaskRole("Serving container: no AWS access")


def predefined_tracking(
    metric: str,
    target_value: float,
    *,
    scale_out_cooldown: int,
    scale_in_cooldown: int,
    resource_label: Input[str] | None = None,
) -> aws.appautoscaling.PolicyTargetTrackingScalingPolicyConfigurationArgs:
    """Target tracking on a predefined ECS metric (`resource_label` for ALB requests only)."""
    tt = aws.appautoscaling
    return tt.PolicyTargetTrackingScalingPolicyConfigurationArgs(
        target_value=float(target_value),
        predefined_metric_specification=(
            tt.PolicyTargetTrackingScalingPolicyConfigurationPredefinedMetricSpecificationArgs(
                predefined_metric_type=metric,
                **({} if resource_label is None else {"resource_label": resource_label}),
            )
        ),
        scale_out_cooldown=scale_out_cooldown,
        scale_in_cooldown=scale_in_cooldown,
        disable_scale_in=False,
    )


def alb_request_count_label(
    load_balancer_arn_suffix: Input[str], target_group_arn_suffix: Input[str]
) -> Output[str]:
    """ALBRequestCountPerTarget's resource label: `app/<lb>/<id>/targetgroup/<tg>/<id>`."""
    return Output.concat(load_balancer_arn_suffix, "/", target_group_arn_suffix)


def service_connect_server(
    *,
    service: str,
    namespace: Namespace,
    port: int,
    longest_request_seconds: int,
) -> aws.ecs.ServiceServiceConnectConfigurationArgs:
    """The ECS service's Service Connect settings as a server at `<service>.<namespace>:<port>`
    (`components.services.service_connect.server_configuration`, as provider arguments)."""
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


def metrics_sidecar(
    spec: ServedService,
    *,
    kind: str,
    port: int,
    engine_container: str,
    log_group: str,
) -> Callable[[str, str], list[dict[str, Any]]]:
    """`render(region, sidecar_image)`: the metrics sidecar's container, as a list (empty when
    `spec.metrics_sidecar` is off). It logs through the service's own log group and waits out
    the same health-check grace period as the engine it scrapes."""

    def render(region: str, image: str) -> list[dict[str, Any]]:
        if not spec.metrics_sidecar:
            return []
        return [
            metrics_sidecar_container(
                region=region,
                kind=kind,
                stack=pulumi.get_stack(),
                service=spec.service,
                image=image,
                port=port,
                engine_container=engine_container,
                log_group_name=log_group,
                startup_grace_seconds=spec.health_check_grace_period_seconds,
            )
        ]

    return render
