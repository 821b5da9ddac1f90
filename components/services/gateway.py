"""LiteLLMGateway: LiteLLM's proxy on Fargate, behind the authenticated ALB on its own path.

On top of `FargateService` (log group, roles, task definition, service, target tracking) it adds:
- a task role that may invoke exactly the configured Bedrock models (no policy when there are
  none) and, with the database, log in to it with IAM tokens; the execution role reads the master
  key, the salt key with the database and `extra_secrets`, decrypting with
  `secrets_kms_key_arns`;
- standalone rules on the gateway's security group (created first by `gateway_security_group`, so
  the model services can admit it): ingress from the ALB on the proxy port, egress HTTPS (Bedrock,
  Secrets Manager, ECR, logs), the model services' ports (their groups) and PostgreSQL when the
  database is on; `admit(...)` adds ingress for a client such as a queue worker;
- a container that writes the generated config (`LITELLM_CONFIG_YAML`) to a file and starts
  `litellm --config` on it, so every config change is a new revision and a rolling deploy;
- an ip target group on LiteLLM's unauthenticated liveness route, the endpoint's two listener
  rules for `/<path>/*` (bearer JWT or Cognito, then forward);
- a Service Connect server (`<path>.<namespace>:4000`, `private_url`, for workers) that is also a
  client of the model services' aliases; target tracking on average CPU.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import pulumi
import pulumi_aws as aws
from pulumi import Input, Output

from ecs_inference import ledger
from ecs_inference.network.rules import PortRule, aws_api_rule
from ecs_inference.services.base import (
    CPU_METRIC,
    Balancing,
    Deployment,
    ServiceWiring,
    TaskRole,
    predefined_tracking,
    service_connect_server,
)
from ecs_inference.services.containers import container_definition
from ecs_inference.services.fargate import FargateService
from ecs_inference.services.gateway_db import DatabaseOutputs
from ecs_inference.specs.gateway import (
    GATEWAY_PORT,
    HEALTH_PATH,
    DatabaseEndpoint,
    GatewayEnvironment,
    LiteLLMGatewaySpec,
    bedrock_invoke_policy,
    database_access_policy,
    gateway_container_env,
)
from ecs_inference.specs.service_connect import port_mapping, private_host

TOKEN = "ecs-inference:serving:LiteLLMGateway"
CONTAINER_NAME = "litellm"
CONFIG_FILE = "/tmp/litellm-config.yaml"
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


@dataclass(frozen=True, kw_only=True)
class LiteLLMGatewayArgs(LiteLLMGatewaySpec, ServiceWiring):
    """Inputs of `LiteLLMGateway`: its spec (`components.specs.gateway.LiteLLMGatewaySpec`,
    built by the plan) plus the wiring below and the endpoint's (`ServiceWiring`, whose
    `service_connect_namespace` is required: workers reach the gateway through it;
    `service_depends_on` should name the model services, since a Service Connect client resolves
    only the servers that exist when its task starts)."""

    security_group: aws.ec2.SecurityGroup
    """The tasks' group, from `gateway_security_group` (its rules are the component's)."""
    models: Mapping[str, ModelEndpoint] = field(default_factory=dict)
    """Service -> the model service the gateway may reach; default none."""
    database: DatabaseOutputs | None = None
    """`GatewayDatabase.endpoint()` when `litellm.database`; default None."""
    database_security_group_id: Input[str] | None = None
    """The database's group (egress to PostgreSQL); default None."""


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
    extra_secrets: Mapping[str, str],
    path: str,
    log_group: str,
    region: str,
) -> list[dict[str, Any]]:
    """The proxy's container: generated config and settings as plain variables, keys as
    secrets, the named HTTP port Service Connect refers to. With the database, LiteLLM's login
    role exists before the gateway starts: the database's bootstrap function made it."""
    # Fargate tasks have no instance metadata to ask: LiteLLM's RDS token client needs the
    # region named ("AWS region not set: set AWS_REGION_NAME or AWS_REGION").
    return [
        container_definition(
            name=CONTAINER_NAME,
            image=image,
            entry_point=entrypoint(),
            environment=[{"name": k, "value": v} for k, v in environment.environment.items()],
            extra_environment=extra_environment,
            secrets={**environment.secrets, **extra_secrets},
            port_mappings=[port_mapping(GATEWAY_PORT)],
            log_group_name=log_group,
            region=region,
            stream_prefix=path,
            stop_timeout_seconds=STOP_TIMEOUT_SECONDS,
            nofile_limit=False,
            linux_parameters={"initProcessEnabled": True},
        )
    ]


