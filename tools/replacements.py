"""What forces a replacement of a resource the program names, and what AWS keeps unique.

Pulumi replaces a resource by creating the new one before deleting the old one. With a name the
provider made up (`<logical>-<7 random>`) the two never collide. With a name the program gives,
they do whenever the new resource has the same unique identity as the old: AWS refuses the
create (`DuplicateTargetGroupName`), or overwrites the old resource and then the delete of the
old removes the new one (PutDashboard, PutRule). So, for every type the program names
(DESIGN §9), each input it sets that forces a replacement and is not part of the unique
identity itself must either change the name (`ecs_inference.services.base.replacement_name`
hashes it in), or the resource is replaced delete-first (`deleteBeforeReplace`), or the input is
in `ignoreChanges` (its changes are never applied, so never replace).

`REPLACEMENTS` per Pulumi type:

- `forcing`: the inputs terraform-provider-aws marks `ForceNew` (or forces new in its
  CustomizeDiff for the configuration the program uses), Pulumi's names;
  tests/contracts/fixtures/terraform_aws_force_new.txt holds the schema lines, file and
  commit, and tests/contracts/test_replacements.py compares the two.
- `unique`: the inputs AWS requires to be unique together (in the account and region unless
  said), from the API reference; None when AWS lets two resources share the name, so a
  replacement never collides (a task definition family takes a new revision).

tests/tools/test_explicit_names.py applies it to every resource the reference stacks name.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Replacement:
    """One resource type's replacement facts."""

    terraform: str
    """The terraform-provider-aws resource (the fixture's key)."""
    forcing: frozenset[str]
    """Top-level inputs whose change replaces the resource (camelCase)."""
    unique: tuple[str, ...] | None
    """Inputs AWS keeps unique together; None: names may repeat."""
    why: str
    """The API behaviour `unique` comes from."""


def _facts(terraform: str, forcing: str, unique: tuple[str, ...] | None, why: str) -> Replacement:
    return Replacement(terraform, frozenset(forcing.split()), unique, why)


REPLACEMENTS: dict[str, Replacement] = {
    "aws:lb/targetGroup:TargetGroup": _facts(
        "aws_lb_target_group",
        "ipAddressType name namePrefix port protocol protocolVersion targetType vpcId",
        ("name",),
        "CreateTargetGroup: DuplicateTargetGroupName (names are unique per account and region)",
    ),
    # For an application load balancer (the program's): its CustomizeDiff forces new on a changed
    # subnet mapping only; a network load balancer's also on subnets and security groups.
    "aws:lb/loadBalancer:LoadBalancer": _facts(
        "aws_lb",
        "customerOwnedIpv4Pool internal loadBalancerType name namePrefix subnetMappings",
        ("name",),
        "CreateLoadBalancer: DuplicateLoadBalancerName",
    ),
    "aws:cloudwatch/logGroup:LogGroup": _facts(
        "aws_cloudwatch_log_group",
        "logGroupClass name namePrefix",
        ("name",),
        "CreateLogGroup: ResourceAlreadyExistsException",
    ),
    "aws:cloudwatch/metricAlarm:MetricAlarm": _facts(
        "aws_cloudwatch_metric_alarm",
        "name",
        ("name",),
        "PutMetricAlarm overwrites an alarm of the same name (the provider refuses to create one)",
    ),
    "aws:cloudwatch/dashboard:Dashboard": _facts(
        "aws_cloudwatch_dashboard",
        "dashboardName",
        ("dashboardName",),
        "PutDashboard overwrites the dashboard of the same name",
    ),
    "aws:cloudwatch/eventRule:EventRule": _facts(
        "aws_cloudwatch_event_rule",
        "eventBusName name namePrefix",
        ("eventBusName", "name"),
        "PutRule overwrites the rule of the same name on the same bus",
    ),
    "aws:sqs/queue:Queue": _facts(
        "aws_sqs_queue",
        "fifoQueue name namePrefix",
        ("name",),
        "CreateQueue: QueueNameExists, or the existing queue when its attributes match",
    ),
    "aws:servicediscovery/httpNamespace:HttpNamespace": _facts(
        "aws_service_discovery_http_namespace",
        "description name",
        ("name",),
        "CreateHttpNamespace: NamespaceAlreadyExists",
    ),
    "aws:cognito/userPoolDomain:UserPoolDomain": _facts(
        "aws_cognito_user_pool_domain",
        "certificateArn domain userPoolId",
        ("domain",),
        "CreateUserPoolDomain: a domain prefix is unique across AWS",
    ),
    "aws:cognito/resourceServer:ResourceServer": _facts(
        "aws_cognito_resource_server",
        "identifier name userPoolId",
        ("userPoolId", "identifier"),
        "CreateResourceServer: the identifier is unique in its user pool (names may repeat)",
    ),
    "aws:ecr/repository:Repository": _facts(
        "aws_ecr_repository",
        "encryptionConfigurations name",
        ("name",),
        "CreateRepository: RepositoryAlreadyExistsException",
    ),
    "aws:ecs/taskDefinition:TaskDefinition": _facts(
        "aws_ecs_task_definition",
        "",
        None,
        "RegisterTaskDefinition adds a revision to the family: a replacement is the next revision",
    ),
    "aws:cognito/userPool:UserPool": _facts(
        "aws_cognito_user_pool", "", None, "CreateUserPool: pool names may repeat (ids are unique)"
    ),
    "aws:cognito/userPoolClient:UserPoolClient": _facts(
        "aws_cognito_user_pool_client",
        "",
        None,
        "CreateUserPoolClient: client names may repeat (ids are unique)",
    ),
}
"""Pulumi type -> its replacement facts; every type the program gives an explicit name."""


def needs_new_name(type_: str, inputs: dict[str, object], ignored: tuple[str, ...]) -> list[str]:
    """The inputs (of `inputs`, as the program set them) that force a replacement of a resource
    of `type_` without being part of its unique identity, less those in `ignored`
    (ignoreChanges): what its explicit name must change with unless it is replaced
    delete-first. Raises KeyError for a type without facts."""
    facts = REPLACEMENTS[type_]
    if facts.unique is None:
        return []
    return sorted(
        k for k in inputs if k in facts.forcing and k not in facts.unique and k not in ignored
    )
