"""What the Terraform schema and read functions of terraform-provider-aws decide, per attribute.

Two facts the Pulumi schema does not carry (`provider_schema.py` says only which attributes
always have a value):

- `default`: the schema's `Default:`. pulumi-terraform-bridge's `Check` adds it to the
  checked inputs when the program leaves the attribute out, except falsy ones
  (`pkg/tfbridge/schema.go` `applyDefaults`, `shouldSuppressTFSchemaDefaultValue`,
  pulumi-terraform-bridge#2618); the plan holds it either way.
- `stored`: what the state holds after `up` for an Optional+Computed attribute the program
  left out: what the read function sets from the AWS response (`only_with`: only when that
  other input is given, e.g. the launch type of a capacity-provider service).

Each fact cites the file it was read from; the stored copies used are named in `SOURCES`, and
`tests/contracts/fixtures/terraform_aws_schema.txt` holds the excerpts the tests compare the
defaults and the Optional+Computed flags with. Attributes without a fact here are not guessed:
an Optional+Computed attribute with no `stored` fact is left out of the `update` and `state`
views (and is unknown in `new`, as in a real first preview).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

_MISSING: Any = object()
SAME_AS_ID = "<the resource id>"
"""A `stored` value that is the resource's own id."""

SOURCES = {
    "service.go": (
        "hashicorp/terraform-provider-aws internal/service/ecs/service.go (stored copies at "
        "commits 00a919d1 for the schema, newest read function for d.Set)"
    ),
    "load_balancer.go": (
        "hashicorp/terraform-provider-aws internal/service/elbv2/load_balancer.go (schema) and "
        'the flatten of DescribeLoadBalancers (`d.Set("internal", Scheme == "internal")`)'
    ),
    "ec2_launch_template.go": (
        "hashicorp/terraform-provider-aws internal/service/ec2/ec2_launch_template.go: the read "
        "sets latest_version and default_version from DescribeLaunchTemplates "
        "(LatestVersionNumber, DefaultVersionNumber); CreateLaunchTemplate creates version 1"
    ),
    "ec2_eip.go": (
        "hashicorp/terraform-provider-aws internal/service/ec2/ec2_eip.go: the id of a VPC "
        "address is its allocation id, and the read sets allocation_id from DescribeAddresses"
    ),
    "vpc.go": (
        "hashicorp/terraform-provider-aws internal/service/ec2/vpc_.go: without an IPv6 "
        'association the read sets ipv6_cidr_block to nil, which the state holds as ""'
    ),
    "tags": (
        "hashicorp/terraform-provider-aws internal/verify/diff.go SetTagsDiff: tags_all is the "
        "provider's default_tags merged with the resource's tags, set in the plan when the tags "
        "are known and the merge is not empty, computed otherwise"
    ),
}


@dataclass(frozen=True)
class Fact:
    """One attribute of one resource type, as terraform-provider-aws decides it."""

    type: str
    path: str
    """camelCase attribute path, nested attributes joined with '.'."""
    source: str
    """Key of `SOURCES`."""
    default: Any = _MISSING
    stored: Any = _MISSING
    only_with: str | None = None
    """`stored` holds only when this top-level input is given."""
    unless: tuple[str, ...] = ()
    """`stored` holds only when none of these top-level inputs is given."""

    @property
    def has_default(self) -> bool:
        return self.default is not _MISSING

    @property
    def has_stored(self) -> bool:
        return self.stored is not _MISSING


SERVICE = "aws:ecs/service:Service"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
LOAD_BALANCER = ("aws:lb/loadBalancer:LoadBalancer", "aws:alb/loadBalancer:LoadBalancer")

FACTS: tuple[Fact, ...] = (
    Fact(SERVICE, "deploymentMaximumPercent", "service.go", default=200),
    Fact(SERVICE, "deploymentMinimumHealthyPercent", "service.go", default=100),
    Fact(SERVICE, "schedulingStrategy", "service.go", default="REPLICA"),
    Fact(SERVICE, "enableEcsManagedTags", "service.go", default=False),
    Fact(SERVICE, "enableExecuteCommand", "service.go", default=False),
    Fact(SERVICE, "waitForSteadyState", "service.go", default=False),
    Fact(SERVICE, "deploymentController.type", "service.go", default="ECS"),
    Fact(SERVICE, "networkConfiguration.assignPublicIp", "service.go", default=False),
    Fact(SERVICE, "volumeConfiguration.managedEbsVolume.encrypted", "service.go", default=True),
    Fact(
        SERVICE, "volumeConfiguration.managedEbsVolume.fileSystemType", "service.go", default="xfs"
    ),
    # `d.Set("launch_type", service.LaunchType)`: DescribeServices gives no launch type for a
    # service that runs on a capacity provider strategy, so the state holds "".
    Fact(SERVICE, "launchType", "service.go", stored="", only_with="capacityProviderStrategies"),
    # `d.Set(names.AttrTriggers, d.Get(names.AttrTriggers))`: an empty map when not set.
    Fact(SERVICE, "triggers", "service.go", stored={}),
    Fact("aws:ec2/eip:Eip", "allocationId", "ec2_eip.go", stored=SAME_AS_ID),
    Fact(
        "aws:ec2/vpc:Vpc",
        "ipv6CidrBlock",
        "vpc.go",
        stored="",
        unless=("assignGeneratedIpv6CidrBlock", "ipv6IpamPoolId"),
    ),
    Fact(LAUNCH_TEMPLATE, "latestVersion", "ec2_launch_template.go", stored=1),
    Fact(LAUNCH_TEMPLATE, "defaultVersion", "ec2_launch_template.go", stored=1),
    *(
        fact
        for token in LOAD_BALANCER
        for fact in (
            Fact(token, "loadBalancerType", "load_balancer.go", default="application"),
            Fact(token, "idleTimeout", "load_balancer.go", default=60),
            Fact(token, "enableHttp2", "load_balancer.go", default=True),
            *(
                Fact(token, attribute, "load_balancer.go", default=False)
                for attribute in (
                    "dropInvalidHeaderFields",
                    "enableCrossZoneLoadBalancing",
                    "enableDeletionProtection",
                    "enableTlsVersionAndCipherSuiteHeaders",
                    "enableWafFailOpen",
                    "enableXffClientPort",
                    "enableZonalShift",
                    "preserveHostHeader",
                )
            ),
            # The create sends a Scheme only when internal is set; CreateLoadBalancer's default
            # scheme is internet-facing, which the read stores as internal = false.
            Fact(token, "internal", "load_balancer.go", stored=False),
        )
    ),
)

_BY_TYPE: dict[str, tuple[Fact, ...]] = {}
for _fact in FACTS:
    _BY_TYPE[_fact.type] = (*_BY_TYPE.get(_fact.type, ()), _fact)


def facts_of(type_: str) -> tuple[Fact, ...]:
    """Every fact of one resource type (empty for types not researched)."""
    return _BY_TYPE.get(type_, ())


def stored_applies(fact: Fact, inputs: Mapping[str, Any]) -> bool:
    """Whether `fact.stored` is what the state holds for a resource with `inputs`."""
    if not fact.has_stored or any(inputs.get(key) for key in fact.unless):
        return False
    return fact.only_with is None or bool(inputs.get(fact.only_with))
