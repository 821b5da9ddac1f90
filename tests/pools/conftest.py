"""What the pool tests share: pool inputs and wiring, the SSM lookups the mocks answer, and the user
data and ecs.config a launch template carries."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from pydantic.alias_generators import to_camel

from ecs_inference.pools.asg_pool import AsgPoolWiring
from ecs_inference.pools.input import ManagedInstancePoolConfig, PoolConfig
from ecs_inference.pools.managed_instances_pool import ManagedPoolWiring, provider_input
from ecs_inference.sizing.instance_types import InstanceRequirements
from tools import recording
from tools.recording import Recording

LT = "aws:ec2/launchTemplate:LaunchTemplate"
ASG = "aws:autoscaling/group:Group"
CP = "aws:ecs/capacityProvider:CapacityProvider"
CCP = "aws:ecs/clusterCapacityProviders:ClusterCapacityProviders"
SG = "aws:ec2/securityGroup:SecurityGroup"
ATTACH = "aws:iam/rolePolicyAttachment:RolePolicyAttachment"
SUBNETS = ["subnet-0aaa", "subnet-0bbb"]


_WIRING = ("cluster_name", "vpc_id", "subnet_ids", "placement")


def pool_args(instance_type: str, **overrides: Any) -> tuple[PoolConfig, AsgPoolWiring]:
    """A pool's input and wiring (`cluster_name`, `vpc_id`, `subnet_ids` and `placement` go to
    the wiring, the rest to the input): `GpuAsgPool("gpu", *gpu_args(...))`."""
    wiring: dict[str, Any] = {"cluster_name": "inference", "vpc_id": "vpc-0123"}
    wiring |= {"subnet_ids": SUBNETS} | {k: v for k, v in overrides.items() if k in _WIRING}
    fields = {k: v for k, v in overrides.items() if k not in _WIRING}
    return PoolConfig(instance_type=instance_type, **fields), AsgPoolWiring(**wiring)


def gpu_args(**overrides: Any) -> tuple[PoolConfig, AsgPoolWiring]:
    return pool_args(overrides.pop("instance_type", "g6e.xlarge"), **overrides)


def neuron_args(**overrides: Any) -> tuple[PoolConfig, AsgPoolWiring]:
    return pool_args(overrides.pop("instance_type", "inf2.xlarge"), **overrides)


@pytest.fixture
def ssm_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Names passed to aws:ssm/getParameter, captured from the recording mocks."""
    names: list[str] = []
    original = recording.RecordingMocks.call

    def call(self, args):
        if args.token == "aws:ssm/getParameter:getParameter":
            names.append(args.args["name"])
        return original(self, args)

    monkeypatch.setattr(recording.RecordingMocks, "call", call)
    return names


def user_data(rec: Recording) -> str:
    return base64.b64decode(rec.one(LT).inputs["userData"]).decode()


def ecs_config(script: str) -> dict[str, str]:
    body = script.split("cat <<'EOF' >> /etc/ecs/ecs.config\n", 1)[1].split("\nEOF\n", 1)[0]
    return dict(line.split("=", 1) for line in body.splitlines())


def create_capacity_provider_request(name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """The API request a recorded aws.ecs.CapacityProvider becomes: the provider sends the
    auto-name and turns the tag map into a list; every other member maps by name (the
    shape-directed normaliser reconciles `vcpuCount`/`vCpuCount`, `storageSizeGib`/`...GiB`)."""
    request = {k: v for k, v in inputs.items() if k not in ("tags", "tagsAll")}
    request["name"] = f"{name}-1a2b3c4"
    tags = inputs.get("tags") or {}
    if tags:
        request["tags"] = [{"key": k, "value": v} for k, v in tags.items()]
    return request


def _camel(value: Any) -> Any:
    if isinstance(value, dict):
        return {to_camel(k): _camel(v) for k, v in value.items()}
    return [_camel(v) for v in value] if isinstance(value, list) else value


def managed_request(
    pool: ManagedInstancePoolConfig,
    requirements: InstanceRequirements,
    *,
    role: str,
    profile: str,
    subnets: list[str],
    name: str = "p",
    cluster: str = "c",
) -> dict[str, Any]:
    """The CreateCapacityProvider request the component's `provider_input` becomes, with the
    pool's tags, for plain role, profile and subnet values (security group `sg-0123...`)."""
    wiring = ManagedPoolWiring(
        cluster_name=cluster, vpc_id="vpc-0123", subnet_ids=subnets, requirements=requirements
    )
    provider = provider_input(pool, wiring, role, profile, "sg-0123456789abcdef0")
    inputs = {"cluster": cluster, "managedInstancesProvider": _camel(provider), "tags": pool.tags}
    return create_capacity_provider_request(name, inputs)
