"""The defects outside reviews found, each put back into the components, fail the
preview (`python -m tools.preview`, in process so the defect can be patched in) with exit 4 and
one line per reason naming what breaks: the task, container, call, resource and role of a
denied call; the group, hook and transition of a hook nothing completes; the container and
variable of an environment the image does not read; the association and provider AWS refuses.

Each test is the fix's proof: the reference stacks pass the same preview
(tests/tools/test_rehearsal.py), so the patch, and only the patch, makes the difference.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pulumi
import pytest

from ecs_inference import iam
from ecs_inference.gateway import database as gateway_db
from ecs_inference.gateway import service as gateway_service
from ecs_inference.pools import ami_contents, asg_pool, managed_instances_pool, user_data
from ecs_inference.pools import cluster as cluster_module
from tests.stacks import agents_with_database
from tests.tools.preview_cli import only, reasons
from tools.preview import EXIT_REJECTED

ROOT = Path(__file__).resolve().parents[2]


def test_a_managed_instances_provider_in_the_association_fails(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The association given every pool's capacity provider, the Managed Instances one too:
    PutClusterCapacityProviders refuses it, so `pulumi up` on prod would stop."""
    pools: list[Any] = []
    create_pool = managed_instances_pool.ManagedInstancesPool.__init__
    associate = cluster_module.Cluster.associate_capacity_providers

    def recorded(self: Any, *args: Any, **kwargs: Any) -> None:
        create_pool(self, *args, **kwargs)
        pools.append(self)

    def every_pool(self: Any, providers: Sequence[Any], *, fargate: bool) -> Any:
        return associate(self, [*providers, *(p.capacity_provider for p in pools)], fargate=fargate)

    monkeypatch.setattr(managed_instances_pool.ManagedInstancesPool, "__init__", recorded)
    monkeypatch.setattr(cluster_module.Cluster, "associate_capacity_providers", every_pool)
    code, lines = reasons(capsys, "--stack", "prod")
    assert code == EXIT_REJECTED
    assert pools, "prod has a Managed Instances pool"
    line = only(lines, "PutClusterCapacityProviders names Managed Instances provider")
    assert line.startswith(
        "aws:ecs/clusterCapacityProviders:ClusterCapacityProviders "
        "'inference-ecs-capacity-providers': constraint:"
    ), line
    assert "provider inference-l40s-capacity" in line
    assert "(botocore ecs PutClusterCapacityProviders)" in line


