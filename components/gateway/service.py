"""LiteLLMGateway: LiteLLM's proxy on Fargate, behind the authenticated ALB on its own path.

On top of `FargateService` (log group, roles, task definition, service, target tracking) it adds:
- a task role that may invoke exactly the configured Bedrock models (no policy when there are
  none) and, with the database, log in to it with IAM tokens; the execution role reads the master
  key, the salt key with the database and the input's `secrets`, decrypting with its
  `kmsKeyArns.secrets`;
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

`LiteLLMGateway(name, input, wiring)`: `input` is the gateway's `GatewayConfig` (its stack-file
section), `wiring` what it takes from around it (`GatewayWiring`). It decides its routes, size,
keys and config itself (`components.gateway.decisions.gateway_service`), with the errors a stack
file gets, before it creates anything.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import pulumi
import pulumi_aws as aws
from pulumi import Input, Output

from ecs_inference import ledger
from ecs_inference.config.issues import Issues
from ecs_inference.contracts import litellm
from ecs_inference.gateway.database import DatabaseOutputs
from ecs_inference.gateway.decisions import (
    GRACE_SECONDS,
    GatewayDecisions,
    GatewayPlacement,
    decision_lines,
    gateway_service,
)
from ecs_inference.gateway.input import GatewayConfig
from ecs_inference.gateway.litellm_config import (
    POSTGRES_PORT,
    bedrock_invoke_policy,
    container_environment,
    database_access_policy,
)
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
from ecs_inference.services.service_connect import port_mapping, private_host

TOKEN = "ecs-inference:serving:LiteLLMGateway"
CONTAINER_NAME = "litellm"
CONFIG_FILE = "/tmp/litellm-config.yaml"
# LiteLLM stops accepting on SIGTERM and lets streams finish; Fargate allows at most 120 s.
STOP_TIMEOUT_SECONDS = 120


def entrypoint(config_env: str = litellm.ENV_CONFIG_YAML) -> list[str]:
    """Container entry point: write the config from the environment, then run the proxy in its
    place (exec: it receives SIGTERM directly). The image has a POSIX shell."""
    script = (
        f'printf "%s" "${config_env}" > {CONFIG_FILE} && '
        f"exec litellm --config {CONFIG_FILE} --port {litellm.PORT}"
    )
    return ["/bin/sh", "-c", script]


@dataclass(frozen=True, kw_only=True)
class GatewayWiring(ServiceWiring):
    """What the gateway takes from around it besides its input: the endpoint's wiring
    (`ServiceWiring`, whose `service_connect_namespace` is required: workers reach the gateway
    through it; `service_depends_on` should name the model services, since a Service Connect
    client resolves only the servers that exist when its task starts) and the below."""

    placement: GatewayPlacement
    """The services it may route to, its listener priority and the VPC's CIDRs."""
    security_group: aws.ec2.SecurityGroup
    """The tasks' group, from `gateway_security_group` (its rules are the component's)."""
    service_security_groups: Mapping[str, Input[str]] = field(default_factory=dict)
    """Service -> its tasks' group: the gateway may reach each routed one on its port; default
    none."""
    database: DatabaseOutputs | None = None
    """`GatewayDatabase.outputs()`, given exactly when `input.database.enabled`; default None."""


