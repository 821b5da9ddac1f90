"""What the capacity tests share: pool arguments, the SSM lookups the mocks answer, and the user
data and ecs.config a launch template carries."""

from __future__ import annotations

import base64
from dataclasses import replace
from typing import Any

import pytest

from ecs_inference.capacity.asg_pool import GpuAsgPoolArgs, InferentiaPoolArgs
from tools import recording
from tools.recording import Recording

LT = "aws:ec2/launchTemplate:LaunchTemplate"
ASG = "aws:autoscaling/group:Group"
CP = "aws:ecs/capacityProvider:CapacityProvider"
CCP = "aws:ecs/clusterCapacityProviders:ClusterCapacityProviders"
SG = "aws:ec2/securityGroup:SecurityGroup"
ATTACH = "aws:iam/rolePolicyAttachment:RolePolicyAttachment"
SUBNETS = ["subnet-0aaa", "subnet-0bbb"]


def gpu_args(**overrides: Any) -> GpuAsgPoolArgs:
    base = GpuAsgPoolArgs(
        cluster_name="inference",
        vpc_id="vpc-0123",
        subnet_ids=SUBNETS,
        instance_type="g6e.xlarge",
    )
    return replace(base, **overrides)


def neuron_args(**overrides: Any) -> InferentiaPoolArgs:
    base = InferentiaPoolArgs(
        cluster_name="inference",
        vpc_id="vpc-0123",
        subnet_ids=SUBNETS,
        instance_type="inf2.xlarge",
    )
    return replace(base, **overrides)


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
