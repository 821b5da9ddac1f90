"""Capacity beyond one fixed ASG, end to end: several instance types and Spot on `gpuPools`,
ECS Managed Instances on `managedInstancePools`. The prod variant runs whole under the mock
runtime and every new request validates against botocore; bad combinations fail with one issue
naming the config path; properties hold over the pool config space."""

from __future__ import annotations

import base64
import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ecs_inference.config.issues import ConfigError
from ecs_inference.contracts import aws_limits
from ecs_inference.pools import managed_instances
from ecs_inference.sizing import catalog
from tests.aws_shapes import register_task_definition_request, validate_shape
from tests.stack_config import issues_of, mutate, plan_of, pool_choices, reference
from tools.preview import project_name, read_stack_file
from tools.recording import Recording, run_program, stack_config_values

STACK = "prod"

ROOT = Path(__file__).resolve().parents[2]
ASG = "aws:autoscaling/group:Group"
LT = "aws:ec2/launchTemplate:LaunchTemplate"
CP = "aws:ecs/capacityProvider:CapacityProvider"
TD = "aws:ecs/taskDefinition:TaskDefinition"
CCP = "aws:ecs/clusterCapacityProviders:ClusterCapacityProviders"


@cache
def recorded() -> Recording:
    settings_ = read_stack_file(ROOT, "prod")
    return run_program(
        ROOT, project=project_name(ROOT), stack="prod", config=stack_config_values(settings_)
    )


def named(rec: Recording, type_: str, name: str):
    [found] = [r for r in rec.by_type(type_) if r.name == name]
    return found


# --------------------------------------------------------------------------------------------
# the prod variant: a Managed Instances GPU pool and a mixed On-Demand/Spot pool
# --------------------------------------------------------------------------------------------


def test_prod_plan_uses_both_new_kinds_of_pool():
    plan = plan_of(reference("prod"), STACK)
    choices = pool_choices(reference("prod"), STACK)
    managed = plan.managed_instance_pools["l40s"]
    assert choices["l40s"].types.source == "sizing"
    assert managed.requirements.allowed_instance_types[0] == "g6e.xlarge"
    mixed = plan.gpu_pools["l40s-4x"]
    assert len(choices["l40s-4x"].types.chosen) > 1
    assert mixed.input.types == choices["l40s-4x"].types.chosen
    assert mixed.input.mixed and mixed.input.uses_spot
    # the decisions explain the choice and the Spot trade-off
    pool_lines = "\n".join(plan.decisions["pool l40s-4x"])
    assert "types that fit every model" in pool_lines and "chosen (from sizing" in pool_lines
    model_lines = "\n".join(plan.decisions["model qwen-32b"])
    assert "120 s notice" in model_lines and "On-Demand instances" in model_lines
    llama = plan.models["llama-8b"]
    assert llama.compatibility == "MANAGED_INSTANCES" and llama.shm_size_mib == 0
    assert any("no group maximum" in line for line in plan.decisions["model llama-8b"])


def test_managed_instances_pool_request_and_task():
    rec = recorded()
    cp = named(rec, CP, "inference-l40s-capacity")
    request = {k: v for k, v in cp.inputs.items() if k not in ("tags", "tagsAll")}
    request["name"] = "inference-l40s-capacity-1a2b3c4"
    api = validate_shape("ecs", "CreateCapacityProvider", request)
    assert api["cluster"]
    allowed = api["managedInstancesProvider"]["instanceLaunchTemplate"]["instanceRequirements"][
        "allowedInstanceTypes"
    ]
    assert allowed[0] == "g6e.xlarge" and not any(t.startswith("p5") for t in allowed)
    # the cluster association lists the ASG pools but not this cluster-scoped provider, which
    # PutClusterCapacityProviders refuses
    association = rec.one(CCP).inputs["capacityProviders"]
    plan = plan_of(reference("prod"), STACK)
    asg_pools = [*plan.gpu_pools, *plan.neuron_pools]
    assert len(association) == len(asg_pools) + 2  # + FARGATE(_SPOT)
    assert cp.outputs["name"] not in association
    task = named(rec, TD, "inference-llama-8b-task")
    assert task.inputs["requiresCompatibilities"] == ["MANAGED_INSTANCES"]
    task_request = register_task_definition_request(task.inputs)
    assert managed_instances.task_definition_problems(task_request) == []
    validate_shape("ecs", "RegisterTaskDefinition", task_request)


