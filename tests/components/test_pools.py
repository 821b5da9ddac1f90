"""GpuAsgPool, InferentiaPool and the cluster's capacity-provider association.

Pure parts (argument checks, ECS agent settings, user data) are tested directly; the components
run under the recording mock runtime and the tests assert on the inputs the engine would receive
(camelCase keys, numbers as floats).
"""

from __future__ import annotations

import base64
import json
from dataclasses import replace
from typing import Any

import pytest

from ecs_inference.capacity.asg_pool import (
    ECS_INSTANCE_POLICY,
    SSM_INSTANCE_POLICY,
    GpuAsgPool,
    GpuAsgPoolArgs,
    InferentiaPool,
    InferentiaPoolArgs,
    PoolArgs,
    PoolArgumentError,
    WarmPoolArgs,
    ecs_agent_settings,
    ecs_user_data,
    encode_user_data,
)
from ecs_inference.cluster import Cluster, ClusterArgs
from ecs_inference.sizing import catalog
from ecs_inference.specs.pool import pool_problems
from tests.mock_runtime import refused_before_registering
from tools import recording
from tools.recording import Recording, run_function

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


# --------------------------------------------------------------------------------------------
# pure: argument checks
# --------------------------------------------------------------------------------------------


def test_valid_args_have_no_problems() -> None:
    assert pool_problems("gpu-l40s", gpu_args(), "nvidia") == []
    assert pool_problems("neuron", neuron_args(instance_type="trn1.2xlarge"), "neuron") == []
    warm = WarmPoolArgs(min_size=2, max_group_prepared_capacity=4, state="Running")
    assert pool_problems("gpu", gpu_args(warm_pool=warm), "nvidia") == []


@pytest.mark.parametrize(
    ("name", "args", "accelerator", "key", "fragment"),
    [
        ("neuron", neuron_args(instance_type="g6e.xlarge"), "neuron", "instanceType",
         "g6e.xlarge has NVIDIA GPU accelerators, but an InferentiaPool needs"),
        ("gpu", gpu_args(instance_type="inf2.xlarge"), "nvidia", "instanceType",
         "put it in an InferentiaPool instead"),
        ("gpu", gpu_args(instance_type="g6e.xlarg"), "nvidia", "instanceType",
         "did you mean g6e.xlarge"),
        ("gpu", gpu_args(min_size=3, max_size=2), "nvidia", "minSize",
         "minSize (3) must not exceed maxSize (2)"),
        ("gpu", gpu_args(max_size=0), "nvidia", "maxSize", "between 1 and 1000"),
        ("gpu", gpu_args(root_volume_gib=20), "nvidia", "rootVolumeGib", "root snapshot is 30"),
        ("gpu", gpu_args(root_volume_gib=30, root_volume_iops=16000), "nvidia",
         "rootVolumeIops", "needs at least 32 GiB"),
        ("gpu", gpu_args(root_volume_iops=3000, root_volume_throughput=1000), "nvidia",
         "rootVolumeThroughput", "needs at least 4000 IOPS"),
        ("gpu", gpu_args(root_volume_throughput=2000), "nvidia", "rootVolumeThroughput",
         "between 125 and 1000"),
        ("gpu", gpu_args(target_capacity_percent=0), "nvidia", "targetCapacityPercent",
         "between 1 and 100"),
        ("gpu", gpu_args(ami_id="ubuntu"), "nvidia", "amiId", "must be an AMI id"),
        ("gpu", gpu_args(warm_pool=WarmPoolArgs(reuse_on_scale_in=True)), "nvidia",
         "warmPool.reuseOnScaleIn", "ECS does not allow"),
        ("gpu", gpu_args(warm_pool=WarmPoolArgs(state="Hibernated")), "nvidia",
         "warmPool.state", "use Stopped"),
        ("gpu", gpu_args(warm_pool=WarmPoolArgs(min_size=3, max_group_prepared_capacity=2)),
         "nvidia", "warmPool.maxGroupPreparedCapacity", "below the warm pool minSize (3)"),
        ("ecs-gpu", gpu_args(), "nvidia", "name", "ECS rejects"),
        ("FargatePool", gpu_args(), "nvidia", "name", "ECS rejects"),
        ("gpu pool", gpu_args(), "nvidia", "name", "letters, digits"),
    ],
)  # fmt: skip
def test_problems_name_the_key_and_say_why(
    name: str, args: PoolArgs, accelerator: catalog.Accelerator, key: str, fragment: str
) -> None:
    problems = pool_problems(name, args, accelerator)
    assert [k for k, _ in problems] == [key]
    assert fragment in problems[0][1]


