"""Documented API constraints: each quote is in the pinned botocore's documentation where the
table says, and each check refuses an input that breaks it (and passes the reference stacks)."""

from __future__ import annotations

import html
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import botocore.session
import pytest

from tools.rehearsal.constraints import CONSTRAINTS, Constraint
from tools.rehearsal.model import StackModel

ACCOUNT, REGION = "123456789012", "us-east-1"
SESSION = botocore.session.get_session()


def _text(doc: str | None) -> str:
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", doc or ""))).strip()


def documentation(c: Constraint) -> str:
    operation = SESSION.get_service_model(c.service).operation_model(c.operation)
    if c.member is None:
        return _text(operation.documentation)
    shape: Any = operation.input_shape
    for part in c.member.split("."):
        shape = shape.members[part.removesuffix("[]")]
        if part.endswith("[]"):
            doc = _text(shape.documentation)
            shape = shape.member
            if part == c.member.split(".")[-1]:
                return doc + " " + _text(shape.documentation)
    return _text(shape.documentation)


@pytest.mark.parametrize("constraint", CONSTRAINTS, ids=lambda c: c.source)
def test_the_quote_is_in_botocore(constraint: Constraint) -> None:
    assert _text(constraint.quote) in documentation(constraint)


@dataclass
class R:
    type: str
    name: str
    inputs: dict[str, Any]
    outputs: dict[str, Any] = field(default_factory=dict)
    dependencies: tuple[str, ...] = ()

    @property
    def urn(self) -> str:
        return f"urn:pulumi:test::p::{self.type}::{self.name}"


TD = "aws:ecs/taskDefinition:TaskDefinition"
SVC = "aws:ecs/service:Service"
CP = "aws:ecs/capacityProvider:CapacityProvider"
CCP = "aws:ecs/clusterCapacityProviders:ClusterCapacityProviders"
TD_ARN = f"arn:aws:ecs:{REGION}:{ACCOUNT}:task-definition/app:1"
MI = {"infrastructureRoleArn": f"arn:aws:iam::{ACCOUNT}:role/infra"}


def task(containers: list[dict[str, Any]], **inputs: Any) -> R:
    body = {
        "family": "app",
        "networkMode": "awsvpc",
        "containerDefinitions": json.dumps(containers),
    }
    return R(TD, "app", {**body, **inputs}, {"arn": TD_ARN})


def service(**inputs: Any) -> R:
    network = {"subnets": ["subnet-0aaaaaaaaaaaaaaa1"]}
    body = {"cluster": "c", "taskDefinition": TD_ARN, "networkConfiguration": network}
    return R(SVC, "svc", {**body, **inputs})


WEB = {"name": "web", "image": "nginx", "portMappings": [{"containerPort": 80, "name": "http"}]}
NAMESPACE = f"arn:aws:servicediscovery:{REGION}:{ACCOUNT}:namespace/ns-1"
TG_ARN = f"arn:aws:elasticloadbalancing:{REGION}:{ACCOUNT}:targetgroup/tg/0123456789abcdef"
ASG_ARN = f"arn:aws:autoscaling:{REGION}:{ACCOUNT}:autoScalingGroup:0:autoScalingGroupName/asg"
ASG = "aws:autoscaling/group:Group"


def connect(namespace: str = NAMESPACE, **config: Any) -> R:
    return service(serviceConnectConfiguration={"enabled": True, "namespace": namespace, **config})


def strategy(*items: dict[str, Any]) -> list[R]:
    names = [i["capacityProvider"] for i in items]
    assoc = R(CCP, "assoc", {"clusterName": "c", "capacityProviders": names})
    return [task([WEB]), service(capacityProviderStrategies=list(items)), assoc]


def behind(port: float, target_type: str = "ip") -> list[R]:
    lb = {"targetGroupArn": TG_ARN, "containerName": "web", "containerPort": port}
    group = R("aws:lb/targetGroup:TargetGroup", "tg", {"targetType": target_type}, {"arn": TG_ARN})
    return [task([WEB]), service(loadBalancers=[lb]), group]


def exec_logging() -> list[R]:
    logging = {"cloudWatchLogGroupName": "/exec"}
    config = {"executeCommandConfiguration": {"logging": "OVERRIDE", "logConfiguration": logging}}
    group = R("aws:cloudwatch/logGroup:LogGroup", "exec-logs", {"name": "/exec"})
    return [group, R("aws:ecs/cluster:Cluster", "c", {"configuration": config}, {"name": "c"})]