def _create_asg_request(inputs: dict[str, Any]) -> dict[str, Any]:
    """CreateAutoScalingGroup from a recorded aws.autoscaling.Group (the members this stack
    sets; the provider joins the subnet list and names overrides `override`)."""
    policy = inputs["mixedInstancesPolicy"]
    template = policy["launchTemplate"]
    spec = template["launchTemplateSpecification"]
    return {
        "AutoScalingGroupName": "inference-l40s-4x-asg-1a2b3c4",
        "MinSize": inputs["minSize"],
        "MaxSize": inputs["maxSize"],
        "VPCZoneIdentifier": ",".join(inputs["vpcZoneIdentifiers"]),
        "NewInstancesProtectedFromScaleIn": inputs["protectFromScaleIn"],
        "CapacityRebalance": inputs["capacityRebalance"],
        "MixedInstancesPolicy": {
            "LaunchTemplate": {
                "LaunchTemplateSpecification": {
                    "LaunchTemplateId": spec["launchTemplateId"],
                    "Version": spec["version"],
                },
                "Overrides": [{"InstanceType": o["instanceType"]} for o in template["overrides"]],
            },
            "InstancesDistribution": {
                k[0].upper() + k[1:]: v for k, v in policy["instancesDistribution"].items()
            },
        },
    }


def test_mixed_pool_request_user_data_and_no_warm_pool():
    rec = recorded()
    asg = named(rec, ASG, "inference-l40s-4x-asg")
    assert "launchTemplate" not in asg.inputs and "warmPool" not in asg.inputs
    api = validate_shape("autoscaling", "CreateAutoScalingGroup", _create_asg_request(asg.inputs))
    distribution = api["MixedInstancesPolicy"]["InstancesDistribution"]
    assert distribution["OnDemandBaseCapacity"] == 2
    assert distribution["OnDemandPercentageAboveBaseCapacity"] == 0
    assert distribution["SpotAllocationStrategy"] in aws_limits.ASG_SPOT_ALLOCATION_STRATEGIES
    assert api["CapacityRebalance"] is True
    plan = plan_of(reference("prod"), STACK)
    overrides = api["MixedInstancesPolicy"]["LaunchTemplate"]["Overrides"]
    assert [o["InstanceType"] for o in overrides] == list(plan.gpu_pools["l40s-4x"].input.types)
    lt = named(rec, LT, "inference-l40s-4x-lt")
    assert "instanceType" not in lt.inputs  # the overrides name the types
    user_data = base64.b64decode(lt.inputs["userData"]).decode()
    assert "ECS_ENABLE_SPOT_INSTANCE_DRAINING=true" in user_data
    # a single-type pool keeps its plain launch template, warm pool and no Spot draining
    single = named(rec, ASG, "inference-l40s-8x-asg")
    assert "mixedInstancesPolicy" not in single.inputs and single.inputs["warmPool"]
    single_lt = named(rec, LT, "inference-l40s-8x-lt")
    assert single_lt.inputs["instanceType"] == "g6e.48xlarge"
    assert "SPOT" not in base64.b64decode(single_lt.inputs["userData"]).decode()


# --------------------------------------------------------------------------------------------
# bad combinations: one issue each, naming the path
# --------------------------------------------------------------------------------------------

MIXED = "gpuPools.l40s-4x"
MANAGED = "managedInstancePools.l40s"


