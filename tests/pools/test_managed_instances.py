"""ECS Managed Instances pools: the options they cannot take, their own options' limits, the
task definition parameters ECS refuses for MANAGED_INSTANCES, IAM documents, and the
CreateCapacityProvider request validated against botocore's ECS model and the pinned
pulumi-aws SDK's argument types."""

from __future__ import annotations

import inspect
import json
from typing import Any, cast

import pytest
from botocore.model import Shape
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError
from pydantic.alias_generators import to_camel

from ecs_inference.contracts import aws_limits
from ecs_inference.iam import assume_role_policy
from ecs_inference.pools import input as pools_input
from ecs_inference.pools import managed_instances as mi
from ecs_inference.pools.input import ManagedInstancePoolConfig
from ecs_inference.sizing import catalog
from ecs_inference.sizing import instance_types as ir
from tests.aws_shapes import ShapeError, named_shape, validate_shape
from tests.pools.conftest import managed_request
from tests.sizing.needs import memory_need


def metadata(shape: Shape) -> dict[str, Any]:
    """A shape's model constraints (min, max, pattern), typed for the checker."""
    return cast(dict[str, Any], shape.metadata)


ROLE = "arn:aws:iam::123456789012:role/inference-mi-infra-0a1b2c3"
PROFILE = "arn:aws:iam::123456789012:instance-profile/inference-mi-profile-4d5e6f7"


def _requirements() -> ir.InstanceRequirements:
    need = memory_need("llama-3.1-8b", max_model_len=8192, max_concurrent_sequences=16)
    choice, problems = ir.choose_pool_types("nvidia", [ir.GpuDemand("llama", need)])
    assert choice is not None and problems == []
    return ir.managed_instance_requirements(choice)


def option_problems(**fields: Any) -> list[tuple[str, str]]:
    """What the pool's input refuses of `fields`, as (camelCase key, message)."""
    try:
        ManagedInstancePoolConfig(**fields)
    except ValidationError as exc:
        return [(to_camel(str(e["loc"][0])), e["msg"]) for e in exc.errors()]
    return []


def _request(args: ManagedInstancePoolConfig) -> dict:
    return managed_request(
        args,
        _requirements(),
        role=ROLE,
        profile=PROFILE,
        subnets=["subnet-0123456789abcdef0", "subnet-0fedcba9876543210"],
        name="inference-gpu-mi-capacity",
        cluster="inference-cluster-5d6e7f8",
    )


# --------------------------------------------------------------------------------------------
# the tables are botocore's
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("shape", "values"),
    [
        ("ManagedInstancesMonitoringOptions", aws_limits.MANAGED_INSTANCES_MONITORING),
        ("CapacityOptionType", aws_limits.MANAGED_INSTANCES_CAPACITY_OPTIONS),
        ("CapacityReservationPreference", aws_limits.MANAGED_INSTANCES_RESERVATION_PREFERENCES),
        ("PropagateMITags", ("CAPACITY_PROVIDER", "NONE")),
        ("Compatibility", (mi.COMPATIBILITY, "EC2", "FARGATE", "EXTERNAL")),
    ],
)
def test_enums_match_botocore(shape, values):
    found: Any = named_shape("ecs", shape)  # botocore's cached properties defeat typing
    assert set(found.enum) == set(values)


def test_storage_minimum_is_botocores():
    meta = metadata(named_shape("ecs", "TaskVolumeStorageGiB"))
    assert meta["min"] == aws_limits.MANAGED_INSTANCES_STORAGE_GIB_RANGE[0]


def test_pulumi_sdk_has_every_argument_we_set():
    """pulumi-aws 7.51's input types carry every managedInstancesProvider member the request
    builder sets, so the component can express it (botocore has members the SDK lacks, such as
    fipsEnabled; those are not used)."""
    import pulumi_aws as aws

    def params(cls) -> set[str]:
        return set(inspect.signature(cls.__init__).parameters) - {"self"}

    assert {
        "infrastructure_role_arn",
        "instance_launch_template",
        "propagate_tags",
        "infrastructure_optimization",
        "auto_repair_configuration",
    } <= params(aws.ecs.CapacityProviderManagedInstancesProviderArgs)
    assert {
        "ec2_instance_profile_arn",
        "network_configuration",
        "storage_configuration",
        "monitoring",
        "capacity_option_type",
        "capacity_reservations",
        "instance_requirements",
    } <= params(aws.ecs.CapacityProviderManagedInstancesProviderInstanceLaunchTemplateArgs)
    req = params(
        aws.ecs.CapacityProviderManagedInstancesProviderInstanceLaunchTemplateInstanceRequirementsArgs
    )
    assert {
        "vcpu_count",
        "memory_mib",
        "allowed_instance_types",
        "accelerator_manufacturers",
        "accelerator_names",
        "accelerator_types",
        "accelerator_count",
        "accelerator_total_memory_mib",
        "bare_metal",
        "burstable_performance",
    } <= req
    assert "cluster" in params(aws.ecs.CapacityProviderArgs)