def test_all_problems_reported_at_once() -> None:
    args = gpu_args(instance_type="inf2.xlarge", min_size=5, max_size=1, root_volume_gib=10)
    keys = [k for k, _ in pool_problems("gpu", args, "nvidia")]
    assert keys == ["instanceType", "minSize", "rootVolumeGib"]


# --------------------------------------------------------------------------------------------
# pure: ECS agent settings and user data
# --------------------------------------------------------------------------------------------


def test_gpu_agent_settings() -> None:
    settings = ecs_agent_settings("prod-ecs", accelerator="nvidia", warm_pool=False)
    assert settings == {
        "ECS_CLUSTER": "prod-ecs",
        "ECS_ENABLE_GPU_SUPPORT": "true",
        "ECS_IMAGE_PULL_BEHAVIOR": "prefer-cached",
        "ECS_IMAGE_MINIMUM_CLEANUP_AGE": "24h",
        "ECS_IMAGE_CLEANUP_INTERVAL": "1h",
        "ECS_CONTAINER_STOP_TIMEOUT": "120s",
        "ECS_ENABLE_TASK_IAM_ROLE": "true",
        "ECS_AWSVPC_BLOCK_IMDS": "true",
        "ECS_AVAILABLE_LOGGING_DRIVERS": '["json-file","awslogs"]',
        "ECS_ENABLE_UNTRACKED_IMAGE_CLEANUP": "false",
    }


def test_neuron_settings_have_no_gpu_flag_and_warm_pool_adds_check() -> None:
    settings = ecs_agent_settings(
        "c",
        accelerator="neuron",
        warm_pool=True,
        container_stop_timeout_seconds=300,
        image_minimum_cleanup_age_hours=72,
    )
    assert "ECS_ENABLE_GPU_SUPPORT" not in settings
    assert settings["ECS_WARM_POOLS_CHECK"] == "true"
    assert settings["ECS_CONTAINER_STOP_TIMEOUT"] == "300s"
    assert settings["ECS_IMAGE_MINIMUM_CLEANUP_AGE"] == "72h"
    assert "ECS_WARM_POOLS_CHECK" not in ecs_agent_settings(
        "c", accelerator="neuron", warm_pool=False
    )


def test_user_data_is_a_script_writing_ecs_config() -> None:
    script = ecs_user_data("prod-ecs", accelerator="nvidia", warm_pool=True)
    assert script.startswith("#!/bin/bash\nset -euo pipefail\n")
    # quoted heredoc: nothing in the values is expanded by the shell
    assert "cat <<'EOF' >> /etc/ecs/ecs.config\n" in script
    assert ecs_config(script) == ecs_agent_settings(
        "prod-ecs", accelerator="nvidia", warm_pool=True
    )
    assert base64.b64decode(encode_user_data(script)).decode() == script


@pytest.mark.parametrize("bad", ["", "a b", "c\n", "x\nEOF\nrm -rf /", "c$(id)", "n" * 256])
def test_cluster_name_is_validated(bad: str) -> None:
    with pytest.raises(ValueError, match="ECS cluster name"):
        ecs_user_data(bad, accelerator="nvidia", warm_pool=False)


# --------------------------------------------------------------------------------------------
# components under mocks
# --------------------------------------------------------------------------------------------


def test_wrong_kind_fails_before_any_resource() -> None:
    error, rec = refused_before_registering(
        lambda: InferentiaPool("neuron", neuron_args(instance_type="g6e.xlarge")),
        PoolArgumentError,
    )
    assert rec.invokes == []
    assert error.problems[0][0] == "instanceType"
    assert "g6e.xlarge" in str(error) and "GpuAsgPool" in str(error)