@pytest.mark.parametrize(
    ("edits", "path", "fragment"),
    [
        # AWS: no warm pool on a group with a mixed instances policy or Spot
        ({f"{MIXED}.warmPool": {"minSize": 1}}, f"platform.{MIXED}.warmPool", "warm pool"),
        (
            {
                f"{MIXED}.warmPool": {"minSize": 1},
                f"{MIXED}.instanceTypes": ["g6e.12xlarge"],
            },
            f"platform.{MIXED}.warmPool",
            "Spot Instances",
        ),
        # types that disagree on the layout a model needs: the pool must be split
        (
            {
                f"{MIXED}.instanceTypes": ["g6e.12xlarge", "p4de.24xlarge"],
                f"{MIXED}.onDemandPercentageAboveBaseCapacity": 100,
            },
            f"platform.{MIXED}.instanceTypes",
            "split the pool into [g6e.12xlarge] (qwen-32b tensor parallel 4",
        ),
        (
            {f"{MIXED}.instanceTypes": ["g6e.12xlarge", "inf2.48xlarge"]},
            f"platform.{MIXED}.instanceTypes[1]",
            "Inferentia2 devices",
        ),
        (
            {f"{MIXED}.spotAllocationStrategy": "lowest-price"},
            f"platform.{MIXED}.spotAllocationStrategy",
            "most often reclaimed",
        ),
        (
            {f"{MIXED}.instanceType": "g6e.12xlarge", f"{MIXED}.instanceTypes": ["g6e.24xlarge"]},
            f"platform.{MIXED}",
            "not both",
        ),
        # Managed Instances with options it does not support
        ({f"{MANAGED}.warmPool": {"minSize": 1}}, f"platform.{MANAGED}.warmPool", "no warm pool"),
        ({f"{MANAGED}.maxSize": 4}, f"platform.{MANAGED}.maxSize", "no Auto Scaling group"),
        ({f"{MANAGED}.amiId": "ami-0123456789abcdef0"}, f"platform.{MANAGED}.amiId", "image"),
        ({f"{MANAGED}.ssmAccess": True}, f"platform.{MANAGED}.ssmAccess", "Session Manager"),
        (
            {f"{MANAGED}.onDemandPercentageAboveBaseCapacity": 50},
            f"platform.{MANAGED}.onDemandPercentageAboveBaseCapacity",
            "capacityOptionType",
        ),
        (
            {f"{MANAGED}.capacityOptionType": "RESERVED"},
            f"platform.{MANAGED}.reservationPreference",
            "RESERVED needs",
        ),
        (
            {f"{MANAGED}.scaleInAfterSeconds": 7200},
            f"platform.{MANAGED}.scaleInAfterSeconds",
            "3600",
        ),
        # a multi-GPU model on Managed Instances: no /dev/shm sizing there
        ({"models.qwen-32b.pool": "l40s"}, "platform.models.qwen-32b.pool", "sharedMemorySize"),
        # pool names are unique across the three sections
        (
            {"gpuPools.l40s": {"instanceType": "g6e.xlarge"}},
            "platform.managedInstancePools.l40s",
            "same name",
        ),
    ],
)
def test_bad_combinations_name_the_path(edits, path, fragment):
    raw = reference("prod")
    for key, value in edits.items():
        raw = mutate(raw, key, value)
    found = issues_of(raw, STACK)
    assert any(i.path == path and fragment in i.message for i in found), found
    assert all(i.path.startswith("platform.") for i in found)


def test_single_instance_type_misfit_is_still_the_models_problem():
    raw = mutate(reference("prod"), f"{MIXED}.instanceType", "g6.xlarge")
    raw = mutate(raw, f"{MIXED}.onDemandPercentageAboveBaseCapacity", 100)
    found = issues_of(raw, STACK)
    assert [i.path for i in found] == ["platform.models.qwen-32b"]
    assert "cheapest catalog types that fit" in found[0].message


def test_warm_pool_with_types_from_sizing_keeps_only_the_cheapest():
    raw = mutate(reference("prod"), f"{MIXED}.onDemandPercentageAboveBaseCapacity", 100)
    raw = mutate(raw, f"{MIXED}.warmPool", {"minSize": 1})
    pool = plan_of(raw, STACK).gpu_pools["l40s-4x"].input
    assert pool.types == ("g6e.12xlarge",)
    assert not pool.mixed and pool.warm_pool is not None


