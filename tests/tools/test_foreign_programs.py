"""`tools.preview --cwd` on programs this repository did not write, and its exit codes.

tests/examples/foreign is written the way public Pulumi examples are (default VPC, subnet, AMI,
SSM, ECR token and IAM policy-document lookups, an ALB, a Fargate service, an instance). The
lookups must be answered with values of the real shape; a program that raises must end in one
line naming where and why, with exit code 3 and no secondary noise.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tools.aws_requests import policy_problems
from tools.lookups import LOOKUPS
from tools.preview import EXIT_OK, EXIT_PROGRAM

ROOT = Path(__file__).resolve().parents[2]
FOREIGN = ROOT / "tests" / "examples" / "foreign"
NOISE = ("Traceback", "Task was destroyed", "Invalid file descriptor", "Exception ignored")


def preview(program: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tools.preview", "--cwd", str(program), "--no-policy", *extra],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_foreign_program_previews_without_a_stack_file() -> None:
    proc = preview(FOREIGN, "--json")
    assert proc.returncode == EXIT_OK, proc.stderr
    assert not any(n in proc.stderr for n in NOISE), proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["findings"] == []
    outputs = doc["outputs"]
    assert outputs["zones"][0] == "us-west-2a"  # the project's config default region
    assert re.fullmatch(r"ami-[0-9a-f]{17}", outputs["ecsAmi"])
    assert all(re.fullmatch(r"rtb-[0-9a-f]{17}", r) for r in outputs["routeTables"])
    by_type = {r["type"]: r for r in doc["resources"]}
    sg = by_type["aws:ec2/securityGroup:SecurityGroup"]["inputs"]
    assert re.fullmatch(r"vpc-[0-9a-f]{17}", sg["vpcId"])
    assert sg["ingress"][0]["cidrBlocks"] == ["172.31.0.0/16"]  # the default VPC's CIDR
    role = by_type["aws:iam/role:Role"]["inputs"]
    assert policy_problems(role["assumeRolePolicy"], "trust") == []


@pytest.fixture
def program(tmp_path: Path) -> Path:
    target = tmp_path / "prog"
    shutil.copytree(FOREIGN, target)
    return target


def test_program_that_raises_exits_3_with_one_line(program: Path) -> None:
    main = program / "__main__.py"
    lines = main.read_text().splitlines()
    main.write_text("\n".join([*lines, "raise RuntimeError('the database is not configured')"]))
    proc = preview(program)
    assert proc.returncode == EXIT_PROGRAM
    assert not any(n in proc.stderr for n in NOISE), proc.stderr
    assert (
        f"program error at __main__.py:{len(lines) + 1}: RuntimeError: the database is not "
        "configured"
    ) in proc.stderr


def test_error_inside_an_apply_names_its_line(program: Path) -> None:
    main = program / "__main__.py"
    main.write_text(
        main.read_text()
        + "\ndef boom(name):\n    raise ValueError(f'cannot use {name}')\n"
        + "pulumi.export('x', cluster.name.apply(boom))\n"
    )
    proc = preview(program)
    assert proc.returncode == EXIT_PROGRAM
    assert "ValueError: cannot use web-cluster-" in proc.stderr
    assert not any(n in proc.stderr for n in NOISE), proc.stderr


def test_unanswered_lookup_is_named(program: Path) -> None:
    main = program / "__main__.py"
    main.write_text(main.read_text() + "\naws.ec2.get_nat_gateway(id='nat-0123456789abcdef0')\n")
    proc = preview(program)
    assert proc.returncode == EXIT_PROGRAM
    assert "lookup aws:ec2/getNatGateway:getNatGateway" in proc.stderr
    assert not any(n in proc.stderr for n in NOISE), proc.stderr


@pytest.mark.parametrize(
    ("token", "args", "key", "pattern"),
    [
        ("aws:ec2/getVpc:getVpc", {"default": True}, "id", r"vpc-[0-9a-f]{17}"),
        ("aws:ec2/getVpc:getVpc", {"default": True}, "cidrBlock", r"172\.31\.0\.0/16"),
        (
            "aws:ec2/getSubnet:getSubnet",
            {"id": "subnet-0123"},
            "availabilityZone",
            r"us-east-1[a-c]",
        ),
        ("aws:ec2/getAmi:getAmi", {"owners": ["amazon"]}, "id", r"ami-[0-9a-f]{17}"),
        (
            "aws:ec2/getSecurityGroup:getSecurityGroup",
            {"name": "default"},
            "id",
            r"sg-[0-9a-f]{17}",
        ),
        (
            "aws:index/getCallerIdentity:getCallerIdentity",
            {},
            "arn",
            r"arn:aws:iam::\d{12}:user/\S+",
        ),
        ("aws:index/getAvailabilityZones:getAvailabilityZones", {}, "zoneIds", r"use1-az1"),
        ("aws:route53/getZone:getZone", {"name": "example.com"}, "zoneId", r"Z[0-9A-F]{20}"),
        (
            "aws:acm/getCertificate:getCertificate",
            {"domain": "example.com"},
            "arn",
            r"arn:aws:acm:us-east-1:\d{12}:certificate/[0-9a-f-]{36}",
        ),
        (
            "aws:ecr/getAuthorizationToken:getAuthorizationToken",
            {},
            "proxyEndpoint",
            r"https://\d{12}\.dkr\.ecr\.us-east-1\.amazonaws\.com",
        ),
    ],
)
def test_lookups_answer_values_of_the_real_shape(token, args, key, pattern) -> None:
    value = LOOKUPS[token](args, "us-east-1")[key]
    text = value[0] if isinstance(value, list) else str(value)
    assert re.fullmatch(pattern, text), text


def test_policy_document_lookup_renders_the_statements() -> None:
    out = LOOKUPS["aws:iam/getPolicyDocument:getPolicyDocument"](
        {
            "statements": [
                {
                    "effect": "Allow",
                    "actions": ["s3:GetObject"],
                    "resources": ["arn:aws:s3:::b/*"],
                    "conditions": [
                        {"test": "Bool", "variable": "aws:SecureTransport", "values": ["true"]}
                    ],
                }
            ]
        },
        "us-east-1",
    )
    doc = json.loads(out["json"])
    assert doc["Statement"][0] == {
        "Effect": "Allow",
        "Action": "s3:GetObject",
        "Resource": "arn:aws:s3:::b/*",
        "Condition": {"Bool": {"aws:SecureTransport": "true"}},
    }
    assert policy_problems(out["json"], "identity") == []
