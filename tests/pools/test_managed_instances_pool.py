"""ManagedInstancesPool under the recording mocks: what it registers, the CreateCapacityProvider
request its recorded inputs become (validated against botocore's ECS model), least-privilege IAM
and a closed security group; bad options register nothing."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ecs_inference.pools import managed_instances as mi
from ecs_inference.pools.input import ManagedInstancePoolConfig
from ecs_inference.pools.managed_instances_pool import (
    TYPE_TOKEN,
    ManagedInstancesPool,
    ManagedPoolWiring,
)
from ecs_inference.sizing import instance_types as ir
from tests.aws_shapes import validate_shape
from tests.pools.conftest import create_capacity_provider_request
from tests.sizing.needs import memory_need
from tools.recording import Recording, run_function

CP = "aws:ecs/capacityProvider:CapacityProvider"
ROLE = "aws:iam/role:Role"
ATTACH = "aws:iam/rolePolicyAttachment:RolePolicyAttachment"
INLINE = "aws:iam/rolePolicy:RolePolicy"
SG = "aws:ec2/securityGroup:SecurityGroup"
SUBNETS = ["subnet-0123456789abcdef0", "subnet-0fedcba9876543210"]


def requirements(arch: str = "llama-3.1-8b") -> ir.InstanceRequirements:
    need = memory_need(arch, max_model_len=8192, max_concurrent_sequences=16)
    choice, problems = ir.choose_pool_types("nvidia", [ir.GpuDemand("m", need)])
    assert choice is not None, problems
    return ir.managed_instance_requirements(choice)


Args = tuple[ManagedInstancePoolConfig, ManagedPoolWiring]


def pool_args(
    options: dict[str, Any] | None = None,
    tags: dict[str, str] | None = None,
    requirements: ir.InstanceRequirements | None = None,
) -> Args:
    """The pool's input (`options`, `tags`: default team=ml) and its wiring."""
    input = ManagedInstancePoolConfig(
        **(options or {}), tags={"team": "ml"} if tags is None else tags
    )
    return input, ManagedPoolWiring(
        cluster_name="inference-cluster-5d6e7f8",
        vpc_id="vpc-0123456789abcdef0",
        subnet_ids=SUBNETS,
        requirements=requirements or globals()["requirements"](),
    )


def record(args: Args | None = None) -> Recording:
    return run_function(lambda: ManagedInstancesPool("inference-gpu-mi", *(args or pool_args())))


def test_registers_roles_profile_sg_and_provider():
    rec = record()
    assert rec.one(TYPE_TOKEN).name == "inference-gpu-mi"
    types = sorted(r.type for r in rec.resources if r.custom)
    assert types.count(ROLE) == 2 and types.count(ATTACH) == 2 and types.count(INLINE) == 1
    assert types.count(SG) == 1 and types.count(CP) == 1
    assert not rec.by_type("aws:autoscaling/group:Group")
    assert not rec.by_type("aws:ec2/launchTemplate:LaunchTemplate")


def test_capacity_provider_request_is_what_ecs_accepts():
    rec = record()
    cp = rec.one(CP)
    api = validate_shape(
        "ecs", "CreateCapacityProvider", create_capacity_provider_request(cp.name, cp.inputs)
    )
    assert api["cluster"] == "inference-cluster-5d6e7f8"
    template = api["managedInstancesProvider"]["instanceLaunchTemplate"]
    assert template["networkConfiguration"]["subnets"] == SUBNETS
    assert template["storageConfiguration"] == {"storageSizeGiB": 200}
    assert template["monitoring"] == "DETAILED"
    req = template["instanceRequirements"]
    assert req["allowedInstanceTypes"] == ["g6e.xlarge", "g6e.2xlarge", "g6e.4xlarge"]
    assert req["acceleratorNames"] == ["l40s"]
    assert req["vCpuCount"] == {"min": 4, "max": 16}
    assert api["managedInstancesProvider"]["propagateTags"] == "CAPACITY_PROVIDER"
    assert api["tags"] == [{"key": "team", "value": "ml"}]


def test_iam_is_least_privilege():
    rec = record()
    roles = {r.name: json.loads(r.inputs["assumeRolePolicy"]) for r in rec.by_type(ROLE)}
    assert roles["inference-gpu-mi-infra-role"]["Statement"][0]["Principal"] == {
        "Service": "ecs.amazonaws.com"
    }
    assert roles["inference-gpu-mi-instance-role"]["Statement"][0]["Principal"] == {
        "Service": "ec2.amazonaws.com"
    }
    attached = sorted(r.inputs["policyArn"].rsplit("/", 1)[-1] for r in rec.by_type(ATTACH))
    assert attached == sorted([mi.INFRASTRUCTURE_POLICY, mi.INSTANCE_POLICY])
    [inline] = rec.by_type(INLINE)
    [statement] = json.loads(inline.inputs["policy"])["Statement"]
    assert statement["Action"] == "iam:PassRole"
    assert ":role/inference-gpu-mi-instance-role-" in statement["Resource"]
    assert statement["Condition"] == {"StringEquals": {"iam:PassedToService": "ec2.amazonaws.com"}}


def test_provider_waits_for_its_grants():
    rec = record()
    deps = rec.one(CP).dependencies
    for kind in (ATTACH, INLINE):
        for r in rec.by_type(kind):
            assert r.urn in deps


def test_security_group_has_no_ingress_and_only_https_egress():
    sg = record().one(SG)
    assert sg.inputs.get("ingress", []) == []
    [egress] = sg.inputs["egress"]
    assert (egress["fromPort"], egress["toPort"], egress["protocol"]) == (443, 443, "tcp")


def test_optional_blocks():
    args = pool_args(
        options=dict(
            capacity_option_type="RESERVED",
            reservation_preference="RESERVATIONS_FIRST",
            scale_in_after_seconds=None,
            auto_repair=False,
            propagate_tags=False,
        ),
        tags={},
    )
    cp = record(args).one(CP)
    api = validate_shape(
        "ecs", "CreateCapacityProvider", create_capacity_provider_request(cp.name, cp.inputs)
    )
    provider = api["managedInstancesProvider"]
    assert "infrastructureOptimization" not in provider
    assert provider["autoRepairConfiguration"] == {"actionsStatus": "DISABLED"}
    assert provider["propagateTags"] == "NONE"
    assert provider["instanceLaunchTemplate"]["capacityReservations"] == {
        "reservationPreference": "RESERVATIONS_FIRST"
    }
    assert "tags" not in api


@pytest.mark.parametrize("arch", ["llama-3.2-1b", "mistral-7b", "qwen2.5-14b"])
def test_requirements_for_other_models_validate(arch):
    cp = record(pool_args(requirements=requirements(arch))).one(CP)
    validate_shape(
        "ecs", "CreateCapacityProvider", create_capacity_provider_request(cp.name, cp.inputs)
    )