def test_a_pool_without_models_or_types_says_what_to_do():
    raw = mutate(reference("prod"), "gpuPools.spare", {"maxSize": 2})
    found = issues_of(raw, STACK)
    assert "platform.gpuPools.spare.instanceTypes" in [i.path for i in found], found


# --------------------------------------------------------------------------------------------
# properties over the pool config space
# --------------------------------------------------------------------------------------------

_GPU_TYPES = sorted(i.name for i in catalog.gpu_instances())


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    listed=st.one_of(
        st.none(), st.lists(st.sampled_from(_GPU_TYPES), min_size=1, max_size=4, unique=True)
    ),
    excluded=st.lists(st.sampled_from(["g5.*", "g6.*", "p4*", "p5*"]), max_size=2),
    base=st.integers(0, 6),
    pct=st.sampled_from([0, 25, 100]),
    strategy=st.sampled_from(aws_limits.ASG_SPOT_ALLOCATION_STRATEGIES),
    warm=st.booleans(),
    managed_types=st.one_of(
        st.none(), st.lists(st.sampled_from(_GPU_TYPES), min_size=1, max_size=3, unique=True)
    ),
)
def test_pool_config_space(listed, excluded, base, pct, strategy, warm, managed_types):
    raw = mutate(reference("prod"), f"{MIXED}.onDemandBaseCapacity", base)
    raw = mutate(raw, f"{MIXED}.onDemandPercentageAboveBaseCapacity", pct)
    raw = mutate(raw, f"{MIXED}.spotAllocationStrategy", strategy)
    raw = mutate(raw, f"{MIXED}.excludedInstanceTypes", excluded)
    if listed is not None:
        raw = mutate(raw, f"{MIXED}.instanceTypes", listed)
    if warm:
        raw = mutate(raw, f"{MIXED}.warmPool", {"minSize": 1})
    if managed_types is not None:
        raw = mutate(raw, f"{MANAGED}.instanceTypes", managed_types)
    try:
        plan = plan_of(raw, STACK)
    except ConfigError as exc:
        # every failure names a config path the user can edit, never a traceback
        assert exc.issues and all(i.path.startswith("platform.") for i in exc.issues)
        return
    spec = plan.gpu_pools["l40s-4x"].input
    # AWS's rule holds for every accepted config: no warm pool with Spot or several types
    if spec.warm_pool is not None:
        assert not spec.mixed and len(spec.types) == 1
    assert strategy != "lowest-price" or not spec.uses_spot
    # one layout per model on every chosen type, and the task places on each of them
    for pool in pool_choices(raw, STACK).values():
        # one GPU (or Neuron chip) model per pool: seed 000's "one ASG per GPU type"
        assert len({catalog.instance(n).accelerator_name for n in pool.types.chosen}) == 1
        for model, fits in pool.types.fits.items():
            assert {f.layout for f in fits.values()} == {pool.types.layouts[model]}
            m = plan.models[model]
            for f in fits.values():
                per = f.tasks_per_instance
                assert m.task_cpu * per <= f.instance.vcpu * 1024
                assert m.task_memory_mib * per <= f.instance.memory_gib * 1024
    managed = plan.managed_instance_pools["l40s"]
    request = {
        "name": "p",
        "cluster": "c",
        "managedInstancesProvider": {
            "infrastructureRoleArn": "arn:aws:iam::123456789012:role/r",
            "instanceLaunchTemplate": {
                "ec2InstanceProfileArn": "arn:aws:iam::123456789012:instance-profile/p",
                "networkConfiguration": {"subnets": ["subnet-0123456789abcdef0"]},
                "instanceRequirements": managed.requirements.to_api(),
            },
        },
    }
    validate_shape("ecs", "CreateCapacityProvider", request)
    json.dumps(plan.decisions)  # decisions are exportable