def termination_protection() -> list[R]:
    provider = {
        "autoScalingGroupArn": ASG_ARN,
        "managedTerminationProtection": "ENABLED",
        "managedScaling": {"status": "ENABLED"},
    }
    return [
        R(CP, "asg-cp", {"autoScalingGroupProvider": provider}, {"name": "asg-cp"}),
        R(ASG, "asg", {"maxSize": 2.0}, {"arn": ASG_ARN}),
    ]


def efs_without_tls() -> list[R]:
    efs = {"fileSystemId": "fs-1", "authorizationConfig": {"iam": "ENABLED"}}
    return [task([WEB], volumes=[{"name": "w", "efsVolumeConfiguration": efs}])]


def access_point_below_root() -> list[R]:
    auth = {"accessPointId": "fsap-0123456789abcdef0"}
    efs = {"fileSystemId": "fs-1", "rootDirectory": "/models", "authorizationConfig": auth}
    efs["transitEncryption"] = "ENABLED"
    return [task([WEB], volumes=[{"name": "w", "efsVolumeConfiguration": efs}])]


def waits_for_essential() -> list[R]:
    init = {"name": "init", "image": "busybox", "essential": False}
    init["dependsOn"] = [{"containerName": "web", "condition": "SUCCESS"}]
    return [task([WEB, init])]


def partly_weighted() -> list[R]:
    overrides = [{"instanceType": "g6e.12xlarge", "weightedCapacity": "4"}]
    overrides += [{"instanceType": "g6e.24xlarge"}]
    policy = {"launchTemplate": {"overrides": overrides}}
    return [R(ASG, "asg", {"mixedInstancesPolicy": policy})]


TIMEOUT = {"portName": "http", "timeout": {"perRequestTimeoutSeconds": 600}}
REJECTED: dict[str, Callable[[], list[Any]]] = {
    "_managed_instances_in_association": lambda: [
        R(CP, "mi", {"cluster": "c", "managedInstancesProvider": MI}, {"name": "mi"}),
        R(CCP, "assoc", {"clusterName": "c", "capacityProviders": ["mi"]}),
    ],
    "_managed_instances_launch_type": lambda: [
        task([WEB]),
        service(launchType="MANAGED_INSTANCES"),
    ],
    "_strategy_not_associated": lambda: strategy({"capacityProvider": "gpu", "weight": 1})[:2],
    "_strategy_weights": lambda: strategy(
        {"capacityProvider": "a"}, {"capacityProvider": "b", "weight": 0}
    ),
    "_strategy_bases": lambda: strategy(
        {"capacityProvider": "a", "base": 1, "weight": 1}, {"capacityProvider": "b", "base": 2}
    ),
    "_termination_protection": termination_protection,
    "_namespace_region": lambda: [task([WEB]), connect(NAMESPACE.replace(REGION, "eu-west-1"))],
    "_port_names": lambda: [task([WEB]), connect(services=[{"portName": "grpc"}])],
    "_per_request_timeout_on_tcp": lambda: [task([WEB]), connect(services=[TIMEOUT])],
    "_target_types": lambda: behind(80.0, "instance"),
    "_load_balancer_targets": lambda: behind(8080.0),
    "_network_configuration": lambda: [task([WEB]), service(networkConfiguration=None)],
    "_efs_transit_encryption": efs_without_tls,
    "_efs_access_point": access_point_below_root,
    "_depends_on_essential": waits_for_essential,
    "_exec_log_group_created_first": exec_logging,
    "_max_instance_lifetime": lambda: [R(ASG, "asg", {"maxInstanceLifetime": 3600.0})],
    "_weighted_capacity": partly_weighted,
}


def test_every_constraint_has_a_rejected_input() -> None:
    assert sorted(REJECTED) == sorted(c.check.__name__ for c in CONSTRAINTS)


@pytest.mark.parametrize("constraint", CONSTRAINTS, ids=lambda c: c.check.__name__)
def test_each_constraint_refuses_its_rejected_input(constraint: Constraint) -> None:
    model = StackModel(REJECTED[constraint.check.__name__](), REGION, ACCOUNT)
    assert list(constraint.check(model)), constraint.source
    others = [c for c in CONSTRAINTS if c is not constraint and list(c.check(model))]
    assert not others, [c.source for c in others]