# --------------------------------------------------------------------------------------------
# options only an ASG pool understands
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("key", sorted(pools_input.UNSUPPORTED_OPTIONS))
def test_each_unsupported_option_is_named_with_a_reason(key):
    [(where, message)] = pools_input.unsupported_option_problems({key: 1, "storageGib": 100})
    assert where == key
    assert message.startswith("not supported on a Managed Instances pool: ")
    assert len(message) > len("not supported on a Managed Instances pool: ") + 20


def test_absent_options_are_not_problems():
    assert pools_input.unsupported_option_problems({"warmPool": None, "storageGib": 100}) == []


def test_warm_pool_message_says_what_to_do():
    [(_, message)] = pools_input.unsupported_option_problems({"warmPool": {"minSize": 1}})
    assert "scaleInAfterSeconds" in message


# --------------------------------------------------------------------------------------------
# the pool's own options
# --------------------------------------------------------------------------------------------


def test_defaults_are_valid():
    assert option_problems() == []


@pytest.mark.parametrize(
    ("fields", "key", "fragment"),
    [
        (dict(storage_gib=0), "storageGib", "greater than or equal to 1"),
        (dict(storage_gib=20_000), "storageGib", "16384"),
        (dict(monitoring="FULL"), "monitoring", "BASIC' or 'DETAILED"),
        (
            dict(capacity_option_type="PREEMPTIBLE"),
            "capacityOptionType",
            "RESERVED",
        ),
        (
            dict(capacity_option_type="RESERVED"),
            "reservationPreference",
            "needs a reservation preference",
        ),
        (
            dict(reservation_preference="RESERVATIONS_FIRST"),
            "reservationPreference",
            "only with capacityOptionType RESERVED",
        ),
        (
            dict(
                capacity_option_type="RESERVED",
                reservation_preference="RESERVATIONS_FIRST",
                reservation_group_arn="arn:aws:resource-groups:us-east-1:123456789012:group/g",
            ),
            "reservationGroupArn",
            "RESERVATIONS_ONLY",
        ),
        (dict(scale_in_after_seconds=-2), "scaleInAfterSeconds", "-1"),
        (dict(scale_in_after_seconds=3601), "scaleInAfterSeconds", "3600"),
    ],
)
def test_option_problems(fields, key, fragment):
    problems = option_problems(**fields)
    assert any(k == key and fragment in m for k, m in problems), problems


@pytest.mark.parametrize(("tp", "refused"), [(1, False), (2, True), (8, True)])
def test_tensor_parallel_needs_shared_memory(tp, refused):
    problems = mi.model_problems(tp)
    assert bool(problems) is refused
    if refused:
        assert "sharedMemorySize" in problems[0][1] and "ASG pool" in problems[0][1]


# --------------------------------------------------------------------------------------------
# task definitions
# --------------------------------------------------------------------------------------------


def _task(**container) -> dict:
    return {
        "family": "llama",
        "networkMode": "awsvpc",
        "requiresCompatibilities": [mi.COMPATIBILITY],
        "containerDefinitions": [
            {"name": "vllm", "image": "vllm", "essential": True, **container},
        ],
    }


def test_a_clean_gpu_task_passes_and_is_a_valid_request():
    task = _task(resourceRequirements=[{"type": "GPU", "value": "1"}])
    assert mi.task_definition_problems(task) == []
    validate_shape("ecs", "RegisterTaskDefinition", task)


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        ({"linuxParameters": {"sharedMemorySize": 2048}}, "linuxParameters.sharedMemorySize"),
        ({"linuxParameters": {"tmpfs": [{"containerPath": "/t", "size": 64}]}}, "tmpfs"),
        ({"dockerLabels": {"a": "b"}}, "dockerLabels"),
        ({"hostname": "x"}, "hostname"),
    ],
)
def test_container_parameters_ecs_refuses(change, fragment):
    problems = mi.task_definition_problems(_task(**change))
    assert any(fragment in p for p in problems), problems


def test_task_level_parameters_and_json_container_definitions():
    task = _task()
    task["containerDefinitions"] = json.dumps(
        [{"name": "n", "image": "i", "linuxParameters": {"sharedMemorySize": 1}}]
    )
    task["ipcMode"] = "host"
    task["networkMode"] = "bridge"
    task["volumes"] = [{"name": "w", "host": {"sourcePath": "/data"}}]
    problems = mi.task_definition_problems(task)
    assert "ipcMode is not valid on Managed Instances" in problems
    assert "volumes[].host.sourcePath is not valid on Managed Instances" in problems
    assert any("sharedMemorySize" in p for p in problems)
    assert any("networkMode 'bridge'" in p for p in problems)