def decide_gateway(input: GatewayConfig, wiring: GatewayWiring) -> GatewayDecisions:
    """The gateway's decisions, as a stack's plan makes them; raises `ConfigError` with every
    problem, each at the config path a stack file would name (`platform.gateway`)."""
    decided, found = gateway_service(input, wiring.placement)
    issues = Issues(found)
    if input.database.enabled != (wiring.database is not None):
        issues.add(
            "platform.gateway.database",
            "the database's outputs must be wired exactly when `database.enabled` is on",
        )
    issues.raise_if_any()
    assert decided is not None
    return decided


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
    decided: GatewayDecisions,
    log_group: str,
    region: str,
    database_host: str | None = None,
) -> list[dict[str, Any]]:
    """The proxy's container: generated config and settings as plain variables, keys as
    secrets, the named HTTP port Service Connect refers to. With the database (its writer's
    `database_host`; default None), LiteLLM's login role exists before the gateway starts: the
    database's bootstrap function made it."""
    environment = container_environment(decided.config_yaml, database_host)
    # Fargate tasks have no instance metadata to ask: LiteLLM's RDS token client needs the
    # region named ("AWS region not set: set AWS_REGION_NAME or AWS_REGION").
    return [
        container_definition(
            name=CONTAINER_NAME,
            image=image,
            entry_point=entrypoint(),
            environment=[{"name": k, "value": v} for k, v in environment.items()],
            extra_environment=decided.input.environment,
            secrets=decided.secret_refs,
            port_mappings=[port_mapping(litellm.PORT)],
            log_group_name=log_group,
            region=region,
            stream_prefix=decided.input.path,
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
    decided: GatewayDecisions
    """What it decided: routes, Bedrock models, keys, config and the decision lines."""

    def __init__(
        self,
        name: str,
        input: GatewayConfig,
        wiring: GatewayWiring,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        namespace = wiring.service_connect_namespace
        if namespace is None:
            raise ValueError(f"LiteLLMGateway {name!r}: needs service_connect_namespace")
        self.decided = decided = decide_gateway(input, wiring)
        assert input.image is not None  # the input's default is the pinned release
        super().__init__(TOKEN, name, opts)
        ledger.record_decisions("gateway", decision_lines(decided))
        ledger.record_fargate(f"gateway {input.path}", decided, None)
        self.private_url = f"http://{private_host(input.path, namespace.name)}:{litellm.PORT}"
        self.security_group = wiring.security_group
        self.rules = []
        self._security_group_rules(decided, wiring)
        group = self._logs(input.path, input.log_retention_days)
        db = wiring.database
        self._containers(
            lambda a: gateway_container_definitions(
                image=a[1], decided=decided, log_group=group, region=a[0], database_host=a[2]
            ),
            input.image,
            None if db is None else db.host,
            secret_arns=wiring.stack_secret_arns,
        )
        self._fargate_task(
            service=input.path,
            input=input,
            size=decided.size,
            task_role=self._bedrock_role(decided, db),
            execution_description="ECS agent: pull the image, write logs, read the gateway's "
            "secrets",
        )
        balancing = Balancing(CONTAINER_NAME, litellm.PORT, litellm.HEALTH_PATH, 10)
        self._target_group(
            vpc_id=wiring.vpc_id,
            balancing=balancing,
            deregistration_delay_seconds=decided.deregistration_delay_seconds,
            max_request_seconds=decided.longest_request_seconds,
        )
        self._routes(wiring.router, input.path, wiring.placement.priority)
        self._fargate_service(
            wiring,
            security_groups=[self.security_group.id],
            deployment=Deployment(
                desired_count=input.desired_count,
                grace_seconds=GRACE_SECONDS,
                depends_on=[
                    *self.rules,
                    *wiring.service_depends_on,
                    # LiteLLM's login role exists before its first task starts.
                    *([db.bootstrap] if db and db.bootstrap else []),
                ],
            ),
            balancing=balancing,
            service_connect=service_connect_server(
                service=input.path,
                namespace=namespace,
                port=litellm.PORT,
                longest_request_seconds=max(decided.longest_request_seconds, 1),
            ),
        )
        self._target_tracking(
            wiring.cluster_arn,
            min_count=input.min_count,
            max_count=input.max_count,
            configuration=predefined_tracking(
                CPU_METRIC, input.target_cpu_percent, scale_out_cooldown=60, scale_in_cooldown=300
            ),
        )
        self.register_outputs(
            {"serviceName": self.service.name, "targetGroupArn": self.target_group.arn}
        )

    def _security_group_rules(self, decided: GatewayDecisions, wiring: GatewayWiring) -> None:
        self.admit("alb", wiring.alb_security_group_id, "ALB to the proxy (requests, health)")
        self._rule("to-https", aws_api_rule("HTTPS to AWS APIs and Bedrock"), "egress")
        routed = {r.target.service: r.target.port for r in decided.routes}
        for service, port in sorted(routed.items()):
            group = wiring.service_security_groups.get(service)
            if group is None:
                raise ValueError(f"LiteLLMGateway: no security group wired for service {service!r}")
            self._rule(
                f"to-model-{service}",
                PortRule(port, f"model service {service}", group=group),
                "egress",
            )
        if wiring.database is not None:
            self._rule(
                "to-database",
                PortRule(
                    POSTGRES_PORT,
                    "LiteLLM database (PostgreSQL)",
                    group=wiring.database.security_group_id,
                ),
                "egress",
            )

    def _bedrock_role(self, decided: GatewayDecisions, db: DatabaseOutputs | None) -> TaskRole:
        description = "LiteLLM: invoke exactly the configured Bedrock models"
        ctx = self._ctx
        policies: dict[str, Input[str]] = {}
        if decided.bedrock:
            bedrock = decided.bedrock
            policies["bedrock"] = Output.all(ctx.partition, ctx.account_id).apply(
                lambda a: bedrock_invoke_policy(bedrock, partition=a[0], account_id=a[1])
            )
        if db is not None:
            description += "; log in to its database with IAM tokens"
            policies["database"] = Output.all(
                resource_id=db.resource_id,
                region=ctx.region,
                account_id=ctx.account_id,
                partition=ctx.partition,
            ).apply(lambda a: database_access_policy(**a))
        return TaskRole(description, policies)

    def admit(self, client: str, security_group_id: Input[str], what: str) -> None:
        """Allow `security_group_id` (a client's tasks) to reach the proxy port."""
        self._rule(f"from-{client}", PortRule(litellm.PORT, what, group=security_group_id))

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
