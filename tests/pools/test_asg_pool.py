"""GpuAsgPool, InferentiaPool and the cluster's capacity-provider association, under the recording
mock runtime: the tests assert on the inputs the engine would receive (camelCase keys, numbers as
floats).
"""

from __future__ import annotations

import json

import pytest

from ecs_inference.pools.asg_pool import AsgPoolWiring, GpuAsgPool, InferentiaPool
from ecs_inference.pools.cluster import Cluster
from ecs_inference.pools.input import PoolConfig, WarmPoolConfig
from ecs_inference.pools.instance_role import ECS_INSTANCE_POLICY, SSM_INSTANCE_POLICY
from ecs_inference.sizing import catalog
from tests.pools.conftest import (
    ASG,
    ATTACH,
    CCP,
    CP,
    LT,
    SG,
    SUBNETS,
    ecs_config,
    gpu_args,
    neuron_args,
    user_data,
)
from tools import recording
from tools.recording import Recording, run_function


@pytest.mark.parametrize(
    ("factory", "args", "parameter", "token"),
    [
        (GpuAsgPool, gpu_args(), catalog.ECS_GPU_AMI_SSM_PARAMETER, "GpuAsgPool"),
        (InferentiaPool, neuron_args(), catalog.ECS_NEURON_AMI_SSM_PARAMETER, "InferentiaPool"),
    ],
)
def test_ami_from_the_pool_kinds_ssm_parameter(
    ssm_calls: list[str],
    factory: type,
    args: tuple[PoolConfig, AsgPoolWiring],
    parameter: str,
    token: str,
) -> None:
    rec = run_function(lambda: factory("pool", *args))
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
    gpu = run_function(lambda: GpuAsgPool("gpu", *gpu_args())).one(LT).inputs["imageId"]
    neuron = run_function(lambda: InferentiaPool("nrn", *neuron_args())).one(LT).inputs["imageId"]
    assert gpu != neuron


def test_explicit_ami_skips_the_ssm_lookup(ssm_calls: list[str]) -> None:
    rec = run_function(lambda: GpuAsgPool("gpu", *gpu_args(ami_id="ami-0123456789abcdef0")))
    assert rec.one(LT).inputs["imageId"] == "ami-0123456789abcdef0"
    assert ssm_calls == []


def test_launch_template_hardening_and_root_volume() -> None:
    rec = run_function(lambda: GpuAsgPool("gpu", *gpu_args(root_volume_gib=300)))
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
        cluster = Cluster("ecs")
        GpuAsgPool("gpu", *gpu_args(cluster_name=cluster.name))

    rec = run_function(program)
    config = ecs_config(user_data(rec))
    cluster_name = rec.one("aws:ecs/cluster:Cluster")
    assert config["ECS_CLUSTER"].startswith(cluster_name.name)
    assert config["ECS_ENABLE_GPU_SUPPORT"] == "true"
    assert config["ECS_IMAGE_PULL_BEHAVIOR"] == "prefer-cached"
    assert "ECS_WARM_POOLS_CHECK" not in config


def test_neuron_user_data_with_warm_pool() -> None:
    rec = run_function(lambda: InferentiaPool("nrn", *neuron_args(warm_pool=WarmPoolConfig())))
    config = ecs_config(user_data(rec))
    assert config["ECS_CLUSTER"] == "inference"
    assert "ECS_ENABLE_GPU_SUPPORT" not in config
    assert config["ECS_WARM_POOLS_CHECK"] == "true"


def test_security_group_has_no_ingress_and_https_egress_only() -> None:
    sg = run_function(lambda: GpuAsgPool("gpu", *gpu_args())).one(SG).inputs
    assert sg["vpcId"] == "vpc-0123"
    assert sg["ingress"] == []
    assert [(e["protocol"], e["fromPort"], e["toPort"]) for e in sg["egress"]] == [
        ("tcp", 443.0, 443.0)
    ]


def test_auto_scaling_group() -> None:
    rec = run_function(
        lambda: GpuAsgPool("gpu", *gpu_args(min_size=1, max_size=4, tags={"team": "ml"}))
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
    warm = WarmPoolConfig(min_size=2, max_group_prepared_capacity=3, state="Stopped")
    pools: list[GpuAsgPool] = []
    rec = run_function(lambda: pools.append(GpuAsgPool("gpu", *gpu_args(warm_pool=warm))))
    assert rec.one(ASG).inputs["warmPool"] == {
        "minSize": 2.0,
        "maxGroupPreparedCapacity": 3.0,
        "poolState": "Stopped",
    }
    assert pools[0].warm_pool is not None


def test_warm_pool_absent() -> None:
    pools: list[GpuAsgPool] = []
    rec = run_function(lambda: pools.append(GpuAsgPool("gpu", *gpu_args())))
    assert "warmPool" not in rec.one(ASG).inputs
    assert pools[0].warm_pool is None


def test_instance_refresh_replaces_protected_hosts_launch_first() -> None:
    rec = run_function(lambda: GpuAsgPool("gpu", *gpu_args(instance_refresh=True)))
    refresh = rec.one(ASG).inputs["instanceRefresh"]
    assert refresh["strategy"] == "Rolling"
    prefs = refresh["preferences"]
    assert (prefs["minHealthyPercentage"], prefs["maxHealthyPercentage"]) == (100.0, 200.0)
    assert prefs["scaleInProtectedInstances"] == "Refresh"
    assert prefs["instanceWarmup"] == "300"


def test_capacity_provider_settings() -> None:
    pools: list[GpuAsgPool] = []
    args = gpu_args(max_size=3, target_capacity_percent=90, instance_warmup_seconds=600)
    rec = run_function(lambda: pools.append(GpuAsgPool("gpu-l40s", *args)))
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
    rec = run_function(lambda: InferentiaPool("nrn", *neuron_args()))
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
    rec = run_function(lambda: GpuAsgPool("gpu", *gpu_args(ssm_access=ssm_access)))
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
        cluster = Cluster("ecs")
        gpu = GpuAsgPool("gpu", *gpu_args(cluster_name=cluster.name))
        neuron = InferentiaPool("nrn", *neuron_args(cluster_name=cluster.name))
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
        cluster = Cluster("ecs")
        pool = GpuAsgPool("gpu", *gpu_args(cluster_name=cluster.name))
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
    run_function(lambda: GpuAsgPool("gpu", *gpu_args()))
    assert ignored["gpu-asg"] == ["desiredCapacity"]
    assert ignored["gpu-capacity"] == []


def test_a_program_gets_the_stack_files_path_for_a_pool_problem() -> None:
    """A pool built in a program is refused as its stack-file section would be: one
    `ConfigError` at `platform.<section>.<pool>.<key>`, before anything is registered."""
    from ecs_inference.config.issues import ConfigError

    for build, path in (
        (lambda: GpuAsgPool("gpu", *gpu_args(instance_type="inf2.xlarge")), "gpuPools.gpu"),
        (
            lambda: InferentiaPool("nrn", *neuron_args(instance_type="g6e.xlarge")),
            "neuronPools.nrn",
        ),
    ):
        with pytest.raises(ConfigError) as info:
            run_function(build)
        assert [i.path for i in info.value.issues] == [f"platform.{path}.instanceType"]