@pytest.mark.parametrize(
    ("factory", "args", "parameter", "token"),
    [
        (GpuAsgPool, gpu_args(), catalog.ECS_GPU_AMI_SSM_PARAMETER, "GpuAsgPool"),
        (InferentiaPool, neuron_args(), catalog.ECS_NEURON_AMI_SSM_PARAMETER, "InferentiaPool"),
    ],
)
def test_ami_from_the_pool_kinds_ssm_parameter(
    ssm_calls: list[str], factory: type, args: PoolArgs, parameter: str, token: str
) -> None:
    rec = run_function(lambda: factory("pool", args))
    assert "aws:ssm/getParameter:getParameter" in rec.invokes
    assert ssm_calls == [parameter]
    image_id = rec.one(LT).inputs["imageId"]
    # the recording mock answers each parameter with its own fake AMI id
    assert image_id.startswith("ami-")
    assert rec.one(f"ecs-inference:compute:{token}").type.endswith(token)
    other = (
        catalog.ECS_NEURON_AMI_SSM_PARAMETER
        if parameter == catalog.ECS_GPU_AMI_SSM_PARAMETER
        else catalog.ECS_GPU_AMI_SSM_PARAMETER
    )
    assert other not in ssm_calls


def test_gpu_and_neuron_pools_get_different_amis() -> None:
    gpu = run_function(lambda: GpuAsgPool("gpu", gpu_args())).one(LT).inputs["imageId"]
    neuron = run_function(lambda: InferentiaPool("nrn", neuron_args())).one(LT).inputs["imageId"]
    assert gpu != neuron


def test_explicit_ami_skips_the_ssm_lookup(ssm_calls: list[str]) -> None:
    rec = run_function(lambda: GpuAsgPool("gpu", gpu_args(ami_id="ami-0123456789abcdef0")))
    assert rec.one(LT).inputs["imageId"] == "ami-0123456789abcdef0"
    assert ssm_calls == []


def test_launch_template_hardening_and_root_volume() -> None:
    rec = run_function(lambda: GpuAsgPool("gpu", gpu_args(root_volume_gib=300)))
    lt = rec.one(LT).inputs
    assert lt["instanceType"] == "g6e.xlarge"
    assert lt["metadataOptions"] == {
        "httpEndpoint": "enabled",
        "httpTokens": "required",
        "httpPutResponseHopLimit": 1.0,
        "instanceMetadataTags": "disabled",
    }
    assert lt["blockDeviceMappings"] == [
        {
            "deviceName": "/dev/xvda",
            "ebs": {
                "volumeSize": 300.0,
                "volumeType": "gp3",
                "iops": 6000.0,
                "throughput": 1000.0,
                "encrypted": "true",
                "deleteOnTermination": "true",
            },
        }
    ]
    assert lt["monitoring"] == {"enabled": True}
    assert lt["updateDefaultVersion"] is True
    launch_template = rec.one(LT)
    sg, profile = rec.one(SG), rec.one("aws:iam/instanceProfile:InstanceProfile")
    assert len(lt["vpcSecurityGroupIds"]) == 1
    assert lt["vpcSecurityGroupIds"][0].startswith("sg-")
    assert ":instance-profile/gpu-instance-profile-" in lt["iamInstanceProfile"]["arn"]
    assert {sg.urn, profile.urn} <= set(launch_template.dependencies)


def test_gpu_user_data_in_the_launch_template() -> None:
    def program() -> None:
        cluster = Cluster("ecs", ClusterArgs())
        GpuAsgPool("gpu", gpu_args(cluster_name=cluster.name))

    rec = run_function(program)
    config = ecs_config(user_data(rec))
    cluster_name = rec.one("aws:ecs/cluster:Cluster")
    assert config["ECS_CLUSTER"].startswith(cluster_name.name)
    assert config["ECS_ENABLE_GPU_SUPPORT"] == "true"
    assert config["ECS_IMAGE_PULL_BEHAVIOR"] == "prefer-cached"
    assert "ECS_WARM_POOLS_CHECK" not in config


def test_neuron_user_data_with_warm_pool() -> None:
    rec = run_function(lambda: InferentiaPool("nrn", neuron_args(warm_pool=WarmPoolArgs())))
    config = ecs_config(user_data(rec))
    assert config["ECS_CLUSTER"] == "inference"
    assert "ECS_ENABLE_GPU_SUPPORT" not in config
    assert config["ECS_WARM_POOLS_CHECK"] == "true"


def test_security_group_has_no_ingress_and_https_egress_only() -> None:
    sg = run_function(lambda: GpuAsgPool("gpu", gpu_args())).one(SG).inputs
    assert sg["vpcId"] == "vpc-0123"
    assert sg["ingress"] == []
    assert [(e["protocol"], e["fromPort"], e["toPort"]) for e in sg["egress"]] == [
        ("tcp", 443.0, 443.0)
    ]


