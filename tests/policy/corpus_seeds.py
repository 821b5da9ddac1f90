"""Corpus stacks for the four seed advisories (``guardrails/containers.py``, ``fargate/``,
``deployment.py``), good and bad, in both providers' shapes; ``build`` (``corpus.py``) turns
each into preview records and literal ones.

``advisory`` is the exact set of ``(policy, resource name)`` pairs the four seed rules report;
``notes`` are substrings that must appear among ``guardrail-notes``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from tests.policy.corpus import Case, Ref, container, td_inputs

HUB = "no-hub-weights-at-task-start"
COMPAT = "fargate-task-definition-requires-fargate"
PULL = "fargate-image-pull-path"
QUEUE = "queue-workers-scale-on-backlog"
SEED_POLICIES = frozenset({HUB, COMPAT, PULL, QUEUE})

IMAGE_TGI = "ghcr.io/huggingface/text-generation-inference:3.3.4"
IMAGE_VLLM_HUB = "vllm/vllm-openai:v0.9.2"


@dataclass
class SeedCase:
    """A corpus case and what the seed rules must say about it."""

    case: Case
    advisory: set[tuple[str, str]]
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def title(self) -> str:
        return self.case.title


def _td(native: bool) -> str:
    return "aws-native:ecs:TaskDefinition" if native else "aws:ecs/taskDefinition:TaskDefinition"


def _svc(native: bool) -> str:
    return "aws-native:ecs:Service" if native else "aws:ecs/service:Service"


def _containers(native: bool, *items: dict[str, Any]) -> Any:
    return list(items) if native else json.dumps(list(items))


def _task(native: bool, *, fargate: bool = True, role: str | None = None, **extra: Any):
    """A task definition of one container (``extra`` merged into the container)."""
    inputs = td_inputs(native, gpu=False, fargate=fargate)
    item = {**container("model", extra.pop("image", IMAGE_TGI), 8000), **extra}
    inputs["containerDefinitions"] = _containers(native, item)
    if role:
        inputs["taskRoleArn"] = Ref(role)
    return inputs


def _service(
    native: bool, *, td: str, subnets: list[Any] | None = None, public_ip: bool = False, **extra
) -> dict[str, Any]:
    nets = subnets if subnets is not None else ["subnet-0a1b2c3d"]
    if native:
        network: dict[str, Any] = {
            "awsvpcConfiguration": {
                "subnets": nets,
                "assignPublicIp": "ENABLED" if public_ip else "DISABLED",
            }
        }
        breaker = {"deploymentConfiguration": {"deploymentCircuitBreaker": _BREAKER}}
    else:
        network = {"subnets": nets, "assignPublicIp": public_ip}
        breaker = {"deploymentCircuitBreaker": _BREAKER}
    return {
        "taskDefinition": Ref(td),
        "desiredCount": 1.0,
        "launchType": "FARGATE",
        "networkConfiguration": network,
        **breaker,
        **extra,
    }


_BREAKER = {"enable": True, "rollback": True}


# --- A21 -----------------------------------------------------------------------------------------


def _hub_cases() -> Iterator[SeedCase]:
    offline = {"name": "HF_HUB_OFFLINE", "value": "1"}
    bad: dict[str, dict[str, Any]] = {
        "tgi-model-id-env": {"environment": [{"name": "MODEL_ID", "value": "Qwen/Qwen2.5-7B"}]},
        "vllm-model-flag": {
            "image": IMAGE_VLLM_HUB,
            "command": ["--model", "meta-llama/Llama-3.1-8B-Instruct", "--port", "8000"],
        },
        "vllm-model-equals": {"command": ["--model=mistralai/Mistral-7B-Instruct-v0.3"]},
        "vllm-serve-positional": {
            "entryPoint": ["vllm", "serve"],
            "command": ["meta-llama/Llama-3.1-8B-Instruct", "--port", "8000"],
        },
        "sglang-model-path": {"command": ["--model-path", "Qwen/Qwen2.5-32B-Instruct"]},
        "hf-token-secret-online": {
            "secrets": [{"name": "HF_TOKEN", "valueFrom": "arn:aws:secretsmanager:::secret:hf"}]
        },
    }
    good: dict[str, dict[str, Any]] = {
        "image-names-org-and-tag": {"image": IMAGE_VLLM_HUB, "command": ["--port", "8000"]},
        "model-from-mounted-path": {"command": ["--model", "/mnt/weights/llama-3.1-8b"]},
        "model-from-s3": {"environment": [{"name": "MODEL_ID", "value": "s3://models/llama"}]},
        "model-relative-local-dir": {"command": ["--model-path", "models/llama-3.1-8b"]},
        "served-name-is-a-label": {
            "command": ["--model", "/mnt/w/llama", "--served-model-name", "meta-llama/Llama"]
        },
        "hub-id-offline-cache": {
            "environment": [{"name": "MODEL_ID", "value": "Qwen/Qwen2.5-7B"}, offline],
            "secrets": [{"name": "HF_TOKEN", "valueFrom": "arn:aws:secretsmanager:::secret:hf"}],
        },
        "unrelated-org-name-variable": {
            "environment": [{"name": "UPSTREAM_REPO", "value": "org/service"}]
        },
    }
    for native in (False, True):
        p = "native" if native else "aws"
        for title, extra in {**bad, **good}.items():
            expect = {(HUB, "td")} if title in bad else set()
            case = Case(f"seed-{p}-hub-{title}", set())
            case.add(_td(native), "td", _task(native, **json.loads(json.dumps(extra))))
            yield SeedCase(case, expect)


# --- B8 ------------------------------------------------------------------------------------------


def _compat_cases() -> Iterator[SeedCase]:
    for native in (False, True):
        p = "native" if native else "aws"
        task = _task(native)
        del task["requiresCompatibilities"]
        case = Case(f"seed-{p}-fargate-service-task-without-compatibilities", set())
        case.add(_td(native), "td", task)
        case.add(_svc(native), "svc", _service(native, td="td"))
        yield SeedCase(case, {(COMPAT, "svc")})
        case = Case(f"seed-{p}-fargate-spot-task-without-compatibilities", set())
        case.add(_td(native), "td", dict(task))
        strategy_key = "capacityProviderStrategy" if native else "capacityProviderStrategies"
        spot = _service(native, td="td")
        del spot["launchType"]
        spot[strategy_key] = [{"capacityProvider": "FARGATE_SPOT", "weight": 1.0}]
        case.add(_svc(native), "svc", spot)
        yield SeedCase(case, {(COMPAT, "svc")})
        case = Case(f"seed-{p}-fargate-service-task-declares-fargate", set())
        case.add(_td(native), "td", _task(native))
        case.add(_svc(native), "svc", _service(native, td="td"))
        yield SeedCase(case, set())
        case = Case(f"seed-{p}-ec2-service-task-without-compatibilities", set())
        case.add(_td(native), "td", dict(task))
        case.add(_svc(native), "svc", _service(native, td="td", launchType="EC2"))
        yield SeedCase(case, set())


# --- B14 -----------------------------------------------------------------------------------------

_A = {
    "vpc": ("aws:ec2/vpc:Vpc", "aws-native:ec2:VPC"),
    "subnet": ("aws:ec2/subnet:Subnet", "aws-native:ec2:Subnet"),
    "table": ("aws:ec2/routeTable:RouteTable", "aws-native:ec2:RouteTable"),
    "route": ("aws:ec2/route:Route", "aws-native:ec2:Route"),
    "assoc": (
        "aws:ec2/routeTableAssociation:RouteTableAssociation",
        "aws-native:ec2:SubnetRouteTableAssociation",
    ),
    "nat": ("aws:ec2/natGateway:NatGateway", "aws-native:ec2:NatGateway"),
    "igw": ("aws:ec2/internetGateway:InternetGateway", "aws-native:ec2:InternetGateway"),
    "endpoint": ("aws:ec2/vpcEndpoint:VpcEndpoint", "aws-native:ec2:VpcEndpoint"),
}


def _t(kind: str, native: bool) -> str:
    return _A[kind][1 if native else 0]


def _network(
    native: bool,
    title: str,
    *,
    route: str | None,
    inline: bool = False,
    endpoints: tuple[str, ...] = (),
    associate: bool = True,
    public_ip: bool = False,
) -> Case:
    """A VPC with one subnet, its route table (default route to ``route``: nat, igw, tgw or
    None), the given VPC endpoints, and a Fargate service in the subnet."""
    case = Case(title, set())
    case.add(_t("vpc", native), "vpc", {"cidrBlock": "10.0.0.0/16"})
    case.add(
        _t("subnet", native), "private-a", {"vpcId": Ref("vpc", "id"), "cidrBlock": "10.0.1.0/24"}
    )
    targets: dict[str, Any] = {}
    if route == "nat":
        case.add(
            _t("nat", native), "nat", {"subnetId": "subnet-public", "allocationId": "eipalloc-1"}
        )
        targets = {"natGatewayId": Ref("nat", "id")}
    elif route == "igw":
        case.add(_t("igw", native), "igw", {})
        targets = {"gatewayId": Ref("igw", "id")}
    elif route == "tgw":
        targets = {"transitGatewayId": "tgw-0123456789abcdef0"}
    table: dict[str, Any] = {"vpcId": Ref("vpc", "id")}
    if inline and targets:
        table["routes"] = [{"cidrBlock": "0.0.0.0/0", **targets}]
    case.add(_t("table", native), "rt", table)
    if targets and not inline:
        case.add(
            _t("route", native),
            "default-route",
            {"routeTableId": Ref("rt", "id"), "destinationCidrBlock": "0.0.0.0/0", **targets},
        )
    if associate:
        case.add(
            _t("assoc", native),
            "rt-a",
            {"subnetId": Ref("private-a", "id"), "routeTableId": Ref("rt", "id")},
        )
    for suffix in endpoints:
        case.add(
            _t("endpoint", native),
            f"ep-{suffix.replace('.', '-')}",
            {
                "vpcId": Ref("vpc", "id"),
                "serviceName": f"com.amazonaws.us-east-1.{suffix}",
                "vpcEndpointType": "Gateway" if suffix == "s3" else "Interface",
            },
        )
    case.add(_td(native), "td", _task(native))
    case.add(
        _svc(native),
        "svc",
        _service(native, td="td", subnets=[Ref("private-a", "id")], public_ip=public_ip),
    )
    return case


def _pull_cases() -> Iterator[SeedCase]:
    all_three = ("ecr.api", "ecr.dkr", "s3")
    for native in (False, True):
        p = "native" if native else "aws"
        yield SeedCase(_network(native, f"seed-{p}-pull-no-egress", route=None), {(PULL, "svc")})
        yield SeedCase(
            _network(native, f"seed-{p}-pull-igw-without-public-ip", route="igw"),
            {(PULL, "svc")},
        )
        yield SeedCase(
            _network(
                native, f"seed-{p}-pull-endpoints-without-s3", route=None, endpoints=all_three[:2]
            ),
            {(PULL, "svc")},
        )
        yield SeedCase(_network(native, f"seed-{p}-pull-nat-route", route="nat"), set())
        yield SeedCase(
            _network(native, f"seed-{p}-pull-igw-public-ip", route="igw", public_ip=True),
            set(),
            # the task has a public IP and no security group of the stack: exposure noted
        )
        yield SeedCase(_network(native, f"seed-{p}-pull-transit-gateway", route="tgw"), set())
        yield SeedCase(
            _network(native, f"seed-{p}-pull-endpoints", route=None, endpoints=all_three), set()
        )
        yield SeedCase(
            _network(native, f"seed-{p}-pull-main-route-table", route=None, associate=False),
            set(),
            notes=("cannot verify whether Fargate service 'svc' can pull",),
        )
    yield SeedCase(
        _network(False, "seed-aws-pull-inline-nat-route", route="nat", inline=True), set()
    )
    yield SeedCase(
        _network(False, "seed-aws-pull-inline-no-default-route", route=None, inline=True),
        {(PULL, "svc")},
    )
    # Subnets of an existing VPC (ids, not resources): their routes are not visible, so the path
    # is verified only by the three endpoints declared in the VPC of the service's groups.
    for endpoints, notes in (
        (all_three, ()),
        (all_three[:2], ("are not this stack's, so their routes are not visible",)),
    ):
        title = f"seed-aws-pull-external-subnets-{len(endpoints)}-endpoints"
        yield SeedCase(_external_subnets(title, endpoints), set(), notes=notes)
    # no security group of the stack names the VPC: another stack's network, not judged
    case = Case("seed-aws-pull-external-subnets-no-group", set())
    case.add(_td(False), "td", _task(False))
    case.add(_svc(False), "svc", _service(False, td="td", subnets=["subnet-0a1b2c3d"]))
    yield SeedCase(case, set())


def _external_subnets(title: str, endpoints: tuple[str, ...]) -> Case:
    """A Fargate service in an existing VPC's subnet, its group and ``endpoints`` in that VPC."""
    vpc = "vpc-0a1b2c3d4e5f60718"
    case = Case(title, set())
    case.add("aws:ec2/securityGroup:SecurityGroup", "tasks", {"vpcId": vpc, "egress": []})
    for suffix in endpoints:
        case.add(
            _t("endpoint", False),
            f"ep-{suffix.replace('.', '-')}",
            {
                "vpcId": vpc,
                "serviceName": f"com.amazonaws.us-east-1.{suffix}",
                "vpcEndpointType": "Gateway" if suffix == "s3" else "Interface",
            },
        )
    case.add(_td(False), "td", _task(False))
    service = _service(False, td="td", subnets=["subnet-0a1b2c3d"])
    service["networkConfiguration"]["securityGroups"] = [Ref("tasks", "id")]
    case.add(_svc(False), "svc", service)
    return case


