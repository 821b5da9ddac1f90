"""The `engines` reference stack as registered: each engine's task runs what its image expects,
and the model on EFS mounts its weights read-only through its own access point, with TLS, IAM and
a security group path that admits NFS from its tasks only.

The stack's program runs under the recording mock runtime (the same recording the contract tests
use); task definitions are validated against ECS's RegisterTaskDefinition request shape.
"""

from __future__ import annotations

import json

import pytest

from ecs_inference.contracts import flag_table
from ecs_inference.contracts import sglang as sglang_contract
from ecs_inference.contracts import tgi as tgi_contract
from ecs_inference.storage import efs as efs
from tests.aws_shapes import validate_shape
from tests.images.engine_images import REPO, printed_command
from tests.images.test_task_contracts import deployed, recording

STACK = "engines"
ROLE_POLICY = "aws:iam/rolePolicy:RolePolicy"
SG = "aws:ec2/securityGroup:SecurityGroup"
INGRESS = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"
ACCESS_POINT = "aws:efs/accessPoint:AccessPoint"


@pytest.mark.parametrize(
    ("service", "script", "table"),
    [
        ("qwen", REPO / "images/sglang/entrypoint.py", sglang_contract.FLAG_TABLE),
        ("mistral", REPO / "images/tgi/entrypoint.py", tgi_contract.FLAG_TABLE),
    ],
)
def test_engine_tasks_start_the_engine_with_flags_it_accepts(service, script, table):
    d = deployed(STACK, service)
    argv = printed_command(script, d.container["environment"])
    first_flag = next(i for i, a in enumerate(argv) if a.startswith("--"))
    assert flag_table.load(table).problems(argv[first_flag:]) == []
    assert d.target_group.inputs["healthCheck"]["path"] == "/health"
    assert d.load_balancer["containerPort"] == d.container["portMappings"][0]["containerPort"]
    validate_shape(
        "ecs",
        "RegisterTaskDefinition",
        {
            "family": d.task_definition.inputs["family"],
            "containerDefinitions": d.containers,
            "volumes": d.task_definition.inputs.get("volumes") or [],
        },
    )


def test_the_efs_model_mounts_its_access_point_read_only_with_tls_and_iam():
    d = deployed(STACK, "qwen")
    (mount,) = d.container["mountPoints"]
    assert mount == efs.mount_point("qwen")
    env = {e["name"]: e["value"] for e in d.container["environment"]}
    assert env[sglang_contract.ENV_WEIGHTS_URI] == efs.container_path("qwen")
    (volume,) = d.task_definition.inputs["volumes"]
    config = volume["efsVolumeConfiguration"]
    assert volume["name"] == mount["sourceVolume"]
    assert config["transitEncryption"] == "ENABLED"
    assert config["authorizationConfig"]["iam"] == "ENABLED"
    assert "rootDirectory" not in config

    rec = recording(STACK)
    (point,) = [p for p in rec.by_type(ACCESS_POINT) if p.name.endswith("-qwen")]
    assert point.inputs["rootDirectory"]["path"] == "/models/qwen2.5-14b-instruct"
    # the task role may mount, read-only, through this access point only
    task_policies = [
        json.loads(p.inputs["policy"])
        for p in rec.by_type(ROLE_POLICY)
        if p.name == "inference-qwen-task"
    ]
    (policy,) = task_policies
    (statement,) = policy["Statement"]
    assert statement["Action"] == ["elasticfilesystem:ClientMount"]
    assert "elasticfilesystem:AccessPointArn" in statement["Condition"]["StringEquals"]

    # NFS reaches the mount targets only from the client group, which the task carries
    groups = d.ecs_service.inputs["networkConfiguration"]["securityGroups"]
    assert len(groups) == 2
    (nfs,) = rec.by_type(INGRESS)
    assert nfs.inputs["fromPort"] == nfs.inputs["toPort"] == efs.NFS_PORT
    assert "cidrIpv4" not in nfs.inputs


def test_models_on_s3_get_no_efs_and_read_only_their_prefix():
    rec = recording(STACK)
    for service in ("mistral", "triton", "llama"):
        d = deployed(STACK, service)
        assert not d.task_definition.inputs.get("volumes")
        assert "mountPoints" not in d.container
        assert len(d.ecs_service.inputs["networkConfiguration"]["securityGroups"]) == 1
        (policy,) = [
            json.loads(p.inputs["policy"])
            for p in rec.by_type(ROLE_POLICY)
            if p.name == f"inference-{service}-task"
        ]
        resources = json.dumps(policy)
        assert "elasticfilesystem" not in resources and "s3:GetObject" in resources


def test_the_custom_service_runs_the_users_image_and_contract():
    d = deployed(STACK, "triton")
    custom = d.config["custom"]
    assert d.container["image"] == d.config["image"]
    assert d.container["command"] == custom["command"]
    assert d.container["portMappings"][0]["containerPort"] == custom["port"]
    assert d.target_group.inputs["healthCheck"]["path"] == custom["healthPath"]
    assert d.container["resourceRequirements"] == [{"type": "GPU", "value": str(custom["gpus"])}]
    env = {e["name"]: e["value"] for e in d.container["environment"]}
    assert env["ENGINE_PORT"] == str(custom["port"])
    assert env["LOG_VERBOSE"] == d.config["environment"]["LOG_VERBOSE"]
    assert env["ENGINE_WEIGHTS_URI"] == d.config["weightsUri"]
    secrets = {s["name"]: s["valueFrom"] for s in d.container["secrets"]}
    assert secrets == d.config["secrets"]
    assert not any(name in env for name in secrets)


def test_a_weight_store_no_model_reads_yet_is_still_created_for_seeding():
    import copy

    from tools.preview import project_name, read_stack_file
    from tools.recording import run_program, stack_config_values

    stack = copy.deepcopy(read_stack_file(REPO, STACK))
    platform = stack["config"]["ecs-inference:platform"]
    platform["models"]["qwen"]["weightsUri"] = "s3://example-engines-models/qwen2.5-14b/"
    rec = run_program(
        REPO, project=project_name(REPO), stack=STACK, config=stack_config_values(stack)
    )
    (fs,) = rec.by_type("aws:efs/fileSystem:FileSystem")
    assert fs.inputs["encrypted"] is True
    assert len(rec.by_type("aws:efs/mountTarget:MountTarget")) == 2
    assert rec.by_type(ACCESS_POINT) == []