def test_empty_values_are_not_flagged():
    task = _task(linuxParameters={"sharedMemorySize": None, "devices": []})
    task["volumes"] = [{"name": "scratch"}]
    assert mi.task_definition_problems(task) == []


# --------------------------------------------------------------------------------------------
# IAM
# --------------------------------------------------------------------------------------------


def test_trust_policies():
    for principal in ("ecs.amazonaws.com", "ec2.amazonaws.com", "lambda.amazonaws.com"):
        [statement] = json.loads(assume_role_policy(principal))["Statement"]
        assert statement == {
            "Effect": "Allow",
            "Principal": {"Service": principal},
            "Action": "sts:AssumeRole",
        }


def test_pass_role_is_scoped_to_the_instance_role():
    arn = "arn:aws:iam::123456789012:role/inference-gpu-mi-instance-role-1a2b3c4"
    doc = json.loads(mi.pass_instance_role_policy(arn))
    [statement] = doc["Statement"]
    assert statement["Action"] == "iam:PassRole"
    assert statement["Resource"] == arn
    assert statement["Condition"] == {"StringEquals": {"iam:PassedToService": "ec2.amazonaws.com"}}


# --------------------------------------------------------------------------------------------
# the request
# --------------------------------------------------------------------------------------------


def test_request_is_what_ecs_accepts():
    api = validate_shape(
        "ecs", "CreateCapacityProvider", _request(ManagedInstancePoolConfig(tags={"team": "ml"}))
    )
    provider = api["managedInstancesProvider"]
    template = provider["instanceLaunchTemplate"]
    assert template["storageConfiguration"] == {"storageSizeGiB": 200}
    assert template["monitoring"] == "DETAILED"
    assert template["capacityOptionType"] == "ON_DEMAND"
    assert template["instanceRequirements"]["acceleratorNames"] == ["l40s"]
    assert provider["propagateTags"] == "CAPACITY_PROVIDER"
    assert provider["infrastructureOptimization"] == {"scaleInAfter": 1800}
    assert api["cluster"] == "inference-cluster-5d6e7f8"
    assert api["tags"] == [{"key": "team", "value": "ml"}]


def test_reserved_request():
    args = ManagedInstancePoolConfig(
        capacity_option_type="RESERVED",
        reservation_preference="RESERVATIONS_ONLY",
        reservation_group_arn="arn:aws:resource-groups:us-east-1:123456789012:group/gpus",
    )
    api = validate_shape("ecs", "CreateCapacityProvider", _request(args))
    assert api["managedInstancesProvider"]["instanceLaunchTemplate"]["capacityReservations"] == {
        "reservationPreference": "RESERVATIONS_ONLY",
        "reservationGroupArn": "arn:aws:resource-groups:us-east-1:123456789012:group/gpus",
    }


def test_request_shape_check_catches_a_bad_enum():
    request = _request(ManagedInstancePoolConfig())
    request["managedInstancesProvider"]["instanceLaunchTemplate"]["monitoring"] = "FULL"
    with pytest.raises(ShapeError, match="FULL"):
        validate_shape("ecs", "CreateCapacityProvider", request)


@settings(max_examples=60, deadline=None)
@given(
    storage=st.integers(-5, 20_000),
    monitoring=st.sampled_from(["BASIC", "DETAILED", "NONE"]),
    option=st.sampled_from(["ON_DEMAND", "SPOT", "RESERVED"]),
    preference=st.sampled_from([None, *aws_limits.MANAGED_INSTANCES_RESERVATION_PREFERENCES]),
    scale_in=st.one_of(st.none(), st.integers(-3, 4000)),
    repair=st.booleans(),
    tags=st.booleans(),
)
def test_accepted_options_always_make_a_valid_request(
    storage, monitoring, option, preference, scale_in, repair, tags
):
    fields = dict(
        storage_gib=storage,
        monitoring=monitoring,
        capacity_option_type=option,
        reservation_preference=preference,
        scale_in_after_seconds=scale_in,
        auto_repair=repair,
        propagate_tags=tags,
    )
    if option_problems(**fields):
        return
    args = ManagedInstancePoolConfig(**fields)
    validate_shape("ecs", "CreateCapacityProvider", _request(args))
    assert 1 <= storage <= 16_384 and monitoring != "NONE"


def test_every_catalog_gpu_choice_makes_a_valid_request():
    for inst in catalog.gpu_instances():
        need = memory_need("llama-3.2-1b", max_model_len=2048)
        choice, problems = ir.choose_pool_types("nvidia", [ir.GpuDemand("m", need)], [inst.name])
        assert choice is not None, problems
        request = managed_request(
            ManagedInstancePoolConfig(),
            ir.managed_instance_requirements(choice),
            role=ROLE,
            profile=PROFILE,
            subnets=["subnet-0123456789abcdef0"],
        )
        validate_shape("ecs", "CreateCapacityProvider", request)
