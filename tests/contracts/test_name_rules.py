"""The naming table in contracts/aws_limits.py agrees with pulumi-aws's own source.

The fixture is an excerpt of pulumi-aws's provider source (provenance in its header); a table
entry that disagrees with it, or a type whose provider rule the fixture does not cover, fails.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ecs_inference.contracts.aws_limits import (
    AUTONAME_RANDOM_CHARS,
    AUTONAME_SEPARATOR,
    NAME_RULES,
    PROVIDER_DEFAULT_AUTONAME_MAX,
)

FIXTURE = Path(__file__).parent / "fixtures" / "pulumi_aws_autonaming.txt"

# Terraform resource -> Pulumi type token (pulumi-aws's module mapping for these types).
TOKENS = {
    "aws_lb_target_group": "aws:lb/targetGroup:TargetGroup",
    "aws_lb": "aws:lb/loadBalancer:LoadBalancer",
    "aws_iam_role": "aws:iam/role:Role",
    "aws_iam_role_policy": "aws:iam/rolePolicy:RolePolicy",
    "aws_iam_policy": "aws:iam/policy:Policy",
    "aws_iam_instance_profile": "aws:iam/instanceProfile:InstanceProfile",
    "aws_s3_bucket": "aws:s3/bucket:Bucket",
    "aws_ecs_cluster": "aws:ecs/cluster:Cluster",
    "aws_ecs_service": "aws:ecs/service:Service",
    "aws_ecs_capacity_provider": "aws:ecs/capacityProvider:CapacityProvider",
    "aws_cloudwatch_log_group": "aws:cloudwatch/logGroup:LogGroup",
    "aws_security_group": "aws:ec2/securityGroup:SecurityGroup",
    "aws_launch_template": "aws:ec2/launchTemplate:LaunchTemplate",
    "aws_autoscaling_group": "aws:autoscaling/group:Group",
    "aws_cognito_user_pool": "aws:cognito/userPool:UserPool",
    "aws_cognito_user_pool_client": "aws:cognito/userPoolClient:UserPoolClient",
    "aws_cognito_resource_server": "aws:cognito/resourceServer:ResourceServer",
    "aws_appautoscaling_policy": "aws:appautoscaling/policy:Policy",
    "aws_secretsmanager_secret": "aws:secretsmanager/secret:Secret",
    "aws_ssm_parameter": "aws:ssm/parameter:Parameter",
    "aws_ecr_repository": "aws:ecr/repository:Repository",
    "aws_sns_topic": "aws:sns/topic:Topic",
    "aws_sqs_queue": "aws:sqs/queue:Queue",
    "aws_cloudwatch_event_rule": "aws:cloudwatch/eventRule:EventRule",
    "aws_lambda_function": "aws:lambda/function:Function",
    "aws_cloudwatch_metric_alarm": "aws:cloudwatch/metricAlarm:MetricAlarm",
    "aws_efs_file_system": "aws:efs/fileSystem:FileSystem",
    "aws_db_subnet_group": "aws:rds/subnetGroup:SubnetGroup",
    "aws_service_discovery_http_namespace": "aws:servicediscovery/httpNamespace:HttpNamespace",
}
# Types whose name input the provider never autonames: the name is a required non-`name` input
# (`family`, `domain`, `dashboardName`), so `HasInputName` in autonaming.go skips them.
NOT_AUTONAMED = {
    "aws:ecs/taskDefinition:TaskDefinition",
    "aws:cognito/userPoolDomain:UserPoolDomain",
    "aws:cloudwatch/dashboard:Dashboard",
    # RDS identifiers (`clusterIdentifier`, `identifier`): no `name` input, no override.
    "aws:rds/cluster:Cluster",
    "aws:rds/clusterInstance:ClusterInstance",
}


def _fixture() -> list[tuple[str, str, str]]:
    rows = []
    for line in FIXTURE.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            resource, source, text = (part.strip() for part in line.split("|", 2))
            rows.append((resource, source, text))
    return rows


def _provider_limits() -> tuple[int, dict[str, int], set[str]]:
    """(default maxlen, {terraform resource: maxlen override}, {resources without override})."""
    default = None
    overrides: dict[str, int] = {}
    without: set[str] = set()
    for resource, _source, text in _fixture():
        if resource == "default":
            if m := re.search(r"maxLength := (\d+)", text):
                default = int(m.group(1))
        elif resource == "none":
            without.add(text)
        elif m := re.search(r"AutoName(?:Transform)?\(\"\w+\", (\d+)", text) or re.search(
            r"Maxlen:\s+(\d+)", text
        ):
            overrides[resource] = int(m.group(1))
    assert default is not None
    return default, overrides, without


def test_fixture_states_its_provenance():
    head = FIXTURE.read_text()
    assert "github.com/pulumi/pulumi-aws" in head
    assert re.search(r"autonaming\.go\s+@ [0-9a-f]{40}", head)
    assert re.search(r"resource_overrides\.go\s+@ [0-9a-f]{40}", head)


def test_default_and_separator_match_the_provider():
    default, _, _ = _provider_limits()
    assert default == PROVIDER_DEFAULT_AUTONAME_MAX
    assert any('separator := "-"' in text for _, _, text in _fixture())
    assert AUTONAME_SEPARATOR == "-" and AUTONAME_RANDOM_CHARS == 7


@pytest.mark.parametrize("resource", sorted(TOKENS))
def test_table_matches_the_provider_source(resource):
    default, overrides, without = _provider_limits()
    assert resource in overrides or resource in without, f"fixture does not cover {resource}"
    rule = NAME_RULES[TOKENS[resource]]
    expected = overrides.get(resource, default)
    assert rule.autoname_max == expected


def test_every_named_type_is_covered():
    covered = set(TOKENS.values()) | NOT_AUTONAMED
    assert set(NAME_RULES) <= covered, set(NAME_RULES) - covered
    for token in NOT_AUTONAMED:
        assert NAME_RULES[token].autoname_max is None


def test_route53_record_names_are_never_autonamed():
    # The provider turns autonaming off for records (the name is the DNS name): no table entry.
    assert any(r == "aws_route53_record" and "{Name:" in t for r, _, t in _fixture())
    assert "aws:route53/record:Record" not in NAME_RULES


@pytest.mark.parametrize("token", sorted(NAME_RULES))
def test_provider_limit_never_exceeds_the_api_limit_unchecked(token):
    # Where the provider would autoname past the API limit (load balancers: 255 vs 32), the
    # table's max_length is what the preview enforces; it must be the tighter of the two.
    rule = NAME_RULES[token]
    assert rule.max_length >= 1 and re.compile(rule.pattern)
    assert rule.longest_prefix < rule.max_length