def test_auto_scaling_group() -> None:
    rec = run_function(
        lambda: GpuAsgPool("gpu", gpu_args(min_size=1, max_size=4, tags={"team": "ml"}))
    )
    asg = rec.one(ASG)
    inputs = asg.inputs
    assert inputs["vpcZoneIdentifiers"] == SUBNETS
    assert inputs["protectFromScaleIn"] is True
    assert (inputs["minSize"], inputs["maxSize"]) == (1.0, 4.0)
    # desired capacity belongs to ECS managed scaling
    assert "desiredCapacity" not in inputs
    tags = {t["key"]: t for t in inputs["tags"]}
    assert tags["AmazonECSManaged"] == {
        "key": "AmazonECSManaged",
        "value": "true",
        "propagateAtLaunch": True,
    }
    assert tags["team"]["value"] == "ml" and tags["team"]["propagateAtLaunch"] is True
    lt = rec.one(LT)
    assert inputs["launchTemplate"]["id"].startswith("lt-")
    assert lt.urn in asg.dependencies
    assert "warmPool" not in inputs
    assert "instanceRefresh" not in inputs


def test_warm_pool_present() -> None:
    warm = WarmPoolArgs(min_size=2, max_group_prepared_capacity=3, state="Stopped")
    pools: list[GpuAsgPool] = []
    rec = run_function(lambda: pools.append(GpuAsgPool("gpu", gpu_args(warm_pool=warm))))
    assert rec.one(ASG).inputs["warmPool"] == {
        "minSize": 2.0,
        "maxGroupPreparedCapacity": 3.0,
        "poolState": "Stopped",
    }
    assert pools[0].warm_pool is not None


def test_warm_pool_absent() -> None:
    pools: list[GpuAsgPool] = []
    rec = run_function(lambda: pools.append(GpuAsgPool("gpu", gpu_args())))
    assert "warmPool" not in rec.one(ASG).inputs
    assert pools[0].warm_pool is None


def test_instance_refresh_replaces_protected_hosts_launch_first() -> None:
    rec = run_function(lambda: GpuAsgPool("gpu", gpu_args(instance_refresh=True)))
    refresh = rec.one(ASG).inputs["instanceRefresh"]
    assert refresh["strategy"] == "Rolling"
    prefs = refresh["preferences"]
    assert (prefs["minHealthyPercentage"], prefs["maxHealthyPercentage"]) == (100.0, 200.0)
    assert prefs["scaleInProtectedInstances"] == "Refresh"
    assert prefs["instanceWarmup"] == "300"


def test_capacity_provider_settings() -> None:
    pools: list[GpuAsgPool] = []
    args = gpu_args(max_size=3, target_capacity_percent=90, instance_warmup_seconds=600)
    rec = run_function(lambda: pools.append(GpuAsgPool("gpu-l40s", args)))
    cp = rec.one(CP)
    provider = cp.inputs["autoScalingGroupProvider"]
    assert provider["managedScaling"] == {
        "status": "ENABLED",
        "targetCapacity": 90.0,
        "instanceWarmupPeriod": 600.0,
        "minimumScalingStepSize": 1.0,
        "maximumScalingStepSize": 3.0,
    }
    assert provider["managedTerminationProtection"] == "ENABLED"
    assert provider["managedDraining"] == "ENABLED"
    asg = rec.one(ASG)
    assert "gpu-l40s-asg" in provider["autoScalingGroupArn"]
    assert asg.urn in cp.dependencies
    assert "name" not in cp.inputs  # auto-named from "gpu-l40s-capacity"
    assert pools[0].instance is catalog.instance("g6e.xlarge")


def test_children_hang_under_the_component() -> None:
    rec = run_function(lambda: InferentiaPool("nrn", neuron_args()))
    component = rec.one("ecs-inference:compute:InferentiaPool")
    children = [r for r in rec.resources if r.custom]
    assert children and all(r.parent == component.urn for r in children)
    assert {r.name for r in children} >= {
        "nrn-lt",
        "nrn-asg",
        "nrn-capacity",
        "nrn-sg",
        "nrn-instance-role",
        "nrn-instance-profile",
    }


