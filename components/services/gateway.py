"""LiteLLMGateway: LiteLLM's proxy on Fargate, behind the authenticated ALB on its own path.

Creates, all children of the component:
- a log group, an execution role (image pull, its log group, exactly the container's secrets:
  master key, and with the database its user, password and salt key) and a task role that may
  invoke exactly the configured Bedrock models (no policy when there are none);
- standalone rules on the gateway's security group (created first by `gateway_security_group`, so
  the model services can admit it): ingress from the ALB on the proxy port, egress HTTPS (Bedrock,
  Secrets Manager, ECR, logs), the model services' ports (their groups) and PostgreSQL when the
  database is on; `admit(...)` adds ingress for a client such as a queue worker;
- a FARGATE task definition (ARM64 by default) whose container writes the generated config
  (`LITELLM_CONFIG_YAML`) to a file and starts `litellm --config` on it, so every config change is
  a new revision and a rolling deploy;
- an ip target group on LiteLLM's unauthenticated liveness route, the endpoint's two listener
  rules for `/<path>/*` (bearer JWT or Cognito, then forward);
- the service on FARGATE in private subnets without a public IP, a Service Connect server
  (`<path>.<namespace>:4000` for workers) and client of the model services' aliases, with a
  rolling-back circuit breaker; target tracking on average CPU.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import pulumi
import pulumi_aws as aws
from pulumi import Input, Output

from ecs_inference import iam
from ecs_inference.network import PortRule, aws_api_rule
from ecs_inference.services.base import (
    Router,
    aws_context,
    environment_list,
    execution_role_policy,
    ip_target_group,
    log_configuration,
    log_group_name,
    secrets_list,
    service_scaling,
    task_family,
)
from ecs_inference.services.gateway_db import DatabaseOutputs
from ecs_inference.specs.gateway import (
    GATEWAY_PORT,
    HEALTH_PATH,
    DatabaseEndpoint,
    GatewayEnvironment,
    GatewaySpec,
    bedrock_invoke_policy,
    gateway_container_env,
)
from ecs_inference.specs.service_connect import Namespace, port_mapping, private_host, timeouts

TOKEN = "ecs-inference:serving:LiteLLMGateway"
CONTAINER_NAME = "litellm"
CONFIG_FILE = "/tmp/litellm-config.yaml"
CPU_METRIC = "ECSServiceAverageCPUUtilization"
POSTGRES_PORT = 5432
# LiteLLM stops accepting on SIGTERM and lets streams finish; Fargate allows at most 120 s.
STOP_TIMEOUT_SECONDS = 120


def entrypoint(config_env: str = "LITELLM_CONFIG_YAML") -> list[str]:
    """Container entry point: write the config from the environment, then run the proxy in its
    place (exec: it receives SIGTERM directly). The image has a POSIX shell."""
    script = (
        f'printf "%s" "${config_env}" > {CONFIG_FILE} && '
        f"exec litellm --config {CONFIG_FILE} --port {GATEWAY_PORT}"
    )
    return ["/bin/sh", "-c", script]


@dataclass(frozen=True)
class ModelEndpoint:
    """A model service the gateway calls: its security group and engine port."""

    security_group_id: Input[str]
    port: int


@dataclass(frozen=True)
class LiteLLMGatewayArgs:
    """Inputs of `LiteLLMGateway`; spec, size and timeouts are plan-derived.

    Required: `spec` (routes, Bedrock, database switch), `master_key_secret_arn`, `path` (ALB
    path prefix and Service Connect name), `priority`
    (first of its two listener rule priorities), `image`, `cpu` and `memory_mib` (Fargate grid),
    `cluster_arn`, `vpc_id`, `subnet_ids`, `security_group` (from `gateway_security_group`),
    `alb_security_group_id`, `router`, `service_connect_namespace`.

    Optional (defaults): `models` {} — service -> `ModelEndpoint` the gateway may reach;
    `database` None (`GatewayDatabase.endpoint()` when `spec.database`), its
    `database_security_group_id` and `salt_key_secret_arn` None; `cpu_architecture` "ARM64";
    `desired_count` 2, `min_count` 2, `max_count` 4; `target_cpu_percent` 60;
    `deregistration_delay_seconds` 300 (at least the longest route);
    `health_check_grace_period_seconds` 120 (imports and config load take seconds; with the
    database, LiteLLM migrates its schema first); `extra_environment` {};
    `log_retention_days` 30; `service_depends_on` () — the cluster's FARGATE association and the
    model services (a Service Connect client resolves only servers that exist when its task
    starts).
    """

    spec: GatewaySpec
    master_key_secret_arn: str
    path: str
    priority: int
    image: Input[str]
    cpu: int
    memory_mib: int
    cluster_arn: Input[str]
    vpc_id: Input[str]
    subnet_ids: Input[Sequence[str]]
    security_group: aws.ec2.SecurityGroup
    alb_security_group_id: Input[str]
    router: Router
    service_connect_namespace: Namespace
    models: Mapping[str, ModelEndpoint] = field(default_factory=dict)
    database: DatabaseOutputs | None = None
    database_security_group_id: Input[str] | None = None
    salt_key_secret_arn: str | None = None
    cpu_architecture: str = "ARM64"
    desired_count: int = 2
    min_count: int = 2
    max_count: int = 4
    target_cpu_percent: float = 60.0
    deregistration_delay_seconds: int = 300
    health_check_grace_period_seconds: int = 120
    extra_environment: Mapping[str, str] = field(default_factory=dict)
    log_retention_days: int = 30
    service_depends_on: Sequence[pulumi.Resource] = ()


def gateway_security_group(
    name: str, *, vpc_id: Input[str], opts: pulumi.ResourceOptions | None = None
) -> aws.ec2.SecurityGroup:
    """The gateway tasks' security group, without inline rules: its rules are standalone
    resources (the model services' groups admit it and it reaches them, which inline rules
    could only express as a cycle; mixing inline and standalone rules makes them fight)."""
    return aws.ec2.SecurityGroup(
        f"{name}-tasks",
        description="AI gateway tasks: rules are standalone resources",
        vpc_id=vpc_id,
        opts=opts,
    )


def gateway_container_definitions(
    *,
    image: str,
    environment: GatewayEnvironment,
    extra_environment: Mapping[str, str],
    path: str,
    log_group: str,
    region: str,
) -> list[dict[str, Any]]:
    """The proxy's one container: generated config and settings as plain variables, keys and
    database credentials as secrets, the named HTTP port Service Connect refers to."""
    managed = [{"name": k, "value": v} for k, v in environment.environment.items()]
    return [
        {
            "name": CONTAINER_NAME,
            "image": image,
            "essential": True,
            "entryPoint": entrypoint(),
            "environment": environment_list(managed, extra_environment),
            "secrets": secrets_list(environment.secrets),
            "portMappings": [port_mapping(GATEWAY_PORT)],
            "logConfiguration": log_configuration(log_group, region, path),
            "stopTimeout": STOP_TIMEOUT_SECONDS,
            "linuxParameters": {"initProcessEnabled": True},
        }
    ]


class LiteLLMGateway(pulumi.ComponentResource):
    """The AI gateway. Attributes: `log_group`, `execution_role`, `task_role`, `task_definition`,
    `target_group`, `listener_rules`, `service`, `scaling_target`, `scaling_policy`, `rules`
    (the security group's standalone rules)."""

    def __init__(
        self, name: str, args: LiteLLMGatewayArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        # Checked with placeholder database values now, so bad arguments fail before anything
        # exists; the real environment is built when the database's endpoint is known.
        placeholder = None
        if args.database is not None:
            placeholder = DatabaseEndpoint("host", args.database.port, args.database.name, "arn")
        planned = gateway_container_env(
            args.spec,
            master_key_secret_arn=args.master_key_secret_arn,
            salt_key_secret_arn=args.salt_key_secret_arn,
            database=placeholder,
        )
        if set(args.extra_environment) & (set(planned.environment) | set(planned.secrets)):
            raise ValueError(f"LiteLLMGateway {name!r}: extra_environment overrides managed names")
        if not args.spec.routes and not args.spec.bedrock:
            raise ValueError(f"LiteLLMGateway {name!r}: no route")
        super().__init__(TOKEN, name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        ctx = aws_context(self)
        self._name = name
        self._sg = args.security_group
        self.rules: list[pulumi.CustomResource] = []

        self.admit("alb", args.alb_security_group_id, "ALB to the proxy (requests, health)")
        self._egress("https", aws_api_rule("HTTPS to AWS APIs and Bedrock"))
        for service, model in sorted(args.models.items()):
            self._egress(
                f"model-{service}",
                PortRule(model.port, f"model service {service}", group=model.security_group_id),
            )
        if args.database_security_group_id is not None:
            self._egress(
                "database",
                PortRule(
                    POSTGRES_PORT,
                    "LiteLLM database (PostgreSQL)",
                    group=args.database_security_group_id,
                ),
            )

        group = log_group_name(args.path)
        self.log_group = aws.cloudwatch.LogGroup(
            f"{name}-logs", name=group, retention_in_days=args.log_retention_days, opts=child
        )
        trust = Output.all(ctx.account_id, ctx.region, ctx.partition).apply(
            lambda a: iam.assume_role_policy(account_id=a[0], region=a[1], partition=a[2])
        )
        environment = _environment(args)
        self.execution_role = aws.iam.Role(
            f"{name}-execution",
            description="ECS agent: pull the image, write logs, read the gateway's secrets",
            assume_role_policy=trust,
            opts=child,
        )
        self.task_role = aws.iam.Role(
            f"{name}-task",
            description="LiteLLM: invoke exactly the configured Bedrock models",
            assume_role_policy=trust,
            opts=child,
        )
        depends: list[pulumi.Resource] = [self.log_group]
        if args.spec.bedrock:
            bedrock = args.spec.bedrock
            task_policy = aws.iam.RolePolicy(
                f"{name}-bedrock",
                role=self.task_role.id,
                policy=Output.all(ctx.partition, ctx.account_id).apply(
                    lambda a: bedrock_invoke_policy(bedrock, partition=a[0], account_id=a[1])
                ),
                opts=child,
            )
            depends.append(task_policy)

        self.container_definitions = Output.all(args.image, ctx.region, environment).apply(
            lambda a: json.dumps(
                gateway_container_definitions(
                    image=a[0],
                    environment=a[2],
                    extra_environment=args.extra_environment,
                    path=args.path,
                    log_group=group,
                    region=a[1],
                )
            )
        )
        execution_policy = execution_role_policy(
            name,
            role=self.execution_role,
            ctx=ctx,
            log_group=group,
            container_definitions=self.container_definitions,
            parent=self,
        )
        depends.append(execution_policy)
        self.task_definition = aws.ecs.TaskDefinition(
            f"{name}-task",
            family=task_family(args.path),
            requires_compatibilities=["FARGATE"],
            network_mode="awsvpc",
            cpu=str(args.cpu),
            memory=str(args.memory_mib),
            runtime_platform=aws.ecs.TaskDefinitionRuntimePlatformArgs(
                cpu_architecture=args.cpu_architecture, operating_system_family="LINUX"
            ),
            execution_role_arn=self.execution_role.arn,
            task_role_arn=self.task_role.arn,
            container_definitions=self.container_definitions,
            opts=pulumi.ResourceOptions(parent=self, depends_on=depends),
        )
        self.target_group = ip_target_group(
            name,
            vpc_id=args.vpc_id,
            port=GATEWAY_PORT,
            health_path=HEALTH_PATH,
            deregistration_delay_seconds=args.deregistration_delay_seconds,
            max_request_seconds=args.spec.longest_request_seconds,
            interval_seconds=10,
            parent=self,
        )
        self.listener_rules = list(
            args.router.route(
                args.path, target_group_arn=self.target_group.arn, priority=args.priority
            )
        )
        sc_timeout = timeouts(max(args.spec.longest_request_seconds, 1))
        self.service = aws.ecs.Service(
            f"{name}-service",
            cluster=args.cluster_arn,
            task_definition=self.task_definition.arn,
            desired_count=args.desired_count,
            capacity_provider_strategies=[
                aws.ecs.ServiceCapacityProviderStrategyArgs(
                    capacity_provider="FARGATE", weight=1, base=0
                )
            ],
            network_configuration=aws.ecs.ServiceNetworkConfigurationArgs(
                subnets=args.subnet_ids,
                security_groups=[self._sg.id],
                assign_public_ip=False,
            ),
            load_balancers=[
                aws.ecs.ServiceLoadBalancerArgs(
                    target_group_arn=self.target_group.arn,
                    container_name=CONTAINER_NAME,
                    container_port=GATEWAY_PORT,
                )
            ],
            service_connect_configuration=aws.ecs.ServiceServiceConnectConfigurationArgs(
                enabled=True,
                namespace=args.service_connect_namespace.arn,
                services=[
                    aws.ecs.ServiceServiceConnectConfigurationServiceArgs(
                        port_name="http",
                        discovery_name=args.path,
                        client_alias=[
                            aws.ecs.ServiceServiceConnectConfigurationServiceClientAliasArgs(
                                port=GATEWAY_PORT,
                                dns_name=private_host(
                                    args.path, args.service_connect_namespace.name
                                ),
                            )
                        ],
                        timeout=aws.ecs.ServiceServiceConnectConfigurationServiceTimeoutArgs(
                            idle_timeout_seconds=sc_timeout["idleTimeoutSeconds"],
                            per_request_timeout_seconds=sc_timeout["perRequestTimeoutSeconds"],
                        ),
                    )
                ],
            ),
            health_check_grace_period_seconds=args.health_check_grace_period_seconds,
            deployment_circuit_breaker=aws.ecs.ServiceDeploymentCircuitBreakerArgs(
                enable=True, rollback=True
            ),
            deployment_minimum_healthy_percent=100,
            deployment_maximum_percent=200,
            enable_ecs_managed_tags=True,
            propagate_tags="SERVICE",
            wait_for_steady_state=False,
            opts=pulumi.ResourceOptions(
                parent=self,
                depends_on=[*self.listener_rules, *self.rules, *args.service_depends_on],
                ignore_changes=["desiredCount"],
            ),
        )
        self.scaling_target, self.scaling_policy = service_scaling(
            name,
            cluster_arn=args.cluster_arn,
            service=self.service,
            min_count=args.min_count,
            max_count=args.max_count,
            metric={"predefined_metric_type": CPU_METRIC},
            target_value=args.target_cpu_percent,
            scale_out_cooldown=60,
            scale_in_cooldown=300,
            parent=self,
        )
        self.register_outputs(
            {"serviceName": self.service.name, "targetGroupArn": self.target_group.arn}
        )

    def admit(self, client: str, security_group_id: Input[str], what: str) -> None:
        """Allow `security_group_id` (a client's tasks) to reach the proxy port."""
        self._rule(f"from-{client}", PortRule(GATEWAY_PORT, what, group=security_group_id))

    def _egress(self, label: str, rule: PortRule) -> None:
        self._rule(f"to-{label}", rule, direction="egress")

    def _rule(
        self, label: str, rule: PortRule, direction: Literal["ingress", "egress"] = "ingress"
    ) -> None:
        self.rules.append(
            rule.standalone(
                f"{self._name}-{label}",
                security_group_id=self._sg.id,
                direction=direction,
                parent=self,
            )
        )


def _environment(args: LiteLLMGatewayArgs) -> Output[GatewayEnvironment]:
    """The container's variables, once the database's endpoint and secret are known."""
    db = args.database
    if db is None:
        return Output.from_input(
            gateway_container_env(
                args.spec,
                master_key_secret_arn=args.master_key_secret_arn,
                salt_key_secret_arn=args.salt_key_secret_arn,
            )
        )
    return Output.all(db.host, db.secret_arn).apply(
        lambda a: gateway_container_env(
            args.spec,
            master_key_secret_arn=args.master_key_secret_arn,
            salt_key_secret_arn=args.salt_key_secret_arn,
            database=DatabaseEndpoint(a[0], db.port, db.name, a[1]),
        )
    )