# --- B23 -----------------------------------------------------------------------------------------

_SQS = {
    "Version": "2012-10-17",
    "Statement": [
        {
            "Effect": "Allow",
            "Action": ["sqs:ReceiveMessage", "sqs:DeleteMessage"],
            "Resource": "arn:aws:sqs:us-east-1:123456789012:jobs",
        }
    ],
}
_S3 = {
    "Version": "2012-10-17",
    "Statement": [{"Effect": "Allow", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::w/*"}],
}
_TRUST = {
    "Version": "2012-10-17",
    "Statement": [
        {
            "Effect": "Allow",
            "Principal": {"Service": "ecs-tasks.amazonaws.com"},
            "Action": "sts:AssumeRole",
        }
    ],
}


def _queue_case(native: bool, title: str, *, document: dict, metric: str, standalone: bool = False):
    case = Case(title, set())
    if native:
        role: dict[str, Any] = {"assumeRolePolicyDocument": _TRUST, "roleName": "task-role"}
        if not standalone:
            role["policies"] = [{"policyName": "work", "policyDocument": document}]
        case.add("aws-native:iam:Role", "task-role", role)
        if standalone:
            case.add(
                "aws-native:iam:RolePolicy",
                "work",
                {"roleName": Ref("task-role", "name"), "policyDocument": document},
            )
    else:
        role = {"assumeRolePolicy": json.dumps(_TRUST), "name": "jobs-task"}
        if not standalone:
            role["inlinePolicies"] = [{"name": "work", "policy": json.dumps(document)}]
        case.add("aws:iam/role:Role", "task-role", role)
        if standalone:
            case.add("aws:iam/policy:Policy", "work", {"policy": json.dumps(document)})
            case.add(
                "aws:iam/rolePolicyAttachment:RolePolicyAttachment",
                "work-attach",
                {"role": Ref("task-role", "name"), "policyArn": Ref("work")},
            )
    case.add(_td(native), "td", _task(native, role="task-role"))
    case.add(_svc(native), "worker", _service(native, td="td"))
    target = {
        "resourceId": "service/jobs/worker",
        "serviceNamespace": "ecs",
        "scalableDimension": "ecs:service:DesiredCount",
        "minCapacity": 1.0,
        "maxCapacity": 8.0,
    }
    tracking = {
        "targetValue": 60.0,
        "scaleInCooldown": 600.0,
        "scaleOutCooldown": 60.0,
        "predefinedMetricSpecification": {"predefinedMetricType": metric},
    }
    policy: dict[str, Any] = {
        "policyName": "worker-scaling",
        "policyType": "TargetTrackingScaling",
        "targetTrackingScalingPolicyConfiguration": tracking,
    }
    if native:
        case.add("aws-native:applicationautoscaling:ScalableTarget", "worker-target", target)
        policy["scalingTargetId"] = Ref("worker-target", "id")
        case.add("aws-native:applicationautoscaling:ScalingPolicy", "worker-scaling", policy)
    else:
        case.add("aws:appautoscaling/target:Target", "worker-target", target)
        policy.update(
            resourceId=Ref("worker-target", "id"),
            serviceNamespace="ecs",
            scalableDimension="ecs:service:DesiredCount",
        )
        case.add("aws:appautoscaling/policy:Policy", "worker-scaling", policy)
    return case


def _queue_cases() -> Iterator[SeedCase]:
    cpu, memory = "ECSServiceAverageCPUUtilization", "ECSServiceAverageMemoryUtilization"
    for native in (False, True):
        p = "native" if native else "aws"
        yield SeedCase(
            _queue_case(native, f"seed-{p}-queue-worker-cpu-only", document=_SQS, metric=cpu),
            {(QUEUE, "worker")},
        )
        yield SeedCase(
            _queue_case(
                native,
                f"seed-{p}-queue-worker-cpu-only-standalone-policy",
                document=_SQS,
                metric=cpu,
                standalone=True,
            ),
            {(QUEUE, "worker")},
        )
        yield SeedCase(
            _queue_case(
                native, f"seed-{p}-queue-worker-other-metric", document=_SQS, metric=memory
            ),
            set(),
        )
        yield SeedCase(
            _queue_case(native, f"seed-{p}-not-a-queue-worker-cpu", document=_S3, metric=cpu),
            set(),
        )


def seed_cases() -> list[SeedCase]:
    """Every seed corpus case."""
    found = [*_hub_cases(), *_compat_cases(), *_pull_cases(), *_queue_cases()]
    titles = [c.title for c in found]
    assert len(titles) == len(set(titles)), "duplicate corpus titles"
    return found