@pytest.mark.parametrize(
    ("ssm_access", "expected"),
    [(True, {ECS_INSTANCE_POLICY, SSM_INSTANCE_POLICY}), (False, {ECS_INSTANCE_POLICY})],
)
def test_instance_role_policies_exactly(ssm_access: bool, expected: set[str]) -> None:
    rec = run_function(lambda: GpuAsgPool("gpu", gpu_args(ssm_access=ssm_access)))
    role = rec.one("aws:iam/role:Role")
    trust = json.loads(role.inputs["assumeRolePolicy"])
    assert trust["Statement"] == [
        {
            "Effect": "Allow",
            "Principal": {"Service": "ec2.amazonaws.com"},
            "Action": "sts:AssumeRole",
        }
    ]
    attachments = rec.by_type(ATTACH)
    assert {a.inputs["policyArn"] for a in attachments} == {
        f"arn:aws:iam::aws:policy/{p}" for p in expected
    }
    assert all(a.inputs["role"].startswith("gpu-instance-role") for a in attachments)
    # no inline or customer-managed policies
    assert rec.by_type("aws:iam/rolePolicy:RolePolicy") == []
    assert rec.by_type("aws:iam/policy:Policy") == []
    assert "managedPolicyArns" not in role.inputs and "inlinePolicies" not in role.inputs
    profile = rec.one("aws:iam/instanceProfile:InstanceProfile")
    assert profile.inputs["role"].startswith("gpu-instance-role")


# --------------------------------------------------------------------------------------------
# Cluster.associate_capacity_providers
# --------------------------------------------------------------------------------------------


def _platform(fargate: bool) -> Recording:
    def program() -> None:
        cluster = Cluster("ecs", ClusterArgs())
        gpu = GpuAsgPool("gpu", gpu_args(cluster_name=cluster.name))
        neuron = InferentiaPool("nrn", neuron_args(cluster_name=cluster.name))
        cluster.associate_capacity_providers(
            [gpu.capacity_provider, neuron.capacity_provider], fargate=fargate
        )

    return run_function(program)


def test_association_lists_every_provider_and_fargate_and_depends_on_them() -> None:
    rec = _platform(fargate=True)
    assert len(rec.by_type(CCP)) == 1
    assoc = rec.one(CCP)
    gpu_cp, neuron_cp = rec.one(CP, "gpu-capacity"), rec.one(CP, "nrn-capacity")
    names = assoc.inputs["capacityProviders"]
    assert names[2:] == ["FARGATE", "FARGATE_SPOT"]
    assert names[0].startswith("gpu-capacity-") and names[1].startswith("nrn-capacity-")
    assert assoc.inputs["defaultCapacityProviderStrategies"] == [
        {"capacityProvider": "FARGATE", "weight": 1.0, "base": 0.0}
    ]
    assert {gpu_cp.urn, neuron_cp.urn} <= set(assoc.dependencies)
    cluster = rec.one("aws:ecs/cluster:Cluster")
    assert assoc.inputs["clusterName"].startswith(cluster.name)
    assert assoc.parent == rec.one("ecs-inference:compute:Cluster").urn
    assert assoc.name == "ecs-capacity-providers"


def test_association_without_fargate_has_no_default_strategy() -> None:
    assoc = _platform(fargate=False).one(CCP)
    assert len(assoc.inputs["capacityProviders"]) == 2
    assert not any(n.startswith("FARGATE") for n in assoc.inputs["capacityProviders"])
    assert assoc.inputs.get("defaultCapacityProviderStrategies", []) == []


def test_association_is_created_once() -> None:
    failures: list[str] = []

    def program() -> None:
        cluster = Cluster("ecs", ClusterArgs())
        pool = GpuAsgPool("gpu", gpu_args(cluster_name=cluster.name))
        cluster.associate_capacity_providers([pool.capacity_provider], fargate=True)
        with pytest.raises(RuntimeError, match="already has its capacity-provider") as info:
            cluster.associate_capacity_providers([pool.capacity_provider], fargate=True)
        failures.append(str(info.value))

    rec = run_function(program)
    assert failures and len(rec.by_type(CCP)) == 1


def test_desired_capacity_is_left_to_ecs(monkeypatch: pytest.MonkeyPatch) -> None:
    ignored: dict[str, list[str]] = {}
    original = recording.RecordingMonitor.RegisterResource

    def register(self, request):
        ignored[request.name] = list(request.ignoreChanges)
        return original(self, request)

    monkeypatch.setattr(recording.RecordingMonitor, "RegisterResource", register)
    run_function(lambda: GpuAsgPool("gpu", gpu_args()))
    assert ignored["gpu-asg"] == ["desiredCapacity"]
    assert ignored["gpu-capacity"] == []