def test_a_sidecar_left_out_of_the_execution_role_fails(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The execution role derived from the serving container only: ECS cannot pull the
    metrics sidecar's image, so no task with it starts (CannotPullContainerError)."""
    derive = iam.execution_role_policy

    def first_container_only(*, containers: Sequence[Mapping[str, Any]], **kw: Any) -> str:
        return derive(containers=list(containers)[:1], **kw)

    monkeypatch.setattr(iam, "execution_role_policy", first_container_only)
    code, lines = reasons(capsys, "--stack", "dev")
    assert code == EXIT_REJECTED
    repository = "arn:aws:ecr:us-east-1:123456789012:repository/ecs-inference/metrics"
    pulls = [line for line in lines if repository in line]
    assert pulls and len(pulls) == len(lines), lines
    for task, launch, role in (
        ("ecs-inference-dev-rerank", "FARGATE", "inference-rerank-execution-"),
        ("ecs-inference-dev-llama", "EC2", "inference-llama-execution-"),
        ("ecs-inference-dev-llama-neuron", "EC2", "inference-llama-neuron-execution-"),
    ):
        for action in ("ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer"):
            line = only(pulls, f"task {task} on {launch}, container metrics: {action} on ")
            assert f"{action} on {repository} is denied to role {role}" in line, line
            assert "needed to pull 123456789012.dkr.ecr.us-east-1.amazonaws.com/" in line


def test_a_hook_script_started_on_the_first_boot_only_fails(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hook-completing script started with systemd-run from the user data, which
    cloud-init runs on the first boot only: a Stopped warm instance started on scale-out waits
    out the heartbeat."""
    prepull = user_data.prepull_script
    enable = f"systemctl enable --now --no-block {user_data.PREPULL_UNIT}\n"

    def first_boot_only(images: list[str], region: str) -> str:
        text = prepull(images, region)
        assert enable in text
        return text.replace(
            enable, "systemd-run --no-block /usr/local/sbin/ecs-inference-prepull\n"
        )

    monkeypatch.setattr(user_data, "prepull_script", first_boot_only)
    code, lines = reasons(capsys, "--stack", "prod")
    assert code == EXIT_REJECTED
    line = only(lines, "lifecycle hook")
    assert line.startswith("aws:autoscaling/group:Group 'inference-l40s-8x-asg': runtime:"), line
    assert f"lifecycle hook {user_data.PREPULL_HOOK} pauses the instance in Pending:Wait" in line
    assert "on a start from the Stopped warm pool on scale-out" in line
    assert "the instance waits out the 1800 s heartbeat" in line


PASSWORD_LOGIN = ("DATABASE_USERNAME", "IAM_TOKEN_DB_AUTH", "DATABASE_SSLMODE")
"""What the IAM-token login adds to LiteLLM's environment, left out for the password login."""


def test_a_database_user_litellm_does_not_read_fails(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The gateway's database login as `DATABASE_USER` (from the RDS-managed secret), which
    LiteLLM's construct_database_url_from_env_vars does not read: the proxy runs without a
    database, so virtual keys, budgets and spend tracking silently do nothing."""
    _password_login(monkeypatch, "DATABASE_USER")
    stack_file = agents_with_database(tmp_path)
    code, lines = reasons(capsys, "--stack", "agents", "--stack-file", str(stack_file))
    assert code == EXIT_REJECTED
    line = only(lines, "DATABASE_URL")
    assert line.startswith("aws:ecs/taskDefinition:TaskDefinition 'inference-gateway-task'"), line
    assert "task ecs-inference-agents-gateway, container litellm: LiteLLM 1.108.7 builds" in line
    assert "DATABASE_USERNAME not set" in line


def test_a_database_password_from_the_rotating_secret_fails(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The gateway's database login by password, its user and password injected from the
    secret RDS manages (names LiteLLM does read): ECS resolves them at task start only, so the
    running gateway loses its database at the first rotation, 7 days after deploy by default."""
    _password_login(monkeypatch, "DATABASE_USERNAME")
    stack_file = agents_with_database(tmp_path)
    code, lines = reasons(capsys, "--stack", "agents", "--stack-file", str(stack_file))
    assert code == EXIT_REJECTED
    (line,) = lines
    assert line.startswith("aws:ecs/taskDefinition:TaskDefinition 'inference-gateway-task'"), line
    assert "task ecs-inference-agents-gateway on FARGATE, container litellm: " in line
    assert (
        "secret DATABASE_PASSWORD: arn:aws:secretsmanager:us-east-1:123456789012:secret:rds!"
        in line
    )
    assert "is the master user secret RDS manages for inference-gateway-db" in line
    assert "ECS reads secrets only at task start" in line


def _password_login(monkeypatch: pytest.MonkeyPatch, user_variable: str) -> None:
    """The gateway's container with the database login put back to a password: the user (as
    `user_variable`) and the password injected from the RDS-managed secret, no IAM-token
    login."""
    databases = _remember_databases(monkeypatch)
    containers = gateway_service.LiteLLMGateway._containers

    def password_login(self: Any, render: Any, *values: Any, **kw: Any) -> Any:
        if not databases:
            return containers(self, render, *values, **kw)
        secret = databases[-1].cluster.master_user_secrets.apply(lambda s: s[0].secret_arn)

        def with_password(a: list[Any]) -> Any:
            (container,) = definitions = render(a[:-1])
            container["environment"] = [
                e for e in container["environment"] if e["name"] not in PASSWORD_LOGIN
            ]
            container["secrets"] += [
                {"name": user_variable, "valueFrom": f"{a[-1]}:username::"},
                {"name": "DATABASE_PASSWORD", "valueFrom": f"{a[-1]}:password::"},
            ]
            return definitions

        return containers(self, with_password, *values, secret, **kw)

    monkeypatch.setattr(gateway_service.LiteLLMGateway, "_containers", password_login)


def _remember_databases(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The `GatewayDatabase` components whose outputs a gateway is given, in order: what a
    regression put back reads of the database beyond those outputs."""
    databases: list[Any] = []
    outputs = gateway_db.GatewayDatabase.outputs

    def remember(self: Any) -> Any:
        databases.append(self)
        return outputs(self)

    monkeypatch.setattr(gateway_db.GatewayDatabase, "outputs", remember)
    return databases


def test_an_aws_call_on_an_ami_without_the_cli_fails(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pre-pull script without its `awscli-2` install: the ECS-optimized AL2023 AMIs' build
    installs no AWS CLI (pools.ami_contents), so its ECR login and the hook completion fail
    at boot and every launch waits out the heartbeat."""
    prepull = user_data.prepull_script
    install = f"  dnf install -y -q {ami_contents.AWS_CLI_PACKAGE} || sleep 10\n"

    def without_cli(images: list[str], region: str) -> str:
        text = prepull(images, region)
        assert install in text
        return text.replace(install, "  sleep 10\n")

    monkeypatch.setattr(user_data, "prepull_script", without_cli)
    code, lines = reasons(capsys, "--stack", "prod")
    assert code == EXIT_REJECTED
    line = only(lines, "runs `aws`")
    assert line.startswith("aws:ec2/launchTemplate:LaunchTemplate 'inference-l40s-8x-lt"), line
    assert "ECS-optimized AL2023 GPU AMI" in line and "aws/amazon-ecs-ami@a2532d3503f2" in line


def _allow(action: str, resource: str) -> dict[str, str]:
    return {"Effect": "Allow", "Action": action, "Resource": resource}


def test_the_master_secret_readable_by_the_serving_gateway_fails(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The database bootstrap's grants put back on the gateway's task role (the Data API on the
    cluster, the master secret it reads): every container of the task, the proxy that serves
    requests included, could read the master password and run any SQL as master."""
    task_role = gateway_service.LiteLLMGateway._bedrock_role
    databases = _remember_databases(monkeypatch)

    def with_master_grants(self: Any, decided: Any, outputs: Any) -> Any:
        role: Any = task_role(self, decided, outputs)
        cluster = databases[-1].cluster
        secret = cluster.master_user_secrets.apply(lambda s: s[0].secret_arn)
        role.policies["master"] = pulumi.Output.all(cluster.arn, secret).apply(
            lambda a: json.dumps(
                {
                    "Version": "2012-10-17",
                    "Statement": [
                        _allow("rds-data:ExecuteStatement", a[0]),
                        _allow("secretsmanager:GetSecretValue", a[1]),
                    ],
                }
            )
        )
        return role

    monkeypatch.setattr(gateway_service.LiteLLMGateway, "_bedrock_role", with_master_grants)
    stack_file = agents_with_database(tmp_path)
    code, lines = reasons(capsys, "--stack", "agents", "--stack-file", str(stack_file))
    assert code == EXIT_REJECTED
    assert len(lines) == 2, lines
    read = only(lines, "secretsmanager:GetSecretValue on arn:aws:secretsmanager:")
    assert read.startswith("aws:ecs/taskDefinition:TaskDefinition 'inference-gateway-task'"), read
    assert "which serves requests" in read
    assert "read the master user secret of inference-gateway-db-cluster" in read
    sql = only(lines, "rds-data:ExecuteStatement on arn:aws:rds:")
    assert "run any SQL as the master user of inference-gateway-db-cluster" in sql


def test_complete_lifecycle_action_on_every_group_fails(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pre-pull grant on Resource "*": one host could continue or abandon the launches of
    every group of the account."""

    def every_group(*args: str, **kw: str) -> str:
        statement = {
            "Effect": "Allow",
            "Action": [
                "autoscaling:CompleteLifecycleAction",
                "autoscaling:DescribeAutoScalingInstances",
            ],
            "Resource": "*",
        }
        return json.dumps({"Version": "2012-10-17", "Statement": [statement]})

    monkeypatch.setattr(asg_pool, "prepull_hook_policy", every_group)
    code, lines = reasons(capsys, "--stack", "prod")
    assert code == EXIT_REJECTED
    line = only(lines, "autoscaling:CompleteLifecycleAction")
    assert line.startswith("aws:autoscaling/group:Group 'inference-l40s-8x-asg': runtime:"), line
    assert "autoScalingGroupName/inference-l40s-8x-asg-" in line
    assert "-other is allowed to role inference-l40s-8x-instance-role-" in line
    assert "continue or abandon the launches of every other group of the account" in line


def test_an_image_grant_on_the_wrong_repository_fails(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The execution role's pull grant on a repository named with the image's tag or digest
    (`repository/team/vllm:v1`): no such repository exists, so ECS cannot pull and no task
    starts (CannotPullContainerError)."""
    repository_arn = iam.ecr_repository_arn

    def with_the_tag(image: str, partition: str = "aws") -> str | None:
        arn = repository_arn(image, partition)
        tail = image.rsplit("/", 1)[-1]
        return None if arn is None else arn.rsplit("/", 1)[0] + "/" + tail

    monkeypatch.setattr(iam, "ecr_repository_arn", with_the_tag)
    code, lines = reasons(capsys, "--stack", "dev")
    assert code == EXIT_REJECTED
    assert lines and all("ecr:" in line and "is denied to role" in line for line in lines), lines
    line = only(
        lines, "task ecs-inference-dev-rerank on FARGATE, container reranker: ecr:BatchGetImage"
    )
    assert "on arn:aws:ecr:us-east-1:123456789012:repository/ecs-inference/" in line
    assert "needed to pull 123456789012.dkr.ecr.us-east-1.amazonaws.com/" in line


def test_a_secret_grant_on_the_wrong_action_fails(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The execution role granted `ssm:GetParameter` for the stack's own secrets, where ECS
    reads `secrets` with `ssm:GetParameters`: the task cannot start
    (ResourceInitializationError)."""
    read = iam.secret_read

    def singular(value_from: str) -> tuple[str, str]:
        action, resource = read(value_from)
        return action.removesuffix("s") if action == "ssm:GetParameters" else action, resource

    monkeypatch.setattr(iam, "secret_read", singular)
    secret = "ecs-inference:platform.rerankers.rerank.secrets.API_KEY=value-1"
    code, lines = reasons(capsys, "--stack", "dev", "--config", secret)
    assert code == EXIT_REJECTED
    line = only(lines, "ssm:GetParameters on ")
    assert "task ecs-inference-dev-rerank on FARGATE, container reranker" in line
    assert "parameter/ecs-inference/dev/rerankers/rerank/secrets/API_KEY is denied" in line
    assert "needed to read secret API_KEY" in line


def test_a_bootstrap_that_cannot_read_the_master_secret_fails(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The bootstrap function's role without the master secret: the Data API reads it with the
    caller's credentials, so every statement fails and LiteLLM never gets its login."""
    policy = gateway_db.database_bootstrap_policy

    def without_the_secret(**kw: str) -> str:
        document = json.loads(policy(**kw))
        document["Statement"] = [
            s for s in document["Statement"] if s["Action"] != "secretsmanager:GetSecretValue"
        ]
        return json.dumps(document)

    monkeypatch.setattr(gateway_db, "database_bootstrap_policy", without_the_secret)
    stack_file = agents_with_database(tmp_path)
    code, lines = reasons(capsys, "--stack", "agents", "--stack-file", str(stack_file))
    assert code == EXIT_REJECTED
    (line,) = lines
    assert line.startswith("aws:lambda/function:Function 'inference-gateway-db-bootstrap'"), line
    assert "secretsmanager:GetSecretValue on arn:aws:secretsmanager:" in line
    assert "needed to create the litellm role through the RDS Data API" in line


def test_a_lifecycle_grant_on_the_name_alone_fails(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pre-pull grant on the group's name pattern without its pool tag: the same pool of
    another stack of this project, in the same account, matches the name too."""
    policy = asg_pool.prepull_hook_policy

    def name_only(*args: str, **kw: str) -> str:
        document = json.loads(policy(*args, **kw))
        for statement in document["Statement"]:
            statement.pop("Condition", None)
        return json.dumps(document)

    monkeypatch.setattr(asg_pool, "prepull_hook_policy", name_only)
    code, lines = reasons(capsys, "--stack", "prod")
    assert code == EXIT_REJECTED
    line = only(lines, "autoscaling:CompleteLifecycleAction")
    assert "continue or abandon the launches of every other group of the account" in line