class LiteLLMGateway(FargateService):
    """The AI gateway on Fargate; outputs as `EcsService`, `security_group` the one given."""

    private_url: str
    """`http://<path>.<namespace>:4000`, what queue workers call."""
    rules: list[pulumi.CustomResource]
    """The security group's standalone rules."""

    def __init__(
        self, name: str, args: LiteLLMGatewayArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        namespace = args.service_connect_namespace
        if namespace is None:
            raise ValueError(f"LiteLLMGateway {name!r}: needs service_connect_namespace")
        super().__init__(TOKEN, name, opts)
        ledger.record_fargate(f"gateway {args.path}", args, None)
        self.private_url = f"http://{private_host(args.path, namespace.name)}:{GATEWAY_PORT}"
        self.security_group = args.security_group
        self.rules = []
        self._security_group_rules(args)
        group = self._logs(args.path, args.log_retention_days)
        self._containers(
            lambda a: gateway_container_definitions(
                image=a[1],
                environment=a[2],
                extra_environment=args.extra_environment,
                extra_secrets=args.extra_secrets,
                path=args.path,
                log_group=group,
                region=a[0],
            ),
            args.image,
            _environment(args),
            secret_arns=args.stack_secret_arns,
        )
        self._fargate_task(
            service=args.path,
            cpu=args.cpu,
            memory_mib=args.memory_mib,
            cpu_architecture=args.cpu_architecture,
            task_role=self._bedrock_role(args),
            secrets_kms_key_arns=args.secrets_kms_key_arns,
            execution_description="ECS agent: pull the image, write logs, read the gateway's "
            "secrets",
        )
        balancing = Balancing(CONTAINER_NAME, GATEWAY_PORT, HEALTH_PATH, 10)
        self._target_group(
            vpc_id=args.vpc_id,
            balancing=balancing,
            deregistration_delay_seconds=args.deregistration_delay_seconds,
            max_request_seconds=args.litellm.longest_request_seconds,
        )
        self._routes(args.router, args.path, args.priority)
        self._fargate_service(
            args,
            security_groups=[self.security_group.id],
            deployment=Deployment(
                desired_count=args.desired_count,
                grace_seconds=args.health_check_grace_period_seconds,
                depends_on=[
                    *self.rules,
                    *args.service_depends_on,
                    # LiteLLM's login role exists before its first task starts.
                    *(
                        [args.database.bootstrap]
                        if args.database and args.database.bootstrap
                        else []
                    ),
                ],
            ),
            balancing=balancing,
            service_connect=service_connect_server(
                service=args.path,
                namespace=namespace,
                port=GATEWAY_PORT,
                longest_request_seconds=max(args.litellm.longest_request_seconds, 1),
            ),
        )
        self._target_tracking(
            args.cluster_arn,
            min_count=args.min_count,
            max_count=args.max_count,
            configuration=predefined_tracking(
                CPU_METRIC, args.target_cpu_percent, scale_out_cooldown=60, scale_in_cooldown=300
            ),
        )
        self.register_outputs(
            {"serviceName": self.service.name, "targetGroupArn": self.target_group.arn}
        )

    def _security_group_rules(self, args: LiteLLMGatewayArgs) -> None:
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

    def _bedrock_role(self, args: LiteLLMGatewayArgs) -> TaskRole:
        description = "LiteLLM: invoke exactly the configured Bedrock models"
        ctx = self._ctx
        policies: dict[str, Input[str]] = {}
        if args.litellm.bedrock:
            bedrock = args.litellm.bedrock
            policies["bedrock"] = Output.all(ctx.partition, ctx.account_id).apply(
                lambda a: bedrock_invoke_policy(bedrock, partition=a[0], account_id=a[1])
            )
        db = args.database
        if db is not None:
            description += "; log in to its database with IAM tokens"
            policies["database"] = Output.all(
                db.resource_id, ctx.region, ctx.account_id, ctx.partition
            ).apply(
                lambda a: database_access_policy(
                    resource_id=a[0], region=a[1], account_id=a[2], partition=a[3]
                )
            )
        return TaskRole(description, policies)

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
                security_group_id=self.security_group.id,
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
                args.litellm,
                master_key_secret_arn=args.master_key_secret_arn,
                salt_key_secret_arn=args.salt_key_secret_arn,
            )
        )
    return Output.all(db.host, db.secret_arn, db.cluster_arn).apply(
        lambda a: gateway_container_env(
            args.litellm,
            master_key_secret_arn=args.master_key_secret_arn,
            salt_key_secret_arn=args.salt_key_secret_arn,
            database=DatabaseEndpoint(a[0], db.port, db.name, a[1], a[2]),
        )
    )
